// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the tiered pool's reuse protocol attacked at the
 * boundary between the thread that handed a block out (its owner) and
 * every other thread. Whatever md_free()'s fast path does on the owner's
 * side, for a block another thread can see:
 *
 *   - exactly one of racing frees wins; every other one is told, at once
 *     (-EINVAL double free, -EBUSY while a user holds the block);
 *   - a block acquired before the free stays usable (its contents and its
 *     ACTIVE state) until its last holder releases it;
 *   - a handle kept past the free is refused (-ESTALE) and never touches
 *     the block's next life, even when the owner's bin hands the very same
 *     descriptor out again at once;
 *   - none of that depends on the owner still running, on the block having
 *     passed through other threads, or on the process being a fork()ed
 *     copy of the one that allocated it;
 *   - every refusal a thread saw was counted once, as its kind, in
 *     md_pool_stats() and passed to the handler in that very thread.
 *
 * Racers start each round together on a spinning gate; blocks are stamped
 * and every block live after a round is compared with every other, so a
 * block handed out to two live owners shows within the round it happens.
 * Failed checks are counted (not asserted) so that a fork()ed child can
 * run the same code and report through its exit status.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/pool.h>

#include "test_util.h"
#include "kselftest_harness.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

/* Under ThreadSanitizer (lib-tsan/) atomics cost 10-20x: fewer rounds. */
#ifdef __SANITIZE_THREAD__
#define TSAN_SLOWER 6
#else
#define TSAN_SLOWER 1
#endif

#define MAX_RACERS	3
#define MAX_HANDLES	8

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void spin(int n)
{
	volatile int s;

	for (s = 0; s < n; s++)
		;
}

/* ------------------------------------------------------------ stamps */

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

static bool overlap(const struct md_buf *a, const struct md_buf *b)
{
	return a->block == b->block ||
	       (a->dev_va < b->dev_va + b->size &&
		b->dev_va < a->dev_va + a->size) ||
	       ((char *)a->cpu < (char *)b->cpu + b->size &&
		(char *)b->cpu < (char *)a->cpu + a->size);
}

/* ------------------------------------------------------------ refusals */

enum op { OP_FREE, OP_ACQUIRE, OP_RELEASE };

/* What a thread was told, by kind as the pool should count it. */
struct refusals {
	long kind[MD_POOL_VIOLATION_KINDS];
	long odd;	/* an error no refusal of this call can give */
};

static void saw(struct refusals *r, enum op op, int err)
{
	switch (err) {
	case -EBUSY:
		if (op == OP_FREE) {
			r->kind[MD_POOL_FREE_HELD]++;
			return;
		}
		break;
	case -EINVAL:
		r->kind[op == OP_FREE ? MD_POOL_DOUBLE_FREE :
					MD_POOL_BAD_TRANSITION]++;
		return;
	case -ESTALE:
		r->kind[MD_POOL_USE_AFTER_FREE]++;
		return;
	}
	r->odd++;
}

static void refusals_add(struct refusals *to, const struct refusals *r)
{
	int k;

	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++)
		to->kind[k] += r->kind[k];
	to->odd += r->odd;
}

static long refusals_sum(const struct refusals *r)
{
	long n = 0;
	int k;

	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++)
		n += r->kind[k];
	return n;
}

/* The handler: counted for the pool and for the thread it runs in. */
struct tally {
	atomic_long kind[MD_POOL_VIOLATION_KINDS];
	atomic_long odd;	/* a report without the caller's handle */
};

static _Thread_local long handled[MD_POOL_VIOLATION_KINDS];

static void on_violation(const struct md_pool_violation *v, void *arg)
{
	struct tally *t = arg;

	if ((unsigned int)v->kind >= MD_POOL_VIOLATION_KINDS || !v->buf ||
	    v->expected != v->buf->generation) {
		atomic_fetch_add(&t->odd, 1);
		return;
	}
	atomic_fetch_add(&t->kind[v->kind], 1);
	handled[v->kind]++;
}

/* Refusals this thread saw since @base that its handler calls disagree with. */
static long handled_mismatch(const struct refusals *seen, const long *base)
{
	long bad = 0;
	int k;

	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++)
		bad += labs(handled[k] - base[k] - seen->kind[k]);
	return bad;
}

static struct md_pool *race_pool(struct md_device *dev, struct tally *t,
				 uint32_t flags)
{
	struct md_pool_config cfg = { .flags = flags, .handler = on_violation,
				      .handler_arg = t };
	struct md_pool *pool;

	if (!dev || md_pool_create(dev, &cfg, &pool))
		return NULL;
	return pool;
}

/*
 * The pool's counters against what the threads saw: the handler's tally,
 * md_pool_stats() per kind and in all (@st0, @t0: the figures before,
 * for a fork()ed child whose copies start where its parent was).
 */
static long counts_mismatch(struct md_pool *pool, const struct tally *t,
			    const struct refusals *seen,
			    const struct md_pool_stats *st0,
			    const long *t0)
{
	struct md_pool_stats st;
	long bad = 0;
	int k;

	md_pool_stats(pool, &st);
	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++) {
		long s = (long)(st.violation[k] - (st0 ? st0->violation[k] : 0));
		long h = atomic_load(&t->kind[k]) - (t0 ? t0[k] : 0);

		if (s != seen->kind[k] || h != seen->kind[k]) {
			fprintf(stderr, "# %s: threads saw %ld, stats %ld, handler %ld\n",
				md_pool_violation_name(k), seen->kind[k], s, h);
			bad++;
		}
	}
	if ((long)(st.violations - (st0 ? st0->violations : 0)) !=
	    refusals_sum(seen)) {
		fprintf(stderr, "# violations %ld, threads saw %ld\n",
			(long)(st.violations - (st0 ? st0->violations : 0)),
			refusals_sum(seen));
		bad++;
	}
	if (atomic_load(&t->odd) || seen->odd) {
		fprintf(stderr, "# odd reports %ld, odd errors %ld\n",
			atomic_load(&t->odd), seen->odd);
		bad++;
	}
	return bad;
}

/* ------------------------------------------------------------ the gate */

/*
 * A round: the main thread opens it; the parties (the racers taking part,
 * and the owner if it races) meet at the start line, so that they start
 * within nanoseconds of each other, race, and meet again before anyone
 * allocates (a block that lost its race must not be handed out while a
 * party still races its old handle: that would be a legal -ESTALE).
 */
