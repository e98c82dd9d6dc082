// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the tiered pools under threads. Threads allocating and
 * freeing in every tier at once (each block stamped and checked, so a
 * block handed out twice shows), frees from another thread than the
 * allocating one, racing double frees and free-versus-acquire races (one
 * winner, every loser refused and counted), stats that add up after the
 * threads are gone, and the cleaner running while they work.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/pool.h>

#include "test_util.h"
#include "kselftest_harness.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define THREADS 4

/*
 * Under ThreadSanitizer (the host tier's lib-tsan/ build) every atomic
 * costs ~10-20x more: the racing tests run a quarter of their rounds
 * there, to stay inside the harness's 30 s on a busy 2-core host.
 */
#ifdef __SANITIZE_THREAD__
#define TSAN_SLOWER 4
#else
#define TSAN_SLOWER 1
#endif

/* ------------------------------------------------------------ churn */

struct churn {
	struct md_pool *pool;
	int id, ops;
	uint64_t allocs, frees, bytes, reqs;
	uint64_t held_frees;	/* deliberate frees while held */
	int errors;	/* anything unexpected */
	int stomped;	/* a stamp found overwritten */
};

/* Stamp both ends of a block with who owns it. */
static void stamp(const struct md_buf *b, uint64_t tag)
{
	*(volatile uint64_t *)b->cpu = tag;
	*(volatile uint64_t *)((char *)b->cpu + b->size - 8) = ~tag;
}

static bool stamped(const struct md_buf *b, uint64_t tag)
{
	return *(volatile uint64_t *)b->cpu == tag &&
	       *(volatile uint64_t *)((char *)b->cpu + b->size - 8) == ~tag;
}

static void *churn_fn(void *arg)
{
	struct churn *c = arg;
	struct md_buf live[64];
	uint64_t tags[64], req[64], seed = 0x9e3779b9ull * (c->id + 1);
	int n = 0, i;

	for (i = 0; i < c->ops; i++) {
		uint64_t r = xorshift64(&seed);

		if (n == 64 || (n && r % 2)) {
			int k = (int)(xorshift64(&seed) % n);

			if (!stamped(&live[k], tags[k]))
				c->stomped++;
			if (r % 7 == 0) {
				/* A user holds it for a moment. */
				if (md_buf_acquire(c->pool, &live[k]) ||
				    md_free(c->pool, &live[k]) != -EBUSY ||
				    md_buf_release(c->pool, &live[k]) != 1)
					c->errors++;
				c->held_frees++;
			}
			if (md_free(c->pool, &live[k]))
				c->errors++;
			c->frees++;
			live[k] = live[--n];
			tags[k] = tags[n];
			req[k] = req[n];
		} else {
			uint64_t size = r % 200 == 0 ? 16 * MiB + 1 + r % MiB :
					r % 20 == 0 ? MiB + r % (4 * MiB) :
						      16 + r % (64 * KiB);

			if (md_alloc(c->pool, size, &live[n])) {
				c->errors++;
				continue;
			}
			tags[n] = ((uint64_t)c->id << 48) | (uint64_t)i;
			req[n] = size;
			stamp(&live[n], tags[n]);
			c->allocs++;
			c->bytes += live[n].size;
			c->reqs += size;
			n++;
		}
	}
	while (n--) {
		if (!stamped(&live[n], tags[n]))
			c->stomped++;
		if (md_free(c->pool, &live[n]))
			c->errors++;
		c->frees++;
	}
	return NULL;
}

