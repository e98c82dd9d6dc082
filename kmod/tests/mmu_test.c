// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the soft-MMU's table (kmod/mmu.c): map, translate, unmap,
 * permissions, colors, all-or-nothing mapping, the table invariants, runs
 * and the copy engine's core.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "mmu.h"

#define COLOR	7

static struct md_mmu *new_mmu(struct kunit *test)
{
	struct md_mmu *mmu = kunit_kzalloc(test, sizeof(*mmu), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mmu);
	KUNIT_ASSERT_EQ(test, md_mmu_init(mmu, COLOR), 0);
	return mmu;
}

static void done(struct kunit *test, struct md_mmu *mmu)
{
	KUNIT_EXPECT_EQ(test, md_mmu_check(mmu), 0);
	md_mmu_fini(mmu);
}

static enum md_mmu_fault tr(struct md_mmu *mmu, u64 va, unsigned int access,
			    u64 *off)
{
	enum md_mmu_fault f;

	down_read(&mmu->lock);
	f = md_mmu_translate(mmu, va, access, off);
	up_read(&mmu->lock);
	return f;
}

static void map_translate_unmap(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 va = SZ_1G + SZ_2M - 2 * PAGE_SIZE;	/* crosses a leaf table */
	u64 off = 0;

	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va, SZ_64K, 4 * PAGE_SIZE,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	KUNIT_EXPECT_EQ(test, mmu->nr_leaves, 4ul);
	KUNIT_EXPECT_EQ(test, tr(mmu, va, MD_MMU_READ, &off), MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, (u64)SZ_64K);
	KUNIT_EXPECT_EQ(test, tr(mmu, va + 3 * PAGE_SIZE + 123, MD_MMU_WRITE, &off),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, (u64)SZ_64K + 3 * PAGE_SIZE + 123);
	KUNIT_EXPECT_EQ(test, tr(mmu, va - 1, MD_MMU_READ, &off), MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, tr(mmu, va + 4 * PAGE_SIZE, MD_MMU_READ, &off),
			MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, md_mmu_check(mmu), 0);

	md_mmu_unmap(mmu, va + PAGE_SIZE, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, tr(mmu, va + PAGE_SIZE, MD_MMU_READ, &off),
			MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, tr(mmu, va + 2 * PAGE_SIZE, MD_MMU_READ, &off),
			MD_MMU_OK);
	/* Unmapping a range with holes and unmapped space around is fine. */
	md_mmu_unmap(mmu, va - SZ_4M, SZ_16M);
	KUNIT_EXPECT_EQ(test, mmu->nr_leaves, 0ul);
	KUNIT_EXPECT_EQ(test, tr(mmu, va, MD_MMU_READ, &off), MD_MMU_UNMAPPED);
	done(test, mmu);
}

static void permissions(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 off;

	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, 0, 0, PAGE_SIZE, MD_MMU_READ,
					 COLOR), 0);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, PAGE_SIZE, PAGE_SIZE, PAGE_SIZE,
					 MD_MMU_WRITE, COLOR), 0);
	KUNIT_EXPECT_EQ(test, tr(mmu, 0, MD_MMU_READ, &off), MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, tr(mmu, 0, MD_MMU_WRITE, &off), MD_MMU_PERM);
	KUNIT_EXPECT_EQ(test, tr(mmu, 0, MD_MMU_READ | MD_MMU_WRITE, &off),
			MD_MMU_PERM);
	KUNIT_EXPECT_EQ(test, tr(mmu, PAGE_SIZE, MD_MMU_WRITE, &off), MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, tr(mmu, PAGE_SIZE, MD_MMU_READ, &off), MD_MMU_PERM);
	md_mmu_unmap(mmu, 0, 2 * PAGE_SIZE);
	done(test, mmu);
}

static void colors(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 off;

	/* A page of another color in this table is never usable. */
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, SZ_1M, 0, PAGE_SIZE,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR + 1), 0);
	KUNIT_EXPECT_EQ(test, tr(mmu, SZ_1M, MD_MMU_READ, &off), MD_MMU_COLOR);
	KUNIT_EXPECT_EQ(test, tr(mmu, SZ_1M, MD_MMU_WRITE, &off), MD_MMU_COLOR);
	md_mmu_unmap(mmu, SZ_1M, PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, SZ_1M, 0, PAGE_SIZE, MD_MMU_READ,
					 COLOR), 0);
	KUNIT_EXPECT_EQ(test, tr(mmu, SZ_1M, MD_MMU_READ, &off), MD_MMU_OK);
	KUNIT_EXPECT_STREQ(test, md_mmu_fault_name(MD_MMU_COLOR), "color");
	md_mmu_unmap(mmu, SZ_1M, PAGE_SIZE);
	done(test, mmu);
}

