// SPDX-License-Identifier: GPL-2.0
/*
 * plan_bench: metadef's heuristic planner (md_plan_solve(), default
 * options) against planners that are not its own, in the same run:
 *
 *   tflite   TensorFlow Lite's "greedy by size" offset planner (Pisarchyk
 *            and Lee, "Efficient Memory Management for Deep Neural Net
 *            Inference", 2020): tensors by size, descending; each at the
 *            lowest gap that fits among the placed tensors alive with it.
 *   xla      XLA's GlobalDecreasingSizeBestFitHeap: buffers by size,
 *            descending (then longer lifetime); each in the smallest free
 *            chunk over its live range that fits, else on top.
 *   minimalloc  MiniMalloc's exact solver (../shared/peers/minimalloc), run
 *            as a program at the lower bound's capacity, then minimising,
 *            with a time limit: its optimum where it finds one.
 *
 * Both heuristics are written here from those descriptions (no code of
 * theirs); they scan every placed buffer per placement, as described,
 * so they only run on the quality problems, not at scale.
 *
 * Problems: the MiniMalloc challenging files, seeded random families, the
 * graphs in tools/plan/examples. Then the scale table: every shape at 10^5
 * and 10^6 buffers, planned with default options, CPU time of the solve.
 *
 * Goals (one row each in build/bench/results/plan.tsv, harness.h; exit
 * status 1 when one is missed, 3 when none is but one was not judged):
 *   - metadef's peak <= tflite's and <= xla's on every problem (the
 *     number of problems where it is worse: 0);
 *   - geometric mean of metadef / minimalloc over the problems where
 *     MiniMalloc found a plan <= 1.15 (not judged without MiniMalloc or
 *     when it found no plan);
 *   - every shape at 10^5 buffers in < 1 s, at 10^6 in < 10 s.
 *
 * usage: plan_bench [-q] [BENCH_DIR [EXAMPLES_DIR [MINIMALLOC]]]
 *        -q: skip the 10^6 sizes (a quick look; goals at 10^6 not judged)
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/graph.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>

#include "harness.h"
#include "random.h"
#include "shapes.h"

#define MM_TIMEOUT "30s"	/* per MiniMalloc run */
#define QUALITY_GOAL 1.15	/* geomean metadef / MiniMalloc */

static uint64_t rng;	/* the shapes' random state */

static struct bench harness;

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

/* ------------------------------------------------------------ peers */

struct placed {
	uint64_t off, end, lower, upper;
};

struct ord {
	uint64_t size, life;
	size_t idx;
};

/* Size descending, then longer lifetime, then index. */
static int by_size(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	if (x->life != y->life)
		return x->life < y->life ? 1 : -1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/*
 * The two peers share their skeleton: decreasing size, then a scan of the
 * placed buffers in offset order (kept sorted by insertion), skipping
 * those not alive together with the new one. @best 0: the first gap that
 * fits (TFLite), 1: the smallest free chunk that fits (XLA).
 */
static uint64_t peer_plan(const struct md_problem *p, int best, uint64_t *off)
{
	struct ord *o = malloc((p->n + 1) * sizeof(*o));
	struct placed *pl = malloc((p->n + 1) * sizeof(*pl));
	size_t i, j, np = 0;
	uint64_t peak = 0;

	if (!o || !pl) {
		free(o);
		free(pl);
		return 0;
	}
	for (i = 0; i < p->n; i++)
		o[i] = (struct ord){ p->bufs[i].size,
				     p->bufs[i].upper - p->bufs[i].lower, i };
	qsort(o, p->n, sizeof(*o), by_size);
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[o[i].idx];
		uint64_t cur = 0, pick = UINT64_MAX, pick_len = UINT64_MAX, a;
		struct placed x;

		for (j = 0; j < np; j++) {
			const struct placed *q = &pl[j];

			if (q->lower >= b->upper || b->lower >= q->upper)
				continue;
			a = round_up(cur, b->align);
			if (a + b->size <= q->off && q->off - cur < pick_len) {
				pick = a;
				pick_len = q->off - cur;
				if (!best)
					break;
			}
			if (q->end > cur)
				cur = q->end;
		}
		if (pick == UINT64_MAX)
			pick = round_up(cur, b->align);
		off[o[i].idx] = pick;
		if (pick + b->size > peak)
			peak = pick + b->size;
		x = (struct placed){ pick, pick + b->size, b->lower, b->upper };
		/* Insert in offset order. */
		for (j = np; j > 0 && pl[j - 1].off > x.off; j--)
			pl[j] = pl[j - 1];
		pl[j] = x;
		np++;
	}
	free(o);
	free(pl);
	return peak;
}

