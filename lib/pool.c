// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tiered pools (include/metadef/pool.h): the API's entry points, creation,
 * the reuse transitions, the slab tier and its thread caches' bins (the
 * registry, the cells and the regions are pool_core.c's). lib/runtime.md
 * describes the design.
 *
 * The slab fast path: the size class is a table lookup on the request's
 * units (arithmetic past the table; no loop); the thread's cache for the
 * pool is one thread-local pointer compared with the pool's id; a bin is
 * an array of descriptors of RECYCLED blocks. md_alloc() pops one and
 * moves it to ALLOCATED with one release store (a block on a free list is
 * invisible to other threads: hand_out() says why no compare-exchange is
 * needed); md_free() moves it to RECYCLED with one compare-exchange (the
 * block is live: other threads may race it with acquire or free; it checks
 * the handle's generation) and pushes it back. The counters are the
 * thread's own (no locked instruction). Both make no call on the fast
 * path, only tail calls to what it leaves, so they need no stack frame.
 * Bins are refilled from and flushed to the class's slabs, under the
 * class's lock, half a bin at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/pool.h>

#include "bitmath.h"
#include "internal.h"
#include "pool_internal.h"

#define INLINE		POOL_INLINE
#define MAX_REQUEST	(1ull << 62)

static _Atomic uint64_t next_pool_id;
/* ------------------------------------------------------------ size classes */

/*
 * Classes in units of pool->unit: 1..8, then four per power of two (10,
 * 12, 14, 16, 20, 24, ...), so a block wastes at most 20 % of itself.
 */
static inline unsigned int cls_calc(uint64_t u)
{
	unsigned int p;

	if (u <= 8)
		return (unsigned int)u - 1;
	p = md_ilog2(u - 1);
	return 8 + (p - 3) * 4 + (unsigned int)((u - 1) >> (p - 2)) - 4;
}

/*
 * The class of 1 .. CLS_TABLE - 1 units from a table (the thread caches'
 * sizes at the smallest unit: a load in place of a branch that a mix of
 * sizes mispredicts), above by arithmetic.
 */
#define CLS_TABLE	1025
static uint8_t cls_table[CLS_TABLE];
static pthread_once_t cls_once = PTHREAD_ONCE_INIT;

static void cls_table_init(void)
{
	unsigned int u;

	for (u = 1; u < CLS_TABLE; u++)
		cls_table[u] = (uint8_t)cls_calc(u);
}

static INLINE unsigned int cls_index(uint64_t u)
{
	if (likely(u < CLS_TABLE))
		return cls_table[u];
	return cls_calc(u);
}

static uint64_t cls_units(unsigned int i)
{
	unsigned int p, m;

	if (i < 8)
		return i + 1;
	p = 3 + (i - 8) / 4;
	m = (i - 8) % 4 + 5;
	return (uint64_t)m << (p - 2);
}

/* ------------------------------------------------------------ transitions */

static int __attribute__((noinline))
violate(struct md_pool *pool, enum md_pool_violation_kind kind,
	enum md_reuse_op op, const struct md_buf *buf,
	struct md_pool_block *b, uint64_t w, int err)
{
	struct md_pool_violation v = {
		.kind = kind,
		.op = op,
		.state = w_state(w),
		.holders = w_holders(w),
		.generation = w_gen(w),
		.expected = buf ? buf->generation : 0,
		.buf = buf,
	};

	atomic_fetch_add_explicit(&pool->violation[kind], 1,
				  memory_order_relaxed);
	if (b) {
		v.tag = RLD(blk_tags(b)->tag);
		v.site = RLD(blk_tags(b)->site);
	}
	if (pool->handler)
		pool->handler(&v, pool->handler_arg);
	return err;
}

/* A word on a free list that was not RECYCLED (a tail call: few args). */
static int __attribute__((noinline))
hand_out_refused(struct md_pool *pool, struct md_pool_block *b, uint64_t w)
{
	return violate(pool, MD_POOL_BAD_TRANSITION, MD_REUSE_REUSE, NULL, b,
		       w, -EIO);
}

/*
 * A block this thread took off a free list: RECYCLED -> ALLOCATED with the
 * next generation (a descriptor's first life: 0 -> ALLOCATED). The fields
 * are written first: the transition publishes them.
 *
 * One release store, no compare-exchange: a word that is RECYCLED (or 0,
 * never used) is written only by the thread that takes its block off a
 * free list, and a block is on one free list at a time (this thread's
 * bin, which no other thread touches, or a slab's or tier's list under its
 * lock). Every other operation refuses such a word without writing it:
 * md_free() of a RECYCLED block is a double free or stale, acquire and
 * release are use after free, the cleaner recycles only RELEASED blocks.
 * So nothing can change the word between the load and the store; a racing
 * stale handle reads either the RECYCLED word (refused as before) or the
 * new generation (refused as stale).
 */
static INLINE int hand_out(struct md_pool *pool, struct md_pool_block *b,
			   uint32_t stamp, uint64_t req,
			   const struct md_alloc_opts *opts,
			   struct md_buf *out)
{
	uint64_t w = atomic_load_explicit(w_word(&b->sync),
					  memory_order_relaxed);
	uint32_t t = RLD(b->thread);
	uint64_t nw;

	/* A snapshot that reads these must see the last free's transition. */
	atomic_thread_fence(memory_order_release);
	RST(b->requested, req);
	/* Its owner: this thread's cache, unless it was ever taken away. */
	if (unlikely(t != stamp && t != BLK_SHARED))
		RST(b->thread, stamp);
	/* Tags out of the line, written only when either changes. */
	if (unlikely(opts || b->tagged)) {
		const char *tag = opts ? opts->tag : NULL;
		const char *site = opts ? opts->site : NULL;
		struct blk_tags *t = blk_tags(b);

		RST(t->tag, tag);
		RST(t->site, site);
		b->tagged = tag || site;
	}
	nw = w ? w_reuse(w) : w_pack(MD_BLOCK_ALLOCATED, 0, 0);
	if (unlikely(!nw)) {
		int err = hand_out_refused(pool, b, w);

		if (!err)
			__builtin_unreachable();	/* it is -EIO */
		return err;
	}
	atomic_store_explicit(w_word(&b->sync), nw, memory_order_release);
	out->block = b;
	out->dev_va = b->dev_va;
	out->cpu = b->cpu;
	out->size = b->size;
	out->generation = w_gen(nw);
	out->tier = b->tier;
	return 0;
}

/*
 * md_free()'s transition: ALLOCATED (no holder) or RELEASED -> RECYCLED in
 * one compare-exchange, only in the handle's generation.
 */
static int __attribute__((noinline))
free_cas_slow(struct md_pool *pool, const struct md_buf *buf,
	      struct md_pool_block *b, uint64_t w)
{
	for (;;) {
		enum md_block_state s = w_state(w);
		uint64_t nw;

		if (unlikely(!w))
			return violate(pool, MD_POOL_BAD_HANDLE,
				       MD_REUSE_RECYCLE, buf, b, w, -EINVAL);
		if (unlikely(w_gen(w) != buf->generation))
			return violate(pool, MD_POOL_USE_AFTER_FREE,
				       MD_REUSE_RECYCLE, buf, b, w, -ESTALE);
		nw = w_retire(w);
		if (likely(nw)) {
			if (unlikely(pool_take_from_owner(pool, b, &w)))
				continue;
			if (cas_w(b, &w, nw))
				return 0;
			continue;
		}
		if (s == MD_BLOCK_ACTIVE)
			return violate(pool, MD_POOL_FREE_HELD,
				       MD_REUSE_RECYCLE, buf, b, w, -EBUSY);
		if (s == MD_BLOCK_RECYCLED)
			return violate(pool, MD_POOL_DOUBLE_FREE,
				       MD_REUSE_RECYCLE, buf, b, w, -EINVAL);
		return violate(pool, MD_POOL_BAD_HANDLE, MD_REUSE_RECYCLE,
			       buf, b, w, -EINVAL);
	}
}

static struct md_pool_block *handle_block(struct md_pool *pool,
					  const struct md_buf *buf)
{
	if (!buf || !buf->block || buf->block->pool != pool)
		return NULL;
	return buf->block;
}

MD_API int md_buf_acquire(struct md_pool *pool, const struct md_buf *buf)
{
	struct md_pool_block *b = handle_block(pool, buf);
	uint64_t w, nw;

	if (!b)
		return violate(pool, MD_POOL_BAD_HANDLE, MD_REUSE_ACQUIRE, buf,
			       NULL, 0, -EINVAL);
	w = atomic_load_explicit(w_word(&b->sync), memory_order_acquire);
	for (;;) {
		if (!w)
			return violate(pool, MD_POOL_BAD_HANDLE,
				       MD_REUSE_ACQUIRE, buf, b, w, -EINVAL);
		if (w_gen(w) != buf->generation ||
		    w_state(w) == MD_BLOCK_RECYCLED)
			return violate(pool, MD_POOL_USE_AFTER_FREE,
				       MD_REUSE_ACQUIRE, buf, b, w, -ESTALE);
		nw = w_acquire(w);
		if (!nw)
			return violate(pool, MD_POOL_BAD_TRANSITION,
				       MD_REUSE_ACQUIRE, buf, b, w, -EINVAL);
		if (unlikely(pool_take_from_owner(pool, b, &w)))
			continue;
		if (cas_w(b, &w, nw))
			return 0;
	}
}

MD_API int md_buf_release(struct md_pool *pool, const struct md_buf *buf)
{
	struct md_pool_block *b = handle_block(pool, buf);
	uint64_t w, nw;

	if (!b)
		return violate(pool, MD_POOL_BAD_HANDLE, MD_REUSE_RELEASE, buf,
			       NULL, 0, -EINVAL);
	w = atomic_load_explicit(w_word(&b->sync), memory_order_acquire);
	for (;;) {
		if (!w)
			return violate(pool, MD_POOL_BAD_HANDLE,
				       MD_REUSE_RELEASE, buf, b, w, -EINVAL);
		if (w_gen(w) != buf->generation ||
		    w_state(w) == MD_BLOCK_RECYCLED)
			return violate(pool, MD_POOL_USE_AFTER_FREE,
				       MD_REUSE_RELEASE, buf, b, w, -ESTALE);
		nw = w_release(w);
		if (!nw)
			return violate(pool, MD_POOL_BAD_TRANSITION,
				       MD_REUSE_RELEASE, buf, b, w, -EINVAL);
		if (unlikely(pool_take_from_owner(pool, b, &w)))
			continue;
		if (cas_w(b, &w, nw))
			return w_state(nw) == MD_BLOCK_RELEASED;
	}
}

MD_API int md_buf_state(struct md_pool *pool, const struct md_buf *buf)
{
	struct md_pool_block *b = handle_block(pool, buf);
	uint64_t w;

	if (!b)
		return -EINVAL;
	w = atomic_load_explicit(w_word(&b->sync), memory_order_acquire);
	if (!w)
		return -EINVAL;
	if (w_gen(w) != buf->generation || w_state(w) == MD_BLOCK_RECYCLED)
		return -ESTALE;
	return w_state(w);
}

/* ------------------------------------------------------------ slab regions */

static int sregion_carve(struct md_pool *pool, uint64_t size,
			 struct sregion **out, uint64_t *off)
{
	uint64_t units = size / SLAB_MIN;
	struct sregion *sr;
	int64_t o = -1;
	int err;

	pthread_mutex_lock(&pool->sr_lock);
	for (sr = pool->sregions; sr; sr = sr->next) {
		o = mbuddy_alloc(&sr->mb, units);
		if (o >= 0)
			goto found;
	}
	sr = calloc(1, sizeof(*sr));
	if (!sr) {
		pthread_mutex_unlock(&pool->sr_lock);
		return -ENOMEM;
	}
	err = pool_region_get(pool, MD_TIER_SLAB, pool->slab_region, size,
			      &sr->r);
	if (!err) {
		err = mbuddy_init(&sr->mb, md_ceil_log2(sr->r.size / SLAB_MIN));
		if (err)
			pool_region_put(pool, MD_TIER_SLAB, &sr->r);
	}
	if (err) {
		pthread_mutex_unlock(&pool->sr_lock);
		free(sr);
		return err;
	}
	sr->next = pool->sregions;
	pool->sregions = sr;
	o = mbuddy_alloc(&sr->mb, units);
found:
	sr->slabs++;
	*out = sr;
	*off = (uint64_t)o * SLAB_MIN;
	pthread_mutex_unlock(&pool->sr_lock);
	return 0;
}

static void sregion_uncarve(struct md_pool *pool, struct sregion *sr,
			    uint64_t off, uint64_t size)
{
	pthread_mutex_lock(&pool->sr_lock);
	mbuddy_free(&sr->mb, off / SLAB_MIN, size / SLAB_MIN);
	sr->slabs--;
	pthread_mutex_unlock(&pool->sr_lock);
}

/* Empty slab regions back to the device. */
static void sregions_release_empty(struct md_pool *pool,
				   struct md_cleaner_report *rep)
{
	struct sregion **pp, *sr;

	pthread_mutex_lock(&pool->sr_lock);
	for (pp = &pool->sregions; (sr = *pp); ) {
		if (sr->slabs) {
			pp = &sr->next;
			continue;
		}
		*pp = sr->next;
		if (rep) {
			rep->regions_released++;
			rep->region_bytes_released += sr->r.size;
		}
		pool_region_put(pool, MD_TIER_SLAB, &sr->r);
		mbuddy_fini(&sr->mb);
		free(sr);
	}
	pthread_mutex_unlock(&pool->sr_lock);
}

/* ------------------------------------------------------------ slabs */

static void partial_add(struct slab_class *sc, struct slab *s)
{
	s->pprev = NULL;
	s->pnext = sc->partial;
	if (sc->partial)
		sc->partial->pprev = s;
	sc->partial = s;
	s->partial = true;
}

static void partial_del(struct slab_class *sc, struct slab *s)
{
	if (s->pprev)
		s->pprev->pnext = s->pnext;
	else
		sc->partial = s->pnext;
	if (s->pnext)
		s->pnext->pprev = s->pprev;
	s->pnext = s->pprev = NULL;
	s->partial = false;
}

static struct slab *slab_host_new(struct md_pool *pool, struct slab_class *sc)
{
	struct slab *s = calloc(1, sizeof(*s));
	uint32_t i;

	if (!s)
		return NULL;
	s->stack = malloc(sizeof(*s->stack) * sc->nslots);
	/* One descriptor per cache line. */
	if (posix_memalign((void **)&s->blocks, 64,
			   sc->nslots * sizeof(*s->blocks)))
		s->blocks = NULL;
	s->tags = calloc(sc->nslots, sizeof(*s->tags));
	if (!s->stack || !s->blocks || !s->tags) {
		free(s->stack);
		free(s->blocks);
		free(s->tags);
		free(s);
		return NULL;
	}
	memset(s->blocks, 0, sc->nslots * sizeof(*s->blocks));
	s->sc = sc;
	s->nfree = sc->nslots;
	for (i = 0; i < sc->nslots; i++) {
		struct md_pool_block *b = &s->blocks[i];

		s->stack[i] = sc->nslots - 1 - i;	/* slot 0 on top */
		b->pool = pool;
		b->owner = s;
		b->cls = (uint8_t)(sc - pool->cls);
		b->tier = MD_TIER_SLAB;
		b->size = sc->size;
	}
	return s;
}

/* A slab with device memory for @sc (class lock held). */
static int slab_new(struct md_pool *pool, struct slab_class *sc,
		    struct slab **out)
{
	struct slab *s = sc->spare;
	struct sregion *sr;
	uint64_t off;
	uint32_t i;
	int err;

	if (s) {
		sc->spare = s->pnext;
		s->pnext = NULL;
	} else {
		s = slab_host_new(pool, sc);
		if (!s)
			return -ENOMEM;
	}
	if (sc->nall == sc->all_cap) {
		uint32_t cap = sc->all_cap ? sc->all_cap * 2 : 8;
		struct slab **all = realloc(sc->all, cap * sizeof(*all));

		if (!all) {
			err = -ENOMEM;
			goto spare;
		}
		sc->all = all;
		sc->all_cap = cap;
	}
	err = sregion_carve(pool, sc->slab_size, &sr, &off);
	if (err)
		goto spare;
	s->region = sr;
	s->off = off;
	/* Every slot is RECYCLED or never used, and on the stack. */
	for (i = 0; i < sc->nslots; i++) {
		struct md_pool_block *b = &s->blocks[i];

		b->dev_va = sr->r.dev_va + off + i * sc->size;
		b->cpu = sr->r.cpu ? (char *)sr->r.cpu + off + i * sc->size :
				     NULL;
	}
	s->index = sc->nall;
	sc->all[sc->nall++] = s;
	partial_add(sc, s);
	*out = s;
	return 0;
spare:
	s->pnext = sc->spare;
	sc->spare = s;
	return err;
}

/* Up to @want free blocks of @sc into @items (class lock held). */
static int central_take(struct md_pool *pool, struct slab_class *sc,
			struct md_pool_block **items, uint32_t want,
			uint32_t *got)
{
	uint32_t n = 0;
	int err = 0;

	while (n < want) {
		struct slab *s = sc->partial;

		if (!s) {
			err = slab_new(pool, sc, &s);
			if (err)
				break;
		}
		while (s->nfree && n < want)
			items[n++] = &s->blocks[s->stack[--s->nfree]];
		if (!s->nfree)
			partial_del(sc, s);
	}
	*got = n;
	return n ? 0 : err;
}

/* RECYCLED blocks back on their slabs (class lock held). */
static void central_put(struct slab_class *sc, struct md_pool_block **items,
			uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct md_pool_block *b = items[i];
		struct slab *s = b->owner;

		s->stack[s->nfree++] = (uint32_t)(b - s->blocks);
		if (!s->partial)
			partial_add(sc, s);
	}
}

