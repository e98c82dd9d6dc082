// SPDX-License-Identifier: GPL-2.0
/*
 * plan_bench: the offset planner on the MiniMalloc "challenging" problems
 * and on 10^5 random buffers, against the named peer measured in the same
 * run: greedy "largest first, first fit" (MD_STRAT_SIZE_FIRST alone).
 *
 * usage: plan_bench [DIR]   (default: ../shared/bench/minimalloc-challenging
 *                            beside the repository)
 *
 * Times are wall clock, best of RUNS runs (the machine may be busy), with
 * malloc keeping freed memory between runs as a long-lived process would
 * (first-touch page faults are expensive in this VM and are not planning).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metadef/metadef.h>
#include <metadef/plan.h>

#define RUNS 5

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best of RUNS: the machine may be busy. */
static int timed_solve(const struct md_problem *p,
		       const struct md_plan_opts *o, struct md_plan *plan,
		       double *ms)
{
	double best = 1e99;
	int i, ret = 0;

	for (i = 0; i < RUNS; i++) {
		double t0 = now(), t;

		if (i)
			md_plan_free(plan);
		ret = md_plan_solve(p, o, plan);
		t = (now() - t0) * 1e3;
		if (ret)
			return ret;
		if (t < best)
			best = t;
	}
	*ms = best;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int bench_file(const char *dir, const char *name, double *worst)
{
	struct md_plan_opts greedy = { MD_STRAT_SIZE_FIRST, 0, 0 };
	struct md_plan plan, base;
	struct md_problem p;
	struct md_error err;
	char path[4096];
	double ms, gms, r, gr;
	size_t len;
	char *text;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = md_read_file(path, &len);
	if (!text) {
		fprintf(stderr, "plan_bench: %s: %s\n", path, strerror(errno));
		return 1;
	}
	md_problem_init(&p);
	ret = md_problem_parse_csv(&p, text, len, &err);
	free(text);
	if (ret) {
		fprintf(stderr, "plan_bench: %s:%u: %s\n", path, err.line,
			err.msg);
		return 1;
	}
	ret = timed_solve(&p, &greedy, &base, &gms);
	if (!ret)
		ret = timed_solve(&p, NULL, &plan, &ms);
	if (ret) {
		fprintf(stderr, "plan_bench: %s: %s\n", name, strerror(-ret));
		md_problem_free(&p);
		return 1;
	}
	r = (double)plan.peak / (double)plan.lower_bound;
	gr = (double)base.peak / (double)base.lower_bound;
	if (r > *worst)
		*worst = r;
	printf("%-16s %6zu %10" PRIu64 " %10" PRIu64 " %+6.1f%% %7.2f %10"
	       PRIu64 " %+6.1f%% %7.2f  %s%s\n",
	       name, p.n, plan.lower_bound, base.peak, (gr - 1) * 100, gms,
	       plan.peak, (r - 1) * 100, ms, md_strategy_name(plan.strategy),
	       plan.improved ? "+improve" : "");
	md_plan_free(&plan);
	md_plan_free(&base);
	md_problem_free(&p);
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * A graph-like random workload: buffers are produced in order (two per
 * step), most die within 1-8 steps, one in a hundred lives up to 1000
 * steps (activations kept for later); sizes 1..64 times 2^0..2^14 bytes,
 * 64-byte aligned. About 19 buffers are alive at a time, a few dozen at
 * most; the long-lived ones overlap thousands of others.
 */
static void random_problem(struct md_problem *p, size_t n)
{
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = i / 2, life, size;

		if (rnd() % 100 == 0)
			life = 1 + rnd() % 1000;
		else
			life = 1 + rnd() % 8;
		size = (1 + rnd() % 64) << (rnd() % 15);
		md_problem_add(p, NULL, lo, lo + life, size, 64);
	}
}

/* Buffers alive at a start, on average, and at most. */
static void live_stats(const struct md_problem *p, double *avg, size_t *max)
{
	size_t i, j, live, sum = 0;

	*max = 0;
	/* Buffers are generated in start order, two per step, and live at
	 * most 1000 steps: only the last 2002 can still be alive. */
	for (i = 0; i < p->n; i++) {
		live = 0;
		for (j = i > 2002 ? i - 2002 : 0; j <= i; j++)
			live += p->bufs[j].upper > p->bufs[i].lower;
		sum += live;
		if (live > *max)
			*max = live;
	}
	*avg = p->n ? (double)sum / p->n : 0;
}

static int bench_random(size_t n)
{
	struct md_plan_opts greedy = { MD_STRAT_SIZE_FIRST, 0, 0 };
	struct md_plan plan, base;
	struct md_problem p;
	double ms, gms;
	int ret;

	double avg;
	size_t max;

	random_problem(&p, n);
	live_stats(&p, &avg, &max);
	ret = timed_solve(&p, &greedy, &base, &gms);
	if (!ret)
		ret = timed_solve(&p, NULL, &plan, &ms);
	if (ret) {
		fprintf(stderr, "plan_bench: random: %s\n", strerror(-ret));
		md_problem_free(&p);
		return 1;
	}
	printf("%-16s %6zu %10" PRIu64 " %10" PRIu64 " %+6.1f%% %7.2f %10"
	       PRIu64 " %+6.1f%% %7.2f  %s%s\n",
	       "random-100000", p.n, plan.lower_bound, base.peak,
	       ((double)base.peak / plan.lower_bound - 1) * 100, gms,
	       plan.peak, ((double)plan.peak / plan.lower_bound - 1) * 100, ms,
	       md_strategy_name(plan.strategy),
	       plan.improved ? "+improve" : "");
	printf("  (random: %.1f buffers alive on average, %zu at most; strategies run: %d of %d)\n",
	       avg, max, __builtin_popcount(plan.ran), MD_STRAT_COUNT);
	md_plan_free(&plan);
	md_plan_free(&base);
	md_problem_free(&p);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] :
		"../shared/bench/minimalloc-challenging";
	char *names[64];
	size_t nn = 0, i;
	double worst = 0;
	struct dirent *de;
	DIR *d;
	int fail = 0;

	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	printf("plan benchmark: peer = greedy largest-first first-fit, same run; times are best of %d\n\n",
	       RUNS);
	printf("%-16s %6s %10s %10s %7s %7s %10s %7s %7s  %s\n", "file",
	       "bufs", "lower", "greedy", "over", "ms", "metadef", "over",
	       "ms", "winner");
	d = opendir(dir);
	if (!d) {
		printf("SKIP %s: %s\n", dir, strerror(errno));
	} else {
		while ((de = readdir(d)) && nn < 64) {
			size_t l = strlen(de->d_name);

			if (l > 4 && !strcmp(de->d_name + l - 4, ".csv"))
				names[nn++] = strdup(de->d_name);
		}
		closedir(d);
		qsort(names, nn, sizeof(*names), cmp_str);
		for (i = 0; i < nn; i++) {
			fail |= bench_file(dir, names[i], &worst);
			free(names[i]);
		}
	}
	fail |= bench_random(100000);
	if (nn)
		printf("\nworst metadef peak/lower bound on the files: %.3f (goal <= 1.25)\n",
		       worst);
	return fail;
}