struct gate {
	atomic_int round;	/* the round racers may start */
	atomic_int finished;	/* racers done with it */
	atomic_int arrived;	/* parties at the start line */
	atomic_int raced;	/* parties done racing */
	int parties;
};

static void spin_until(atomic_int *v, int want)
{
	unsigned int n = 0;

	/* Yield now and then: there are more racers than cores. */
	while (atomic_load_explicit(v, memory_order_acquire) != want)
		if (++n % 512 == 0)
			sched_yield();
		else
			relax();
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait for @v to reach @want, yielding; give up after @ms milliseconds (a
 * thread that never comes must not hang the test, only weaken a round).
 */
static void wait_for(atomic_int *v, int want, int ms)
{
	long end = 0;
	unsigned int n = 0;

	while (atomic_load(v) < want) {
		sched_yield();
		if (++n % 64)
			continue;
		if (!end)
			end = now_ms() + ms;
		else if (now_ms() > end)
			return;
	}
}

/*
 * Wait for round @round or a later one. Return: false when the race is
 * over (the main thread opens rounds + 1, early when a check failed).
 */
static bool gate_wait(struct gate *g, int round, int rounds)
{
	unsigned int n = 0;
	int now;

	while ((now = atomic_load_explicit(&g->round,
					   memory_order_acquire)) < round)
		if (++n % 512 == 0)
			sched_yield();
		else
			relax();
	return now <= rounds;
}

static void gate_open(struct gate *g, int round, int parties)
{
	atomic_store(&g->finished, 0);
	atomic_store(&g->arrived, 0);
	atomic_store(&g->raced, 0);
	g->parties = parties;
	atomic_store_explicit(&g->round, round, memory_order_release);
}

static void gate_meet(struct gate *g, atomic_int *at)
{
	atomic_fetch_add(at, 1);
	spin_until(at, g->parties);
}

static void gate_drain(struct gate *g, int racers)
{
	while (atomic_load(&g->finished) != racers)
		sched_yield();
}

/* ------------------------------------------------------------ one round's handles */

/*
 * A round: up to MAX_HANDLES blocks, each raced by its owner (or, owner
 * gone, nobody in particular) and by the racers that take part. A HOLD
 * block's users acquire it, check it and release it; a BARE block's users
 * only release it (a user done with a block it never acquired:
 * ALLOCATED -> RELEASED). Racers with the FREE role free every block.
 */
enum role { ROLE_FREE, ROLE_USE };
enum use { USE_HOLD, USE_BARE };

struct race {
	struct md_pool *pool;
	struct gate g;
	int rounds, racers;
	bool owner_gone;	/* racer 0 always frees: nobody else will */
	int active;		/* racers taking part in this round: ids below */
	int fill_round;		/* the round alloc_and_exit() fills */
	/*
	 * Every party yields between handles, users while they hold: so
	 * that races happen even when a loaded host runs the parties one
	 * after the other on one core.
	 */
	bool yieldy;
	int users;		/* active racers with ROLE_USE */
	atomic_int holds;	/* successful acquires this round */
	atomic_int tried[MAX_HANDLES];		/* somebody tried to free it */
	int nh;
	struct md_buf h[MAX_HANDLES];
	uint64_t tag[MAX_HANDLES];
	uint64_t size[MAX_HANDLES];
	int use[MAX_HANDLES];
	atomic_int free_wins[MAX_HANDLES];
	atomic_int holding[MAX_HANDLES];	/* between acquire and release */
	atomic_int acquired[MAX_HANDLES];
	atomic_int last[MAX_HANDLES];		/* release said "last holder" */
	atomic_int bare[MAX_HANDLES];		/* bare releases that won */
	/* Each racer's blocks of its own, allocated after it raced. */
	struct md_buf fresh[MAX_RACERS][MAX_HANDLES];
	int nfresh[MAX_RACERS];
	/* Figures. */
	atomic_long owner_wins, foreign_wins, busy, acquires, stale_uses;
	atomic_long allocs;	/* blocks handed out to the round and racers */
	atomic_long failures;
};

struct racer {
	struct race *r;
	int id;
	pthread_t th;
	struct refusals seen;
	long mismatch;
};

/* Say a failed check (the first few of a race), in one write. */
static void say_failed(atomic_long *failures, int round, const char *fmt,
		       va_list ap)
{
	char msg[256];

	if (atomic_fetch_add(failures, 1) >= 8)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "# FAILED CHECK in round %d: %s\n", round, msg);
}

static void failed(struct race *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_failed(&r->failures, atomic_load(&r->g.round), fmt, ap);
	va_end(ap);
}

static uint64_t handle_tag(int round, int k)
{
	return 0x5eed000000000000ull | (uint64_t)round << 8 | (uint64_t)k;
}

static uint64_t fresh_tag(int racer, int round, int k)
{
	return 0xf0e5000000000000ull | (uint64_t)(racer + 1) << 40 |
	       (uint64_t)round << 8 | (uint64_t)k;
}

/* Sizes: mostly the slab tier's cached classes, every tier now and then. */
static uint64_t race_size(int round, int k)
{
	static const uint64_t sizes[] = {
		64, 100, 256, 1000, 4096, 9000, 64 * KiB, 200 * KiB,
		100, 2 * MiB, 640, 20 * MiB + 1,
	};
	unsigned int n = sizeof(sizes) / sizeof(sizes[0]);

	return sizes[(unsigned int)(round * 5 + k * 7) % n];
}

/*
 * Free handle @k until the free is settled: won, or refused because
 * another free won. -EBUSY (a user holds it) is retried.
 */
static int free_settled(struct race *r, struct refusals *seen, int k)
{
	long give_up = 0;
	unsigned int n;
	int err;

	for (n = 1;; n++) {
		err = md_free(r->pool, &r->h[k]);
		atomic_store(&r->tried[k], 1);
		if (!err) {
			atomic_fetch_add(&r->free_wins[k], 1);
			if (atomic_load(&r->holding[k]))
				failed(r, "block %d freed while a user held it", k);
			return 0;
		}
		saw(seen, OP_FREE, err);
		if (err == -EINVAL)
			return err;
		if (err != -EBUSY) {
			failed(r, "free of block %d: %d", k, err);
			return err;
		}
		atomic_fetch_add(&r->busy, 1);
		if (r->use[k] != USE_HOLD) {
			failed(r, "free of block %d: -EBUSY, nobody acquires it", k);
			return err;
		}
		if (n % 64) {
			relax();
			continue;
		}
		sched_yield();
		if (!give_up) {
			give_up = now_ms() + 5000;
		} else if (now_ms() > give_up) {
			/* Users hold a block for microseconds. */
			failed(r, "free of block %d: -EBUSY for 5 s", k);
			return err;
		}
	}
}

