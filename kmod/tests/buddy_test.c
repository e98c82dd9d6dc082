// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the buddy allocator (kmod/buddy.c), driven through the symbols
 * metadef.ko exports for tests. Every case ends with the full invariant
 * check (md_buddy_check) in the suite's exit hook.
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "buddy.h"

#define CHUNK	SZ_4K

struct buddy_ctx {
	struct md_buddy mm;
	bool inited;
};

static struct md_buddy *setup(struct kunit *test, u64 size, u64 chunk)
{
	struct buddy_ctx *ctx = test->priv;

	KUNIT_ASSERT_FALSE(test, ctx->inited);
	KUNIT_ASSERT_EQ(test, md_buddy_init(&ctx->mm, size, chunk), 0);
	ctx->inited = true;
	KUNIT_ASSERT_EQ(test, md_buddy_check(&ctx->mm), 0);
	return &ctx->mm;
}

static int buddy_test_init(struct kunit *test)
{
	test->priv = kunit_kzalloc(test, sizeof(struct buddy_ctx), GFP_KERNEL);
	return test->priv ? 0 : -ENOMEM;
}

static void buddy_test_exit(struct kunit *test)
{
	struct buddy_ctx *ctx = test->priv;

	if (!ctx->inited)
		return;
	/* The invariant checker runs after every case. */
	KUNIT_EXPECT_EQ(test, md_buddy_check(&ctx->mm), 0);
	md_buddy_fini(&ctx->mm);
}

/* A deterministic generator, seeded per case and logged for reproduction. */
struct rng {
	u64 s;
};

static void rng_seed(struct kunit *test, struct rng *r)
{
	r->s = get_random_u64() | 1;
	kunit_info(test, "seed %llu\n", r->s);
}

static u64 rng_next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static u64 rng_below(struct rng *r, u64 n)
{
	return n ? rng_next(r) % n : 0;
}

static struct md_buddy_alloc *allocs(struct kunit *test, size_t n)
{
	struct md_buddy_alloc *a = kunit_kcalloc(test, n, sizeof(*a), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, a);
	return a;
}

static void free_all(struct kunit *test, struct md_buddy *mm,
		     struct md_buddy_alloc *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].live)
			KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a[i]), 0);
}

/* ------------------------------------------------------------------ */

static void init_pow2_and_not(struct kunit *test)
{
	struct md_buddy mm;

	KUNIT_ASSERT_EQ(test, md_buddy_init(&mm, SZ_16M, CHUNK), 0);
	KUNIT_EXPECT_EQ(test, mm.nr_roots, 1u);
	KUNIT_EXPECT_EQ(test, mm.avail, (u64)SZ_16M);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(&mm), (u64)SZ_16M);
	KUNIT_EXPECT_EQ(test, md_buddy_check(&mm), 0);
	md_buddy_fini(&mm);

	/* 16M + 4M + 12K + a partial chunk that is dropped: four roots. */
	KUNIT_ASSERT_EQ(test, md_buddy_init(&mm, SZ_16M + SZ_4M + 3 * CHUNK + 100,
					    CHUNK), 0);
	KUNIT_EXPECT_EQ(test, mm.nr_roots, 4u);
	KUNIT_EXPECT_EQ(test, mm.size, (u64)SZ_16M + SZ_4M + 3 * CHUNK);
	KUNIT_EXPECT_EQ(test, mm.avail, mm.size);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(&mm), (u64)SZ_16M);
	KUNIT_EXPECT_EQ(test, md_buddy_check(&mm), 0);
	md_buddy_fini(&mm);

	KUNIT_EXPECT_EQ(test, md_buddy_init(&mm, SZ_1M, 3000), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_init(&mm, SZ_1M, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_init(&mm, CHUNK - 1, CHUNK), -EINVAL);
}

