// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the library's radix sort (lib/sort.c) against a naive
 * stable sort (qsort on the key, then the original position), on keys
 * that differ in every byte, in one byte only, in none, and few distinct
 * ones (ties, where stability shows).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "test_util.h"
#include "kselftest_harness.h"

/* A 16-byte record: the key, then a payload the sort must carry along. */
struct rec {
	uint64_t key;
	uint32_t pos;		/* position before sorting */
	uint32_t check;		/* a function of key and pos */
};

static uint32_t check_of(uint64_t key, uint32_t pos)
{
	return (uint32_t)(md_mix64(key ^ ((uint64_t)pos << 32)) >> 16);
}

static int stable_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Keys of shape @shape: 0 all random, 1 one byte, 2 all equal, 3 few. */
static uint64_t key_of(uint64_t *seed, int shape, unsigned int byte)
{
	uint64_t r = xorshift64(seed);

	switch (shape) {
	case 0:
		return r;
	case 1:
		return (r & 0xff) << (8 * byte) | 0x1234;
	case 2:
		return 0xabcdef;
	default:
		return (r % 5) << 40 | (r % 3);
	}
}

TEST(radix_sort16_matches_a_stable_sort)
{
	enum { ROUNDS = 400, MAXN = 3000 };
	struct rec *a = malloc(MAXN * sizeof(*a));
	struct rec *want = malloc(MAXN * sizeof(*want));
	struct rec *tmp = malloc(MAXN * sizeof(*tmp));
	uint64_t seed = test_seed(0x5047ULL);
	int round;

	ASSERT_TRUE(a && want && tmp);
	for (round = 0; round < ROUNDS; round++) {
		size_t n = xorshift64(&seed) % MAXN, i;
		int shape = round % 4;
		unsigned int byte = (unsigned int)(xorshift64(&seed) % 8);

		for (i = 0; i < n; i++) {
			a[i].key = key_of(&seed, shape, byte);
			a[i].pos = (uint32_t)i;
			a[i].check = check_of(a[i].key, (uint32_t)i);
		}
		memcpy(want, a, n * sizeof(*a));
		qsort(want, n, sizeof(*want), stable_cmp);
		md_radix_sort16(a, tmp, n);
		ASSERT_EQ(0, memcmp(a, want, n * sizeof(*a))) TH_LOG(
			"round %d n %zu shape %d", round, n, shape);
		for (i = 0; i < n; i++)
			ASSERT_EQ(check_of(a[i].key, a[i].pos), a[i].check);
	}
	free(a);
	free(want);
	free(tmp);
}

TEST(sort_kv_is_the_same_sort)
{
	enum { N = 5000 };
	struct md_kv *kv = malloc(N * sizeof(*kv));
	struct rec *want = malloc(N * sizeof(*want));
	uint64_t seed = test_seed(0x4b56ULL);
	size_t i;

	ASSERT_TRUE(kv && want);
	for (i = 0; i < N; i++) {
		kv[i].key = xorshift64(&seed) % 1000;
		kv[i].idx = (uint32_t)i;
		want[i].key = kv[i].key;
		want[i].pos = (uint32_t)i;
	}
	qsort(want, N, sizeof(*want), stable_cmp);
	ASSERT_EQ(0, md_sort_kv(kv, N));
	for (i = 0; i < N; i++) {
		ASSERT_EQ(want[i].key, kv[i].key);
		ASSERT_EQ(want[i].pos, kv[i].idx);
	}
	/* Nothing to do: empty, one, all equal. */
	ASSERT_EQ(0, md_sort_kv(kv, 0));
	ASSERT_EQ(0, md_sort_kv(kv, 1));
	for (i = 0; i < N; i++)
		kv[i] = (struct md_kv){ 7, (uint32_t)(N - i) };
	ASSERT_EQ(0, md_sort_kv(kv, N));
	for (i = 0; i < N; i++)
		ASSERT_EQ((uint32_t)(N - i), kv[i].idx);
	free(kv);
	free(want);
}

TEST_HARNESS_MAIN