static void use_hold(struct race *r, struct refusals *seen, int k, int round)
{
	const struct md_buf *b = &r->h[k];
	int err = md_buf_acquire(r->pool, b);

	if (err) {
		saw(seen, OP_ACQUIRE, err);
		/* Freed already, or its last holder released it. */
		if (err != -ESTALE && err != -EINVAL)
			failed(r, "acquire of block %d: %d", k, err);
		atomic_fetch_add(&r->stale_uses, 1);
		return;
	}
	atomic_fetch_add(&r->holding[k], 1);
	atomic_fetch_add(&r->acquired[k], 1);
	atomic_fetch_add(&r->acquires, 1);
	if (!stamped(b, r->tag[k]))
		failed(r, "block %d acquired: its contents changed", k);
	atomic_fetch_add(&r->holds, 1);
	if (r->yieldy)
		/* Held until somebody tried to free it (or a while). */
		wait_for(&r->tried[k], 1, 200);
	else
		spin(200 + (k * 131 + round * 17) % 900);
	err = md_buf_state(r->pool, b);
	if (err != MD_BLOCK_ACTIVE)
		failed(r, "block %d held: state %d, not ACTIVE", k, err);
	if (!stamped(b, r->tag[k]))
		failed(r, "block %d held: its contents changed", k);
	atomic_fetch_sub(&r->holding[k], 1);
	err = md_buf_release(r->pool, b);
	if (err == 1) {
		atomic_fetch_add(&r->last[k], 1);
	} else if (err) {
		saw(seen, OP_RELEASE, err);
		failed(r, "release of held block %d: %d", k, err);
	}
}

static void use_bare(struct race *r, struct refusals *seen, int k)
{
	int err = md_buf_release(r->pool, &r->h[k]);

	if (err == 1) {
		atomic_fetch_add(&r->bare[k], 1);
		return;
	}
	if (err == 0) {
		failed(r, "bare release of block %d: holders left", k);
		return;
	}
	saw(seen, OP_RELEASE, err);
	if (err != -ESTALE && err != -EINVAL)
		failed(r, "bare release of block %d: %d", k, err);
	atomic_fetch_add(&r->stale_uses, 1);
}

static enum role racer_role(const struct race *r, int id, int round)
{
	if (r->owner_gone)
		return id == 0 || (id + round) % 2 ? ROLE_FREE : ROLE_USE;
	return (id + round / 3) % 3 == 0 ? ROLE_FREE : ROLE_USE;
}

static int race_users(const struct race *r, int round)
{
	int id, n = 0;

	for (id = 0; id < r->active; id++)
		n += racer_role(r, id, round) == ROLE_USE;
	return n;
}

/*
 * After racing: blocks of its own (the same sizes), then the previous
 * round's back. A block whose free won twice sits in two bins: the
 * owner's next allocation and this one hand it out twice.
 */
static void racer_refresh(struct race *r, struct racer *me, int round)
{
	struct md_buf old[MAX_HANDLES];
	int n = r->nfresh[me->id], k, err;

	memcpy(old, r->fresh[me->id], sizeof(old));
	for (k = 0; k < r->nh; k++) {
		struct md_buf *b = &r->fresh[me->id][k];

		if (md_alloc(r->pool, r->size[k], b)) {
			failed(r, "racer %d: allocation failed", me->id);
			break;
		}
		stamp(b, fresh_tag(me->id, round, k));
		atomic_fetch_add(&r->allocs, 1);
	}
	r->nfresh[me->id] = k;
	for (k = 0; k < n; k++) {
		/* Its tag: the round it was allocated in, kept in its cpu. */
		uint64_t tag = *(volatile uint64_t *)old[k].cpu;

		if ((tag >> 40) != (fresh_tag(me->id, 0, 0) >> 40) ||
		    (tag & 0xff) != (uint64_t)k || !stamped(&old[k], tag))
			failed(r, "racer %d: its block %d was overwritten",
			       me->id, k);
		err = md_free(r->pool, &old[k]);
		if (err)
			failed(r, "racer %d: free of its own block: %d",
			       me->id, err);
	}
}

static void racer_drop_fresh(struct race *r, struct racer *me)
{
	int k;

	for (k = 0; k < r->nfresh[me->id]; k++)
		if (md_free(r->pool, &r->fresh[me->id][k]))
			failed(r, "racer %d: free of its own block", me->id);
	r->nfresh[me->id] = 0;
}

static void *racer_fn(void *arg)
{
	struct racer *me = arg;
	struct race *r = me->r;
	long base[MD_POOL_VIOLATION_KINDS];
	int i, k;

	memcpy(base, handled, sizeof(base));
	for (i = 1; gate_wait(&r->g, i, r->rounds); i++) {
		if (me->id < r->active) {
			enum role role = racer_role(r, me->id, i);

			gate_meet(&r->g, &r->g.arrived);
			if (role == ROLE_FREE && r->yieldy && r->users)
				wait_for(&r->holds, 1, 200);
			else
				spin((me->id * 37 + i * 11) % 300);
			for (k = 0; k < r->nh; k++) {
				if (role == ROLE_FREE) {
					if (!free_settled(r, &me->seen, k))
						atomic_fetch_add(&r->foreign_wins, 1);
				} else if (r->use[k] == USE_HOLD) {
					use_hold(r, &me->seen, k, i);
				} else {
					use_bare(r, &me->seen, k);
				}
				if (r->yieldy)
					sched_yield();
			}
			gate_meet(&r->g, &r->g.raced);
			racer_refresh(r, me, i);
		}
		atomic_fetch_add(&r->g.finished, 1);
	}
	/* The last round's blocks stayed until the main thread checked them. */
	racer_drop_fresh(r, me);
	me->mismatch = handled_mismatch(&me->seen, base);
	return NULL;
}

static void race_init(struct race *r, struct md_pool *pool, int racers,
		      int rounds, bool owner_gone)
{
	memset(r, 0, sizeof(*r));
	r->pool = pool;
	r->racers = racers;
	r->rounds = rounds;
	r->owner_gone = owner_gone;
}

