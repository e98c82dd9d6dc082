// SPDX-License-Identifier: GPL-2.0
/*
 * Training steps in metadef's graph format: the forward ops are recorded
 * with what each keeps for its backward; the backward is then derived in
 * reverse order (a small reverse-mode autodiff over the recorded ops),
 * and Adam updates every weight, either in one step after the backward
 * (the usual optimizer.step()) or, with --grad-reuse, as soon as that
 * weight's gradient is complete (a fused per-layer update: gradient
 * buffers die early and their memory is reused by the next layers').
 *
 * Tensors and their kinds:
 *   data      the batch (images, token ids, mask, labels): inputs
 *   weight    the model's weights in its dtype: inputs
 *   master    fp32 master weights (fp16 only: mixed precision): inputs
 *   state     Adam's m and v (fp32), BN running statistics: inputs
 *   act       forward outputs; alive until their last forward use or
 *             the backward op that reads them
 *   grad      activation gradients ("g.NAME"), weight gradients
 *             ("g.WEIGHT"), partial sums ("g.NAME.2") and their sums
 * An Adam update reads weight, master, m, v and the gradient and writes
 * the first four in place; the format has no op without an output, so
 * each update makes a 4-byte status word (its share of the gradient
 * norm, as a fused multi-tensor Adam does) that nothing reads.
 *
 * Activation recomputation (gradient checkpointing), --recompute[=K], as
 * torch.utils.checkpoint and Megatron-LM's "full" recompute do it: the
 * units are BERT's 24 encoder layers and ResNet-50's 16 bottleneck blocks
 * (the embeddings, stem, pooler, head and loss are not checkpointed).
 * Every K consecutive units form a segment (the last one may be shorter).
 * The forward runs as without recomputation, but only a segment's input
 * (the checkpoint: the previous unit's output) is kept for the backward;
 * what its ops would save (linear inputs, softmax outputs, dropout masks,
 * LayerNorm and BN statistics, ...) dies in the forward at its last
 * forward use. In the backward, just before the backward op of a
 * segment's last forward op, the segment's forward ops are emitted once
 * more, in order, after a "# recompute FIRST .. LAST" comment: op
 * "recompute.OP", outputs "recompute.NAME" (kind "recompute"), each the
 * size of its original, in place where the original was; they read the
 * checkpoint, the weights and (BERT) the extended attention mask as they
 * are, and each other's recomputed outputs. The segment's backward ops
 * then read the recomputed tensors instead of the saved ones, so those
 * die inside the segment's backward; gradient names and the update
 * policy (--grad-reuse composes with it) are unchanged, and a recomputed
 * op counts no extra weight use. The cost: each checkpointed unit's
 * forward runs twice, whatever K (K trades memory only: fewer
 * checkpoints, larger segments alive at once in the backward), about one
 * more forward pass of the encoder (BERT) or of the blocks (ResNet). The
 * generator counts no FLOPs; it reports the recomputed ops, tensors and
 * bytes (--json: recompute_ops, recompute_tensors, recompute_bytes,
 * checkpoints). BERT-large: 18 ops and 23 tensors per layer; ResNet-50:
 * 10 ops and 13 tensors per block, 12 and 16 with a projection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"

enum kind { K_DATA, K_WEIGHT, K_MASTER, K_STATE, K_ACT, K_GRAD, K_OTHER,
	     K_RECOMP };

struct ten {
	const char *name;
	uint64_t size;
	enum kind kind;
	bool req;		/* needs a gradient: a weight or made from one */
	int grad;		/* its gradient so far, or -1 */
	int contribs;		/* gradient contributions so far */
	int uses;		/* weights: forward uses not yet back-propagated */
	int master, m, v;	/* weights: their optimizer inputs */
};

#define MAXIO	8

struct fop {
	const char *name;
	int in[MAXIO], nin;
	int out[MAXIO], nout;
	int inpl[MAXIO];	/* output in place on input i, or -1 */
	int save[MAXIO], nsave;
	bool alias;		/* an add: its gradient is its inputs' */
	bool seed;		/* the loss: its backward starts the pass */
};