/* Empty slabs of @sc back to their regions (class lock held). */
static void slabs_release_empty(struct md_pool *pool, struct slab_class *sc,
				struct md_cleaner_report *rep)
{
	uint32_t i = sc->nall;

	while (i-- > 0) {
		struct slab *s = sc->all[i];

		if (s->nfree != sc->nslots)
			continue;
		if (s->partial)
			partial_del(sc, s);
		sc->all[i] = sc->all[--sc->nall];
		sc->all[i]->index = i;
		sregion_uncarve(pool, s->region, s->off, sc->slab_size);
		s->region = NULL;
		s->pnext = sc->spare;
		sc->spare = s;
		if (rep)
			rep->slabs_released++;
	}
}

static void flush_own(struct md_pool *pool);

/*
 * The slab tier's clean: this thread's cache back to the slabs (other
 * threads flush theirs at their next call), RELEASED blocks recycled (with
 * @recycle), empty slabs back to their regions, empty regions to the
 * device.
 */
static void slab_clean(struct md_pool *pool, bool recycle,
		       struct md_cleaner_report *rep)
{
	struct tc_cell *cell = NULL;
	bool locked = false;
	uint32_t c, i, j;

	flush_own(pool);
	if (recycle)
		cell = pool_cell_get(pool, &locked);
	for (c = 0; c < pool->nclasses; c++) {
		struct slab_class *sc = &pool->cls[c];

		pthread_mutex_lock(&sc->lock);
		for (i = 0; recycle && i < sc->nall; i++) {
			struct slab *s = sc->all[i];

			for (j = 0; j < sc->nslots; j++) {
				struct md_pool_block *b = &s->blocks[j];

				if (!pool_recycle_released(b))
					continue;
				count_free(pool, cell, MD_TIER_SLAB, b->size,
					   RLD(b->requested));
				central_put(sc, &b, 1);
				if (rep) {
					rep->recycled_blocks++;
					rep->recycled_bytes += b->size;
				}
			}
		}
		slabs_release_empty(pool, sc, rep);
		pthread_mutex_unlock(&sc->lock);
	}
	if (recycle)
		pool_cell_put(pool, locked);
	sregions_release_empty(pool, rep);
}