/*
 * MiniMalloc on @p (written as its CSV): first at the lower bound (an
 * optimum when it fits), else minimising from @cap. Its peak, 0 if it
 * found no plan in time; its wall time in *@secs.
 *
 * MiniMalloc knows no alignment. With one alignment A for all buffers it
 * is given the sizes rounded up to A: its offsets are then sums of those
 * sizes, so multiples of A, and every aligned plan of the problem is a
 * plan of the rounded one (the next aligned offset after a buffer is its
 * offset plus its rounded size), so nothing is lost. Its plan is checked
 * against the real sizes and its peak measured with them. With mixed
 * alignments it does not run (UINT64_MAX).
 */
static uint64_t minimalloc(const char *bin, const struct md_problem *p,
			   uint64_t lb, uint64_t cap, double *secs,
			   uint64_t *off)
{
	char in[] = "/tmp/plan_bench_inXXXXXX", out[64], cmd[1024];
	uint64_t peak = 0;
	int fd, pass;
	FILE *f;
	size_t i;

	struct md_problem r;
	uint64_t al = p->n ? p->bufs[0].align : 1;

	*secs = 0;
	for (i = 0; i < p->n; i++)
		if (p->bufs[i].align != al)
			return UINT64_MAX;
	r = *p;
	r.bufs = malloc((p->n + 1) * sizeof(*r.bufs));
	if (!r.bufs)
		return 0;
	for (i = 0; i < p->n; i++) {
		r.bufs[i] = p->bufs[i];
		r.bufs[i].size = round_up(p->bufs[i].size, al);
	}
	lb = md_problem_lower_bound(&r, NULL);
	cap = round_up(cap, al) > lb ? round_up(cap, al) : lb;
	fd = mkstemp(in);
	if (fd < 0) {
		free(r.bufs);
		return 0;
	}
	f = fdopen(fd, "w");
	fprintf(f, "id,lower,upper,size\n");
	for (i = 0; i < p->n; i++)
		fprintf(f, "%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", i,
			r.bufs[i].lower, r.bufs[i].upper, r.bufs[i].size);
	fclose(f);
	free(r.bufs);
	snprintf(out, sizeof(out), "%s.out", in);
	for (pass = 0; pass < 2 && !peak; pass++) {
		double t0 = bench_now();
		char line[256];
		int st;

		unlink(out);
		snprintf(cmd, sizeof(cmd),
			 "'%s' --capacity=%" PRIu64 " %s --timeout=%s --input=%s --output=%s >/dev/null 2>&1",
			 bin, pass ? cap : lb, pass ? "--minimize_capacity" : "",
			 MM_TIMEOUT, in, out);
		st = system(cmd);
		*secs += bench_now() - t0;
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
			continue;
		f = fopen(out, "r");
		if (!f)
			continue;
		/* id,lower,upper,size,offset; ids are our indices */
		memset(off, 0xff, p->n * sizeof(*off));
		while (fgets(line, sizeof(line), f)) {
			uint64_t id, lo, up, sz, of;

			if (sscanf(line, "%" SCNu64 ",%" SCNu64 ",%" SCNu64
				   ",%" SCNu64 ",%" SCNu64, &id, &lo, &up, &sz,
				   &of) != 5 || id >= p->n)
				continue;
			off[id] = of;
			if (of + p->bufs[id].size > peak)
				peak = of + p->bufs[id].size;
		}
		fclose(f);
		/* Its plan is checked like every other. */
		if (md_plan_validate(p, off, NULL))
			peak = 0;
	}
	unlink(out);
	unlink(in);
	return peak;
}

/* ------------------------------------------------------------ quality */

struct tally {
	int problems, lost_tflite, lost_xla, mm_found;
	double log_mm;		/* sum of log(metadef / minimalloc) */
};

