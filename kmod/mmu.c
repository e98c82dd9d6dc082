// SPDX-License-Identifier: GPL-2.0
/*
 * The soft-MMU's page table and its walk: see mmu.h for the format. Every
 * access to the table is under mmu->lock: writers map and unmap, readers
 * translate (and keep the lock while they use the translation, so that
 * the memory cannot be unmapped and reused under them).
 *
 * Table pages are allocated on demand by md_mmu_map() and only freed by
 * md_mmu_fini(): a domain's tables are bounded by the device VA span its
 * pages use, which the pool bounds.
 */
#include <linux/bits.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
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

int md_mmu_init(struct md_mmu *mmu, u16 color)
{
	init_rwsem(&mmu->lock);
	mmu->root = (u64 *)get_zeroed_page(GFP_KERNEL);
	if (!mmu->root)
		return -ENOMEM;
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
	mmu->nr_tables = 0;
	mmu->nr_leaves = 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_fini);

/*
 * The leaf entry for @va, allocating missing tables when @alloc; NULL when
 * a table is missing and !@alloc; ERR_PTR(-ENOMEM). Under mmu->lock, held
 * for writing when @alloc.
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
	return &t[table_index(va, 0)];
}

static bool range_ok(u64 va, u64 size)
{
	return size && PAGE_ALIGNED(va) && PAGE_ALIGNED(size) &&
	       va < VA_LIMIT && size <= VA_LIMIT - va;
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

	down_write(&mmu->lock);
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
	up_write(&mmu->lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_map);

/* Unmap every page of [@va, @va + @size) that is mapped; the rest is fine. */
void md_mmu_unmap(struct md_mmu *mmu, u64 va, u64 size)
{
	if (!range_ok(va, size))
		return;
	down_write(&mmu->lock);
	unmap_locked(mmu, va, size);
	up_write(&mmu->lock);
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_unmap);

