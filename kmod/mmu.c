// SPDX-License-Identifier: GPL-2.0
/*
 * The soft-MMU's page table and its walk: see mmu.h for the format. Every
 * access to the table excludes writers: writers map and unmap under
 * mmu->lock held for writing; readers translate under it held for reading
 * (and keep it while they use the translation, so that the memory cannot
 * be unmapped and reused under them), except the copy engine's one-page
 * copies, which exclude writers without it: see copy_enter().
 *
 * Table pages are allocated on demand by md_mmu_map() and only freed by
 * md_mmu_fini(): a domain's tables are bounded by the device VA span its
 * pages use, which the pool bounds. A table entry, once set, never
 * changes (unmapping clears leaves only), so the leaf table found for a
 * VA is the same until md_mmu_fini(): that is what lets md_mmu_map()
 * leave leaf tables in mmu->slots for readers to find without a walk.
 */
#include <linux/bits.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/seq_file.h>

#include "export.h"
#include "mmu.h"

#define LEVELS		4
#define LEVEL_BITS	9
#define ENTRIES		BIT(LEVEL_BITS)
#define PTE_VALID	BIT_ULL(0)
#define PTE_TABLE_MASK	GENMASK_ULL(51, 12)
#define PTE_PAGE_MASK	GENMASK_ULL(47, 12)
#define PTE_COLOR_SHIFT	48
#define VA_LIMIT	BIT_ULL(MD_MMU_VA_BITS)
#define LEAF_SHIFT	(PAGE_SHIFT + LEVEL_BITS)	/* a leaf table's span */

static inline unsigned int table_index(u64 va, int level)
{
	return (va >> (PAGE_SHIFT + LEVEL_BITS * level)) & (ENTRIES - 1);
}

static inline u64 *md_next_table(u64 entry)
{
	return phys_to_virt(entry & PTE_TABLE_MASK);
}

static inline u16 leaf_color(u64 pte)
{
	return pte >> PTE_COLOR_SHIFT;
}

static void slots_clear(struct md_mmu *mmu)
{
	unsigned int i;

	for (i = 0; i < MD_MMU_LEAF_SLOTS; i++)
		mmu->slots[i] = (struct md_mmu_leaf_slot){ .key = ~0ULL };
}

static inline struct md_mmu_leaf_slot *slot_of(struct md_mmu *mmu, u64 va)
{
	return &mmu->slots[(va >> LEAF_SHIFT) % MD_MMU_LEAF_SLOTS];
}

int md_mmu_init(struct md_mmu *mmu, u16 color)
{
	init_rwsem(&mmu->lock);
	slots_clear(mmu);
	mmu->writing = 0;
	mmu->copiers = alloc_percpu(unsigned int);
	if (!mmu->copiers)
		return -ENOMEM;
	mmu->root = (u64 *)get_zeroed_page(GFP_KERNEL);
	if (!mmu->root) {
		free_percpu(mmu->copiers);
		mmu->copiers = NULL;
		return -ENOMEM;
	}
	mmu->color = color;
	mmu->nr_tables = 1;
	mmu->nr_leaves = 0;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_init);

static void free_level(u64 *table, int level)
{
	unsigned int i;

	if (level > 0)
		for (i = 0; i < ENTRIES; i++)
			if (table[i] & PTE_VALID)
				free_level(md_next_table(table[i]), level - 1);
	free_page((unsigned long)table);
}

void md_mmu_fini(struct md_mmu *mmu)
{
	if (mmu->root)
		free_level(mmu->root, LEVELS - 1);	/* depth 4: bounded */
	mmu->root = NULL;
	free_percpu(mmu->copiers);
	mmu->copiers = NULL;
	slots_clear(mmu);
	mmu->nr_tables = 0;
	mmu->nr_leaves = 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_fini);

/*
 * The leaf entry for @va, allocating missing tables when @alloc; NULL when
 * a table is missing and !@alloc; ERR_PTR(-ENOMEM). Under mmu->lock, held
 * for writing when @alloc, and then the leaf table goes into @va's slot:
 * the tables md_mmu_map() walked to last are the ones copies use.
 */
