// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the soft-MMU's table (kmod/mmu.c): map, translate, unmap,
 * permissions, colors, all-or-nothing mapping, the table invariants, runs
 * and the copy engine's core: copies across run breaks of every shape
 * against a byte model, a fault at every page, chunks and the VA limit.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/percpu.h>
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
	KUNIT_EXPECT_EQ(test, md_mmu_copy(mmu, dst, src, size, copy_fn, pool,
					  &fault), 0);
	KUNIT_EXPECT_EQ(test, memcmp(pool, want, PAGES * p), 0);

	/* One read-only page in the destination: nothing moves. */
	md_mmu_unmap(mmu, va + 20 * p, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va + 20 * p, map[20] * p, p,
					 MD_MMU_READ, COLOR), 0);
	memcpy(before, pool, PAGES * p);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(mmu, dst, src, size, copy_fn, pool,
					  &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.va, va + 20 * p);
	KUNIT_EXPECT_EQ(test, fault.access, MD_MMU_WRITE);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_PERM);
	KUNIT_EXPECT_EQ(test, memcmp(pool, before, PAGES * p), 0);
	/* A hole in the source: the fault names its first byte. */
	md_mmu_unmap(mmu, va + 5 * p, p);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(mmu, va + 24 * p, va + 4 * p + 9, 2 * p,
					  copy_fn, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.va, va + 5 * p);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, memcmp(pool, before, PAGES * p), 0);
	md_mmu_unmap(mmu, va, PAGES * p);
	done(test, mmu);
}

/* md_mmu_copy() on a test's pool. */
static int cp(struct md_mmu *mmu, u64 dst, u64 src, u64 size, void *pool,
	      struct md_mmu_fault_info *fault)
{
	return md_mmu_copy(mmu, dst, src, size, copy_fn, pool, fault);
}

/*
 * The leaf tables md_mmu_map() leaves in the table's slots: two leaf
 * tables that share a slot (the later map takes it), one-page copies
 * between them both ways, a page remapped to another pool page, unmapped,
 * read-only and of another color while its leaf table sits in its slot.
 */