/* The calling thread allocates round @round's handles (and owns them). */
static int race_fill(struct race *r, int round)
{
	int k;

	r->nh = MAX_HANDLES;
	for (k = 0; k < r->nh; k++) {
		r->size[k] = race_size(round, k);
		r->tag[k] = handle_tag(round, k);
		r->use[k] = (round + k) % 2 ? USE_HOLD : USE_BARE;
		if (md_alloc(r->pool, r->size[k], &r->h[k])) {
			failed(r, "allocation of %llu B failed",
			       (unsigned long long)r->size[k]);
			return -1;
		}
		stamp(&r->h[k], r->tag[k]);
		atomic_fetch_add(&r->allocs, 1);
	}
	return 0;
}

/* Every handle of the round and every racer's block: all distinct. */
static void race_check_live(struct race *r)
{
	const struct md_buf *live[MAX_HANDLES * (MAX_RACERS + 1)];
	int n = 0, t, k, j;

	for (k = 0; k < r->nh; k++)
		live[n++] = &r->h[k];
	for (t = 0; t < r->racers; t++)
		for (k = 0; k < r->nfresh[t]; k++)
			live[n++] = &r->fresh[t][k];
	for (k = 0; k < n; k++)
		for (j = 0; j < k; j++)
			if (overlap(live[j], live[k]))
				failed(r, "one block handed out to two live owners (dev_va 0x%llx)",
				       (unsigned long long)live[k]->dev_va);
}

/* After a round: one free won per block, and the users' view agrees. */
static void race_check_round(struct race *r)
{
	int k, wins, acq, last, bare;

	for (k = 0; k < r->nh; k++) {
		wins = atomic_load(&r->free_wins[k]);
		acq = atomic_load(&r->acquired[k]);
		last = atomic_load(&r->last[k]);
		bare = atomic_load(&r->bare[k]);
		if (wins != 1)
			failed(r, "block %d: %d frees won", k, wins);
		if (last != (acq ? 1 : 0))
			failed(r, "block %d: %d acquires, %d last releases",
			       k, acq, last);
		if (bare > 1)
			failed(r, "block %d: %d bare releases won", k, bare);
		if (md_buf_state(r->pool, &r->h[k]) != -ESTALE)
			failed(r, "block %d: live after its free", k);
		atomic_store(&r->free_wins[k], 0);
		atomic_store(&r->acquired[k], 0);
		atomic_store(&r->last[k], 0);
		atomic_store(&r->bare[k], 0);
		atomic_store(&r->tried[k], 0);
	}
	atomic_store(&r->holds, 0);
}

static int race_start(struct race *r, struct racer *rc)
{
	int t;

	for (t = 0; t < r->racers; t++) {
		rc[t] = (struct racer){ .r = r, .id = t };
		if (pthread_create(&rc[t].th, NULL, racer_fn, &rc[t])) {
			failed(r, "pthread_create");
			return -1;
		}
	}
	return 0;
}

static void race_join(struct race *r, struct racer *rc, struct refusals *seen)
{
	int t;

	gate_open(&r->g, r->rounds + 1, 0);
	for (t = 0; t < r->racers; t++) {
		pthread_join(rc[t].th, NULL);
		refusals_add(seen, &rc[t].seen);
		if (rc[t].mismatch)
			failed(r, "racer %d: %ld refusals its handler did not see",
			       t, rc[t].mismatch);
	}
}

/*
 * The owner (the calling thread) allocates each round's blocks and frees
 * them the moment the racers start; right after, it allocates the next
 * round's (its bins hand back what it just freed). With @filled, the
 * first round's blocks are there already.
 */
static void owner_race(struct race *r, bool filled, struct refusals *seen)
{
	struct racer rc[MAX_RACERS];
	long base[MD_POOL_VIOLATION_KINDS];
	struct refusals mine = { 0 };
	int i, k;

	memcpy(base, handled, sizeof(base));
	if (race_start(r, rc))
		return;
	if (!filled && race_fill(r, 1))
		r->rounds = 0;
	for (i = 1; i <= r->rounds; i++) {
		/* One racer in half the rounds: two parties, two cores. */
		r->active = i % 2 ? 1 : 1 + i / 2 % r->racers;
		r->yieldy = i % 3 == 0;
		r->users = race_users(r, i);
		gate_open(&r->g, i, r->active + 1);
		gate_meet(&r->g, &r->g.arrived);
		if (r->yieldy && r->users)
			/* A user holds a block first, however loaded the host. */
			wait_for(&r->holds, 1, 200);
		else
			spin(i * 7 % 9 * 60);
		for (k = 0; k < r->nh; k++) {
			/* Every other round from the far end: users go first. */
			if (!free_settled(r, &mine, i % 2 ? k : r->nh - 1 - k))
				atomic_fetch_add(&r->owner_wins, 1);
			if (r->yieldy)
				sched_yield();
		}
		gate_meet(&r->g, &r->g.raced);
		gate_drain(&r->g, r->racers);
		race_check_round(r);
		/* Stop at the first failed round: what follows is noise. */
		if (i == r->rounds || atomic_load(&r->failures))
			break;
		if (race_fill(r, i + 1))
			break;
		race_check_live(r);
	}
	race_join(r, rc, seen);
	if (handled_mismatch(&mine, base))
		failed(r, "owner: refusals its handler did not see");
	refusals_add(seen, &mine);
}

/* ------------------------------------------------------------ owner races */

static void log_race(struct __test_metadata *_metadata, struct race *r)
{
	TH_LOG("%d rounds: owner won %ld frees, racers %ld; %ld frees refused while held, %ld acquires, %ld late uses",
	       r->rounds, atomic_load(&r->owner_wins),
	       atomic_load(&r->foreign_wins), atomic_load(&r->busy),
	       atomic_load(&r->acquires), atomic_load(&r->stale_uses));
}

/*
 * The allocating thread frees its blocks while 1..3 other threads free,
 * acquire and release the same handles.
 */