/* A cap on the block size: no allocation spans two capped roots. */
static void capped_roots(struct kunit *test)
{
	struct buddy_ctx *ctx = test->priv;
	struct md_buddy *mm = &ctx->mm;
	struct md_buddy_alloc a[5] = {}, big = {};
	size_t i;

	KUNIT_EXPECT_EQ(test, md_buddy_init_capped(mm, SZ_16M, CHUNK, SZ_4M + 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_init_capped(mm, SZ_16M, CHUNK, CHUNK / 2), -EINVAL);
	KUNIT_ASSERT_EQ(test, md_buddy_init_capped(mm, SZ_16M + 3 * CHUNK, CHUNK,
						   SZ_4M), 0);
	ctx->inited = true;
	KUNIT_EXPECT_EQ(test, mm->nr_roots, 6u);	/* 4 x 4M, 8K, 4K */
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_4M);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &big, SZ_4M + CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), -ENOSPC);
	for (i = 0; i < 4; i++) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[i], SZ_4M, 0, 0, 0, 0,
						     GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, a[i].offset, (u64)i * SZ_4M);
	}
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[4], 3 * CHUNK, 0, SZ_16M, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, mm->avail, 0ull);
	free_all(test, mm, a, ARRAY_SIZE(a));
	/* Freed 4M blocks do not merge across roots. */
	KUNIT_EXPECT_EQ(test, mm->nr_free[10], 4ull);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_4M);
}

static void invalid_requests_change_nothing(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_1M, CHUNK);
	struct md_buddy_alloc a = {};

	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, 0, 0, 0, 0, 0, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 3 * CHUNK, 0, 0, 0, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 0, 0, BIT(7), GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 0, SZ_1M,
					     MD_BUDDY_RANGE | MD_BUDDY_EXACT, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, SZ_64K, SZ_64K,
					     MD_BUDDY_RANGE, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, SZ_2M, SZ_4M,
					     MD_BUDDY_RANGE, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 100, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, 2 * CHUNK, 0, SZ_1M - CHUNK, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), -EINVAL);
	/* Too big: no space, not malformed. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, SZ_1M + 1, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, U64_MAX, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, SZ_2M, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, SZ_64K, 0, 0, SZ_32K,
					     MD_BUDDY_RANGE, GFP_KERNEL), -ENOSPC);

	KUNIT_EXPECT_FALSE(test, a.live);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_1M);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_1M);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
}

static void double_free_refused(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_1M, CHUNK);
	struct md_buddy_alloc a = {}, b = {};

	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a, 3 * CHUNK, 0, 0, 0, 0, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &b, CHUNK, 0, 0, 0, 0, GFP_KERNEL), 0);
	/* A live record cannot be reused for a second allocation. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 0, 0, 0, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a), 0);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_1M - CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a), -EINVAL);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_1M - CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &b), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_1M);
}

/* Allocate the whole pool, then one more chunk: refused; free: whole again. */
static void alloc_limit(struct kunit *test)
{
	u64 size = SZ_8M + SZ_1M + CHUNK;	/* three roots */
	struct md_buddy *mm = setup(test, size, CHUNK);
	struct md_buddy_alloc all = {}, one = {};

	/* Without EXACT the whole must fit in one block: the 8M root at most. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &all, size, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &all, size, 0, 0, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, all.offset, 0ull);
	KUNIT_EXPECT_EQ(test, all.size, size);
	KUNIT_EXPECT_EQ(test, mm->avail, 0ull);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), 0ull);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &one, CHUNK, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &all), 0);
	KUNIT_EXPECT_EQ(test, mm->avail, size);
	KUNIT_EXPECT_EQ(test, mm->nr_free[11], 1ull);	/* 8M root whole again */

	/* The largest root in one piece, then it is gone. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &all, SZ_8M, 0, 0, 0, 0, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_1M);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &all), 0);
}

/* Every chunk one by one, then nothing; freeing all coalesces fully. */
static void alloc_every_chunk(struct kunit *test)
{
	const size_t n = SZ_4M / CHUNK;
	struct md_buddy *mm = setup(test, SZ_4M, CHUNK);
	struct md_buddy_alloc *a = allocs(test, n + 1);
	size_t i;

	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[i], 1, 0, 0, 0, 0,
						     GFP_KERNEL), 0);
		/* Bottom-up: chunk i lands at offset i. */
		KUNIT_EXPECT_EQ(test, a[i].offset, (u64)i * CHUNK);
	}
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a[n], 1, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	free_all(test, mm, a, n);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_4M);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_4M);
	KUNIT_EXPECT_EQ(test, mm->nr_free[10], 1ull);
}

/*
 * Optimistic: a pool that is exactly one block of each order 0..max fits
 * one allocation of each order, largest first, and then nothing more.
 */