/* Forward ops first..last (indices into tg.ops): one checkpoint's span. */
struct seg {
	int first, last;
};

struct tg {
	const struct mm_opts *o;
	struct mm_out *out;
	struct mm_summary *s;
	struct ten *t;
	int nt, ct;
	struct fop *ops;
	int nops, cops;
	int *weights, nweights;	/* in order of declaration */
	unsigned int db;	/* bytes per element of the model's dtype */
	struct seg *segs;	/* --recompute: checkpointed segments */
	int nsegs;
	int units;		/* checkpointable units begun so far */
};

static int tg_new(struct tg *g, const char *name, uint64_t size,
		  enum kind kind)
{
	struct ten *t;
	uint64_t *acc;

	if (g->nt == g->ct) {
		int c = g->ct ? g->ct * 2 : 1024;
		struct ten *n = realloc(g->t, c * sizeof(*n));

		if (!n) {
			fprintf(stderr, "metadef-models: out of memory\n");
			exit(1);
		}
		g->t = n;
		g->ct = c;
	}
	t = &g->t[g->nt];
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->size = size;
	t->kind = kind;
	t->grad = t->master = t->m = t->v = -1;
	switch (kind) {
	case K_DATA:
		acc = &g->s->data_bytes;
		break;
	case K_WEIGHT:
		acc = &g->s->weight_bytes;
		break;
	case K_MASTER:
		acc = &g->s->master_bytes;
		break;
	case K_STATE:
		acc = &g->s->optim_bytes;
		break;
	case K_ACT:
		acc = &g->s->act_bytes;
		break;
	case K_GRAD:
		acc = &g->s->act_grad_bytes;
		break;
	case K_RECOMP:
		acc = &g->s->recompute_bytes;
		g->s->recompute_tensors++;
		break;
	default:
		acc = &g->s->other_bytes;
	}
	*acc += size;
	g->s->tensor_bytes += size;
	g->s->tensors++;
	if (kind <= K_STATE) {
		mm_printf(g->out, "input %s %llu\n", name,
			  (unsigned long long)size);
		g->s->inputs++;
	}
	return g->nt++;
}

static int tg_data(struct tg *g, const char *name, uint64_t size)
{
	return tg_new(g, name, size, K_DATA);
}

/*
 * A weight of @elems elements: the weight, its fp32 master copy (mixed
 * precision) and Adam's m and v. @buffer: BN running statistics, read by
 * the forward, not trained.
 */
static int tg_weight(struct tg *g, const char *name, uint64_t elems,
		     bool buffer)
{
	int w = tg_new(g, name, elems * g->db, buffer ? K_STATE : K_WEIGHT);
	int id;

	if (buffer) {
		/* not optimizer state: count it with the weights */
		g->s->optim_bytes -= elems * g->db;
		g->s->weight_bytes += elems * g->db;
		g->s->buffers += elems;
		return w;
	}
	g->t[w].req = true;
	g->s->params += elems;
	/* (tg_new() may move g->t: never index it in the same expression) */
	if (g->o->dtype == MM_FP16) {
		id = tg_new(g, mm_fmt("%s.master", name), elems * 4, K_MASTER);
		g->t[w].master = id;
	}
	id = tg_new(g, mm_fmt("%s.adam_m", name), elems * 4, K_STATE);
	g->t[w].m = id;
	id = tg_new(g, mm_fmt("%s.adam_v", name), elems * 4, K_STATE);
	g->t[w].v = id;
	g->weights = realloc(g->weights, (g->nweights + 1) * sizeof(int));
	if (!g->weights) {
		fprintf(stderr, "metadef-models: out of memory\n");
		exit(1);
	}
	g->weights[g->nweights++] = w;
	return w;
}

