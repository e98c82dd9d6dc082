// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The dynamic pool (include/metadef/dynpool.h): regions from a device,
 * carved into blocks by best fit.
 *
 * Every block, free or live, is a struct dp_block in host memory (never in
 * the device memory it describes). A block is in exactly one of:
 *
 *   a bin          free, smaller than DP_BINS x align: the red-black tree
 *                  by address of the blocks of that exact size (usually
 *                  a node or two), a bit in bin_map while not empty;
 *   the free tree  free, larger: red-black tree by (size, address);
 *                  best fit is the first non-empty bin from the request's
 *                  size up (its lowest address: a bitmap scan and a short
 *                  walk, no comparison of sizes), else the tree's lower
 *                  bound of (need, 0); the largest free block is the
 *                  tree's rightmost node, else the last bin's;
 *   live           handed out: md_dynpool_free() finds the block from the
 *                  descriptor's sync pointer (which metadata chunk it lies
 *                  in, checked, never dereferenced before), then checks
 *                  that it is live with the descriptor's address, size and
 *                  generation; no tree, no search;
 *   the cache      metadata not describing memory right now, kept for the
 *                  next split (never returned to malloc before destroy, so
 *                  the md_block_sync pointers handed out stay valid).
 *
 * Each region also links its blocks in address order (prev/next), so a
 * freed block finds its neighbours in O(1). A block in the tree whose key
 * changes in a way that keeps its place in the tree's order (what a split leaves takes
 * the split block's node, a coalesced block its neighbour's or its own)
 * stays in its node: no search and no rebalancing; otherwise it is
 * removed and inserted again. Free and cached blocks are RECYCLED; a block
 * handed out becomes ALLOCATED with the next generation by one store: a
 * RECYCLED word is written only under the pool's lock (every transition a
 * user may try on it is refused without a write), so no compare-exchange
 * is needed there.
 *
 * The red-black tree is lib/rbtree.[ch].
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/reuse.h>

#include "bitmath.h"
#include "dlist.h"
#include "internal.h"
#include "rbtree.h"
#include "reuse_word.h"

/* ---------------------------------------------------------------- pool */

enum dp_where { DP_CACHE, DP_FREE, DP_LIVE };

struct dp_region;

struct dp_block {
	struct md_rb_node rb;		/* first: the free tree */
	struct dp_block *prev, *next;	/* address order; next: cache link */
	struct dp_region *reg;
	uint64_t addr;			/* device address */
	uint64_t size;
	uint64_t requested;		/* live: the caller's size */
	enum dp_where where;
	struct md_block_sync sync;
};

struct dp_region {
	struct md_region r;
	struct dp_region *prev, *next;
	struct dp_block *first;		/* lowest address */
};

MD_DLIST_DEFINE(region_list, struct dp_region)

/* Block metadata comes in chunks that double in size. */
struct dp_chunk {
	struct dp_chunk *next;
	size_t n;
	struct dp_block b[];
};

#define CHUNK_MIN	64
#define CHUNK_MAX	65536
#define DP_BINS		1024	/* free blocks below 1024 x align: bins */

struct md_dynpool {
	struct md_device *dev;
	pthread_mutex_t lock;
	uint64_t align;
	uint64_t page;
	uint64_t growth_pct;
	uint64_t grow_min;
	uint64_t capacity;
	void (*bad_free)(const struct md_dynblock *b, void *arg);
	void *bad_free_arg;

	struct md_rb_tree free_tree;	/* free blocks past the bins */
	struct dp_region *regions;
	struct dp_chunk *chunks;
	size_t next_chunk;
	struct dp_block *cache;
	size_t cached;
	size_t nfree;			/* free blocks, bins and tree */
	struct md_dynpool_stats st;
	uint64_t bin_map[DP_BINS / 64];
	struct md_rb_tree bin[DP_BINS];	/* [k]: free blocks of k x align */
};

static inline struct dp_block *to_block(const struct md_rb_node *n)
{
	return n ? (struct dp_block *)((char *)n -
				       offsetof(struct dp_block, rb)) : NULL;
}

static int free_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct dp_block *x = to_block(a), *y = to_block(b);

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int addr_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct dp_block *x = to_block(a), *y = to_block(b);

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static inline uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * The searches go down the tree without a branch on the key: which way a
 * level goes is random, and a mispredicted branch a level cost more than
 * the rest of the search. child(n, 0) is the left child, child(n, 1) the
 * right one, selected by an index (a load, not a jump).
 */