static void owner_free_run(struct __test_metadata *_metadata, uint32_t flags)
{
	struct md_device *dev = host_dev(64);
	struct refusals seen = { 0 };
	struct md_pool_stats st;
	struct tally t = { 0 };
	struct md_pool *pool = race_pool(dev, &t, flags);
	struct race r;

	ASSERT_NE(NULL, pool);
	race_init(&r, pool, 3, 3000 / TSAN_SLOWER, false);
	owner_race(&r, false, &seen);
	EXPECT_EQ(0, atomic_load(&r.failures));
	log_race(_metadata, &r);
	/* Both sides won some, and users held blocks against the owner. */
	EXPECT_LT(0, atomic_load(&r.owner_wins));
	EXPECT_LT(0, atomic_load(&r.foreign_wins));
	EXPECT_LT(0, atomic_load(&r.busy));
	EXPECT_LT(0, atomic_load(&r.acquires));
	EXPECT_EQ(0, counts_mismatch(pool, &t, &seen, NULL, NULL));
	md_pool_stats(pool, &st);
	EXPECT_EQ(atomic_load(&r.allocs), st.total.alloc_count);
	EXPECT_EQ(st.total.alloc_count, st.total.free_count);
	EXPECT_EQ(0, st.total.current_count);
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	md_pool_destroy(pool);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
}

TEST(owner_free_against_foreign_free_acquire_release)
{
	owner_free_run(_metadata, 0);
}

TEST(owner_free_against_foreign_ops_without_thread_caches)
{
	owner_free_run(_metadata, MD_POOL_NO_TCACHE);
}

/* ------------------------------------------------------------ owner gone */

static void *alloc_and_exit(void *arg)
{
	struct race *r = arg;

	race_fill(r, r->fill_round);
	return NULL;
}

/*
 * A thread allocates a round's blocks and exits; 2..3 others free, acquire
 * and release them at once.
 */
static void owner_gone_rounds(struct race *r, struct refusals *seen,
			      int first)
{
	struct racer rc[MAX_RACERS];
	int i;

	if (race_start(r, rc))
		return;
	for (i = 1; i <= r->rounds; i++) {
		pthread_t th;

		if (i > 1 || !first) {
			r->fill_round = i;
			if (pthread_create(&th, NULL, alloc_and_exit, r)) {
				failed(r, "pthread_create");
				break;
			}
			pthread_join(th, NULL);
			if (r->nh != MAX_HANDLES)
				break;
			race_check_live(r);
		}
		r->active = 2 + i % (r->racers - 1);
		r->yieldy = i % 3 == 0;
		r->users = race_users(r, i);
		gate_open(&r->g, i, r->active);
		gate_drain(&r->g, r->racers);
		race_check_round(r);
		if (atomic_load(&r->failures))
			break;
	}
	race_join(r, rc, seen);
}

TEST(owner_gone_blocks_freed_and_used_by_others)
{
	struct md_device *dev = host_dev(64);
	struct refusals seen = { 0 };
	struct md_pool_stats st;
	struct tally t = { 0 };
	struct md_pool *pool = race_pool(dev, &t, 0);
	struct race r;

	ASSERT_NE(NULL, pool);
	race_init(&r, pool, 3, 1200 / TSAN_SLOWER, true);
	owner_gone_rounds(&r, &seen, 0);
	EXPECT_EQ(0, atomic_load(&r.failures));
	log_race(_metadata, &r);
	EXPECT_LT(0, atomic_load(&r.busy));
	EXPECT_LT(0, atomic_load(&r.acquires));
	EXPECT_EQ(0, counts_mismatch(pool, &t, &seen, NULL, NULL));
	md_pool_stats(pool, &st);
	EXPECT_EQ(atomic_load(&r.allocs), st.total.alloc_count);
	EXPECT_EQ(st.total.alloc_count, st.total.free_count);
	EXPECT_EQ(0, st.total.current_count);
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	md_pool_destroy(pool);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
}

/* ------------------------------------------------------------ reuse under old handles */

/*
 * The owner frees each block and at once allocates the same size again:
 * its bin hands the very descriptor back, in the next generation, while
 * 1..2 other threads free, acquire and release the old handle. Their
 * calls may win only before the owner's free (then the owner's free is
 * refused or waits for the release); after it, each is refused and the
 * new generation is the owner's alone: its contents, its state and its
 * holders exactly what the owner made them.
 */
struct reuse_race {
	struct md_pool *pool;
	struct gate g;
	int rounds, racers, active;
	struct md_buf old[MAX_HANDLES];
	uint64_t tag[MAX_HANDLES];
	int use[MAX_HANDLES];
	atomic_int free_wins[MAX_HANDLES];
	atomic_long early_wins, refused, same_desc;
	atomic_int owner_went;	/* the owner freed and reallocated block 0 */
	atomic_long failures;
};

struct reuse_racer {
	struct reuse_race *r;
	int id;
	pthread_t th;
	struct refusals seen;
	long mismatch;
};

static void reuse_failed(struct reuse_race *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_failed(&r->failures, atomic_load(&r->g.round), fmt, ap);
	va_end(ap);
}

static uint64_t reuse_size(int k)
{
	static const uint64_t sizes[MAX_HANDLES] = {
		64, 128, 300, 1024, 5000, 16 * KiB, 64 * KiB, 2 * MiB,
	};

	return sizes[k];
}

static void reuse_op(struct reuse_race *r, struct reuse_racer *me, int k,
		     bool do_free)
{
	const struct md_buf *b = &r->old[k];
	int err;

	if (do_free) {
		err = md_free(r->pool, b);
		if (!err) {
			atomic_fetch_add(&r->free_wins[k], 1);
			atomic_fetch_add(&r->early_wins, 1);
			return;
		}
		saw(&me->seen, OP_FREE, err);
		/* Held by the other racer, freed, or reused already. */
		if (err != -EBUSY && err != -EINVAL && err != -ESTALE)
			reuse_failed(r, "old handle %d: free %d", k, err);
		atomic_fetch_add(&r->refused, 1);
		return;
	}
	if (r->use[k] == USE_BARE) {
		err = md_buf_release(r->pool, b);
		if (err == 1) {
			atomic_fetch_add(&r->early_wins, 1);
			return;
		}
		if (err == 0 || (err != -EINVAL && err != -ESTALE)) {
			reuse_failed(r, "old handle %d: bare release %d", k,
				     err);
			return;
		}
		saw(&me->seen, OP_RELEASE, err);
		atomic_fetch_add(&r->refused, 1);
		return;
	}
	err = md_buf_acquire(r->pool, b);
	if (err) {
		saw(&me->seen, OP_ACQUIRE, err);
		if (err != -EINVAL && err != -ESTALE)
			reuse_failed(r, "old handle %d: acquire %d", k, err);
		atomic_fetch_add(&r->refused, 1);
		return;
	}
	atomic_fetch_add(&r->early_wins, 1);
	/* Won before the free: the old life, intact, until released. */
	if (!stamped(b, r->tag[k]))
		reuse_failed(r, "old handle %d acquired: not its contents", k);
	spin(100 + k * 50);
	err = md_buf_state(r->pool, b);
	if (err != MD_BLOCK_ACTIVE)
		reuse_failed(r, "old handle %d held: state %d", k, err);
	if (!stamped(b, r->tag[k]))
		reuse_failed(r, "old handle %d held: its contents changed", k);
	err = md_buf_release(r->pool, b);
	if (err != 0 && err != 1) {
		saw(&me->seen, OP_RELEASE, err);
		reuse_failed(r, "old handle %d: release while held %d", k,
			     err);
	}
}