static u64 *walk(struct md_mmu *mmu, u64 va, bool alloc)
{
	u64 *t = mmu->root;
	int level;

	if (alloc)
		lockdep_assert_held_write(&mmu->lock);
	else
		lockdep_assert_held(&mmu->lock);
	for (level = LEVELS - 1; level > 0; level--) {
		u64 *e = &t[table_index(va, level)];

		if (!(*e & PTE_VALID)) {
			u64 *n;

			if (!alloc)
				return NULL;
			n = (u64 *)get_zeroed_page(GFP_KERNEL);
			if (!n)
				return ERR_PTR(-ENOMEM);
			*e = virt_to_phys(n) | PTE_VALID;
			mmu->nr_tables++;
		}
		t = md_next_table(*e);
	}
	if (alloc)
		*slot_of(mmu, va) = (struct md_mmu_leaf_slot){
			.key = va >> LEAF_SHIFT, .table = t };
	return &t[table_index(va, 0)];
}

/*
 * walk() for readers, unrolled, in two halves: the level-1 table (whose
 * entries point to leaf tables) covering @va, or NULL where a table is
 * missing; then the leaf entry for @va in it, or NULL. Under mmu->lock.
 */
static __always_inline u64 *lookup_l1(struct md_mmu *mmu, u64 va)
{
	u64 e;

	BUILD_BUG_ON(LEVELS != 4);
	e = mmu->root[table_index(va, 3)];
	if (unlikely(!(e & PTE_VALID)))
		return NULL;
	e = md_next_table(e)[table_index(va, 2)];
	if (unlikely(!(e & PTE_VALID)))
		return NULL;
	return md_next_table(e);
}

static __always_inline u64 *lookup_in(const u64 *l1, u64 va)
{
	u64 e = l1[table_index(va, 1)];

	if (unlikely(!(e & PTE_VALID)))
		return NULL;
	return &md_next_table(e)[table_index(va, 0)];
}

/*
 * The leaf entry for @va (< VA_LIMIT), or NULL: from @va's slot when it
 * holds @va's leaf table (one load instead of three levels), else walked.
 * Under mmu->lock.
 */
static __always_inline u64 *lookup(struct md_mmu *mmu, u64 va)
{
	const struct md_mmu_leaf_slot *s = slot_of(mmu, va);
	u64 *l1;

	if (likely(s->key == va >> LEAF_SHIFT))
		return &s->table[table_index(va, 0)];
	l1 = lookup_l1(mmu, va);
	return l1 ? lookup_in(l1, va) : NULL;
}

static bool range_ok(u64 va, u64 size)
{
	return size && PAGE_ALIGNED(va) && PAGE_ALIGNED(size) &&
	       va < VA_LIMIT && size <= VA_LIMIT - va;
}

/*
 * The copy engine's one-page copies do not take mmu->lock: each counts
 * itself in its CPU's mmu->copiers, with preemption off, for as long as
 * it reads the table and copies, and gives way when mmu->writing is set.
 * A writer takes the lock for writing (excluding every other reader and
 * writer), sets mmu->writing and waits until no CPU counts a copy; only
 * then does it change the table.
 *
 * Why no copy can use a translation a writer changes: a copy stores its
 * count, then (full barrier) loads mmu->writing; a writer stores
 * mmu->writing, then (full barrier) loads every count. With a full
 * barrier between each side's store and load, at least one side sees the
 * other's store. If the copy sees mmu->writing set, it does not touch the
 * table (it takes the lock, after the writer). If the writer sees the
 * count, it waits for the copy to drop it, which the copy does with
 * release order after its last access to the table and the pool: an
 * acquire load that reads the drop orders the writer's changes after all
 * of them. Clearing mmu->writing is a release, paired with the copy's
 * acquire load of it, so a copy that starts after a writer sees its
 * changes.
 *
 * A copy counts itself for one page's worth of bytes at most and never
 * waits while it does, so a writer waits that long at most (rescheduling
 * as it waits, as it may sleep anyway).
 */
