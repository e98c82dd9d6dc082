// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the buddy allocator (kmod/buddy.c), driven through the symbols
 * metadef.ko exports for tests. Every case ends with the full invariant
 * check (md_buddy_check) in the suite's exit hook.
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/log2.h>
#include <linux/math64.h>
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

/*
 * Hold chunks [x, end), all free, as the aligned power-of-two pieces that
 * make them up: each is asked for with a window as large as itself, which
 * leaves one place to put it. Uses records @a[*n] onwards, of @max.
 */
static void hold_span(struct kunit *test, struct md_buddy *mm, u64 x, u64 end,
		      struct md_buddy_alloc *a, size_t *n, size_t max)
{
	while (x < end) {
		unsigned int k = fls64(end - x) - 1;
		u64 off, len;

		KUNIT_ASSERT_LT(test, *n, max);
		if (x)
			k = min_t(unsigned int, k, __ffs64(x));
		off = x * CHUNK;
		len = BIT_ULL(k) * CHUNK;
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[*n], len, 0, off,
						     off + len, MD_BUDDY_RANGE,
						     GFP_KERNEL), 0);
		KUNIT_ASSERT_EQ(test, a[*n].offset, off);
		(*n)++;
		x += BIT_ULL(k);
	}
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
	struct md_buddy_alloc a[6] = {}, big = {};
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
	/* The two small roots after them, smallest fit first. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[4], 2 * CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[4].offset, (u64)SZ_16M);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[5], CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[5].offset, (u64)SZ_16M + 2 * CHUNK);
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
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 3 * CHUNK, 0, 0, 0,
					     GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 0, 0, BIT(7), GFP_KERNEL), -EINVAL);
	/* The bit that once asked for an exact offset is no flag any more. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 0, SZ_1M,
					     MD_BUDDY_RANGE | BIT(2), GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, SZ_64K, SZ_64K,
					     MD_BUDDY_RANGE, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, SZ_2M, SZ_4M,
					     MD_BUDDY_RANGE, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, SZ_64K, SZ_32K,
					     MD_BUDDY_RANGE, GFP_KERNEL), -EINVAL);
	/* Too big: no space, not malformed. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, SZ_1M + 1, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, U64_MAX, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, SZ_2M, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, SZ_64K, 0, 0, SZ_32K,
					     MD_BUDDY_RANGE, GFP_KERNEL), -ENOSPC);
	/* A chunk's worth of bytes, but not one whole chunk inside them. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 100, CHUNK + 100,
					     MD_BUDDY_RANGE, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a, CHUNK, 0, 100, CHUNK + 100,
					     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
					     GFP_KERNEL), -ENOSPC);

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
	struct md_buddy_alloc roots[3] = {}, all = {}, one = {};
	size_t n = 0;

	/* One allocation is one block: the 8M root at most, window or not. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &all, size, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &all, size, 0, 0, size,
					     MD_BUDDY_RANGE, GFP_KERNEL), -ENOSPC);
	hold_span(test, mm, 0, size / CHUNK, roots, &n, ARRAY_SIZE(roots));
	KUNIT_EXPECT_EQ(test, n, ARRAY_SIZE(roots));
	KUNIT_EXPECT_EQ(test, mm->avail, 0ull);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), 0ull);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &one, CHUNK, 0, 0, 0, 0, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &one, CHUNK, 0, 0, size,
					     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
					     GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	free_all(test, mm, roots, n);
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
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &big, 2 * CHUNK, 0, 0, SZ_2M,
					     MD_BUDDY_RANGE, GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &big, 2 * CHUNK, 0, 0, SZ_2M,
					     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
					     GFP_KERNEL), -ENOSPC);
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

static void range(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_4M, CHUNK);
	struct md_buddy_alloc a = {}, b = {}, c = {}, d = {};

	/* A window just as large, unaligned to the size: 3 chunks at chunk 5. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a, 3 * CHUNK, 0, 5 * CHUNK,
					     8 * CHUNK, MD_BUDDY_RANGE,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a.offset, 5ull * CHUNK);
	KUNIT_EXPECT_EQ(test, a.size, 3ull * CHUNK);
	/* Windows that overlap it fail, the one beside it does not. */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &b, 2 * CHUNK, 0, 4 * CHUNK,
					     6 * CHUNK, MD_BUDDY_RANGE,
					     GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &b, CHUNK, 0, 7 * CHUNK,
					     8 * CHUNK, MD_BUDDY_RANGE,
					     GFP_KERNEL), -ENOSPC);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &b, CHUNK, 0, 8 * CHUNK,
					     9 * CHUNK,
					     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, b.offset, 8ull * CHUNK);
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
			bool tight = false;
			int ret;

			switch (rng_below(&r, 4)) {
			case 0:
				flags |= MD_BUDDY_RANGE;
				start = rng_below(&r, size);
				end = start + 1 + rng_below(&r, size - start);
				break;
			case 1:
				/* A window as large as the size: one place. */
				flags |= MD_BUDDY_RANGE;
				tight = true;
				align = 0;
				start = rng_below(&r, nchunks) * CHUNK;
				if (sz > size - start)
					sz = size - start;
				end = start + round_up(sz, CHUNK);
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
			if (tight)
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

/* --------------------------------------- bitmaps and their summary levels */

/* Pieces hold_span() may need for one span: two per bit of a position. */
#define SPAN_PIECES	(2 * 64)

/*
 * Exactly the chunks @holes (ascending, no two of them buddies) of a fresh
 * n-chunk pool are free afterwards: everything else is held by @seg, which
 * has SPAN_PIECES records per span between the holes.
 */
static void make_holes(struct kunit *test, struct md_buddy *mm, u64 n,
		       const u64 *holes, size_t nh, struct md_buddy_alloc *seg)
{
	u64 x = 0;
	size_t i, s = 0;

	for (i = 0; i <= nh; i++) {
		u64 stop = i < nh ? holes[i] : n;

		hold_span(test, mm, x, stop, seg, &s, (nh + 1) * SPAN_PIECES);
		x = stop + 1;
	}
	KUNIT_ASSERT_EQ(test, mm->avail, (u64)nh * CHUNK);
	/* Each hole's buddy is held: it is a free block of order 0. */
	KUNIT_ASSERT_EQ(test, mm->nr_free[0], (u64)nh);
	KUNIT_ASSERT_EQ(test, md_buddy_check(mm), 0);
}

/*
 * Free chunks at the edges of bitmap words and of summary words: the
 * lowest, highest, next and previous free block are found across them.
 */
static void levels_one(struct kunit *test, u64 n, unsigned int levels)
{
	static const u64 cand[] = { 0, 63, 64, 127, 128, 4031, 4032, 4095,
				    4096, 4159, 262143, 262144 };
	struct md_buddy *mm = kunit_kzalloc(test, sizeof(*mm), GFP_KERNEL);
	struct md_buddy_alloc *seg, *got;
	u64 holes[ARRAY_SIZE(cand) + 1];
	size_t nh = 0, i;

	KUNIT_ASSERT_NOT_NULL(test, mm);
	for (i = 0; i <= ARRAY_SIZE(cand); i++) {
		u64 c = i < ARRAY_SIZE(cand) ? cand[i] : n - 1;

		if (c >= n || (nh && (holes[nh - 1] >= c || holes[nh - 1] == (c ^ 1))))
			continue;
		holes[nh++] = c;
	}
	seg = allocs(test, (nh + 1) * SPAN_PIECES);
	got = allocs(test, nh + 1);

	KUNIT_ASSERT_EQ(test, md_buddy_init(mm, n * CHUNK, CHUNK), 0);
	KUNIT_EXPECT_EQ(test, mm->bits[0].nlevels, levels);
	make_holes(test, mm, n, holes, nh, seg);

	/* Bottom-up: the holes in ascending order, then nothing. */
	for (i = 0; i < nh; i++) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &got[i], CHUNK, 0, 0, 0, 0,
						     GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, got[i].offset, holes[i] * CHUNK);
	}
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &got[nh], CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), -ENOSPC);
	free_all(test, mm, got, nh);

	/* Top-down: descending. */
	for (i = nh; i-- > 0;) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &got[i], CHUNK, 0, 0, 0,
						     MD_BUDDY_TOPDOWN, GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, got[i].offset, holes[i] * CHUNK);
	}
	free_all(test, mm, got, nh);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	/* Next after a hole and previous before one, across words. */
	for (i = 0; i + 1 < nh; i++) {
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &got[0], CHUNK, 0,
						     (holes[i] + 1) * CHUNK, n * CHUNK,
						     MD_BUDDY_RANGE, GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, got[0].offset, holes[i + 1] * CHUNK);
		KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &got[0]), 0);
		KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &got[0], CHUNK, 0, 0,
						     holes[i + 1] * CHUNK,
						     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
						     GFP_KERNEL), 0);
		KUNIT_EXPECT_EQ(test, got[0].offset, holes[i] * CHUNK);
		KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &got[0]), 0);
	}
	/* Past the last hole, before the first: nothing. */
	if (holes[nh - 1] + 1 < n)
		KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &got[0], CHUNK, 0,
						     (holes[nh - 1] + 1) * CHUNK,
						     n * CHUNK, MD_BUDDY_RANGE,
						     GFP_KERNEL), -ENOSPC);
	if (holes[0])
		KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &got[0], CHUNK, 0, 0,
						     holes[0] * CHUNK,
						     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
						     GFP_KERNEL), -ENOSPC);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	free_all(test, mm, seg, (nh + 1) * SPAN_PIECES);
	KUNIT_EXPECT_EQ(test, mm->avail, n * CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	md_buddy_fini(mm);
}