static void *reuse_racer_fn(void *arg)
{
	struct reuse_racer *me = arg;
	struct reuse_race *r = me->r;
	long base[MD_POOL_VIOLATION_KINDS];
	int i, k, rep;

	memcpy(base, handled, sizeof(base));
	for (i = 1; gate_wait(&r->g, i, r->rounds); i++) {
		if (me->id < r->active) {
			gate_meet(&r->g, &r->g.arrived);
			/* A third of the rounds: the owner's reuse first. */
			if (i % 3 == 0)
				wait_for(&r->owner_went, 1, 200);
			for (rep = 0; rep < 4; rep++)
				for (k = 0; k < MAX_HANDLES; k++)
					reuse_op(r, me, k,
						 (rep + k + me->id + i) % 2);
			gate_meet(&r->g, &r->g.raced);
		}
		atomic_fetch_add(&r->g.finished, 1);
	}
	me->mismatch = handled_mismatch(&me->seen, base);
	return NULL;
}

TEST(owner_reallocates_while_old_handle_races)
{
	struct md_device *dev = host_dev(64);
	enum { RACERS = 2 };
	struct refusals seen = { 0 }, mine = { 0 };
	long base[MD_POOL_VIOLATION_KINDS];
	struct reuse_racer rc[RACERS];
	struct md_buf neu[MAX_HANDLES];
	struct md_pool_stats st;
	struct tally t = { 0 };
	struct md_pool *pool = race_pool(dev, &t, 0);
	struct reuse_race r = { 0 };
	long allocs = 0;
	int i, k, j, err;

	ASSERT_NE(NULL, pool);
	memcpy(base, handled, sizeof(base));
	r.pool = pool;
	r.rounds = 4000 / TSAN_SLOWER;
	r.racers = RACERS;
	for (k = 0; k < MAX_HANDLES; k++) {
		ASSERT_EQ(0, md_alloc(pool, reuse_size(k), &r.old[k]));
		allocs++;
		r.tag[k] = handle_tag(1, k);
		stamp(&r.old[k], r.tag[k]);
	}
	for (i = 0; i < RACERS; i++) {
		rc[i] = (struct reuse_racer){ .r = &r, .id = i };
		ASSERT_EQ(0, pthread_create(&rc[i].th, NULL, reuse_racer_fn,
					    &rc[i]));
	}
	for (i = 1; i <= r.rounds; i++) {
		r.active = 1 + i % 3 / 2;
		for (k = 0; k < MAX_HANDLES; k++)
			r.use[k] = (i + k) % 2 ? USE_HOLD : USE_BARE;
		gate_open(&r.g, i, r.active + 1);
		gate_meet(&r.g, &r.g.arrived);
		spin(i * 7 % 11 * 40);
		for (k = 0; k < MAX_HANDLES; k++) {
			unsigned int n = 0;

			while ((err = md_free(pool, &r.old[k])) == -EBUSY) {
				saw(&mine, OP_FREE, err);
				if (++n % 64 == 0)
					sched_yield();
				if (n == 1u << 22) {
					reuse_failed(&r, "owner's free: -EBUSY for ever");
					break;
				}
			}
			if (!err) {
				atomic_fetch_add(&r.free_wins[k], 1);
			} else {
				saw(&mine, OP_FREE, err);
				/* A racer's free came first. */
				if (err != -EINVAL)
					reuse_failed(&r, "owner's free %d", err);
			}
			if (md_alloc(pool, reuse_size(k), &neu[k])) {
				reuse_failed(&r, "owner's allocation");
				break;
			}
			allocs++;
			if (!err && neu[k].block == r.old[k].block)
				atomic_fetch_add(&r.same_desc, 1);
			stamp(&neu[k], handle_tag(i + 1, k));
			/* The owner's own user of the new life. */
			if (k % 2 && md_buf_acquire(pool, &neu[k]))
				reuse_failed(&r, "owner's acquire of its block");
			atomic_store(&r.owner_went, 1);
		}
		if (k < MAX_HANDLES)
			break;
		/* The racers may still hammer the old handles. */
		for (k = 1; k < MAX_HANDLES; k += 2)
			if (md_buf_release(pool, &neu[k]) != 1)
				reuse_failed(&r, "owner's release of its block %d",
					     k);
		gate_meet(&r.g, &r.g.raced);
		gate_drain(&r.g, RACERS);
		for (k = 0; k < MAX_HANDLES; k++) {
			int want = k % 2 ? MD_BLOCK_RELEASED : MD_BLOCK_ALLOCATED;

			if (atomic_load(&r.free_wins[k]) != 1)
				reuse_failed(&r, "block %d: %d frees won", k,
					     atomic_load(&r.free_wins[k]));
			atomic_store(&r.free_wins[k], 0);
			atomic_store(&r.owner_went, 0);
			err = md_buf_state(pool, &neu[k]);
			if (err != want)
				reuse_failed(&r, "block %d: new life's state %d, not %d",
					     k, err, want);
			if (!stamped(&neu[k], handle_tag(i + 1, k)))
				reuse_failed(&r, "block %d: new life's contents changed",
					     k);
			for (j = 0; j < k; j++)
				if (overlap(&neu[j], &neu[k]))
					reuse_failed(&r, "blocks %d and %d overlap",
						     j, k);
			r.old[k] = neu[k];
			r.tag[k] = handle_tag(i + 1, k);
		}
		if (atomic_load(&r.failures))
			break;
	}
	gate_open(&r.g, r.rounds + 1, 0);
	for (i = 0; i < RACERS; i++) {
		pthread_join(rc[i].th, NULL);
		refusals_add(&seen, &rc[i].seen);
		EXPECT_EQ(0, rc[i].mismatch);
	}
	EXPECT_EQ(0, handled_mismatch(&mine, base));
	refusals_add(&seen, &mine);
	for (k = 0; k < MAX_HANDLES; k++)
		EXPECT_EQ(0, md_free(pool, &r.old[k]));
	EXPECT_EQ(0, atomic_load(&r.failures));
	TH_LOG("%d rounds: %ld times the same descriptor back at once; racers won %ld calls before the free, %ld refused",
	       r.rounds, atomic_load(&r.same_desc),
	       atomic_load(&r.early_wins), atomic_load(&r.refused));
	/* The bin did hand the same descriptor straight back. */
	EXPECT_LT(0, atomic_load(&r.same_desc));
	EXPECT_LT(0, atomic_load(&r.early_wins));
	EXPECT_LT(0, atomic_load(&r.refused));
	EXPECT_EQ(0, counts_mismatch(pool, &t, &seen, NULL, NULL));
	md_pool_stats(pool, &st);
	EXPECT_EQ(allocs, st.total.alloc_count);
	EXPECT_EQ(0, st.total.current_count);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ a chain of threads */

#define RING 64

struct ring {
	atomic_uint head, tail;
	struct md_buf q[RING];
};

static void ring_push(struct ring *q, const struct md_buf *b)
{
	unsigned int t = atomic_load(&q->tail);

	while (t - atomic_load(&q->head) >= RING)
		sched_yield();
	q->q[t % RING] = *b;
	atomic_store(&q->tail, t + 1);
}

static void ring_pop(struct ring *q, struct md_buf *b)
{
	unsigned int h = atomic_load(&q->head), n = 0;

	while (atomic_load(&q->tail) == h)
		if (++n % 64 == 0)
			sched_yield();
		else
			relax();
	*b = q->q[h % RING];
	atomic_store(&q->head, h + 1);
}

/*
 * A allocates, B acquires and releases, C frees; A, the owner, also tries
 * to free every fourth block again just after passing it on, racing B's
 * acquire and C's free.
 */
struct chain {
	struct md_pool *pool;
	struct ring ab, bc;
	int n;
	long a_wins, a_busy, b_held, b_stale, c_wins, c_refused;
	struct refusals seen[3];
	long mismatch[3];
	atomic_long failures;
};

static void chain_failed(struct chain *c, const char *what, long n, int err)
{
	if (atomic_fetch_add(&c->failures, 1) < 8)
		fprintf(stderr, "# FAILED CHECK at block %ld: %s: %d\n", n,
			what, err);
}

static uint64_t chain_size(long n)
{
	return n % 97 == 0 ? 2 * MiB : 32 + (uint64_t)(n * 40503 % 9000);
}

static void *chain_a(void *arg)
{
	struct chain *c = arg;
	long base[MD_POOL_VIOLATION_KINDS];
	struct md_buf b, back[4];
	long n;
	int err;

	memcpy(base, handled, sizeof(base));
	for (n = 0; n < c->n; n++) {
		if (md_alloc(c->pool, chain_size(n), &b)) {
			chain_failed(c, "A: allocation", n, -ENOMEM);
			b = back[(n + 3) % 4];	/* keep the count right */
		}
		stamp(&b, handle_tag((int)n, 0));
		ring_push(&c->ab, &b);
		back[n % 4] = b;
		if (n % 4 != 3)
			continue;
		/*
		 * Its owner frees a block it passed on: the one before this
		 * (B may be holding it) or, every other time, the oldest of
		 * the four (C may be freeing it).
		 */
		err = md_free(c->pool, &back[n % 8 == 3 ? (n + 3) % 4 :
							  (n + 1) % 4]);
		if (!err) {
			c->a_wins++;
			continue;
		}
		saw(&c->seen[0], OP_FREE, err);
		if (err == -EBUSY)
			c->a_busy++;
		else if (err != -EINVAL && err != -ESTALE)
			chain_failed(c, "A: late free", n, err);
	}
	c->mismatch[0] = handled_mismatch(&c->seen[0], base);
	return NULL;
}

static void *chain_b(void *arg)
{
	struct chain *c = arg;
	long base[MD_POOL_VIOLATION_KINDS];
	struct md_buf b;
	long n;
	int err;

	memcpy(base, handled, sizeof(base));
	for (n = 0; n < c->n; n++) {
		ring_pop(&c->ab, &b);
		err = md_buf_acquire(c->pool, &b);
		if (!err) {
			c->b_held++;
			if (!stamped(&b, handle_tag((int)n, 0)))
				chain_failed(c, "B: held block's contents", n, 0);
			err = md_buf_state(c->pool, &b);
			if (err != MD_BLOCK_ACTIVE)
				chain_failed(c, "B: held block's state", n, err);
			err = md_buf_release(c->pool, &b);
			if (err != 1)
				chain_failed(c, "B: release", n, err);
		} else {
			saw(&c->seen[1], OP_ACQUIRE, err);
			/* Its owner freed it first. */
			if (err == -ESTALE)
				c->b_stale++;
			else
				chain_failed(c, "B: acquire", n, err);
		}
		ring_push(&c->bc, &b);
	}
	c->mismatch[1] = handled_mismatch(&c->seen[1], base);
	return NULL;
}

static void *chain_c(void *arg)
{
	struct chain *c = arg;
	long base[MD_POOL_VIOLATION_KINDS];
	struct md_buf b;
	long n;
	int err;

	memcpy(base, handled, sizeof(base));
	for (n = 0; n < c->n; n++) {
		ring_pop(&c->bc, &b);
		err = md_free(c->pool, &b);
		if (!err) {
			c->c_wins++;
			if (n % 16)
				continue;
			/* Freed: every further call is refused. */
			err = md_buf_acquire(c->pool, &b);
			saw(&c->seen[2], OP_ACQUIRE, err);
			if (err != -ESTALE)
				chain_failed(c, "C: acquire after free", n, err);
			err = md_free(c->pool, &b);
			saw(&c->seen[2], OP_FREE, err);
			if (err != -EINVAL && err != -ESTALE)
				chain_failed(c, "C: second free", n, err);
			continue;
		}
		saw(&c->seen[2], OP_FREE, err);
		/* The owner's late free won (and it may have reused it). */
		if (err == -EINVAL || err == -ESTALE)
			c->c_refused++;
		else
			chain_failed(c, "C: free", n, err);
	}
	c->mismatch[2] = handled_mismatch(&c->seen[2], base);
	return NULL;
}

TEST(blocks_through_a_chain_of_threads)
{
	struct md_device *dev = host_dev(64);
	struct refusals seen = { 0 };
	struct md_pool_stats st;
	struct tally t = { 0 };
	struct md_pool *pool = race_pool(dev, &t, 0);
	struct chain *c = calloc(1, sizeof(*c));
	void *(*fn[3])(void *) = { chain_a, chain_b, chain_c };
	pthread_t th[3];
	int i;

	ASSERT_NE(NULL, pool);
	ASSERT_NE(NULL, c);
	c->pool = pool;
	c->n = 60000 / TSAN_SLOWER;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fn[i], c));
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, c->mismatch[i]);
		refusals_add(&seen, &c->seen[i]);
	}
	EXPECT_EQ(0, atomic_load(&c->failures));
	TH_LOG("%d blocks: owner's late free won %ld (%ld refused while held), B held %ld (%ld stale), C freed %ld (%ld refused)",
	       c->n, c->a_wins, c->a_busy, c->b_held, c->b_stale, c->c_wins,
	       c->c_refused);
	/* Every block freed exactly once: by its owner or by C. */
	EXPECT_EQ(c->n, c->a_wins + c->c_wins);
	EXPECT_EQ(c->a_wins, c->c_refused);
	EXPECT_EQ(c->n, c->b_held + c->b_stale);
	EXPECT_LE(c->b_stale, c->a_wins);
	EXPECT_LT(0, c->c_wins);
	EXPECT_EQ(0, counts_mismatch(pool, &t, &seen, NULL, NULL));
	md_pool_stats(pool, &st);
	EXPECT_EQ(c->n, st.total.alloc_count);
	EXPECT_EQ(c->n, st.total.free_count);
	EXPECT_EQ(0, st.total.current_count);
	md_pool_destroy(pool);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
	free(c);
}