static int slab_walk(struct md_pool *pool, blk_fn fn, void *arg)
{
	struct blk_rec r;
	uint32_t c, i, j;
	int err = 0;

	for (c = 0; c < pool->nclasses && !err; c++) {
		struct slab_class *sc = &pool->cls[c];

		pthread_mutex_lock(&sc->lock);
		for (i = 0; i < sc->nall && !err; i++)
			for (j = 0; j < sc->nslots && !err; j++)
				if (blk_read(&sc->all[i]->blocks[j], &r))
					err = fn(arg, &r);
		pthread_mutex_unlock(&sc->lock);
	}
	return err;
}

/*
 * The slab tier's largest free extent: the largest class with a free slot
 * (on a slab or in a thread's cache) or the largest uncarved span.
 */
static uint64_t slab_largest_free(struct md_pool *pool)
{
	uint64_t best = 0;
	struct sregion *sr;
	struct tcache *tc;
	uint32_t c;

	pthread_mutex_lock(&pool->sr_lock);
	for (sr = pool->sregions; sr; sr = sr->next) {
		uint64_t l = mbuddy_largest(&sr->mb) * SLAB_MIN;

		best = l > best ? l : best;
	}
	pthread_mutex_unlock(&pool->sr_lock);

	pthread_mutex_lock(&md_pool_reg_lock);
	for (c = pool->nclasses; c-- > 0; ) {
		struct slab_class *sc = &pool->cls[c];
		bool any;

		if (sc->size <= best)
			break;
		pthread_mutex_lock(&sc->lock);
		any = sc->partial != NULL;
		pthread_mutex_unlock(&sc->lock);
		for (tc = pool->tcaches; tc && !any; tc = tc->pnext)
			any = RLD(tc->bins[c].n) != 0;
		if (any) {
			best = sc->size;
			break;
		}
	}
	pthread_mutex_unlock(&md_pool_reg_lock);
	return best;
}

