// SPDX-License-Identifier: GPL-2.0
/*
 * Buddy allocator over [0, size): see buddy.h for the design.
 *
 * Vocabulary: inside this file positions and lengths are in chunks unless
 * they are named in bytes. S(k) = 1 << k chunks is the size of an order-k
 * block; block i of order k starts at chunk i << k, and its buddy (the
 * other half of its parent) is block i ^ 1. "Carving" a range out of a
 * free block removes the block and gives back what lies outside the range
 * as the aligned power-of-two blocks it consists of: each of those has its
 * buddy at least partly inside the range, so none of them can merge.
 */
#include <linux/bitops.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "buddy.h"
#include "export.h"

#define BPL		BITS_PER_LONG
#define NO_BLOCK	U64_MAX

static inline u64 bsize(const struct md_buddy *mm, unsigned int order)
{
	return md_buddy_block_size(mm, order);
}

static inline u64 words_of(u64 nbits)
{
	return nbits / BPL + !!(nbits % BPL);
}

/* ------------------------------------------------- bitmaps per order */

static __always_inline bool bits_test(const struct md_buddy_bits *b, u64 i)
{
	return b->lvl[0][i / BPL] & BIT(i % BPL);
}

/* Set bit @i of level 0, and above it the summary bits that were clear. */
static __always_inline void bits_set(struct md_buddy_bits *b, u64 i)
{
	unsigned int l;

	for (l = 0; l < b->nlevels; l++) {
		unsigned long *w = &b->lvl[l][i / BPL];
		unsigned long old = *w;

		*w = old | BIT(i % BPL);
		if (old)
			break;
		i /= BPL;
	}
}

/* Clear bit @i of level 0, and above it the summaries of emptied words. */
static __always_inline void bits_clear(struct md_buddy_bits *b, u64 i)
{
	unsigned int l;

	for (l = 0; l < b->nlevels; l++) {
		unsigned long *w = &b->lvl[l][i / BPL];

		*w &= ~BIT(i % BPL);
		if (*w)
			break;
		i /= BPL;
	}
}

/* From set bit @i of level @l down to the lowest (highest) set bit under it. */
static __always_inline u64 bits_descend(const struct md_buddy_bits *b,
					unsigned int l, u64 i, bool high)
{
	while (l--) {
		unsigned long w = b->lvl[l][i];

		i = i * BPL + (high ? __fls(w) : __ffs(w));
	}
	return i;
}

static __always_inline u64 bits_first(const struct md_buddy_bits *b)
{
	unsigned int top = b->nlevels - 1;
	unsigned long w = b->lvl[top][0];

	return w ? bits_descend(b, top, __ffs(w), false) : NO_BLOCK;
}

static __always_inline u64 bits_last(const struct md_buddy_bits *b)
{
	unsigned int top = b->nlevels - 1;
	unsigned long w = b->lvl[top][0];

	return w ? bits_descend(b, top, __fls(w), true) : NO_BLOCK;
}

/* The lowest set bit at or above @i, or NO_BLOCK. */
static u64 bits_next(const struct md_buddy_bits *b, u64 i)
{
	unsigned int l;

	for (l = 0; l < b->nlevels && i < b->nbits[l]; l++) {
		unsigned long w = b->lvl[l][i / BPL] & (~0UL << (i % BPL));

		if (w)
			return bits_descend(b, l, round_down(i, BPL) + __ffs(w),
					    false);
		i = i / BPL + 1;
	}
	return NO_BLOCK;
}

/* The highest set bit at or below @i, or NO_BLOCK. */
static u64 bits_prev(const struct md_buddy_bits *b, u64 i)
{
	unsigned int l;

	for (l = 0; l < b->nlevels; l++) {
		unsigned long w;

		i = min(i, b->nbits[l] - 1);
		w = b->lvl[l][i / BPL] & (~0UL >> (BPL - 1 - i % BPL));
		if (w)
			return bits_descend(b, l, round_down(i, BPL) + __fls(w),
					    true);
		if (i < BPL)
			break;
		i = i / BPL - 1;
	}
	return NO_BLOCK;
}