static void all_or_nothing(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 off;

	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, SZ_2M + 5 * PAGE_SIZE, 0, PAGE_SIZE,
					 MD_MMU_READ, COLOR), 0);
	/* Overlaps the page above: refused, and none of it stays mapped. */
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, SZ_2M, SZ_1M, 8 * PAGE_SIZE,
					 MD_MMU_READ, COLOR), -EEXIST);
	KUNIT_EXPECT_EQ(test, mmu->nr_leaves, 1ul);
	KUNIT_EXPECT_EQ(test, tr(mmu, SZ_2M, MD_MMU_READ, &off), MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, tr(mmu, SZ_2M + 5 * PAGE_SIZE, MD_MMU_READ, &off),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, 0ull);
	md_mmu_unmap(mmu, SZ_2M + 5 * PAGE_SIZE, PAGE_SIZE);
	done(test, mmu);
}

static void invalid_arguments(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 top = 1ULL << MD_MMU_VA_BITS, off;

	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 1, 0, PAGE_SIZE, MD_MMU_READ, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 0, 1, PAGE_SIZE, MD_MMU_READ, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 0, 0, 0, MD_MMU_READ, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 0, 0, 100, MD_MMU_READ, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 0, 0, PAGE_SIZE, 0, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 0, 0, PAGE_SIZE, 1 << 5, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, top, 0, PAGE_SIZE, MD_MMU_READ, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, top - PAGE_SIZE, 0, 2 * PAGE_SIZE,
					 MD_MMU_READ, COLOR), -EINVAL);
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, 0, 1ULL << 48, PAGE_SIZE,
					 MD_MMU_READ, COLOR), -EINVAL);
	/* The very last page of the VA space is usable. */
	KUNIT_EXPECT_EQ(test, md_mmu_map(mmu, top - PAGE_SIZE, 0, PAGE_SIZE,
					 MD_MMU_READ, COLOR), 0);
	KUNIT_EXPECT_EQ(test, tr(mmu, top - 1, MD_MMU_READ, &off), MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, tr(mmu, top, MD_MMU_READ, &off), MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, tr(mmu, U64_MAX, MD_MMU_READ, &off), MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, mmu->nr_leaves, 1ul);
	md_mmu_unmap(mmu, top - PAGE_SIZE, PAGE_SIZE);
	done(test, mmu);
}

static void large_mapping_and_checker(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 off, va = (1ULL << 40) + SZ_1G - SZ_1M;	/* crosses a 1G table */

	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va, SZ_32M, SZ_8M,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	KUNIT_EXPECT_EQ(test, mmu->nr_leaves, (unsigned long)(SZ_8M / PAGE_SIZE));
	KUNIT_EXPECT_EQ(test, tr(mmu, va + SZ_8M - 1, MD_MMU_READ, &off), MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, (u64)SZ_32M + SZ_8M - 1);
	KUNIT_EXPECT_EQ(test, md_mmu_check(mmu), 0);
	/* The checker notices counters that do not match the table. */
	mmu->nr_leaves++;
	KUNIT_EXPECT_EQ(test, md_mmu_check(mmu), -EUCLEAN);
	mmu->nr_leaves--;
	mmu->nr_tables--;
	KUNIT_EXPECT_EQ(test, md_mmu_check(mmu), -EUCLEAN);
	mmu->nr_tables++;
	md_mmu_unmap(mmu, va, SZ_8M);
	done(test, mmu);
}

static enum md_mmu_fault run(struct md_mmu *mmu, u64 va, u64 max,
			     unsigned int access, u64 *off, u64 *len)
{
	enum md_mmu_fault f;

	down_read(&mmu->lock);
	f = md_mmu_translate_run(mmu, va, max, access, off, len);
	up_read(&mmu->lock);
	return f;
}

/* Runs end at a hole, a permission, a pool discontinuity, or @max. */
static void translate_runs(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 va = SZ_2M - 4 * PAGE_SIZE;		/* crosses a leaf table */
	u64 p = PAGE_SIZE, off, len;

	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va, SZ_64K, 8 * p,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va + 8 * p, SZ_1M, 4 * p,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va + 12 * p, SZ_1M + 4 * p, 2 * p,
					 MD_MMU_READ, COLOR), 0);

	KUNIT_EXPECT_EQ(test, run(mmu, va + 100, ~0ULL, MD_MMU_READ, &off, &len),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, (u64)SZ_64K + 100);
	KUNIT_EXPECT_EQ(test, len, 8 * p - 100);
	/*
	 * The read-only pages that follow in the pool start a run of their
	 * own, for reading too: a run is leaves with identical attributes.
	 */
	KUNIT_EXPECT_EQ(test, run(mmu, va + 8 * p, ~0ULL, MD_MMU_READ, &off, &len),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, (u64)SZ_1M);
	KUNIT_EXPECT_EQ(test, len, 4 * p);
	KUNIT_EXPECT_EQ(test, run(mmu, va + 8 * p, ~0ULL, MD_MMU_WRITE, &off, &len),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, len, 4 * p);
	KUNIT_EXPECT_EQ(test, run(mmu, va + 12 * p, ~0ULL, MD_MMU_READ, &off, &len),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, off, (u64)SZ_1M + 4 * p);
	KUNIT_EXPECT_EQ(test, len, 2 * p);
	KUNIT_EXPECT_EQ(test, run(mmu, va + 12 * p, p, MD_MMU_WRITE, &off, &len),
			MD_MMU_PERM);
	KUNIT_EXPECT_EQ(test, run(mmu, va + 14 * p, p, MD_MMU_READ, &off, &len),
			MD_MMU_UNMAPPED);
	/* @max is honoured to the byte. */
	KUNIT_EXPECT_EQ(test, run(mmu, va + 1, 3 * p + 5, MD_MMU_READ, &off, &len),
			MD_MMU_OK);
	KUNIT_EXPECT_EQ(test, len, 3 * p + 5);
	md_mmu_unmap(mmu, va, 14 * p);
	done(test, mmu);
}