/* The slab tier's alloc: one block of @size's class, from its slabs. */
static int slab_take(struct md_pool *pool, uint64_t size,
		     struct md_pool_block **out)
{
	struct slab_class *sc = &pool->cls[cls_index((size + pool->unit - 1) >>
						     pool->lg_unit)];
	uint32_t got;
	int err;

	pthread_mutex_lock(&sc->lock);
	err = central_take(pool, sc, out, 1, &got);
	pthread_mutex_unlock(&sc->lock);
	return err;
}

/* The slab tier's free: the block back on its slab. */
static void slab_put(struct md_pool *pool, struct md_pool_block *b)
{
	struct slab_class *sc = &pool->cls[b->cls];

	pthread_mutex_lock(&sc->lock);
	central_put(sc, &b, 1);
	pthread_mutex_unlock(&sc->lock);
}

/* ------------------------------------------------------------ thread caches */

static void bins_flush(struct md_pool *pool, struct tcache *tc)
{
	uint32_t c;

	for (c = 0; c < pool->nclasses; c++) {
		struct tc_bin *bin = &tc->bins[c];
		uint32_t n = RLD(bin->n);

		if (!n)
			continue;
		pthread_mutex_lock(&pool->cls[c].lock);
		central_put(&pool->cls[c], bin->items, n);
		pthread_mutex_unlock(&pool->cls[c].lock);
		RST(bin->n, 0);
	}
}