/*
 * Free blocks. @avail is not kept here but by the callers, once per call:
 * a carve takes exactly the allocation's length, a free gives it back.
 */

static __always_inline void free_insert(struct md_buddy *mm, unsigned int k,
					u64 i)
{
	bits_set(&mm->bits[k], i);
	mm->nr_free[k]++;
	mm->nonempty |= BIT_ULL(k);
}

static __always_inline void free_remove(struct md_buddy *mm, unsigned int k,
					u64 i)
{
	bits_clear(&mm->bits[k], i);
	if (!--mm->nr_free[k])
		mm->nonempty &= ~BIT_ULL(k);
}

static __always_inline bool is_free(const struct md_buddy *mm, unsigned int k,
				    u64 i)
{
	return i < mm->bits[k].nbits[0] && bits_test(&mm->bits[k], i);
}

/*
 * Order of the root holding chunk @x: the most a block there can merge.
 * Roots are the capped ones, then one per set bit of @tail, largest first;
 * within the tail, @x lies in the root of the highest bit in which its
 * position differs from @tail.
 */
static __always_inline unsigned int root_order(const struct md_buddy *mm,
					       u64 x)
{
	if (x < mm->full_end)
		return mm->cap_order;
	return fls64((x - mm->full_end) ^ mm->tail) - 1;
}

/* Order of the largest aligned block starting at chunk @x, ending by @end. */
static __always_inline unsigned int piece_order(u64 x, u64 end)
{
	unsigned int k = fls64(end - x) - 1;

	if (x)
		k = min_t(unsigned int, k, __ffs64(x));
	return k;
}

/* Give back [x, end) of a block being carved: no merging possible. */
static __always_inline void free_span(struct md_buddy *mm, u64 x, u64 end)
{
	while (x < end) {
		unsigned int k = piece_order(x, end);

		free_insert(mm, k, x >> k);
		x += BIT_ULL(k);
	}
}

/* Take [from, to) out of free block @i of order @k, which holds it. */
static __always_inline void carve(struct md_buddy *mm, unsigned int k, u64 i,
				  u64 from, u64 to)
{
	u64 o = i << k;

	free_remove(mm, k, i);
	free_span(mm, o, from);
	free_span(mm, to, o + BIT_ULL(k));
}

/* Give back block @x of order @k, merging it while its buddy is free. */
static __always_inline void free_merge(struct md_buddy *mm, u64 x,
				       unsigned int k, unsigned int limit)
{
	while (k < limit) {
		u64 buddy = (x >> k) ^ 1;

		if (!bits_test(&mm->bits[k], buddy))
			break;
		free_remove(mm, k, buddy);
		x &= ~BIT_ULL(k);
		k++;
	}
	free_insert(mm, k, x >> k);
}

/* ------------------------------------------------------- finding space */

/*
 * Find a free block of order >= @k holding an @align-aligned [p, p + len)
 * inside [start, end): the lowest such p, or the highest with @topdown.
 * Every block of order >= @k is aligned and large enough, so only the
 * blocks at the edges of the range can fail to fit: each order costs
 * O(log n). Returns the block's index, its order in *@jp.
 */
