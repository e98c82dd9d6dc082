// SPDX-License-Identifier: GPL-2.0
/*
 * Buddy allocator over [0, size): see buddy.h for the design.
 *
 * Vocabulary: S(k) = chunk << k is the size of an order-k block; a block's
 * buddy is the other half of its parent, at offset ^ S(k). "Carving" a range
 * [p, p + len) out of a free block splits the block along the range's
 * edges: the halves outside the range go back to the free trees (their
 * buddies are inside the range, so they cannot coalesce), the halves inside
 * become the allocation's pieces.
 */
#include <linux/bitops.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "buddy.h"
#include "metadef.h"

/*
 * One block: free (in mm->free[order], by offset) or a piece of an
 * allocation (on its pieces list), never both.
 */
struct md_buddy_block {
	union {
		struct rb_node rb;
		struct list_head link;
	};
	u64 offset;
	unsigned int order;
};

static struct kmem_cache *md_buddy_slab;

int md_buddy_cache_init(void)
{
	md_buddy_slab = KMEM_CACHE(md_buddy_block, 0);
	return md_buddy_slab ? 0 : -ENOMEM;
}

void md_buddy_cache_exit(void)
{
	kmem_cache_destroy(md_buddy_slab);
	md_buddy_slab = NULL;
}

static inline u64 bsize(const struct md_buddy *mm, unsigned int order)
{
	return md_buddy_block_size(mm, order);
}

/* ---------------------------------------------------------- free trees */

static struct md_buddy_block *free_lookup(const struct md_buddy *mm,
					  unsigned int order, u64 offset)
{
	struct rb_node *n = mm->free[order].rb_root.rb_node;

	while (n) {
		struct md_buddy_block *b = rb_entry(n, struct md_buddy_block, rb);

		if (offset < b->offset)
			n = n->rb_left;
		else if (offset > b->offset)
			n = n->rb_right;
		else
			return b;
	}
	return NULL;
}

static void free_insert(struct md_buddy *mm, struct md_buddy_block *blk)
{
	struct rb_root_cached *root = &mm->free[blk->order];
	struct rb_node **link = &root->rb_root.rb_node, *parent = NULL;
	bool leftmost = true;

	while (*link) {
		struct md_buddy_block *b;

		parent = *link;
		b = rb_entry(parent, struct md_buddy_block, rb);
		if (blk->offset < b->offset) {
			link = &parent->rb_left;
		} else {
			link = &parent->rb_right;
			leftmost = false;
		}
	}
	rb_link_node(&blk->rb, parent, link);
	rb_insert_color_cached(&blk->rb, root, leftmost);

	mm->nr_free[blk->order]++;
	mm->nonempty |= BIT_ULL(blk->order);
	mm->avail += bsize(mm, blk->order);
}

static void free_remove(struct md_buddy *mm, struct md_buddy_block *blk)
{
	rb_erase_cached(&blk->rb, &mm->free[blk->order]);
	if (!--mm->nr_free[blk->order])
		mm->nonempty &= ~BIT_ULL(blk->order);
	mm->avail -= bsize(mm, blk->order);
}

/* Order of the root containing @offset: the most a block there can merge. */
static unsigned int root_order_of(const struct md_buddy *mm, u64 offset)
{
	unsigned int lo = 0, hi = mm->nr_roots - 1;

	/* The last root starting at or below @offset. */
	while (lo < hi) {
		unsigned int mid = (lo + hi + 1) / 2;

		if (mm->root_offset[mid] <= offset)
			lo = mid;
		else
			hi = mid - 1;
	}
	return mm->root_order[lo];
}

/* Give @blk back, merging it with its buddy for as long as that is free. */
static void free_coalesce(struct md_buddy *mm, struct md_buddy_block *blk)
{
	unsigned int limit = root_order_of(mm, blk->offset);

	while (blk->order < limit) {
		u64 buddy_off = blk->offset ^ bsize(mm, blk->order);
		struct md_buddy_block *buddy;

		buddy = free_lookup(mm, blk->order, buddy_off);
		if (!buddy)
			break;
		free_remove(mm, buddy);
		kmem_cache_free(md_buddy_slab, buddy);
		blk->offset = min(blk->offset, buddy_off);
		blk->order++;
	}
	free_insert(mm, blk);
}

/* ------------------------------------------------------------- carving */