static void flush_own(struct md_pool *pool)
{
	struct tcache *tc;

	atomic_fetch_add(&pool->epoch, 1);
	tc = tcache_get(pool);	/* flushes it: the epoch moved */
	if (tc)
		pool_publish_pending(pool, &tc->cell);
}

/* ------------------------------------------------------------ slab tier */

static int __attribute__((noinline))
bin_refill(struct md_pool *pool, struct tc_bin *bin, struct slab_class *sc)
{
	uint32_t got;
	int err;

	pthread_mutex_lock(&sc->lock);
	err = central_take(pool, sc, bin->items, bin->cap / 2 ? bin->cap / 2 : 1,
			   &got);
	pthread_mutex_unlock(&sc->lock);
	if (!err)
		RST(bin->n, got);
	return err;
}

static void __attribute__((noinline))
bin_flush_half(struct slab_class *sc, struct tc_bin *bin)
{
	uint32_t n = RLD(bin->n), h = n / 2 ? n / 2 : 1;

	pthread_mutex_lock(&sc->lock);
	central_put(sc, bin->items, h);
	pthread_mutex_unlock(&sc->lock);
	memmove(bin->items, bin->items + h, (n - h) * sizeof(*bin->items));
	RST(bin->n, n - h);
}

/*
 * What the fast paths below leave: an empty bin (refilled from the slabs),
 * a class without a bin, a thread without a cache.
 */
static int __attribute__((noinline))
slab_alloc_slow(struct md_pool *pool, uint64_t size, unsigned int c,
		struct tcache *tc, const struct md_alloc_opts *opts,
		struct md_buf *out)
{
	struct md_pool_block *b;
	struct tc_cell *cell;
	bool locked;
	int err;

	if (tc && tc->bins[c].cap) {
		struct tc_bin *bin = &tc->bins[c];
		uint32_t n;

		err = bin_refill(pool, bin, &pool->cls[c]);
		if (err)
			return err;
		n = RLD(bin->n);
		b = bin->items[--n];
		RST(bin->n, n);
	} else {
		err = slab_take(pool, size, &b);
		if (err)
			return err;
	}
	err = hand_out(pool, b, tc ? tc->stamp : BLK_NOBODY, size, opts,
		       out);
	if (unlikely(err))
		return err;
	if (tc) {
		count_alloc(pool, &tc->cell, MD_TIER_SLAB, b->size, size);
		return 0;
	}
	cell = pool_cell_get(pool, &locked);
	count_alloc(pool, cell, MD_TIER_SLAB, b->size, size);
	pool_cell_put(pool, locked);
	return 0;
}

/* The fast path: a block from this thread's bin (a class without one has n 0). */
static INLINE int slab_alloc(struct md_pool *pool, uint64_t size,
			     const struct md_alloc_opts *opts,
			     struct md_buf *out)
{
	unsigned int c = cls_index((size + pool->unit - 1) >> pool->lg_unit);
	struct tcache *tc = tcache_get(pool);

	if (likely(tc)) {
		struct tc_bin *bin = &tc->bins[c];
		uint32_t n = RLD(bin->n);

		if (likely(n)) {
			struct md_pool_block *b = bin->items[--n];
			int err;

			RST(bin->n, n);
			err = hand_out(pool, b, tc->stamp, size, opts, out);
			if (unlikely(err))
				return err;
			count_alloc(pool, &tc->cell, MD_TIER_SLAB, b->size,
				    size);
			return 0;
		}
	}
	return slab_alloc_slow(pool, size, c, tc, opts, out);
}

/* A full bin (half of it flushed), no bin, no cache. */
static void __attribute__((noinline))
slab_free_slow(struct md_pool *pool, struct md_pool_block *b, uint64_t req,
	       struct tcache *tc)
{
	struct tc_cell *cell;
	bool locked;

	if (tc && tc->bins[b->cls].cap) {
		struct tc_bin *bin = &tc->bins[b->cls];
		uint32_t n;

		bin_flush_half(&pool->cls[b->cls], bin);
		n = RLD(bin->n);
		bin->items[n] = b;
		RST(bin->n, n + 1);
		count_free(pool, &tc->cell, MD_TIER_SLAB, b->size, req);
		return;
	}
	slab_put(pool, b);
	if (tc) {
		count_free(pool, &tc->cell, MD_TIER_SLAB, b->size, req);
		return;
	}
	cell = pool_cell_get(pool, &locked);
	count_free(pool, cell, MD_TIER_SLAB, b->size, req);
	pool_cell_put(pool, locked);
}

/* The fast path: the block onto this thread's bin (no bin: cap 0). */
static INLINE void slab_free(struct md_pool *pool, struct md_pool_block *b,
			     uint64_t req)
{
	struct tcache *tc = tcache_get(pool);

	if (likely(tc)) {
		struct tc_bin *bin = &tc->bins[b->cls];
		uint32_t n = RLD(bin->n);

		if (likely(n < bin->cap)) {
			bin->items[n] = b;
			RST(bin->n, n + 1);
			count_free(pool, &tc->cell, MD_TIER_SLAB, b->size,
				   req);
			return;
		}
	}
	slab_free_slow(pool, b, req, tc);
}

