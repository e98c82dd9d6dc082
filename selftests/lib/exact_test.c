// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the exact planner. Tiny problems with a known optimum,
 * a brute-force cross-check on random problems of up to 8 buffers (with
 * alignment, fixed offsets and empty buffers), infeasibility proofs, the
 * time limit and the cancel flag, progress reports, and the MiniMalloc
 * benchmark files when they sit beside the repository. Every plan is
 * validated.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/exact.h>
#include "bench_files.h"

#include "test_util.h"
#include "kselftest_harness.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

static int solve(const struct md_problem *p, int minimize, uint64_t cap,
		 double limit, struct md_exact_result *r)
{
	struct md_exact_opts o = { 0 };

	o.capacity = cap;
	o.minimize = minimize;
	o.time_limit = limit;
	o.memo_mib = 1;
	return md_exact_solve(p, &o, r);
}

/* ------------------------------------------------------- brute force */

/*
 * An independent optimum: try every order of the free buffers; each one
 * goes at the lowest aligned offset clear of the buffers before it and of
 * the fixed ones (holes allowed). Some order gives every optimal plan whose
 * buffers cannot move down, so the minimum over all orders is the optimum.
 */
struct bf {
	const struct md_problem *p;
	uint64_t off[16];
	int placed[16];
	uint64_t best;
};

static int bf_clear(const struct bf *b, size_t x, uint64_t o)
{
	const struct md_buffer *a = &b->p->bufs[x];
	size_t k;

	for (k = 0; k < b->p->n; k++) {
		const struct md_buffer *c = &b->p->bufs[k];

		if (!b->placed[k] || k == x || !c->size)
			continue;
		if (c->lower < a->upper && a->lower < c->upper &&
		    b->off[k] < o + a->size && o < b->off[k] + c->size)
			return 0;
	}
	return 1;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void bf_rec(struct bf *b, size_t left, uint64_t peak)
{
	size_t x, k;

	if (peak >= b->best)
		return;
	if (!left) {
		b->best = peak;
		return;
	}
	for (x = 0; x < b->p->n; x++) {
		const struct md_buffer *a = &b->p->bufs[x];
		uint64_t o = UINT64_MAX, t;

		if (b->placed[x])
			continue;
		/* the lowest clear offset is 0 or just above some buffer */
		if (bf_clear(b, x, 0))
			o = 0;
		for (k = 0; k < b->p->n; k++) {
			if (!b->placed[k] || k == x)
				continue;
			t = round_up(b->off[k] + b->p->bufs[k].size, a->align);
			if (t < o && bf_clear(b, x, t))
				o = t;
		}
		b->placed[x] = 1;
		b->off[x] = o;
		bf_rec(b, left - 1, o + a->size > peak ? o + a->size : peak);
		b->placed[x] = 0;
	}
}

static uint64_t brute_force(const struct md_problem *p)
{
	struct bf b;
	uint64_t peak = 0;
	size_t i, left = 0;

	memset(&b, 0, sizeof(b));
	b.p = p;
	b.best = UINT64_MAX;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *a = &p->bufs[i];

		if (a->flags & MD_BUF_FIXED) {
			b.placed[i] = 1;
			b.off[i] = a->offset;
			if (a->size && a->offset + a->size > peak)
				peak = a->offset + a->size;
		} else if (!a->size) {
			b.placed[i] = 1;
		} else {
			left++;
		}
	}
	bf_rec(&b, left, peak);
	return b.best;
}

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