/*
 * All planners on one problem, one table row. The peers' plans go through
 * md_plan_validate() too: a peer that cheats would flatter metadef.
 */
static int compare(const char *name, const struct md_problem *p,
		   const char *mm_bin, struct tally *t)
{
	uint64_t *off = malloc((p->n + 1) * sizeof(*off));
	uint64_t tf, xl, mm = 0, lb;
	double c0, tm, ttf, txl, tmm = 0;
	struct md_plan plan;
	int ret;

	if (!off)
		return 1;
	c0 = bench_cpu();
	ret = md_plan_solve(p, NULL, &plan);
	tm = bench_cpu() - c0;
	if (ret) {
		fprintf(stderr, "plan_bench: %s: %s\n", name, strerror(-ret));
		free(off);
		return 1;
	}
	lb = plan.lower_bound;
	c0 = bench_cpu();
	tf = peer_plan(p, 0, off);
	ttf = bench_cpu() - c0;
	ret = md_plan_validate(p, off, NULL);
	c0 = bench_cpu();
	xl = peer_plan(p, 1, off);
	txl = bench_cpu() - c0;
	ret |= md_plan_validate(p, off, NULL);
	if (ret) {
		fprintf(stderr, "plan_bench: %s: a peer's plan is invalid\n",
			name);
		md_plan_free(&plan);
		free(off);
		return 1;
	}
	if (mm_bin)
		mm = minimalloc(mm_bin, p, lb, plan.peak, &tmm, off);
	if (mm == UINT64_MAX) {
		mm = 0;
		mm_bin = NULL;	/* not comparable: "-" */
	}
	printf("%-18s %6zu %9" PRIu64 " %7.3f %7.3f %7.3f ", name, p->n, lb,
	       (double)plan.peak / lb, (double)tf / lb, (double)xl / lb);
	if (mm)
		printf("%7.3f", (double)mm / lb);
	else
		printf("%7s", mm_bin ? "none" : "-");
	printf(" %8.2f %8.2f %8.2f %8.1f%s\n", tm * 1e3, ttf * 1e3, txl * 1e3,
	       tmm, plan.peak > tf || plan.peak > xl ? "  << worse than a peer" :
	       "");
	t->problems++;
	t->lost_tflite += plan.peak > tf;
	t->lost_xla += plan.peak > xl;
	if (mm) {
		t->mm_found++;
		t->log_mm += log((double)plan.peak / mm);
	}
	md_plan_free(&plan);
	free(off);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of @dir ending in @ext, sorted; how many (at most @max). */
static size_t list_dir(const char *dir, const char *ext, char **names,
		       size_t max)
{
	size_t nn = 0, el = strlen(ext);
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)) && nn < max) {
		size_t l = strlen(de->d_name);

		if (l > el && !strcmp(de->d_name + l - el, ext))
			names[nn++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof(*names), cmp_str);
	return nn;
}

static int load_file(const char *path, int graph, struct md_problem *p,
		     struct md_graph_plan *gp)
{
	struct md_error err;
	struct md_graph *g;
	size_t len;
	char *text = md_read_file(path, &len);
	int ret;

