// SPDX-License-Identifier: GPL-2.0
/*
 * tracegen: compiler-shaped planning traces in MiniMalloc's CSV.
 *
 * A graph compiler's memory planner sees the tensors of a model in
 * execution order: each made by one operator and alive until its last
 * reader. tracegen builds such a schedule from layer blocks repeated down
 * a network and writes one buffer per tensor:
 *
 *   cnn     stages of residual blocks (conv, norm, activation, add), the
 *           spatial size halving and the channels doubling per stage; the
 *           block input stays alive to its add (the residual);
 *   bert    encoder layers (qkv projections, scores, softmax, context,
 *           output projection, feed-forward four times wider, two adds);
 *   unet    an encoder whose stage outputs live until the mirrored
 *           decoder stage reads them (long skip buffers);
 *   train-cnn, train-bert
 *           the forward of cnn or bert, then the backward in reverse: each
 *           saved activation lives until its backward operator, each
 *           activation gradient until the next backward operator, each
 *           weight gradient until the optimizer step at the end (or, with
 *           probability 1/2 per trace, a fused update three steps later);
 *           gradients are freed in the reverse order of the forward.
 *
 * Beside every operator come small buffers (indices, scalars, reduction
 * partials: 64 B to 4 KiB, alive one or two steps) and, for some, a
 * workspace as large as the output; one operator in twelve also reads a
 * tensor from far back (a concatenation, a cached key or value), and one
 * output in three is 1/2 to 2 times its nominal size (fused epilogues,
 * padding, layout changes). Sizes are element counts times a
 * dtype of 2 or 4 bytes, rounded up to 512 bytes as device compilers pad
 * them; batch (1 to 32), widths and depth vary with the seed, which keeps
 * most tensors under a few hundred MB; -b sets the batch (e.g. 256: a
 * U-Net then has GB-sized activations beside its 512-byte scratch). -k
 * prints what the trace is known to be on stderr (buffers, the lower
 * bound by a sweep of its own, the largest and smallest size), for the
 * tests. Lifetimes are [lower, upper) on doubled operator indices, so
 * every one is at least two steps long (idealloc needs that).
 *
 * usage: tracegen [-s SEED] [-n BUFFERS] [-b BATCH] [-k] SHAPE > trace.csv
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "random.h"

struct tensor {
	uint64_t size;
	uint64_t first, last;	/* operator indices */
};

struct trace {
	struct tensor *t;
	size_t n, cap;
	uint64_t now;		/* the next operator's index */
	uint64_t rng;
	unsigned int dtype;	/* bytes per element */
	uint64_t batch;		/* -b: the batch, 0 for the seed's */
};

/* The batch: the seed's draw @drawn, or -b's (drawn all the same). */
static uint64_t batch_of(const struct trace *tr, uint64_t drawn)
{
	return tr->batch ? tr->batch : drawn;
}

static size_t rnd(struct trace *tr, size_t n)
{
	return n ? md_xorshift64(&tr->rng) % n : 0;
}

static uint64_t pad(uint64_t bytes)
{
	return (bytes + 511) & ~(uint64_t)511;
}

/* A tensor made by the current operator; returns its index. */
static size_t make(struct trace *tr, uint64_t elems)
{
	struct tensor *t;

	if (tr->n == tr->cap) {
		size_t c = tr->cap ? 2 * tr->cap : 4096;

		t = realloc(tr->t, c * sizeof(*t));
		if (!t) {
			perror("tracegen");
			exit(1);
		}
		tr->t = t;
		tr->cap = c;
	}
	t = &tr->t[tr->n];
	/* operators differ: fused epilogues, padding, layout changes */
	if (elems > 4096 && rnd(tr, 3) == 0)
		elems = elems / 8 * (4 + rnd(tr, 12));
	t->size = pad(elems * tr->dtype);
	t->first = tr->now;
	t->last = tr->now;
	return tr->n++;
}

/* The current operator reads tensor @i. */
static void use(struct trace *tr, size_t i)
{
	if (tr->t[i].last < tr->now)
		tr->t[i].last = tr->now;
}