static void table_write_lock(struct md_mmu *mmu)
{
	int cpu;

	down_write(&mmu->lock);
	WRITE_ONCE(mmu->writing, 1);
	smp_mb();	/* writing, then the counts: see above */
	for_each_possible_cpu(cpu) {
		unsigned int *n = per_cpu_ptr(mmu->copiers, cpu);

		/* Acquire: pairs with copy_exit()'s release of the count. */
		while (smp_load_acquire(n)) {
			cpu_relax();
			cond_resched();	/* the copier's vCPU may be stalled */
		}
	}
}

static void table_write_unlock(struct md_mmu *mmu)
{
	/* Release: the table's new state, then writing; see copy_enter(). */
	smp_store_release(&mmu->writing, 0);
	up_write(&mmu->lock);
}

/*
 * A one-page copy starts: true when it may read the table (until
 * copy_exit()), false when a writer is at work (take the lock instead).
 * Process context only (md_mmu_copy() may sleep): the count of a CPU is
 * only changed by the task that runs there with preemption off.
 */
static __always_inline bool copy_enter(struct md_mmu *mmu)
{
	unsigned int *n;

	preempt_disable();
	n = this_cpu_ptr(mmu->copiers);
	WRITE_ONCE(*n, *n + 1);
	smp_mb();	/* the count, then writing: see table_write_lock() */
	if (likely(!smp_load_acquire(&mmu->writing))) {
		/* For lockdep: a reader of the table, ordered as one. */
		rwsem_acquire_read(&mmu->lock.dep_map, 0, 0, _RET_IP_);
		return true;
	}
	/* Gives way without touching the table: see table_write_lock(). */
	smp_store_release(n, *n - 1);
	preempt_enable();
	return false;
}

static __always_inline void copy_exit(struct md_mmu *mmu)
{
	unsigned int *n = this_cpu_ptr(mmu->copiers);

	rwsem_release(&mmu->lock.dep_map, _RET_IP_);
	/* Every access to the table and the pool before the count drops. */
	smp_store_release(n, *n - 1);
	preempt_enable();
}

/* Under mmu->lock held for writing. */
static void unmap_locked(struct md_mmu *mmu, u64 va, u64 size)
{
	u64 end = va + size;

	lockdep_assert_held_write(&mmu->lock);
	while (va < end) {
		u64 *e = walk(mmu, va, false);

		if (!e) {
			/* No leaf table here: skip what it would have held. */
			va = round_up(va + 1, PAGE_SIZE << LEVEL_BITS);
			continue;
		}
		if (*e & PTE_VALID) {
			*e = 0;
			mmu->nr_leaves--;
		}
		va += PAGE_SIZE;
	}
}

/**
 * md_mmu_map() - map [@va, @va + @size) to pool bytes from @pool_off
 * @mmu: the table
 * @va: page-aligned device VA
 * @pool_off: page-aligned pool offset
 * @size: bytes, page-aligned, > 0
 * @perm: MD_MMU_READ and/or MD_MMU_WRITE
 * @color: tag stored in every leaf (the domain's own, normally)
 *
 * All or nothing: on error no page of the range is mapped.
 *
 * Return: 0; -EINVAL (misaligned, out of the VA space, bad @perm);
 * -EEXIST (part of the range is mapped already); -ENOMEM.
 */
int md_mmu_map(struct md_mmu *mmu, u64 va, u64 pool_off, u64 size,
	       unsigned int perm, u16 color)
{
	u64 done;
	int ret = 0;

	if (!range_ok(va, size) || !PAGE_ALIGNED(pool_off) ||
	    !perm || (perm & ~MD_MMU_PERMS) ||
	    pool_off > PTE_PAGE_MASK || size - 1 > PTE_PAGE_MASK - pool_off)
		return -EINVAL;

	table_write_lock(mmu);
	for (done = 0; done < size; done += PAGE_SIZE) {
		u64 *e = walk(mmu, va + done, true);

		if (IS_ERR(e)) {
			ret = PTR_ERR(e);
			break;
		}
		if (*e & PTE_VALID) {
			ret = -EEXIST;
			break;
		}
		*e = ((pool_off + done) & PTE_PAGE_MASK) | perm | PTE_VALID |
		     ((u64)color << PTE_COLOR_SHIFT);
		mmu->nr_leaves++;
	}
	if (ret && done)
		unmap_locked(mmu, va, done);
	table_write_unlock(mmu);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_map);