	if (!text) {
		fprintf(stderr, "plan_bench: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (!graph) {
		md_problem_init(p);
		ret = md_problem_parse_csv(p, text, len, &err);
	} else {
		ret = md_graph_new(&g);
		if (!ret)
			ret = md_graph_parse(g, text, len, &err);
		if (!ret)
			ret = md_graph_lower(g, gp);
		if (!ret)
			*p = gp->problem;
		md_graph_free(g);
	}
	free(text);
	if (ret)
		fprintf(stderr, "plan_bench: %s:%u: %s\n", path, err.line,
			err.msg);
	return ret;
}

/* ------------------------------------------------------------ shapes */

static const char *const shape_name[SH_COUNT] = {
	"all alive", "chain", "random (graph-like)", "random (wide)",
	"parallel graph", "parallel, barrier/64",
};

/*
 * One shape at one size: CPU seconds of md_plan_solve() (graphs: of
 * md_graph_plan(), lowering included; parsing reported apart), -1 on error.
 */
static double time_shape(enum shape s, size_t n, double *ratio,
			 double *parse, const char **winner)
{
	struct md_graph_plan gp;
	struct md_problem p;
	struct md_plan plan;
	double c0, t;
	int ret;

	rng = 0x9e3779b97f4a7c15ULL ^ (s * 1000003u + n);
	*parse = 0;
	if (s == SH_PAR || s == SH_PAR64) {
		struct md_graph *g;
		struct md_error err;
		size_t len;
		char *text = parallel_graph(n, s == SH_PAR ? 0 : 64, &rng, &len);

		if (!text || md_graph_new(&g))
			return -1;
		c0 = bench_cpu();
		ret = md_graph_parse(g, text, len, &err);
		*parse = bench_cpu() - c0;
		free(text);
		c0 = bench_cpu();
		if (!ret)
			ret = md_graph_plan(g, NULL, &gp);
		t = bench_cpu() - c0;
		md_graph_free(g);
		if (ret)
			return -1;
		*ratio = (double)gp.plan.peak / gp.plan.lower_bound;
		*winner = md_strategy_name(gp.plan.strategy);
		md_graph_plan_free(&gp);
		return t;
	}
	if (shape_problem(s, n, &rng, &p))
		return -1;
	c0 = bench_cpu();
	ret = md_plan_solve(&p, NULL, &plan);
	t = bench_cpu() - c0;
	md_problem_free(&p);
	if (ret)
		return -1;
	*ratio = (double)plan.peak / plan.lower_bound;
	*winner = md_strategy_name(plan.strategy);
	md_plan_free(&plan);
	return t;
}

static void scale_table(int quick)
{
	static const size_t sizes[] = { 100000, 1000000 };
	static const double goal[] = { 1.0, 10.0 };
	static const char *const size_name[] = { "10^5", "10^6" };
	char kase[64];
	size_t k;
	int i;

	printf("\nscale: md_plan_solve() with default options, CPU seconds (goal: 10^5 < 1 s, 10^6 < 10 s)\n\n");
	printf("%-22s %8s %9s %9s %10s  %s\n", "shape", "buffers", "seconds",
	       "parse", "peak/lb", "winner");
	for (i = 0; i < SH_COUNT; i++) {
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			const char *winner = "?";
			double r = 0, parse, t;

			snprintf(kase, sizeof(kase), "scale: %s, %s buffers",
				 shape_name[i], size_name[k]);
			if (quick && k) {
				bench_not_judged(&harness, "plan", kase,
						 "CPU seconds", "-", BENCH_LT,
						 goal[k], "not run (-q)");
				continue;
			}
			t = time_shape(i, sizes[k], &r, &parse, &winner);
			if (t < 0) {
				printf("%-22s %8zu  error\n", shape_name[i],
				       sizes[k]);
				/* Metadef failed to plan: a miss. */
				bench_goal(&harness, "plan", kase,
					   "CPU seconds", "-", INFINITY,
					   BENCH_LT, goal[k]);
				continue;
			}
			printf("%-22s %8zu %9.3f %9.3f %10.4f  %s%s\n",
			       shape_name[i], sizes[k], t, parse, r, winner,
			       t < goal[k] ? "" : "  << goal missed");
			fflush(stdout);
			bench_goal(&harness, "plan", kase, "CPU seconds", "-",
				   t, BENCH_LT, goal[k]);
		}
	}
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	const char *dir = "../shared/bench/minimalloc-challenging";
	const char *ex = "tools/plan/examples";
	const char *mm = "../shared/peers/minimalloc/bin/minimalloc";
	struct tally t = { 0 };
	char *names[64], name[64];
	int quick = 0, fail = 0, arg = 1, i;
	size_t nn, k;
	double gm = 0;