/* One "op" line: inputs, outputs (NAME:SIZE, "=IN" for in place). */
static void emit(struct tg *g, const char *name, const int *in, int nin,
		 const int *out, const int *inplace, int nout)
{
	int i;

	mm_printf(g->out, "op %s", name);
	for (i = 0; i < nin; i++)
		mm_printf(g->out, " %s", g->t[in[i]].name);
	mm_printf(g->out, " ->");
	for (i = 0; i < nout; i++) {
		mm_printf(g->out, " %s:%llu", g->t[out[i]].name,
			  (unsigned long long)g->t[out[i]].size);
		if (inplace && inplace[i] >= 0)
			mm_printf(g->out, "=%s", g->t[inplace[i]].name);
	}
	mm_printf(g->out, "\n");
	g->s->nodes++;
}

#define L(...)		((const int []){ __VA_ARGS__ })
#define NL(...)		((int)(sizeof(L(__VA_ARGS__)) / sizeof(int)))
#define NONE		((const int []){ -1 })

struct outspec {
	const char *name;
	uint64_t size;
	int inplace;	/* index into the op's inputs, or -1 */
};

/*
 * A forward op: inputs @in, outputs @outs (new activations), @save the
 * tensors (inputs or outputs) its backward reads. Returns the first
 * output's id (the others follow).
 */
static int fwd(struct tg *g, const char *name, const int *in, int nin,
	       const struct outspec *outs, int nout, const int *save,
	       int nsave, bool alias)
{
	struct fop *f;
	int ids[MAXIO], inpl[MAXIO], i, first = g->nt;
	bool req = false;

	for (i = 0; i < nin; i++) {
		req |= g->t[in[i]].req;
		if (g->t[in[i]].kind == K_WEIGHT)
			g->t[in[i]].uses++;
	}
	for (i = 0; i < nout; i++) {
		ids[i] = tg_new(g, outs[i].name, outs[i].size, K_ACT);
		g->t[ids[i]].req = req;
		inpl[i] = outs[i].inplace >= 0 ? in[outs[i].inplace] : -1;
	}
	emit(g, name, in, nin, ids, inpl, nout);

	if (g->nops == g->cops) {
		g->cops = g->cops ? g->cops * 2 : 1024;
		g->ops = realloc(g->ops, g->cops * sizeof(*g->ops));
		if (!g->ops) {
			fprintf(stderr, "metadef-models: out of memory\n");
			exit(1);
		}
	}
	f = &g->ops[g->nops++];
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->nin = nin;
	memcpy(f->in, in, nin * sizeof(int));
	f->nout = nout;
	memcpy(f->out, ids, nout * sizeof(int));
	for (i = 0; i < nout; i++)
		f->inpl[i] = outs[i].inplace;
	/* save: >= 0 an input's index, < 0 an output's: -1 - index */
	for (i = 0; i < nsave; i++)
		f->save[i] = save[i] >= 0 ? in[save[i]] : ids[-1 - save[i]];
	f->nsave = nsave;
	f->alias = alias;
	return first;
}

#define OUT(n, sz)	{ (n), (sz), -1 }
#define OUT_IN(n, sz, i)	{ (n), (sz), (i) }
#define OUTS(...)	((const struct outspec []){ __VA_ARGS__ })
#define NOUTS(...)	((int)(sizeof(OUTS(__VA_ARGS__)) / sizeof(struct outspec)))
#define SAVE(...)	L(__VA_ARGS__), NL(__VA_ARGS__)
#define NOSAVE		NONE, 0
#define Y(i)		(-1 - (i))	/* the op's output i, in SAVE() */

#define FWD(g, name, in, outs, save) \
	fwd(g, name, L in, NL in, OUTS outs, NOUTS outs, save, false)

static void update(struct tg *g, int w)
{
	const struct ten *t = &g->t[w];
	const char *name = mm_fmt("adam.%s", t->name);
	int in[5], n = 0, st;

	in[n++] = w;
	if (t->master >= 0)
		in[n++] = t->master;
	in[n++] = t->m;
	in[n++] = t->v;
	in[n++] = t->grad;
	st = tg_new(g, name, 4, K_OTHER);
	emit(g, name, in, n, &st, NULL, 1);
}

