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
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/seq_file.h>

#include "metadef.h"
#include "mmu.h"

#define LEVELS		4
#define LEVEL_BITS	9
#define ENTRIES		(1u << LEVEL_BITS)
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
MD_EXPORT_FOR_TESTS(md_mmu_init);

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
MD_EXPORT_FOR_TESTS(md_mmu_fini);

/*
 * The leaf entry for @va, allocating missing tables when @alloc; NULL when
 * a table is missing and !@alloc; ERR_PTR(-ENOMEM).
 */
static u64 *walk(struct md_mmu *mmu, u64 va, bool alloc)
{
	u64 *t = mmu->root;
	int level;

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

static void unmap_locked(struct md_mmu *mmu, u64 va, u64 size)
{
	u64 end = va + size;

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
MD_EXPORT_FOR_TESTS(md_mmu_map);

/* Unmap every page of [@va, @va + @size) that is mapped; the rest is fine. */
void md_mmu_unmap(struct md_mmu *mmu, u64 va, u64 size)
{
	if (!range_ok(va, size))
		return;
	down_write(&mmu->lock);
	unmap_locked(mmu, va, size);
	up_write(&mmu->lock);
}
MD_EXPORT_FOR_TESTS(md_mmu_unmap);

/**
 * md_mmu_translate() - the pool byte behind device VA @va
 * @mmu: the table; the caller holds mmu->lock for reading
 * @va: any byte address
 * @access: MD_MMU_READ or MD_MMU_WRITE (or both)
 * @pool_off: out: the pool offset of byte @va
 *
 * Return: MD_MMU_OK, or why the access faults.
 */
enum md_mmu_fault md_mmu_translate(struct md_mmu *mmu, u64 va,
				   unsigned int access, u64 *pool_off)
{
	u64 *e;

	if (va >= VA_LIMIT)
		return MD_MMU_UNMAPPED;
	e = walk(mmu, va, false);
	if (!e || !(*e & PTE_VALID))
		return MD_MMU_UNMAPPED;
	if ((*e & access) != access)
		return MD_MMU_PERM;
	if (leaf_color(*e) != mmu->color)
		return MD_MMU_COLOR;
	*pool_off = (*e & PTE_PAGE_MASK) | (va & ~PAGE_MASK);
	return MD_MMU_OK;
}
MD_EXPORT_FOR_TESTS(md_mmu_translate);

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
MD_EXPORT_FOR_TESTS(md_mmu_fault_name);

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
MD_EXPORT_FOR_TESTS(md_mmu_check);

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
 * md_mmu_show() - the table as ranges, for debugfs "mmu/<domain>": one line
 * per run of pages mapped to consecutive pool pages with the same
 * permissions and color, in VA order.
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