static void bitmap_level_edges(struct kunit *test)
{
	levels_one(test, 64, 1);
	levels_one(test, 65, 2);
	levels_one(test, 4096, 2);
	levels_one(test, 4097, 3);
	levels_one(test, 262144, 3);
	levels_one(test, 262144 + 64 + 3, 4);
}

/*
 * A pool of tens of GiB: metadata within 0.1 % of it (about two bits per
 * chunk in fact), best fit, top-down, ranges inside and across roots.
 */
static void large_pool(struct kunit *test)
{
	const u64 g = SZ_1G, size = 96 * g + 5 * CHUNK;	/* 64G, 32G, 16K, 4K */
	struct md_buddy *mm = setup(test, size, CHUNK);
	struct md_buddy_alloc a[8] = {};
	u64 meta = mm->nr_words * sizeof(long);

	kunit_info(test, "%llu GiB pool: %llu KiB of bitmaps (%llu ppm)\n",
		   size >> 30, meta >> 10, div64_u64(meta * 1000000, size));
	KUNIT_EXPECT_LE(test, meta, size / 1000);
	KUNIT_EXPECT_EQ(test, mm->nr_roots, 4u);
	KUNIT_EXPECT_GE(test, mm->bits[0].nlevels, 4u);

	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[0], CHUNK, 0, 0, 0,
					     MD_BUDDY_TOPDOWN, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[0].offset, size - CHUNK);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[1], SZ_1M, 0, 0, 0,
					     MD_BUDDY_TOPDOWN, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[1].offset, 96 * g - SZ_1M);
	/* Best fit: the 2M block left over below it, not offset 0. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[2], SZ_2M, 0, 0, 0, 0,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[2].offset, 96 * g - SZ_4M);
	/*
	 * A window across the boundary of the two large roots: two chunks in
	 * it would span both, one fits on either side.
	 */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a[3], 2 * CHUNK, 0,
					     64 * g - CHUNK, 64 * g + CHUNK,
					     MD_BUDDY_RANGE, GFP_KERNEL), -ENOSPC);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[3], CHUNK, 0, 64 * g - CHUNK,
					     64 * g + CHUNK, MD_BUDDY_RANGE,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[3].offset, 64 * g - CHUNK);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[7], CHUNK, 0, 64 * g - CHUNK,
					     64 * g + CHUNK, MD_BUDDY_RANGE,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[7].offset, 64 * g);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[4], SZ_64K, 0, 48 * g + CHUNK,
					     49 * g, MD_BUDDY_RANGE, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[4].offset, 48 * g + CHUNK);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[5], SZ_64K, 0, g, 2 * g,
					     MD_BUDDY_RANGE | MD_BUDDY_TOPDOWN,
					     GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[5].offset, 2 * g - SZ_64K);
	/*
	 * The last chunks of the pool: five are free at 96G but in two roots
	 * (16K, and 4K whose last chunk a[0] holds), so only the 16K fits.
	 */
	KUNIT_EXPECT_EQ(test, md_buddy_alloc(mm, &a[6], 5 * CHUNK, 0, 96 * g,
					     size, MD_BUDDY_RANGE, GFP_KERNEL),
			-ENOSPC);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &a[6], 4 * CHUNK, 0, 96 * g,
					     size, MD_BUDDY_RANGE, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, a[6].offset, 96 * g);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	KUNIT_EXPECT_EQ(test, mm->avail, size - 7 * CHUNK - SZ_1M - SZ_2M - 2 * SZ_64K);
	free_all(test, mm, a, ARRAY_SIZE(a));
	KUNIT_EXPECT_EQ(test, mm->avail, size);
	KUNIT_EXPECT_EQ(test, md_buddy_largest(mm), 64 * g);
	KUNIT_EXPECT_EQ(test, mm->nr_free[24], 1ull);
	KUNIT_EXPECT_EQ(test, mm->nr_free[23], 1ull);
	KUNIT_EXPECT_EQ(test, mm->nr_free[2], 1ull);
	KUNIT_EXPECT_EQ(test, mm->nr_free[0], 1ull);

	/* Far too large for bitmaps: refused cleanly, not warned about. */
	KUNIT_EXPECT_EQ(test, md_buddy_init(&(struct md_buddy){}, U64_MAX, CHUNK),
			-ENOMEM);
}

