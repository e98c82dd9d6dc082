// SPDX-License-Identifier: GPL-2.0
/*
 * Demo: real models on /dev/metadef. One tenant per model, each a process
 * of its own and so a memory domain of its own: it imports its ONNX model
 * with libmetadef (md_graph_from_onnx(); the weights stay resident in
 * memory of their own, as in an inference runtime's activation arena),
 * plans the activations (md_graph_plan()), and executes the plan in one
 * arena of its domain: op by op, every tensor is written with a pattern
 * of its own when its op runs and checked, byte for byte, when it dies.
 * A plan that let two live tensors share a byte fails the check.
 *
 * Each tenant also replays the same allocations and frees through a model
 * of a framework's caching device allocator (tools/bench/caching.h) and
 * counts what no reuse would take, so the table at the end shows, side by
 * side, the memory the arena saved against both.
 *
 * usage: models-demo [--backend kmod|host] FILE.onnx [--input NAME=DIMS]
 *                   [--dim NAME=N] [--dtype fp16] [-- FILE.onnx ...]...
 *
 * The backend is the module's (/dev/metadef) unless --backend host says
 * otherwise (a host test runs the demo so).
 *
 * While every tenant holds its arena, the parent runs the command of
 * METADEF_DEMO_WHILE (if set; e.g. "metadefctl domains") so the domains
 * can be seen holding their memory. Exit status non-zero when a step did
 * not go as described: the demo is also a smoke test.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <metadef/arena.h>
#include <metadef/device.h>
#include <metadef/graph.h>
#include <metadef/metadef.h>
#include <metadef/onnx.h>
#include <metadef/plan.h>

#include "../bench/caching.h"

#define MAX_TENANTS	4
#define MAX_OPTS	8
#define MiB		(1024.0 * 1024.0)

struct tenant {
	const char *file;
	const char *name;		/* the file's base name */
	struct md_onnx_input in[MAX_OPTS];
	int64_t dims[MAX_OPTS][MD_ONNX_MAX_RANK];
	struct md_onnx_dim dim[MAX_OPTS];
	struct md_onnx_opts opts;
};

/* What a tenant reports to the parent when it is done. */
struct report {
	int ok;
	char why[200];
	uint32_t domain;
	uint64_t nodes, tensors, inplace;
	uint64_t weights;		/* resident, outside the plan */
	uint64_t no_reuse;		/* every tensor its own memory */
	uint64_t caching;		/* the caching allocator's reserved peak */
	uint64_t plan;			/* metadef's planned arena */
	uint64_t bound;			/* most bytes alive at once */
	uint64_t arena, dev_va;		/* the region behind it */
	uint64_t written, checked;	/* bytes */
	double plan_ms, run_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *backend = "kmod";

static void usage(void)
{
	fprintf(stderr,
		"usage: models-demo [--backend kmod|host] FILE.onnx [--input NAME=DIMS] [--dim NAME=N]\n"
		"                   [--dtype fp16|bf16|fp32] [-- FILE.onnx ...]...\n"
		"       (one tenant per model, at most %d)\n",
		MAX_TENANTS);
	exit(2);
}

/* "NAME=VALUE" into its two halves (@s is modified). */
static char *split_eq(char *s, const char *opt)
{
	char *eq = strchr(s, '=');

	if (!eq || eq == s || !eq[1]) {
		fprintf(stderr, "models-demo: %s wants NAME=VALUE, not '%s'\n",
			opt, s);
		exit(2);
	}
	*eq = 0;
	return eq + 1;
}

static int parse_args(int argc, char **argv, struct tenant *t)
{
	int n = 0, i;

	for (i = 1; i < argc; i++) {
		struct tenant *c = n ? &t[n - 1] : NULL;
		char *v;

		if (!strcmp(argv[i], "--")) {
			continue;
		} else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
			backend = argv[++i];
			if (strcmp(backend, "kmod") && strcmp(backend, "host"))
				usage();
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage();
		} else if (!strcmp(argv[i], "--input") && c && i + 1 < argc) {
			struct md_onnx_input *in = &c->in[c->opts.ninputs];
			size_t rank;

			if (c->opts.ninputs == MAX_OPTS)
				usage();
			v = split_eq(argv[++i], "--input");
			if (md_onnx_parse_dims(v, c->dims[c->opts.ninputs],
					       &rank)) {
				fprintf(stderr, "models-demo: bad shape '%s'\n", v);
				exit(2);
			}
			in->name = argv[i];
			in->dims = c->dims[c->opts.ninputs];
			in->rank = rank;
			c->opts.ninputs++;
		} else if (!strcmp(argv[i], "--dim") && c && i + 1 < argc) {
			struct md_onnx_dim *d = &c->dim[c->opts.ndims];
			char *end;

			if (c->opts.ndims == MAX_OPTS)
				usage();
			v = split_eq(argv[++i], "--dim");
			d->name = argv[i];
			d->value = strtoll(v, &end, 10);
			if (*end || d->value < 0) {
				fprintf(stderr, "models-demo: bad --dim value '%s'\n", v);
				exit(2);
			}
			c->opts.ndims++;
		} else if (!strcmp(argv[i], "--dtype") && c && i + 1 < argc) {
			v = argv[++i];
			if (!strcmp(v, "fp16"))
				c->opts.dtype = MD_ONNX_DTYPE_FP16;
			else if (!strcmp(v, "bf16"))
				c->opts.dtype = MD_ONNX_DTYPE_BF16;
			else if (!strcmp(v, "fp32"))
				c->opts.dtype = MD_ONNX_DTYPE_FP32;
			else
				usage();
		} else if (argv[i][0] != '-' && n < MAX_TENANTS) {
			c = &t[n++];
			memset(c, 0, sizeof(*c));
			c->file = argv[i];
			c->name = strrchr(c->file, '/') ? strrchr(c->file, '/') + 1 :
				  c->file;
			c->opts.inputs = c->in;
			c->opts.dims = c->dim;
			c->opts.flags = MD_ONNX_NO_WEIGHTS;
		} else {
			usage();
		}
	}
	if (!n)
		usage();
	return n;
}