/*
 * A carver splits blocks. In a dry run it only counts the splits (each
 * needs one new block), so that a real run can take all its memory first.
 */
struct carver {
	struct md_buddy *mm;
	struct list_head *stash;	/* preallocated blocks; NULL: dry run */
	struct list_head *pieces;	/* the allocation's pieces */
	unsigned int splits;
};

/* Split (@blk, @o, @k) in two; @blk becomes the lower half, returns the upper. */
static struct md_buddy_block *cv_split(struct carver *cv,
				       struct md_buddy_block *blk,
				       u64 o, unsigned int k)
{
	struct md_buddy_block *hi;

	cv->splits++;
	if (!cv->stash)
		return NULL;
	hi = list_first_entry(cv->stash, struct md_buddy_block, link);
	list_del(&hi->link);
	hi->order = k - 1;
	hi->offset = o + bsize(cv->mm, k - 1);
	blk->order = k - 1;
	return hi;
}

static void cv_piece(struct carver *cv, struct md_buddy_block *blk)
{
	if (cv->stash)
		list_add_tail(&blk->link, cv->pieces);
}

static void cv_free(struct carver *cv, struct md_buddy_block *blk)
{
	if (cv->stash)
		free_insert(cv->mm, blk);
}

/* Carve [p, o + S(k)) out of (@blk, @o, @k): a suffix of the block. */
static void carve_suffix(struct carver *cv, struct md_buddy_block *blk,
			 u64 o, unsigned int k, u64 p)
{
	while (p != o) {
		u64 mid = o + bsize(cv->mm, k - 1);
		struct md_buddy_block *hi = cv_split(cv, blk, o, k);

		k--;
		if (p >= mid) {
			cv_free(cv, blk);
			blk = hi;
			o = mid;
		} else {
			cv_piece(cv, hi);
		}
	}
	cv_piece(cv, blk);
}

/* Carve [o, o + len) out of (@blk, @o, @k): a prefix of the block. */
static void carve_prefix(struct carver *cv, struct md_buddy_block *blk,
			 u64 o, unsigned int k, u64 len)
{
	while (len != bsize(cv->mm, k)) {
		u64 half = bsize(cv->mm, k - 1);
		struct md_buddy_block *hi = cv_split(cv, blk, o, k);

		k--;
		if (len <= half) {
			cv_free(cv, hi);
		} else {
			cv_piece(cv, blk);
			blk = hi;
			o += half;
			len -= half;
		}
	}
	cv_piece(cv, blk);
}

/* Carve [p, p + len) out of the free block (@blk, @o, @k) that contains it. */
static void carve(struct carver *cv, struct md_buddy_block *blk,
		  u64 o, unsigned int k, u64 p, u64 len)
{
	for (;;) {
		u64 mid;
		struct md_buddy_block *hi;

		if (p == o && len == bsize(cv->mm, k)) {
			cv_piece(cv, blk);
			return;
		}
		mid = o + bsize(cv->mm, k - 1);
		hi = cv_split(cv, blk, o, k);
		k--;
		if (p + len <= mid) {
			cv_free(cv, hi);
		} else if (p >= mid) {
			cv_free(cv, blk);
			blk = hi;
			o = mid;
		} else {
			carve_suffix(cv, blk, o, k, p);
			carve_prefix(cv, hi, mid, k, p + len - mid);
			return;
		}
	}
}

static void stash_release(struct list_head *stash)
{
	struct md_buddy_block *b, *tmp;

	list_for_each_entry_safe(b, tmp, stash, link)
		kmem_cache_free(md_buddy_slab, b);
	INIT_LIST_HEAD(stash);
}

static int stash_fill(struct list_head *stash, unsigned int n, gfp_t gfp)
{
	while (n--) {
		struct md_buddy_block *b = kmem_cache_alloc(md_buddy_slab, gfp);

		if (!b) {
			stash_release(stash);
			return -ENOMEM;
		}
		list_add(&b->link, stash);
	}
	return 0;
}

/* ------------------------------------------------------- finding space */

/* The free block containing @x, or NULL when @x is allocated. */
static struct md_buddy_block *free_container(const struct md_buddy *mm, u64 x)
{
	unsigned int k;

