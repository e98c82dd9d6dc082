// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the improvement phase (md_plan_improve(), lib/improve.c)
 * and minimize mode using it on large problems. On schedule-shaped random
 * problems (short-lived activations, long-lived residuals, scratch beside
 * each operator, mixed alignments, some fixed buffers): it never returns a
 * worse or an invalid plan, never moves a fixed buffer, lowers the peak
 * where the heuristics left room, gives the same plan for the same seed,
 * refuses a plan that is not valid without touching it, and honours its
 * time limit and the cancel flag; minimize mode searches until its limit
 * and reports every lowering of the peak; on problems of a known optimum
 * its sideways steps and kicks get closer to it than descent alone, and
 * ejection chains reach it where the phase without them does not.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/exact.h>

#include "test_util.h"
#include "kselftest_harness.h"

/* Pieces of a tiled problem (sideways_beats_plain_descent). */
#define TILE_PIECES	600

/* Under ThreadSanitizer (10-20x slower) the same tests on less work. */
#ifdef __SANITIZE_THREAD__
#define PROBLEMS	6
#define STEPS		40
#define MIN_N		1500
#define MIN_LIMIT	5.0
#define TILED		2
#define TILE_STEPS	250
#define LANE_PROBLEMS	2
#define LANE_STEPS	100
#else
#define PROBLEMS	24
#define STEPS		150
#define MIN_N		6000
#define MIN_LIMIT	2.0
#define TILED		6
#define TILE_STEPS	300
#define LANE_PROBLEMS	6
#define LANE_STEPS	100
#endif

/*
 * A schedule of @n buffers: one tensor per operator, alive one to three
 * steps, one in eight alive long (a residual, a skip), sizes over five
 * decades; @fixed_pct percent are fixed at the offset the heuristic gave
 * them (set by the caller from a plan), alignments 1, 64 or 512.
 */
static void schedule(struct md_problem *p, size_t n, uint64_t seed)
{
	uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 1, t = 0;
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t r = md_xorshift64(&rng), len, size, align;

		len = r % 8 ? 1 + r % 3 : 20 + (r >> 8) % 300;
		size = 64ULL << ((r >> 20) % 17);
		size += (r >> 40) % size;
		align = (r >> 50) % 3 == 0 ? 1 : (r >> 50) % 3 == 1 ? 64 : 512;
		md_problem_add(p, NULL, t, t + len, size, align);
		if ((r >> 60) % 3)
			t++;
	}
}

static uint64_t *heuristic(const struct md_problem *p, uint64_t *peak)
{
	struct md_plan pl;
	uint64_t *off;

	if (md_plan_solve(p, NULL, &pl))
		return NULL;
	off = pl.offsets;
	*peak = pl.peak;
	pl.offsets = NULL;
	md_plan_free(&pl);
	return off;
}

TEST(never_worse_always_valid_fixed_stay)
{
	size_t k, improved = 0, room = 0;

	for (k = 0; k < PROBLEMS; k++) {
		struct md_improve_opts o = { .max_iters = STEPS, .seed = k + 1 };
		struct md_improve_result r;
		struct md_problem p;
		uint64_t start, *off, *before, lb;
		size_t i, n = 100 + k * 40;

		schedule(&p, n, k + 100);
		off = heuristic(&p, &start);
		ASSERT_NE(NULL, off);
		/* every seventh buffer fixed where the heuristic put it */
		for (i = 0; i < n; i += 7) {
			p.bufs[i].flags = MD_BUF_FIXED;
			p.bufs[i].offset = off[i];
		}
		before = malloc(n * sizeof(*before));
		ASSERT_NE(NULL, before);
		memcpy(before, off, n * sizeof(*off));
		lb = md_problem_lower_bound(&p, NULL);

		ASSERT_EQ(0, md_plan_improve(&p, off, &o, &r));
		EXPECT_EQ(start, r.start_peak);
		EXPECT_LE(r.peak, start);
		EXPECT_GE(r.peak, lb);
		EXPECT_EQ(r.peak, md_plan_peak(&p, off));
		EXPECT_EQ(0, md_plan_validate(&p, off, NULL));
		EXPECT_EQ(r.optimal, r.peak == lb);
		for (i = 0; i < n; i += 7)
			EXPECT_EQ(before[i], off[i]);
		/* the trajectory starts at the start and only goes down */
		ASSERT_GE(r.nsteps, 1);
		EXPECT_EQ(start, r.steps[0].peak);
		for (i = 1; i < r.nsteps; i++)
			EXPECT_LT(r.steps[i].peak, r.steps[i - 1].peak);
		EXPECT_EQ(r.peak, r.steps[r.nsteps - 1].peak);
		if (start > lb)
			room++;
		if (r.peak < start)
			improved++;
		md_improve_result_free(&r);
		free(before);
		free(off);
		md_problem_free(&p);
	}
	/* the heuristics leave room on most of these; it must find some */
	TH_LOG("%zu of %zu problems with room improved", improved, room);
	ASSERT_GT(room, PROBLEMS / 3);
	EXPECT_GE(improved * 3, room);
}