/*
 * Placement against a model: the free blocks are rebuilt from a shadow map
 * of used chunks (the maximal aligned free blocks inside one root) and the
 * documented choice (lowest block of the smallest order; highest position;
 * lowest or highest position in a range, a range as large as the size
 * among them) is computed by brute force, for a plain and a capped pool.
 */
struct model {
	u64 n, full_end;
	unsigned int cap;
	unsigned long *used;
};

static unsigned int model_root_order(const struct model *m, u64 x)
{
	u64 base = m->full_end;
	int b;

	if (x < m->full_end)
		return m->cap;
	for (b = 63; b >= 0; b--) {
		if (!((m->n - m->full_end) & BIT_ULL(b)))
			continue;
		if (x < base + BIT_ULL(b))
			return b;
		base += BIT_ULL(b);
	}
	return 0;
}

static bool model_all_free(const struct model *m, u64 x, u64 len)
{
	return x + len <= m->n && find_next_bit(m->used, x + len, x) >= x + len;
}

static bool model_free_block(const struct model *m, u64 x, unsigned int j)
{
	unsigned int ro = model_root_order(m, x);

	if (j > ro || !model_all_free(m, x, BIT_ULL(j)))
		return false;
	return j == ro || !model_all_free(m, round_down(x, BIT_ULL(j + 1)),
					  BIT_ULL(j + 1));
}