static void copy_leaf_slots(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 p = PAGE_SIZE, a = SZ_1G + 3 * p;
	u64 b = a + (u64)MD_MMU_LEAF_SLOTS * SZ_2M;	/* a's slot */
	u64 c = b + p;
	struct md_mmu_fault_info fault;
	u8 *pool;
	u64 i;

	pool = kunit_kmalloc(test, 5 * p, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pool);
	for (i = 0; i < 5 * p; i++)
		pool[i] = (u8)(i / p + 1);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, a, 0, p, MD_MMU_READ | MD_MMU_WRITE,
					 COLOR), 0);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, b, p, p, MD_MMU_READ | MD_MMU_WRITE,
					 COLOR), 0);
	/* b's leaf table is in the slot, a's is walked to. */
	KUNIT_EXPECT_EQ(test, cp(mmu, b + 100, a + 10, 50, pool, &fault), 0);
	KUNIT_EXPECT_EQ(test, pool[p + 100], 1);
	KUNIT_EXPECT_EQ(test, pool[p + 149], 1);
	KUNIT_EXPECT_EQ(test, pool[p + 150], 2);
	KUNIT_EXPECT_EQ(test, cp(mmu, a + 200, b + 300, 8, pool, &fault), 0);
	KUNIT_EXPECT_EQ(test, pool[199], 1);
	KUNIT_EXPECT_EQ(test, pool[200], 2);
	KUNIT_EXPECT_EQ(test, pool[207], 2);
	KUNIT_EXPECT_EQ(test, pool[208], 1);

	/* b to pool page 2: the copy follows the leaf, not the old page. */
	md_mmu_unmap(mmu, b, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, b, 2 * p, p,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	KUNIT_EXPECT_EQ(test, cp(mmu, b, a + 1000, 16, pool, &fault), 0);
	KUNIT_EXPECT_EQ(test, pool[2 * p], 1);
	KUNIT_EXPECT_EQ(test, pool[p], 2);
	/*
	 * c shares b's leaf table: copies between them find both sides in
	 * the slot. b unmapped, its leaf table still there: a fault, no copy.
	 */
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, c, 4 * p, p,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	md_mmu_unmap(mmu, b, p);
	KUNIT_EXPECT_EQ(test, cp(mmu, b + 8, c, 8, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.va, b + 8);
	KUNIT_EXPECT_EQ(test, fault.access, MD_MMU_WRITE);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, cp(mmu, c, b, 8, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.access, MD_MMU_READ);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_UNMAPPED);
	/* Read-only, then another color. */
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, b, 3 * p, p, MD_MMU_READ,
					 COLOR), 0);
	KUNIT_EXPECT_EQ(test, cp(mmu, b, c, 8, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_PERM);
	KUNIT_EXPECT_EQ(test, pool[3 * p], 4);
	KUNIT_EXPECT_EQ(test, cp(mmu, c + 16, b + 16, 8, pool, &fault), 0);
	KUNIT_EXPECT_EQ(test, pool[4 * p + 16], 4);
	md_mmu_unmap(mmu, b, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, b, 3 * p, p,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR + 1), 0);
	KUNIT_EXPECT_EQ(test, cp(mmu, b, c, 8, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_COLOR);
	KUNIT_EXPECT_EQ(test, cp(mmu, c, b, 8, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_COLOR);
	KUNIT_EXPECT_EQ(test, pool[3 * p], 4);
	KUNIT_EXPECT_EQ(test, pool[4 * p], 5);
	md_mmu_unmap(mmu, a, p);
	md_mmu_unmap(mmu, b, 2 * p);
	done(test, mmu);
}

/* One one-page copy, or one unmap, in a thread of its own. */
struct side_job {
	struct md_mmu *mmu;
	u8 *pool;
	u64 dst, src;
	int ret;
	struct completion done;
};

static int copy_job(void *arg)
{
	struct side_job *j = arg;
	struct md_mmu_fault_info fault;

	j->ret = cp(j->mmu, j->dst, j->src, 64, j->pool, &fault);
	complete(&j->done);
	return 0;
}

static int unmap_job(void *arg)
{
	struct side_job *j = arg;

	md_mmu_unmap(j->mmu, j->dst, PAGE_SIZE);
	complete(&j->done);
	return 0;
}

/*
 * One-page copies and writers exclude each other without the lock (see
 * copy_enter() in mmu.c), seen from outside: while a writer is at work
 * (the lock held for writing, mmu->writing set, as table_write_lock() leaves
 * them) a one-page copy waits and moves nothing; while a one-page copy
 * counts itself on a CPU, an unmap waits. Each side is let go after 100
 * ms and must then finish.
 */
static void copy_excludes_writers(struct kunit *test)
{
	struct md_mmu *mmu = new_mmu(test);
	u64 p = PAGE_SIZE, va = SZ_1G;
	struct md_mmu_fault_info fault;
	struct task_struct *t;
	struct side_job *j;
	unsigned long left;
	unsigned int *n;
	u8 *pool;

	j = kunit_kzalloc(test, sizeof(*j), GFP_KERNEL);
	pool = kunit_kzalloc(test, 2 * p, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, j);
	KUNIT_ASSERT_NOT_NULL(test, pool);
	memset(pool, 1, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(mmu, va, 0, 2 * p,
					 MD_MMU_READ | MD_MMU_WRITE, COLOR), 0);
	*j = (struct side_job){ .mmu = mmu, .pool = pool, .dst = va + p,
				.src = va };
	init_completion(&j->done);

	down_write(&mmu->lock);
	WRITE_ONCE(mmu->writing, 1);
	t = kthread_run(copy_job, j, "md_mmu_test_copy");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	left = wait_for_completion_timeout(&j->done, msecs_to_jiffies(100));
	KUNIT_EXPECT_EQ(test, left, 0ul);
	KUNIT_EXPECT_EQ(test, pool[p], 0);
	/* As table_write_unlock(): release, as mmu.c's readers acquire. */
	smp_store_release(&mmu->writing, 0);
	up_write(&mmu->lock);
	if (!left)
		wait_for_completion(&j->done);
	KUNIT_EXPECT_EQ(test, j->ret, 0);
	KUNIT_EXPECT_EQ(test, pool[p], 1);

	/* A copy counted on the last possible CPU: the unmap waits for it. */
	n = per_cpu_ptr(mmu->copiers, cpumask_last(cpu_possible_mask));
	reinit_completion(&j->done);
	/* As copy_enter() leaves it (the writer loads it with acquire). */
	smp_store_release(n, 1);
	t = kthread_run(unmap_job, j, "md_mmu_test_unmap");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	left = wait_for_completion_timeout(&j->done, msecs_to_jiffies(100));
	KUNIT_EXPECT_EQ(test, left, 0ul);
	/* As copy_exit() drops it. */
	smp_store_release(n, 0);
	if (!left)
		wait_for_completion(&j->done);
	memset(pool, 2, p);
	KUNIT_EXPECT_EQ(test, cp(mmu, va + p, va, 64, pool, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, pool[p], 1);
	md_mmu_unmap(mmu, va, p);
	done(test, mmu);
}

/*
 * The copy engine across run boundaries of every shape, against a byte by
 * byte model. VA pages 0..NP/2-1 are the source side, NP/2..NP-1 the
 * destination side; each side maps to its own half of the pool, so the
 * model (read everything from a snapshot) is exact. The source side
 * crosses a leaf table (2 MiB) at its page 16.
 */
#define NP		48
#define HALF		(NP / 2)
#define CT_VA		((u64)SZ_2M - 16 * PAGE_SIZE)
#define CT_CALLS	64

struct copy_call {
	u64 dst, src, len;
};

struct copy_test {
	struct kunit *test;
	struct md_mmu *mmu;
	u8 *pool;		/* NULL: record the calls only */
	int map[NP];		/* VA page -> pool page, -1 unmapped */
	unsigned int nr_calls;
	unsigned int bad_calls;	/* empty, over a chunk, outside the pool */
	unsigned int failures;	/* copies not as the model says */
	const char *layout;	/* for the failure message */
	struct copy_call calls[CT_CALLS];
};

static void ct_copy(void *ctx, u64 dst, u64 src, u64 len)
{
	struct copy_test *ct = ctx;

	if (ct->nr_calls < CT_CALLS)
		ct->calls[ct->nr_calls] = (struct copy_call){ dst, src, len };
	ct->nr_calls++;
	if (!len || len > MD_MMU_COPY_CHUNK) {
		ct->bad_calls++;
		return;
	}
	if (ct->pool) {
		if (src + len > NP * PAGE_SIZE || dst + len > NP * PAGE_SIZE) {
			ct->bad_calls++;
			return;
		}
		memcpy(ct->pool + dst, ct->pool + src, len);
	}
}

/*
 * A copy that is not as the model says: the first one of a test case is
 * reported in full, the rest counted (a broken engine would otherwise
 * flood the case's log, and KUnit's log of a case is bounded).
 */
static __printf(2, 3) void ct_failed(struct copy_test *ct, const char *fmt,
				     ...)
{
	struct va_format vaf;
	va_list args;

	if (ct->failures++)
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	KUNIT_FAIL(ct->test, "%pV", &vaf);
	va_end(args);
}

/*
 * Map @n VA pages from @page to pool pages from @pool_page, as runs of
 * @lens pages (0-terminated, cycled) laid out in the pool in reverse
 * order, so that no run continues the one before it in the pool.
 */
static void ct_map_side(struct copy_test *ct, int page, int pool_page, int n,
			const u8 *lens)
{
	int runs[NP], nr = 0, i, j, done = 0, at;

	for (i = 0; done < n; i = lens[i + 1] ? i + 1 : 0) {
		runs[nr] = min_t(int, lens[i], n - done);
		done += runs[nr++];
	}
	at = pool_page + n;
	done = 0;
	for (i = 0; i < nr; i++) {
		at -= runs[i];
		for (j = 0; j < runs[i]; j++)
			ct->map[page + done + j] = at + j;
		done += runs[i];
	}
}

static void ct_apply(struct copy_test *ct)
{
	u64 p = PAGE_SIZE;
	int i;

	md_mmu_unmap(ct->mmu, CT_VA, NP * p);
	for (i = 0; i < NP; i++)
		if (ct->map[i] >= 0)
			KUNIT_ASSERT_EQ(ct->test,
					md_mmu_map(ct->mmu, CT_VA + i * p,
						   ct->map[i] * p, p,
						   MD_MMU_READ | MD_MMU_WRITE,
						   COLOR), 0);
}

/* The pool offset of byte @va in the model. */
static u64 ct_off(struct copy_test *ct, u64 va)
{
	return ct->map[(va - CT_VA) >> PAGE_SHIFT] * PAGE_SIZE +
	       (va & ~PAGE_MASK);
}

/* Joint runs from @src and @dst over @size: where neither side breaks. */
static unsigned int ct_joint_runs(struct copy_test *ct, u64 dst, u64 src,
				  u64 size)
{
	unsigned int n = 1;
	u64 i;

	for (i = 1; i < size; i++)
		if (ct_off(ct, src + i) != ct_off(ct, src + i - 1) + 1 ||
		    ct_off(ct, dst + i) != ct_off(ct, dst + i - 1) + 1)
			n++;
	return n;
}

/* Copy, and compare the pool byte for byte with the model's. */
static void ct_check(struct copy_test *ct, u64 dst, u64 src, u64 size,
		     u8 *want)
{
	struct md_mmu_fault_info fault;
	unsigned int runs;
	bool same;
	u64 i;
	int ret;

	for (i = 0; i < NP * PAGE_SIZE; i++)
		ct->pool[i] = (u8)(i * 7 + i / 4093 + size);
	memcpy(want, ct->pool, NP * PAGE_SIZE);
	for (i = 0; i < size; i++)
		want[ct_off(ct, dst + i)] = ct->pool[ct_off(ct, src + i)];
	ct->nr_calls = 0;
	ct->bad_calls = 0;
	ret = md_mmu_copy(ct->mmu, dst, src, size, ct_copy, ct, &fault);
	runs = ct_joint_runs(ct, dst, src, size);
	same = !memcmp(ct->pool, want, NP * PAGE_SIZE);
	/* One call per joint run: no more (per page), no fewer. */
	if (ret || !same || ct->nr_calls != runs || ct->bad_calls)
		ct_failed(ct, "%s: %#llx<-%#llx %llu B: %d, %s, %u calls/%u runs, %u bad",
			  ct->layout, dst, src, size, ret,
			  same ? "right" : "WRONG", ct->nr_calls, runs,
			  ct->bad_calls);
}

static struct copy_test *ct_new(struct kunit *test, bool with_pool)
{
	struct copy_test *ct = kunit_kzalloc(test, sizeof(*ct), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ct);
	ct->test = test;
	ct->layout = "";
	ct->mmu = new_mmu(test);
	if (with_pool) {
		ct->pool = kunit_kmalloc(test, NP * PAGE_SIZE, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, ct->pool);
	}
	return ct;
}

/* Byte offsets into each side and sizes: aligned, unaligned, tiny, whole. */
static const struct {
	u64 soff, doff, size;
} ct_shapes[] = {
	{ 0, 0, 1 },				/* one byte */
	{ PAGE_SIZE - 1, 0, 1 },
	{ 77, PAGE_SIZE - 1, 1 },
	{ 0, 0, PAGE_SIZE },			/* exactly one page */
	{ 3 * PAGE_SIZE, 5 * PAGE_SIZE, PAGE_SIZE },
	{ 5, 100, PAGE_SIZE },			/* one page's worth, two pages */
	{ PAGE_SIZE - 1, 1, 2 },		/* a byte each side of a break */
	{ 1, PAGE_SIZE - 1, 2 },
	{ 0, 0, HALF * PAGE_SIZE },		/* a whole side */
	{ 123, 7, 20 * PAGE_SIZE + 5 },
	{ 3 * PAGE_SIZE + 17, 2 * PAGE_SIZE + 4000, 10 * PAGE_SIZE },
	{ 15 * PAGE_SIZE + 1, 9 * PAGE_SIZE, 2 * PAGE_SIZE },	/* 2 MiB */
	{ PAGE_SIZE, 0, (HALF - 1) * PAGE_SIZE },
	{ 0, PAGE_SIZE + 512, (HALF - 2) * PAGE_SIZE - 1 },
};

/* Run lengths (pages), cycled; 0 ends a list. */
static const u8 ct_contig[] = { NP, 0 };
static const u8 ct_ones[] = { 1, 0 };
static const u8 ct_mixed_a[] = { 3, 1, 2, 5, 1, 4, 0 };
static const u8 ct_mixed_b[] = { 2, 4, 1, 1, 3, 0 };

static void copy_run_shapes(struct kunit *test)
{
	static const struct {
		const char *name;
		const u8 *src, *dst;
	} layouts[] = {
		{ "src contiguous, dst scattered", ct_contig, ct_mixed_a },
		{ "src scattered, dst contiguous", ct_mixed_b, ct_contig },
		{ "both scattered, different breaks", ct_mixed_a, ct_mixed_b },
		{ "both one page runs", ct_ones, ct_ones },
		{ "both contiguous", ct_contig, ct_contig },
	};
	struct copy_test *ct = ct_new(test, true);
	u8 *want = kunit_kmalloc(test, NP * PAGE_SIZE, GFP_KERNEL);
	unsigned int l, i;

	KUNIT_ASSERT_NOT_NULL(test, want);
	for (l = 0; l < ARRAY_SIZE(layouts); l++) {
		ct->layout = layouts[l].name;
		ct_map_side(ct, 0, 0, HALF, layouts[l].src);
		ct_map_side(ct, HALF, HALF, HALF, layouts[l].dst);
		ct_apply(ct);
		for (i = 0; i < ARRAY_SIZE(ct_shapes); i++)
			ct_check(ct, CT_VA + HALF * PAGE_SIZE + ct_shapes[i].doff,
				 CT_VA + ct_shapes[i].soff, ct_shapes[i].size,
				 want);
	}
	/* Contiguous through the leaf table boundary: still one run. */
	ct->layout = "through a leaf table";
	ct_map_side(ct, 0, 0, HALF, ct_contig);
	ct_apply(ct);
	ct_check(ct, CT_VA + HALF * PAGE_SIZE, CT_VA + 10 * PAGE_SIZE,
		 10 * PAGE_SIZE, want);
	KUNIT_EXPECT_EQ(test, ct->nr_calls, 1u);
	KUNIT_EXPECT_EQ(test, ct->failures, 0u);
	md_mmu_unmap(ct->mmu, CT_VA, NP * PAGE_SIZE);
	done(test, ct->mmu);
}

/*
 * Copy expecting a fault at @fva (@access, @reason): nothing may move. A
 * failure shows what came back: return value, fault va, access, reason.
 */
static void ct_fault(struct copy_test *ct, u64 dst, u64 src, u64 size,
		     u64 fva, unsigned int access, enum md_mmu_fault reason,
		     u8 *before)
{
	struct md_mmu_fault_info fault = { 0 };
	bool same;
	int ret;

	memcpy(before, ct->pool, NP * PAGE_SIZE);
	ct->nr_calls = 0;
	ret = md_mmu_copy(ct->mmu, dst, src, size, ct_copy, ct, &fault);
	same = !memcmp(ct->pool, before, NP * PAGE_SIZE);
	if (ret != -EFAULT || fault.va != fva || fault.access != access ||
	    fault.reason != reason || ct->nr_calls || !same)
		ct_failed(ct, "%#llx<-%#llx %llu B: %d %#llx %u %d, %u calls, %s",
			  dst, src, size, ret, fault.va, fault.access,
			  fault.reason, ct->nr_calls, same ? "same" : "CHANGED");
}

/*
 * A fault at the k-th page of either side, for every k: the copy is all or
 * nothing (no byte before the fault moves), and the fault names the first
 * byte of the range in that page. The source is checked first.
 */
static void copy_fault_at_every_page(struct kunit *test)
{
	struct copy_test *ct = ct_new(test, true);
	u8 *before = kunit_kmalloc(test, NP * PAGE_SIZE, GFP_KERNEL);
	u64 p = PAGE_SIZE, src = CT_VA + 3 * p + 123;
	u64 dst = CT_VA + (HALF + 2) * p + 4000, size = 9 * p;
	u64 spage, dpage, fva;
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, before);
	ct->layout = "src contiguous, dst scattered, faults";
	ct_map_side(ct, 0, 0, HALF, ct_contig);
	ct_map_side(ct, HALF, HALF, HALF, ct_mixed_a);
	ct_apply(ct);
	for (k = 0; k < 10; k++) {	/* both ranges touch 10 pages */
		/* The source's k-th page unmapped. */
		spage = (src & PAGE_MASK) + k * p;
		fva = k ? spage : src;
		md_mmu_unmap(ct->mmu, spage, p);
		ct_fault(ct, dst, src, size, fva, MD_MMU_READ,
			 MD_MMU_UNMAPPED, before);
		/* ... and the destination's faulting too: the source wins. */
		dpage = (dst & PAGE_MASK) + (9 - k) * p;
		md_mmu_unmap(ct->mmu, dpage, p);
		ct_fault(ct, dst, src, size, fva, MD_MMU_READ,
			 MD_MMU_UNMAPPED, before);
		KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, spage,
						 ct_off(ct, spage), p,
						 MD_MMU_READ | MD_MMU_WRITE,
						 COLOR), 0);
		/* The destination's page read-only: a permission fault. */
		KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dpage,
						 ct_off(ct, dpage), p,
						 MD_MMU_READ, COLOR), 0);
		ct_fault(ct, dst, src, size, 9 - k ? dpage : dst,
			 MD_MMU_WRITE, MD_MMU_PERM, before);
		/* Of another color. */
		md_mmu_unmap(ct->mmu, dpage, p);
		KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dpage,
						 ct_off(ct, dpage), p,
						 MD_MMU_READ | MD_MMU_WRITE,
						 COLOR + 1), 0);
		ct_fault(ct, dst, src, size, 9 - k ? dpage : dst,
			 MD_MMU_WRITE, MD_MMU_COLOR, before);
		/* The source's page write-only: it may not be read. */
		md_mmu_unmap(ct->mmu, dpage, p);
		KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dpage,
						 ct_off(ct, dpage), p,
						 MD_MMU_READ | MD_MMU_WRITE,
						 COLOR), 0);
		md_mmu_unmap(ct->mmu, spage, p);
		KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, spage,
						 ct_off(ct, spage), p,
						 MD_MMU_WRITE, COLOR), 0);
		ct_fault(ct, dst, src, size, fva, MD_MMU_READ, MD_MMU_PERM,
			 before);
		md_mmu_unmap(ct->mmu, spage, p);
		KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, spage,
						 ct_off(ct, spage), p,
						 MD_MMU_READ | MD_MMU_WRITE,
						 COLOR), 0);
	}
	/* All mapped again: the same copy goes through. */
	ct_check(ct, dst, src, size, before);

	/* Within one page each side (the fast path): the same faults. */
	src = CT_VA + 4 * p + 5;
	dst = CT_VA + (HALF + 4) * p + 9;
	spage = src & PAGE_MASK;
	dpage = dst & PAGE_MASK;
	md_mmu_unmap(ct->mmu, spage, p);
	ct_fault(ct, dst, src, 100, src, MD_MMU_READ, MD_MMU_UNMAPPED, before);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, spage, ct_off(ct, spage), p,
					 MD_MMU_READ, COLOR + 1), 0);
	ct_fault(ct, dst, src, 100, src, MD_MMU_READ, MD_MMU_COLOR, before);
	md_mmu_unmap(ct->mmu, spage, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, spage, ct_off(ct, spage), p,
					 MD_MMU_READ, COLOR), 0);
	md_mmu_unmap(ct->mmu, dpage, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dpage, ct_off(ct, dpage), p,
					 MD_MMU_READ, COLOR), 0);
	ct_fault(ct, dst, src, 100, dst, MD_MMU_WRITE, MD_MMU_PERM, before);
	md_mmu_unmap(ct->mmu, dpage, p);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dpage, ct_off(ct, dpage), p,
					 MD_MMU_WRITE, COLOR + 1), 0);
	ct_fault(ct, dst, src, 100, dst, MD_MMU_WRITE, MD_MMU_COLOR, before);
	md_mmu_unmap(ct->mmu, dpage, p);
	ct_fault(ct, dst, src, 1, dst, MD_MMU_WRITE, MD_MMU_UNMAPPED, before);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dpage, ct_off(ct, dpage), p,
					 MD_MMU_WRITE, COLOR), 0);
	/* Read-only source, write-only destination: that is enough. */
	ct_check(ct, dst, src, 100, before);
	ct_check(ct, dst, src, p - 9, before);
	KUNIT_EXPECT_EQ(test, ct->failures, 0u);
	md_mmu_unmap(ct->mmu, CT_VA, NP * PAGE_SIZE);
	done(test, ct->mmu);
}

