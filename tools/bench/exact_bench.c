// SPDX-License-Identifier: GPL-2.0
/*
 * exact_bench: the exact planner (md_exact_solve) on the MiniMalloc
 * "challenging" problems at their known capacities, and on a family of
 * random problems to show how it scales.
 *
 * usage: exact_bench [DIR] [TIME_LIMIT]
 *        (default: ../shared/bench/minimalloc-challenging beside the
 *         repository, 60 s per problem)
 *
 * The named peer is MiniMalloc (google/minimalloc, ASPLOS '23), the best
 * published exact solver for these problems. It is not installed on this
 * machine: its figures are the ones in shared/bench/README.md, measured on
 * a 2-core machine of this kind, and are the only peer figures available
 * here. Our times are wall clock for the whole call (heuristics, set-up
 * and search), the median of RUNS runs when a run takes under a second.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metadef/exact.h>
#include <metadef/metadef.h>

#define RUNS 3

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Solve, timed; the median of RUNS when quick. */
static int timed(const struct md_problem *p, const struct md_exact_opts *o,
		 struct md_exact_result *r, double *secs)
{
	double t[RUNS];
	int i, ret, runs = 1;

	for (i = 0; i < RUNS; i++) {
		double t0 = now();

		if (i)
			md_exact_result_free(r);
		ret = md_exact_solve(p, o, r);
		t[i] = now() - t0;
		if (ret)
			return ret;
		runs = i + 1;
		if (t[i] > 1.0)
			break;
	}
	qsort(t, runs, sizeof(t[0]), cmp_double);
	*secs = t[runs / 2];
	return 0;
}

static const struct {
	const char *file;
	uint64_t cap;
	double peer;	/* MiniMalloc, seconds; 0: no figure */
} cases[] = {
	{ "A.1048576.csv", 1048576, 11.8 },
	{ "C.1048576.csv", 1048576, 1.4 },
	{ "G.1048576.csv", 1048576, 2.7 },
	{ "K.1048576.csv", 1048576, 1.2 },
	{ "C.1048576.csv", 1039360, 0 },
};

static int challenging(const char *dir, double limit)
{
	double ours = 0, peer = 0, all = 0;
	int solved = 0, comparable = 0, bad = 0;
	size_t i;

	printf("exact planner on MiniMalloc's challenging problems (time limit %.0f s each)\n",
	       limit);
	printf("peer: MiniMalloc (google/minimalloc), times from shared/bench/README.md\n"
	       "(2-core machine of this kind; MiniMalloc is not installed here, so these\n"
	       "are the only peer figures available on this machine)\n\n");
	printf("%-14s %7s %9s %-9s %9s %9s %10s %12s %7s\n", "problem",
	       "buffers", "capacity", "solved", "peak", "time s", "nodes",
	       "MiniMalloc s", "ratio");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[4096];
		struct md_problem p;
		struct md_exact_opts o = { 0 };
		struct md_exact_result r;
		struct md_error err;
		size_t len;
		double t;
		char *s;
		int ok;

		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].file);
		s = md_read_file(path, &len);
		if (!s) {
			printf("%-14s missing (%s)\n", cases[i].file, path);
			bad = 1;
			continue;
		}
		md_problem_init(&p);
		if (md_problem_parse_csv(&p, s, len, &err)) {
			printf("%s:%u: %s\n", path, err.line, err.msg);
			free(s);
			return 1;
		}
		free(s);
		o.capacity = cases[i].cap;
		o.time_limit = limit;
		if (timed(&p, &o, &r, &t)) {
			printf("%-14s error\n", cases[i].file);
			md_problem_free(&p);
			return 1;
		}
		ok = r.status == MD_EXACT_FEASIBLE && r.peak <= cases[i].cap &&
		     !md_plan_validate(&p, r.offsets, NULL);
		solved += ok;
		bad |= !ok;
		all += t;
		printf("%-14s %7zu %9" PRIu64 " %-9s %9" PRIu64 " %9.3f %10" PRIu64,
		       cases[i].file, p.n, cases[i].cap,
		       ok ? "yes" : md_exact_status_name(r.status), r.peak, t,
		       r.nodes);
		if (cases[i].peer > 0) {
			printf(" %12.1f %7.3f\n", cases[i].peer,
			       t / cases[i].peer);
			ours += t;
			peer += cases[i].peer;
			comparable++;
		} else {
			printf(" %12s %7s\n", "-", "-");
		}
		md_exact_result_free(&r);
		md_problem_free(&p);
	}
	printf("\nsolved %d of %zu; A+C+G+K at 1048576: ours %.3f s, MiniMalloc %.1f s, ratio %.3f (goal <= 0.5)\n",
	       solved, sizeof(cases) / sizeof(cases[0]), ours, peer,
	       peer > 0 ? ours / peer : 0);
	printf("all five runs: %.3f s\n\n", all);
	(void)comparable;
	return bad;
}

/* ------------------------------------------------------------ random */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * n buffers over n / 2 time steps, lifetimes up to n / 4 steps: dense
 * enough that the heuristics rarely reach the lower bound. Sizes are
 * multiples of 1 KiB up to 64 KiB.
 */
static void random_problem(struct md_problem *p, size_t n, uint64_t seed)
{
	size_t i;

	rng = seed;
	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = rnd() % (n / 2);
		uint64_t life = 1 + rnd() % (n / 4);

		md_problem_add(p, NULL, lo, lo + life,
			       1024 * (1 + rnd() % 64), 0);
	}
}

static void random_family(double limit)
{
	static const size_t sizes[] = { 20, 40, 80, 160, 320, 640 };
	size_t i;

	printf("random problems, minimize mode (time limit %.0f s each, seed 1..3)\n\n",
	       limit);
	printf("%7s %5s %10s %10s %10s %-9s %9s %10s\n", "buffers", "seed",
	       "lower bnd", "heuristic", "exact", "status", "time s",
	       "nodes");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t seed;

		for (seed = 1; seed <= 3; seed++) {
			struct md_problem p;
			struct md_exact_opts o = { 0 };
			struct md_exact_result r;
			struct md_plan h;
			double t0, t;

			random_problem(&p, sizes[i], seed * 0x9e3779b97f4a7c15ULL);
			if (md_plan_solve(&p, NULL, &h)) {
				md_problem_free(&p);
				continue;
			}
			o.minimize = 1;
			o.time_limit = limit;
			t0 = now();
			if (md_exact_solve(&p, &o, &r)) {
				md_plan_free(&h);
				md_problem_free(&p);
				continue;
			}
			t = now() - t0;
			printf("%7zu %5" PRIu64 " %10" PRIu64 " %10" PRIu64
			       " %10" PRIu64 " %-9s %9.3f %10" PRIu64 "\n",
			       sizes[i], seed, r.lower_bound, h.peak, r.peak,
			       md_exact_status_name(r.status), t, r.nodes);
			md_exact_result_free(&r);
			md_plan_free(&h);
			md_problem_free(&p);
		}
	}
	printf("\n(status optimal: the peak is proven minimal; limit: the time limit\n"
	       "ended the search with the lower bound and best peak shown)\n");
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1]
				   : "../shared/bench/minimalloc-challenging";
	double limit = argc > 2 ? atof(argv[2]) : 60;
	int bad;

	if (limit <= 0)
		limit = 60;
	bad = challenging(dir, limit);
	random_family(limit < 10 ? limit : 10);
	return bad;
}