TEST(brute_force_cross_check)
{
	int round, checked = 0;

	for (round = 0; round < 240; round++) {
		struct md_problem p;
		struct md_exact_result r;
		uint64_t opt;
		size_t n = 1 + rnd() % 8;

		random_small(&p, n, round % 3 == 1, round % 4 == 3);
		opt = brute_force(&p);

		ASSERT_EQ(0, solve(&p, 1, 0, 20, &r));
		ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
		EXPECT_EQ(opt, r.peak) TH_LOG("round %d: %zu buffers", round, n);
		EXPECT_EQ(MD_EXACT_OPTIMAL, r.status);
		EXPECT_EQ(1, r.proven);
		EXPECT_EQ(opt, r.lower_bound);
		md_exact_result_free(&r);

		/* exact mode at the optimum: a plan within it */
		ASSERT_EQ(0, solve(&p, 0, opt, 20, &r));
		ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
		EXPECT_EQ(MD_EXACT_FEASIBLE, r.status);
		EXPECT_LE(r.peak, opt);
		md_exact_result_free(&r);

		/* one below: proven infeasible, still a valid plan */
		if (opt) {
			ASSERT_EQ(0, solve(&p, 0, opt - 1, 20, &r));
			ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
			EXPECT_EQ(MD_EXACT_INFEASIBLE, r.status)
				TH_LOG("round %d: %zu buffers, optimum %llu",
				       round, n, (unsigned long long)opt);
			EXPECT_EQ(1, r.proven);
			EXPECT_GT(r.lower_bound, opt - 1);
			md_exact_result_free(&r);
		}
		md_problem_free(&p);
		checked++;
	}
	EXPECT_EQ(240, checked);
}

/*
 * Every pruning is a switch: under each of the 2^9 combinations the
 * answers on small problems must still be the brute force's.
 */
TEST(every_combination_of_prunings_is_exact)
{
	unsigned int mask, searched = 0, i;
	struct md_problem probs[10];
	uint64_t opt[10];

	/* problems whose optimum is above the lower bound: proofs search */
	for (i = 0; i < 10; i++) {
		int tries = 0;

		do {
			ASSERT_LT(tries++, 10000);
			random_small(&probs[i], 4 + rnd() % 3, 1,
				     i % 4 == 3);
			opt[i] = brute_force(&probs[i]);
			if (opt[i] > md_problem_lower_bound(&probs[i], NULL))
				break;
			md_problem_free(&probs[i]);
		} while (1);
	}
	for (mask = 0; mask <= MD_EXACT_PRUNE_ALL; mask++) {
		for (i = 0; i < 10; i++) {
			struct md_exact_opts o = { 0 };
			struct md_exact_result r;

			o.disable = mask;
			o.memo_mib = 1;
			o.time_limit = 20;
			o.minimize = 1;
			ASSERT_EQ(0, md_exact_solve(&probs[i], &o, &r));
			ASSERT_EQ(0, md_plan_validate(&probs[i], r.offsets,
						      NULL));
			EXPECT_EQ(opt[i], r.peak)
				TH_LOG("prunings off 0x%x, problem %u", mask, i);
			EXPECT_EQ(MD_EXACT_OPTIMAL, r.status);
			searched += r.nodes > 0;
			md_exact_result_free(&r);

			o.minimize = 0;
			o.capacity = opt[i] - 1;
			ASSERT_EQ(0, md_exact_solve(&probs[i], &o, &r));
			EXPECT_EQ(MD_EXACT_INFEASIBLE, r.status)
				TH_LOG("prunings off 0x%x, problem %u", mask, i);
			EXPECT_EQ(MD_EXACT_STOP_NONE, r.stopped);
			searched += r.nodes > 0;
			md_exact_result_free(&r);
		}
	}
	/* the proofs below the optimum all need a search */
	EXPECT_GE(searched, (MD_EXACT_PRUNE_ALL + 1) * 10);
	for (i = 0; i < 10; i++)
		md_problem_free(&probs[i]);
}

TEST(prune_names_parse)
{
	unsigned int bits = 0, i;

	ASSERT_EQ(0, md_exact_prune_parse("memo,hatless", &bits));
	EXPECT_EQ(MD_EXACT_NO_MEMO | MD_EXACT_NO_HATLESS, bits);
	ASSERT_EQ(0, md_exact_prune_parse("all", &bits));
	EXPECT_EQ(MD_EXACT_PRUNE_ALL, bits);
	EXPECT_EQ(-EINVAL, md_exact_prune_parse("memo,", &bits));
	EXPECT_EQ(-EINVAL, md_exact_prune_parse("nosuch", &bits));
	EXPECT_EQ(-EINVAL, md_exact_prune_parse("mem", &bits));
	for (i = 0; i < 9; i++) {
		ASSERT_NE(NULL, md_exact_prune_name(1u << i));
		ASSERT_EQ(0, md_exact_prune_parse(md_exact_prune_name(1u << i),
						  &bits));
		EXPECT_EQ(1u << i, bits);
	}
	EXPECT_EQ(NULL, md_exact_prune_name(3));
}

