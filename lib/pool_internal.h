/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tiered pools (include/metadef/pool.h): what the pool's files share.
 * lib/runtime.md describes the design.
 *
 *   pool.c        the API's entry points, creation, the reuse transitions,
 *                 the slab tier (pool_slab_ops) and its thread caches'
 *                 bins
 *   pool_xtier.c  the buddy and large tiers (pool_buddy_ops,
 *                 pool_large_ops)
 *   pool_stats.c  stats, OOM reports, snapshots, the cleaner: through
 *                 pool->tiers[] (struct pool_tier_ops), never a tier's
 *                 own functions
 *   pool_core.c   what they share: the list of pools, names, regions, the
 *                 stats cells, the thread-cache registry
 *   pool_buddy.c  the binary buddy both the slab regions and the buddy
 *                 tier use
 *   pool_dyn.c    the dynamic tier (MD_POOL_DYNAMIC): dynpool.c's engine
 *                 behind the same table
 *   pool_summary.c md_pool_summary(): md_pool_stats() and the walks
 *
 * Calls go one way: pool.c -> pool_stats.c, pool_xtier.c -> pool_core.c,
 * pool_buddy.c; pool_core.c and pool_buddy.c call none of the others (a
 * thread's cached blocks go back through pool->tiers[]).
 */
#ifndef METADEF_POOL_INTERNAL_H
#define METADEF_POOL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <metadef/pool.h>

#include "reuse_word.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define POOL_INLINE	inline __attribute__((always_inline))
#define TLS_IE		__attribute__((tls_model("initial-exec")))
/* Thread-local slab figures are published past this many bytes. */
#define PUBLISH_BYTES	(1ll << 20)

#define RLD(x)		atomic_load_explicit(&(x), memory_order_relaxed)
#define RST(x, v)	atomic_store_explicit(&(x), (v), memory_order_relaxed)
/* Single-writer counters: a plain load and store, no locked instruction. */
#define RADD(x, v)	RST(x, RLD(x) + (v))

/* ------------------------------------------------------------ buddy */

#define MB_ORDERS	48

/*
 * A binary buddy over [0, 2^order) units, all of its metadata in host
 * memory: bit i of bits[k] set means the block of order k starting at unit
 * i << k is free. No locks inside.
 */
struct mbuddy {
	unsigned int order;
	uint64_t free_units;
	uint64_t nfree[MB_ORDERS];
	uint64_t *bits[MB_ORDERS];
	uint64_t *mem;
};

int mbuddy_init(struct mbuddy *b, unsigned int order);
void mbuddy_fini(struct mbuddy *b);
/*
 * mbuddy_alloc() - @units units at an offset aligned to the next power of
 * two of @units; the tail of that power of two is given back at once.
 * Return: the offset in units, or -1 if nothing fits.
 */
int64_t mbuddy_alloc(struct mbuddy *b, uint64_t units);
/* mbuddy_free() - give back what mbuddy_alloc(@units) returned at @off. */
void mbuddy_free(struct mbuddy *b, uint64_t off, uint64_t units);
/* mbuddy_largest() - units of the largest free block (0 if none). */
uint64_t mbuddy_largest(const struct mbuddy *b);

/* ------------------------------------------------------------ blocks */

/*
 * The host-side descriptor of one block: what md_alloc() and md_free()
 * touch, in one 64-byte cache line (slab descriptors sit in arrays aligned
 * to 64 bytes). The word is 0 until the descriptor's first life (never
 * handed out). dev_va, cpu and size change only while the block is
 * RECYCLED and off every free list (under its tier's lock); requested and
 * the tags (struct blk_tags, out of the line: see blk_tags()) are written
 * before the transition to ALLOCATED that publishes them, and read by
 * snapshots seqlock-style (word, fields, word again). pool, cls and tier
 * never change; @tagged is read and written only by the thread handing
 * the block out: 0 means both tags are NULL, so a hand-out without tags
 * need not write them again.
 */
struct md_pool_block {
	struct md_block_sync sync;
	uint64_t dev_va;
	char *cpu;
	uint64_t size;
	_Atomic uint64_t requested;
	struct md_pool *pool;
	void *owner;		/* struct slab, struct bregion or NULL */
	_Atomic uint32_t thread;	/* who may free it plainly: BLK_* */
	uint8_t cls;		/* slab size class */
	uint8_t tier;
	uint8_t tagged;
	_Atomic uint8_t busy;	/* its owner is in md_free's plain step */
};

_Static_assert(sizeof(struct md_pool_block) == 64,
	       "a descriptor is one cache line");

/*
 * md_pool_block.thread: which thread, if any, frees the block with a plain
 * load and store instead of a compare-exchange (lib/runtime.md, "The
 * owner's free"). 2 and up: the id of the thread cache (struct tcache.tid)
 * that handed the block out, its owner; only that thread frees it so, and
 * any other thread's write to the word first takes that right away for
 * good (pool_unown()).
 */
#define BLK_NOBODY	0u	/* every write a compare-exchange */
#define BLK_SHARED	1u	/* taken from its owner: so for good */
#define BLK_FIRST_TID	2u

/* A block's owner tag and allocation site (md_alloc_opts). */
struct blk_tags {
	_Atomic(const char *) tag;
	_Atomic(const char *) site;
};

/* One live block as snapshots and the cleaner see it. */
struct blk_rec {
	uint64_t dev_va, size, requested;
	const char *tag, *site;
	uint32_t tier, state, holders, generation;
};

typedef int (*blk_fn)(void *arg, const struct blk_rec *r);

/* ------------------------------------------------------------ slab tier */

#define SLAB_MIN	(64ull << 10)	/* smallest slab, slab-region granule */
#define SLAB_UNIT_MIN	64ull		/* smallest class */
#define MAX_CLASSES	96
_Static_assert(MAX_CLASSES <= 256, "md_pool_block.cls is a byte");
#define TCACHE_MAX	(64ull << 10)	/* classes above are not cached */
#define TCACHE_BYTES	(256ull << 10)	/* bytes a full bin holds at most */

struct sregion {
	struct md_region r;
	struct mbuddy mb;	/* granules of SLAB_MIN */
	uint32_t slabs;		/* carved */
	struct sregion *next;
};

struct slab_class;

struct slab {
	struct slab_class *sc;
	struct sregion *region;	/* NULL: detached, on the spare list */
	uint64_t off;		/* in the region */
	uint32_t nfree;		/* on @stack */
	uint32_t index;		/* in sc->all */
	struct slab *pnext, *pprev;	/* partial list; pnext: spare list */
	bool partial;
	uint32_t *stack;	/* free slot indices (central) */
	struct md_pool_block *blocks;	/* aligned to 64 bytes */
	struct blk_tags *tags;		/* by slot */
};

struct slab_class {
	pthread_mutex_t lock;
	uint64_t size;
	uint64_t slab_size;
	uint32_t nslots;
	uint32_t tc_cap;	/* thread cache bin capacity, 0: none */
	struct slab *partial;	/* slabs with free slots */
	struct slab **all;	/* slabs with device memory */
	uint32_t nall, all_cap;
	struct slab *spare;	/* detached slabs: descriptors kept */
};

/* ------------------------------------------------------------ buddy, large */

/* A descriptor of the buddy or large tier, with its place. */
struct xblock {
	struct md_pool_block b;		/* first: blk_tags() casts */
	struct blk_tags tags;
	struct xblock *next, *prev;	/* live, cached or spare list */
	uint64_t off, units;		/* buddy: in the region, in granules */
	struct md_region r;		/* large: its region */
};

struct bregion {
	struct md_region r;
	struct mbuddy mb;
	uint32_t blocks;
	struct bregion *next;
};

struct xtier {
	pthread_mutex_t lock;
	struct xblock *live;	/* handed out, not recycled */
	struct xblock *cached;	/* large: recycled, region kept */
	struct xblock *spare;	/* descriptors without memory */
	struct bregion *regions;	/* buddy */
};

/* @b's tags: a slab's array by slot, or the buddy or large descriptor's. */
static inline struct blk_tags *blk_tags(const struct md_pool_block *b)
{
	if (b->tier == MD_TIER_SLAB) {
		struct slab *s = b->owner;

		return &s->tags[b - s->blocks];
	}
	return &((struct xblock *)b)->tags;
}

/*
 * Read @b consistently (the caller holds its tier's lock, so dev_va and
 * size are stable). Return: false if it is not live (never used or
 * RECYCLED) or was recycled while being read.
 */
static inline bool blk_read(const struct md_pool_block *b, struct blk_rec *r)
{
	uint64_t w = atomic_load_explicit(w_word(&b->sync),
					  memory_order_acquire);
	uint64_t w2;

	if (!w || w_state(w) == MD_BLOCK_RECYCLED)
		return false;
	r->requested = RLD(((struct md_pool_block *)b)->requested);
	r->tag = RLD(blk_tags(b)->tag);
	r->site = RLD(blk_tags(b)->site);
	atomic_thread_fence(memory_order_acquire);
	w2 = atomic_load_explicit(w_word(&b->sync), memory_order_relaxed);
	if (w_gen(w2) != w_gen(w) || w_state(w2) == MD_BLOCK_RECYCLED)
		return false;
	r->dev_va = b->dev_va;
	r->size = b->size;
	r->tier = b->tier;
	r->state = w_state(w2);
	r->holders = w_holders(w2);
	r->generation = w_gen(w2);
	return true;
}

/* ------------------------------------------------------------ stats */

/*
 * Counters one thread writes (relaxed atomics: md_pool_stats() reads them
 * from other threads). The slab tier's bytes and blocks since the thread
 * last published them to the pool's current/peak figures (cell_pend_b(),
 * cell_pend_c()) are not counted apart: they are the live figures less
 * base_b and base_c, what was live at the last publication. pmax_* are
 * their running maximum: peaks come out exact when one thread allocates.
 */
struct tc_cell {
	_Atomic uint64_t nalloc[MD_TIER_COUNT], nfree[MD_TIER_COUNT];
	_Atomic uint64_t balloc[MD_TIER_COUNT], bfree[MD_TIER_COUNT];
	_Atomic uint64_t ralloc[MD_TIER_COUNT], rfree[MD_TIER_COUNT];
	_Atomic int64_t base_b, base_c, pmax_b, pmax_c;
};

static inline int64_t cell_pend_b(const struct tc_cell *c)
{
	struct tc_cell *m = (struct tc_cell *)c;

	return (int64_t)(RLD(m->balloc[MD_TIER_SLAB]) -
			 RLD(m->bfree[MD_TIER_SLAB])) - RLD(m->base_b);
}

static inline int64_t cell_pend_c(const struct tc_cell *c)
{
	struct tc_cell *m = (struct tc_cell *)c;

	return (int64_t)(RLD(m->nalloc[MD_TIER_SLAB]) -
			 RLD(m->nfree[MD_TIER_SLAB])) - RLD(m->base_c);
}

struct tc_bin {
	_Atomic uint32_t n;
	uint32_t cap;
	struct md_pool_block **items;
};

/* One thread's cache for one pool. */
struct tcache {
	uint64_t pool_id;
	_Atomic(struct md_pool *) pool;	/* NULL: the pool is gone */
	uint32_t epoch;
	uint32_t tid;		/* >= BLK_FIRST_TID, unique among live caches */
	uint32_t stamp;		/* md_pool_block.thread of what it hands out */
	struct tcache *pnext, *pprev;	/* the pool's list (registry lock) */
	struct tcache *tnext;		/* the thread's list (owner only) */
	struct tc_cell cell;
	struct tc_bin bins[];
};

/* Scopes of the published current/peak figures: the tiers, then total. */
#define SCOPES		(MD_TIER_COUNT + 1)
#define SCOPE_TOTAL	MD_TIER_COUNT

struct md_pool {
	/* read-mostly: the fast path */
	uint64_t id;
	_Atomic uint32_t epoch;		/* bumped to make threads flush */
	uint32_t nclasses;
	uint32_t lg_unit;
	uint32_t flags;
	uint64_t unit;
	uint64_t align;
	uint64_t page;
	uint64_t granule;		/* buddy tier */
	uint64_t slab_region, buddy_region;
	uint64_t limit;
	struct md_device *dev;
	bool owner_free;		/* owners free plainly (pool_asym_init()) */
	md_pool_handler_t handler;
	void *handler_arg;
	struct md_pool *next;		/* every pool (pool list lock) */

	_Atomic int64_t cur_b[SCOPES], peak_b[SCOPES];
	_Atomic int64_t cur_c[SCOPES], peak_c[SCOPES];
	_Atomic uint64_t oom_count[MD_TIER_COUNT];
	_Atomic uint64_t violation[MD_POOL_VIOLATION_KINDS];

	struct tcache *tcaches;		/* registry lock */
	struct tc_cell retired;		/* exited threads (registry lock) */
	pthread_mutex_t orphan_lock;	/* a thread without a cache */
	struct tc_cell orphan;

	pthread_mutex_t region_lock;	/* the counters below */
	uint64_t region_total;
	uint64_t region_total_peak;
	uint64_t region_count[MD_TIER_COUNT], region_bytes[MD_TIER_COUNT];
	uint64_t region_peak[MD_TIER_COUNT];
	uint64_t region_allocs[MD_TIER_COUNT], region_frees[MD_TIER_COUNT];

	pthread_mutex_t sr_lock;	/* slab regions */
	struct sregion *sregions;

	struct xtier buddy, large;

	pthread_mutex_t oom_lock;
	bool has_oom;
	struct md_oom_info last_oom;

	const struct pool_tier_ops *tiers[MD_TIER_COUNT];
	struct dtier *dyn;		/* MD_POOL_DYNAMIC, else NULL */

	struct slab_class cls[];
};

/*
 * One tier behind one interface. The API (pool.c) hands blocks out and
 * recycles them (the reuse protocol, the counters) the same way for every
 * tier and asks the tier only for memory; stats, snapshots and the cleaner
 * (pool_stats.c) go through pool->tiers[] and know nothing of any tier.
 * The slab tier's thread caches sit in front of its alloc and free: the
 * fast path (pool.c) pops and pushes them directly, and falls back to the
 * table without a cache.
 */
struct pool_tier_ops {
	/*
	 * A descriptor with memory for @size bytes, RECYCLED or never used,
	 * off every free list; the caller hands it out.
	 */
	int (*alloc)(struct md_pool *pool, uint64_t size,
		     struct md_pool_block **out);
	/* A descriptor the caller just recycled: back on a free list. */
	void (*free)(struct md_pool *pool, struct md_pool_block *b);
	/* @fn on every live block (ALLOCATED, ACTIVE, RELEASED). */
	int (*walk)(struct md_pool *pool, blk_fn fn, void *arg);
	/*
	 * What the tier caches goes back to the device: free memory, empty
	 * regions, this thread's cached blocks; with @recycle, first
	 * RELEASED blocks nobody freed (RECYCLED, counted as freed).
	 */
	void (*clean)(struct md_pool *pool, bool recycle,
		      struct md_cleaner_report *rep);
	/* The largest free extent (lib/runtime.md, Stats). */
	uint64_t (*largest_free)(struct md_pool *pool);
	/* Every region back to the device, every descriptor freed. */
	void (*destroy)(struct md_pool *pool);
	/* A thread's cached blocks back to the tier (NULL: no cache). */
	void (*cache_flush)(struct md_pool *pool, struct tcache *tc);
};

extern const struct pool_tier_ops pool_slab_ops, pool_buddy_ops,
	pool_large_ops, pool_dyn_ops;
/* pool_dyn.c: the dynamic tier's engine (MD_POOL_DYNAMIC). 0 or -ENOMEM. */
int pool_dyn_init(struct md_pool *pool);

/* The tier a request of @size goes to in @pool. */
static inline enum md_pool_tier pool_tier_for(const struct md_pool *pool,
					      uint64_t size)
{
	if (size >= MD_POOL_SLAB_LIMIT && (pool->flags & MD_POOL_DYNAMIC))
		return MD_TIER_DYNAMIC;
	return md_pool_tier_of(size);
}

/* The thread caches' registry and the list of pools. */
extern pthread_mutex_t md_pool_reg_lock;
extern pthread_mutex_t md_pool_list_lock;
extern struct md_pool *md_pool_list;
/* Set when the pool's limit (not the backend) refused a region. */
extern __thread bool md_pool_limit_hit;

/* pool_core.c */
int pool_region_get(struct md_pool *pool, enum md_pool_tier tier,
		    uint64_t want, uint64_t min, struct md_region *r);
void pool_region_put(struct md_pool *pool, enum md_pool_tier tier,
		     struct md_region *r);
struct tc_cell *pool_cell_get(struct md_pool *pool, bool *locked);
void pool_cell_put(struct md_pool *pool, bool locked);
void pool_count_free(struct md_pool *pool, struct tc_cell *c,
		     enum md_pool_tier tier, uint64_t size, uint64_t req);
/* RELEASED -> RECYCLED for the cleaner: true if this call did it. */
bool pool_recycle_released(struct md_pool_block *b);
/*
 * The same, and when it did, @b's bytes counted free (cell @c, @tier) and
 * in @rep (may be NULL): a tier's cleaner then takes the block back.
 */
bool pool_recycle_counted(struct md_pool *pool, struct tc_cell *c,
			  enum md_pool_tier tier, struct md_pool_block *b,
			  struct md_cleaner_report *rep);
void pool_sum_cells(struct md_pool *pool, struct tc_cell *sum,
		    int64_t *peak_b, int64_t *peak_c);
void pool_publish(struct md_pool *pool, enum md_pool_tier tier, int64_t db,
		  int64_t maxb, int64_t dc, int64_t maxc);
void pool_publish_pending(struct md_pool *pool, struct tc_cell *c);
struct tcache *pool_tcache_slow(struct md_pool *pool);
void pool_tcache_flush(struct md_pool *pool, struct tcache *tc);
void pool_caches_detach(struct md_pool *pool);
bool pool_asym_init(void);
void pool_asym_barrier(void);
void pool_unown(struct md_pool_block *b);
bool pool_take_from_owner(struct md_pool *pool, struct md_pool_block *b,
			  uint64_t *w);
/* This thread's cache last used (pool_core.c). */
extern __thread struct tcache *pool_tls_last TLS_IE;

static inline bool cas_w(struct md_pool_block *b, uint64_t *w, uint64_t nw)
{
	return atomic_compare_exchange_weak_explicit(w_word(&b->sync), w, nw,
						     memory_order_acq_rel,
						     memory_order_acquire);
}

/*
 * This thread's cache (and stats cell) for @pool: one thread-local pointer
 * compared with the pool's id; a moved epoch (the cleaner, an OOM) makes
 * it give its cached blocks back first. NULL without memory for one.
 */
static POOL_INLINE struct tcache *tcache_get(struct md_pool *pool)
{
	struct tcache *tc = pool_tls_last;

	if (likely(tc && tc->pool_id == pool->id)) {
		uint32_t e = atomic_load_explicit(&pool->epoch,
						  memory_order_relaxed);

		if (unlikely(tc->epoch != e)) {
			pool_tcache_flush(pool, tc);
			tc->epoch = e;
		}
		return tc;
	}
	return pool_tcache_slow(pool);
}

/*
 * A thread's own counters: relaxed loads and stores, no locked
 * instruction; three stores a call in the slab tier.
 */
static POOL_INLINE void count_alloc(struct md_pool *pool, struct tc_cell *c,
				    enum md_pool_tier tier, uint64_t size,
				    uint64_t req)
{
	RADD(c->nalloc[tier], 1);
	RADD(c->balloc[tier], size);
	RADD(c->ralloc[tier], req);
	if (likely(tier == MD_TIER_SLAB)) {
		int64_t pb = cell_pend_b(c);
		int64_t pc = cell_pend_c(c);

		if (pc > RLD(c->pmax_c))
			RST(c->pmax_c, pc);
		if (pb > RLD(c->pmax_b)) {
			RST(c->pmax_b, pb);
			if (unlikely(pb > PUBLISH_BYTES))
				pool_publish_pending(pool, c);
		}
		return;
	}
	pool_publish_pending(pool, c);
	pool_publish(pool, tier, (int64_t)size, (int64_t)size, 1, 1);
}

/*
 * The slab tier's counts without a call, for the fast paths: true when
 * the pending figures are due to be published (pool_publish_pending()).
 */
static POOL_INLINE bool count_slab_alloc(struct tc_cell *c, uint64_t size,
					 uint64_t req)
{
	uint64_t n = RLD(c->nalloc[MD_TIER_SLAB]) + 1;
	uint64_t b = RLD(c->balloc[MD_TIER_SLAB]) + size;
	int64_t pb, pc;

	RST(c->nalloc[MD_TIER_SLAB], n);
	RST(c->balloc[MD_TIER_SLAB], b);
	RADD(c->ralloc[MD_TIER_SLAB], req);
	/* cell_pend_b() and _c() from the values just stored. */
	pb = (int64_t)(b - RLD(c->bfree[MD_TIER_SLAB])) - RLD(c->base_b);
	pc = (int64_t)(n - RLD(c->nfree[MD_TIER_SLAB])) - RLD(c->base_c);
	if (pc > RLD(c->pmax_c))
		RST(c->pmax_c, pc);
	if (pb > RLD(c->pmax_b)) {
		RST(c->pmax_b, pb);
		return pb > PUBLISH_BYTES;
	}
	return false;
}

static POOL_INLINE bool count_slab_free(struct tc_cell *c, uint64_t size,
					uint64_t req)
{
	uint64_t b = RLD(c->bfree[MD_TIER_SLAB]) + size;

	RADD(c->nfree[MD_TIER_SLAB], 1);
	RST(c->bfree[MD_TIER_SLAB], b);
	RADD(c->rfree[MD_TIER_SLAB], req);
	return (int64_t)(RLD(c->balloc[MD_TIER_SLAB]) - b) -
	       RLD(c->base_b) < -PUBLISH_BYTES;
}

static POOL_INLINE void count_free(struct md_pool *pool, struct tc_cell *c,
				   enum md_pool_tier tier, uint64_t size,
				   uint64_t req)
{
	RADD(c->nfree[tier], 1);
	RADD(c->bfree[tier], size);
	RADD(c->rfree[tier], req);
	if (likely(tier == MD_TIER_SLAB)) {
		if (unlikely(cell_pend_b(c) < -PUBLISH_BYTES))
			pool_publish_pending(pool, c);
		return;
	}
	pool_publish_pending(pool, c);
	pool_publish(pool, tier, -(int64_t)size, 0, -1, 0);
}


/* pool.c: pool_slab_ops */

/* pool_xtier.c: pool_buddy_ops, pool_large_ops */

/* pool_stats.c */
void pool_oom_fill(struct md_pool *pool, enum md_pool_tier tier,
		   uint64_t size, uint64_t block, int err, bool limit_hit,
		   struct md_oom_info *oom);
/* Cached memory back to the device (no recycling of user blocks). */
void pool_reclaim(struct md_pool *pool);
/* A text of a pool (a snapshot, the summary) into a caller's buffer. */
typedef int (*pool_print_fn)(struct md_pool *pool, FILE *f,
			     unsigned int flags);
long pool_print_buf(struct md_pool *pool, pool_print_fn print,
		    unsigned int flags, char *buf, size_t len);

#endif /* METADEF_POOL_INTERNAL_H */
