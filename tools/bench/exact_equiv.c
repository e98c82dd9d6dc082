// SPDX-License-Identifier: GPL-2.0
/*
 * exact_equiv: a fingerprint of md_exact_solve() over a fixed set of
 * problems, to show that a change to lib/exact*.c (a refactor) leaves
 * every answer and every search exactly as it was.
 *
 * usage: exact_equiv [-v] [-q]
 *
 * Every run is deterministic: no time limits, node budgets instead
 * (md_exact_opts.max_nodes), no progress callback. Each result is hashed:
 * the return value, status, proven, heuristic, stopped, peak, lower
 * bound, node count and every offset. The problems:
 *
 *  - combos: a few small random problems (4-8 buffers, alignment, fixed
 *    and empty buffers, as in selftests/lib/exact_test.c) under every one
 *    of the 512 combinations of enum md_exact_prune, in minimize mode and
 *    in exact mode at the optimum and one below it;
 *  - small: random problems of 1-12 buffers, both modes;
 *  - medium: random problems of 20-80 buffers, minimize mode and exact
 *    mode at the lower bound, with node budgets, default prunings and
 *    each pruning off alone;
 *  - packing: perfect packings of tools/bench/cutgen.c (150-500 buffers,
 *    the three families, 0-6 % holes, as make bench-exact makes them), in
 *    exact mode at 2^20 and in minimize mode, with node budgets, default
 *    prunings and each pruning off alone on some of them.
 *
 * It prints, for each set, the number of runs, the status counts, the
 * nodes searched and the set's hash, then the fingerprint of all runs.
 * -v also prints one line per run (to diff two builds); -q only the
 * fingerprint line. Exit status 0, or 1 when a call failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/exact.h>
#include <metadef/metadef.h>

#include "cutgen.h"
#include "harness.h"
#include "random.h"

#define CAP		(1ull << 20)
#define MAX_BUFS	512

static int verbose, quiet;

struct tally {
	const char *name;
	uint64_t hash;
	uint64_t runs;
	uint64_t nodes;
	uint64_t status[4];
	uint64_t errors;
};

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void feed(uint64_t *h, uint64_t v)
{
	*h = mix64(*h ^ v) * 0x100000001b3ULL;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	return md_xorshift64(&rng);
}

/*
 * One call, hashed into @t. @what names the problem in -v lines.
 * Return: the result's peak (0 on an error).
 */
static uint64_t run(struct tally *t, const char *what,
		    const struct md_problem *p, int minimize, uint64_t cap,
		    unsigned int disable, uint64_t max_nodes,
		    unsigned int memo_mib)
{
	struct md_exact_opts o = { 0 };
	struct md_exact_result r;
	uint64_t h = 0xcbf29ce484222325ULL, peak;
	size_t i;
	int ret;

	o.minimize = minimize;
	o.capacity = cap;
	o.disable = disable;
	o.max_nodes = max_nodes;
	o.memo_mib = memo_mib;
	ret = md_exact_solve(p, &o, &r);
	feed(&h, (uint64_t)(int64_t)ret);
	t->runs++;
	if (ret) {
		t->errors++;
		fprintf(stderr, "exact_equiv: %s: md_exact_solve() = %d\n",
			what, ret);
		feed(&t->hash, h);
		return 0;
	}
	feed(&h, (uint64_t)r.status);
	feed(&h, (uint64_t)r.proven);
	feed(&h, (uint64_t)r.heuristic);
	feed(&h, (uint64_t)r.stopped);
	feed(&h, r.peak);
	feed(&h, r.lower_bound);
	feed(&h, r.capacity);
	feed(&h, r.nodes);
	feed(&h, r.n);
	for (i = 0; i < r.n; i++)
		feed(&h, r.offsets[i]);
	if (md_plan_validate(p, r.offsets, NULL)) {
		t->errors++;
		fprintf(stderr, "exact_equiv: %s: invalid plan\n", what);
	}
	if (r.status >= 0 && r.status < 4)
		t->status[r.status]++;
	t->nodes += r.nodes;
	feed(&t->hash, h);
	if (verbose)
		printf("%s %s cap %" PRIu64 " disable %03x max_nodes %" PRIu64
		       ": %s proven %d heur %d stopped %d peak %" PRIu64
		       " lb %" PRIu64 " nodes %" PRIu64 " hash %016" PRIx64 "\n",
		       t->name, what, minimize ? 0 : cap, disable, max_nodes,
		       md_exact_status_name(r.status), r.proven, r.heuristic,
		       r.stopped, r.peak, r.lower_bound, r.nodes, h);
	peak = r.peak;
	md_exact_result_free(&r);
	return peak;
}