static u64 find_in_range(const struct md_buddy *mm, unsigned int k, u64 len,
			 u64 align, u64 start, u64 end, bool topdown,
			 u64 *pp, unsigned int *jp)
{
	u64 best = NO_BLOCK;
	unsigned int j;

	for (j = k; j <= mm->max_order; j++) {
		const struct md_buddy_bits *b = &mm->bits[j];
		u64 s = BIT_ULL(j), i;

		if (!(mm->nonempty & BIT_ULL(j)))
			continue;
		if (!topdown) {
			for (i = bits_next(b, start >> j); i != NO_BLOCK;
			     i = bits_next(b, i + 1)) {
				u64 o = i << j;
				u64 p = round_up(max(o, start), align);

				if (o >= end || (best != NO_BLOCK && p >= *pp))
					break;
				if (p + len <= min(o + s, end)) {
					*pp = p;
					*jp = j;
					best = i;
					break;
				}
			}
		} else {
			for (i = bits_prev(b, (end - 1) >> j); i != NO_BLOCK;
			     i = i ? bits_prev(b, i - 1) : NO_BLOCK) {
				u64 o = i << j;
				u64 top = min(o + s, end), p;

				if (top <= start || top - start < len)
					break;
				p = round_down(top - len, align);
				if (best != NO_BLOCK && p <= *pp)
					break;
				if (p >= max(o, start)) {
					*pp = p;
					*jp = j;
					best = i;
					break;
				}
			}
		}
	}
	return best;
}

/* The highest free block of order >= @k; its order in *@jp. */
static u64 find_top(const struct md_buddy *mm, unsigned int k,
		    unsigned int *jp)
{
	u64 ne = mm->nonempty >> k << k, best = NO_BLOCK, best_off = 0;

	while (ne) {
		unsigned int j = __ffs64(ne);
		u64 i = bits_last(&mm->bits[j]);

		/* Free blocks are disjoint: the highest start ends highest. */
		if (best == NO_BLOCK || (i << j) > best_off) {
			best = i;
			best_off = i << j;
			*jp = j;
		}
		ne &= ne - 1;
	}
	return best;
}

/* ---------------------------------------------------------- allocation */

/**
 * md_buddy_alloc() - allocate a contiguous range
 * @mm: the allocator
 * @a: record to fill in; must not be live
 * @size: bytes, rounded up to the chunk size
 * @align: power of two (0: the chunk size); smaller values mean the chunk
 * @start: with MD_BUDDY_RANGE, the lowest offset (rounded up to a chunk);
 *         else ignored
 * @end: with MD_BUDDY_RANGE, one past the highest byte (rounded down to a
 *       chunk, and to the allocator's size); else ignored
 * @flags: MD_BUDDY_*
 * @gfp: unused: allocating needs no memory (kept for the callers)
 *
 * The range is carved out of one free block of at least the power of two
 * >= size (and >= @align): the lowest block of the smallest such order, or
 * the highest position with MD_BUDDY_TOPDOWN; with MD_BUDDY_RANGE the
 * lowest (highest) position inside [start, end), in a block of any order
 * that holds it there. A free stretch made of several smaller blocks does
 * not serve.
 *
 * With MD_BUDDY_RANGE, -EINVAL when @start >= @end or @start is beyond the
 * allocator, -ENOSPC when [start, end) cannot hold the size at all.
 *
 * Return: 0; -EINVAL for a malformed request; -ENOSPC when no space fits.
 * (-ENOMEM, for memory the allocator could not get, no longer happens: it
 * needs none.) Nothing changes on error.
 */
