// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tiered pools: what every tier and the stats share (pool_internal.h): the
 * list of pools, the names, region accounting, the stats cells and the
 * thread-cache registry (each thread's cache of each pool, its cell, its
 * exit). Called
 * by pool.c, pool_xtier.c and pool_stats.c; calls none of them (a thread's
 * cached blocks go back through the tiers' tables, pool->tiers[]).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <metadef/pool.h>

#include "internal.h"
#include "pool_internal.h"

pthread_mutex_t md_pool_reg_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t md_pool_list_lock = PTHREAD_MUTEX_INITIALIZER;
struct md_pool *md_pool_list;
__thread bool md_pool_limit_hit;

static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static pthread_once_t asym_once = PTHREAD_ONCE_INIT;
static bool asym_ok;
/* Ids of thread caches (struct tcache.tid), under the registry lock. */
static uint32_t tid_next = BLK_FIRST_TID;
static uint32_t *tid_free;
static size_t tid_nfree, tid_cap;
static pthread_key_t tc_key;
__thread struct tcache *pool_tls_last TLS_IE;
static __thread struct tcache *tls_list TLS_IE;
static __thread bool tls_key_set TLS_IE;

/* ------------------------------------------------------------ names */

MD_API const char *md_pool_tier_name(enum md_pool_tier tier)
{
	switch (tier) {
	case MD_TIER_SLAB:
		return "slab";
	case MD_TIER_BUDDY:
		return "buddy";
	case MD_TIER_LARGE:
		return "large";
	case MD_TIER_DYNAMIC:
		return "dynamic";
	default:
		return "invalid";
	}
}

MD_API const char *md_pool_violation_name(enum md_pool_violation_kind kind)
{
	static const char *const names[] = {
		[MD_POOL_DOUBLE_FREE] = "double free",
		[MD_POOL_FREE_HELD] = "free while held",
		[MD_POOL_USE_AFTER_FREE] = "use after free",
		[MD_POOL_BAD_TRANSITION] = "illegal transition",
		[MD_POOL_BAD_HANDLE] = "bad handle",
	};

	if ((unsigned int)kind < MD_POOL_VIOLATION_KINDS)
		return names[kind];
	return "invalid";
}

MD_API enum md_pool_tier md_pool_tier_of(uint64_t size)
{
	if (size < MD_POOL_SLAB_LIMIT)
		return MD_TIER_SLAB;
	if (size <= MD_POOL_BUDDY_LIMIT)
		return MD_TIER_BUDDY;
	return MD_TIER_LARGE;
}

/* ------------------------------------------------------------ owners' frees */

/*
 * A block's owner frees it with a plain load and store, with no fence
 * (pool.c, md_free()); any other thread that writes the word first runs
 * pool_unown(): the two sides of a Dekker handshake, the owner's without
 * a fence, the other's with one on every running thread of the process
 * (membarrier(2), private expedited: an IPI to each CPU running one of
 * them; a thread not running has passed a context switch, a barrier too).
 * lib/runtime.md ("The owner's free") has the argument.
 */
static long sys_membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

static void asym_probe(void)
{
	long cmds = sys_membarrier(MEMBARRIER_CMD_QUERY);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return;
	asym_ok = !sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

/*
 * Whether owners may free plainly in this process (probed once): not when
 * the kernel lacks membarrier's private expedited command or a filter
 * (seccomp) refuses it.
 */
bool pool_asym_init(void)
{
	pthread_once(&asym_once, asym_probe);
	return asym_ok;
}

/* A full barrier on every thread of the process that is running. */
void pool_asym_barrier(void)
{
	if (!sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	/* A process whose registration is gone (a child of fork()). */
	if (errno == EPERM &&
	    !sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	    !sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	/* Slower, needs no registration: every thread of every process. */
	if (!sys_membarrier(MEMBARRIER_CMD_GLOBAL))
		return;
	/* An owner may be mid-free: going on could hand a block out twice. */
	fprintf(stderr, "libmetadef: membarrier failed after it worked: %s\n",
		strerror(errno));
	abort();
}

/*
 * Before a write to @b's word by a thread that is not its owner (its
 * thread is a cache id, not this thread's): take the owner's right to
 * free plainly, for good (BLK_SHARED: hand_out() keeps it), make that
 * visible to every thread and their earlier stores to this one, then wait
 * out an owner's free that read the old owner. The caller loads the word
 * again after it. At most once per descriptor, unless its owner recycled
 * the block meanwhile (then the caller's handle is stale).
 */
void __attribute__((noinline)) pool_unown(struct md_pool_block *b)
{
	unsigned int spins = 0;

	atomic_store_explicit(&b->thread, BLK_SHARED, memory_order_relaxed);
	pool_asym_barrier();
	while (atomic_load_explicit(&b->busy, memory_order_acquire)) {
		/* The owner is preempted in its few instructions. */
		if (++spins > 128)
			sched_yield();
#if defined(__x86_64__) || defined(__i386__)
		else
			__builtin_ia32_pause();
#endif
	}
}

/*
 * Whether a write to @b's word by this thread must first take the block
 * from its owner: its owner is a cache, and not this thread's cache of
 * @pool (which may be stale: a moved epoch does not change the owner).
 */
static bool owned_elsewhere(struct md_pool *pool, struct md_pool_block *b)
{
	uint32_t t = atomic_load_explicit(&b->thread, memory_order_relaxed);
	struct tcache *tc;

	if (t < BLK_FIRST_TID)
		return false;
	for (tc = tls_list; tc; tc = tc->tnext)
		if (tc->pool_id == pool->id)
			return tc->tid != t;
	return true;
}

/*
 * Before this thread writes @b's word, read as *@w: when another thread
 * owns the block (it frees it without a compare-exchange, md_free()),
 * take it from its owner (pool_unown()), read the word again into *@w and
 * return true: the caller checks its handle against the new word. False:
 * nothing to take, *@w stands.
 */
bool pool_take_from_owner(struct md_pool *pool, struct md_pool_block *b,
			  uint64_t *w)
{
	if (likely(!owned_elsewhere(pool, b)))
		return false;
	pool_unown(b);
	*w = atomic_load_explicit(w_word(&b->sync), memory_order_acquire);
	return true;
}

/* A new cache's id (registry lock held): the last freed, else new. */
static uint32_t tid_get(void)
{
	if (tid_nfree)
		return tid_free[--tid_nfree];
	return tid_next++;
}

/*
 * A freed cache's id (registry lock held). Its thread has exited or its
 * pool is gone, so no free of its is running: the next cache may own its
 * blocks. Without memory for the list the id is never reused.
 */
static void tid_put(uint32_t tid)
{
	uint32_t *v = md_grow(tid_free, tid_nfree, &tid_cap,
			      sizeof(*tid_free), 64);

	if (!v)
		return;
	tid_free = v;
	tid_free[tid_nfree++] = tid;
}

/* ------------------------------------------------------------ transitions */

bool pool_recycle_released(struct md_pool_block *b)
{
	uint64_t w = atomic_load_explicit(w_word(&b->sync),
					  memory_order_acquire);
	uint64_t nw;

	while ((nw = w_recycle(w)))
		if (cas_w(b, &w, nw))
			return true;
	return false;
}

bool pool_recycle_counted(struct md_pool *pool, struct tc_cell *c,
			  enum md_pool_tier tier, struct md_pool_block *b,
			  struct md_cleaner_report *rep)
{
	if (!pool_recycle_released(b))
		return false;
	pool_count_free(pool, c, tier, b->size, RLD(b->requested));
	if (rep) {
		rep->recycled_blocks++;
		rep->recycled_bytes += b->size;
	}
	return true;
}

/* ------------------------------------------------------------ stats cells */

static void max64(_Atomic int64_t *p, int64_t v)
{
	int64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while (cur < v &&
	       !atomic_compare_exchange_weak_explicit(p, &cur, v,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* Add a change to the pool's current figures of @tier and the total. */
void pool_publish(struct md_pool *pool, enum md_pool_tier tier, int64_t db,
		  int64_t maxb, int64_t dc, int64_t maxc)
{
	int scope[2] = { tier, SCOPE_TOTAL };
	int i;

	for (i = 0; i < 2; i++) {
		int s = scope[i];
		int64_t b = atomic_fetch_add_explicit(&pool->cur_b[s], db,
						      memory_order_relaxed);
		int64_t c = atomic_fetch_add_explicit(&pool->cur_c[s], dc,
						      memory_order_relaxed);

		max64(&pool->peak_b[s], b + maxb);
		max64(&pool->peak_c[s], c + maxc);
	}
}

void pool_publish_pending(struct md_pool *pool, struct tc_cell *c)
{
	int64_t pb = cell_pend_b(c), mb = RLD(c->pmax_b);
	int64_t pc = cell_pend_c(c), mc = RLD(c->pmax_c);

	if (!pb && !mb && !pc && !mc)
		return;
	pool_publish(pool, MD_TIER_SLAB, pb, mb, pc, mc);
	RADD(c->base_b, pb);
	RST(c->pmax_b, 0);
	RADD(c->base_c, pc);
	RST(c->pmax_c, 0);
}

void pool_count_free(struct md_pool *pool, struct tc_cell *c,
		     enum md_pool_tier tier, uint64_t size, uint64_t req)
{
	count_free(pool, c, tier, size, req);
}

static void cell_add(struct tc_cell *to, struct tc_cell *from)
{
	int t;

	for (t = 0; t < MD_TIER_COUNT; t++) {
		RADD(to->nalloc[t], RLD(from->nalloc[t]));
		RADD(to->nfree[t], RLD(from->nfree[t]));
		RADD(to->balloc[t], RLD(from->balloc[t]));
		RADD(to->bfree[t], RLD(from->bfree[t]));
		RADD(to->ralloc[t], RLD(from->ralloc[t]));
		RADD(to->rfree[t], RLD(from->rfree[t]));
	}
	RADD(to->base_b, RLD(from->base_b));
	RADD(to->base_c, RLD(from->base_c));
}

static void peak_with(const struct tc_cell *c, int64_t cb, int64_t cc,
		      int64_t pend_b, int64_t pend_c, int64_t *pb, int64_t *pc)
{
	int64_t b = cb + pend_b - cell_pend_b(c) + RLD(c->pmax_b);
	int64_t n = cc + pend_c - cell_pend_c(c) + RLD(c->pmax_c);

	*pb = b > *pb ? b : *pb;
	*pc = n > *pc ? n : *pc;
}

/*
 * The sum of every cell of @pool, and the peaks. The slab and total peaks
 * include what threads have not published yet: for each thread, the
 * published figure, everybody's pending change but its own, and its own
 * running maximum (exact when one thread allocates).
 */
void pool_sum_cells(struct md_pool *pool, struct tc_cell *sum,
		    int64_t *peak_b, int64_t *peak_c)
{
	struct tc_cell *fixed[2] = { &pool->retired, &pool->orphan };
	int64_t pend_b = 0, pend_c = 0;
	struct tcache *tc;
	int i, k;

	memset(sum, 0, sizeof(*sum));
	pthread_mutex_lock(&md_pool_reg_lock);
	pthread_mutex_lock(&pool->orphan_lock);
	for (i = 0; i < 2; i++) {
		cell_add(sum, fixed[i]);
		pend_b += cell_pend_b(fixed[i]);
		pend_c += cell_pend_c(fixed[i]);
	}
	for (tc = pool->tcaches; tc; tc = tc->pnext) {
		cell_add(sum, &tc->cell);
		pend_b += cell_pend_b(&tc->cell);
		pend_c += cell_pend_c(&tc->cell);
	}
	for (i = 0; i < SCOPES; i++) {
		int64_t cb = atomic_load(&pool->cur_b[i]);
		int64_t cc = atomic_load(&pool->cur_c[i]);

		peak_b[i] = atomic_load(&pool->peak_b[i]);
		peak_c[i] = atomic_load(&pool->peak_c[i]);
		if (i != MD_TIER_SLAB && i != SCOPE_TOTAL)
			continue;
		for (k = 0; k < 2; k++)
			peak_with(fixed[k], cb, cc, pend_b, pend_c,
				  &peak_b[i], &peak_c[i]);
		for (tc = pool->tcaches; tc; tc = tc->pnext)
			peak_with(&tc->cell, cb, cc, pend_b, pend_c,
				  &peak_b[i], &peak_c[i]);
	}
	pthread_mutex_unlock(&pool->orphan_lock);
	pthread_mutex_unlock(&md_pool_reg_lock);
}

/* ------------------------------------------------------------ regions */

/*
 * A region of @want bytes for @tier, or, when the limit or the backend
 * refuses for lack of memory, of half as much, down to @min.
 */
int pool_region_get(struct md_pool *pool, enum md_pool_tier tier,
		    uint64_t want, uint64_t min, struct md_region *r)
{
	uint64_t size = want;
	bool reserved;
	int err;

	for (;;) {
		pthread_mutex_lock(&pool->region_lock);
		reserved = !pool->limit ||
			   pool->region_total + size <= pool->limit;
		if (reserved)
			pool->region_total += size;
		pthread_mutex_unlock(&pool->region_lock);

		/* Whose refusal was the last: the report names it. */
		md_pool_limit_hit = !reserved;
		if (reserved)
			err = md_region_alloc(pool->dev, size, pool->align, r);
		else
			err = -ENOMEM;

		if (reserved) {
			pthread_mutex_lock(&pool->region_lock);
			if (err) {
				pool->region_total -= size;
			} else {
				pool->region_total += r->size - size;
				if (pool->region_total > pool->region_total_peak)
					pool->region_total_peak =
						pool->region_total;
				pool->region_count[tier]++;
				pool->region_allocs[tier]++;
				pool->region_bytes[tier] += r->size;
				if (pool->region_bytes[tier] >
				    pool->region_peak[tier])
					pool->region_peak[tier] =
						pool->region_bytes[tier];
			}
			pthread_mutex_unlock(&pool->region_lock);
		}
		if (!err)
			return 0;
		if ((err != -ENOMEM && err != -EDQUOT) || size / 2 < min)
			return err;
		size /= 2;
	}
}

void pool_region_put(struct md_pool *pool, enum md_pool_tier tier,
		     struct md_region *r)
{
	uint64_t size = r->size;

	md_region_free(pool->dev, r);
	pthread_mutex_lock(&pool->region_lock);
	pool->region_total -= size;
	pool->region_count[tier]--;
	pool->region_frees[tier]++;
	pool->region_bytes[tier] -= size;
	pthread_mutex_unlock(&pool->region_lock);
}

/* ------------------------------------------------------------ thread caches */

/* Every tier's blocks in @tc back to the tier (the epoch moved, or exit). */
void __attribute__((noinline))
pool_tcache_flush(struct md_pool *pool, struct tcache *tc)
{
	int t;

	for (t = 0; t < MD_TIER_COUNT; t++)
		if (pool->tiers[t]->cache_flush)
			pool->tiers[t]->cache_flush(pool, tc);
}

/* A thread leaves: its cached blocks and figures go back to the pool. */
static void tc_retire(struct md_pool *pool, struct tcache *tc)
{
	pool_tcache_flush(pool, tc);
	pool_publish_pending(pool, &tc->cell);
	cell_add(&pool->retired, &tc->cell);
	if (tc->pprev)
		tc->pprev->pnext = tc->pnext;
	else
		pool->tcaches = tc->pnext;
	if (tc->pnext)
		tc->pnext->pprev = tc->pprev;
}

static void tc_thread_exit(void *arg)
{
	struct tcache *tc, *next;

	(void)arg;
	pthread_mutex_lock(&md_pool_reg_lock);
	for (tc = tls_list; tc; tc = next) {
		struct md_pool *pool = atomic_load(&tc->pool);

		next = tc->tnext;
		if (pool)
			tc_retire(pool, tc);
		tid_put(tc->tid);
		free(tc);
	}
	tls_list = NULL;
	pool_tls_last = NULL;
	/*
	 * The key's value is NULL now: a cache made later in this thread's
	 * exit (another key's destructor using a pool) must set it again,
	 * or this destructor would not run for that cache.
	 */
	tls_key_set = false;
	pthread_mutex_unlock(&md_pool_reg_lock);
}

static void tc_key_create(void)
{
	pthread_key_create(&tc_key, tc_thread_exit);
}

/* Free this thread's caches of pools that are gone (registry lock held). */
static void tc_prune(void)
{
	struct tcache **pp, *tc;

	for (pp = &tls_list; (tc = *pp); ) {
		if (atomic_load(&tc->pool)) {
			pp = &tc->tnext;
			continue;
		}
		*pp = tc->tnext;
		if (pool_tls_last == tc)
			pool_tls_last = NULL;
		tid_put(tc->tid);
		free(tc);
	}
}

struct tcache *__attribute__((noinline))
pool_tcache_slow(struct md_pool *pool)
{
	struct tcache *tc;
	size_t size, items = 0;
	uint32_t c;

	pthread_once(&tc_once, tc_key_create);
	pthread_mutex_lock(&md_pool_reg_lock);
	tc_prune();
	for (tc = tls_list; tc; tc = tc->tnext)
		if (tc->pool_id == pool->id)
			goto out;

	for (c = 0; c < pool->nclasses; c++)
		items += pool->cls[c].tc_cap;
	size = sizeof(*tc) + pool->nclasses * sizeof(struct tc_bin) +
	       items * sizeof(struct md_pool_block *);
	tc = calloc(1, size);
	if (!tc)
		goto out;
	tc->pool_id = pool->id;
	atomic_init(&tc->pool, pool);
	tc->epoch = atomic_load(&pool->epoch);
	tc->tid = tid_get();
	tc->stamp = pool->owner_free ? tc->tid : BLK_NOBODY;
	items = 0;
	for (c = 0; c < pool->nclasses; c++) {
		tc->bins[c].cap = pool->cls[c].tc_cap;
		tc->bins[c].items = (struct md_pool_block **)
			&tc->bins[pool->nclasses] + items;
		items += pool->cls[c].tc_cap;
	}
	tc->pnext = pool->tcaches;
	if (pool->tcaches)
		pool->tcaches->pprev = tc;
	pool->tcaches = tc;
	tc->tnext = tls_list;
	tls_list = tc;
out:
	pthread_mutex_unlock(&md_pool_reg_lock);
	if (tc) {
		if (!tls_key_set && !pthread_setspecific(tc_key, (void *)1))
			tls_key_set = true;
		pool_tls_last = tc;
	}
	return tc;
}


/*
 * md_pool_destroy(): other threads free their caches of @pool when they
 * next look; this thread's go now.
 */
void pool_caches_detach(struct md_pool *pool)
{
	struct tcache *tc;

	pthread_mutex_lock(&md_pool_reg_lock);
	for (tc = pool->tcaches; tc; tc = tc->pnext)
		atomic_store(&tc->pool, NULL);
	pool->tcaches = NULL;
	tc_prune();
	pthread_mutex_unlock(&md_pool_reg_lock);
}

struct tc_cell *pool_cell_get(struct md_pool *pool, bool *locked)
{
	struct tcache *tc = tcache_get(pool);

	*locked = !tc;
	if (tc)
		return &tc->cell;
	pthread_mutex_lock(&pool->orphan_lock);
	return &pool->orphan;
}

void pool_cell_put(struct md_pool *pool, bool locked)
{
	if (locked)
		pthread_mutex_unlock(&pool->orphan_lock);
}