static void churn_run(struct __test_metadata *_metadata, uint32_t flags)
{
	struct md_pool_config cfg = { .flags = flags };
	struct md_device *dev = host_dev(128);
	struct churn c[THREADS];
	pthread_t th[THREADS];
	struct md_pool_stats st;
	struct md_pool *pool;
	uint64_t allocs = 0, frees = 0, bytes = 0, reqs = 0, held = 0;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	for (i = 0; i < THREADS; i++) {
		c[i] = (struct churn){ .pool = pool, .id = i, .ops = 40000 };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_fn, &c[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, c[i].errors);
		EXPECT_EQ(0, c[i].stomped);
		allocs += c[i].allocs;
		frees += c[i].frees;
		bytes += c[i].bytes;
		reqs += c[i].reqs;
		held += c[i].held_frees;
	}
	EXPECT_EQ(allocs, frees);
	md_pool_stats(pool, &st);
	/* The threads are gone: what they counted is the pool's. */
	EXPECT_EQ(allocs, st.total.alloc_count);
	EXPECT_EQ(frees, st.total.free_count);
	EXPECT_EQ(0, st.total.current_count);
	EXPECT_EQ(bytes, st.total.allocated_bytes);
	EXPECT_EQ(bytes, st.total.freed_bytes);
	EXPECT_EQ(reqs, st.total.requested_total);
	EXPECT_EQ(0, st.total.requested_bytes);
	EXPECT_GE(st.total.peak_count, 1);
	EXPECT_LE(st.total.peak_count, THREADS * 64);
	EXPECT_GT(st.tier[MD_TIER_SLAB].alloc_count, 0);
	EXPECT_GT(st.tier[MD_TIER_BUDDY].alloc_count, 0);
	EXPECT_GT(st.tier[MD_TIER_LARGE].alloc_count, 0);
	/* The only refusals: the frees while held the threads tried. */
	EXPECT_GT(held, 0);
	EXPECT_EQ(held, st.violation[MD_POOL_FREE_HELD]);
	EXPECT_EQ(held, st.violations);
	/* Their caches came back when they exited: all of it is free. */
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	EXPECT_EQ(0, dev_bytes(dev));
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(threads_churn_every_tier)
{
	churn_run(_metadata, 0);
}

TEST(threads_churn_without_thread_caches)
{
	churn_run(_metadata, MD_POOL_NO_TCACHE);
}

/* ------------------------------------------------------------ handoff */

#define QLEN 256

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct md_buf q[QLEN];
	int head, tail, done;
};

struct handoff {
	struct md_pool *pool;
	struct queue *q;
	int n;
	int errors;
};

static void *producer(void *arg)
{
	struct handoff *h = arg;
	uint64_t seed = 77;
	int i;

	for (i = 0; i < h->n; i++) {
		struct md_buf b;

		if (md_alloc(h->pool, 1 + xorshift64(&seed) % (200 * KiB), &b)) {
			h->errors++;
			continue;
		}
		stamp(&b, (uint64_t)i);
		pthread_mutex_lock(&h->q->lock);
		while ((h->q->tail + 1) % QLEN == h->q->head)
			pthread_cond_wait(&h->q->cond, &h->q->lock);
		h->q->q[h->q->tail] = b;
		h->q->tail = (h->q->tail + 1) % QLEN;
		pthread_cond_broadcast(&h->q->cond);
		pthread_mutex_unlock(&h->q->lock);
	}
	pthread_mutex_lock(&h->q->lock);
	h->q->done = 1;
	pthread_cond_broadcast(&h->q->cond);
	pthread_mutex_unlock(&h->q->lock);
	return NULL;
}

static void *consumer(void *arg)
{
	struct handoff *h = arg;
	uint64_t expect = 0;

	for (;;) {
		struct md_buf b;

		pthread_mutex_lock(&h->q->lock);
		while (h->q->head == h->q->tail && !h->q->done)
			pthread_cond_wait(&h->q->cond, &h->q->lock);
		if (h->q->head == h->q->tail) {
			pthread_mutex_unlock(&h->q->lock);
			break;
		}
		b = h->q->q[h->q->head];
		h->q->head = (h->q->head + 1) % QLEN;
		pthread_cond_broadcast(&h->q->cond);
		pthread_mutex_unlock(&h->q->lock);
		if (!stamped(&b, expect++) || md_free(h->pool, &b))
			h->errors++;
		h->n++;
	}
	return NULL;
}