static void optimistic(struct kunit *test)
{
	const unsigned int max = 12;
	u64 size = (BIT_ULL(max + 1) - 1) * CHUNK;
	struct md_buddy *mm = setup(test, size, CHUNK);
	struct md_buddy_alloc *a = allocs(test, max + 2);
	int k;

	KUNIT_EXPECT_EQ(test, mm->nr_roots, max + 1);
	for (k = max; k >= 0; k--)
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[k], BIT_ULL(k) * CHUNK,
						     0, 0, 0, 0, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, mm->avail, 0ull);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a[max + 1], CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), -ENOSPC);
	free_all(test, mm, a, max + 1);
	KUNIT_EXPECT_EQ(test, mm->avail, size);
}

/*
 * Pessimistic: fill with single chunks, free every other one. Half the pool
 * is free yet nothing larger than a chunk fits; freeing the rest restores
 * one whole block.
 */
static void pessimistic(struct kunit *test)
{
	const size_t n = SZ_2M / CHUNK;
	struct md_buddy *mm = setup(test, SZ_2M, CHUNK);
	struct md_buddy_alloc *a = allocs(test, n), big = {}, one = {};
	size_t i;

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[i], CHUNK, 0, 0, 0, 0,
						     GFP_KERNEL), 0);
	for (i = 0; i < n; i += 2)
		KUNIT_ASSERT_EQ(test, md_buddy_free(mm, &a[i]), 0);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_1M);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)CHUNK);
	KUNIT_EXPECT_EQ(test, mm->nr_free[0], (u64)n / 2);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &big, 2 * CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &big, 2 * CHUNK, 0, 0, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), -ENOSPC);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &one, CHUNK, 0, 0, 0,
					     MD_BUDDY_TOPDOWN, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, one.offset, (u64)SZ_2M - 2 * CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &one), 0);

	for (i = 1; i < n; i += 2)
		KUNIT_ASSERT_EQ(test, md_buddy_free(mm, &a[i]), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_2M);
	KUNIT_EXPECT_EQ(test, mm->nr_free[9], 1ull);
}

/*
 * Pathological fragmentation: 50 % of a pool free in isolated chunks still
 * serves chunk requests, and fails larger ones cleanly every time.
 */
static void pathological_half_free(struct kunit *test)
{
	const size_t n = SZ_8M / CHUNK;
	struct md_buddy *mm = setup(test, SZ_8M, CHUNK);
	struct md_buddy_alloc *a = allocs(test, n), *b = allocs(test, n / 2);
	struct md_buddy_alloc x = {};
	size_t i, k;

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[i], CHUNK, 0, 0, 0, 0,
						     GFP_KERNEL), 0);
	for (i = 1; i < n; i += 2)
		KUNIT_ASSERT_EQ(test, md_buddy_free(mm, &a[i]), 0);

	for (k = 1; k <= 11; k++)
		KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &x, BIT_ULL(k) * CHUNK, 0,
						     0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_4M);

	/* Every hole is usable, and exactly the holes. */
	for (i = 0; i < n / 2; i++) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &b[i], CHUNK, 0, 0, 0, 0,
						     GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, b[i].offset % (2 * CHUNK), (u64)CHUNK);
	}
	KUNIT_EXPECT_EQ(test, mm->avail, 0ull);
	free_all(test, mm, b, n / 2);
	free_all(test, mm, a, n);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_8M);
}

static void alignment(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_16M + SZ_2M, CHUNK);
	struct md_buddy_alloc a[8] = {};
	u64 aligns[] = { SZ_16M, 0, CHUNK, SZ_64K, SZ_1M, SZ_2M, SZ_8M, SZ_32K };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(aligns); i++) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[i], CHUNK + 1, aligns[i],
						     0, 0, 0, GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, a[i].size, 2ull * CHUNK);
		if (aligns[i])
			KUNIT_EXPECT_TRUE(test, IS_ALIGNED(a[i].offset, aligns[i]));
	}
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a[0], CHUNK, SZ_16M, 0, 0, 0,
					     GFP_KERNEL), -EINVAL);	/* still live */
	free_all(test, mm, a, ARRAY_SIZE(a));
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_16M + SZ_2M);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_16M);
}

