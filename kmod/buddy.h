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
 *  - The free blocks of each order are a bitmap, one bit per aligned block
 *    of that order ("a free block of this order starts here"), with summary
 *    levels above it (a bit per word of the level below) so the lowest,
 *    highest, next or previous free block is found in O(log64 n) and a
 *    block is inserted, removed or tested (the buddy test when freeing) in
 *    O(1). Metadata: about two bits per chunk for all orders together
 *    (0.006 % of a pool of 4 KiB chunks: 4 MiB for 64 GiB), allocated once
 *    by md_buddy_init*(); nothing is allocated per block or allocation.
 *  - An allocation is one contiguous range [offset, offset + size) rounded
 *    up to whole chunks. It is carved out of one free block: the parts of
 *    the block outside the range go back as the aligned power-of-two
 *    blocks that make them up. Freeing cuts the range into aligned
 *    power-of-two pieces again (arithmetic on offset and size) and merges
 *    each with its buddies, so it needs no memory and cannot fail.
 *  - A caller chooses where only as far as bottom-up or top-down and,
 *    optionally, a window [start, end) to place inside. There is no way to
 *    ask for one exact offset: with tenants sharing a pool, that would tell
 *    one of them where the others' memory is.
 *  - Allocating needs no memory either: a request that cannot be satisfied
 *    fails without side effects.
 */
#ifndef _METADEF_BUDDY_H
#define _METADEF_BUDDY_H

#include <linux/bits.h>
#include <linux/types.h>

struct seq_file;

#define MD_BUDDY_MAX_ORDER	63	/* orders 0..63: chunk << 63 still fits */
#define MD_BUDDY_LEVELS		6	/* bitmap levels: 2^36 bits on 64-bit */

/* md_buddy_alloc() flags */
#define MD_BUDDY_TOPDOWN	BIT(0)	/* prefer the highest offsets */
#define MD_BUDDY_RANGE		BIT(1)	/* place inside [start, end) */
#define MD_BUDDY_FLAGS		(MD_BUDDY_TOPDOWN | MD_BUDDY_RANGE)

/**
 * struct md_buddy_bits - the free blocks of one order
 * @lvl: lvl[0] has bit i set when block i of this order is free; bit j of
 *       lvl[l + 1] is set when word j of lvl[l] is not zero
 * @nbits: bits of each level (lvl[0]: the blocks of this order in the pool)
 * @nlevels: levels in use; the top one is a single word
 *
 * Bits past @nbits in a level's last word are always clear.
 */
struct md_buddy_bits {
	unsigned long *lvl[MD_BUDDY_LEVELS];
	u64 nbits[MD_BUDDY_LEVELS];
	unsigned int nlevels;
};

/**
 * struct md_buddy - one allocator
 * @size: bytes managed, a multiple of the chunk size
 * @chunk_shift: log2 of the minimum block size
 * @max_order: largest order of any root
 * @avail: free bytes
 * @nonempty: bit k set when order k has a free block
 * @nr_free: number of free blocks per order
 * @bits: free blocks of orders 0..@max_order
 * @words: the memory of every level of every order in @bits
 * @nr_words: unsigned longs in @words
 * @nr_roots: number of roots
 * @cap_order: order of the capped roots (63: no cap)
 * @full_end: chunks covered by the roots of order @cap_order, which come
 *            first; the rest, @tail chunks, are one root per set bit
 * @tail: chunks after @full_end
 */
struct md_buddy {
	u64 size;
	unsigned int chunk_shift;
	unsigned int max_order;
	u64 avail;
	u64 nonempty;
	u64 nr_free[MD_BUDDY_MAX_ORDER + 1];
	struct md_buddy_bits *bits;
	unsigned long *words;
	u64 nr_words;
	unsigned int nr_roots;
	unsigned int cap_order;
	u64 full_end;
	u64 tail;
};

/**
 * struct md_buddy_alloc - one allocation, owned (usually embedded) by the
 * caller and passed back to md_buddy_free()
 * @offset: first byte
 * @size: bytes, a multiple of the chunk size
 * @live: set between a successful alloc and its free
 */
struct md_buddy_alloc {
	u64 offset;
	u64 size;
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

#endif /* _METADEF_BUDDY_H */