/* The byte tensor @t holds at offset @i: its own, from its index. */
static inline uint8_t pattern(size_t t, uint64_t i)
{
	return (uint8_t)(t * 131 + (i >> 6) * 7 + i + 1);
}

static void fill(uint8_t *p, size_t t, uint64_t size)
{
	for (uint64_t i = 0; i < size; i++)
		p[i] = pattern(t, i);
}

static int intact(const uint8_t *p, size_t t, uint64_t size)
{
	for (uint64_t i = 0; i < size; i++)
		if (p[i] != pattern(t, i))
			return 0;
	return 1;
}

/*
 * Run the plan on the arena at @base as the model would run: at step s,
 * first check the tensors that die at s and whose memory an output of s
 * takes over in place (the op reads them before it writes), then write
 * every tensor born at s, then check the other tensors that die at s.
 * Every tensor is checked once, at its death, after everything that ran
 * while it was alive: any overlap of two live tensors is caught.
 *
 * A view (gp->kind) is no op's write: it is its base's bytes, so it is
 * not written when born and, when it dies, it must still hold its root's
 * pattern (the tensor at the end of its view chain). Its check counts in
 * no byte total: written and checked bytes are those of the writers. An
 * in-place output takes over the memory of its source's whole view family
 * (the lowering takes it only when all of it dies at that op), so the
 * family is checked before that op writes.
 */
/*
 * Tensors bucketed by a step (their birth or their death), in index order
 * within a step: @start has @nsteps + 1 entries, @idx one per tensor.
 */
struct buckets {
	size_t *start;
	size_t *idx;
};

static int bucket(struct buckets *b, const uint64_t *step, size_t nt,
		  uint64_t nsteps)
{
	size_t i;

	b->start = calloc(nsteps + 2, sizeof(*b->start));
	b->idx = calloc(nt + 1, sizeof(*b->idx));
	if (!b->start || !b->idx)
		return -ENOMEM;
	for (i = 0; i < nt; i++)
		b->start[step[i] + 1]++;
	for (i = 0; i < nsteps + 1; i++)
		b->start[i + 1] += b->start[i];
	for (i = 0; i < nt; i++)
		b->idx[b->start[step[i]]++] = i;
	/* each start[] moved to its end: shift back by one bucket */
	memmove(b->start + 1, b->start, (nsteps + 1) * sizeof(*b->start));
	b->start[0] = 0;
	return 0;
}

static void unbucket(struct buckets *b)
{
	free(b->start);
	free(b->idx);
}

/* Check tensor @i at its death; 0 or -EFAULT with r->why set. */
static int check_dead(const struct md_graph *g, const struct md_graph_plan *gp,
		      uint8_t *base, const size_t *root, size_t i,
		      struct report *r)
{
	uint64_t size = md_graph_tensor_size(g, (int)i);

