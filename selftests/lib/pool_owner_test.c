// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: who frees a block without a compare-exchange
 * (lib/runtime.md, "The owner's free"). The descriptor's owner field is
 * read directly (pool_internal.h): the thread whose cache handed a block
 * out owns it; another thread's first write to its state takes it away
 * for good, and the owner then frees it like anyone else; a pool with
 * MD_POOL_SHARED_BLOCKS or without thread caches has no owners. Each
 * case also checks what the API returns, so a handshake that lost a
 * transition shows as a wrong result, not only as a wrong field.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/pool.h>

#include "pool_internal.h"
#include "test_util.h"
#include "kselftest_harness.h"

static uint32_t owner_of(const struct md_buf *b)
{
	return atomic_load(&b->block->thread);
}

/* Whether this process frees plainly at all (membarrier may be missing). */
static bool owners_free(struct md_pool *pool)
{
	return pool->owner_free;
}

struct op {
	struct md_pool *pool;
	struct md_buf *buf;
	int (*fn)(struct md_pool *pool, const struct md_buf *buf);
	int ret;
	uint32_t owner_after;
};

static void *op_fn(void *arg)
{
	struct op *o = arg;

	o->ret = o->fn(o->pool, o->buf);
	o->owner_after = owner_of(o->buf);
	return NULL;
}

/* Run @fn on @buf in a thread of its own; its return value. */
static int elsewhere(struct md_pool *pool, struct md_buf *buf,
		     int (*fn)(struct md_pool *, const struct md_buf *),
		     uint32_t *owner_after)
{
	struct op o = { .pool = pool, .buf = buf, .fn = fn };
	pthread_t th;

	if (pthread_create(&th, NULL, op_fn, &o))
		return -1000;
	pthread_join(th, NULL);
	if (owner_after)
		*owner_after = o.owner_after;
	return o.ret;
}

TEST(owner_is_the_allocating_thread_until_another_writes)
{
	struct md_device *dev = host_dev(64);
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf a, b;
	uint32_t me, after = ~0u;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	if (!owners_free(pool))
		SKIP(goto out, "membarrier unavailable: every free CASes");
	ASSERT_EQ(0, md_alloc(pool, 100, &a));
	me = owner_of(&a);
	EXPECT_LE(BLK_FIRST_TID, me);
	/* The owner's free and the bin's next hand-out keep the owner. */
	ASSERT_EQ(0, md_free(pool, &a));
	ASSERT_EQ(0, md_alloc(pool, 100, &b));
	EXPECT_EQ(a.block, b.block);
	EXPECT_EQ(a.generation + 1, b.generation);
	EXPECT_EQ(me, owner_of(&b));
	/* The old handle stays refused, by the owner too. */
	EXPECT_EQ(-ESTALE, md_free(pool, &a));
	EXPECT_EQ(-ESTALE, md_buf_acquire(pool, &a));
	EXPECT_EQ(me, owner_of(&b));

	/* Another thread's acquire takes it away; its release too counts. */
	EXPECT_EQ(0, elsewhere(pool, &b, md_buf_acquire, &after));
	EXPECT_EQ(BLK_SHARED, after);
	EXPECT_EQ(-EBUSY, md_free(pool, &b));
	EXPECT_EQ(1, elsewhere(pool, &b, md_buf_release, NULL));
	EXPECT_EQ(MD_BLOCK_RELEASED, md_buf_state(pool, &b));
	EXPECT_EQ(0, md_free(pool, &b));
	EXPECT_EQ(-EINVAL, md_free(pool, &b));
	/* For good: the next life of the descriptor is shared from birth. */
	ASSERT_EQ(0, md_alloc(pool, 100, &a));
	EXPECT_EQ(b.block, a.block);
	EXPECT_EQ(BLK_SHARED, owner_of(&a));
	ASSERT_EQ(0, md_free(pool, &a));

	/* A stale handle used elsewhere takes nothing away. */
	ASSERT_EQ(0, md_alloc(pool, 3000, &a));
	me = owner_of(&a);
	ASSERT_EQ(0, md_free(pool, &a));
	ASSERT_EQ(0, md_alloc(pool, 3000, &b));
	EXPECT_EQ(a.block, b.block);
	EXPECT_EQ(-ESTALE, elsewhere(pool, &a, md_buf_acquire, &after));
	EXPECT_EQ(me, after);
	EXPECT_EQ(-ESTALE, elsewhere(pool, &a, md_free, &after));
	EXPECT_EQ(me, after);
	/* A free elsewhere wins and the owner's second free is refused. */
	EXPECT_EQ(0, elsewhere(pool, &b, md_free, &after));
	EXPECT_EQ(BLK_SHARED, after);
	EXPECT_EQ(-EINVAL, md_free(pool, &b));

	md_pool_stats(pool, &st);
	EXPECT_EQ(2, st.violation[MD_POOL_DOUBLE_FREE]);
	EXPECT_EQ(4, st.violation[MD_POOL_USE_AFTER_FREE]);
	EXPECT_EQ(1, st.violation[MD_POOL_FREE_HELD]);
	EXPECT_EQ(0, st.total.current_count);
out:
	md_pool_destroy(pool);
	md_device_close(dev);
}