/* ------------------------------------------------------------ fork */

struct fork_helper {
	struct race *r;
	atomic_int filled, go;
	bool park;
};

/* Allocates the owner-gone race's first blocks; parks or exits. */
static void *fork_helper_fn(void *arg)
{
	struct fork_helper *h = arg;

	race_fill(h->r, 1);
	atomic_store(&h->filled, 1);
	while (h->park && !atomic_load(&h->go))
		usleep(1000);
	return NULL;
}

/*
 * What each process does after fork(), on its own copy of the pool and
 * of blocks allocated before: the owner (this thread, in both) frees its
 * blocks against racers, and blocks of a thread that is parked in the
 * parent and does not exist in the child are raced by others. Return:
 * the number of failed checks.
 */
static long after_fork(struct md_pool *pool, struct tally *t,
		       struct race *own, struct race *gone, const char *who)
{
	long t0[MD_POOL_VIOLATION_KINDS];
	struct refusals seen = { 0 };
	struct md_pool_stats st0, st;
	long bad;
	int k;

	md_pool_stats(pool, &st0);
	for (k = 0; k < MD_POOL_VIOLATION_KINDS; k++)
		t0[k] = atomic_load(&t->kind[k]);
	owner_race(own, true, &seen);
	owner_gone_rounds(gone, &seen, 1);
	bad = atomic_load(&own->failures) + atomic_load(&gone->failures);
	bad += counts_mismatch(pool, t, &seen, &st0, t0);
	md_pool_stats(pool, &st);
	if (st.total.current_count || st.total.alloc_count !=
	    st0.total.alloc_count + atomic_load(&own->allocs) +
	    atomic_load(&gone->allocs) - 2 * MAX_HANDLES) {
		fprintf(stderr, "# %s: %llu blocks live, %llu allocated\n",
			who, (unsigned long long)st.total.current_count,
			(unsigned long long)st.total.alloc_count);
		bad++;
	}
	if (atomic_load(&own->busy) == 0 || atomic_load(&own->acquires) == 0) {
		fprintf(stderr, "# %s: the users never held a block\n", who);
		bad++;
	}
	fprintf(stderr, "# %s: %d + %d rounds, %ld failed checks\n", who,
		own->rounds, gone->rounds, bad);
	return bad;
}

