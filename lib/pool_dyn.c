// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pools' dynamic tier (MD_POOL_DYNAMIC): requests of MD_POOL_SLAB_LIMIT
 * and up carved by best fit out of a few growing regions, the dynamic
 * pool's engine (lib/dynpool.c, include/metadef/dynpool.h) behind the
 * same struct pool_tier_ops as the slab, buddy and large tiers. The
 * generic layer (pool.c) hands the blocks out and recycles them with the
 * reuse protocol on the tier's descriptors; the engine's own descriptor
 * of each block stays ALLOCATED while the block is live and is freed
 * when the pool's block is RECYCLED.
 *
 * Calls go one way: this file -> dynpool.c, pool_core.c. The engine's
 * regions are counted in the pool's region figures after every change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/dynpool.h>

#include "dlist.h"
#include "pool_internal.h"

/* One descriptor: the pool's block and the engine's. */
struct dblock {
	struct md_pool_block b;		/* first */
	struct md_dynblock d;
	struct dblock *next, *prev;	/* live or spare list */
};

struct dtier {
	pthread_mutex_t lock;
	struct md_dynpool *dp;
	struct dblock *live, *spare;
	struct md_dynpool_stats last;	/* regions as last counted */
};

MD_DLIST_DEFINE(dlist, struct dblock)

/* The engine's regions into the pool's region figures (tier lock held). */
static void dtier_count_regions(struct md_pool *pool, struct dtier *t)
{
	struct md_dynpool_stats st;
	const int k = MD_TIER_DYNAMIC;

	md_dynpool_stats(t->dp, &st);
	pthread_mutex_lock(&pool->region_lock);
	pool->region_total += st.reserved_bytes - t->last.reserved_bytes;
	if (pool->region_total > pool->region_total_peak)
		pool->region_total_peak = pool->region_total;
	pool->region_count[k] = st.regions;
	pool->region_bytes[k] = st.reserved_bytes;
	pool->region_peak[k] = st.reserved_peak;
	pool->region_allocs[k] = st.region_allocs;
	pool->region_frees[k] = st.region_frees;
	pthread_mutex_unlock(&pool->region_lock);
	t->last = st;
}

int pool_dyn_init(struct md_pool *pool)
{
	struct md_dynpool_config cfg = {
		.align = pool->align,
		.capacity = pool->limit,
		.grow_min = pool->buddy_region,
	};
	struct dtier *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	err = md_dynpool_create(pool->dev, &cfg, &t->dp);
	if (err) {
		free(t);
		return err;
	}
	pthread_mutex_init(&t->lock, NULL);
	pool->dyn = t;
	return 0;
}

static int dyn_alloc(struct md_pool *pool, uint64_t size,
		     struct md_pool_block **out)
{
	struct dtier *t = pool->dyn;
	struct dblock *x;
	int err;

	pthread_mutex_lock(&t->lock);
	x = t->spare;
	if (x) {
		dlist_del(&t->spare, x);
	} else {
		x = calloc(1, sizeof(*x));
		if (!x) {
			err = -ENOMEM;
			goto unlock;
		}
		x->b.pool = pool;
		x->b.tier = MD_TIER_DYNAMIC;
	}
	err = md_dynpool_alloc(t->dp, size, &x->d);
	if (err) {
		if (err == -ENOMEM && pool->limit)
			md_pool_limit_hit = true;
		dlist_add(&t->spare, x);
		goto count;
	}
	x->b.dev_va = x->d.dev_va;
	x->b.cpu = x->d.cpu;
	x->b.size = x->d.size;
	dlist_add(&t->live, x);
	*out = &x->b;
count:
	dtier_count_regions(pool, t);
unlock:
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* The block is RECYCLED: its memory back to the engine (tier lock held). */
static void dyn_put(struct dtier *t, struct dblock *x)
{
	md_dynpool_free(t->dp, &x->d);
	memset(&x->d, 0, sizeof(x->d));
	dlist_del(&t->live, x);
	dlist_add(&t->spare, x);
}

static void dyn_free(struct md_pool *pool, struct md_pool_block *b)
{
	struct dtier *t = pool->dyn;

	pthread_mutex_lock(&t->lock);
	dyn_put(t, (struct dblock *)b);
	pthread_mutex_unlock(&t->lock);
}

static int dyn_walk(struct md_pool *pool, blk_fn fn, void *arg)
{
	struct dtier *t = pool->dyn;
	struct blk_rec rec;
	struct dblock *x;
	int err = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (x = t->live; x && !err; x = x->next)
		if (blk_read(&x->b, &rec))
			err = fn(arg, &rec);
	pthread_mutex_unlock(&t->lock);
	return err;
}

static void dyn_clean(struct md_pool *pool, bool recycle,
		      struct md_cleaner_report *rep)
{
	struct dtier *t = pool->dyn;
	struct tc_cell *cell = NULL;
	struct md_dynpool_stats before;
	struct dblock *x, *next;
	bool locked = false;

	if (!t)
		return;
	if (recycle)
		cell = pool_cell_get(pool, &locked);
	pthread_mutex_lock(&t->lock);
	for (x = t->live; recycle && x; x = next) {
		next = x->next;
		if (pool_recycle_counted(pool, cell, MD_TIER_DYNAMIC, &x->b,
					 rep))
			dyn_put(t, x);
	}
	before = t->last;
	md_dynpool_trim(t->dp);
	dtier_count_regions(pool, t);
	if (rep) {
		rep->regions_released += t->last.region_frees -
					 before.region_frees;
		rep->region_bytes_released += t->last.region_frees >
					      before.region_frees ?
			before.reserved_bytes - t->last.reserved_bytes : 0;
	}
	pthread_mutex_unlock(&t->lock);
	if (recycle)
		pool_cell_put(pool, locked);
}

static uint64_t dyn_largest_free(struct md_pool *pool)
{
	struct md_dynpool_stats st;

	if (!pool->dyn)
		return 0;
	md_dynpool_stats(((struct dtier *)pool->dyn)->dp, &st);
	return st.largest_free;
}

static void dyn_destroy(struct md_pool *pool)
{
	struct dtier *t = pool->dyn;
	struct dblock *x;

	if (!t)
		return;
	md_dynpool_destroy(t->dp);
	while ((x = t->live)) {
		dlist_del(&t->live, x);
		free(x);
	}
	while ((x = t->spare)) {
		dlist_del(&t->spare, x);
		free(x);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
	pool->dyn = NULL;
}

const struct pool_tier_ops pool_dyn_ops = {
	.alloc = dyn_alloc,
	.free = dyn_free,
	.walk = dyn_walk,
	.clean = dyn_clean,
	.largest_free = dyn_largest_free,
	.destroy = dyn_destroy,
};