static void *alloc_and_exit(void *arg)
{
	struct op *o = arg;

	o->ret = md_alloc(o->pool, 200, o->buf);
	o->owner_after = o->ret ? 0 : owner_of(o->buf);
	return NULL;
}

/* A block whose owner thread has exited; its id may serve another. */
TEST(owner_gone)
{
	struct md_device *dev = host_dev(64);
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf a, c;
	struct op o;
	pthread_t th;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	o = (struct op){ .pool = pool, .buf = &a };
	ASSERT_EQ(0, pthread_create(&th, NULL, alloc_and_exit, &o));
	pthread_join(th, NULL);
	ASSERT_EQ(0, o.ret);
	if (owners_free(pool)) {
		EXPECT_LE(BLK_FIRST_TID, o.owner_after);
		EXPECT_EQ(o.owner_after, owner_of(&a));
	}
	/* The allocating thread is gone; this one is another thread. */
	ASSERT_EQ(0, md_alloc(pool, 200, &c));
	EXPECT_EQ(0, md_buf_acquire(pool, &a));
	EXPECT_EQ(-EBUSY, md_free(pool, &a));
	EXPECT_EQ(1, md_buf_release(pool, &a));
	EXPECT_EQ(0, md_free(pool, &a));
	EXPECT_EQ(-EINVAL, md_free(pool, &a));
	EXPECT_EQ(0, md_free(pool, &c));
	md_pool_stats(pool, &st);
	EXPECT_EQ(2, st.violations);
	EXPECT_EQ(0, st.total.current_count);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* Pools without owners: every block's owner field says nobody. */
TEST(no_owners_when_shared_or_uncached)
{
	static const uint32_t flags[] = { MD_POOL_SHARED_BLOCKS,
					  MD_POOL_NO_TCACHE };
	struct md_device *dev = host_dev(64);
	unsigned int i;

	ASSERT_NE(NULL, dev);
	for (i = 0; i < 2; i++) {
		struct md_pool_config cfg = { .flags = flags[i] };
		struct md_pool *pool;
		struct md_buf a;
		uint32_t after = ~0u;

		ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
		EXPECT_FALSE(owners_free(pool));
		ASSERT_EQ(0, md_alloc(pool, 100, &a));
		EXPECT_EQ(BLK_NOBODY, owner_of(&a));
		EXPECT_EQ(0, elsewhere(pool, &a, md_buf_acquire, &after));
		/* Nothing to take away: no barrier, the field unchanged. */
		EXPECT_EQ(BLK_NOBODY, after);
		EXPECT_EQ(1, md_buf_release(pool, &a));
		EXPECT_EQ(0, md_free(pool, &a));
		EXPECT_EQ(-EINVAL, md_free(pool, &a));
		md_pool_destroy(pool);
	}
	md_device_close(dev);
}

/*
 * fork(): the child's registration for membarrier may be gone; a block
 * the parent allocated is then taken from its owner in the child (the
 * child's thread is another), and the barrier must still work.
 */
static void *child_free(void *arg)
{
	struct op *o = arg;

	o->ret = md_buf_acquire(o->pool, o->buf);
	if (!o->ret)
		o->ret = md_buf_release(o->pool, o->buf) == 1 ? 0 : -1;
	return NULL;
}

TEST(owner_free_after_fork)
{
	struct md_device *dev = host_dev(64);
	struct md_pool *pool;
	struct md_buf a;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	ASSERT_EQ(0, md_alloc(pool, 100, &a));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct op o = { .pool = pool, .buf = &a };
		pthread_t th;
		int bad = 0;

		/* The forking thread is the owner in the child too. */
		if (pthread_create(&th, NULL, child_free, &o))
			_exit(2);
		pthread_join(th, NULL);
		bad |= o.ret != 0;
		bad |= owners_free(pool) && owner_of(&a) != BLK_SHARED;
		bad |= md_free(pool, &a) != 0;
		bad |= md_free(pool, &a) != -EINVAL;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The parent's copy is untouched by the child. */
	EXPECT_EQ(MD_BLOCK_ALLOCATED, md_buf_state(pool, &a));
	EXPECT_EQ(0, md_free(pool, &a));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ races */

#ifdef __SANITIZE_THREAD__
#define ROUNDS 150
#else
#define ROUNDS 1500
#endif
#define K 64

/*
 * The other thread: frees (odd rounds) or acquires and releases (even
 * rounds) the round's blocks, in reverse order.
 */
struct racer {
	struct md_pool *pool;
	struct md_buf *bufs;
	atomic_int round, started, done;
	atomic_int owner_ops, racer_ops;	/* this round's, so far */
	int wins, free_refused, acquired, acq_refused, other;
};

/*
 * One round in three of each kind lets one side go first, for at most
 * 200 ms: on a loaded host the threads may otherwise run one after the
 * other, and one side would win every race of the run.
 */
enum { FREE_FOR_ALL, OWNER_FIRST, RACER_FIRST };

static int round_order(int i)
{
	return (i / 2) % 3;
}

/* Wait until @ops reaches @n, at most 200 ms. */
static void wait_ops(atomic_int *ops, int n)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(ops) < n) {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L +
		    (t.tv_nsec - t0.tv_nsec) > 200000000L)
			break;
	}
}