/* Unmap every page of [@va, @va + @size) that is mapped; the rest is fine. */
void md_mmu_unmap(struct md_mmu *mmu, u64 va, u64 size)
{
	if (!range_ok(va, size))
		return;
	table_write_lock(mmu);
	unmap_locked(mmu, va, size);
	table_write_unlock(mmu);
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_unmap);

/* Does leaf @e allow @access in @mmu? */
static inline enum md_mmu_fault leaf_check(struct md_mmu *mmu,
					   const u64 *e, unsigned int access)
{
	if (!e || !(*e & PTE_VALID))
		return MD_MMU_UNMAPPED;
	if ((*e & access) != access)
		return MD_MMU_PERM;
	if (leaf_color(*e) != mmu->color)
		return MD_MMU_COLOR;
	return MD_MMU_OK;
}

/*
 * leaf_check() == MD_MMU_OK for leaf entry @pte in one compare: valid,
 * @access and this table's color, for the copy engine's fast path.
 */
static __always_inline bool pte_ok(struct md_mmu *mmu, u64 pte,
				   unsigned int access)
{
	u64 mask = PTE_VALID | access | GENMASK_ULL(63, PTE_COLOR_SHIFT);

	return (pte & mask) == (PTE_VALID | access |
				(u64)mmu->color << PTE_COLOR_SHIFT);
}

/**
 * md_mmu_translate() - the pool byte behind device VA @va
 * @mmu: the table; the caller holds mmu->lock (reading is enough)
 * @va: any byte address
 * @access: MD_MMU_READ or MD_MMU_WRITE (or both)
 * @pool_off: out: the pool offset of byte @va
 *
 * Return: MD_MMU_OK, or why the access faults.
 */
enum md_mmu_fault md_mmu_translate(struct md_mmu *mmu, u64 va,
				   unsigned int access, u64 *pool_off)
{
	enum md_mmu_fault f;
	u64 *e;

	lockdep_assert_held(&mmu->lock);
	if (va >= VA_LIMIT)
		return MD_MMU_UNMAPPED;
	e = walk(mmu, va, false);
	f = leaf_check(mmu, e, access);
	if (f)
		return f;
	*pool_off = (*e & PTE_PAGE_MASK) | (va & ~PAGE_MASK);
	return MD_MMU_OK;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_translate);

/*
 * How far the run goes that holds @n bytes from @va on, leaf @e's page
 * being its first: up to @max bytes.
 */
static noinline u64 run_extend(struct md_mmu *mmu, const u64 *e, u64 va,
			       u64 n, u64 max)
{
	u64 next = (va & PAGE_MASK) + PAGE_SIZE, want = *e + PAGE_SIZE;
	unsigned int i, k, end;

	/*
	 * The run goes on while each leaf is the previous one with the next
	 * pool page: same valid, permission and color bits, so one compare
	 * per page (a page-number overflow would change the color bits and
	 * end the run). Within a leaf table the next entry is the next page:
	 * the pages of one table the run may take are compared in a row.
	 */
	e++;
	while (n < max && next < VA_LIMIT) {
		i = table_index(next, 0);
		if (!i) {
			e = lookup(mmu, next);
			if (!e)
				break;
		}
		/* A scattered mapping's runs end here: one compare. */
		if (*e != want)
			break;
		/* The pages left to @max, rounded up (no overflow near 2^64). */
		end = min_t(u64, ENTRIES - i, ((max - n - 1) >> PAGE_SHIFT) + 1);
		want += PAGE_SIZE;
		for (k = 1; k < end && e[k] == want; k++)
			want += PAGE_SIZE;
		n += (u64)k << PAGE_SHIFT;
		next += (u64)k << PAGE_SHIFT;
		if (k < end)
			break;
		e += k;
	}
	return min(n, max);
}

/*
 * The run from @va (< VA_LIMIT), whose leaf entry is @e (NULL if a table
 * is missing): its first pool byte in *@pool_off and its length in *@len
 * (at most @max). Inlined into the copy engine, whose fixed cost per call
 * is two of these and one copy; a run beyond the first page costs a call
 * more. See md_mmu_translate_run().
 */