TEST(same_seed_same_plan)
{
	struct md_improve_opts o = { .max_iters = 2 * STEPS, .seed = 42,
				     .threads = 2 };
	struct md_improve_result r1, r2;
	struct md_problem p;
	uint64_t peak, *a, *b;

	schedule(&p, 20 * STEPS, 7);
	a = heuristic(&p, &peak);
	b = heuristic(&p, &peak);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, md_plan_improve(&p, a, &o, &r1));
	ASSERT_EQ(0, md_plan_improve(&p, b, &o, &r2));
	EXPECT_EQ(r1.peak, r2.peak);
	EXPECT_EQ(r1.iterations, r2.iterations);
	EXPECT_EQ(0, memcmp(a, b, p.n * sizeof(*a)));
	EXPECT_EQ(0, md_plan_validate(&p, a, NULL));
	md_improve_result_free(&r1);
	md_improve_result_free(&r2);
	free(a);
	free(b);
	md_problem_free(&p);
}

TEST(bad_plans_are_refused_untouched)
{
	struct md_improve_result r;
	struct md_problem p;
	uint64_t peak, *off, *copy;

	schedule(&p, 300, 3);
	off = heuristic(&p, &peak);
	ASSERT_NE(NULL, off);
	EXPECT_EQ(-EINVAL, md_plan_improve(NULL, off, NULL, &r));
	EXPECT_EQ(-EINVAL, md_plan_improve(&p, NULL, NULL, &r));
	EXPECT_EQ(-EINVAL, md_plan_improve(&p, off, NULL, NULL));
	/* two buffers alive together at one offset: not a plan */
	off[1] = off[0];
	p.bufs[1].lower = p.bufs[0].lower;
	p.bufs[1].upper = p.bufs[0].upper;
	p.bufs[1].align = 1;
	copy = malloc(p.n * sizeof(*copy));
	ASSERT_NE(NULL, copy);
	memcpy(copy, off, p.n * sizeof(*off));
	EXPECT_EQ(-EINVAL, md_plan_improve(&p, off, NULL, &r));
	EXPECT_EQ(0, memcmp(copy, off, p.n * sizeof(*off)));
	free(copy);
	free(off);
	md_problem_free(&p);
}

TEST(time_limit_is_honoured)
{
	struct md_improve_opts o = { .time_limit = 1.0, .seed = 5 };
	struct md_improve_result r;
	struct md_problem p;
	uint64_t peak, *off;

	schedule(&p, 20000, 11);
	off = heuristic(&p, &peak);
	ASSERT_NE(NULL, off);
	ASSERT_EQ(0, md_plan_improve(&p, off, &o, &r));
	TH_LOG("%.3f s, %lu steps, peak %lu -> %lu (bound %lu)", r.seconds,
	       (unsigned long)r.iterations, (unsigned long)r.start_peak,
	       (unsigned long)r.peak,
	       (unsigned long)md_problem_lower_bound(&p, NULL));
	if (!r.optimal)
		EXPECT_GE(r.seconds, 1.0);
	EXPECT_LT(r.seconds, 2.0);
	EXPECT_EQ(0, md_plan_validate(&p, off, NULL));
	md_improve_result_free(&r);
	free(off);
	md_problem_free(&p);
}

TEST(cancel_stops_it)
{
	volatile sig_atomic_t cancel = 1;
	struct md_improve_opts o = { .cancel = &cancel };
	struct md_improve_result r;
	struct md_problem p;
	uint64_t peak, *off;

	schedule(&p, 5000, 13);
	off = heuristic(&p, &peak);
	ASSERT_NE(NULL, off);
	ASSERT_EQ(0, md_plan_improve(&p, off, &o, &r));
	EXPECT_EQ(0, r.iterations);
	EXPECT_EQ(peak, r.peak);
	md_improve_result_free(&r);
	free(off);
	md_problem_free(&p);
}

/*
 * Minimize mode on more than MD_EXACT_IMPROVE_MIN buffers: it runs to its
 * time limit (or a proof), improvement steps ran, the trajectory goes down
 * to the plan it returns.
 */
