// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the interval tree, the plan validator (including
 * 10^6 intervals in under a second).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metadef/plan.h>

#include "itree.h"
#include "test_util.h"
#include "kselftest_harness.h"

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

/* CPU time of this thread: the 1 s budget is for the work, not for the
 * time the scheduler gives other jobs on a busy machine. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

TEST(itree_basic)
{
	struct md_itree t;
	uint32_t ids[8];

	ASSERT_EQ(0, md_itree_init(&t, 8));
	ASSERT_EQ(0, md_itree_insert(&t, 0, 0, 10));
	ASSERT_EQ(0, md_itree_insert(&t, 1, 10, 20));
	ASSERT_EQ(0, md_itree_insert(&t, 2, 5, 15));
	ASSERT_EQ(0, md_itree_insert(&t, 3, 7, 7));	/* empty */
	EXPECT_EQ(-EEXIST, md_itree_insert(&t, 1, 0, 1));
	EXPECT_EQ(-ERANGE, md_itree_insert(&t, 8, 0, 1));
	EXPECT_EQ(-EINVAL, md_itree_insert(&t, 4, 2, 1));
	ASSERT_EQ(0, md_itree_check(&t));

	/* Half-open: [10, 20) does not touch [0, 10). */
	ASSERT_EQ(2, md_itree_collect(&t, 0, 6, ids, 8));
	EXPECT_EQ(0, ids[0]);
	EXPECT_EQ(2, ids[1]);
	ASSERT_EQ(2, md_itree_collect(&t, 10, 11, ids, 8));
	EXPECT_EQ(2, ids[0]);
	EXPECT_EQ(1, ids[1]);
	EXPECT_EQ(0, md_itree_collect(&t, 20, 30, ids, 8));
	EXPECT_EQ(0, md_itree_collect(&t, 5, 5, ids, 8));
	/* The empty interval [7, 7) overlaps nothing. */
	ASSERT_EQ(2, md_itree_collect(&t, 6, 8, ids, 8));
	EXPECT_EQ(MD_ITREE_NIL, md_itree_any(&t, 20, 21));
	EXPECT_NE(MD_ITREE_NIL, md_itree_any(&t, 19, 21));

	ASSERT_EQ(0, md_itree_remove(&t, 2));
	EXPECT_EQ(-ENOENT, md_itree_remove(&t, 2));
	ASSERT_EQ(0, md_itree_check(&t));
	ASSERT_EQ(2, md_itree_collect(&t, 9, 11, ids, 1));
	md_itree_free(&t);
}

/* Random inserts and removals against a brute-force list. */
TEST(itree_random_vs_brute_force)
{
	enum { N = 2000, ROUNDS = 20000 };
	uint64_t lo[N], hi[N];
	int in[N] = { 0 };
	uint32_t got[N], want[N];
	struct md_itree t;
	int r;

	ASSERT_EQ(0, md_itree_init(&t, N));
	for (r = 0; r < ROUNDS; r++) {
		uint32_t id = rnd() % N;
		uint64_t a = rnd() % 10000, b = a + rnd() % 300;
		size_t k, w = 0, i;

		if (in[id]) {
			ASSERT_EQ(0, md_itree_remove(&t, id));
			in[id] = 0;
		} else {
			lo[id] = rnd() % 10000;
			hi[id] = lo[id] + rnd() % 200;
			ASSERT_EQ(0, md_itree_insert(&t, id, lo[id], hi[id]));
			in[id] = 1;
		}
		if (r % 97)
			continue;
		ASSERT_EQ(0, md_itree_check(&t));
		k = md_itree_collect(&t, a, b, got, N);
		for (i = 0; i < N; i++)
			if (in[i] && lo[i] < hi[i] && lo[i] < b && hi[i] > a)
				want[w++] = i;
		ASSERT_EQ(w, k);
		qsort(got, k, sizeof(*got), cmp_u32);
		ASSERT_EQ(0, memcmp(got, want, k * sizeof(*got)));
		if (w) {
			EXPECT_NE(MD_ITREE_NIL, md_itree_any(&t, a, b));
		} else {
			EXPECT_EQ(MD_ITREE_NIL, md_itree_any(&t, a, b));
		}
	}
	md_itree_free(&t);
}

/* (lo, id) order of the brute-force list, what collect reports. */
static const uint64_t *key_lo;
static int cmp_lo_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (key_lo[x] != key_lo[y])
		return key_lo[x] < key_lo[y] ? -1 : 1;
	return (x > y) - (x < y);
}

