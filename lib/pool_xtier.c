// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pools' buddy and large tiers (lib/pool_internal.h). Both keep their
 * descriptors on lists under one lock per tier: live (handed out), spare
 * (no memory) and, for the large tier, cached (RECYCLED, region kept for
 * a later request it fits). Descriptors are never freed before the pool,
 * so a stale handle always points at one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bitmath.h"
#include "dlist.h"
#include "pool_internal.h"

MD_DLIST_DEFINE(xlist, struct xblock)

/* A descriptor without memory (tier lock held). */
static struct xblock *xblock_get(struct md_pool *pool, struct xtier *t,
				 enum md_pool_tier tier)
{
	struct xblock *x = t->spare;

	if (x) {
		xlist_del(&t->spare, x);
		return x;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->b.pool = pool;
	x->b.tier = tier;
	return x;
}

/* ------------------------------------------------------------ buddy */

static int buddy_alloc(struct md_pool *pool, uint64_t size,
		       struct md_pool_block **out)
{
	struct xtier *t = &pool->buddy;
	uint64_t units = (size + pool->granule - 1) / pool->granule;
	struct bregion *r;
	struct xblock *x;
	int64_t off = -1;
	int err;

	pthread_mutex_lock(&t->lock);
	for (r = t->regions; r; r = r->next) {
		off = mbuddy_alloc(&r->mb, units);
		if (off >= 0)
			break;
	}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			err = -ENOMEM;
			goto unlock;
		}
		err = pool_region_get(pool, MD_TIER_BUDDY, pool->buddy_region,
				      ((uint64_t)1 << md_ceil_log2(units)) *
				      pool->granule, &r->r);
		if (!err) {
			err = mbuddy_init(&r->mb, md_ceil_log2(r->r.size /
							    pool->granule));
			if (err)
				pool_region_put(pool, MD_TIER_BUDDY, &r->r);
		}
		if (err) {
			free(r);
			goto unlock;
		}
		r->next = t->regions;
		t->regions = r;
		off = mbuddy_alloc(&r->mb, units);
	}
	x = xblock_get(pool, t, MD_TIER_BUDDY);
	if (!x) {
		mbuddy_free(&r->mb, (uint64_t)off, units);
		err = -ENOMEM;
		goto unlock;
	}
	x->off = (uint64_t)off;
	x->units = units;
	x->b.owner = r;
	x->b.dev_va = r->r.dev_va + x->off * pool->granule;
	x->b.cpu = r->r.cpu ? (char *)r->r.cpu + x->off * pool->granule :
			      NULL;
	x->b.size = units * pool->granule;
	r->blocks++;
	xlist_add(&t->live, x);
	*out = &x->b;
	err = 0;
unlock:
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* The block is RECYCLED: its granules go back (tier lock held). */
static void buddy_put(struct xtier *t, struct xblock *x)
{
	struct bregion *r = x->b.owner;

	mbuddy_free(&r->mb, x->off, x->units);
	r->blocks--;
	x->b.owner = NULL;
	xlist_del(&t->live, x);
	xlist_add(&t->spare, x);
}