/* Small buffers and perhaps a workspace beside the current operator. */
static void scratch(struct trace *tr, uint64_t out_elems)
{
	size_t k, m = rnd(tr, 4);

	for (k = 0; k < m; k++) {
		size_t s = make(tr, (64u << rnd(tr, 7)) / tr->dtype);

		tr->t[s].last = tr->now + rnd(tr, 2);
	}
	if (rnd(tr, 5) == 0)
		make(tr, out_elems);
}

/* One operator: reads @in (n of them), makes a tensor of @elems. */
static size_t op(struct trace *tr, const size_t *in, size_t nin,
		 uint64_t elems)
{
	size_t k, out;

	for (k = 0; k < nin; k++)
		use(tr, in[k]);
	/* now and then a read from far back (a concat, a cached value) */
	if (tr->n > 64 && rnd(tr, 12) == 0)
		use(tr, tr->n - 1 - rnd(tr, 64 + rnd(tr, tr->n - 64)));
	out = make(tr, elems);
	scratch(tr, elems);
	tr->now++;
	return out;
}

/* What the backward pass needs to know of a forward operator. */
struct fwd {
	size_t out;		/* its output */
	uint64_t elems;
	uint64_t weights;	/* parameter elements (0: none) */
};

struct prog {
	struct fwd *f;
	size_t n, cap;
};

static void record(struct prog *pg, size_t out, uint64_t elems, uint64_t w)
{
	if (!pg)
		return;
	if (pg->n == pg->cap) {
		size_t c = pg->cap ? 2 * pg->cap : 1024;
		struct fwd *f = realloc(pg->f, c * sizeof(*f));

		if (!f) {
			perror("tracegen");
			exit(1);
		}
		pg->f = f;
		pg->cap = c;
	}
	pg->f[pg->n].out = out;
	pg->f[pg->n].elems = elems;
	pg->f[pg->n].weights = w;
	pg->n++;
}

static size_t fop(struct trace *tr, struct prog *pg, const size_t *in,
		  size_t nin, uint64_t elems, uint64_t weights)
{
	size_t out = op(tr, in, nin, elems);

	record(pg, out, elems, weights);
	return out;
}

static void cnn(struct trace *tr, struct prog *pg, size_t want)
{
	uint64_t batch = batch_of(tr, 1u << rnd(tr, 6)), hw = 56u << rnd(tr, 3);
	uint64_t ch = 32u << rnd(tr, 2);
	size_t x, stage = 0, per = 2 + rnd(tr, 5);

	x = fop(tr, pg, NULL, 0, batch * ch * hw * hw, 0);
	while (tr->n < want) {
		size_t b, k, res = x;
		uint64_t e = batch * ch * hw * hw;

		for (b = 0; b < per && tr->n < want; b++) {
			size_t convs = 2 + rnd(tr, 2);

			res = x;
			for (k = 0; k < convs; k++) {
				uint64_t mid = k + 1 < convs && rnd(tr, 2) ?
					       e / 4 : e;

				x = fop(tr, pg, &x, 1, mid, ch * ch * 9);
				x = fop(tr, pg, &x, 1, mid, 2 * ch);
				x = fop(tr, pg, &x, 1, mid, 0);
			}
			{
				size_t in[2] = { x, res };

				x = fop(tr, pg, in, 2, e, 0);
			}
		}
		stage++;
		if (hw > 7) {
			hw /= 2;
			ch *= 2;
		}
		x = fop(tr, pg, &x, 1, batch * ch * hw * hw, ch * ch * 2);
	}
	(void)stage;
}