static void non_pow2_sizes_trim(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_1M, CHUNK);
	struct md_buddy_alloc a = {}, b = {};

	/* 5 chunks: carved from an 8-chunk block, the other 3 stay free. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a, 5 * CHUNK, 0, 0, 0, 0, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a.size, 5ull * CHUNK);
	KUNIT_EXPECT_EQ(test, mm->avail, (u64)SZ_1M - 5 * CHUNK);
	/* The 3 trimmed chunks serve the next small request, right after. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &b, CHUNK, 0, 0, 0, 0, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, b.offset, a.offset + 5 * CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &b), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_1M);
}

static void range_and_exact(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_4M, CHUNK);
	struct md_buddy_alloc a = {}, b = {}, c = {}, d = {};

	/* Exact, unaligned to its size: 3 chunks at chunk 5. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a, 3 * CHUNK, 0, 5 * CHUNK, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a.offset, 5ull * CHUNK);
	/* Overlapping exact requests fail, adjacent ones succeed. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &b, 2 * CHUNK, 0, 4 * CHUNK, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &b, CHUNK, 0, 7 * CHUNK, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), -ENOSPC);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &b, CHUNK, 0, 8 * CHUNK, 0,
					     MD_BUDDY_EXACT, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	/* Range: inside [1M, 1M + 256K), bottom-up and top-down. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &c, SZ_64K, 0, SZ_1M,
					     SZ_1M + SZ_256K, MD_BUDDY_RANGE,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, c.offset, (u64)SZ_1M);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &d, SZ_64K, 0, SZ_1M,
					     SZ_1M + SZ_256K,
					     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, d.offset, (u64)SZ_1M + SZ_256K - SZ_64K);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &c), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &d), 0);

	/* Any 4K-aligned start in the range will do without an alignment... */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &c, SZ_64K, 0, SZ_1M + CHUNK,
					     SZ_1M + SZ_128K, MD_BUDDY_RANGE,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, c.offset, (u64)SZ_1M + CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &c), 0);
	/* ...but a 64K-aligned 64K block does not fit before 1M + 124K. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &c, SZ_64K, SZ_64K, SZ_1M + CHUNK,
					     SZ_1M + SZ_128K - CHUNK, MD_BUDDY_RANGE,
					     GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &b), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_4M);
}

static void topdown(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_8M + SZ_1M, CHUNK);
	struct md_buddy_alloc a = {}, b = {};

	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a, 3 * CHUNK, 0, 0, 0,
					     MD_BUDDY_TOPDOWN, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a.offset + a.size, (u64)SZ_8M + SZ_1M);
	/*
	 * Bottom-up is best fit: the smallest free block that holds it, which
	 * is left over in the 1M root, not the lowest address of the 8M one.
	 */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &b, 3 * CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_GE(test, b.offset, (u64)SZ_8M);
	KUNIT_EXPECT_EQ(test, mm->nr_free[11], 1ull);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &b), 0);
	/* With the 1M root whole again, top-down takes its last pages. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a, SZ_1M + CHUNK, 0, 0, 0,
					     MD_BUDDY_TOPDOWN, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a.offset, (u64)SZ_8M - SZ_1M - CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &a), 0);
}

/*
 * Smoke: random sizes, alignments, flags and frees against a shadow bitmap
 * of allocated chunks; invariants checked along the way; all freed at the
 * end gives the pool back whole.
 */