static void *racer_fn(void *arg)
{
	struct racer *r = arg;
	int i, k, err;

	for (i = 1; i <= ROUNDS; i++) {
		while (atomic_load(&r->round) != i)
			;
		atomic_store(&r->started, i);
		if (round_order(i) == OWNER_FIRST)
			wait_ops(&r->owner_ops, K / 4);
		for (k = K - 1; k >= 0; k--) {
			atomic_fetch_add(&r->racer_ops, 1);
			if (i % 2) {
				err = md_free(r->pool, &r->bufs[k]);
				if (!err)
					r->wins++;
				else if (err == -EINVAL)
					r->free_refused++;
				else
					r->other++;
				continue;
			}
			err = md_buf_acquire(r->pool, &r->bufs[k]);
			if (!err) {
				r->acquired++;
				if (md_buf_release(r->pool, &r->bufs[k]) != 1)
					r->other++;
			} else if (err == -ESTALE) {
				r->acq_refused++;
			} else {
				r->other++;
			}
		}
		atomic_store(&r->done, i);
	}
	return NULL;
}

/*
 * The owner frees its blocks in order while another thread frees them
 * (odd rounds) or acquires them (even rounds) in reverse: they meet in
 * the middle, where the owner's plain step races the other's handshake.
 * Blocks are fresh each round where the owner's bin allows (one the
 * other thread took away stays shared). With the rounds where one side
 * goes first, both sides must win some.
 */
TEST(owner_races_another_thread)
{
	struct md_device *dev = host_dev(64);
	struct md_buf bufs[K];
	struct md_pool_stats st;
	struct md_pool *pool;
	struct racer r = { 0 };
	int i, k, err, wins = 0, refused = 0, busy = 0, plain = 0, frees = 0;
	volatile int spin;
	pthread_t th;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	r.pool = pool;
	r.bufs = bufs;
	ASSERT_EQ(0, pthread_create(&th, NULL, racer_fn, &r));
	for (i = 1; i <= ROUNDS; i++) {
		for (k = 0; k < K; k++) {
			ASSERT_EQ(0, md_alloc(pool, 64 + (k * 97 + i) % 4000,
					      &bufs[k]));
			plain += owner_of(&bufs[k]) >= BLK_FIRST_TID;
		}
		atomic_store(&r.owner_ops, 0);
		atomic_store(&r.racer_ops, 0);
		atomic_store(&r.round, i);
		while (atomic_load(&r.started) != i)
			;
		/* Start later by a varying amount: the meeting point moves. */
		for (spin = 0; spin < i % 16 * 400; spin++)
			;
		if (round_order(i) == RACER_FIRST)
			wait_ops(&r.racer_ops, K / 4);
		for (k = 0; k < K; k++) {
			atomic_fetch_add(&r.owner_ops, 1);
			while ((err = md_free(pool, &bufs[k])) == -EBUSY)
				busy++;
			if (i % 2) {
				if (!err)
					wins++;
				else if (err == -EINVAL)
					refused++;
				else
					ASSERT_EQ(0, err);
			} else {
				/* Nobody else frees: it is ours to free. */
				ASSERT_EQ(0, err);
				frees++;
			}
		}
		while (atomic_load(&r.done) != i)
			;
	}
	pthread_join(th, NULL);
	/* Odd rounds: exactly one free won each block, the other refused. */
	EXPECT_EQ((ROUNDS + 1) / 2 * K, wins + r.wins);
	EXPECT_EQ((ROUNDS + 1) / 2 * K, refused + r.free_refused);
	EXPECT_EQ(0, r.other);
	/* Even rounds: each acquire came before the free or was refused. */
	EXPECT_EQ(ROUNDS / 2 * K, frees);
	EXPECT_EQ(ROUNDS / 2 * K, r.acquired + r.acq_refused);
	md_pool_stats(pool, &st);
	EXPECT_EQ(busy, st.violation[MD_POOL_FREE_HELD]);
	EXPECT_EQ((ROUNDS + 1) / 2 * K, st.violation[MD_POOL_DOUBLE_FREE]);
	EXPECT_EQ(r.acq_refused, st.violation[MD_POOL_USE_AFTER_FREE]);
	EXPECT_EQ(0, st.total.current_count);
	if (owners_free(pool)) {
		EXPECT_LT(0, plain);
	}
	EXPECT_LT(0, wins);
	EXPECT_LT(0, r.wins);
	TH_LOG("owner won %d, other %d; %d blocks owned at hand-out; %d acquired, %d frees refused while held",
	       wins, r.wins, plain, r.acquired, busy);
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST_HARNESS_MAIN