static void bert(struct trace *tr, struct prog *pg, size_t want)
{
	uint64_t batch = batch_of(tr, 1u << rnd(tr, 5));
	uint64_t seq = 128u << rnd(tr, 3);
	uint64_t hid = 256u << rnd(tr, 3), heads = hid / 64;
	uint64_t tok = batch * seq;
	size_t x = fop(tr, pg, NULL, 0, tok * hid, 0);

	while (tr->n < want) {
		size_t q, k, v, s, c, a, f, in[3];

		q = fop(tr, pg, &x, 1, tok * hid, hid * hid);
		k = fop(tr, pg, &x, 1, tok * hid, hid * hid);
		v = fop(tr, pg, &x, 1, tok * hid, hid * hid);
		in[0] = q;
		in[1] = k;
		s = fop(tr, pg, in, 2, batch * heads * seq * seq, 0);
		s = fop(tr, pg, &s, 1, batch * heads * seq * seq, 0);
		in[0] = s;
		in[1] = v;
		c = fop(tr, pg, in, 2, tok * hid, 0);
		c = fop(tr, pg, &c, 1, tok * hid, hid * hid);
		in[0] = c;
		in[1] = x;
		a = fop(tr, pg, in, 2, tok * hid, 0);
		a = fop(tr, pg, &a, 1, tok * hid, 2 * hid);
		f = fop(tr, pg, &a, 1, tok * hid * 4, hid * hid * 4);
		f = fop(tr, pg, &f, 1, tok * hid * 4, 0);
		f = fop(tr, pg, &f, 1, tok * hid, hid * hid * 4);
		in[0] = f;
		in[1] = a;
		x = fop(tr, pg, in, 2, tok * hid, 0);
		x = fop(tr, pg, &x, 1, tok * hid, 2 * hid);
	}
}

static void unet(struct trace *tr, size_t want)
{
	uint64_t batch = batch_of(tr, 1u << rnd(tr, 4)), hw = 128u << rnd(tr, 3);
	uint64_t ch = 16u << rnd(tr, 3);

	while (tr->n < want) {
		size_t skip[8], depth = 3 + rnd(tr, 5), d, k;
		size_t x = op(tr, NULL, 0, batch * ch * hw * hw);
		uint64_t h = hw, c = ch;

		for (d = 0; d < depth; d++) {
			for (k = 0; k < 2 + rnd(tr, 3); k++)
				x = op(tr, &x, 1, batch * c * h * h);
			skip[d] = x;
			h = h > 4 ? h / 2 : h;
			c *= 2;
			x = op(tr, &x, 1, batch * c * h * h);
		}
		while (d--) {
			size_t in[2];

			h *= 2;
			c /= 2;
			x = op(tr, &x, 1, batch * c * h * h);
			in[0] = x;
			in[1] = skip[d];
			x = op(tr, in, 2, batch * 2 * c * h * h);
			for (k = 0; k < 1 + rnd(tr, 3); k++)
				x = op(tr, &x, 1, batch * c * h * h);
		}
	}
}

/* The backward of @pg, then the optimizer step. */
static void backward(struct trace *tr, struct prog *pg)
{
	int fused = rnd(tr, 2);
	size_t i, grad = SIZE_MAX, *wg, nwg = 0;

	wg = calloc(pg->n, sizeof(*wg));
	if (!wg) {
		perror("tracegen");
		exit(1);
	}
	for (i = pg->n; i-- > 0;) {
		struct fwd *f = &pg->f[i];
		size_t in[2], nin = 0, g;

		/* most forward outputs are saved for their backward */
		if (rnd(tr, 8))
			in[nin++] = f->out;
		if (grad != SIZE_MAX)
			in[nin++] = grad;
		g = op(tr, in, nin, f->elems);
		grad = g;
		if (f->weights) {
			size_t w = make(tr, f->weights);

			if (fused)
				tr->t[w].last = tr->now + 2;
			else
				wg[nwg++] = w;
		}
	}
	/* the optimizer: every accumulated gradient read once, in order */
	for (i = 0; i < nwg; i++) {
		use(tr, wg[i]);
		scratch(tr, 1024);
		tr->now++;
	}
	free(wg);
}

/*
 * -k: what the trace is known to be, for the tests to compare with what
 * a planner reads from the CSV. The lower bound by a sweep of its own
 * over the CSV's time steps: a difference array, each tensor adding its
 * size at 2 * first and taking it away at 2 * last + 2 (half-open).
 */