static int count_fn(void *arg, uint32_t id)
{
	uint32_t *v = arg;

	v[1 + v[0]++] = id;
	return 0;
}

/*
 * Grown while full of intervals (the array moves: every link rewritten),
 * checked after every operation; collect and query report in (lo, id)
 * order without sorting, any() names an interval that overlaps.
 */
TEST(itree_grow_while_populated_ordered_reports)
{
	enum { N = 3000, ROUNDS = 12000 };
	uint64_t *lo = calloc(N, sizeof(*lo)), *hi = calloc(N, sizeof(*hi));
	uint32_t *got = calloc(N, sizeof(*got)), *want = calloc(N, sizeof(*want));
	uint32_t *q = calloc(N + 1, sizeof(*q));
	uint64_t seed = test_seed(0x17ee5eedULL);
	int *in = calloc(N, sizeof(*in));
	struct md_itree t;
	size_t cap = 8;
	int r;

	ASSERT_TRUE(lo && hi && got && want && q && in);
	key_lo = lo;
	ASSERT_EQ(0, md_itree_init(&t, cap));
	for (r = 0; r < ROUNDS; r++) {
		/* Ids reach further as the rounds go: the tree grows. */
		size_t reach = 8 + (size_t)r * N / ROUNDS;
		uint32_t id = (uint32_t)(xorshift64(&seed) % reach), any;
		uint64_t a = xorshift64(&seed) % 5000;
		uint64_t b = a + 1 + xorshift64(&seed) % 400;
		size_t k, w = 0, i;

		if (id >= cap) {
			ASSERT_EQ(-ERANGE, md_itree_insert(&t, id, 1, 2));
			cap = cap * 2 > N ? N : cap * 2;
			ASSERT_EQ(0, md_itree_grow(&t, cap));
			ASSERT_EQ(0, md_itree_check(&t));
		}
		if (in[id]) {
			ASSERT_EQ(0, md_itree_remove(&t, id));
			ASSERT_EQ(-ENOENT, md_itree_remove(&t, id));
			in[id] = 0;
		} else {
			lo[id] = xorshift64(&seed) % 5000;
			hi[id] = lo[id] + xorshift64(&seed) % 150;
			ASSERT_EQ(0, md_itree_insert(&t, id, lo[id], hi[id]));
			ASSERT_EQ(-EEXIST, md_itree_insert(&t, id, 0, 1));
			in[id] = 1;
		}
		ASSERT_EQ(0, md_itree_check(&t));
		for (i = 0; i < cap; i++)
			if (in[i] && lo[i] < hi[i] && lo[i] < b && hi[i] > a)
				want[w++] = (uint32_t)i;
		qsort(want, w, sizeof(*want), cmp_lo_id);
		k = md_itree_collect(&t, a, b, got, N);
		ASSERT_EQ(w, k);
		ASSERT_EQ(0, memcmp(got, want, k * sizeof(*got)));
		q[0] = 0;
		ASSERT_EQ(0, md_itree_query(&t, a, b, count_fn, q));
		ASSERT_EQ(w, q[0]);
		ASSERT_EQ(0, memcmp(q + 1, want, w * sizeof(*got)));
		/* An empty query overlaps nothing, even inside intervals. */
		ASSERT_EQ(0u, md_itree_collect(&t, a, a, got, N));
		ASSERT_EQ(MD_ITREE_NIL, md_itree_any(&t, a, a));
		any = md_itree_any(&t, a, b);
		if (w) {
			ASSERT_NE(MD_ITREE_NIL, any);
			ASSERT_TRUE(in[any] && lo[any] < b && hi[any] > a &&
				    lo[any] < hi[any]);
		} else {
			ASSERT_EQ(MD_ITREE_NIL, any);
		}
	}
	ASSERT_EQ((size_t)N, cap);
	/* A wrong max is caught. */
	for (r = 0; r < N && !in[r]; r++)
		;
	ASSERT_LT(r, N);
	t.nodes[r].max += 1000000;
	EXPECT_EQ(-EFAULT, md_itree_check(&t));
	t.nodes[r].max -= 1000000;
	EXPECT_EQ(0, md_itree_check(&t));
	md_itree_clear(&t);
	EXPECT_EQ(0, md_itree_check(&t));
	EXPECT_EQ(MD_ITREE_NIL, md_itree_any(&t, 0, UINT64_MAX));
	md_itree_free(&t);
	free(lo);
	free(hi);
	free(got);
	free(want);
	free(q);
	free(in);
}