/* Add gradient contribution @c to tensor @x's gradient. */
static void contribute(struct tg *g, int x, int c)
{
	struct ten *t = &g->t[x];
	int sum, prev;

	t->contribs++;
	if (t->grad < 0) {
		t->grad = c;
		return;
	}
	prev = t->grad;
	sum = tg_new(g, mm_fmt("g.%s.sum%d", t->name, t->contribs), t->size,
		     K_GRAD);
	t = &g->t[x];	/* tg_new() may have moved it */
	if (t->kind == K_WEIGHT) {
		g->s->act_grad_bytes -= t->size;
		g->s->weight_grad_bytes += t->size;
	}
	/* accumulated in place, as autograd's InputBuffer does */
	emit(g, mm_fmt("acc.%s.%d", t->name, t->contribs), L(prev, c), 2,
	     &sum, &prev, 1);
	t->grad = sum;
}

/*
 * Checkpointable units (BERT's encoder layers, ResNet's bottleneck
 * blocks) are bracketed by unit_begin() and unit_end(). With
 * --recompute=K, every K units' forward ops form one segment: its first
 * unit's input is the checkpoint, kept for the backward; the rest of its
 * activations are read only by the segment's own forward and die there.
 */
static void unit_begin(struct tg *g)
{
	long k = g->o->recompute;
	struct seg *n;

	if (!k || g->units++ % k)
		return;
	n = realloc(g->segs, (g->nsegs + 1) * sizeof(*n));
	if (!n) {
		fprintf(stderr, "metadef-models: out of memory\n");
		exit(1);
	}
	g->segs = n;
	g->segs[g->nsegs].first = g->nops;
	g->segs[g->nsegs].last = g->nops - 1;
	g->nsegs++;
}

static void unit_end(struct tg *g)
{
	if (g->o->recompute)
		g->segs[g->nsegs - 1].last = g->nops - 1;
}

/*
 * Re-run segment @sg's forward just before its backward, as
 * torch.utils.checkpoint does: every op again, in order, as a new op
 * "recompute.OP" whose outputs are new tensors "recompute.NAME" of the
 * original sizes (in place where the original was). Inputs made inside
 * the segment are read from their recomputed copies; the rest (the
 * checkpoint, weights, the attention mask) as they are. The segment's
 * backward ops then read the recomputed tensors in place of the saved
 * originals, so those die in the segment's backward.
 */
static void recompute(struct tg *g, const struct seg *sg)
{
	int nt = g->nt, *map = malloc(nt * sizeof(int)), k, i;

	if (!map) {
		fprintf(stderr, "metadef-models: out of memory\n");
		exit(1);
	}
	for (i = 0; i < nt; i++)
		map[i] = -1;
	mm_printf(g->out, "# recompute %s .. %s\n", g->ops[sg->first].name,
		  g->ops[sg->last].name);
	for (k = sg->first; k <= sg->last; k++) {
		struct fop *f = &g->ops[k];
		int in[MAXIO], out[MAXIO], inpl[MAXIO];

		for (i = 0; i < f->nin; i++)
			in[i] = map[f->in[i]] >= 0 ? map[f->in[i]] : f->in[i];
		for (i = 0; i < f->nout; i++) {
			const char *name = g->t[f->out[i]].name;
			uint64_t size = g->t[f->out[i]].size;

			out[i] = tg_new(g, mm_fmt("recompute.%s", name), size,
					K_RECOMP);
			map[f->out[i]] = out[i];
			inpl[i] = f->inpl[i] >= 0 ? in[f->inpl[i]] : -1;
		}
		emit(g, mm_fmt("recompute.%s", f->name), in, f->nin, out, inpl,
		     f->nout);
		g->s->recompute_ops++;
		for (i = 0; i < f->nsave; i++)
			if (map[f->save[i]] >= 0)
				f->save[i] = map[f->save[i]];
	}
	g->s->checkpoints++;
	free(map);
}