static void print_known(const struct trace *tr)
{
	uint64_t live = 0, lb = 0, big = 0, small = UINT64_MAX, end = 0;
	int64_t *d;
	size_t i;

	for (i = 0; i < tr->n; i++)
		if (2 * tr->t[i].last + 2 > end)
			end = 2 * tr->t[i].last + 2;
	d = calloc(end + 1, sizeof(*d));
	if (!d) {
		perror("tracegen");
		exit(1);
	}
	for (i = 0; i < tr->n; i++) {
		const struct tensor *t = &tr->t[i];

		d[2 * t->first] += (int64_t)t->size;
		d[2 * t->last + 2] -= (int64_t)t->size;
		if (t->size > big)
			big = t->size;
		if (t->size < small)
			small = t->size;
	}
	for (i = 0; i <= end; i++) {
		live += (uint64_t)d[i];
		if (live > lb)
			lb = live;
	}
	free(d);
	fprintf(stderr, "buffers %zu\nlower_bound %" PRIu64
		"\nlargest %" PRIu64 "\nsmallest %" PRIu64 "\n",
		tr->n, lb, big, tr->n ? small : 0);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tracegen [-s SEED] [-n BUFFERS] [-b BATCH] [-k] SHAPE > trace.csv\n"
		"shapes: cnn bert unet train-cnn train-bert\n"
		"Writes a compiler-shaped trace of about BUFFERS (default 10000)\n"
		"buffers in MiniMalloc's CSV (id,lower,upper,size).\n"
		"  -b BATCH  the batch (1 to 65536) instead of the seed's (1 to 32):\n"
		"            e.g. 256 puts GB-sized activations beside the tiny ones\n"
		"  -k        the answers known by construction on stderr: buffers,\n"
		"            the lower bound (most bytes alive at once), the\n"
		"            largest and smallest size\n");
}

int main(int argc, char **argv)
{
	struct trace tr = { 0 };
	struct prog pg = { 0 };
	unsigned long long seed = 1, n = 10000, batch = 0;
	int known = 0;
	const char *shape;
	char *end;
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "s:n:b:kh")) != -1) {
		switch (c) {
		case 's':
			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "tracegen: bad seed '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			n = strtoull(optarg, &end, 0);
			if (errno || *end || n < 10 || n > 10000000) {
				fprintf(stderr,
					"tracegen: bad buffer count '%s' (10 to 10^7)\n",
					optarg);
				return 2;
			}
			break;
		case 'b':
			errno = 0;
			batch = strtoull(optarg, &end, 0);
			if (errno || *end || batch < 1 || batch > 65536) {
				fprintf(stderr,
					"tracegen: bad batch '%s' (1 to 65536)\n",
					optarg);
				return 2;
			}
			break;
		case 'k':
			known = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	shape = argv[optind];
	tr.rng = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
	if (!tr.rng)
		tr.rng = 1;
	tr.dtype = rnd(&tr, 2) ? 2 : 4;
	tr.batch = batch;
	if (!strcmp(shape, "cnn")) {
		cnn(&tr, NULL, n);
	} else if (!strcmp(shape, "bert")) {
		bert(&tr, NULL, n);
	} else if (!strcmp(shape, "unet")) {
		unet(&tr, n);
	} else if (!strcmp(shape, "train-cnn")) {
		cnn(&tr, &pg, n / 2);
		backward(&tr, &pg);
	} else if (!strcmp(shape, "train-bert")) {
		bert(&tr, &pg, n / 2);
		backward(&tr, &pg);
	} else {
		fprintf(stderr, "tracegen: unknown shape '%s'\n", shape);
		usage(stderr);
		return 2;
	}
	printf("id,lower,upper,size\n");
	for (i = 0; i < tr.n; i++)
		printf("%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", i,
		       2 * tr.t[i].first, 2 * tr.t[i].last + 2, tr.t[i].size);
	if (known)
		print_known(&tr);
	free(tr.t);
	free(pg.f);
	if (fflush(stdout) || ferror(stdout)) {
		perror("tracegen: stdout");
		return 1;
	}
	return 0;
}