int md_buddy_alloc(struct md_buddy *mm, struct md_buddy_alloc *a, u64 size,
		   u64 align, u64 start, u64 end, unsigned int flags,
		   gfp_t gfp)
{
	bool topdown = flags & MD_BUDDY_TOPDOWN;
	unsigned int shift = mm->chunk_shift, k, j = 0;
	u64 chunk = md_buddy_chunk(mm), len, p = 0, i;

	if (a->live || (flags & ~MD_BUDDY_FLAGS) || !size)
		return -EINVAL;
	if (align && !is_power_of_2(align))
		return -EINVAL;
	align = max(align, chunk);
	if (size > mm->size || align > mm->size || size > BIT_ULL(63))
		return -ENOSPC;
	len = round_up(size, chunk);

	if (flags & MD_BUDDY_RANGE) {
		if (start >= end || start >= mm->size)
			return -EINVAL;
		end = min(end, mm->size);
		if (end - start < len)
			return -ENOSPC;
	}

	/* The order whose natural alignment satisfies both size and align. */
	k = ilog2(max(roundup_pow_of_two(len), align)) - shift;
	if (k > mm->max_order)
		return -ENOSPC;

	if (flags & MD_BUDDY_RANGE) {
		i = find_in_range(mm, k, len >> shift, align >> shift,
				  DIV_ROUND_UP_ULL(start, chunk), end >> shift,
				  topdown, &p, &j);
	} else if (!topdown) {
		/* The lowest block of the smallest order that will do. */
		u64 ne = mm->nonempty >> k;

		if (!ne)
			return -ENOSPC;
		j = k + __ffs64(ne);
		i = bits_first(&mm->bits[j]);
		p = i << j;
	} else {
		i = find_top(mm, k, &j);
		if (i != NO_BLOCK)
			p = round_down(((i + 1) << j) - (len >> shift),
				       align >> shift);
	}
	if (i == NO_BLOCK)
		return -ENOSPC;
	carve(mm, j, i, p, p + (len >> shift));
	mm->avail -= len;
	a->offset = p << shift;
	a->size = len;
	a->live = true;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_alloc);

/**
 * md_buddy_free() - give an allocation back
 * @mm: the allocator it came from
 * @a: the record md_buddy_alloc() filled in
 *
 * Cuts [offset, offset + size) into the largest aligned blocks that fit
 * (never across a root) and merges each with its free buddies. Needs no
 * memory and cannot fail for a live allocation.
 *
 * Return: 0, or -EINVAL when @a is not live (never allocated, or freed
 * already): a double free is refused, not applied twice.
 */
int md_buddy_free(struct md_buddy *mm, struct md_buddy_alloc *a)
{
	u64 x, end;

	if (!a->live)
		return -EINVAL;
	x = a->offset >> mm->chunk_shift;
	end = x + (a->size >> mm->chunk_shift);
	while (x < end) {
		unsigned int limit = root_order(mm, x);
		unsigned int k = min(piece_order(x, end), limit);

		free_merge(mm, x, k, limit);
		x += BIT_ULL(k);
	}
	mm->avail += a->size;
	a->live = false;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_free);

/* ------------------------------------------------------ setup, queries */

/* One bitmap with its summary levels per order, all in one allocation. */
static int bits_setup(struct md_buddy *mm, u64 chunks)
{
	unsigned long *w;
	u64 total = 0;
	unsigned int k, l;

	mm->bits = kcalloc(mm->max_order + 1, sizeof(*mm->bits), GFP_KERNEL);
	if (!mm->bits)
		return -ENOMEM;
	for (k = 0; k <= mm->max_order; k++) {
		struct md_buddy_bits *b = &mm->bits[k];
		u64 n = chunks >> k;

		for (l = 0; ; l++) {
			if (l == MD_BUDDY_LEVELS)
				return -ENOMEM;
			b->nbits[l] = n;
			total += words_of(n);
			if (n <= BPL)
				break;
			n = words_of(n);
		}
		b->nlevels = l + 1;
	}
	/* Far beyond any pool this is meant for: refuse, do not warn. */
	if (total > INT_MAX / sizeof(*w))
		return -ENOMEM;
	w = kvcalloc(total, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	mm->words = w;
	mm->nr_words = total;
	for (k = 0; k <= mm->max_order; k++) {
		struct md_buddy_bits *b = &mm->bits[k];

		for (l = 0; l < b->nlevels; l++) {
			b->lvl[l] = w;
			w += words_of(b->nbits[l]);
		}
	}
	return 0;
}

/**
 * md_buddy_init_capped() - manage [0, size) in blocks of at most @max_block
 * @mm: the allocator to set up
 * @size: bytes, rounded down to the chunk size
 * @chunk: minimum block size, a power of two
 * @max_block: largest block, a power of two >= @chunk; 0 for no limit
 *
 * Allocates the bitmaps: about two bits per chunk (see buddy.h).
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int md_buddy_init_capped(struct md_buddy *mm, u64 size, u64 chunk,
			 u64 max_block)
{
	u64 chunks, nfull, rest, x, r;
	unsigned int cap, k;
	int ret;

	if (!chunk || !is_power_of_2(chunk))
		return -EINVAL;
	if (max_block && (!is_power_of_2(max_block) || max_block < chunk))
		return -EINVAL;
	memset(mm, 0, sizeof(*mm));
	mm->chunk_shift = ilog2(chunk);
	chunks = size >> mm->chunk_shift;
	if (!chunks)
		return -EINVAL;
	mm->size = chunks << mm->chunk_shift;

	/*
	 * Roots: as many blocks of the cap as fit, then the set bits of what
	 * is left, largest first; each is aligned to its own size.
	 */
	cap = max_block ? ilog2(max_block) - mm->chunk_shift : 63;
	nfull = chunks >> cap;
	if (cap < 63 && nfull > INT_MAX)
		return -EINVAL;
	mm->cap_order = cap;
	mm->full_end = nfull << cap;
	mm->tail = chunks - mm->full_end;
	mm->nr_roots = nfull + hweight64(mm->tail);
	mm->max_order = nfull ? cap : fls64(mm->tail) - 1;

	ret = bits_setup(mm, chunks);
	if (ret) {
		md_buddy_fini(mm);
		return ret;
	}
	for (r = 0; r < nfull; r++)
		free_insert(mm, cap, r);
	for (x = mm->full_end, rest = mm->tail; rest; rest -= BIT_ULL(k)) {
		k = fls64(rest) - 1;
		free_insert(mm, k, x >> k);
		x += BIT_ULL(k);
	}
	mm->avail = mm->size;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_init_capped);