/* As random_small() of selftests/lib/exact_test.c. */
static void random_small(struct md_problem *p, size_t n, int aligned,
			 int fixed)
{
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = rnd() % 10, life = 1 + rnd() % 7;
		uint64_t size = rnd() % 8 ? 1 + rnd() % 12 : 0;
		uint64_t align = aligned ? 1 + rnd() % 4 : 1;

		md_problem_add(p, NULL, lo, lo + life, size, align);
	}
	if (fixed && n) {
		struct md_buffer *b = &p->bufs[rnd() % n];

		b->flags |= MD_BUF_FIXED;
		b->offset = (rnd() % 12) / b->align * b->align;
		p->has_offset = 1;
	}
}

/* Random lifetimes over [0, 100), sizes up to 1000, some aligned. */
static void random_medium(struct md_problem *p, size_t n)
{
	int aligned = rnd() % 3 == 0;
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = rnd() % 100, life = 1 + rnd() % 30;
		uint64_t size = 1 + rnd() % (rnd() % 4 ? 1000 : 100);
		uint64_t align = aligned ? 1ull << (rnd() % 5) : 1;

		md_problem_add(p, NULL, lo, lo + life, size, align);
	}
	if (rnd() % 5 == 0) {
		struct md_buffer *b = &p->bufs[rnd() % n];

		b->flags |= MD_BUF_FIXED;
		b->offset = (rnd() % 2000) / b->align * b->align;
		p->has_offset = 1;
	}
}

/* The problem exact_bench makes from @seed. */
static int packing(struct md_problem *p, uint64_t seed)
{
	static const unsigned int holes[] = { 0, 2, 4, 6 };
	static struct cutgen_buf b[MAX_BUFS];
	struct cutgen_opts o = { 0 };
	size_t n, i;

	o.seed = seed;
	o.n = 150 + (size_t)((seed * 2654435761u) % 351);
	o.family = (enum cutgen_family)(seed % CUTGEN_NFAMILIES);
	o.holes_pct = holes[(seed / CUTGEN_NFAMILIES) % 4];
	n = cutgen(&o, b);
	if (!n)
		return -1;
	md_problem_init(p);
	for (i = 0; i < n; i++)
		if (md_problem_add(p, NULL, b[i].lower, b[i].upper, b[i].size,
				   0))
			return -1;
	return 0;
}

static void print(const struct tally *t)
{
	if (quiet)
		return;
	printf("%-8s runs %6" PRIu64 "  feasible %5" PRIu64
	       " infeasible %5" PRIu64 " optimal %5" PRIu64 " limit %5" PRIu64
	       "  nodes %11" PRIu64 "  hash %016" PRIx64 "\n",
	       t->name, t->runs, t->status[MD_EXACT_FEASIBLE],
	       t->status[MD_EXACT_INFEASIBLE], t->status[MD_EXACT_OPTIMAL],
	       t->status[MD_EXACT_LIMIT], t->nodes, t->hash);
	fflush(stdout);
}