TEST(fork_child_and_parent_race_their_copies)
{
	struct md_device *dev = host_dev(64);
	struct refusals warm = { 0 };
	struct tally t = { 0 };
	struct md_pool *pool = race_pool(dev, &t, 0);
	struct race *r = calloc(3, sizeof(*r));
	struct fork_helper h = { 0 };
	pthread_t th;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, pool);
	ASSERT_NE(NULL, r);
	/* Foreign threads used the pool (and any handshake) before fork. */
	race_init(&r[0], pool, 3, 200 / TSAN_SLOWER, false);
	owner_race(&r[0], false, &warm);
	ASSERT_EQ(0, atomic_load(&r[0].failures));
	ASSERT_EQ(0, counts_mismatch(pool, &t, &warm, NULL, NULL));

	race_init(&r[1], pool, 3, 600 / TSAN_SLOWER, false);
	race_init(&r[2], pool, 3, 150 / TSAN_SLOWER, true);
	ASSERT_EQ(0, race_fill(&r[1], 1));
	/*
	 * A thread of the parent allocates blocks and stays (parked, in no
	 * call of the pool): the child has its blocks but not the thread.
	 * ThreadSanitizer cannot start threads in the child of a process
	 * with several: there it exits first.
	 */
#ifdef __SANITIZE_THREAD__
	h.park = false;
#else
	h.park = true;
#endif
	h.r = &r[2];
	ASSERT_EQ(0, pthread_create(&th, NULL, fork_helper_fn, &h));
	while (!atomic_load(&h.filled))
		sched_yield();
	if (!h.park)
		pthread_join(th, NULL);
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Never outlive the test, nor hang it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(25);
		_exit(after_fork(pool, &t, &r[1], &r[2], "child") ? 1 : 0);
	}
	EXPECT_EQ(0, after_fork(pool, &t, &r[1], &r[2], "parent"));
	atomic_store(&h.go, 1);
	if (h.park)
		pthread_join(th, NULL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	md_pool_destroy(pool);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
	free(r);
}

TEST_HARNESS_MAIN