/* Blocks allocated in one thread and freed in another. */
TEST(threads_free_elsewhere)
{
	struct md_device *dev = host_dev(64);
	struct queue q = { .lock = PTHREAD_MUTEX_INITIALIZER,
			   .cond = PTHREAD_COND_INITIALIZER };
	struct handoff prod, cons;
	struct md_pool_stats st;
	struct md_pool *pool;
	pthread_t a, b;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	prod = (struct handoff){ .pool = pool, .q = &q, .n = 50000 };
	cons = (struct handoff){ .pool = pool, .q = &q };
	ASSERT_EQ(0, pthread_create(&a, NULL, producer, &prod));
	ASSERT_EQ(0, pthread_create(&b, NULL, consumer, &cons));
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	EXPECT_EQ(0, prod.errors);
	EXPECT_EQ(0, cons.errors);
	EXPECT_EQ(50000, cons.n);
	md_pool_stats(pool, &st);
	EXPECT_EQ(50000, st.total.alloc_count);
	EXPECT_EQ(50000, st.total.free_count);
	EXPECT_EQ(0, st.total.current_bytes);
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	EXPECT_EQ(0, dev_bytes(dev));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * md_pool_stats() while blocks pass from one thread to another: each
 * thread counts in a cell of its own and the stats add the cells up one
 * after the other, so a block can be seen freed but not yet allocated.
 * The figures may be a moment old then, but a count or a byte figure of
 * live blocks may never come out below zero (as 2^64 - something).
 */
#define IDLE_THREADS 128

struct pass_on {
	struct md_pool *pool;
	atomic_int stop, ready;
	atomic_int given;	/* the giver has stopped: drain what is left */
	atomic_uint head, tail;
	struct md_buf q[64];
	atomic_int errors;	/* from any of the threads */
};

static void pass_on_touch(struct pass_on *p)
{
	struct md_buf b;

	if (md_alloc(p->pool, 100, &b) || md_free(p->pool, &b))
		atomic_fetch_add(&p->errors, 1);
	atomic_fetch_add(&p->ready, 1);
}

static void *pass_on_give(void *arg)
{
	struct pass_on *p = arg;
	uint64_t seed = 5;

	while (!atomic_load(&p->stop)) {
		unsigned int t = atomic_load(&p->tail);
		struct md_buf b;

		if (t - atomic_load(&p->head) >= 64)
			continue;
		if (md_alloc(p->pool, 1 + xorshift64(&seed) % (64 * KiB), &b)) {
			atomic_fetch_add(&p->errors, 1);
			continue;
		}
		p->q[t % 64] = b;
		atomic_store(&p->tail, t + 1);
	}
	atomic_store(&p->given, 1);
	return NULL;
}

static void *pass_on_take(void *arg)
{
	struct pass_on *p = arg;

	pass_on_touch(p);
	while (!atomic_load(&p->given) ||
	       atomic_load(&p->head) != atomic_load(&p->tail)) {
		unsigned int h = atomic_load(&p->head);

		if (h == atomic_load(&p->tail))
			continue;
		if (md_free(p->pool, &p->q[h % 64]))
			atomic_fetch_add(&p->errors, 1);
		atomic_store(&p->head, h + 1);
	}
	return NULL;
}

static void *pass_on_idle(void *arg)
{
	struct pass_on *p = arg;

	pass_on_touch(p);
	while (!atomic_load(&p->stop))
		usleep(1000);
	return NULL;
}

TEST(threads_stats_never_below_zero)
{
	struct md_device *dev = host_dev(64);
	struct pass_on p = { 0 };
	pthread_t th[IDLE_THREADS + 2];
	struct md_pool_stats st;
	int i, t, below = 0;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &p.pool));
	/*
	 * The cells are added up newest thread first: the taker's cell is
	 * read last, long after the giver's, with idle threads' in between.
	 */
	ASSERT_EQ(0, pthread_create(&th[0], NULL, pass_on_take, &p));
	for (i = 1; i <= IDLE_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, pass_on_idle, &p));
	while (atomic_load(&p.ready) != IDLE_THREADS + 1)
		sched_yield();
	ASSERT_EQ(0, pthread_create(&th[i], NULL, pass_on_give, &p));
	for (i = 0; i < 20000 / TSAN_SLOWER; i++) {
		md_pool_stats(p.pool, &st);
		for (t = 0; t <= MD_TIER_COUNT; t++) {
			const struct md_tier_stats *s =
				t < MD_TIER_COUNT ? &st.tier[t] : &st.total;

			below += s->current_count > s->alloc_count ||
				 s->current_bytes > s->allocated_bytes ||
				 s->requested_bytes > s->requested_total;
		}
	}
	atomic_store(&p.stop, 1);
	for (i = 0; i < IDLE_THREADS + 2; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, atomic_load(&p.errors));
	EXPECT_EQ(0, below);
	md_pool_stats(p.pool, &st);
	EXPECT_EQ(0, st.total.current_count);
	EXPECT_EQ(st.total.alloc_count, st.total.free_count);
	md_pool_destroy(p.pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ races */

/* Threads start each round together on a spinning gate. */
struct gate {
	atomic_int round;	/* the round the threads may start */
	atomic_int done;	/* threads finished with it */
};

/* Racers spin hard (they must start within nanoseconds of each other). */
static void gate_wait(struct gate *g, int round)
{
	unsigned long n = 0;

	/*
	 * Yield soon: with more runnable threads than cores, a spinning
	 * waiter holds up the very thread it waits for.
	 */
	while (atomic_load_explicit(&g->round, memory_order_acquire) != round)
		if (++n % 1000 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
}

static void gate_open(struct gate *g, int round, int threads)
{
	atomic_store(&g->done, 0);
	atomic_store(&g->round, round);
	while (atomic_load(&g->done) != threads)
		sched_yield();
}

#define RACE_BLOCKS 64

struct race {
	struct md_pool *pool;
	struct gate *g;
	struct md_buf *shared;	/* RACE_BLOCKS handles */
	int rounds;
	int wins, refused, other;
};

/* Both threads free the same handles, in the same order, at once. */
static void *double_free_fn(void *arg)
{
	struct race *r = arg;
	int i, k, err;

	for (i = 1; i <= r->rounds; i++) {
		gate_wait(r->g, i);
		for (k = 0; k < RACE_BLOCKS; k++) {
			err = md_free(r->pool, &r->shared[k]);
			if (!err)
				r->wins++;
			else if (err == -EINVAL)
				r->refused++;
			else
				r->other++;
		}
		atomic_fetch_add(&r->g->done, 1);
	}
	return NULL;
}

TEST(threads_racing_double_free)
{
	struct md_device *dev = host_dev(64);
	enum { ROUNDS = 600 / TSAN_SLOWER, N = ROUNDS * RACE_BLOCKS };
	static const uint64_t sizes[] = { 200, 2 * MiB, 20 * MiB };
	struct md_buf shared[RACE_BLOCKS];
	struct gate g = { 0 };
	struct race r[2];
	struct md_pool_stats st;
	struct md_pool *pool;
	pthread_t th[2];
	int i, k;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < 2; i++) {
		r[i] = (struct race){ .pool = pool, .g = &g,
				      .shared = shared, .rounds = ROUNDS };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, double_free_fn,
					    &r[i]));
	}
	for (i = 1; i <= ROUNDS; i++) {
		for (k = 0; k < RACE_BLOCKS; k++)
			ASSERT_EQ(0, md_alloc(pool, sizes[(i + k) % 3] / (k + 1),
					      &shared[k]));
		gate_open(&g, i, 2);
		for (k = 0; k < RACE_BLOCKS; k++)
			ASSERT_EQ(-ESTALE, md_buf_state(pool, &shared[k]));
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* Exactly one free won each race; the other was refused. */
	EXPECT_EQ(N, r[0].wins + r[1].wins);
	EXPECT_EQ(N, r[0].refused + r[1].refused);
	EXPECT_EQ(0, r[0].other + r[1].other);
	md_pool_stats(pool, &st);
	EXPECT_EQ(N, st.violation[MD_POOL_DOUBLE_FREE]);
	EXPECT_EQ(N, st.violations);
	EXPECT_EQ(N, st.total.alloc_count);
	EXPECT_EQ(N, st.total.free_count);
	EXPECT_EQ(0, st.total.current_count);
	TH_LOG("wins %d / %d", r[0].wins, r[1].wins);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * One thread acquires the block, holds it a moment and releases it; the
 * other frees it as soon as it can (-EBUSY while held). After a
 * successful free no acquire may succeed.
 */
struct fva {
	struct md_pool *pool;
	struct gate *g;
	struct md_buf *shared;
	int rounds;
	int wins, busy, refused, other;
};

static void *user_fn(void *arg)
{
	struct fva *r = arg;
	int i, err;

	for (i = 1; i <= r->rounds; i++) {
		volatile int spin;

		gate_wait(r->g, i);
		err = md_buf_acquire(r->pool, r->shared);
		if (err == -ESTALE) {
			r->refused++;
		} else if (err) {
			r->other++;
		} else {
			r->wins++;
			for (spin = 0; spin < 3000; spin++)
				;
			/* Held by us alone: the release makes it RELEASED. */
			if (md_buf_release(r->pool, r->shared) != 1)
				r->other++;
		}
		atomic_fetch_add(&r->g->done, 1);
	}
	return NULL;
}

static void *owner_fn(void *arg)
{
	struct fva *r = arg;
	int i, err;

	for (i = 1; i <= r->rounds; i++) {
		volatile int spin;

		gate_wait(r->g, i);
		for (spin = 0; spin < i % 9 * 200; spin++)
			;
		while ((err = md_free(r->pool, r->shared)) == -EBUSY)
			r->busy++;
		if (err)
			r->other++;
		else
			r->wins++;
		atomic_fetch_add(&r->g->done, 1);
	}
	return NULL;
}

TEST(threads_free_versus_acquire)
{
	struct md_device *dev = host_dev(64);
	enum { ROUNDS = 3000 / TSAN_SLOWER };
	struct gate g = { 0 };
	struct fva user, owner;
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf shared;
	pthread_t a, b;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	user = (struct fva){ .pool = pool, .g = &g, .shared = &shared,
			     .rounds = ROUNDS };
	owner = user;
	ASSERT_EQ(0, pthread_create(&a, NULL, user_fn, &user));
	ASSERT_EQ(0, pthread_create(&b, NULL, owner_fn, &owner));
	for (i = 1; i <= ROUNDS; i++) {
		ASSERT_EQ(0, md_alloc(pool, 100 + i % 5000, &shared));
		gate_open(&g, i, 2);
		ASSERT_EQ(-ESTALE, md_buf_state(pool, &shared));
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	/* The owner's free won every round, once; nothing else went wrong. */
	EXPECT_EQ(ROUNDS, owner.wins);
	EXPECT_EQ(0, owner.other);
	EXPECT_EQ(0, user.other);
	EXPECT_EQ(ROUNDS, user.wins + user.refused);
	md_pool_stats(pool, &st);
	/* Every refusal was counted: a busy free or a late acquire. */
	EXPECT_EQ(owner.busy, st.violation[MD_POOL_FREE_HELD]);
	EXPECT_EQ(user.refused, st.violation[MD_POOL_USE_AFTER_FREE]);
	EXPECT_EQ(owner.busy + user.refused, st.violations);
	EXPECT_EQ(0, st.total.current_count);
	TH_LOG("%d acquisitions, %d frees refused while held, %d late acquires",
	       user.wins, owner.busy, user.refused);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * Stale handles against the hand-out's store: the owner frees a round's
 * blocks into its cache and hands them out again and again (one store per
 * hand-out, no compare-exchange) while another thread frees, acquires and
 * releases the round's old handles. Every one of those must be refused
 * (a double free while the block is still RECYCLED in that generation,
 * stale once it was handed out again), counted, and never disturb the
 * owner: its allocs and frees all succeed, each block once.
 */
struct stale_race {
	struct md_pool *pool;
	struct gate *g;
	struct md_buf *old;	/* RACE_BLOCKS handles, freed */
	atomic_int started;	/* the round the racer is in */
	int rounds;
	long calls, double_free, stale, other;
};

static void *stale_fn(void *arg)
{
	struct stale_race *r = arg;
	int i, k, rep, err;

	for (i = 1; i <= r->rounds; i++) {
		gate_wait(r->g, i);
		atomic_store(&r->started, i);
		for (rep = 0; rep < 4; rep++) {
			for (k = 0; k < RACE_BLOCKS; k++) {
				const struct md_buf *b = &r->old[k];

				err = md_free(r->pool, b);
				r->calls++;
				if (err == -EINVAL)
					r->double_free++;
				else if (err == -ESTALE)
					r->stale++;
				else
					r->other++;
				err = md_buf_acquire(r->pool, b);
				r->calls++;
				if (err == -ESTALE)
					r->stale++;
				else
					r->other++;
				err = md_buf_release(r->pool, b);
				r->calls++;
				if (err == -ESTALE)
					r->stale++;
				else
					r->other++;
			}
		}
		atomic_fetch_add(&r->g->done, 1);
	}
	return NULL;
}

TEST(threads_stale_handles_against_the_cache)
{
	struct md_device *dev = host_dev(64);
	enum { ROUNDS = 400 / TSAN_SLOWER };
	struct md_buf old[RACE_BLOCKS], live[RACE_BLOCKS];
	struct stale_race r;
	struct gate g = { 0 };
	struct md_pool_stats st;
	struct md_pool *pool;
	long owner_errors = 0, owner_ops = 0;
	volatile int spin;
	pthread_t th;
	int i, k, j, rep;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	r = (struct stale_race){ .pool = pool, .g = &g, .old = old,
				 .rounds = ROUNDS };
	ASSERT_EQ(0, pthread_create(&th, NULL, stale_fn, &r));
	for (i = 1; i <= ROUNDS; i++) {
		for (k = 0; k < RACE_BLOCKS; k++)
			ASSERT_EQ(0, md_alloc(pool, 64 + k % 4 * 64, &old[k]));
		for (k = 0; k < RACE_BLOCKS; k++)
			ASSERT_EQ(0, md_free(pool, &old[k]));
		/* The racer starts; the owner works its cache meanwhile. */
		atomic_store(&g.done, 0);
		atomic_store(&g.round, i);
		/* Let it find some still RECYCLED (double frees) first. */
		while (atomic_load(&r.started) != i)
			sched_yield();
		for (spin = 0; spin < i % 7 * 300; spin++)
			;
		for (rep = 0; rep < 8; rep++) {
			for (k = 0; k < RACE_BLOCKS; k++) {
				owner_ops++;
				if (md_alloc(pool, 64 + k % 4 * 64, &live[k]))
					owner_errors++;
			}
			for (k = 0; k < RACE_BLOCKS; k++)
				for (j = 0; j < k; j++)
					if (live[j].block == live[k].block)
						owner_errors++;
			for (k = 0; k < RACE_BLOCKS; k++)
				if (md_free(pool, &live[k]))
					owner_errors++;
		}
		while (atomic_load(&g.done) != 1)
			sched_yield();
	}
	pthread_join(th, NULL);
	EXPECT_EQ(0, owner_errors);
	EXPECT_EQ(0, r.other);
	EXPECT_EQ(r.calls, r.double_free + r.stale);
	/* Both sides of the race happened. */
	EXPECT_LT(0, r.double_free);
	EXPECT_LT(0, r.stale);
	md_pool_stats(pool, &st);
	EXPECT_EQ(r.double_free, st.violation[MD_POOL_DOUBLE_FREE]);
	EXPECT_EQ(r.stale, st.violation[MD_POOL_USE_AFTER_FREE]);
	EXPECT_EQ(r.calls, st.violations);
	EXPECT_EQ(ROUNDS * RACE_BLOCKS + owner_ops, st.total.alloc_count);
	EXPECT_EQ(0, st.total.current_count);
	TH_LOG("%ld stale calls: %ld double frees, %ld stale", r.calls,
	       r.double_free, r.stale);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ cleaner */

struct worker {
	struct md_pool *pool;
	atomic_int *stop;
	atomic_int *pause;	/* the main thread asks every worker to wait */
	atomic_int *paused;	/* how many are waiting */
	atomic_int held;	/* blocks this worker holds, set when it waits */
	uint64_t allocs;
	int errors;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = (uintptr_t)w;
	struct md_buf b[16];
	int n = 0;

	while (!atomic_load(w->stop)) {
		if (atomic_load(w->pause)) {
			atomic_store(&w->held, n);
			atomic_fetch_add(w->paused, 1);
			while (atomic_load(w->pause) && !atomic_load(w->stop))
				sched_yield();
			atomic_fetch_sub(w->paused, 1);
			continue;
		}
		if (n == 16 || (n && xorshift64(&seed) % 2)) {
			if (md_free(w->pool, &b[--n]))
				w->errors++;
		} else if (!md_alloc(w->pool, 1 + xorshift64(&seed) % (3 * MiB), &b[n])) {
			n++;
			w->allocs++;
		} else {
			w->errors++;
		}
	}
	while (n)
		if (md_free(w->pool, &b[--n]))
			w->errors++;
	return NULL;
}

/* The cleaner and snapshots run while other threads allocate. */
TEST(threads_cleaner_while_busy)
{
	struct md_device *dev = host_dev(256);
	struct worker w[THREADS - 1];
	pthread_t th[THREADS - 1];
	struct md_pool_stats st;
	struct md_pool *pool;
	atomic_int stop = 0, pause = 0, paused = 0;
	uint64_t allocs = 0;
	struct md_buf mine;
	char buf[256];
	int i, rounds;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	ASSERT_EQ(0, md_alloc_tagged(pool, 5000, "main-thread", &mine));
	for (i = 0; i < THREADS - 1; i++) {
		w[i] = (struct worker){ .pool = pool, .stop = &stop,
					.pause = &pause, .paused = &paused };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_fn, &w[i]));
	}
	for (rounds = 0; rounds < 200; rounds++) {
		long held = md_memory_cleaner(pool, NULL, NULL);

		/*
		 * At least this thread's block. A walk among busy threads is
		 * not a snapshot (a block freed behind it and another taken
		 * ahead of it both count), so no exact upper bound here: a
		 * loose one, and the exact count every 20th round below.
		 */
		EXPECT_GE(held, 1);
		EXPECT_LE(held, 1 + 4 * 16 * (THREADS - 1));
		EXPECT_GT(md_snapshot_buf(pool, buf, sizeof(buf)), 0);
		md_pool_stats(pool, &st);
		if (rounds % 20 == 19) {
			long want = 1;

			/* Every worker waits: the count is exact. */
			atomic_store(&pause, 1);
			while (atomic_load(&paused) < THREADS - 1)
				sched_yield();
			for (i = 0; i < THREADS - 1; i++)
				want += atomic_load(&w[i].held);
			EXPECT_EQ(want, md_memory_cleaner(pool, NULL, NULL));
			atomic_store(&pause, 0);
			while (atomic_load(&paused))
				sched_yield();
		}
	}
	atomic_store(&stop, 1);
	for (i = 0; i < THREADS - 1; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, w[i].errors);
		allocs += w[i].allocs;
	}
	EXPECT_EQ(1, md_memory_cleaner(pool, NULL, NULL));
	md_pool_stats(pool, &st);
	EXPECT_EQ(allocs + 1, st.total.alloc_count);
	EXPECT_EQ(1, st.total.current_count);
	EXPECT_EQ(0, st.violations);
	ASSERT_EQ(0, md_free(pool, &mine));
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	EXPECT_EQ(0, dev_bytes(dev));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * A thread that uses the pool from the destructor of a thread-specific key
 * of its own, after its caches went back to the pool: the cache it makes
 * then goes back too, and nothing stays cached for a thread that is gone.
 */
struct late_use {
	struct md_pool *pool;
	pthread_key_t key;
	int errors;
};

static void late_use_fn(void *arg)
{
	struct late_use *lu = arg;
	struct md_buf b;

	if (md_alloc(lu->pool, 100, &b) || md_free(lu->pool, &b))
		lu->errors++;
}

static void *late_thread_fn(void *arg)
{
	struct late_use *lu = arg;
	struct md_buf b;

	if (md_alloc(lu->pool, 100, &b) || md_free(lu->pool, &b))
		lu->errors++;
	if (pthread_setspecific(lu->key, lu))
		lu->errors++;
	return NULL;
}

TEST(threads_pool_used_by_a_late_destructor)
{
	struct md_device *dev = host_dev(64);
	struct late_use lu = { 0 };
	struct md_pool_stats st;
	struct md_buf b;
	pthread_t th;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &lu.pool));
	/* The pool's own key first: destructors run in the keys' order. */
	ASSERT_EQ(0, md_alloc(lu.pool, 100, &b));
	ASSERT_EQ(0, md_free(lu.pool, &b));
	ASSERT_EQ(0, pthread_key_create(&lu.key, late_use_fn));
	ASSERT_EQ(0, pthread_create(&th, NULL, late_thread_fn, &lu));
	pthread_join(th, NULL);
	EXPECT_EQ(0, lu.errors);
	md_pool_stats(lu.pool, &st);
	EXPECT_EQ(3, st.total.alloc_count);
	EXPECT_EQ(3, st.total.free_count);
	/* The late cache came back: every slab is empty, every region goes. */
	EXPECT_EQ(0, md_memory_cleaner(lu.pool, NULL, NULL));
	EXPECT_EQ(0, dev_bytes(dev));
	pthread_key_delete(lu.key);
	md_pool_destroy(lu.pool);
	md_device_close(dev);
}