static __always_inline enum md_mmu_fault run_from(struct md_mmu *mmu,
						  const u64 *e, u64 va,
						  u64 max, unsigned int access,
						  u64 *pool_off, u64 *len)
{
	enum md_mmu_fault f;
	u64 n;

	f = leaf_check(mmu, e, access);
	if (f)
		return f;
	*pool_off = (*e & PTE_PAGE_MASK) | (va & ~PAGE_MASK);
	n = PAGE_SIZE - (va & ~PAGE_MASK);
	*len = n >= max ? max : run_extend(mmu, e, va, n, max);
	return MD_MMU_OK;
}

static __always_inline enum md_mmu_fault run_at(struct md_mmu *mmu, u64 va,
						u64 max, unsigned int access,
						u64 *pool_off, u64 *len)
{
	if (va >= VA_LIMIT)
		return MD_MMU_UNMAPPED;
	return run_from(mmu, lookup(mmu, va), va, max, access, pool_off, len);
}

/**
 * md_mmu_translate_run() - translate as much as one contiguous run
 * @mmu: the table; the caller holds mmu->lock (reading is enough)
 * @va: first byte
 * @max: bytes wanted, > 0
 * @access: MD_MMU_READ and/or MD_MMU_WRITE
 * @pool_off: out: pool offset of byte @va
 * @len: out: bytes from @va (at most @max) that all translate for @access
 *       to consecutive pool bytes from @pool_off
 *
 * A run ends where the next page is unmapped, has other permission or
 * color bits, or is not the next pool page: the next call reports that
 * page's fault, or starts a new run there. Consecutive leaves of one leaf
 * table are read in order without walking the upper levels again, so a
 * run costs one walk and one load per further page.
 *
 * Return: MD_MMU_OK, or why the page holding @va faults.
 */
enum md_mmu_fault md_mmu_translate_run(struct md_mmu *mmu, u64 va, u64 max,
				       unsigned int access, u64 *pool_off,
				       u64 *len)
{
	lockdep_assert_held(&mmu->lock);
	return run_at(mmu, va, max, access, pool_off, len);
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_translate_run);

/* Runs of a side remembered by the check, so the copy need not walk again. */
#define MD_COPY_RUNS	8

/* One side of a copy: its range, the runs the check found, a cursor. */
struct md_copy_side {
	u64 va;
	unsigned int access;
	unsigned int nr;	/* runs remembered; more follow if full */
	unsigned int next;	/* the next remembered run to use */
	u64 off;		/* the cursor: pool offset of the next byte */
	u64 left;		/* bytes left in the cursor's run */
	u64 roff[MD_COPY_RUNS];
	u64 rlen[MD_COPY_RUNS];
};

static void set_fault(struct md_mmu_fault_info *fault, u64 va,
		      unsigned int access, enum md_mmu_fault reason)
{
	fault->va = va;
	fault->access = access;
	fault->reason = reason;
}

/*
 * Check that every page of the side's @size bytes translates, run by run;
 * remember the first MD_COPY_RUNS runs.
 */
static int side_check(struct md_mmu *mmu, struct md_copy_side *s, u64 size,
		      struct md_mmu_fault_info *fault)
{
	u64 done = 0, off, len;
	enum md_mmu_fault f;

	s->nr = 0;
	s->next = 0;
	s->left = 0;
	while (done < size) {
		f = run_at(mmu, s->va + done, size - done, s->access, &off,
			   &len);
		if (f) {
			set_fault(fault, s->va + done, s->access, f);
			return -EFAULT;
		}
		if (s->nr < MD_COPY_RUNS) {
			s->roff[s->nr] = off;
			s->rlen[s->nr++] = len;
		}
		done += len;
	}
	return 0;
}

/*
 * Point the cursor of a checked side at its run holding byte @done: a
 * remembered one, else walk again (nothing can have changed: the caller
 * holds the lock throughout).
 */
static int side_next(struct md_mmu *mmu, struct md_copy_side *s, u64 done,
		     u64 size, struct md_mmu_fault_info *fault)
{
	enum md_mmu_fault f;

	if (s->next < s->nr) {
		s->off = s->roff[s->next];
		s->left = s->rlen[s->next++];
		return 0;
	}
	f = run_at(mmu, s->va + done, size - done, s->access, &s->off,
		   &s->left);
	if (WARN_ON(f)) {
		set_fault(fault, s->va + done, s->access, f);
		return -EFAULT;
	}
	return 0;
}

