/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A buddy allocator over the offsets [0, size): pure logic, no device, no
 * locks (the caller serialises every call on one allocator), unit-tested
 * alone by KUnit (tests/buddy_test.c).
 *
 * Shape:
 *  - The managed range is cut into "roots": the power-of-two blocks of the
 *    binary representation of size, largest first, so every root is aligned
 *    to its own size and a pool need not be a power of two. A cap on the
 *    root size (md_buddy_init_capped) keeps every block inside one
 *    physically contiguous piece of a pool made of several.
 *  - Block sizes are chunk << order; chunk (the minimum block) is a power of
 *    two, by default PAGE_SIZE.
 *  - Free blocks of each order live in an rbtree keyed by offset: O(log n)
 *    insert, remove and buddy lookup, O(1) lowest block (cached leftmost)
 *    and a bitmap of non-empty orders, so neither allocation nor freeing
 *    walks a list.
 *  - An allocation is one contiguous range [offset, offset + size) rounded
 *    up to whole chunks. It is carved out of one free block (or, for an
 *    exact range, out of the free blocks covering it) and remembers the
 *    aligned power-of-two pieces it consists of, so freeing needs no memory
 *    and cannot fail; the unused tail of a block goes straight back.
 *  - All memory a call needs is taken before anything changes: a request
 *    that cannot be satisfied fails without side effects.
 */
#ifndef _METADEF_BUDDY_H
#define _METADEF_BUDDY_H

#include <linux/list.h>
#include <linux/rbtree.h>
#include <linux/types.h>

struct seq_file;

#define MD_BUDDY_MAX_ORDER	63	/* orders 0..63: chunk << 63 still fits */

/* md_buddy_alloc() flags */
#define MD_BUDDY_TOPDOWN	(1u << 0)	/* prefer the highest offsets */
#define MD_BUDDY_RANGE		(1u << 1)	/* place inside [start, end) */
#define MD_BUDDY_EXACT		(1u << 2)	/* exactly [start, start + size) */
#define MD_BUDDY_FLAGS		(MD_BUDDY_TOPDOWN | MD_BUDDY_RANGE | MD_BUDDY_EXACT)

/**
 * struct md_buddy - one allocator
 * @size: bytes managed, a multiple of the chunk size
 * @chunk_shift: log2 of the minimum block size
 * @max_order: largest order of any root
 * @avail: free bytes
 * @nonempty: bit k set when free[k] holds a block
 * @nr_free: number of free blocks per order
 * @free: free blocks per order, keyed by offset
 * @nr_roots: number of roots
 * @root_offset: offset of each root, ascending
 * @root_order: order of each root
 */
struct md_buddy {
	u64 size;
	unsigned int chunk_shift;
	unsigned int max_order;
	u64 avail;
	u64 nonempty;
	u64 nr_free[MD_BUDDY_MAX_ORDER + 1];
	struct rb_root_cached free[MD_BUDDY_MAX_ORDER + 1];
	unsigned int nr_roots;
	u64 *root_offset;
	u8 *root_order;
};

/**
 * struct md_buddy_alloc - one allocation, owned (usually embedded) by the
 * caller and passed back to md_buddy_free()
 * @offset: first byte
 * @size: bytes, a multiple of the chunk size
 * @pieces: the aligned power-of-two blocks that make it up
 * @live: set between a successful alloc and its free
 */
struct md_buddy_alloc {
	u64 offset;
	u64 size;
	struct list_head pieces;
	bool live;
};

int md_buddy_init(struct md_buddy *mm, u64 size, u64 chunk);
int md_buddy_init_capped(struct md_buddy *mm, u64 size, u64 chunk,
			 u64 max_block);
void md_buddy_fini(struct md_buddy *mm);

int md_buddy_alloc(struct md_buddy *mm, struct md_buddy_alloc *a, u64 size,
		   u64 align, u64 start, u64 end, unsigned int flags,
		   gfp_t gfp);
int md_buddy_free(struct md_buddy *mm, struct md_buddy_alloc *a);

static inline u64 md_buddy_chunk(const struct md_buddy *mm)
{
	return 1ULL << mm->chunk_shift;
}

static inline u64 md_buddy_block_size(const struct md_buddy *mm,
				      unsigned int order)
{
	return 1ULL << (mm->chunk_shift + order);
}

u64 md_buddy_largest(const struct md_buddy *mm);
int md_buddy_check(const struct md_buddy *mm);
void md_buddy_show(const struct md_buddy *mm, struct seq_file *m);

int md_buddy_cache_init(void);
void md_buddy_cache_exit(void);

#endif /* _METADEF_BUDDY_H */