/**
 * md_buddy_init() - manage [0, size) with no limit on block sizes
 * @mm: the allocator to set up
 * @size: bytes, rounded down to the chunk size
 * @chunk: minimum block size, a power of two
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int md_buddy_init(struct md_buddy *mm, u64 size, u64 chunk)
{
	return md_buddy_init_capped(mm, size, chunk, 0);
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_init);

/*
 * md_buddy_fini() - release the bitmaps. Allocations still live need
 * nothing released (the caller leaked them); the allocator is unusable
 * afterwards either way.
 */
void md_buddy_fini(struct md_buddy *mm)
{
	kvfree(mm->words);
	kfree(mm->bits);
	memset(mm, 0, sizeof(*mm));
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_fini);

u64 md_buddy_largest(const struct md_buddy *mm)
{
	if (!mm->nonempty)
		return 0;
	return bsize(mm, fls64(mm->nonempty) - 1);
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_largest);

#define check(cond, fmt, ...) ({					\
	bool __bad = !(cond);						\
	if (__bad)							\
		pr_err("metadef buddy: invariant: " fmt "\n", ##__VA_ARGS__); \
	__bad;								\
})

/* Every summary bit says whether its word below is non-zero; no stray bits. */
static int check_levels(const struct md_buddy *mm, unsigned int k)
{
	const struct md_buddy_bits *b = &mm->bits[k];
	unsigned int l;
	u64 w;

	for (l = 0; l < b->nlevels; l++) {
		u64 n = b->nbits[l], words = words_of(n);

		if (check(n % BPL == 0 || !(b->lvl[l][words - 1] >> (n % BPL)),
			  "order %u level %u: bits set past the end", k, l))
			return -EUCLEAN;
		if (l + 1 == b->nlevels) {
			if (check(words == 1, "order %u: top level %u has %llu words",
				  k, l, words))
				return -EUCLEAN;
			continue;
		}
		if (check(b->nbits[l + 1] == words,
			  "order %u level %u: %llu bits for %llu words", k, l + 1,
			  b->nbits[l + 1], words))
			return -EUCLEAN;
		for (w = 0; w < words; w++) {
			bool sum = b->lvl[l + 1][w / BPL] & BIT(w % BPL);

			if (check(sum == !!b->lvl[l][w],
				  "order %u level %u word %llu: summary bit %d",
				  k, l, w, sum))
				return -EUCLEAN;
		}
	}
	return 0;
}