/* Expected chunk offset, or U64_MAX for -ENOSPC. All in chunks. */
static u64 model_place(const struct model *m, unsigned int max_order,
		       unsigned int k, u64 len, u64 align, u64 start, u64 end,
		       unsigned int flags)
{
	bool topdown = flags & MD_BUDDY_TOPDOWN, range = flags & MD_BUDDY_RANGE;
	u64 best = U64_MAX, x;
	unsigned int j;

	for (j = k; j <= max_order; j++) {
		u64 s = BIT_ULL(j);

		for (x = 0; x + s <= m->n; x += s) {
			u64 p, top;

			if (!model_free_block(m, x, j))
				continue;
			if (!range && !topdown) {
				if (best == U64_MAX || x < best)
					best = x;
				continue;
			}
			if (!range) {
				p = round_down(x + s - len, align);
			} else if (!topdown) {
				p = round_up(max(x, start), align);
				if (p + len > min(x + s, end))
					continue;
			} else {
				top = min(x + s, end);
				if (top <= start || top - start < len)
					continue;
				p = round_down(top - len, align);
				if (p < max(x, start))
					continue;
			}
			if (best == U64_MAX || (!topdown && p < best) ||
			    (topdown && p > best))
				best = p;
		}
		/* Bottom-up without a range: the smallest order wins. */
		if (!range && !topdown && best != U64_MAX)
			break;
	}
	return best;
}