static void smoke_random(struct kunit *test)
{
	const u64 size = SZ_32M + SZ_4M + 7 * CHUNK;
	const size_t slots = 512, steps = 6000;
	struct md_buddy *mm = setup(test, size, CHUNK);
	struct md_buddy_alloc *a = allocs(test, slots);
	unsigned long *shadow;
	size_t nchunks = size / CHUNK, i, ok = 0, nospc = 0;
	struct rng r;

	shadow = kunit_kzalloc(test, BITS_TO_LONGS(nchunks) * sizeof(long),
			       GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, shadow);
	rng_seed(test, &r);

	for (i = 0; i < steps; i++) {
		struct md_buddy_alloc *x = &a[rng_below(&r, slots)];
		u64 first, n;

		if (x->live) {
			bitmap_clear(shadow, x->offset / CHUNK, x->size / CHUNK);
			KUNIT_ASSERT_EQ(test, md_buddy_free(mm, x), 0);
		} else {
			unsigned int order = rng_below(&r, 12);
			u64 sz = 1 + rng_below(&r, BIT_ULL(order) * CHUNK);
			u64 align = rng_below(&r, 4) ? 0 : BIT_ULL(rng_below(&r, 22));
			unsigned int flags = rng_below(&r, 2) ? MD_BUDDY_TOPDOWN : 0;
			u64 start = 0, end = 0;
			int ret;

			switch (rng_below(&r, 4)) {
			case 0:
				flags |= MD_BUDDY_RANGE;
				start = rng_below(&r, size);
				end = start + 1 + rng_below(&r, size - start);
				break;
			case 1:
				flags = MD_BUDDY_EXACT;
				align = 0;
				start = rng_below(&r, nchunks) * CHUNK;
				if (sz > size - start)
					sz = size - start;
				break;
			}
			ret = md_buddy_alloc(mm, x, sz, align, start, end, flags,
					     GFP_KERNEL);
			if (ret == -ENOSPC) {
				nospc++;
				continue;
			}
			KUNIT_ASSERT_EQ(test, ret, 0);
			ok++;
			KUNIT_EXPECT_EQ(test, x->size, round_up(sz, CHUNK));
			KUNIT_EXPECT_LE(test, x->offset + x->size, size);
			if (align)
				KUNIT_EXPECT_TRUE(test, IS_ALIGNED(x->offset, align));
			if (flags & MD_BUDDY_RANGE) {
				KUNIT_EXPECT_GE(test, x->offset, start);
				KUNIT_EXPECT_LE(test, x->offset + x->size, end);
			}
			if (flags & MD_BUDDY_EXACT)
				KUNIT_EXPECT_EQ(test, x->offset, start);
			first = x->offset / CHUNK;
			n = x->size / CHUNK;
			/* The shadow says these chunks were all free. */
			KUNIT_ASSERT_GE(test, find_next_bit(shadow, first + n, first),
					(unsigned long)(first + n));
			bitmap_set(shadow, first, n);
		}
		KUNIT_ASSERT_EQ(test, mm->avail,
				size - (u64)bitmap_weight(shadow, nchunks) * CHUNK);
		if (i % 500 == 0)
			KUNIT_ASSERT_EQ(test, md_buddy_check(mm), 0);
	}
	kunit_info(test, "%zu allocations, %zu refused for space\n", ok, nospc);
	KUNIT_EXPECT_GT(test, ok, (size_t)1000);
	free_all(test, mm, a, slots);
	KUNIT_EXPECT_EQ(test, mm->avail, size);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), (u64)SZ_32M);
	KUNIT_EXPECT_EQ(test, mm->nr_free[0], 1ull);	/* the 7-chunk tail: 4+2+1 */
	KUNIT_EXPECT_EQ(test, mm->nr_free[1], 1ull);
	KUNIT_EXPECT_EQ(test, mm->nr_free[2], 1ull);
}

/* The checker itself must catch a corrupted allocator. */
static void checker_catches_corruption(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_1M, CHUNK);

	mm->avail -= CHUNK;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	mm->avail += CHUNK;
	mm->nr_free[mm->max_order]++;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	mm->nr_free[mm->max_order]--;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
}

static struct kunit_case md_buddy_cases[] = {
	KUNIT_CASE(init_pow2_and_not),
	KUNIT_CASE(capped_roots),
	KUNIT_CASE(invalid_requests_change_nothing),
	KUNIT_CASE(double_free_refused),
	KUNIT_CASE(alloc_limit),
	KUNIT_CASE(alloc_every_chunk),
	KUNIT_CASE(optimistic),
	KUNIT_CASE(pessimistic),
	KUNIT_CASE(pathological_half_free),
	KUNIT_CASE(alignment),
	KUNIT_CASE(non_pow2_sizes_trim),
	KUNIT_CASE(range_and_exact),
	KUNIT_CASE(topdown),
	KUNIT_CASE(smoke_random),
	KUNIT_CASE(checker_catches_corruption),
	{}
};

static struct kunit_suite md_buddy_suite = {
	.name = "metadef_buddy",
	.init = buddy_test_init,
	.exit = buddy_test_exit,
	.test_cases = md_buddy_cases,
};

kunit_test_suite(md_buddy_suite);