/*
 * The general case (more than one run on some side, or a range beyond the
 * VA space): check both sides in full, then copy joint run by joint run
 * (where neither side's run breaks), each at most MD_MMU_COPY_CHUNK bytes,
 * rescheduling after each chunk's worth of bytes.
 */
static noinline int copy_runs(struct md_mmu *mmu, u64 dst_va, u64 src_va,
			      u64 size, md_mmu_copy_fn copy, void *ctx,
			      struct md_mmu_fault_info *fault)
{
	struct md_copy_side s = { .va = src_va, .access = MD_MMU_READ };
	struct md_copy_side d = { .va = dst_va, .access = MD_MMU_WRITE };
	u64 done = 0, since = 0, n;

	if (side_check(mmu, &s, size, fault) ||
	    side_check(mmu, &d, size, fault))
		return -EFAULT;
	while (done < size) {
		if (!s.left && side_next(mmu, &s, done, size, fault))
			return -EFAULT;
		if (!d.left && side_next(mmu, &d, done, size, fault))
			return -EFAULT;
		n = min3(s.left, d.left, (u64)MD_MMU_COPY_CHUNK);
		copy(ctx, d.off, s.off, n);
		s.off += n;
		s.left -= n;
		d.off += n;
		d.left -= n;
		done += n;
		since += n;
		if (since >= MD_MMU_COPY_CHUNK && done < size) {
			cond_resched();
			since = 0;
		}
	}
	return 0;
}

/* One run each side, more than a chunk: chunk by chunk. */
static noinline int copy_chunks(u64 dof, u64 so, u64 size,
				md_mmu_copy_fn copy, void *ctx)
{
	u64 n;

	for (;;) {
		n = min_t(u64, size, MD_MMU_COPY_CHUNK);
		copy(ctx, dof, so, n);
		size -= n;
		if (!size)
			return 0;
		dof += n;
		so += n;
		cond_resched();
	}
}

/*
 * md_mmu_copy() beyond its fast path: a copy whose ranges cross pages, or
 * one that faults. When each side is one run, one walk of each and the
 * copy in chunks; else copy_runs(). Under mmu->lock.
 */
static noinline int copy_general(struct md_mmu *mmu, u64 dst, u64 src,
				 u64 size, md_mmu_copy_fn copy, void *ctx,
				 struct md_mmu_fault_info *fault)
{
	u64 so, sn, dof, dn;
	enum md_mmu_fault f;

	if (unlikely(!size))
		return 0;
	if (unlikely((src | dst) >= VA_LIMIT))
		goto general;
	f = run_from(mmu, lookup(mmu, src), src, size, MD_MMU_READ, &so, &sn);
	if (unlikely(f)) {
		set_fault(fault, src, MD_MMU_READ, f);
		return -EFAULT;
	}
	if (unlikely(sn != size))
		goto general;
	f = run_from(mmu, lookup(mmu, dst), dst, size, MD_MMU_WRITE, &dof,
		     &dn);
	if (unlikely(f)) {
		set_fault(fault, dst, MD_MMU_WRITE, f);
		return -EFAULT;
	}
	if (unlikely(dn != size))
		goto general;
	/*
	 * One run each side: no more walks. Nothing is live across the one
	 * copy of a single chunk, so this path saves no registers.
	 */
	if (unlikely(size > MD_MMU_COPY_CHUNK))
		return copy_chunks(dof, so, size, copy, ctx);
	copy(ctx, dof, so, size);
	return 0;
general:
	return copy_runs(mmu, dst, src, size, copy, ctx, fault);
}

static noinline int copy_locked(struct md_mmu *mmu, u64 dst, u64 src,
				u64 size, md_mmu_copy_fn copy, void *ctx,
				struct md_mmu_fault_info *fault)
{
	int ret;

	down_read(&mmu->lock);
	ret = copy_general(mmu, dst, src, size, copy, ctx, fault);
	up_read(&mmu->lock);
	return ret;
}