static void backward(struct tg *g)
{
	int k, i, j, s = g->nsegs - 1;

	mm_printf(g->out, "# backward\n");
	for (k = g->nops - 1; k >= 0; k--) {
		struct fop *f = &g->ops[k];
		int in[2 * MAXIO], out[MAXIO], gin[MAXIO];
		int nin = 0, nout = 0;
		bool any = false;

		if (s >= 0 && k == g->segs[s].last) {
			recompute(g, &g->segs[s]);
			s--;
		}
		for (i = 0; i < f->nout; i++)
			if (g->t[f->out[i]].grad >= 0)
				any = true;
		if (!any && !f->seed)
			continue;
		if (f->alias) {
			int gy = g->t[f->out[0]].grad;

			for (i = 0; i < f->nin; i++)
				if (g->t[f->in[i]].req)
					contribute(g, f->in[i], gy);
			continue;
		}
		for (i = 0; i < f->nout; i++)
			if (g->t[f->out[i]].grad >= 0)
				in[nin++] = g->t[f->out[i]].grad;
		for (i = 0; i < f->nsave; i++)
			in[nin++] = f->save[i];
		for (i = 0; i < f->nin; i++) {
			const struct ten *x = &g->t[f->in[i]];
			const char *n;
			int id;

			if (!x->req)
				continue;
			n = x->grad < 0 && x->contribs == 0 ?
				mm_fmt("g.%s", x->name) :
				mm_fmt("g.%s.%d", x->name, x->contribs + 1);
			id = tg_new(g, n, x->size, K_GRAD);
			x = &g->t[f->in[i]];	/* tg_new() may move it */
			out[nout] = id;
			if (x->kind == K_WEIGHT) {
				g->s->act_grad_bytes -= x->size;
				g->s->weight_grad_bytes += x->size;
			}
			gin[nout++] = f->in[i];
		}
		if (!nout)
			continue;
		emit(g, mm_fmt("%s.bwd", f->name), in, nin, out, NULL, nout);
		for (j = 0; j < nout; j++) {
			struct ten *x;

			contribute(g, gin[j], out[j]);
			x = &g->t[gin[j]];
			if (x->kind == K_WEIGHT && --x->uses == 0 &&
			    g->o->grad_reuse)
				update(g, gin[j]);
		}
	}
	if (!g->o->grad_reuse) {
		mm_printf(g->out, "# optimizer step\n");
		for (i = 0; i < g->nweights; i++)
			update(g, g->weights[i]);
	}
}

static void tg_init(struct tg *g, const struct mm_opts *o, struct mm_out *out,
		    struct mm_summary *s, const char *what)
{
	memset(g, 0, sizeof(*g));
	g->o = o;
	g->out = out;
	g->s = s;
	g->db = o->dtype == MM_FP16 ? 2 : 4;
	s->format = "graph";
	mm_printf(out, "# %s, generated by metadef-models (tools/models/)\n",
		  what);
	mm_printf(out, "# dtype %s%s, optimizer Adam, %s\n",
		  mm_dtype_name(o->dtype),
		  o->dtype == MM_FP16 ? " (mixed precision: fp32 master weights)" : "",
		  o->grad_reuse ?
		  "per-weight update as soon as its gradient is complete (--grad-reuse)" :
		  "one optimizer step after the backward");
	if (o->recompute)
		mm_printf(out, "# activation recomputation (--recompute=%ld): the input of every %ld layer(s) (ResNet: bottleneck blocks) kept for the backward, their forward re-run just before their backward\n",
			  o->recompute, o->recompute);
	mm_printf(out, "device %s\n", o->device);
}

static int tg_finish(struct tg *g, int loss)
{
	struct ten *t = &g->t[loss];

	mm_printf(g->out, "output %s\n", t->name);
	g->s->param_bytes = (g->s->params + g->s->buffers) * g->db;
	free(g->t);
	free(g->ops);
	free(g->weights);
	free(g->segs);
	return 0;
}

/* ---------------------------------------------------------------- ResNet */

struct act {
	int id;
	long c, h, w;	/* channels, height, width */
};

static uint64_t elems(const struct tg *g, const struct act *a)
{
	return (uint64_t)g->o->batch * a->c * a->h * a->w;
}