static void buddy_free(struct md_pool *pool, struct md_pool_block *b)
{
	struct xtier *t = &pool->buddy;

	pthread_mutex_lock(&t->lock);
	buddy_put(t, (struct xblock *)b);
	pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------ large */

static int large_alloc(struct md_pool *pool, uint64_t size,
		       struct md_pool_block **out)
{
	struct xtier *t = &pool->large;
	uint64_t g = pool->align > pool->page ? pool->align : pool->page;
	uint64_t sz = (size + g - 1) & ~(g - 1);
	struct xblock *x, *best = NULL;
	int err;

	/* A cached region that fits with at most a quarter to spare. */
	pthread_mutex_lock(&t->lock);
	for (x = t->cached; x; x = x->next)
		if (x->r.size >= sz && x->r.size - sz <= sz / 4 &&
		    (!best || x->r.size < best->r.size))
			best = x;
	if (best) {
		xlist_del(&t->cached, best);
		xlist_add(&t->live, best);
		pthread_mutex_unlock(&t->lock);
		*out = &best->b;
		return 0;
	}
	x = xblock_get(pool, t, MD_TIER_LARGE);
	pthread_mutex_unlock(&t->lock);
	if (!x)
		return -ENOMEM;

	/* Off every list: nobody else looks at it. */
	err = pool_region_get(pool, MD_TIER_LARGE, sz, sz, &x->r);
	pthread_mutex_lock(&t->lock);
	if (err) {
		xlist_add(&t->spare, x);
	} else {
		x->b.dev_va = x->r.dev_va;
		x->b.cpu = x->r.cpu;
		x->b.size = x->r.size;
		xlist_add(&t->live, x);
		*out = &x->b;
	}
	pthread_mutex_unlock(&t->lock);
	return err;
}

static void large_free(struct md_pool *pool, struct md_pool_block *b)
{
	struct xtier *t = &pool->large;
	struct xblock *x = (struct xblock *)b;

	pthread_mutex_lock(&t->lock);
	xlist_del(&t->live, x);
	xlist_add(&t->cached, x);
	pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------ both */

static void xtier_clean(struct md_pool *pool, struct xtier *t,
			enum md_pool_tier tier, bool recycle,
			struct md_cleaner_report *rep)
{
	struct tc_cell *cell = NULL;
	struct xblock *x, *next;
	struct bregion **pp, *r;
	bool locked = false;

	if (recycle)
		cell = pool_cell_get(pool, &locked);
	pthread_mutex_lock(&t->lock);
	for (x = t->live; recycle && x; x = next) {
		next = x->next;
		if (!pool_recycle_counted(pool, cell, tier, &x->b, rep))
			continue;
		if (tier == MD_TIER_BUDDY) {
			buddy_put(t, x);
		} else {
			xlist_del(&t->live, x);
			xlist_add(&t->cached, x);
		}
	}
	while ((x = t->cached)) {
		if (rep) {
			rep->regions_released++;
			rep->region_bytes_released += x->r.size;
		}
		pool_region_put(pool, tier, &x->r);
		memset(&x->r, 0, sizeof(x->r));
		xlist_del(&t->cached, x);
		xlist_add(&t->spare, x);
	}
	for (pp = &t->regions; (r = *pp); ) {
		if (r->blocks) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		if (rep) {
			rep->regions_released++;
			rep->region_bytes_released += r->r.size;
		}
		pool_region_put(pool, tier, &r->r);
		mbuddy_fini(&r->mb);
		free(r);
	}
	pthread_mutex_unlock(&t->lock);
	if (recycle)
		pool_cell_put(pool, locked);
}

static int xtier_walk(struct xtier *t, blk_fn fn, void *arg)
{
	struct blk_rec rec;
	struct xblock *x;
	int err = 0;

	pthread_mutex_lock(&t->lock);
	for (x = t->live; x && !err; x = x->next)
		if (blk_read(&x->b, &rec))
			err = fn(arg, &rec);
	pthread_mutex_unlock(&t->lock);
	return err;
}

static uint64_t xtier_largest_free(struct md_pool *pool, struct xtier *t,
				   enum md_pool_tier tier)
{
	uint64_t best = 0, l;
	struct bregion *r;
	struct xblock *x;

	pthread_mutex_lock(&t->lock);
	if (tier == MD_TIER_BUDDY) {
		for (r = t->regions; r; r = r->next) {
			l = mbuddy_largest(&r->mb) * pool->granule;
			best = l > best ? l : best;
		}
	} else {
		for (x = t->cached; x; x = x->next)
			best = x->r.size > best ? x->r.size : best;
	}
	pthread_mutex_unlock(&t->lock);
	return best;
}

static void xlist_free(struct md_pool *pool, struct xblock *x, bool regions)
{
	struct xblock *next;

	for (; x; x = next) {
		next = x->next;
		if (regions && x->r.size)
			md_region_free(pool->dev, &x->r);
		free(x);
	}
}

static void xtier_destroy(struct md_pool *pool, struct xtier *t)
{
	bool large = t == &pool->large;
	struct bregion *r;

	xlist_free(pool, t->live, large);
	xlist_free(pool, t->cached, large);
	xlist_free(pool, t->spare, false);
	while ((r = t->regions)) {
		t->regions = r->next;
		md_region_free(pool->dev, &r->r);
		mbuddy_fini(&r->mb);
		free(r);
	}
}

/* ------------------------------------------------------------ the tables */

static int buddy_walk(struct md_pool *pool, blk_fn fn, void *arg)
{
	return xtier_walk(&pool->buddy, fn, arg);
}

static int large_walk(struct md_pool *pool, blk_fn fn, void *arg)
{
	return xtier_walk(&pool->large, fn, arg);
}

static void buddy_clean(struct md_pool *pool, bool recycle,
			struct md_cleaner_report *rep)
{
	xtier_clean(pool, &pool->buddy, MD_TIER_BUDDY, recycle, rep);
}

static void large_clean(struct md_pool *pool, bool recycle,
			struct md_cleaner_report *rep)
{
	xtier_clean(pool, &pool->large, MD_TIER_LARGE, recycle, rep);
}

static uint64_t buddy_largest_free(struct md_pool *pool)
{
	return xtier_largest_free(pool, &pool->buddy, MD_TIER_BUDDY);
}

static uint64_t large_largest_free(struct md_pool *pool)
{
	return xtier_largest_free(pool, &pool->large, MD_TIER_LARGE);
}

static void buddy_destroy(struct md_pool *pool)
{
	xtier_destroy(pool, &pool->buddy);
	pthread_mutex_destroy(&pool->buddy.lock);
}

static void large_destroy(struct md_pool *pool)
{
	xtier_destroy(pool, &pool->large);
	pthread_mutex_destroy(&pool->large.lock);
}

const struct pool_tier_ops pool_buddy_ops = {
	.alloc = buddy_alloc,
	.free = buddy_free,
	.walk = buddy_walk,
	.clean = buddy_clean,
	.largest_free = buddy_largest_free,
	.destroy = buddy_destroy,
};

const struct pool_tier_ops pool_large_ops = {
	.alloc = large_alloc,
	.free = large_free,
	.walk = large_walk,
	.clean = large_clean,
	.largest_free = large_largest_free,
	.destroy = large_destroy,
};