static inline struct md_rb_node **child(struct md_rb_node *n, int right)
{
	const size_t step = offsetof(struct md_rb_node, right) -
			    offsetof(struct md_rb_node, left);

	return (struct md_rb_node **)((char *)n +
				      offsetof(struct md_rb_node, left) +
				      (size_t)right * step);
}

/*
 * Free blocks of DP_BINS - 1 aligned sizes or fewer sit in the bin of
 * their size (a red-black tree by address, usually of a node or two; a bit
 * in bin_map says it is not empty); larger ones in the free tree by
 * (size, address). Together they are the free tree of dynpool.h: best fit
 * is the first non-empty bin from the request's size up (its lowest
 * address), else the tree's lower bound.
 */
static inline bool small_size(const struct md_dynpool *p, uint64_t size)
{
	return size / p->align < DP_BINS;
}

/* The first non-empty bin at or above @k, or -1. */
static long bin_next(const struct md_dynpool *p, uint64_t k)
{
	uint64_t i = k / 64, m;

	if (k >= DP_BINS)
		return -1;
	m = p->bin_map[i] & (~0ull << (k % 64));
	while (!m) {
		if (++i == DP_BINS / 64)
			return -1;
		m = p->bin_map[i];
	}
	return (long)(i * 64 + (uint64_t)md_ctz64(m));
}

/* The smallest free block of at least @need bytes, lowest address first. */
static struct dp_block *best_fit(struct md_dynpool *p, uint64_t need)
{
	struct md_rb_node *n = p->free_tree.root, *best = NULL;

	if (small_size(p, need)) {
		long k = bin_next(p, need / p->align);

		if (k >= 0)
			return to_block(md_rb_first(p->bin[k].root));
		/* Every block in the tree is larger: its first fits. */
		return to_block(md_rb_first(n));
	}
	while (n) {
		int fits = to_block(n)->size >= need;
		uintptr_t m = -(uintptr_t)fits;	/* all ones if it fits */

		best = (struct md_rb_node *)(((uintptr_t)n & m) |
					     ((uintptr_t)best & ~m));
		n = *child(n, !fits);
	}
	return to_block(best);
}

/*
 * Into its bin or the free tree: the search inline (by address in a bin,
 * free_cmp's order in the tree), with no call a level.
 */
static void free_insert(struct md_dynpool *p, struct dp_block *b)
{
	struct md_rb_node **link, *parent = NULL;
	uint64_t size = b->size, addr = b->addr;
	struct md_rb_tree *t;

	if (small_size(p, size)) {
		uint64_t k = size / p->align;

		t = &p->bin[k];
		p->bin_map[k / 64] |= 1ull << (k % 64);
		for (link = &t->root; *link; link = child(parent, addr >=
					to_block(parent)->addr))
			parent = *link;
	} else {
		t = &p->free_tree;
		link = &t->root;
		while (*link) {
			const struct dp_block *o = to_block(*link);
			int right = (size > o->size) |
				    ((size == o->size) & (addr >= o->addr));

			parent = *link;
			link = child(parent, right);
		}
	}
	b->where = DP_FREE;
	md_rb_link(t, &b->rb, parent, link);
	p->nfree++;
	p->st.free_bytes += b->size;
}

static void free_remove(struct md_dynpool *p, struct dp_block *b)
{
	if (small_size(p, b->size)) {
		uint64_t k = b->size / p->align;

		md_rb_erase(&p->bin[k], &b->rb);
		if (!p->bin[k].root)
			p->bin_map[k / 64] &= ~(1ull << (k % 64));
	} else {
		md_rb_erase(&p->free_tree, &b->rb);
	}
	p->nfree--;
	p->st.free_bytes -= b->size;
}