	if (!size)
		return 0;
	if (!intact(base + gp->offset[i], root[i], size)) {
		snprintf(r->why, sizeof(r->why),
			 "tensor '%s' was overwritten while alive",
			 md_graph_tensor_name(g, (int)i));
		return -EFAULT;
	}
	if (gp->kind[i] != MD_ALIAS_VIEW)
		r->checked += size;
	return 0;
}

/*
 * Run the plan on the arena at @base as the model would run: at step s,
 * first check the tensors that die at s and whose memory an output of s
 * takes over in place (the op reads them before it writes), then write
 * every tensor born at s, then check the other tensors that die at s.
 * Every tensor is checked once, at its death, after everything that ran
 * while it was alive: any overlap of two live tensors is caught.
 *
 * A view (gp->kind) is no op's write: it is its base's bytes, so it is
 * not written when born and, when it dies, it must still hold its root's
 * pattern (the tensor at the end of its view chain). Its check counts in
 * no byte total: written and checked bytes are those of the writers. An
 * in-place output takes over the memory of its source's whole view family
 * (the lowering takes it only when all of it dies at that op), so the
 * family is checked before that op writes.
 *
 * Tensors are bucketed by birth, death and view family first, so the
 * run is linear in steps + tensors (+ the families of in-place outputs).
 */
static int execute(const struct md_graph *g, const struct md_graph_plan *gp,
		   uint8_t *base, struct report *r)
{
	struct buckets born = { 0 }, dies = { 0 }, fam = { 0 };
	size_t nt = gp->ntensors, i, k;
	uint64_t T = 0, s, *rootstep = NULL;
	uint8_t *taken;
	size_t *root;
	int ret = -ENOMEM;

	taken = calloc(nt + 1, 1);	/* dies where an in-place output is born */
	root = calloc(nt + 1, sizeof(*root));
	rootstep = calloc(nt + 1, sizeof(*rootstep));
	if (!taken || !root || !rootstep)
		goto out;
	for (i = 0; i < nt; i++) {
		if (gp->upper[i] > T)
			T = gp->upper[i];
		root[i] = gp->kind[i] == MD_ALIAS_VIEW ? root[gp->alias[i]] : i;
		rootstep[i] = root[i];
	}
	if (bucket(&born, gp->lower, nt, T) ||
	    bucket(&dies, gp->upper, nt, T + 1) ||
	    bucket(&fam, rootstep, nt, nt))
		goto out;
	for (i = 0; i < nt; i++) {
		size_t rt;

		if (gp->kind[i] != MD_ALIAS_INPLACE)
			continue;
		rt = root[gp->alias[i]];
		for (k = fam.start[rt]; k < fam.start[rt + 1]; k++)
			if (gp->upper[fam.idx[k]] == gp->lower[i] + 1)
				taken[fam.idx[k]] = 1;
	}
	ret = 0;
	for (s = 0; s < T && !ret; s++) {
		for (k = dies.start[s + 1]; k < dies.start[s + 2] && !ret; k++)
			if (taken[dies.idx[k]])
				ret = check_dead(g, gp, base, root,
						 dies.idx[k], r);
		for (k = born.start[s]; k < born.start[s + 1] && !ret; k++) {
			uint64_t size;

			i = born.idx[k];
			size = md_graph_tensor_size(g, (int)i);
			if (!size || gp->kind[i] == MD_ALIAS_VIEW)
				continue;
			fill(base + gp->offset[i], i, size);
			r->written += size;
		}
		for (k = dies.start[s + 1]; k < dies.start[s + 2] && !ret; k++)
			if (!taken[dies.idx[k]])
				ret = check_dead(g, gp, base, root,
						 dies.idx[k], r);
	}
out:
	unbucket(&born);
	unbucket(&dies);
	unbucket(&fam);
	free(rootstep);
	free(taken);
	free(root);
	return ret;
}

/*
 * METADEF_DEMO_OVERLAP=1 (the host test): break the plan on purpose, two
 * tensors that are alive together and share no memory by right (neither
 * a view nor in place) put at one offset, so that the run must fail.
 */
static void break_plan(const struct md_graph *g, struct md_graph_plan *gp)
{
	size_t i, j, nt = gp->ntensors;

	for (i = 0; i < nt; i++) {
		uint64_t si = md_graph_tensor_size(g, (int)i);

		if (!si || gp->kind[i] != MD_ALIAS_NONE)
			continue;
		for (j = i + 1; j < nt; j++) {
			uint64_t sj = md_graph_tensor_size(g, (int)j);

			if (!sj || sj > si || gp->kind[j] != MD_ALIAS_NONE ||
			    gp->buffer[j] == gp->buffer[i] ||
			    gp->lower[j] >= gp->upper[i] ||
			    gp->lower[i] >= gp->upper[j])
				continue;
			gp->offset[j] = gp->offset[i];
			return;
		}
	}
}