	if (argc > 1 && !strcmp(argv[1], "-q")) {
		quick = 1;
		arg++;
	}
	if (argc > arg)
		dir = argv[arg];
	if (argc > arg + 1)
		ex = argv[arg + 1];
	if (argc > arg + 2)
		mm = argv[arg + 2];
	if (access(mm, X_OK)) {
		printf("(MiniMalloc not found at %s: its column is left out, "
		       "its goal not judged)\n", mm);
		mm = NULL;
	}
	if (bench_open(&harness, "plan", NULL))
		return 2;
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);

	printf("plan benchmark: peak / lower bound (max live bytes) per planner, same run;\n"
	       "times: CPU ms of each heuristic, wall s of MiniMalloc (limit %s per run)\n\n",
	       MM_TIMEOUT);
	printf("%-18s %6s %9s %7s %7s %7s %7s %8s %8s %8s %8s\n", "problem",
	       "bufs", "lower", "metadef", "tflite", "xla", "mmalloc", "ms",
	       "tflt ms", "xla ms", "mm s");
	nn = list_dir(dir, ".csv", names, 64);
	if (!nn)
		printf("SKIP %s: no MiniMalloc files\n", dir);
	for (k = 0; k < nn; k++) {
		char path[4096];
		struct md_problem p;

		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		if (!load_file(path, 0, &p, NULL)) {
			fail |= compare(names[k], &p, mm, &t);
			md_problem_free(&p);
		} else {
			fail = 1;
		}
		free(names[k]);
	}
	/* Seeded random families, 3 problems each. */
	for (i = 0; i < 9; i++) {
		enum shape s = i / 3 == 0 ? SH_RANDOM : i / 3 == 1 ? SH_WIDE :
			       SH_CHAIN;
		size_t n = i / 3 == 1 ? 300 : 1000;
		struct md_problem p;

		rng = 0x853c49e6748fea9bULL + 7919 * i;
		if (shape_problem(s, n, &rng, &p))
			return 1;
		snprintf(name, sizeof(name), "%s-%d",
			 s == SH_RANDOM ? "rand-graph" : s == SH_WIDE ?
			 "rand-wide" : "rand-chain", i % 3);
		fail |= compare(name, &p, mm, &t);
		md_problem_free(&p);
	}
	nn = list_dir(ex, ".graph", names, 64);
	for (k = 0; k < nn; k++) {
		char path[4096];
		struct md_graph_plan gp;
		struct md_problem p;

		snprintf(path, sizeof(path), "%s/%s", ex, names[k]);
		if (!load_file(path, 1, &p, &gp)) {
			fail |= compare(names[k], &p, mm, &t);
			md_graph_plan_free(&gp);
		} else {
			fail = 1;
		}
		free(names[k]);
	}
	if (t.mm_found)
		gm = exp(t.log_mm / t.mm_found);
	printf("\n%d problems: metadef worse than tflite on %d, than xla on %d (goal: 0 and 0)\n",
	       t.problems, t.lost_tflite, t.lost_xla);
	if (mm)
		printf("MiniMalloc found a plan for %d; geometric mean metadef / MiniMalloc %.3f (goal <= %.2f)\n",
		       t.mm_found, gm, QUALITY_GOAL);
	if (fail)
		printf("plan_bench: a problem could not be loaded or planned "
		       "(above): the quality goals are not judged\n");
	snprintf(name, sizeof(name), "quality: %d problems", t.problems);
	if (fail) {
		bench_not_judged(&harness, "plan", name, "problems worse than peer",
				 "TFLite greedy by size", BENCH_LE, 0,
				 "a problem failed");
		bench_not_judged(&harness, "plan", name, "problems worse than peer",
				 "XLA best-fit heap", BENCH_LE, 0,
				 "a problem failed");
	} else {
		bench_goal(&harness, "plan", name, "problems worse than peer",
			   "TFLite greedy by size", t.lost_tflite, BENCH_LE, 0);
		bench_goal(&harness, "plan", name, "problems worse than peer",
			   "XLA best-fit heap", t.lost_xla, BENCH_LE, 0);
	}
	if (!mm)
		bench_not_judged(&harness, "plan", name,
				 "geomean peak / peer's", "MiniMalloc",
				 BENCH_LE, QUALITY_GOAL, "MiniMalloc not found");
	else if (!t.mm_found)
		bench_not_judged(&harness, "plan", name,
				 "geomean peak / peer's", "MiniMalloc",
				 BENCH_LE, QUALITY_GOAL,
				 "MiniMalloc found no plan");
	else
		bench_goal(&harness, "plan", name, "geomean peak / peer's",
			   "MiniMalloc", gm, BENCH_LE, QUALITY_GOAL);
	scale_table(quick);
	return bench_exit(&harness);
}