/* ------------------------------------------------------------ the API */

/* A buddy or large block: the tier's memory, handed out and counted here. */
static int xtier_alloc(struct md_pool *pool, uint64_t size,
		       const struct md_alloc_opts *opts, struct md_buf *out)
{
	enum md_pool_tier tier = pool_tier_for(pool, size);
	struct md_pool_block *b;
	struct tc_cell *cell;
	bool locked;
	int err;

	err = pool->tiers[tier]->alloc(pool, size, &b);
	if (err)
		return err;
	err = hand_out(pool, b, BLK_NOBODY, size, opts, out);
	if (err)
		return err;
	cell = pool_cell_get(pool, &locked);
	count_alloc(pool, cell, tier, b->size, size);
	pool_cell_put(pool, locked);
	return 0;
}

static int alloc_once(struct md_pool *pool, uint64_t size,
		      const struct md_alloc_opts *opts, struct md_buf *out)
{
	if (size < MD_POOL_SLAB_LIMIT)
		return slab_alloc(pool, size, opts, out);
	return xtier_alloc(pool, size, opts, out);
}

/* The block a request of @size would take. */
static uint64_t block_size(struct md_pool *pool, uint64_t size)
{
	uint64_t g;

	switch (pool_tier_for(pool, size)) {
	case MD_TIER_SLAB:
		return pool->cls[cls_index((size + pool->unit - 1) >>
					   pool->lg_unit)].size;
	case MD_TIER_BUDDY:
		g = pool->granule;
		break;
	case MD_TIER_DYNAMIC:
		g = pool->align;
		break;
	default:
		g = pool->align > pool->page ? pool->align : pool->page;
		break;
	}
	return (size + g - 1) & ~(g - 1);
}

static int __attribute__((noinline))
alloc_retry(struct md_pool *pool, uint64_t size,
	    const struct md_alloc_opts *opts, struct md_buf *out)
{
	int err;

	/* Cached memory back to the device, then once more. */
	pool_reclaim(pool);
	md_pool_limit_hit = false;
	err = alloc_once(pool, size, opts, out);
	if (err == -ENOMEM || err == -EDQUOT) {
		enum md_pool_tier tier = pool_tier_for(pool, size);

		atomic_fetch_add(&pool->oom_count[tier], 1);
		pool_oom_fill(pool, tier, size, block_size(pool, size), err,
			      md_pool_limit_hit, opts ? opts->oom : NULL);
	}
	return err;
}

MD_API int md_alloc_ex(struct md_pool *pool, uint64_t size,
		       const struct md_alloc_opts *opts, struct md_buf *out)
{
	int err;

	if (unlikely(!size || size > MAX_REQUEST))
		return -EINVAL;
	if (likely(size < MD_POOL_SLAB_LIMIT))
		err = slab_alloc(pool, size, opts, out);
	else
		err = xtier_alloc(pool, size, opts, out);
	if (likely(!err))
		return 0;
	if (err != -ENOMEM && err != -EDQUOT)
		return err;
	return alloc_retry(pool, size, opts, out);
}

/* md_alloc() past its fast path: the whole of slab_alloc(), then the rest. */
static int __attribute__((noinline))
alloc_slow(struct md_pool *pool, uint64_t size, struct md_buf *out)
{
	int err;

	if (likely(size && size < MD_POOL_SLAB_LIMIT)) {
		err = slab_alloc(pool, size, NULL, out);
		if (likely(!err))
			return 0;
		if (err != -ENOMEM && err != -EDQUOT)
			return err;
		return alloc_retry(pool, size, NULL, out);
	}
	return md_alloc_ex(pool, size, NULL, out);
}

/* The cell's pending figures published; for tail calls from fast paths. */
static int __attribute__((noinline))
publish_ret(struct md_pool *pool, struct tc_cell *c)
{
	pool_publish_pending(pool, c);
	return 0;
}

/*
 * This thread's cache for @pool if it is current (no flush due), else
 * NULL: the fast paths' test, with no call in it.
 */
static INLINE struct tcache *tcache_fast(struct md_pool *pool)
{
	struct tcache *tc = pool_tls_last;

	if (likely(tc && tc->pool_id == pool->id &&
		   tc->epoch == atomic_load_explicit(&pool->epoch,
						     memory_order_relaxed)))
		return tc;
	return NULL;
}

/*
 * The fast path has no call but tail calls (the slow paths, a refusal,
 * publishing), so it needs no stack frame: a slab request whose bin in
 * this thread's current cache is not empty.
 */
MD_API int md_alloc(struct md_pool *pool, uint64_t size, struct md_buf *out)
{
	struct tcache *tc = tcache_fast(pool);

	if (likely(tc && size - 1 < MD_POOL_SLAB_LIMIT - 1)) {
		unsigned int c = cls_index((size + pool->unit - 1) >>
					   pool->lg_unit);
		struct tc_bin *bin = &tc->bins[c];
		uint32_t n = RLD(bin->n);

		if (likely(n)) {
			struct md_pool_block *b = bin->items[--n];
			int err;

			RST(bin->n, n);
			err = hand_out(pool, b, tc->stamp, size, NULL, out);
			if (unlikely(err))
				return err;
			if (unlikely(count_slab_alloc(&tc->cell, b->size,
						      size)))
				return publish_ret(pool, &tc->cell);
			return 0;
		}
	}
	return alloc_slow(pool, size, out);
}

