// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the bit-math helpers (lib/bitmath.h) against naive
 * loops, and the seeded generators (lib/random.h): reproducible, the
 * two ways of writing SplitMix64 agree, and their low bits spread.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bitmath.h"
#include "random.h"
#include "test_util.h"
#include "kselftest_harness.h"

static unsigned int naive_ilog2(uint64_t n)
{
	unsigned int k = 0;

	while (n >>= 1)
		k++;
	return k;
}

static unsigned int naive_ceil_log2(uint64_t n)
{
	unsigned int k = 0;

	while (k < 64 && ((uint64_t)1 << k) < n)
		k++;
	return k;
}

static unsigned int naive_ctz(uint64_t n)
{
	unsigned int k = 0;

	while (!(n & 1)) {
		n >>= 1;
		k++;
	}
	return k;
}

static int naive_is_pow2(uint64_t n)
{
	unsigned int k;

	for (k = 0; k < 64; k++)
		if (n == (uint64_t)1 << k)
			return 1;
	return 0;
}

static void check_one(struct __test_metadata *_metadata, uint64_t v)
{
	ASSERT_EQ(naive_is_pow2(v), md_is_pow2(v)) TH_LOG("v %llx",
		(unsigned long long)v);
	ASSERT_EQ(naive_ceil_log2(v), md_ceil_log2(v));
	if (v <= (uint64_t)1 << 63)
		ASSERT_EQ((uint64_t)1 << naive_ceil_log2(v), md_pow2_ceil(v));
	if (v) {
		ASSERT_EQ(naive_ilog2(v), md_ilog2(v));
		ASSERT_EQ(naive_ctz(v), md_ctz64(v));
	}
}

TEST(edges_and_random_words_match_naive_loops)
{
	uint64_t seed = test_seed(0xb17b17b17ULL);
	unsigned int k;
	int i;

	for (k = 0; k < 64; k++) {
		uint64_t p = (uint64_t)1 << k;

		check_one(_metadata, p);
		check_one(_metadata, p - 1);
		check_one(_metadata, p + 1);
		check_one(_metadata, ~p);
	}
	check_one(_metadata, 0);
	check_one(_metadata, UINT64_MAX);
	for (i = 0; i < 100000; i++) {
		uint64_t r = xorshift64(&seed);

		/* Every magnitude, not only ~2^63. */
		check_one(_metadata, r >> (r & 63));
	}
}

TEST(xorshift_reproducible_never_zero_spread)
{
	uint64_t a = test_seed(12345), b = a, cnt[16] = { 0 };
	int i;

	for (i = 0; i < 160000; i++) {
		uint64_t x = md_xorshift64(&a);

		ASSERT_EQ(x, md_xorshift64(&b));
		ASSERT_NE(0u, x);
		cnt[x & 15]++;
	}
	/* 10000 expected per bucket; 5 sigma is 500. */
	for (i = 0; i < 16; i++) {
		EXPECT_GT(cnt[i], 9500u);
		EXPECT_LT(cnt[i], 10500u);
	}
}

TEST(splitmix_stream_is_the_mixer_of_a_counter)
{
	uint64_t s = 0, seen[64], cnt[16] = { 0 };
	int i, j;

	/* State 0 is fine, and each output is md_mix64 of the old state. */
	for (i = 0; i < 64; i++) {
		uint64_t old = s;

		seen[i] = md_splitmix64(&s);
		ASSERT_EQ(md_mix64(old), seen[i]);
		ASSERT_EQ(old + MD_GOLDEN64, s);
		for (j = 0; j < i; j++)
			ASSERT_NE(seen[j], seen[i]);
	}
	for (i = 0; i < 160000; i++)
		cnt[md_mix64((uint64_t)i) & 15]++;
	for (i = 0; i < 16; i++) {
		EXPECT_GT(cnt[i], 9500u);
		EXPECT_LT(cnt[i], 10500u);
	}
}

TEST_HARNESS_MAIN