static void combos(struct tally *t)
{
	struct md_problem p;
	unsigned int d;
	char what[64];
	int k;

	for (k = 0; k < 4; k++) {
		uint64_t opt;

		random_small(&p, 5 + k, k % 2, k == 3);
		snprintf(what, sizeof(what), "problem %d", k);
		opt = run(t, what, &p, 1, 0, 0, 0, 1);
		for (d = 0; d <= MD_EXACT_PRUNE_ALL; d++) {
			run(t, what, &p, 1, 0, d, 0, 1);
			run(t, what, &p, 0, opt, d, 0, 1);
			if (opt)
				run(t, what, &p, 0, opt - 1, d, 0, 1);
		}
		md_problem_free(&p);
	}
}

static void small(struct tally *t)
{
	struct md_problem p;
	char what[64];
	int k;

	for (k = 0; k < 1500; k++) {
		size_t n = 1 + rnd() % 12;
		uint64_t opt;

		random_small(&p, n, k % 3 == 1, k % 4 == 3);
		snprintf(what, sizeof(what), "problem %d", k);
		opt = run(t, what, &p, 1, 0, 0, 200000, 1);
		if (opt)
			run(t, what, &p, 0, opt - 1, 0, 200000, 1);
		md_problem_free(&p);
	}
}

static void medium(struct tally *t)
{
	struct md_problem p;
	char what[64];
	unsigned int b;
	int k;

	for (k = 0; k < 300; k++) {
		size_t n = 20 + rnd() % 61;
		uint64_t lb;

		random_medium(&p, n);
		lb = md_problem_lower_bound(&p, NULL);
		snprintf(what, sizeof(what), "problem %d", k);
		run(t, what, &p, 1, 0, 0, 20000, 1);
		run(t, what, &p, 0, lb, 0, 20000, 1);
		if (k % 10 == 0)
			for (b = 0; b < 9; b++) {
				run(t, what, &p, 1, 0, 1u << b, 5000, 1);
				run(t, what, &p, 0, lb, 1u << b, 5000, 1);
			}
		md_problem_free(&p);
	}
}

static int pack(struct tally *t)
{
	struct md_problem p;
	char what[64];
	unsigned int b;
	uint64_t seed;

	for (seed = 1; seed <= 60; seed++) {
		if (packing(&p, seed)) {
			fprintf(stderr, "exact_equiv: cutgen seed %" PRIu64
				" failed\n", seed);
			return -1;
		}
		snprintf(what, sizeof(what), "seed %" PRIu64, seed);
		run(t, what, &p, 0, CAP, 0, 200000, 0);
		run(t, what, &p, 1, 0, 0, 50000, 0);
		if (seed % 6 == 0)
			for (b = 0; b < 9; b++)
				run(t, what, &p, 0, CAP, 1u << b, 30000, 0);
		md_problem_free(&p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tally sets[4] = {
		{ .name = "combos" }, { .name = "small" },
		{ .name = "medium" }, { .name = "packing" },
	};
	uint64_t fp = 0xcbf29ce484222325ULL, runs = 0, errors = 0;
	double t0;
	int c, i;

	while ((c = getopt(argc, argv, "vq")) != -1) {
		switch (c) {
		case 'v':
			verbose = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			fprintf(stderr, "usage: exact_equiv [-v] [-q]\n");
			return 2;
		}
	}
	t0 = bench_now();
	combos(&sets[0]);
	print(&sets[0]);
	small(&sets[1]);
	print(&sets[1]);
	medium(&sets[2]);
	print(&sets[2]);
	if (pack(&sets[3]))
		return 1;
	print(&sets[3]);
	for (i = 0; i < 4; i++) {
		feed(&fp, sets[i].hash);
		runs += sets[i].runs;
		errors += sets[i].errors;
	}
	printf("fingerprint %016" PRIx64 " runs %" PRIu64 " errors %" PRIu64
	       "\n", fp, runs, errors);
	fprintf(stderr, "exact_equiv: %.1f s\n", bench_now() - t0);
	return errors ? 1 : 0;
}
