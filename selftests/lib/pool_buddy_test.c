// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the pools' binary buddy (lib/pool_buddy.c) against a
 * reference model that knows every unit. Seeded random allocations and
 * frees; after each step the buddy must agree with the model on what is
 * free, on the largest free aligned block, and on whether a request fits.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmath.h"
#include "pool_internal.h"
#include "test_util.h"
#include "kselftest_harness.h"

struct live {
	uint64_t off, units;
};

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return xorshift64(&rng);
}

/* Is [off, off + n) free in the model? */
static bool all_free(const bool *used, uint64_t off, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (used[off + i])
			return false;
	return true;
}

/* The largest fully free aligned power of two in the model, in units. */
static uint64_t model_largest(const bool *used, unsigned int order)
{
	unsigned int k;
	uint64_t off;

	for (k = order + 1; k-- > 0; )
		for (off = 0; off < 1ull << order; off += 1ull << k)
			if (all_free(used, off, 1ull << k))
				return 1ull << k;
	return 0;
}

static void run(struct __test_metadata *_metadata, unsigned int order,
		int steps, uint64_t maxreq)
{
	uint64_t total = 1ull << order, free_units = total;
	bool *used = calloc(total, sizeof(*used));
	struct live *lv = calloc(total, sizeof(*lv));
	struct mbuddy b;
	int n = 0, s;

	ASSERT_NE(NULL, used);
	ASSERT_EQ(0, mbuddy_init(&b, order));
	EXPECT_EQ(total, mbuddy_largest(&b));
	for (s = 0; s < steps; s++) {
		if (n && rnd() % 100 < 45) {
			int k = (int)(rnd() % n);
			uint64_t i;

			mbuddy_free(&b, lv[k].off, lv[k].units);
			for (i = 0; i < lv[k].units; i++)
				used[lv[k].off + i] = false;
			free_units += lv[k].units;
			lv[k] = lv[--n];
		} else {
			uint64_t want = 1 + rnd() % maxreq, i, off;
			uint64_t align = 1ull << md_ceil_log2(want);
			bool fits = false;
			int64_t got = mbuddy_alloc(&b, want);

			for (off = 0; off + align <= total && !fits;
			     off += align)
				fits = all_free(used, off, align);
			ASSERT_EQ(fits, got >= 0) {
				TH_LOG("step %d: %llu units", s,
				       (unsigned long long)want);
			}
			if (got < 0)
				continue;
			ASSERT_EQ(0, (uint64_t)got % align);
			ASSERT_TRUE(all_free(used, (uint64_t)got, want));
			for (i = 0; i < want; i++)
				used[got + i] = true;
			free_units -= want;
			lv[n].off = (uint64_t)got;
			lv[n].units = want;
			n++;
		}
		ASSERT_EQ(free_units, b.free_units);
		if (s % 16 == 0 || order <= 6)
			ASSERT_EQ(model_largest(used, order),
				  mbuddy_largest(&b));
	}
	/* Everything back: one block of the whole order again. */
	while (n) {
		n--;
		mbuddy_free(&b, lv[n].off, lv[n].units);
	}
	EXPECT_EQ(total, b.free_units);
	EXPECT_EQ(total, mbuddy_largest(&b));
	EXPECT_EQ(1, b.nfree[order]);
	mbuddy_fini(&b);
	free(used);
	free(lv);
}

TEST(buddy_small_region_exhaustive_checks)
{
	run(_metadata, 6, 20000, 20);
}

TEST(buddy_1024_units_random)
{
	run(_metadata, 10, 30000, 100);
}

TEST(buddy_large_requests)
{
	run(_metadata, 10, 5000, 700);
}

TEST(buddy_trim_exact)
{
	struct mbuddy b;

	ASSERT_EQ(0, mbuddy_init(&b, 4));	/* 16 units */
	EXPECT_EQ(0, mbuddy_alloc(&b, 5));	/* [0,5) of [0,8) */
	EXPECT_EQ(11, b.free_units);
	EXPECT_EQ(8, mbuddy_largest(&b));
	EXPECT_EQ(5, mbuddy_alloc(&b, 1));	/* the trimmed tail */
	EXPECT_EQ(6, mbuddy_alloc(&b, 2));
	EXPECT_EQ(8, mbuddy_alloc(&b, 8));
	EXPECT_EQ(-1, mbuddy_alloc(&b, 1));
	EXPECT_EQ(0, b.free_units);
	EXPECT_EQ(-1, mbuddy_alloc(&b, 17));
	EXPECT_EQ(-1, mbuddy_alloc(&b, 0));
	mbuddy_free(&b, 0, 5);
	mbuddy_free(&b, 6, 2);
	EXPECT_EQ(4, mbuddy_largest(&b));	/* [0,4); 4 is split off */
	mbuddy_free(&b, 5, 1);
	EXPECT_EQ(8, mbuddy_largest(&b));
	mbuddy_free(&b, 8, 8);
	EXPECT_EQ(16, mbuddy_largest(&b));
	EXPECT_EQ(1, b.nfree[4]);
	mbuddy_fini(&b);
	EXPECT_EQ(-EINVAL, mbuddy_init(&b, MB_ORDERS));
}

TEST_HARNESS_MAIN