/* Conv (no bias) + BN [+ ReLU in place] */
static struct act conv_bn(struct tg *g, const char *conv, const char *bn,
			  const char *relu, struct act x, long cout, int k,
			  int stride)
{
	struct act y = { 0 };
	int w, gam, bet, rm, rv;
	uint64_t n;

	y.c = cout;
	y.h = (x.h + 2 * (k / 2) - k) / stride + 1;
	y.w = (x.w + 2 * (k / 2) - k) / stride + 1;
	n = elems(g, &y);
	w = tg_weight(g, mm_fmt("%s.weight", conv), (uint64_t)cout * x.c * k * k,
		      false);
	y.id = FWD(g, conv, (x.id, w),
		   (OUT(mm_fmt("%s.out", conv), n * g->db)), SAVE(0, 1));
	gam = tg_weight(g, mm_fmt("%s.weight", bn), cout, false);
	bet = tg_weight(g, mm_fmt("%s.bias", bn), cout, false);
	rm = tg_weight(g, mm_fmt("%s.running_mean", bn), cout, true);
	rv = tg_weight(g, mm_fmt("%s.running_var", bn), cout, true);
	/* saved mean and invstd per channel, fp32 */
	y.id = FWD(g, bn, (y.id, gam, bet, rm, rv),
		   (OUT(mm_fmt("%s.out", bn), n * g->db),
		    OUT(mm_fmt("%s.stats", bn), 2 * cout * 4)),
		   SAVE(0, 1, Y(1)));
	if (relu)
		y.id = FWD(g, relu, (y.id),
			   (OUT_IN(mm_fmt("%s.out", relu), n * g->db, 0)),
			   SAVE(Y(0)));
	return y;
}

static struct act bottleneck(struct tg *g, const char *p, struct act x,
			     long planes, int stride)
{
	struct act y, id = x;
	uint64_t n;

	y = conv_bn(g, mm_fmt("%s.conv1", p), mm_fmt("%s.bn1", p),
		    mm_fmt("%s.relu1", p), x, planes, 1, 1);
	y = conv_bn(g, mm_fmt("%s.conv2", p), mm_fmt("%s.bn2", p),
		    mm_fmt("%s.relu2", p), y, planes, 3, stride);
	y = conv_bn(g, mm_fmt("%s.conv3", p), mm_fmt("%s.bn3", p), NULL, y,
		    planes * 4, 1, 1);
	if (stride != 1 || x.c != planes * 4)
		id = conv_bn(g, mm_fmt("%s.downsample.0", p),
			     mm_fmt("%s.downsample.1", p), NULL, x,
			     planes * 4, 1, stride);
	n = elems(g, &y) * g->db;
	/* out += identity; relu(out), both in place as torchvision does */
	y.id = fwd(g, mm_fmt("%s.add", p), L(y.id, id.id), 2,
		   OUTS(OUT_IN(mm_fmt("%s.add.out", p), n, 0)), 1, NOSAVE,
		   true);
	y.id = FWD(g, mm_fmt("%s.relu3", p), (y.id),
		   (OUT_IN(mm_fmt("%s.relu3.out", p), n, 0)), SAVE(Y(0)));
	return y;
}

/* Softmax cross-entropy over @classes: the loss (fp32) and the probs. */
static int loss(struct tg *g, int logits, int labels, long classes)
{
	int id;

	id = FWD(g, "loss", (logits, labels),
		 (OUT("loss.out", 4),
		  OUT("loss.probs", (uint64_t)g->o->batch * classes * g->db)),
		 SAVE(Y(1), 1));
	g->ops[g->nops - 1].seed = true;
	return id;
}

int mm_resnet_train(const struct mm_opts *o, struct mm_out *out,
		    struct mm_summary *s)
{
	static const int blocks[4] = { 3, 4, 6, 3 };
	struct act x;
	struct tg g;
	int l, i, fw, fb, labels;
	long b = o->batch;
	uint64_t n;

	tg_init(&g, o, out, s,
		mm_fmt("ResNet-50 v1.5 training step, batch %ld, %ldx%ld images",
		       b, o->image, o->image));
	x.c = 3;
	x.h = x.w = o->image;
	x.id = tg_data(&g, "images", elems(&g, &x) * g.db);
	labels = tg_data(&g, "labels", b * 8);
	x = conv_bn(&g, "conv1", "bn1", "relu", x, 64, 7, 2);

