/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The soft-MMU: one device page table per memory domain, mapping device
 * virtual addresses to pool pages with permissions and a color tag. The
 * copy engine (the COPY ioctl, standing in for an NPU's DMA) translates
 * every page it touches through the caller's table.
 *
 * The table format and its walk live only in mmu.c, so a driver for real
 * hardware can program the same layout into an IOMMU or NPU MMU:
 *
 *  - 48-bit device VAs, 4 KiB pages, four levels of 512 64-bit entries
 *    (9 + 9 + 9 + 9 + 12 bits), each table one zeroed page;
 *  - a table entry: bit 0 valid, bits 12..51 the physical address of the
 *    next-level table;
 *  - a leaf entry: bit 0 valid, bit 1 read, bit 2 write, bits 12..47 the
 *    pool page number, bits 48..63 the color of the domain it belongs to.
 *    A walk checks valid, then permission, then color: a page of another
 *    color in a domain's table (a bug, or corruption) is never usable.
 */
#ifndef _METADEF_MMU_H
#define _METADEF_MMU_H

#include <linux/bits.h>
#include <linux/rwsem.h>
#include <linux/types.h>

struct seq_file;

#define MD_MMU_VA_BITS		48
#define MD_MMU_READ		BIT(1)
#define MD_MMU_WRITE		BIT(2)
#define MD_MMU_PERMS		(MD_MMU_READ | MD_MMU_WRITE)

/* Why a translation failed (positive codes, for the fault log). */
enum md_mmu_fault {
	MD_MMU_OK = 0,
	MD_MMU_UNMAPPED,
	MD_MMU_PERM,
	MD_MMU_COLOR,
};

/* Leaf tables md_mmu_map() remembers, for the readers' walks. */
#define MD_MMU_LEAF_SLOTS	32

/**
 * struct md_mmu_leaf_slot - a leaf table and the VAs it maps
 * @key: the VA >> 21 of the 2 MiB the table maps; ~0 when empty
 * @table: the leaf table
 */
struct md_mmu_leaf_slot {
	u64 key;
	u64 *table;
};

/**
 * struct md_mmu - one domain's device page table
 * @lock: writers map and unmap; readers translate and must keep holding it
 *        while they use what they translated. md_mmu_copy() takes it
 *        itself, or for a one-page copy excludes writers without it
 * @writing: a writer holds @lock and one-page copies must not start
 * @copiers: one-page copies in progress, per CPU (see mmu.c)
 * @root: the top-level table
 * @color: tag of this table's own pages
 * @nr_tables: table pages allocated, the root included
 * @nr_leaves: valid leaf entries
 * @slots: leaf tables that md_mmu_map() walked to, by VA >> 21 modulo
 *         MD_MMU_LEAF_SLOTS: written under @lock held for writing, read
 *         under @lock; a table is never freed nor moved before
 *         md_mmu_fini(), so a slot is never stale
 */
struct md_mmu {
	struct rw_semaphore lock;
	int writing;
	unsigned int __percpu *copiers;
	u64 *root;
	u16 color;
	unsigned long nr_tables;
	unsigned long nr_leaves;
	struct md_mmu_leaf_slot slots[MD_MMU_LEAF_SLOTS];
};

/* Where and why a copy faulted. */
struct md_mmu_fault_info {
	u64 va;
	unsigned int access;
	enum md_mmu_fault reason;
};

/* The copy engine moves at most this much between chances to reschedule. */
#define MD_MMU_COPY_CHUNK	BIT_ULL(20)

/* Moves bytes between pool offsets for md_mmu_copy(); must not sleep. */
typedef void (*md_mmu_copy_fn)(void *ctx, u64 dst_off, u64 src_off, u64 len);

int md_mmu_init(struct md_mmu *mmu, u16 color);
void md_mmu_fini(struct md_mmu *mmu);
int md_mmu_map(struct md_mmu *mmu, u64 va, u64 pool_off, u64 size,
	       unsigned int perm, u16 color);
void md_mmu_unmap(struct md_mmu *mmu, u64 va, u64 size);
enum md_mmu_fault md_mmu_translate(struct md_mmu *mmu, u64 va,
				   unsigned int access, u64 *pool_off);
enum md_mmu_fault md_mmu_translate_run(struct md_mmu *mmu, u64 va, u64 max,
				       unsigned int access, u64 *pool_off,
				       u64 *len);
int md_mmu_copy(struct md_mmu *mmu, u64 dst, u64 src, u64 size,
		md_mmu_copy_fn copy, void *ctx, struct md_mmu_fault_info *fault);
int md_mmu_check(struct md_mmu *mmu);
void md_mmu_show(struct md_mmu *mmu, struct seq_file *m);
const char *md_mmu_fault_name(enum md_mmu_fault f);

#endif /* _METADEF_MMU_H */