TEST(minimize_searches_until_its_limit)
{
	struct md_exact_opts o = { .minimize = 1, .time_limit = MIN_LIMIT };
	struct md_exact_result r;
	struct md_problem p;
	uint64_t heur;
	uint64_t *off;
	size_t i;

	schedule(&p, MIN_N, 17);
	off = heuristic(&p, &heur);
	ASSERT_NE(NULL, off);
	free(off);
	ASSERT_EQ(0, md_exact_solve(&p, &o, &r));
	TH_LOG("%s after %.3f s, %lu improvement steps, peak %lu -> %lu, bound %lu",
	       md_exact_status_name(r.status), r.seconds,
	       (unsigned long)r.improve_iters, (unsigned long)heur,
	       (unsigned long)r.peak, (unsigned long)r.lower_bound);
	EXPECT_EQ(0, md_plan_validate(&p, r.offsets, NULL));
	EXPECT_LE(r.peak, heur);
	if (r.status == MD_EXACT_OPTIMAL) {
		EXPECT_EQ(r.peak, r.lower_bound);
	} else {
		EXPECT_EQ(MD_EXACT_LIMIT, r.status);
		EXPECT_EQ(MD_EXACT_STOP_TIME, r.stopped);
		EXPECT_GE(r.seconds, MIN_LIMIT);
		EXPECT_GT(r.improve_iters, 0);
	}
	EXPECT_LT(r.seconds, MIN_LIMIT + 1.0);
	ASSERT_GE(r.nsteps, 1);
	EXPECT_EQ(heur, r.steps[0].peak);
	for (i = 1; i < r.nsteps; i++) {
		EXPECT_LT(r.steps[i].peak, r.steps[i - 1].peak);
		EXPECT_GE(r.steps[i].seconds, r.steps[i - 1].seconds);
	}
	EXPECT_EQ(r.peak, r.steps[r.nsteps - 1].peak);
	md_exact_result_free(&r);
	md_problem_free(&p);
}

/*
 * A problem whose optimum is known: the rectangle of times [t0, t1) and
 * offsets [o0, o1) cut at random, again and again, into @left pieces at
 * most, each piece a buffer. Every moment is filled to the brim, so the
 * best peak is the rectangle's height, the most bytes alive at once.
 */
static void tile(struct md_problem *p, uint64_t *rng, uint64_t t0,
		 uint64_t t1, uint64_t o0, uint64_t o1, size_t left)
{
	uint64_t r = md_xorshift64(rng), cut;

	if (left <= 1 || (t1 - t0 < 2 && o1 - o0 < 2 * 64)) {
		md_problem_add(p, NULL, t0, t1, o1 - o0, 1);
		return;
	}
	if ((r & 1 && t1 - t0 >= 2) || o1 - o0 < 2 * 64) {
		cut = t0 + 1 + (r >> 8) % (t1 - t0 - 1);
		tile(p, rng, t0, cut, o0, o1, left / 2);
		tile(p, rng, cut, t1, o0, o1, left - left / 2);
	} else {
		cut = o0 + 64 * (1 + (r >> 8) % ((o1 - o0) / 64 - 1));
		tile(p, rng, t0, t1, o0, cut, left / 2);
		tile(p, rng, t0, t1, cut, o1, left - left / 2);
	}
}

/*
 * Sideways steps and chains that keep their own plans do something plain
 * descent cannot: on tiled problems (optimum known, the heuristic above
 * it), at the same step count, the phase gets closer to the optimum in
 * sum than with descent_only, and never ends above it on a problem.
 */
TEST(sideways_beats_plain_descent)
{
	uint64_t excess[2] = { 0, 0 };
	size_t k, room = 0;

	for (k = 0; k < TILED; k++) {
		uint64_t rng = 0x2545f4914f6cdd1dULL * (k + 1), start = 0, *off[2];
		struct md_problem p;
		int m;

		md_problem_init(&p);
		tile(&p, &rng, 0, 400, 0, 64 * 256, TILE_PIECES);
		off[0] = heuristic(&p, &start);
		off[1] = heuristic(&p, &start);
		ASSERT_NE(NULL, off[0]);
		ASSERT_NE(NULL, off[1]);
		ASSERT_EQ(64 * 256, md_problem_lower_bound(&p, NULL));
		room += start > 64 * 256;
		for (m = 0; m < 2; m++) {
			struct md_improve_opts o = {
				.max_iters = TILE_STEPS, .seed = k + 1,
				.threads = 1, .descent_only = !m,
			};
			struct md_improve_result r;

			ASSERT_EQ(0, md_plan_improve(&p, off[m], &o, &r));
			ASSERT_EQ(0, md_plan_validate(&p, off[m], NULL));
			ASSERT_LE(r.peak, start);
			ASSERT_GE(r.peak, 64 * 256);
			excess[m] += r.peak - 64 * 256;
			md_improve_result_free(&r);
			free(off[m]);
		}
		md_problem_free(&p);
	}
	TH_LOG("%zu of %d with room; bytes above the optimum: descent %llu, "
	       "with sideways steps %llu", room, TILED,
	       (unsigned long long)excess[0], (unsigned long long)excess[1]);
	ASSERT_GT(room, TILED / 2);
	EXPECT_LT(excess[1], excess[0]);
}

