// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the binary heap (lib/heap.[ch]) against a naive model
 * (an unsorted array searched for its least element), the heap property
 * checked after every change, with keys that collide often so that ties
 * are exercised, and elements of an odd size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "test_util.h"
#include "kselftest_harness.h"

/* 20 bytes: the heap copies whole elements, whatever their size. */
struct ent {
	uint32_t key;
	uint32_t idx;		/* a total order: (key, idx) */
	uint8_t pad[12];	/* a copy of idx's low byte, checked */
};

static bool ent_less(const void *a, const void *b, void *arg)
{
	const struct ent *x = a, *y = b;

	(*(uint64_t *)arg)++;
	if (x->key != y->key)
		return x->key < y->key;
	return x->idx < y->idx;
}

static bool key_less(const void *a, const void *b, void *arg)
{
	(void)arg;
	return ((const struct ent *)a)->key < ((const struct ent *)b)->key;
}

/* The least element of the model (first of equal ones): its index. */
static size_t model_min(const struct ent *m, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (m[i].key < m[best].key ||
		    (m[i].key == m[best].key && m[i].idx < m[best].idx))
			best = i;
	return best;
}

static struct ent mk(uint32_t key, uint32_t idx)
{
	struct ent e = { key, idx, { 0 } };

	memset(e.pad, (int)(idx & 0xff), sizeof(e.pad));
	return e;
}

static int pad_ok(const struct ent *e)
{
	size_t i;

	for (i = 0; i < sizeof(e->pad); i++)
		if (e->pad[i] != (uint8_t)(e->idx & 0xff))
			return 0;
	return 1;
}

TEST(random_pushes_and_pops_match_a_naive_model)
{
	enum { CAP = 3000, STEPS = 40000 };
	struct ent *h = calloc(CAP, sizeof(*h));
	struct ent *m = calloc(CAP, sizeof(*m));
	uint64_t seed = test_seed(0x51ed2701a3b5c7d9ULL), cmps = 0;
	size_t n = 0, step, pops = 0;
	uint32_t next = 0;
	struct md_heap hp;

	ASSERT_NE(NULL, h);
	ASSERT_NE(NULL, m);
	md_heap_init(&hp, h, sizeof(*h), ent_less, &cmps);
	EXPECT_EQ(NULL, md_heap_top(&hp));
	for (step = 0; step < STEPS; step++) {
		/* Phases that grow and drain: the heap sees both ends. */
		int grow = (step / 5000) % 2 == 0;
		uint64_t r = xorshift64(&seed);

		if (n < CAP && (!n || r % 100 < (grow ? 70u : 30u))) {
			struct ent e = mk((uint32_t)(r >> 32) % 64, next++);

			md_heap_push(&hp, &e);
			m[n++] = e;
		} else {
			struct ent got;
			size_t k = model_min(m, n);

			ASSERT_EQ(0, memcmp(md_heap_top(&hp), &m[k],
					    sizeof(got)));
			md_heap_pop(&hp, &got);
			ASSERT_EQ(m[k].key, got.key);
			ASSERT_EQ(m[k].idx, got.idx);
			ASSERT_TRUE(pad_ok(&got));
			m[k] = m[--n];
			pops++;
		}
		ASSERT_EQ(n, hp.n);
		if (step % 97 == 0 || n < 8)
			ASSERT_EQ(0, md_heap_check(&hp));
	}
	/* Drain: strictly increasing in the total order. */
	while (hp.n) {
		struct ent a, b;

		md_heap_pop(&hp, &a);
		if (!hp.n)
			break;
		b = *(struct ent *)md_heap_top(&hp);
		ASSERT_TRUE(ent_less(&a, &b, &cmps));
	}
	ASSERT_GT(pops, STEPS / 4);
	/* O(log n) per operation, not a scan: 2 log2(3000) ~ 23. */
	EXPECT_LT(cmps, (uint64_t)STEPS * 30);
	free(h);
	free(m);
}

/*
 * With only a partial order (keys, no index), equal keys come out in
 * some order, but every pop is a least key and every element comes out
 * exactly once.
 */
TEST(ties_every_element_once_keys_never_decrease)
{
	enum { N = 5000 };
	struct ent *h = calloc(N, sizeof(*h));
	uint8_t *seen = calloc(N, 1);
	uint64_t seed = test_seed(0x0ddba11ULL);
	uint32_t last = 0;
	struct md_heap hp;
	size_t i;

	ASSERT_NE(NULL, h);
	ASSERT_NE(NULL, seen);
	md_heap_init(&hp, h, sizeof(*h), key_less, NULL);
	for (i = 0; i < N; i++) {
		struct ent e = mk((uint32_t)(xorshift64(&seed) % 7), (uint32_t)i);

		md_heap_push(&hp, &e);
	}
	ASSERT_EQ(0, md_heap_check(&hp));
	for (i = 0; i < N; i++) {
		struct ent e;

		md_heap_pop(&hp, &e);
		ASSERT_LT(e.idx, (uint32_t)N);
		ASSERT_EQ(0, seen[e.idx]);
		seen[e.idx] = 1;
		ASSERT_GE(e.key, last);
		ASSERT_TRUE(pad_ok(&e));
		last = e.key;
	}
	EXPECT_EQ(0u, hp.n);
	free(h);
	free(seen);
}

TEST(check_catches_a_broken_heap)
{
	struct ent h[16];
	uint64_t cmps = 0;
	struct md_heap hp;
	uint32_t i;

	md_heap_init(&hp, h, sizeof(*h), ent_less, &cmps);
	for (i = 0; i < 16; i++) {
		struct ent e = mk(100 - i, i);

		md_heap_push(&hp, &e);
	}
	ASSERT_EQ(0, md_heap_check(&hp));
	EXPECT_EQ(85u, h[0].key);
	h[9].key = 0;		/* a leaf below its parent */
	EXPECT_EQ(-1, md_heap_check(&hp));
}

TEST_HARNESS_MAIN