static void model_run(struct kunit *test, struct md_buddy *mm, u64 n,
		      unsigned int cap, struct rng *r)
{
	const size_t slots = 48, steps = 3000;
	struct md_buddy_alloc *a = allocs(test, slots);
	struct model m = { .n = n, .cap = cap };
	size_t i, placed = 0;

	m.full_end = cap < 63 ? (n >> cap) << cap : 0;
	m.used = kunit_kzalloc(test, BITS_TO_LONGS(n) * sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m.used);

	for (i = 0; i < steps; i++) {
		struct md_buddy_alloc *x = &a[rng_below(r, slots)];
		unsigned int flags = 0, k;
		u64 len, align, start = 0, end = 0, sz, want;
		int ret;

		if (x->live) {
			bitmap_clear(m.used, x->offset / CHUNK, x->size / CHUNK);
			KUNIT_ASSERT_EQ(test, md_buddy_free(mm, x), 0);
			continue;
		}
		sz = 1 + rng_below(r, (1 + rng_below(r, 24)) * CHUNK);
		len = DIV_ROUND_UP(sz, CHUNK);
		align = rng_below(r, 3) ? 1 : BIT_ULL(rng_below(r, 6));
		if (rng_below(r, 2))
			flags |= MD_BUDDY_TOPDOWN;
		switch (rng_below(r, 4)) {
		case 0:
			flags |= MD_BUDDY_RANGE;
			start = rng_below(r, n * CHUNK);
			end = start + 1 + rng_below(r, n * CHUNK - start + CHUNK);
			break;
		case 1:
			/* As large as the size: one place, maybe past the end. */
			flags |= MD_BUDDY_RANGE;
			align = 1;
			start = rng_below(r, n) * CHUNK;
			end = start + len * CHUNK;
			break;
		}
		ret = md_buddy_alloc(mm, x, sz, align * CHUNK, start, end, flags,
				     GFP_KERNEL);
		k = ilog2(max(roundup_pow_of_two(len), align));
		if (k > mm->max_order)
			want = U64_MAX;
		else
			want = model_place(&m, mm->max_order, k, len, align,
					   DIV_ROUND_UP(start, CHUNK),
					   min(end, n * CHUNK) / CHUNK, flags);
		if (want == U64_MAX) {
			KUNIT_ASSERT_EQ(test, ret, -ENOSPC);
			continue;
		}
		KUNIT_ASSERT_EQ_MSG(test, ret, 0, "step %zu flags %u len %llu", i,
				    flags, len);
		KUNIT_ASSERT_EQ_MSG(test, x->offset, want * CHUNK,
				    "step %zu flags %u len %llu align %llu range [%llu, %llu)",
				    i, flags, len, align, start, end);
		KUNIT_ASSERT_TRUE(test, model_all_free(&m, want, len));
		bitmap_set(m.used, want, len);
		placed++;
		if (i % 64 == 0)
			KUNIT_ASSERT_EQ(test, md_buddy_check(mm), 0);
	}
	kunit_info(test, "%llu chunks, cap %u: %zu placements checked\n", n, cap,
		   placed);
	KUNIT_EXPECT_GT(test, placed, (size_t)500);
	free_all(test, mm, a, slots);
	KUNIT_EXPECT_EQ(test, mm->avail, n * CHUNK);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
}