static int run_tenant(struct tenant *t, struct report *r, int go_fd,
		      int ready_fd)
{
	struct md_device_config cfg = { .backend = backend };
	struct md_device *dev = NULL;
	struct md_graph *g = NULL;
	struct md_graph_plan gp;
	struct md_onnx_stats st;
	struct md_arena *a = NULL;
	struct md_arena_plan *m = NULL;
	struct md_arena_info ai;
	struct md_plan_ref ref;
	struct cache_sim *cs = NULL;
	struct cache_stats cst;
	struct md_error err = { 0 };
	char c = 0;
	double t0;
	int ret;

	memset(&gp, 0, sizeof(gp));
	ret = md_device_open(&cfg, &dev);
	if (ret) {
		snprintf(r->why, sizeof(r->why), "open the %s device: %s",
			 backend, strerror(-ret));
		return ret;
	}
	r->domain = md_device_domain(dev);
	t0 = now_ms();
	ret = md_graph_new(&g);
	if (!ret)
		ret = md_graph_from_onnx_file(g, t->file, &t->opts, &st, &err);
	if (ret) {
		snprintf(r->why, sizeof(r->why), "%s: %s", t->file,
			 err.msg[0] ? err.msg : strerror(-ret));
		goto out;
	}
	ret = md_graph_plan(g, NULL, &gp);
	if (ret) {
		snprintf(r->why, sizeof(r->why), "plan: %s", strerror(-ret));
		goto out;
	}
	r->plan_ms = now_ms() - t0;
	r->nodes = st.nodes;
	r->tensors = md_graph_tensor_count(g);
	r->inplace = gp.stats.inplace_taken;
	r->weights = st.weight_bytes + st.input_bytes;
	r->no_reuse = gp.stats.tensor_bytes;
	r->plan = gp.plan.peak;
	r->bound = gp.plan.lower_bound;

	/* The framework's way: the same buffers, alloc and free in order. */
	ret = cache_sim_create(0, &cs);
	if (!ret)
		ret = cache_replay(cs, &gp.problem);
	if (ret) {
		snprintf(r->why, sizeof(r->why), "caching allocator: %s",
			 strerror(-ret));
		goto out;
	}
	cache_sim_stats(cs, &cst);
	r->caching = cst.reserved_peak;

	/* metadef's way: one arena in this domain, the plan run in it. */
	ref.problem = &gp.problem;
	ref.offsets = gp.plan.offsets;
	ret = md_arena_create(dev, &ref, 1, &a);
	if (!ret)
		ret = md_arena_bind(a, &gp.problem, gp.plan.offsets, &m);
	if (!ret)
		ret = md_arena_activate(m);
	if (ret) {
		snprintf(r->why, sizeof(r->why), "arena: %s", strerror(-ret));
		goto out;
	}
	md_arena_info(a, &ai);
	r->arena = ai.size;
	r->dev_va = ai.dev_va;
	if (!ai.cpu) {
		snprintf(r->why, sizeof(r->why), "the arena has no CPU mapping");
		ret = -ENXIO;
		goto out;
	}
	if (getenv("METADEF_DEMO_OVERLAP"))
		break_plan(g, &gp);
	t0 = now_ms();
	ret = execute(g, &gp, ai.cpu, r);
	r->run_ms = now_ms() - t0;
	if (ret)
		goto out;
	r->ok = 1;
	/* Hold the arena until the parent has shown the domains. */
	if (write(ready_fd, "r", 1) != 1 || read(go_fd, &c, 1) < 0)
		ret = -EIO;
	md_arena_deactivate(m);
out:
	md_arena_destroy(a);
	cache_sim_destroy(cs);
	md_graph_plan_free(&gp);
	md_graph_free(g);
	md_device_close(dev);
	return ret;
}

static const char *mib(uint64_t b, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f MiB", b / MiB);
	return buf;
}

static const char *pct_less(uint64_t ours, uint64_t theirs, char *buf,
			    size_t len)
{
	if (!theirs)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f%% less",
			 100.0 * (1.0 - (double)ours / (double)theirs));
	return buf;
}