/**
 * md_buddy_check() - verify every invariant of the allocator
 * @mm: the allocator
 *
 * The summary levels of every bitmap agree with the level below; every free
 * block lies inside the pool and inside one root and is no larger than it,
 * is not free together with its buddy (fully coalesced), overlaps no other
 * free block; per-order counts, the non-empty bitmap and @avail agree with
 * the bitmaps. O(n * orders + pool / chunk / 64); for tests and debugging.
 *
 * Return: 0, or -EUCLEAN after logging the first violation found.
 */
int md_buddy_check(const struct md_buddy *mm)
{
	u64 chunks = mm->size >> mm->chunk_shift, sum = 0;
	unsigned int k, j;

	if (check(mm->max_order <= MD_BUDDY_MAX_ORDER && mm->bits && mm->words,
		  "no bitmaps"))
		return -EUCLEAN;
	for (k = 0; k <= MD_BUDDY_MAX_ORDER; k++) {
		const struct md_buddy_bits *b;
		u64 n = 0, i;

		if (k > mm->max_order) {
			if (check(!mm->nr_free[k] && !(mm->nonempty & BIT_ULL(k)),
				  "order %u above max %u has blocks", k,
				  mm->max_order))
				return -EUCLEAN;
			continue;
		}
		b = &mm->bits[k];
		if (check(b->nbits[0] == chunks >> k,
			  "order %u: %llu blocks, pool has %llu", k,
			  b->nbits[0], chunks >> k) ||
		    check_levels(mm, k))
			return -EUCLEAN;
		for (i = find_first_bit(b->lvl[0], b->nbits[0]); i < b->nbits[0];
		     i = find_next_bit(b->lvl[0], b->nbits[0], i + 1)) {
			u64 x = i << k;
			unsigned int ro = root_order(mm, x);

			if (check(x + BIT_ULL(k) <= chunks,
				  "block %llx order %u beyond size", x, k) ||
			    check(k <= ro, "block %llx order %u above its root's %u",
				  x, k, ro) ||
			    check(k == ro || !bits_test(b, i ^ 1),
				  "block %llx and its buddy both free (order %u)",
				  x, k))
				return -EUCLEAN;
			/* Free blocks nest, so overlapping means containing. */
			for (j = k + 1; j <= mm->max_order; j++)
				if (check(!is_free(mm, j, x >> j),
					  "free block %llx order %u inside free block of order %u",
					  x, k, j))
					return -EUCLEAN;
			n++;
			sum += bsize(mm, k);
		}
		if (check(n == mm->nr_free[k], "order %u: %llu blocks, counted %llu",
			  k, n, mm->nr_free[k]) ||
		    check(!!n == !!(mm->nonempty & BIT_ULL(k)),
			  "order %u: non-empty bit wrong", k))
			return -EUCLEAN;
	}
	if (check(sum == mm->avail, "avail %llu, free blocks add up to %llu",
		  mm->avail, sum) ||
	    check(mm->avail <= mm->size, "avail %llu > size %llu", mm->avail,
		  mm->size))
		return -EUCLEAN;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_buddy_check);

void md_buddy_show(const struct md_buddy *mm, struct seq_file *m)
{
	unsigned int k;

	seq_printf(m, "size\t%llu\nchunk\t%llu\nfree\t%llu\nlargest_free\t%llu\n",
		   mm->size, md_buddy_chunk(mm), mm->avail,
		   md_buddy_largest(mm));
	seq_puts(m, "order\tblock_size\tfree_blocks\n");
	for (k = 0; k <= mm->max_order; k++)
		seq_printf(m, "%u\t%llu\t%llu\n", k, bsize(mm, k),
			   mm->nr_free[k]);
}