	/* max pool 3x3/2, pad 1: keeps its input and int64 argmax indices */
	{
		struct act p = x;

		p.h = (x.h + 2 - 3) / 2 + 1;
		p.w = (x.w + 2 - 3) / 2 + 1;
		n = elems(&g, &p);
		p.id = FWD(&g, "maxpool", (x.id),
			   (OUT("maxpool.out", n * g.db),
			    OUT("maxpool.indices", n * 8)),
			   SAVE(0, Y(1)));
		x = p;
	}
	for (l = 0; l < 4; l++)
		for (i = 0; i < blocks[l]; i++) {
			unit_begin(&g);
			x = bottleneck(&g, mm_fmt("layer%d.%d", l + 1, i), x,
				       64L << l, i == 0 && l > 0 ? 2 : 1);
			unit_end(&g);
		}
	x.id = FWD(&g, "avgpool", (x.id),
		   (OUT("avgpool.out", (uint64_t)b * x.c * g.db)), NOSAVE);
	fw = tg_weight(&g, "fc.weight", 1000 * 2048, false);
	fb = tg_weight(&g, "fc.bias", 1000, false);
	x.id = FWD(&g, "fc", (x.id, fw, fb),
		   (OUT("fc.out", (uint64_t)b * 1000 * g.db)), SAVE(0, 1));
	l = loss(&g, x.id, labels, 1000);
	backward(&g);
	return tg_finish(&g, l);
}

/* ---------------------------------------------------------------- BERT */

#define H	1024
#define HEADS	16
#define FFN	4096

static int linear(struct tg *g, const char *p, int x, uint64_t rows,
		  long in, long outf)
{
	int w = tg_weight(g, mm_fmt("%s.weight", p), (uint64_t)in * outf, false);
	int b = tg_weight(g, mm_fmt("%s.bias", p), outf, false);

	return FWD(g, p, (x, w, b),
		   (OUT(mm_fmt("%s.out", p), rows * outf * g->db)), SAVE(0, 1));
}

static int layer_norm(struct tg *g, const char *p, int x, uint64_t rows)
{
	int w = tg_weight(g, mm_fmt("%s.weight", p), H, false);
	int b = tg_weight(g, mm_fmt("%s.bias", p), H, false);

	/* mean and rstd per row, fp32 */
	return FWD(g, p, (x, w, b),
		   (OUT(mm_fmt("%s.out", p), rows * H * g->db),
		    OUT(mm_fmt("%s.stats", p), rows * 2 * 4)),
		   SAVE(0, 1, Y(1)));
}

static int dropout(struct tg *g, const char *p, int x, uint64_t n)
{
	return FWD(g, p, (x),
		   (OUT(mm_fmt("%s.out", p), n * g->db),
		    OUT(mm_fmt("%s.mask", p), n)), SAVE(Y(1)));
}

static int add(struct tg *g, const char *p, int a, int b, uint64_t n)
{
	return fwd(g, p, L(a, b), 2, OUTS(OUT(mm_fmt("%s.out", p), n * g->db)),
		   1, NOSAVE, true);
}

int mm_bert_train(const struct mm_opts *o, struct mm_out *out,
		  struct mm_summary *s)
{
	uint64_t rows = (uint64_t)o->batch * o->seq, n = rows * H;
	uint64_t attn = (uint64_t)o->batch * HEADS * o->seq * o->seq;
	int ids, tt, am, labels, mask, h, q, k, v, x, y, r, we, pe, te, l;
	const char *p, *a;
	struct tg g;

	tg_init(&g, o, out, s,
		mm_fmt("BERT-large fine-tuning step, batch %ld, sequence %ld",
		       o->batch, o->seq));
	ids = tg_data(&g, "input_ids", rows * 8);
	tt = tg_data(&g, "token_type_ids", rows * 8);
	am = tg_data(&g, "attention_mask", rows * 8);
	labels = tg_data(&g, "labels", o->batch * 8);