static void placement_matches_model(struct kunit *test)
{
	struct md_buddy *mm = kunit_kzalloc(test, sizeof(*mm), GFP_KERNEL);
	struct rng r;

	KUNIT_ASSERT_NOT_NULL(test, mm);
	rng_seed(test, &r);
	/* Roots 128, 32, 4, 1 chunks; then 10 capped roots of 16, then 4, 1. */
	KUNIT_ASSERT_EQ(test, md_buddy_init(mm, 165 * CHUNK, CHUNK), 0);
	model_run(test, mm, 165, 63, &r);
	md_buddy_fini(mm);
	KUNIT_ASSERT_EQ(test, md_buddy_init_capped(mm, 165 * CHUNK, CHUNK,
						   16 * CHUNK), 0);
	KUNIT_EXPECT_EQ(test, mm->nr_roots, 12u);
	model_run(test, mm, 165, 4, &r);
	md_buddy_fini(mm);
}

/* The checker itself must catch a corrupted allocator. */
static void checker_catches_corruption(struct kunit *test)
{
	struct md_buddy *mm = setup(test, SZ_1M, CHUNK);
	struct md_buddy *small = kunit_kzalloc(test, sizeof(*small), GFP_KERNEL);
	struct md_buddy_alloc x = {}, y = {};
	struct md_buddy_bits *b;

	mm->avail -= CHUNK;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	mm->avail += CHUNK;
	mm->nr_free[mm->max_order]++;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	mm->nr_free[mm->max_order]--;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	/* 256 chunks: order 0 has four bitmap words and one summary word. */
	b = &mm->bits[0];
	KUNIT_ASSERT_EQ(test, b->nlevels, 2u);
	b->lvl[1][0] |= BIT(2);		/* a summary bit over an empty word */
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	b->lvl[1][0] &= ~BIT(2);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	/* Chunks 0 and 1 free as two blocks: counts agree, buddies do not. */
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &x, CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, md_buddy_alloc(mm, &y, CHUNK, 0, 0, 0, 0,
					     GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, x.offset, 0ull);
	KUNIT_ASSERT_EQ(test, y.offset, (u64)CHUNK);
	KUNIT_ASSERT_EQ(test, md_buddy_free(mm, &x), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	b->lvl[0][0] |= BIT(1);
	mm->nr_free[0]++;
	mm->avail += CHUNK;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	b->lvl[0][0] &= ~BIT(1);
	mm->nr_free[0]--;
	mm->avail -= CHUNK;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_free(mm, &y), 0);

	/* A block inside a free one: chunk 0 of the whole free pool. */
	b->lvl[0][0] |= BIT(0);
	b->lvl[1][0] |= BIT(0);
	mm->nr_free[0]++;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), -EUCLEAN);
	b->lvl[0][0] &= ~BIT(0);
	b->lvl[1][0] &= ~BIT(0);
	mm->nr_free[0]--;
	KUNIT_EXPECT_EQ(test, md_buddy_check(mm), 0);

	/* A bit past the last block of an order (100 chunks: 36 spare bits). */
	KUNIT_ASSERT_NOT_NULL(test, small);
	KUNIT_ASSERT_EQ(test, md_buddy_init(small, 100 * CHUNK, CHUNK), 0);
	KUNIT_EXPECT_EQ(test, md_buddy_check(small), 0);
	small->bits[0].lvl[0][1] |= BIT(110 - 64);
	small->bits[0].lvl[1][0] |= BIT(1);
	KUNIT_EXPECT_EQ(test, md_buddy_check(small), -EUCLEAN);
	small->bits[0].lvl[0][1] = 0;
	small->bits[0].lvl[1][0] &= ~BIT(1);
	KUNIT_EXPECT_EQ(test, md_buddy_check(small), 0);
	md_buddy_fini(small);
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
	KUNIT_CASE(range),
	KUNIT_CASE(topdown),
	KUNIT_CASE(smoke_random),
	KUNIT_CASE(checker_catches_corruption),
	KUNIT_CASE(bitmap_level_edges),
	KUNIT_CASE(large_pool),
	KUNIT_CASE(placement_matches_model),
	{}
};

static struct kunit_suite md_buddy_suite = {
	.name = "metadef_buddy",
	.init = buddy_test_init,
	.exit = buddy_test_exit,
	.test_cases = md_buddy_cases,
};

kunit_test_suite(md_buddy_suite);