/* Does leaf @e allow @access in @mmu? */
static enum md_mmu_fault leaf_check(struct md_mmu *mmu, const u64 *e,
				    unsigned int access)
{
	if (!e || !(*e & PTE_VALID))
		return MD_MMU_UNMAPPED;
	if ((*e & access) != access)
		return MD_MMU_PERM;
	if (leaf_color(*e) != mmu->color)
		return MD_MMU_COLOR;
	return MD_MMU_OK;
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
 * run costs about one load per page.
 *
 * Return: MD_MMU_OK, or why the page holding @va faults.
 */
enum md_mmu_fault md_mmu_translate_run(struct md_mmu *mmu, u64 va, u64 max,
				       unsigned int access, u64 *pool_off,
				       u64 *len)
{
	u64 next, n, want, *e;
	enum md_mmu_fault f;

	lockdep_assert_held(&mmu->lock);
	if (va >= VA_LIMIT)
		return MD_MMU_UNMAPPED;
	e = walk(mmu, va, false);
	f = leaf_check(mmu, e, access);
	if (f)
		return f;
	*pool_off = (*e & PTE_PAGE_MASK) | (va & ~PAGE_MASK);
	n = PAGE_SIZE - (va & ~PAGE_MASK);
	next = (va & PAGE_MASK) + PAGE_SIZE;
	/*
	 * The run goes on while each leaf is the previous one with the next
	 * pool page: same valid, permission and color bits, so one compare
	 * per page (a page-number overflow would change the color bits and
	 * end the run).
	 */
	want = *e + PAGE_SIZE;
	while (n < max && next < VA_LIMIT) {
		/* Within a leaf table the next entry is the next page. */
		if (table_index(next, 0)) {
			e++;
		} else {
			e = walk(mmu, next, false);
			if (!e)
				break;
		}
		if (*e != want)
			break;
		want += PAGE_SIZE;
		n += PAGE_SIZE;
		next += PAGE_SIZE;
	}
	*len = min(n, max);
	return MD_MMU_OK;
}
EXPORT_SYMBOL_IF_KUNIT(md_mmu_translate_run);

/* The first runs of a range, remembered by the check for the copy. */
#define MD_COPY_RUNS	4

struct md_copy_runs {
	unsigned int nr;	/* runs recorded; the range has more if full */
	u64 off[MD_COPY_RUNS];
	u64 len[MD_COPY_RUNS];
};

/*
 * Every page of [@va, @va + @size) must translate for @access. The first
 * MD_COPY_RUNS runs are kept in @runs: most copies are one run per side
 * and need no second walk.
 */
static int check_range(struct md_mmu *mmu, u64 va, u64 size,
		       unsigned int access, struct md_copy_runs *runs,
		       struct md_mmu_fault_info *fault)
{
	u64 done = 0, off, n;
	enum md_mmu_fault f;

	runs->nr = 0;
	while (done < size) {
		f = md_mmu_translate_run(mmu, va + done, size - done, access,
					 &off, &n);
		if (f) {
			fault->va = va + done;
			fault->access = access;
			fault->reason = f;
			return -EFAULT;
		}
		if (runs->nr < MD_COPY_RUNS) {
			runs->off[runs->nr] = off;
			runs->len[runs->nr++] = n;
		}
		done += n;
	}
	return 0;
}

/*
 * Where byte @done of a checked range is, and how much follows it in the
 * pool: from the remembered runs, else by walking again.
 */
static u64 locate(struct md_mmu *mmu, u64 va, u64 done, u64 max,
		  unsigned int access, const struct md_copy_runs *runs,
		  u64 *off)
{
	u64 start = 0, n;
	unsigned int i;

	for (i = 0; i < runs->nr; start += runs->len[i++]) {
		if (done < start + runs->len[i]) {
			*off = runs->off[i] + (done - start);
			return min(max, start + runs->len[i] - done);
		}
	}
	/* Checked, and nothing can change under the lock. */
	if (WARN_ON(md_mmu_translate_run(mmu, va + done, max, access, off, &n)))
		return 0;
	return n;
}

/**
 * md_mmu_copy() - the copy engine: move @size bytes from device VA @src
 * to device VA @dst as the owner of @mmu sees them
 * @mmu: the table; the caller holds mmu->lock (reading is enough)
 *       throughout, so no page can be unmapped (and reused) in between
 * @dst: first byte written
 * @src: first byte read
 * @size: bytes, > 0, neither range wrapping
 * @copy: moves @len bytes between pool offsets; the ranges are contiguous
 *        in the pool and at most MD_MMU_COPY_CHUNK long
 * @ctx: for @copy
 * @fault: out: where and why, when the copy faults
 *
 * All or nothing: both ranges are translated in full first, and a single
 * page that is unmapped, lacks the permission or has another color fails
 * the copy before a byte moves. The copy then goes run by run (pages that
 * are consecutive in the pool on both sides), rescheduling between chunks.
 *
 * Return: 0, or -EFAULT with @fault filled in.
 */
int md_mmu_copy(struct md_mmu *mmu, u64 dst, u64 src, u64 size,
		md_mmu_copy_fn copy, void *ctx, struct md_mmu_fault_info *fault)
{
	struct md_copy_runs sruns, druns;
	u64 done = 0, so, dof, n;

	lockdep_assert_held(&mmu->lock);
	if (check_range(mmu, src, size, MD_MMU_READ, &sruns, fault) ||
	    check_range(mmu, dst, size, MD_MMU_WRITE, &druns, fault))
		return -EFAULT;
	while (done < size) {
		n = min_t(u64, size - done, MD_MMU_COPY_CHUNK);
		n = locate(mmu, src, done, n, MD_MMU_READ, &sruns, &so);
		n = locate(mmu, dst, done, n, MD_MMU_WRITE, &druns, &dof);
		if (!n)
			return -EFAULT;
		copy(ctx, dof, so, n);
		done += n;
		if (done < size)
			cond_resched();
	}
	return 0;
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