	/* word + position + token type embeddings in one op */
	we = tg_weight(&g, "embeddings.word_embeddings.weight",
		       30522ULL * H, false);
	pe = tg_weight(&g, "embeddings.position_embeddings.weight", 512ULL * H,
		       false);
	te = tg_weight(&g, "embeddings.token_type_embeddings.weight", 2ULL * H,
		       false);
	h = FWD(&g, "embeddings", (ids, tt, we, pe, te),
		(OUT("embeddings.out", n * g.db)), SAVE(0, 1));
	h = layer_norm(&g, "embeddings.LayerNorm", h, rows);
	h = dropout(&g, "embeddings.dropout", h, n);
	/* (1 - mask) * -10000 as [batch, 1, 1, seq] */
	mask = FWD(&g, "extended_mask", (am),
		   (OUT("extended_mask.out", rows * g.db)), NOSAVE);

	for (l = 0; l < 24; l++) {
		unit_begin(&g);
		p = mm_fmt("encoder.layer.%d", l);
		a = mm_fmt("%s.attention.self", p);
		q = linear(&g, mm_fmt("%s.query", a), h, rows, H, H);
		k = linear(&g, mm_fmt("%s.key", a), h, rows, H, H);
		v = linear(&g, mm_fmt("%s.value", a), h, rows, H, H);
		/* q k^T / sqrt(64): [batch, heads, seq, seq] */
		x = FWD(&g, mm_fmt("%s.scores", a), (q, k),
			(OUT(mm_fmt("%s.scores.out", a), attn * g.db)),
			SAVE(0, 1));
		x = fwd(&g, mm_fmt("%s.mask", a), L(x, mask), 2,
			OUTS(OUT_IN(mm_fmt("%s.mask.out", a), attn * g.db, 0)),
			1, NOSAVE, true);
		x = FWD(&g, mm_fmt("%s.softmax", a), (x),
			(OUT(mm_fmt("%s.softmax.out", a), attn * g.db)),
			SAVE(Y(0)));
		x = dropout(&g, mm_fmt("%s.dropout", a), x, attn);
		x = FWD(&g, mm_fmt("%s.context", a), (x, v),
			(OUT(mm_fmt("%s.context.out", a), n * g.db)),
			SAVE(0, 1));
		y = linear(&g, mm_fmt("%s.attention.output.dense", p), x, rows,
			   H, H);
		y = dropout(&g, mm_fmt("%s.attention.output.dropout", p), y, n);
		r = add(&g, mm_fmt("%s.attention.output.residual", p), y, h, n);
		h = layer_norm(&g, mm_fmt("%s.attention.output.LayerNorm", p), r,
			       rows);
		y = linear(&g, mm_fmt("%s.intermediate.dense", p), h, rows, H,
			   FFN);
		y = FWD(&g, mm_fmt("%s.intermediate.gelu", p), (y),
			(OUT(mm_fmt("%s.intermediate.gelu.out", p),
			     rows * FFN * g.db)), SAVE(0));
		y = linear(&g, mm_fmt("%s.output.dense", p), y, rows, FFN, H);
		y = dropout(&g, mm_fmt("%s.output.dropout", p), y, n);
		r = add(&g, mm_fmt("%s.output.residual", p), y, h, n);
		h = layer_norm(&g, mm_fmt("%s.output.LayerNorm", p), r, rows);
		unit_end(&g);
	}

	/* pooler on the first token, dropout, classifier (2 labels) */
	x = FWD(&g, "pooler.first_token", (h),
		(OUT("pooler.first_token.out", o->batch * H * g.db)), NOSAVE);
	x = linear(&g, "pooler.dense", x, o->batch, H, H);
	x = FWD(&g, "pooler.tanh", (x),
		(OUT("pooler.tanh.out", o->batch * H * g.db)), SAVE(Y(0)));
	x = dropout(&g, "classifier.dropout", x, o->batch * H);
	x = linear(&g, "classifier", x, o->batch, H, 2);
	l = loss(&g, x, labels, 2);
	backward(&g);
	return tg_finish(&g, l);
}