/**
 * md_mmu_copy() - the copy engine: move @size bytes from device VA @src
 * to device VA @dst as the owner of @mmu sees them
 * @mmu: the table; the caller must not hold mmu->lock: the engine
 *       excludes the table's writers itself, from its first look at the
 *       table to its last byte copied, so no page can be unmapped (and
 *       reused) in between
 * @dst: first byte written
 * @src: first byte read
 * @size: bytes, neither range wrapping (0 copies nothing)
 * @copy: moves @len bytes between pool offsets; the ranges are contiguous
 *        in the pool and at most MD_MMU_COPY_CHUNK long. Must not sleep:
 *        a copy within one page each side runs with preemption off
 * @ctx: for @copy
 * @fault: out: where and why, when the copy faults
 *
 * The engine translates runs, not pages: one walk of the table per run
 * (pages consecutive in the device VA space and in the pool, with the same
 * permission and color), one load per further page of it. When each side
 * is one run, as a copy within one region is, that is one walk per side
 * and one call of @copy per MD_MMU_COPY_CHUNK bytes.
 *
 * All or nothing: both ranges are translated in full first (the source,
 * then the destination), and a single page that is unmapped, lacks the
 * permission or has another color fails the copy before a byte moves;
 * @fault names the first byte of the range in the first such page. The
 * copy then calls @copy once per joint run (bytes contiguous in the pool
 * on both sides), at most MD_MMU_COPY_CHUNK bytes at a time, rescheduling
 * between chunks. Overlapping ranges leave undefined data, as memcpy().
 *
 * A copy within one page each side whose leaf tables are in their slots
 * (see mmu.h) excludes writers as copy_enter() says, without mmu->lock;
 * any other takes mmu->lock for reading. Process context: may sleep.
 *
 * Return: 0, or -EFAULT with @fault filled in.
 */
int md_mmu_copy(struct md_mmu *mmu, u64 dst, u64 src, u64 size,
		md_mmu_copy_fn copy, void *ctx, struct md_mmu_fault_info *fault)
{
	const struct md_mmu_leaf_slot *ss, *ds;
	u64 se, de;

	/*
	 * Sleeping in atomic context is caught on debug kernels; the
	 * voluntary preemption point of might_sleep() is not worth a
	 * one-page copy's time (COPY returns to user space right after, and
	 * longer copies reschedule between chunks).
	 */
	if (IS_ENABLED(CONFIG_DEBUG_ATOMIC_SLEEP))
		might_sleep();
	/*
	 * The fast path: each range within one page (size > 0), as a small
	 * copy is, and both leaf tables in their slots, as they are for
	 * regions mapped since: no writer at work, two loads per side, the
	 * checks, the copy. Everything else, faults included, is
	 * copy_general()'s, under mmu->lock.
	 */
	if (likely(size - 1 < PAGE_SIZE - max(src & ~PAGE_MASK,
					      dst & ~PAGE_MASK) &&
		   (src | dst) < VA_LIMIT) && likely(copy_enter(mmu))) {
		ss = slot_of(mmu, src);
		ds = slot_of(mmu, dst);
		if (unlikely(ss->key != src >> LEAF_SHIFT ||
			     ds->key != dst >> LEAF_SHIFT))
			goto general;
		se = ss->table[table_index(src, 0)];
		de = ds->table[table_index(dst, 0)];
		if (unlikely(!pte_ok(mmu, se, MD_MMU_READ) ||
			     !pte_ok(mmu, de, MD_MMU_WRITE)))
			goto general;
		copy(ctx, (de & PTE_PAGE_MASK) | (dst & ~PAGE_MASK),
		     (se & PTE_PAGE_MASK) | (src & ~PAGE_MASK), size);
		copy_exit(mmu);
		return 0;
general:
		copy_exit(mmu);
	}
	return copy_locked(mmu, dst, src, size, copy, ctx, fault);
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_copy);

const char *md_mmu_fault_name(enum md_mmu_fault f)
{
	switch (f) {
	case MD_MMU_OK:
		return "ok";
	case MD_MMU_UNMAPPED:
		return "unmapped";
	case MD_MMU_PERM:
		return "permission";
	case MD_MMU_COLOR:
		return "color";
	}
	return "unknown";
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_fault_name);