/* A pool destroyed while another thread still has a cache for it. */
struct two_pools {
	struct md_pool *first, *second;
	atomic_int first_used, first_gone;
};

static void *touch_fn(void *arg)
{
	struct two_pools *tp = arg;
	struct md_buf b;

	if (!md_alloc(tp->first, 100, &b))
		md_free(tp->first, &b);
	atomic_store(&tp->first_used, 1);
	while (!atomic_load(&tp->first_gone))
		;
	if (!md_alloc(tp->second, 100, &b))
		md_free(tp->second, &b);
	return NULL;
}

TEST(threads_pool_destroyed_under_caches)
{
	struct md_device *dev = host_dev(64);
	struct two_pools tp = { 0 };
	struct md_pool_stats st;
	pthread_t th;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &tp.first));
	ASSERT_EQ(0, md_pool_create(dev, NULL, &tp.second));
	ASSERT_EQ(0, pthread_create(&th, NULL, touch_fn, &tp));
	while (!atomic_load(&tp.first_used))
		;
	md_pool_stats(tp.first, &st);
	EXPECT_EQ(1, st.total.free_count);
	md_pool_destroy(tp.first);
	atomic_store(&tp.first_gone, 1);
	pthread_join(th, NULL);
	md_pool_stats(tp.second, &st);
	EXPECT_EQ(1, st.total.alloc_count);
	EXPECT_EQ(1, st.total.free_count);
	md_pool_destroy(tp.second);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
}

TEST_HARNESS_MAIN