/* free_cmp()'s order on two blocks' (size, address). */
static inline bool key_less(const struct dp_block *a, const struct dp_block *b)
{
	return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

/*
 * @n, not free yet, takes the place of @old, which leaves: in @old's node
 * when both are larger than the bins and @n's key sorts between @old's
 * neighbours (no search, no rebalancing: what a split leaves and what a
 * coalesced block becomes often does), else by a removal and an insertion.
 */
static void free_take_place(struct md_dynpool *p, struct dp_block *old,
			    struct dp_block *n)
{
	struct dp_block *lo, *hi;

	if (small_size(p, old->size) || small_size(p, n->size))
		goto move;
	lo = to_block(md_rb_prev(&old->rb));
	hi = to_block(md_rb_next(&old->rb));
	if ((lo && !key_less(lo, n)) || (hi && !key_less(n, hi)))
		goto move;
	md_rb_replace(&p->free_tree, &old->rb, &n->rb);
	n->where = DP_FREE;
	p->st.free_bytes += n->size - old->size;
	return;
move:
	free_remove(p, old);
	free_insert(p, n);
}

/* Free block @b grows to @size (same address). */
static void free_grow(struct md_dynpool *p, struct dp_block *b, uint64_t size)
{
	struct dp_block *hi;

	if (small_size(p, b->size))
		goto move;
	hi = to_block(md_rb_next(&b->rb));
	if (hi && (size > hi->size ||
		   (size == hi->size && b->addr > hi->addr)))
		goto move;
	p->st.free_bytes += size - b->size;
	b->size = size;
	return;
move:
	free_remove(p, b);
	b->size = size;
	free_insert(p, b);
}

/* The largest free block, or NULL. */
static struct dp_block *largest_free(struct md_dynpool *p)
{
	long i;

	if (p->free_tree.root)
		return to_block(md_rb_last(p->free_tree.root));
	for (i = DP_BINS / 64 - 1; i >= 0; i--)
		if (p->bin_map[i])
			return to_block(md_rb_first(
				p->bin[i * 64 +
				       md_ilog2(p->bin_map[i])].root));
	return NULL;
}

/* Metadata for at least @n more blocks in the cache, or -ENOMEM. */
static int cache_fill(struct md_dynpool *p, size_t n)
{
	struct dp_chunk *c;
	size_t i;

	if (p->cached >= n)
		return 0;
	c = malloc(sizeof(*c) + p->next_chunk * sizeof(c->b[0]));
	if (!c)
		return -ENOMEM;
	memset(c->b, 0, p->next_chunk * sizeof(c->b[0]));
	c->n = p->next_chunk;
	c->next = p->chunks;
	p->chunks = c;
	if (p->next_chunk < CHUNK_MAX)
		p->next_chunk *= 2;
	/* New metadata enters the protocol as free memory does: RECYCLED. */
	for (i = c->n; i-- > 0;) {
		struct dp_block *b = &c->b[i];

		md_block_sync_init(&b->sync);
		md_block_sync_release(&b->sync);
		md_block_sync_recycle(&b->sync);
		b->where = DP_CACHE;
		b->next = p->cache;
		p->cache = b;
	}
	p->cached += c->n;
	return 0;
}

/* A RECYCLED block from the cache; cache_fill() made sure there is one. */
static struct dp_block *cache_get(struct md_dynpool *p)
{
	struct dp_block *b = p->cache;

	p->cache = b->next;
	p->cached--;
	b->prev = b->next = NULL;
	return b;
}

static void cache_put(struct md_dynpool *p, struct dp_block *b)
{
	b->where = DP_CACHE;
	b->reg = NULL;
	b->prev = NULL;
	b->next = p->cache;
	p->cache = b;
	p->cached++;
}

/* Which of our blocks @sync belongs to, or NULL (never dereferenced). */
static struct dp_block *owned_block(struct md_dynpool *p,
				    const struct md_block_sync *sync)
{
	uintptr_t s = (uintptr_t)sync;
	struct dp_chunk *c;

	for (c = p->chunks; c; c = c->next) {
		uintptr_t lo = (uintptr_t)c->b, hi = (uintptr_t)(c->b + c->n);
		size_t i;

		if (s < lo || s >= hi)
			continue;
		i = (s - lo) / sizeof(c->b[0]);
		return &c->b[i].sync == sync ? &c->b[i] : NULL;
	}
	return NULL;
}

static bool region_empty(const struct dp_region *r)
{
	return r->first->where == DP_FREE && r->first->size == r->r.size;
}

static void region_release(struct md_dynpool *p, struct dp_region *r)
{
	struct dp_block *b = r->first;

	free_remove(p, b);
	cache_put(p, b);
	region_list_del(&p->regions, r);
	p->st.regions--;
	p->st.region_frees++;
	p->st.reserved_bytes -= r->r.size;
	md_region_free(p->dev, &r->r);
	free(r);
}

/* Give back every entirely free region; @keep (may be NULL) stays. */
static int release_empty(struct md_dynpool *p, const struct dp_region *keep)
{
	struct dp_region *r = p->regions, *next;
	int n = 0;

	for (; r; r = next) {
		next = r->next;
		if (r != keep && region_empty(r)) {
			region_release(p, r);
			n++;
		}
	}
	return n;
}

/*
 * One more region with a free block of at least @need bytes; with @policy,
 * as large as grow_min and growth_pct ask (the initial reservation is not
 * a growth: exactly @need, rounded up).
 */
static int grow(struct md_dynpool *p, uint64_t need, bool policy)
{
	uint64_t unit = p->align > p->page ? p->align : p->page;
	uint64_t want, reserved = p->st.reserved_bytes, min;
	unsigned __int128 scaled;
	struct dp_region *r;
	struct dp_block *b;
	int err;

	min = round_up(need, unit);
	if (min < need)
		return -ENOMEM;
	want = min;
	if (policy && p->grow_min > want &&
	    round_up(p->grow_min, unit) > want)
		want = round_up(p->grow_min, unit);
	scaled = (unsigned __int128)reserved * p->growth_pct / 100;
	if (policy && scaled > want)
		want = scaled > UINT64_MAX / 2 ? min : round_up(scaled, unit);
	if (p->capacity && (reserved > p->capacity ||
			    want > p->capacity - reserved)) {
		/*
		 * No entirely free region fits @need (best fit found none):
		 * they only take room under the cap. Give them back if that
		 * makes enough room, else change nothing.
		 */
		uint64_t empty = 0;

		for (r = p->regions; r; r = r->next)
			if (region_empty(r))
				empty += r->r.size;
		if (reserved - empty > p->capacity ||
		    min > p->capacity - (reserved - empty))
			return -ENOMEM;
		release_empty(p, NULL);
		reserved = p->st.reserved_bytes;
		if (want > p->capacity - reserved)
			want = (p->capacity - reserved) & ~(unit - 1);
	}

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = md_region_alloc(p->dev, want, p->align, &r->r);
	/* What the policy adds beyond the request is a wish, not a need. */
	if ((err == -ENOMEM || err == -EDQUOT) && want > min)
		err = md_region_alloc(p->dev, min, p->align, &r->r);
	/* Regions entirely free (none fits @need) hold what it lacks. */
	if ((err == -ENOMEM || err == -EDQUOT) && release_empty(p, NULL))
		err = md_region_alloc(p->dev, min, p->align, &r->r);
	if (err) {
		free(r);
		return err;
	}
	b = cache_get(p);
	b->reg = r;
	b->addr = r->r.dev_va;
	b->size = r->r.size;
	r->first = b;
	region_list_add(&p->regions, r);
	free_insert(p, b);

	if (p->st.region_allocs++)
		p->st.backend_reallocs++;
	p->st.regions++;
	p->st.reserved_bytes += r->r.size;
	if (p->st.reserved_bytes > p->st.reserved_peak)
		p->st.reserved_peak = p->st.reserved_bytes;
	return 0;
}

MD_API int md_dynpool_create(struct md_device *dev,
			     const struct md_dynpool_config *cfg,
			     struct md_dynpool **out)
{
	struct md_dynpool_config def = { 0 };
	struct md_dynpool *p;
	int err;

	*out = NULL;
	if (!cfg)
		cfg = &def;
	if (cfg->align && (!md_is_pow2(cfg->align) ||
			   cfg->align < md_device_align(dev)))
		return -EINVAL;
	if (cfg->capacity && cfg->initial > cfg->capacity)
		return -EINVAL;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->dev = dev;
	p->align = cfg->align ? cfg->align : md_device_align(dev);
	p->page = md_device_page_size(dev);
	p->growth_pct = cfg->growth_pct ? cfg->growth_pct : 100;
	p->grow_min = cfg->grow_min;
	p->capacity = cfg->capacity;
	p->bad_free = cfg->bad_free;
	p->bad_free_arg = cfg->bad_free_arg;
	p->next_chunk = CHUNK_MIN;
	pthread_mutex_init(&p->lock, NULL);

	if (cfg->initial) {
		err = cache_fill(p, 1);
		if (!err)
			err = grow(p, cfg->initial, false);
		if (err) {
			md_dynpool_destroy(p);
			return err;
		}
	}
	*out = p;
	return 0;
}

MD_API void md_dynpool_destroy(struct md_dynpool *p)
{
	struct dp_region *r, *rn;
	struct dp_chunk *c, *cn;

	if (!p)
		return;
	for (r = p->regions; r; r = rn) {
		rn = r->next;
		md_region_free(p->dev, &r->r);
		free(r);
	}
	for (c = p->chunks; c; c = cn) {
		cn = c->next;
		free(c);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

MD_API int md_dynpool_alloc(struct md_dynpool *p, uint64_t size,
			    struct md_dynblock *out)
{
	uint64_t need = round_up(size, p->align);
	struct dp_block *b, *rest;
	uint64_t w;
	int err;

	pthread_mutex_lock(&p->lock);
	p->st.requests++;
	if (!size || need < size) {
		err = -EINVAL;
		goto fail;
	}
	/* Metadata for a new region and a split: no failure after this. */
	err = cache_fill(p, 2);
	if (err)
		goto fail;
	b = best_fit(p, need);
	if (!b) {
		err = grow(p, need, true);
		if (err)
			goto fail;
		b = best_fit(p, need);
	}

	if (b->size > need) {
		/* The rest stays free: usually in b's node. */
		rest = cache_get(p);
		rest->reg = b->reg;
		rest->addr = b->addr + need;
		rest->size = b->size - need;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		free_take_place(p, b, rest);
		b->size = need;
	} else {
		free_remove(p, b);
	}
	/* RECYCLED -> ALLOCATED, next generation: see the top of the file. */
	w = atomic_load_explicit(w_word(&b->sync), memory_order_relaxed);
	atomic_store_explicit(w_word(&b->sync), w_reuse(w),
			      memory_order_release);
	b->where = DP_LIVE;
	b->requested = size;

	p->st.blocks_in_use++;
	p->st.requested_bytes += size;
	p->st.bytes_in_use += need;
	if (p->st.bytes_in_use > p->st.bytes_peak)
		p->st.bytes_peak = p->st.bytes_in_use;

	out->dev_va = b->addr;
	out->cpu = b->reg->r.cpu ? (char *)b->reg->r.cpu +
				   (b->addr - b->reg->r.dev_va) : NULL;
	out->size = need;
	out->sync = &b->sync;
	out->generation = w_gen(w) + 1;
	out->pad = 0;
	pthread_mutex_unlock(&p->lock);
	return 0;
fail:
	p->st.failures++;
	pthread_mutex_unlock(&p->lock);
	return err;
}

/* Refuse a free: count it, report it, change nothing. */
static int refuse_free(struct md_dynpool *p, const struct md_dynblock *d)
{
	struct dp_block *b = owned_block(p, d->sync);

	p->st.bad_frees++;
	/*
	 * A double free of a block whose metadata is still RECYCLED under the
	 * same generation: let the reuse protocol refuse (and report) the
	 * release. Nothing else moves a RECYCLED block while we hold the lock.
	 */
	if (b && b->where != DP_LIVE &&
	    md_block_sync_generation(&b->sync) == d->generation &&
	    md_block_sync_state(&b->sync) == MD_BLOCK_RECYCLED)
		md_block_sync_release(&b->sync);
	if (p->bad_free)
		p->bad_free(d, p->bad_free_arg);
	return -EINVAL;
}

MD_API int md_dynpool_free(struct md_dynpool *p, const struct md_dynblock *d)
{
	struct dp_block *b, *l, *r;
	uint64_t w, nw;
	int err;

	pthread_mutex_lock(&p->lock);
	b = owned_block(p, d->sync);
	if (!b || b->where != DP_LIVE || b->addr != d->dev_va ||
	    b->size != d->size ||
	    md_block_sync_generation(&b->sync) != d->generation) {
		err = refuse_free(p, d);
		goto out;
	}
	/*
	 * ALLOCATED (never acquired) or RELEASED -> RECYCLED in one
	 * compare-exchange, so a user acquiring the block at the same moment
	 * either comes first (-EBUSY here) or finds it recycled.
	 */
	w = atomic_load_explicit(w_word(&b->sync), memory_order_acquire);
	for (;;) {
		if (w_state(w) == MD_BLOCK_ACTIVE) {
			err = -EBUSY;
			goto out;
		}
		nw = w_retire(w);
		if (!nw) {
			err = refuse_free(p, d);
			goto out;
		}
		if (atomic_compare_exchange_weak_explicit(w_word(&b->sync),
							  &w, nw,
							  memory_order_acq_rel,
							  memory_order_acquire))
			break;
	}
	p->st.frees++;
	p->st.blocks_in_use--;
	p->st.requested_bytes -= b->requested;
	p->st.bytes_in_use -= b->size;

	l = b->prev && b->prev->where == DP_FREE ? b->prev : NULL;
	r = b->next && b->next->where == DP_FREE ? b->next : NULL;
	if (r) {				/* b absorbs its right one */
		b->size += r->size;
		b->next = r->next;
		if (r->next)
			r->next->prev = b;
	}
	if (l) {				/* the left one absorbs b */
		l->next = b->next;
		if (b->next)
			b->next->prev = l;
		if (r) {
			free_remove(p, r);
			cache_put(p, r);
		}
		free_grow(p, l, l->size + b->size);
		cache_put(p, b);
	} else if (r) {				/* b, larger, in r's node */
		free_take_place(p, r, b);
		cache_put(p, r);
	} else {
		free_insert(p, b);
	}
	err = 0;
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}

MD_API int md_dynpool_trim(struct md_dynpool *p)
{
	struct dp_region *r, *largest = NULL;
	bool all_empty = true;
	int n;

	pthread_mutex_lock(&p->lock);
	for (r = p->regions; r; r = r->next) {
		if (!region_empty(r))
			all_empty = false;
		if (!largest || r->r.size > largest->r.size)
			largest = r;
	}
	n = release_empty(p, all_empty ? largest : NULL);
	pthread_mutex_unlock(&p->lock);
	return n;
}

MD_API void md_dynpool_stats(struct md_dynpool *p, struct md_dynpool_stats *st)
{
	struct dp_block *last;

	pthread_mutex_lock(&p->lock);
	*st = p->st;
	last = largest_free(p);
	st->free_blocks = p->nfree;
	st->largest_free = last ? last->size : 0;
	st->fragmentation = st->free_bytes ?
		1.0 - (double)st->largest_free / (double)st->free_bytes : 0.0;
	pthread_mutex_unlock(&p->lock);
}

/* The free blocks in (size, address) order: the bins, then the tree. */
struct free_walk {
	struct md_dynpool *p;
	long k;				/* bin, DP_BINS: the tree */
	const struct md_rb_node *n;
};

static const struct dp_block *walk_next(struct free_walk *w)
{
	const struct dp_block *b;

	while (!w->n) {
		if (w->k == DP_BINS)
			return NULL;
		w->k = bin_next(w->p, (uint64_t)w->k + 1);
		if (w->k < 0)
			w->k = DP_BINS;
		w->n = md_rb_first(w->k == DP_BINS ? w->p->free_tree.root :
				   w->p->bin[w->k].root);
		if (w->k == DP_BINS && !w->n)
			return NULL;
	}
	b = to_block(w->n);
	w->n = md_rb_next(w->n);
	return b;
}

/*
 * The next @size blocks of @w as a balanced search tree in pre-order from
 * out[@at]: the middle one at the root, built in order (the left subtree
 * first) so that the blocks are read once, in sequence. The nodes at the
 * deepest level @red are red, the others black: a valid red-black tree.
 */
static int32_t dump(struct free_walk *w, struct md_dynpool_node *out,
		    size_t at, size_t size, unsigned int depth, unsigned int red)
{
	size_t left = size / 2;
	const struct dp_block *b;

	if (!size)
		return -1;
	out[at].left = dump(w, out, at + 1, left, depth + 1, red);
	b = walk_next(w);
	out[at].dev_va = b->addr;
	out[at].size = b->size;
	out[at].red = depth == red && depth;
	out[at].pad = 0;
	out[at].right = dump(w, out, at + 1 + left, size - 1 - left,
			     depth + 1, red);
	return (int32_t)at;
}

MD_API size_t md_dynpool_dump_free(struct md_dynpool *p,
				   struct md_dynpool_node *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&p->lock);
	n = p->nfree;
	if (n && n <= max) {
		struct free_walk w = { p, -1, NULL };

		dump(&w, out, 0, n, 0, md_ilog2(n));
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

/*
 * The bins: each a valid tree by address of blocks of exactly its size,
 * marked in bin_map iff not empty; the tree: only larger blocks.
 */
static int check_bins(struct md_dynpool *p, const char **why)
{
	const struct md_rb_node *n;
	size_t k, count = p->free_tree.count;

	for (k = 0; k < DP_BINS; k++) {
		bool mark = p->bin_map[k / 64] >> (k % 64) & 1;

		if (mark != !!p->bin[k].root) {
			*why = "bin map against the bins";
			return -1;
		}
		if (md_rb_check(&p->bin[k], addr_cmp, why))
			return -1;
		for (n = md_rb_first(p->bin[k].root); n; n = md_rb_next(n))
			if (to_block(n)->size != k * p->align) {
				*why = "block in the bin of another size";
				return -1;
			}
		count += p->bin[k].count;
	}
	n = md_rb_first(p->free_tree.root);
	if (n && small_size(p, to_block(n)->size)) {
		*why = "block of a bin's size in the tree";
		return -1;
	}
	if (count != p->nfree) {
		*why = "free block count";
		return -1;
	}
	return 0;
}

static int check_locked(struct md_dynpool *p, const char **why)
{
	uint64_t free_bytes = 0, in_use = 0, requested = 0, reserved = 0;
	size_t nfree = 0, nlive = 0, nregions = 0, ncached = 0, total = 0;
	const struct dp_region *r;
	const struct dp_block *b;
	const struct dp_chunk *c;

	if (md_rb_check(&p->free_tree, free_cmp, why) || check_bins(p, why))
		return -EUCLEAN;
	for (r = p->regions; r; r = r->next) {
		uint64_t at = r->r.dev_va;

		nregions++;
		reserved += r->r.size;
		if (r->next && r->next->prev != r) {
			*why = "region list links";
			return -EUCLEAN;
		}
		if (!r->first || r->first->prev) {
			*why = "region without a first block";
			return -EUCLEAN;
		}
		for (b = r->first; b; b = b->next) {
			if (b->reg != r || b->addr != at || !b->size) {
				*why = "address list: gap, overlap or owner";
				return -EUCLEAN;
			}
			if (b->next && b->next->prev != b) {
				*why = "address list links";
				return -EUCLEAN;
			}
			if (b->addr & (p->align - 1)) {
				*why = "block not aligned";
				return -EUCLEAN;
			}
			at += b->size;
			if (b->where == DP_FREE) {
				nfree++;
				free_bytes += b->size;
				if (b->next && b->next->where == DP_FREE) {
					*why = "two free neighbours";
					return -EUCLEAN;
				}
				if (md_block_sync_state(&b->sync) !=
				    MD_BLOCK_RECYCLED) {
					*why = "free block not RECYCLED";
					return -EUCLEAN;
				}
			} else if (b->where == DP_LIVE) {
				nlive++;
				in_use += b->size;
				requested += b->requested;
				if (b->requested > b->size ||
				    md_block_sync_state(&b->sync) ==
				    MD_BLOCK_RECYCLED) {
					*why = "live block size or state";
					return -EUCLEAN;
				}
				if (owned_block(p, &b->sync) != b) {
					*why = "live block not in the metadata";
					return -EUCLEAN;
				}
			} else {
				*why = "cached block in a region";
				return -EUCLEAN;
			}
		}
		if (at != r->r.dev_va + r->r.size) {
			*why = "blocks do not cover their region";
			return -EUCLEAN;
		}
	}
	for (b = p->cache; b; b = b->next) {
		if (b->where != DP_CACHE ||
		    md_block_sync_state(&b->sync) != MD_BLOCK_RECYCLED) {
			*why = "cache entry state";
			return -EUCLEAN;
		}
		ncached++;
	}
	for (c = p->chunks; c; c = c->next)
		total += c->n;
	if (nfree != p->nfree) {
		*why = "tree size against the address lists";
		return -EUCLEAN;
	}
	if (ncached != p->cached || nfree + nlive + ncached != total) {
		*why = "metadata lost or counted twice";
		return -EUCLEAN;
	}
	if (free_bytes != p->st.free_bytes || in_use != p->st.bytes_in_use ||
	    requested != p->st.requested_bytes ||
	    nlive != p->st.blocks_in_use || reserved != p->st.reserved_bytes ||
	    nregions != p->st.regions ||
	    free_bytes + in_use != reserved) {
		*why = "counters";
		return -EUCLEAN;
	}
	return 0;
}

MD_API int md_dynpool_check(struct md_dynpool *p, const char **why)
{
	const char *dummy;
	int err;

	if (!why)
		why = &dummy;
	*why = NULL;
	pthread_mutex_lock(&p->lock);
	err = check_locked(p, why);
	pthread_mutex_unlock(&p->lock);
	return err;
}