static void count_level(u64 *table, int level, unsigned long *tables,
			unsigned long *leaves, bool *bad)
{
	unsigned int i;

	(*tables)++;
	for (i = 0; i < ENTRIES; i++) {
		u64 e = table[i];

		if (!(e & PTE_VALID))
			continue;
		if (level > 0) {
			/* Table entries carry nothing but an address. */
			if (e & ~(PTE_TABLE_MASK | PTE_VALID))
				*bad = true;
			count_level(md_next_table(e), level - 1, tables, leaves, bad);
		} else {
			if (!(e & MD_MMU_PERMS) || (e & ~(PTE_PAGE_MASK |
			    MD_MMU_PERMS | PTE_VALID | GENMASK_ULL(63, 48))))
				*bad = true;
			(*leaves)++;
		}
	}
}

/*
 * md_mmu_check() - the table's invariants: the counters match what a full
 * walk finds, table entries hold only an address, leaves have a permission
 * and no stray bits. For tests and debugging.
 *
 * Return: 0 or -EUCLEAN.
 */
int md_mmu_check(struct md_mmu *mmu)
{
	unsigned long tables = 0, leaves = 0;
	bool bad = false;

	down_read(&mmu->lock);
	count_level(mmu->root, LEVELS - 1, &tables, &leaves, &bad);
	if (tables != mmu->nr_tables || leaves != mmu->nr_leaves)
		bad = true;
	up_read(&mmu->lock);
	return bad ? -EUCLEAN : 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_check);

/* A run of leaves that map consecutive VAs to consecutive pool pages. */
struct md_mmu_run {
	u64 va, pool_off, pages;
	u64 attrs;		/* permission bits and color of every leaf */
	bool open;
};

static void run_flush(struct md_mmu_run *run, struct seq_file *m)
{
	u64 perm = run->attrs & MD_MMU_PERMS;

	if (!run->open)
		return;
	seq_printf(m, "%#llx\t%#llx\t%#llx\t%llu\t%c%c\t%u\n", run->va,
		   run->va + (run->pages << PAGE_SHIFT), run->pool_off,
		   run->pages, perm & MD_MMU_READ ? 'r' : '-',
		   perm & MD_MMU_WRITE ? 'w' : '-', leaf_color(run->attrs));
	run->open = false;
}

static void show_level(u64 *table, int level, u64 base, struct md_mmu_run *run,
		       struct seq_file *m)
{
	unsigned int i;

	for (i = 0; i < ENTRIES; i++) {
		u64 e = table[i], va, off, attrs;

		va = base + ((u64)i << (PAGE_SHIFT + LEVEL_BITS * level));
		if (!(e & PTE_VALID)) {
			run_flush(run, m);
			continue;
		}
		if (level > 0) {
			show_level(md_next_table(e), level - 1, va, run, m);
			continue;
		}
		off = e & PTE_PAGE_MASK;
		attrs = e & ~(PTE_PAGE_MASK | PTE_VALID);
		if (run->open && attrs == run->attrs &&
		    va == run->va + (run->pages << PAGE_SHIFT) &&
		    off == run->pool_off + (run->pages << PAGE_SHIFT)) {
			run->pages++;
			continue;
		}
		run_flush(run, m);
		*run = (struct md_mmu_run){ .va = va, .pool_off = off,
					    .pages = 1, .attrs = attrs,
					    .open = true };
	}
}

/**
 * md_mmu_show() - the table as ranges, for debugfs "mmu/<domain>"
 * @mmu: the table
 * @m: where to print: one line per run of pages mapped to consecutive pool
 *     pages with the same permissions and color, in VA order
 */
void md_mmu_show(struct md_mmu *mmu, struct seq_file *m)
{
	struct md_mmu_run run = { .open = false };

	down_read(&mmu->lock);
	seq_printf(m, "# color %u, %lu table pages, %lu pages mapped\n",
		   mmu->color, mmu->nr_tables, mmu->nr_leaves);
	seq_puts(m, "va_start\tva_end\tpool_offset\tpages\tperm\tcolor\n");
	show_level(mmu->root, LEVELS - 1, 0, &run, m);
	run_flush(&run, m);
	up_read(&mmu->lock);
}