static void copy_fn(void *ctx, u64 dst, u64 src, u64 len)
{
	memcpy((u8 *)ctx + dst, (u8 *)ctx + src, len);
}

/*
 * The engine against a page-by-page model on a scrambled mapping, and
 * all-or-nothing on a fault.
 */
static void copy_engine(struct kunit *test)
{
	enum { PAGES = 32 };
	struct md_mmu *mmu = new_mmu(test);
	u64 p = PAGE_SIZE, va = SZ_1G, src, dst, size, i, o1, o2;
	struct md_mmu_fault_info fault;
	u8 *pool, *want, *before;
	/* VA page i -> pool page map[i]: runs of 1 to 4 pages. */
	static const u8 map[PAGES] = {
		0, 1, 2, 3, 9, 10, 4, 5, 6, 7, 8, 20, 21, 22, 11, 12,
		13, 14, 15, 16, 17, 18, 19, 31, 30, 29, 28, 27, 26, 25, 24, 23,
	};

	pool = kunit_kmalloc(test, PAGES * p, GFP_KERNEL);
	want = kunit_kmalloc(test, PAGES * p, GFP_KERNEL);
	before = kunit_kmalloc(test, PAGES * p, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pool);
	KUNIT_ASSERT_NOT_NULL(test, want);
	KUNIT_ASSERT_NOT_NULL(test, before);
	for (i = 0; i < PAGES * p; i++)
		pool[i] = (u8)(i * 7 + i / 4096);
	for (i = 0; i < PAGES; i++)
		KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va + i * p, map[i] * p, p,
						 MD_MMU_READ | MD_MMU_WRITE,
						 COLOR), 0);

	/* 10.5 pages from VA page 1 + 123 to VA page 16 + 7. */
	src = va + p + 123;
	dst = va + 16 * p + 7;
	size = 10 * p + p / 2;
	memcpy(want, pool, PAGES * p);
	for (i = 0; i < size; i++) {
		o1 = map[(src + i - va) / p] * p + (src + i) % p;
		o2 = map[(dst + i - va) / p] * p + (dst + i) % p;
		want[o2] = pool[o1];
	}
	down_read(&mmu->lock);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(mmu, dst, src, size, copy_fn, pool,
					  &fault), 0);
	up_read(&mmu->lock);
	KUNIT_EXPECT_EQ(test, memcmp(pool, want, PAGES * p), 0);

	/* One read-only page in the destination: nothing moves. */
	md_mmu_unmap(mmu, va + 20 * p, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va + 20 * p, map[20] * p, p,
					 MD_MMU_READ, COLOR), 0);
	memcpy(before, pool, PAGES * p);
	down_read(&mmu->lock);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(mmu, dst, src, size, copy_fn, pool,
					  &fault), -EFAULT);
	up_read(&mmu->lock);
	KUNIT_EXPECT_EQ(test, fault.va, va + 20 * p);
	KUNIT_EXPECT_EQ(test, fault.access, MD_MMU_WRITE);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_PERM);
	KUNIT_EXPECT_EQ(test, memcmp(pool, before, PAGES * p), 0);
	/* A hole in the source: the fault names its first byte. */
	md_mmu_unmap(mmu, va + 5 * p, p);
	down_read(&mmu->lock);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(mmu, va + 24 * p, va + 4 * p + 9, 2 * p,
					  copy_fn, pool, &fault), -EFAULT);
	up_read(&mmu->lock);
	KUNIT_EXPECT_EQ(test, fault.va, va + 5 * p);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, memcmp(pool, before, PAGES * p), 0);
	md_mmu_unmap(mmu, va, PAGES * p);
	done(test, mmu);
}

static struct kunit_case md_mmu_cases[] = {
	KUNIT_CASE(map_translate_unmap),
	KUNIT_CASE(permissions),
	KUNIT_CASE(colors),
	KUNIT_CASE(all_or_nothing),
	KUNIT_CASE(invalid_arguments),
	KUNIT_CASE(large_mapping_and_checker),
	KUNIT_CASE(translate_runs),
	KUNIT_CASE(copy_engine),
	{}
};

static struct kunit_suite md_mmu_suite = {
	.name = "metadef_mmu",
	.test_cases = md_mmu_cases,
};

kunit_test_suite(md_mmu_suite);