static void print_table(struct tenant *t, struct report *r, int n)
{
	char b[MAX_TENANTS][48];
	int i;

#define ROW(label, expr) do {						\
	printf("  %-28s", label);					\
	for (i = 0; i < n; i++) {					\
		expr;							\
		printf(" %22s", b[i]);					\
	}								\
	printf("\n");							\
} while (0)
	ROW("", snprintf(b[i], sizeof(b[i]), "%.22s", t[i].name));
	ROW("domain", snprintf(b[i], sizeof(b[i]), "%u", r[i].domain));
	ROW("nodes / tensors", snprintf(b[i], sizeof(b[i]), "%" PRIu64 " / %" PRIu64,
					r[i].nodes, r[i].tensors));
	ROW("weights (resident, own memory)", mib(r[i].weights, b[i], 48));
	ROW("no reuse (a buffer per tensor)", mib(r[i].no_reuse, b[i], 48));
	ROW("caching allocator (reserved)", mib(r[i].caching, b[i], 48));
	ROW("metadef plan (the arena)", mib(r[i].plan, b[i], 48));
	ROW("lower bound (most alive)", mib(r[i].bound, b[i], 48));
	ROW("  saved against no reuse",
	    pct_less(r[i].plan, r[i].no_reuse, b[i], 48));
	ROW("  saved against caching",
	    pct_less(r[i].plan, r[i].caching, b[i], 48));
	ROW("in-place outputs taken", snprintf(b[i], sizeof(b[i]), "%" PRIu64,
					       r[i].inplace));
	ROW("import + plan", snprintf(b[i], sizeof(b[i]), "%.0f ms",
				      r[i].plan_ms));
	ROW("run: written / checked", snprintf(b[i], sizeof(b[i]), "%.0f / %.0f MiB",
					       r[i].written / MiB,
					       r[i].checked / MiB));
#undef ROW
}

int main(int argc, char **argv)
{
	struct tenant t[MAX_TENANTS];
	struct report *r;
	int go[2], ready[2], n, i, failed = 0;
	uint64_t sum_cache = 0, sum_plan = 0, sum_none = 0;
	const char *cmd = getenv("METADEF_DEMO_WHILE");
	pid_t pid[MAX_TENANTS];
	char c, b1[32], b2[32], b3[32], b4[32];

	setvbuf(stdout, NULL, _IOLBF, 0);
	n = parse_args(argc, argv, t);
	/* Reports come back through shared memory, set up before fork(). */
	r = mmap(NULL, sizeof(*r) * n, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED) {
		perror("models-demo: mmap");
		return 1;
	}
	memset(r, 0, sizeof(*r) * n);
	if (pipe(go) || pipe(ready)) {
		perror("models-demo: pipe");
		return 1;
	}
	for (i = 0; i < n; i++) {
		printf("tenant %d: %s, its own process and memory domain\n",
		       i + 1, t[i].file);
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("models-demo: fork");
			return 1;
		}
		if (!pid[i]) {
			int ret;

			close(go[1]);
			close(ready[0]);
			ret = run_tenant(&t[i], &r[i], go[0], ready[1]);
			if (ret && !r[i].ok)
				(void)!write(ready[1], "x", 1);
			_exit(ret ? 1 : 0);
		}
	}
	close(go[0]);
	close(ready[1]);
	for (i = 0; i < n; i++)
		if (read(ready[0], &c, 1) != 1)
			break;
	if (cmd && *cmd) {
		printf("\nwhile every tenant holds its arena: %s\n", cmd);
		if (system(cmd))
			failed = 1;
	}
	close(go[1]);		/* the tenants let go */
	for (i = 0; i < n; i++) {
		int status;

		if (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) || !r[i].ok) {
			printf("tenant %d (%s): FAILED: %s\n", i + 1, t[i].name,
			       r[i].why[0] ? r[i].why : "exited abnormally");
			failed = 1;
		}
		sum_cache += r[i].caching;
		sum_plan += r[i].plan;
		sum_none += r[i].no_reuse;
	}
	if (failed) {
		printf("models-demo: FAILED\n");
		return 1;
	}
	printf("\nactivation memory of each tenant (every tensor written and checked in its arena):\n");
	print_table(t, r, n);
	printf("\nall %d tenants: no reuse %s, caching allocator %s, metadef %s: %s\n",
	       n, mib(sum_none, b1, sizeof(b1)), mib(sum_cache, b2, sizeof(b2)),
	       mib(sum_plan, b3, sizeof(b3)),
	       pct_less(sum_plan, sum_cache, b4, sizeof(b4)));
	printf("(against the caching allocator; %s against no reuse)\n",
	       pct_less(sum_plan, sum_none, b4, sizeof(b4)));
	return 0;
}