/*
 * Copies larger than a chunk, contiguous and with a break, seen through
 * the calls alone (no memory behind the pool offsets), and a range that
 * runs off the end of the VA space.
 */
static void copy_chunks_and_limits(struct kunit *test)
{
	struct copy_test *ct = ct_new(test, false);
	u64 chunk = MD_MMU_COPY_CHUNK, big = 2 * chunk + chunk / 2;
	u64 top = 1ULL << MD_MMU_VA_BITS, src = SZ_1G, dst = 2ULL * SZ_1G;
	u64 brk = chunk + chunk / 2;
	struct md_mmu_fault_info fault;
	unsigned int i;

	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, src, 0, big, MD_MMU_READ,
					 COLOR), 0);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dst, SZ_64M, big,
					 MD_MMU_WRITE, COLOR), 0);
	/* One run each side: chunks of MD_MMU_COPY_CHUNK, in order. */
	KUNIT_EXPECT_EQ(test, md_mmu_copy(ct->mmu, dst + 5, src + 3, big - 5,
					  ct_copy, ct, &fault), 0);
	KUNIT_ASSERT_EQ(test, ct->nr_calls, 3u);
	KUNIT_EXPECT_EQ(test, ct->bad_calls, 0u);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, ct->calls[i].src, 3 + i * chunk);
		KUNIT_EXPECT_EQ(test, ct->calls[i].dst, SZ_64M + 5 + i * chunk);
		KUNIT_EXPECT_EQ(test, ct->calls[i].len,
				i < 2 ? chunk : big - 5 - 2 * chunk);
	}
	/* The destination breaks at 1.5 chunks: calls end there too. */
	md_mmu_unmap(ct->mmu, dst + brk, big - brk);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, dst + brk, SZ_128M,
					 big - brk, MD_MMU_WRITE, COLOR), 0);
	ct->nr_calls = 0;
	KUNIT_EXPECT_EQ(test, md_mmu_copy(ct->mmu, dst, src, big, ct_copy, ct,
					  &fault), 0);
	KUNIT_ASSERT_EQ(test, ct->nr_calls, 3u);
	KUNIT_EXPECT_EQ(test, ct->calls[0].len, chunk);
	KUNIT_EXPECT_EQ(test, ct->calls[1].src, chunk);
	KUNIT_EXPECT_EQ(test, ct->calls[1].dst, (u64)SZ_64M + chunk);
	KUNIT_EXPECT_EQ(test, ct->calls[1].len, brk - chunk);
	KUNIT_EXPECT_EQ(test, ct->calls[2].src, brk);
	KUNIT_EXPECT_EQ(test, ct->calls[2].dst, (u64)SZ_128M);
	KUNIT_EXPECT_EQ(test, ct->calls[2].len, big - brk);
	md_mmu_unmap(ct->mmu, src, big);
	md_mmu_unmap(ct->mmu, dst, big);

	/* The last page of the VA space, and past it: unmapped. */
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, top - PAGE_SIZE, 0,
					 PAGE_SIZE, MD_MMU_READ | MD_MMU_WRITE,
					 COLOR), 0);
	KUNIT_ASSERT_EQ(test, md_mmu_map(ct->mmu, 0, PAGE_SIZE, 2 * PAGE_SIZE,
					 MD_MMU_READ | MD_MMU_WRITE,
					 COLOR), 0);
	ct->nr_calls = 0;
	KUNIT_EXPECT_EQ(test, md_mmu_copy(ct->mmu, 0, top - 10, 10, ct_copy,
					  ct, &fault), 0);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(ct->mmu, 0, top - 10, 11, ct_copy,
					  ct, &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.va, top);
	KUNIT_EXPECT_EQ(test, fault.reason, MD_MMU_UNMAPPED);
	KUNIT_EXPECT_EQ(test, md_mmu_copy(ct->mmu, top, 0, 1, ct_copy, ct,
					  &fault), -EFAULT);
	KUNIT_EXPECT_EQ(test, fault.va, top);
	KUNIT_EXPECT_EQ(test, fault.access, MD_MMU_WRITE);
	/* Zero bytes: nothing to check, nothing copied. */
	KUNIT_EXPECT_EQ(test, md_mmu_copy(ct->mmu, 1ULL << 40, 1ULL << 40, 0,
					  ct_copy, ct, &fault), 0);
	KUNIT_EXPECT_EQ(test, ct->nr_calls, 1u);
	KUNIT_EXPECT_EQ(test, ct->calls[0].src, 0ull + PAGE_SIZE - 10);
	KUNIT_EXPECT_EQ(test, ct->calls[0].dst, (u64)PAGE_SIZE);
	md_mmu_unmap(ct->mmu, top - PAGE_SIZE, PAGE_SIZE);
	md_mmu_unmap(ct->mmu, 0, 2 * PAGE_SIZE);
	done(test, ct->mmu);
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
	KUNIT_CASE(copy_leaf_slots),
	KUNIT_CASE(copy_excludes_writers),
	KUNIT_CASE(copy_run_shapes),
	KUNIT_CASE(copy_fault_at_every_page),
	KUNIT_CASE(copy_chunks_and_limits),
	{}
};

static struct kunit_suite md_mmu_suite = {
	.name = "metadef_mmu",
	.test_cases = md_mmu_cases,
};

kunit_test_suite(md_mmu_suite);