TEST(example12_known_optimum)
{
	struct md_problem p;
	struct md_exact_result r;

	example12(&p);
	ASSERT_EQ(0, solve(&p, 0, 12, 5, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_EQ(MD_EXACT_FEASIBLE, r.status);
	EXPECT_EQ(12, r.peak);
	md_exact_result_free(&r);

	ASSERT_EQ(0, solve(&p, 0, 11, 5, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_EQ(MD_EXACT_INFEASIBLE, r.status);
	EXPECT_EQ(1, r.proven);
	md_exact_result_free(&r);

	ASSERT_EQ(0, solve(&p, 1, 0, 5, &r));
	EXPECT_EQ(MD_EXACT_OPTIMAL, r.status);
	EXPECT_EQ(12, r.peak);
	EXPECT_EQ(12, r.lower_bound);
	md_exact_result_free(&r);
	md_problem_free(&p);
}

/* Random problems of 12-21 buffers: optimal, never worse than heuristics. */
TEST(never_worse_than_the_heuristics)
{
	struct md_problem p;
	struct md_exact_result r;
	struct md_plan h;
	int i, beaten = 0;

	for (i = 0; i < 40; i++) {
		size_t n = 12 + rnd() % 10, k;

		md_problem_init(&p);
		for (k = 0; k < n; k++) {
			uint64_t lo = rnd() % 20;

			md_problem_add(&p, NULL, lo, lo + 1 + rnd() % 10,
				       1 + rnd() % 16, 0);
		}
		ASSERT_EQ(0, md_plan_solve(&p, NULL, &h));
		ASSERT_EQ(0, solve(&p, 1, 0, 5, &r));
		ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
		EXPECT_LE(r.peak, h.peak);
		EXPECT_GE(r.peak, h.lower_bound);
		EXPECT_EQ(MD_EXACT_OPTIMAL, r.status);
		beaten += r.peak < h.peak;
		md_exact_result_free(&r);
		md_plan_free(&h);
		md_problem_free(&p);
	}
	TH_LOG("exact below the heuristics on %d of 40", beaten);
}

TEST(alignment_and_fixed_offsets)
{
	struct md_problem p;
	struct md_exact_result r;

	/* the fixed buffer sits in the middle; the others go around it */
	md_problem_init(&p);
	md_problem_add(&p, "pin", 0, 10, 4, 4);
	p.bufs[0].flags |= MD_BUF_FIXED;
	p.bufs[0].offset = 4;
	md_problem_add(&p, "a", 0, 10, 4, 4);
	md_problem_add(&p, "b", 0, 5, 3, 1);
	md_problem_add(&p, "c", 5, 10, 4, 2);
	md_problem_add(&p, "d", 2, 8, 2, 2);
	ASSERT_EQ(0, solve(&p, 1, 0, 5, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_EQ(4, r.offsets[0]);
	EXPECT_EQ(0, r.offsets[1] % 4);
	EXPECT_EQ(0, r.offsets[3] % 2);
	EXPECT_EQ(0, r.offsets[4] % 2);
	EXPECT_EQ(brute_force(&p), r.peak);
	EXPECT_EQ(MD_EXACT_OPTIMAL, r.status);
	md_exact_result_free(&r);

	/* a fixed buffer above the capacity: infeasible at once */
	ASSERT_EQ(0, solve(&p, 0, 7, 5, &r));
	EXPECT_EQ(MD_EXACT_INFEASIBLE, r.status);
	EXPECT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	md_exact_result_free(&r);
	md_problem_free(&p);
}

TEST(empty_and_bad_problems)
{
	struct md_problem p;
	struct md_exact_result r;

	md_problem_init(&p);
	ASSERT_EQ(0, solve(&p, 1, 0, 1, &r));
	EXPECT_EQ(0, r.peak);
	EXPECT_EQ(MD_EXACT_OPTIMAL, r.status);
	md_exact_result_free(&r);

	md_problem_add(&p, "x", 0, 4, 8, 0);
	p.bufs[0].align = 0;
	EXPECT_EQ(-EINVAL, solve(&p, 1, 0, 1, &r));
	md_problem_free(&p);
}

/* A random problem too hard to finish in a fraction of a second. */
static void hard_problem(struct md_problem *p)
{
	size_t i;

	md_problem_init(p);
	for (i = 0; i < 400; i++) {
		uint64_t lo = rnd() % 300;

		md_problem_add(p, NULL, lo, lo + 1 + rnd() % 60,
			       1 + rnd() % 1000, 0);
	}
}

struct progress_log {
	int calls;
	int sane;
};

static void on_progress(const struct md_exact_progress *pr, void *arg)
{
	struct progress_log *l = arg;

	l->calls++;
	if (pr->lower_bound > pr->best_peak || pr->seconds < 0)
		l->sane = 0;
}

TEST(time_limit_returns_a_valid_plan)
{
	struct md_problem p;
	struct md_exact_result r;
	struct md_exact_opts o = { 0 };
	struct progress_log log = { 0, 1 };
	uint64_t lb;

	hard_problem(&p);
	lb = md_problem_lower_bound(&p, NULL);

	o.minimize = 1;
	o.time_limit = 0.6;
	o.memo_mib = 1;
	o.progress = on_progress;
	o.progress_arg = &log;
	ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_LT(r.seconds, 3.0);
	EXPECT_GE(r.lower_bound, lb);
	EXPECT_LE(r.lower_bound, r.peak);
	if (r.status == MD_EXACT_LIMIT)
		EXPECT_EQ(0, r.proven);
	EXPECT_GE(log.calls, 1);
	EXPECT_LE(log.calls, 12);
	EXPECT_EQ(1, log.sane);
	TH_LOG("400 buffers, 0.6 s: %s, peak %llu, bound %llu, %llu nodes",
	       md_exact_status_name(r.status), (unsigned long long)r.peak,
	       (unsigned long long)r.lower_bound,
	       (unsigned long long)r.nodes);
	md_exact_result_free(&r);

	/* exact mode at the lower bound: an answer either way */
	ASSERT_EQ(0, solve(&p, 0, lb, 0.3, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_LT(r.seconds, 3.0);
	if (r.status == MD_EXACT_LIMIT) {
		EXPECT_EQ(0, r.proven);
		EXPECT_EQ(1, r.heuristic);
	}
	md_exact_result_free(&r);
	md_problem_free(&p);
}

/*
 * A chain of 12000 buffers that never splits into parts: the search goes
 * one level deeper per buffer. It must run until the time limit and say
 * so, not stop early at a depth cap and call that the time limit.
 */
TEST(deep_search_runs_to_the_time_limit)
{
	struct md_problem p;
	struct md_exact_result r;
	struct md_exact_opts o = { 0 };
	size_t i;

	md_problem_init(&p);
	for (i = 0; i < 12000; i++) {
		uint64_t lo = i / 3;

		md_problem_add(&p, NULL, lo, lo + 4 + rnd() % 6,
			       1 + rnd() % 64, 0);
	}
	o.capacity = md_problem_lower_bound(&p, NULL);
	o.time_limit = 1.5;
	o.memo_mib = 1;
	ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	if (r.status == MD_EXACT_LIMIT) {
		EXPECT_EQ(MD_EXACT_STOP_TIME, r.stopped);
		EXPECT_GE(r.seconds, 1.4);
	}
	EXPECT_LT(r.seconds, 10.0);
	TH_LOG("12000 buffers: %s, stopped: %s, %.2f s, %llu nodes",
	       md_exact_status_name(r.status), md_exact_stop_name(r.stopped),
	       r.seconds, (unsigned long long)r.nodes);
	md_exact_result_free(&r);

	/* a node budget is a stop of its own */
	o.time_limit = 0;
	o.max_nodes = 5000;
	ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
	if (r.status == MD_EXACT_LIMIT)
		EXPECT_EQ(MD_EXACT_STOP_NODES, r.stopped);
	md_exact_result_free(&r);
	md_problem_free(&p);
}

/* Minimize mode gets at least as low as exact mode below its best peak. */
TEST(minimize_reaches_what_exact_finds)
{
	int round;

	for (round = 0; round < 6; round++) {
		struct md_problem p;
		struct md_exact_result rm, rx;
		struct md_exact_opts o = { 0 };
		size_t i;

		md_problem_init(&p);
		for (i = 0; i < 60; i++) {
			uint64_t lo = rnd() % 40;

			md_problem_add(&p, NULL, lo, lo + 1 + rnd() % 12,
				       1 + rnd() % 100, 0);
		}
		o.minimize = 1;
		o.time_limit = 1;
		o.memo_mib = 1;
		ASSERT_EQ(0, md_exact_solve(&p, &o, &rm));
		o.minimize = 0;
		o.capacity = rm.peak - 1;
		ASSERT_EQ(0, md_exact_solve(&p, &o, &rx));
		/* exact found nothing lower, or minimize was not optimal */
		if (rx.status == MD_EXACT_FEASIBLE)
			EXPECT_NE(MD_EXACT_OPTIMAL, rm.status);
		if (rm.status == MD_EXACT_OPTIMAL)
			EXPECT_EQ(MD_EXACT_INFEASIBLE, rx.status);
		md_exact_result_free(&rm);
		md_exact_result_free(&rx);
		md_problem_free(&p);
	}
}

TEST(cancel_flag_stops_the_search)
{
	struct md_problem p;
	struct md_exact_result r;
	struct md_exact_opts o = { 0 };
	volatile sig_atomic_t stop = 1;

	hard_problem(&p);
	o.capacity = md_problem_lower_bound(&p, NULL);
	o.cancel = &stop;
	o.memo_mib = 1;
	ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_LT(r.seconds, 1.0);
	if (r.status == MD_EXACT_LIMIT)
		EXPECT_EQ(0, r.proven);
	md_exact_result_free(&r);
	md_problem_free(&p);
}

/* ------------------------------------------------- benchmark files */

TEST(example12_csv_at_capacity_12)
{
	char dir[PATH_MAX];
	struct md_problem p;
	struct md_exact_result r;

	if (bench_dir(dir, sizeof(dir)) || bench_load(dir, "example.12.csv", &p))
		SKIP(return, "../shared/bench/minimalloc-challenging not found beside the repository");
	ASSERT_EQ(0, solve(&p, 0, 12, 5, &r));
	ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_EQ(MD_EXACT_FEASIBLE, r.status);
	EXPECT_LE(r.peak, 12);
	md_exact_result_free(&r);
	md_problem_free(&p);
}

TEST(minimalloc_challenging_at_known_capacity)
{
	static const struct {
		const char *file;
		uint64_t cap;
	} cases[] = {
		{ "A.1048576.csv", 1048576 }, { "C.1048576.csv", 1048576 },
		{ "C.1048576.csv", 1039360 }, { "G.1048576.csv", 1048576 },
		{ "K.1048576.csv", 1048576 },
	};
	char dir[PATH_MAX];
	size_t i;

	if (bench_dir(dir, sizeof(dir)))
		SKIP(return, "../shared/bench/minimalloc-challenging not found beside the repository");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct md_problem p;
		struct md_exact_opts o = { 0 };
		struct md_exact_result r;

		if (bench_load(dir, cases[i].file, &p))
			continue;
		o.capacity = cases[i].cap;
		o.time_limit = 30;
		ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
		ASSERT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
		EXPECT_EQ(MD_EXACT_FEASIBLE, r.status)
			TH_LOG("%s at %llu", cases[i].file,
			       (unsigned long long)cases[i].cap);
		EXPECT_LE(r.peak, cases[i].cap);
		TH_LOG("%s at %llu: %s in %.3f s, %llu nodes", cases[i].file,
		       (unsigned long long)cases[i].cap,
		       md_exact_status_name(r.status), r.seconds,
		       (unsigned long long)r.nodes);
		md_exact_result_free(&r);
		md_problem_free(&p);
	}
}

TEST_HARNESS_MAIN