/* md_free() past a successful transition: the block back to its tier. */
static int __attribute__((noinline))
free_finish(struct md_pool *pool, struct md_pool_block *b)
{
	uint64_t req = RLD(b->requested), size;
	struct tc_cell *cell;
	bool locked;

	if (likely(b->tier == MD_TIER_SLAB)) {
		slab_free(pool, b, req);
		return 0;
	}
	size = b->size;
	pool->tiers[b->tier]->free(pool, b);
	cell = pool_cell_get(pool, &locked);
	count_free(pool, cell, b->tier, size, req);
	pool_cell_put(pool, locked);
	return 0;
}

/*
 * The transition out of line (RELEASED, held, refused, a lost race, a
 * block owned by another thread or by this one without its cache).
 */
static int __attribute__((noinline))
free_slow(struct md_pool *pool, const struct md_buf *buf,
	  struct md_pool_block *b)
{
	int err = free_cas_slow(pool, buf, b,
				atomic_load_explicit(w_word(&b->sync),
						     memory_order_acquire));

	if (err)
		return err;
	return free_finish(pool, b);
}

/*
 * Like md_alloc(), no call but tail calls, then the block onto this
 * thread's bin. The transition, ALLOCATED -> RECYCLED in the handle's
 * generation:
 *
 * - by the block's owner (the thread whose cache handed it out, and no
 *   other thread has written its word since: its thread is this cache's
 *   id) with a plain load and store. Between them no other thread can
 *   change the word: one that wants to first sets thread to BLK_SHARED,
 *   runs a barrier on every thread (pool_unown()) and waits while busy is
 *   set. This side's store of busy and load of thread need no fence: the
 *   other side's barrier either comes after the load (then it is the
 *   other side that waits for busy to clear) or before it (then the load
 *   sees BLK_SHARED and this takes the compare-exchange);
 * - by anyone else, with one compare-exchange, after taking the block
 *   from its owner if it has one (free_slow()).
 */
MD_API int md_free(struct md_pool *pool, const struct md_buf *buf)
{
	struct md_pool_block *b = buf ? buf->block : NULL;
	struct tcache *tc;
	uint64_t w, nw;

	if (unlikely(!b || b->pool != pool))
		return violate(pool, MD_POOL_BAD_HANDLE, MD_REUSE_RECYCLE, buf,
			       NULL, 0, -EINVAL);
	w = w_pack(MD_BLOCK_ALLOCATED, 0, buf->generation);
	nw = w_pack(MD_BLOCK_RECYCLED, 0, buf->generation);
	tc = tcache_fast(pool);
	/*
	 * Only the owner may write busy, so the first tests come before it:
	 * a thread whose id a descriptor still holds from an earlier life
	 * (its blocks went to another cache since) fails the word's test,
	 * its handle being stale.
	 */
	if (likely(tc && RLD(b->thread) == tc->tid &&
		   atomic_load_explicit(w_word(&b->sync),
					memory_order_relaxed) == w)) {
		uint32_t me = tc->tid;

		RST(b->busy, 1);
		atomic_signal_fence(memory_order_seq_cst);
		/*
		 * Still ours: no other thread has written the word since
		 * the test above (one that did set BLK_SHARED first, and
		 * its barrier came before this load, or it is waiting).
		 */
		if (unlikely(RLD(b->thread) != me)) {
			atomic_store_explicit(&b->busy, 0,
					      memory_order_release);
			return free_slow(pool, buf, b);
		}
		atomic_store_explicit(w_word(&b->sync), nw,
				      memory_order_release);
		atomic_store_explicit(&b->busy, 0, memory_order_release);
	} else if (unlikely(RLD(b->thread) >= BLK_FIRST_TID ||
			    !atomic_compare_exchange_strong_explicit(
				    w_word(&b->sync), &w, nw,
				    memory_order_acq_rel,
				    memory_order_acquire))) {
		return free_slow(pool, buf, b);
	}
	if (likely(tc && b->tier == MD_TIER_SLAB)) {
		struct tc_bin *bin = &tc->bins[b->cls];
		uint32_t n = RLD(bin->n);

		if (likely(n < bin->cap)) {
			bin->items[n] = b;
			RST(bin->n, n + 1);
			if (unlikely(count_slab_free(&tc->cell, b->size,
						     RLD(b->requested))))
				return publish_ret(pool, &tc->cell);
			return 0;
		}
	}
	return free_finish(pool, b);
}

/* ------------------------------------------------------------ create, destroy */

MD_API int md_pool_create(struct md_device *dev,
			  const struct md_pool_config *cfg,
			  struct md_pool **out)
{
	uint64_t align = cfg && cfg->align ? cfg->align : md_device_align(dev);
	uint64_t unit, umax, granule, sr_size, br_size, maxcls;
	struct md_pool *pool;
	uint32_t n, c;

	*out = NULL;
	pthread_once(&cls_once, cls_table_init);
	if (!md_is_pow2(align) || align > MD_POOL_BUDDY_LIMIT)
		return -EINVAL;
	if (cfg && ((cfg->flags & ~(MD_POOL_NO_TCACHE | MD_POOL_DYNAMIC |
				    MD_POOL_SHARED_BLOCKS)) ||
		    cfg->pad))
		return -EINVAL;
	unit = align > SLAB_UNIT_MIN ? align : SLAB_UNIT_MIN;
	umax = (MD_POOL_SLAB_LIMIT - 1 + unit - 1) / unit;
	n = cls_index(umax) + 1;
	if (n > MAX_CLASSES)
		return -EINVAL;
	maxcls = cls_units(n - 1) * unit;
	granule = align > SLAB_MIN ? align : SLAB_MIN;