/*
 * A problem whose optimum is known and that an ejection chain solves: time
 * [0, LANE_T) split into epochs of 20 to 80 moments, LANES lanes of 64
 * bytes, in each epoch one lane empty (a hole, at random) and every other
 * lane holding a buffer alive the whole epoch (in odd lanes, two cut at
 * random), and a buffer c of 64 bytes alive the whole time, placed on top
 * of them all. Every moment holds LANES lanes of bytes with c, so the
 * optimum is LANES * 64, reached when c has a lane of its own: a lane
 * cleared by moving each of its buffers into the hole of its epoch. No
 * band near the top holds every hole, and one that does holds more
 * buffers than a step takes.
 */
#define LANES		200
#define LANE_T		400

static uint64_t *holes(struct md_problem *p, uint64_t seed)
{
	uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 7, *off;
	uint64_t start[LANE_T / 20 + 2], hole[LANE_T / 20 + 2], l;
	size_t ne = 0, j;

	md_problem_init(p);
	for (start[0] = 0; start[ne] < LANE_T; ne++) {
		start[ne + 1] = start[ne] + 20 + md_xorshift64(&rng) % 61;
		if (start[ne + 1] > LANE_T)
			start[ne + 1] = LANE_T;
		hole[ne] = md_xorshift64(&rng) % LANES;
	}
	off = malloc((2 * LANES * ne + 1) * sizeof(*off));
	if (!off)
		return NULL;
	for (l = 0; l < LANES; l++) {
		for (j = 0; j < ne; j++) {
			uint64_t t0 = start[j], t1 = start[j + 1], cut = t1;

			if (hole[j] == l)
				continue;
			if (l % 2 && t1 - t0 >= 2)
				cut = t0 + 1 + md_xorshift64(&rng) % (t1 - t0 - 1);
			off[p->n] = l * 64;
			if (md_problem_add(p, NULL, t0, cut, 64, 1))
				return NULL;
			if (cut == t1)
				continue;
			off[p->n] = l * 64;
			if (md_problem_add(p, NULL, cut, t1, 64, 1))
				return NULL;
		}
	}
	off[p->n] = LANES * 64;		/* c, on top */
	if (md_problem_add(p, NULL, 0, LANE_T, 64, 1))
		return NULL;
	return off;
}

/*
 * Ejection chains reach the known optimum of holes() problems, where the
 * phase without them (no_eject, at the same step count) does not.
 */
TEST(ejection_clears_a_lane)
{
	size_t k, solved[2] = { 0, 0 };	/* with ejection chains, without */

	for (k = 0; k < LANE_PROBLEMS; k++) {
		int m;

		for (m = 0; m < 2; m++) {
			struct md_improve_opts o = {
				.max_iters = LANE_STEPS, .seed = k + 1,
				.threads = 1, .no_eject = m,
			};
			struct md_improve_result r;
			struct md_problem p;
			uint64_t *off = holes(&p, k + 1);

			ASSERT_NE(NULL, off);
			ASSERT_EQ(0, md_plan_validate(&p, off, NULL));
			ASSERT_EQ(LANES * 64, md_problem_lower_bound(&p, NULL));
			ASSERT_EQ(0, md_plan_improve(&p, off, &o, &r));
			ASSERT_EQ(0, md_plan_validate(&p, off, NULL));
			ASSERT_EQ((LANES + 1) * 64, r.start_peak);
			ASSERT_GE(r.peak, LANES * 64);
			solved[m] += r.peak == LANES * 64;
			md_improve_result_free(&r);
			free(off);
			md_problem_free(&p);
		}
	}
	TH_LOG("%d problems, at the optimum after %d steps: %zu with "
	       "ejection chains, %zu without", LANE_PROBLEMS, LANE_STEPS,
	       solved[0], solved[1]);
	EXPECT_EQ(LANE_PROBLEMS, solved[0]);
	EXPECT_LT(solved[1], solved[0]);
}

TEST_HARNESS_MAIN