static void small_problem(struct md_problem *p)
{
	md_problem_init(p);
	/* a: [0, 10) 100 B; b: [5, 15) 50 B; c: [10, 20) 100 B */
	md_problem_add(p, "a", 0, 10, 100, 0);
	md_problem_add(p, "b", 5, 15, 50, 0);
	md_problem_add(p, "c", 10, 20, 100, 0);
}

TEST(validator_accepts_and_rejects)
{
	struct md_problem p;
	struct md_conflict c;
	uint64_t good[3] = { 0, 100, 0 };	/* a and c share: no overlap */
	uint64_t bad[3] = { 0, 60, 0 };		/* b overlaps a in [60, 100) */
	uint64_t bad2[3] = { 0, 100, 120 };	/* c overlaps b's [100, 150) */

	small_problem(&p);
	EXPECT_EQ(0, md_plan_validate(&p, good, NULL));
	EXPECT_EQ(150, md_plan_peak(&p, good));
	EXPECT_EQ(150, md_problem_lower_bound(&p, NULL));
	EXPECT_EQ(250, md_problem_total(&p));

	memset(&c, 0, sizeof(c));
	ASSERT_EQ(-EEXIST, md_plan_validate(&p, bad, &c));
	EXPECT_EQ(0, c.a);
	EXPECT_EQ(1, c.b);
	EXPECT_EQ(0, c.a_lower);
	EXPECT_EQ(10, c.a_upper);
	EXPECT_EQ(0, c.a_off);
	EXPECT_EQ(100, c.a_end);
	EXPECT_EQ(5, c.b_lower);
	EXPECT_EQ(15, c.b_upper);
	EXPECT_EQ(60, c.b_off);
	EXPECT_EQ(110, c.b_end);

	ASSERT_EQ(-EEXIST, md_plan_validate(&p, bad2, &c));
	EXPECT_EQ(1, c.a);
	EXPECT_EQ(2, c.b);

	/* Alignment and fixed offsets. */
	p.bufs[1].align = 64;
	EXPECT_EQ(-EINVAL, md_plan_validate(&p, good, &c));
	EXPECT_EQ(1, c.a);
	p.bufs[1].align = 4;
	EXPECT_EQ(0, md_plan_validate(&p, good, NULL));
	p.bufs[2].flags |= MD_BUF_FIXED;
	p.bufs[2].offset = 200;
	EXPECT_EQ(-EINVAL, md_plan_validate(&p, good, &c));
	EXPECT_EQ(2, c.a);
	md_problem_free(&p);
}

/* 10^6 buffers, half of them alive at any time: checked in under 1 s. */
TEST(validator_million)
{
	enum { N = 1000000, SLOTS = 1000 };
	struct md_problem p;
	uint64_t *off;
	struct md_conflict c;
	double t0, t1;
	size_t i;

	md_problem_init(&p);
	off = malloc((N + 1) * sizeof(*off));
	ASSERT_NE(NULL, off);
	for (i = 0; i < N; i++) {
		uint64_t s = i % SLOTS, r = i / SLOTS, j = rnd() % 7;

		/* Slot s holds one buffer per round; rounds do not overlap. */
		ASSERT_EQ(0, md_problem_add(&p, NULL, r * 10 + (s % 3),
					    r * 10 + 10 + (s % 3), 64 - j, 0));
		off[i] = s * 64;
	}
	t0 = now();
	ASSERT_EQ(0, md_plan_validate(&p, off, NULL));
	t1 = now();
	TH_LOG("validated 10^6 intervals in %.3f s (CPU)", t1 - t0);
	EXPECT_LT(t1 - t0, 1.0);

	/* One more buffer on top of slot 500 in round 7: caught. */
	ASSERT_EQ(0, md_problem_add(&p, NULL, 75, 76, 1, 0));
	off[N] = 500 * 64 + 3;
	ASSERT_EQ(-EEXIST, md_plan_validate(&p, off, &c));
	EXPECT_EQ(N, c.b);
	EXPECT_EQ(500, c.a % SLOTS);
	md_problem_free(&p);
	free(off);
}

TEST_HARNESS_MAIN