	sr_size = cfg && cfg->slab_region ? cfg->slab_region : 8ull << 20;
	if (!(cfg && cfg->slab_region) && sr_size < md_pow2_ceil(maxcls))
		sr_size = md_pow2_ceil(maxcls);
	if (!md_is_pow2(sr_size) || sr_size < (1ull << 20) ||
	    sr_size < md_pow2_ceil(maxcls))
		return -EINVAL;
	br_size = cfg && cfg->buddy_region ? cfg->buddy_region : 64ull << 20;
	if (!(cfg && cfg->buddy_region) && br_size < 4 * granule)
		br_size = 4 * granule;
	if (!md_is_pow2(br_size) || br_size < MD_POOL_BUDDY_LIMIT ||
	    br_size < granule)
		return -EINVAL;

	pool = calloc(1, sizeof(*pool) + n * sizeof(pool->cls[0]));
	if (!pool)
		return -ENOMEM;
	pool->id = atomic_fetch_add(&next_pool_id, 1) + 1;
	pool->nclasses = n;
	pool->unit = unit;
	pool->lg_unit = md_ctz64(unit);
	pool->align = align;
	pool->page = md_device_page_size(dev);
	pool->granule = granule;
	pool->slab_region = sr_size;
	pool->buddy_region = br_size;
	pool->limit = cfg ? cfg->limit : 0;
	pool->flags = cfg ? cfg->flags : 0;
	pool->handler = cfg ? cfg->handler : NULL;
	pool->handler_arg = cfg ? cfg->handler_arg : NULL;
	pool->dev = dev;
	pool->owner_free = !(pool->flags & (MD_POOL_NO_TCACHE |
					    MD_POOL_SHARED_BLOCKS)) &&
			   pool_asym_init();
	pool->tiers[MD_TIER_SLAB] = &pool_slab_ops;
	pool->tiers[MD_TIER_BUDDY] = &pool_buddy_ops;
	pool->tiers[MD_TIER_LARGE] = &pool_large_ops;
	pool->tiers[MD_TIER_DYNAMIC] = &pool_dyn_ops;
	pthread_mutex_init(&pool->orphan_lock, NULL);
	pthread_mutex_init(&pool->region_lock, NULL);
	pthread_mutex_init(&pool->sr_lock, NULL);
	pthread_mutex_init(&pool->oom_lock, NULL);
	pthread_mutex_init(&pool->buddy.lock, NULL);
	pthread_mutex_init(&pool->large.lock, NULL);
	for (c = 0; c < n; c++) {
		struct slab_class *sc = &pool->cls[c];
		uint64_t ss = md_pow2_ceil(8 * cls_units(c) * unit);

		pthread_mutex_init(&sc->lock, NULL);
		sc->size = cls_units(c) * unit;
		if (ss < SLAB_MIN)
			ss = SLAB_MIN;
		if (ss > sr_size)
			ss = sr_size;
		sc->slab_size = ss;
		sc->nslots = (uint32_t)(ss / sc->size);
		if (!(pool->flags & MD_POOL_NO_TCACHE) &&
		    sc->size <= TCACHE_MAX) {
			uint64_t cap = TCACHE_BYTES / sc->size;

			sc->tc_cap = cap < 4 ? 4 : cap > 64 ? 64 : (uint32_t)cap;
		}
	}
	pthread_mutex_lock(&md_pool_list_lock);
	pool->next = md_pool_list;
	md_pool_list = pool;
	pthread_mutex_unlock(&md_pool_list_lock);
	if (pool->flags & MD_POOL_DYNAMIC) {
		int err = pool_dyn_init(pool);

		if (err) {
			md_pool_destroy(pool);
			return err;
		}
	}
	*out = pool;
	return 0;
}

static void slab_host_free(struct slab *s)
{
	free(s->stack);
	free(s->blocks);
	free(s->tags);
	free(s);
}

static void slab_destroy(struct md_pool *pool)
{
	struct sregion *sr;
	uint32_t c, i;

	for (c = 0; c < pool->nclasses; c++) {
		struct slab_class *sc = &pool->cls[c];
		struct slab *s;

		for (i = 0; i < sc->nall; i++)
			slab_host_free(sc->all[i]);
		while ((s = sc->spare)) {
			sc->spare = s->pnext;
			slab_host_free(s);
		}
		free(sc->all);
		pthread_mutex_destroy(&sc->lock);
	}
	while ((sr = pool->sregions)) {
		pool->sregions = sr->next;
		md_region_free(pool->dev, &sr->r);
		mbuddy_fini(&sr->mb);
		free(sr);
	}
	pthread_mutex_destroy(&pool->sr_lock);
}

const struct pool_tier_ops pool_slab_ops = {
	.alloc = slab_take,
	.free = slab_put,
	.walk = slab_walk,
	.clean = slab_clean,
	.largest_free = slab_largest_free,
	.destroy = slab_destroy,
	.cache_flush = bins_flush,
};

MD_API void md_pool_destroy(struct md_pool *pool)
{
	struct md_pool **pp;
	int t;

	if (!pool)
		return;
	pthread_mutex_lock(&md_pool_list_lock);
	for (pp = &md_pool_list; *pp; pp = &(*pp)->next) {
		if (*pp == pool) {
			*pp = pool->next;
			break;
		}
	}
	pthread_mutex_unlock(&md_pool_list_lock);

	/* Other threads free their caches of it when they next look. */
	pool_caches_detach(pool);

	for (t = 0; t < MD_TIER_COUNT; t++)
		pool->tiers[t]->destroy(pool);
	pthread_mutex_destroy(&pool->orphan_lock);
	pthread_mutex_destroy(&pool->region_lock);
	pthread_mutex_destroy(&pool->oom_lock);
	free(pool);
}

MD_API struct md_device *md_pool_device(const struct md_pool *pool)
{
	return pool->dev;
}

MD_API uint64_t md_pool_align(const struct md_pool *pool)
{
	return pool->align;
}