	for (k = 0; k <= mm->max_order; k++) {
		struct md_buddy_block *b;

		if (!(mm->nonempty & BIT_ULL(k)))
			continue;
		b = free_lookup(mm, k, round_down(x, bsize(mm, k)));
		if (b)
			return b;
	}
	return NULL;
}

/* First block of order @k whose end lies beyond @start. */
static struct rb_node *first_ending_after(const struct md_buddy *mm,
					  unsigned int k, u64 start)
{
	struct rb_node *n = mm->free[k].rb_root.rb_node, *best = NULL;
	u64 s = bsize(mm, k);

	while (n) {
		struct md_buddy_block *b = rb_entry(n, struct md_buddy_block, rb);

		if (b->offset + s > start) {
			best = n;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

/* Last block of order @k starting before @end. */
static struct rb_node *last_starting_before(const struct md_buddy *mm,
					    unsigned int k, u64 end)
{
	struct rb_node *n = mm->free[k].rb_root.rb_node, *best = NULL;

	while (n) {
		struct md_buddy_block *b = rb_entry(n, struct md_buddy_block, rb);

		if (b->offset < end) {
			best = n;
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	return best;
}

/*
 * Find a free block of order >= @k holding an @align-aligned [p, p + len)
 * inside [start, end): the lowest such p, or the highest with
 * MD_BUDDY_TOPDOWN. Every block of order >= @k is aligned and large
 * enough, so only the blocks at the edges of the range can fail to fit:
 * each order costs O(log n).
 */
static struct md_buddy_block *find_in_range(const struct md_buddy *mm,
					    unsigned int k, u64 len, u64 align,
					    u64 start, u64 end, bool topdown,
					    u64 *pp)
{
	struct md_buddy_block *best = NULL;
	unsigned int j;

	for (j = k; j <= mm->max_order; j++) {
		u64 s = bsize(mm, j);
		struct rb_node *n;

		if (!(mm->nonempty & BIT_ULL(j)))
			continue;
		if (!topdown) {
			for (n = first_ending_after(mm, j, start); n; n = rb_next(n)) {
				struct md_buddy_block *b =
					rb_entry(n, struct md_buddy_block, rb);
				u64 p = round_up(max(b->offset, start), align);

				if (b->offset >= end || (best && p >= *pp))
					break;
				if (p + len <= min(b->offset + s, end)) {
					*pp = p;
					best = b;
					break;
				}
			}
		} else {
			for (n = last_starting_before(mm, j, end); n; n = rb_prev(n)) {
				struct md_buddy_block *b =
					rb_entry(n, struct md_buddy_block, rb);
				u64 top = min(b->offset + s, end);
				u64 p;

				if (top <= start || top - start < len)
					break;
				p = round_down(top - len, align);
				if (best && p <= *pp)
					break;
				if (p >= max(b->offset, start)) {
					*pp = p;
					best = b;
					break;
				}
			}
		}
	}
	return best;
}

/* Anywhere: the lowest block of the smallest order, or the highest block. */
static struct md_buddy_block *find_any(const struct md_buddy *mm,
				       unsigned int k, u64 len, u64 align,
				       bool topdown, u64 *pp)
{
	struct md_buddy_block *best = NULL;
	unsigned int j;

	if (!topdown) {
		u64 avail = mm->nonempty >> k;

		if (!avail)
			return NULL;
		j = k + __ffs64(avail);
		best = rb_entry(rb_first_cached(&mm->free[j]),
				struct md_buddy_block, rb);
		*pp = best->offset;
		return best;
	}

	for (j = k; j <= mm->max_order; j++) {
		struct md_buddy_block *b;

		if (!(mm->nonempty & BIT_ULL(j)))
			continue;
		b = rb_entry(rb_last(&mm->free[j].rb_root),
			     struct md_buddy_block, rb);
		if (!best || b->offset > best->offset)
			best = b;
	}
	if (best)
		*pp = round_down(best->offset + bsize(mm, best->order) - len,
				 align);
	return best;
}

/* ---------------------------------------------------------- allocation */

static int alloc_exact(struct md_buddy *mm, struct md_buddy_alloc *a,
		       u64 p, u64 len, gfp_t gfp)
{
	struct carver cv = { .mm = mm, .pieces = &a->pieces };
	LIST_HEAD(stash);
	u64 x;
	int ret;

	/* Dry run: is all of it free, and how many splits will it take? */
	for (x = p; x < p + len;) {
		struct md_buddy_block *c = free_container(mm, x);
		u64 cend;

		if (!c)
			return -ENOSPC;
		cend = c->offset + bsize(mm, c->order);
		carve(&cv, NULL, c->offset, c->order, x, min(cend, p + len) - x);
		x = cend;
	}

	ret = stash_fill(&stash, cv.splits, gfp);
	if (ret)
		return ret;

	cv.stash = &stash;
	for (x = p; x < p + len;) {
		struct md_buddy_block *c = free_container(mm, x);
		u64 cend = c->offset + bsize(mm, c->order);

		free_remove(mm, c);
		carve(&cv, c, c->offset, c->order, x, min(cend, p + len) - x);
		x = cend;
	}
	WARN_ON(!list_empty(&stash));
	stash_release(&stash);
	return 0;
}

/**
 * md_buddy_alloc() - allocate a contiguous range
 * @mm: the allocator
 * @a: record to fill in; must not be live
 * @size: bytes, rounded up to the chunk size
 * @align: power of two (0: the chunk size); smaller values mean the chunk
 * @start: with MD_BUDDY_RANGE, the lowest offset; with MD_BUDDY_EXACT, the
 *         offset to allocate at
 * @end: with MD_BUDDY_RANGE, one past the highest byte; else ignored
 * @flags: MD_BUDDY_*
 * @gfp: for the block descriptors splitting needs
 *
 * Without MD_BUDDY_EXACT the range is carved out of one free block of at
 * least the power of two >= size (and >= @align): the lowest block of the
 * smallest such order, or the highest position with MD_BUDDY_TOPDOWN; with
 * MD_BUDDY_RANGE the lowest (highest) position inside [start, end). A free
 * stretch made of several smaller blocks serves only MD_BUDDY_EXACT.
 *
 * Return: 0; -EINVAL for a malformed request; -ENOSPC when no space fits;
 * -ENOMEM when descriptors could not be allocated. Nothing changes on error.
 */
int md_buddy_alloc(struct md_buddy *mm, struct md_buddy_alloc *a, u64 size,
		   u64 align, u64 start, u64 end, unsigned int flags,
		   gfp_t gfp)
{
	struct carver cv = { .mm = mm, .pieces = &a->pieces };
	bool topdown = flags & MD_BUDDY_TOPDOWN;
	struct md_buddy_block *blk;
	LIST_HEAD(stash);
	u64 chunk = md_buddy_chunk(mm), len, p = 0;
	unsigned int k;
	int ret;

	if (a->live || (flags & ~MD_BUDDY_FLAGS) || !size)
		return -EINVAL;
	if ((flags & MD_BUDDY_RANGE) && (flags & MD_BUDDY_EXACT))
		return -EINVAL;
	if (align && !is_power_of_2(align))
		return -EINVAL;
	align = max(align, chunk);
	if (size > mm->size || align > mm->size || size > BIT_ULL(63))
		return -ENOSPC;
	len = round_up(size, chunk);

	INIT_LIST_HEAD(&a->pieces);

	if (flags & MD_BUDDY_EXACT) {
		if (!IS_ALIGNED(start, align) || start >= mm->size ||
		    len > mm->size - start)
			return -EINVAL;
		ret = alloc_exact(mm, a, start, len, gfp);
		if (ret)
			return ret;
		p = start;
		goto done;
	}

	if (flags & MD_BUDDY_RANGE) {
		if (start >= end || start >= mm->size)
			return -EINVAL;
		end = min(end, mm->size);
		if (end - start < len)
			return -ENOSPC;
	}

	/* The order whose natural alignment satisfies both size and align. */
	k = ilog2(max(roundup_pow_of_two(len), align)) - mm->chunk_shift;
	if (k > mm->max_order)
		return -ENOSPC;

	if (flags & MD_BUDDY_RANGE)
		blk = find_in_range(mm, k, len, align, start, end, topdown, &p);
	else
		blk = find_any(mm, k, len, align, topdown, &p);
	if (!blk)
		return -ENOSPC;

	carve(&cv, NULL, blk->offset, blk->order, p, len);
	ret = stash_fill(&stash, cv.splits, gfp);
	if (ret)
		return ret;
	cv.stash = &stash;
	free_remove(mm, blk);
	carve(&cv, blk, blk->offset, blk->order, p, len);
	WARN_ON(!list_empty(&stash));
	stash_release(&stash);
done:
	a->offset = p;
	a->size = len;
	a->live = true;
	return 0;
}
MD_EXPORT_FOR_TESTS(md_buddy_alloc);

/**
 * md_buddy_free() - give an allocation back
 * @mm: the allocator it came from
 * @a: the record md_buddy_alloc() filled in
 *
 * Needs no memory and cannot fail for a live allocation.
 *
 * Return: 0, or -EINVAL when @a is not live (never allocated, or freed
 * already): a double free is refused, not applied twice.
 */
int md_buddy_free(struct md_buddy *mm, struct md_buddy_alloc *a)
{
	struct md_buddy_block *b, *tmp;

	if (!a->live)
		return -EINVAL;
	list_for_each_entry_safe(b, tmp, &a->pieces, link) {
		list_del(&b->link);
		free_coalesce(mm, b);
	}
	a->live = false;
	return 0;
}
MD_EXPORT_FOR_TESTS(md_buddy_free);

/* ------------------------------------------------------ setup, queries */

/**
 * md_buddy_init_capped() - manage [0, size) in blocks of at most @max_block
 * @mm: the allocator to set up
 * @size: bytes, rounded down to the chunk size
 * @chunk: minimum block size, a power of two
 * @max_block: largest block, a power of two >= @chunk; 0 for no limit
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int md_buddy_init_capped(struct md_buddy *mm, u64 size, u64 chunk,
			 u64 max_block)
{
	unsigned int cap, nr, i;
	u64 chunks, rest, offset = 0;
	int bit;

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
	for (i = 0; i <= MD_BUDDY_MAX_ORDER; i++)
		mm->free[i] = RB_ROOT_CACHED;

	/*
	 * Roots: as many blocks of the cap as fit, then the set bits of what
	 * is left, largest first; each is aligned to its own size.
	 */
	cap = max_block ? ilog2(max_block) - mm->chunk_shift : 63;
	nr = hweight64(chunks & (BIT_ULL(cap) - 1));
	if (cap < 63) {
		if ((chunks >> cap) > INT_MAX)
			return -EINVAL;
		nr += chunks >> cap;
	} else {
		nr = hweight64(chunks);
	}
	mm->root_offset = kcalloc(nr, sizeof(*mm->root_offset), GFP_KERNEL);
	mm->root_order = kcalloc(nr, sizeof(*mm->root_order), GFP_KERNEL);
	if (!mm->root_offset || !mm->root_order) {
		md_buddy_fini(mm);
		return -ENOMEM;
	}

	rest = chunks;
	while (rest) {
		struct md_buddy_block *b;

		bit = min_t(int, fls64(rest) - 1, cap);
		b = kmem_cache_alloc(md_buddy_slab, GFP_KERNEL);
		if (!b) {
			md_buddy_fini(mm);
			return -ENOMEM;
		}
		b->offset = offset;
		b->order = bit;
		mm->root_offset[mm->nr_roots] = offset;
		mm->root_order[mm->nr_roots] = bit;
		mm->nr_roots++;
		mm->max_order = max_t(unsigned int, mm->max_order, bit);
		free_insert(mm, b);
		offset += bsize(mm, bit);
		rest -= BIT_ULL(bit);
	}
	WARN_ON(mm->nr_roots != nr);
	return 0;
}
MD_EXPORT_FOR_TESTS(md_buddy_init_capped);

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
MD_EXPORT_FOR_TESTS(md_buddy_init);

/*
 * md_buddy_fini() - release the free-block descriptors. Allocations still
 * live keep theirs (the caller leaked them); the allocator is unusable
 * afterwards either way.
 */
void md_buddy_fini(struct md_buddy *mm)
{
	unsigned int k;

	for (k = 0; k <= MD_BUDDY_MAX_ORDER; k++) {
		struct rb_node *n;

		while ((n = rb_first_cached(&mm->free[k]))) {
			struct md_buddy_block *b =
				rb_entry(n, struct md_buddy_block, rb);

			free_remove(mm, b);
			kmem_cache_free(md_buddy_slab, b);
		}
	}
	kfree(mm->root_offset);
	kfree(mm->root_order);
	mm->root_offset = NULL;
	mm->root_order = NULL;
	mm->nr_roots = 0;
}
MD_EXPORT_FOR_TESTS(md_buddy_fini);

u64 md_buddy_largest(const struct md_buddy *mm)
{
	if (!mm->nonempty)
		return 0;
	return bsize(mm, fls64(mm->nonempty) - 1);
}
MD_EXPORT_FOR_TESTS(md_buddy_largest);

#define check(cond, fmt, ...) ({					\
	bool __bad = !(cond);						\
	if (__bad)							\
		pr_err("metadef buddy: invariant: " fmt "\n", ##__VA_ARGS__); \
	__bad;								\
})

/**
 * md_buddy_check() - verify every invariant of the allocator
 *
 * Every free block is aligned to its size, lies inside one root and no
 * larger than it, is not free together with its buddy (fully coalesced),
 * overlaps no other free block; per-order counts, the non-empty bitmap and
 * @avail agree with the trees. O(n * orders); for tests and debugging.
 *
 * Return: 0, or -EUCLEAN after logging the first violation found.
 */
int md_buddy_check(const struct md_buddy *mm)
{
	struct rb_node *cur[MD_BUDDY_MAX_ORDER + 1];
	u64 sum = 0, last_end = 0;
	unsigned int k;

	for (k = 0; k <= MD_BUDDY_MAX_ORDER; k++) {
		u64 n = 0, prev = 0, s;
		struct rb_node *node;

		if (k > mm->max_order) {
			if (check(RB_EMPTY_ROOT(&mm->free[k].rb_root),
				  "order %u above max %u has blocks", k,
				  mm->max_order))
				return -EUCLEAN;
			continue;
		}
		s = bsize(mm, k);
		for (node = rb_first_cached(&mm->free[k]); node;
		     node = rb_next(node)) {
			struct md_buddy_block *b =
				rb_entry(node, struct md_buddy_block, rb);
			unsigned int ro = root_order_of(mm, b->offset);

			if (check(b->order == k, "block %llx in tree %u has order %u",
				  b->offset, k, b->order) ||
			    check(IS_ALIGNED(b->offset, s),
				  "block %llx order %u misaligned", b->offset, k) ||
			    check(b->offset < mm->size && s <= mm->size - b->offset,
				  "block %llx order %u beyond size", b->offset, k) ||
			    check(k <= ro, "block %llx order %u above its root's %u",
				  b->offset, k, ro) ||
			    check(!n || b->offset > prev,
				  "tree %u out of order at %llx", k, b->offset) ||
			    check(k == ro || !free_lookup(mm, k, b->offset ^ s),
				  "block %llx and its buddy both free (order %u)",
				  b->offset, k))
				return -EUCLEAN;
			prev = b->offset;
			n++;
			sum += s;
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

	/* No two free blocks overlap: merge the sorted trees by offset. */
	for (k = 0; k <= MD_BUDDY_MAX_ORDER; k++)
		cur[k] = rb_first_cached(&mm->free[k]);
	for (;;) {
		struct md_buddy_block *min = NULL;
		unsigned int mk = 0;

		for (k = 0; k <= mm->max_order; k++) {
			struct md_buddy_block *b;

			if (!cur[k])
				continue;
			b = rb_entry(cur[k], struct md_buddy_block, rb);
			if (!min || b->offset < min->offset) {
				min = b;
				mk = k;
			}
		}
		if (!min)
			break;
		if (check(min->offset >= last_end,
			  "free block %llx order %u overlaps one ending at %llx",
			  min->offset, mk, last_end))
			return -EUCLEAN;
		last_end = min->offset + bsize(mm, mk);
		cur[mk] = rb_next(cur[mk]);
	}
	return 0;
}
MD_EXPORT_FOR_TESTS(md_buddy_check);

void md_buddy_show(const struct md_buddy *mm, struct seq_file *m)
{
	unsigned int k;

	seq_printf(m, "size\t%llu\nchunk\t%llu\navail\t%llu\nlargest\t%llu\n",
		   mm->size, md_buddy_chunk(mm), mm->avail,
		   md_buddy_largest(mm));
	seq_puts(m, "order\tblock_size\tfree_blocks\n");
	for (k = 0; k <= mm->max_order; k++)
		seq_printf(m, "%u\t%llu\t%llu\n", k, bsize(mm, k),
			   mm->nr_free[k]);
}
