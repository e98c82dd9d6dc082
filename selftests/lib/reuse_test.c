// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the reuse protocol's state machine (lib/reuse.c). Every
 * operation in every state, legal or not (result, the word afterwards, the
 * violation counter and handler); holders; generations; and threads racing
 * on one block, with counts that must add up. Also built with
 * -fsanitize=thread (build/selftests/lib-tsan/reuse_test): the threads
 * write plain memory while they hold a block and read it after the
 * protocol hands the block over, so weaker ordering than acq_rel in the
 * library is a ThreadSanitizer report.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <metadef/reuse.h>

#include "random.h"
#include "reuse_word.h"
#include "kselftest_harness.h"

/* The documented layout: state:8 | holders:24 | generation:32. */
static uint64_t pack(unsigned int state, uint32_t holders, uint32_t gen)
{
	return (uint64_t)state | (uint64_t)holders << 8 | (uint64_t)gen << 32;
}

static uint64_t word(struct md_block_sync *b)
{
	return atomic_load(w_word(b));
}

static void set_word(struct md_block_sync *b, uint64_t w)
{
	atomic_store(w_word(b), w);
}

/* What the handler saw. Called under the library's lock: no lock here. */
struct seen {
	uint64_t calls;
	struct md_reuse_violation last;
};

static void record(const struct md_reuse_violation *v, void *arg)
{
	struct seen *s = arg;

	s->calls++;
	s->last = *v;
}

enum op { ACQ, ACQ_GEN, ACQ_STALE, REL, RECYCLE, REUSE, NOPS };

static const char *const op_names[NOPS] = {
	"acquire", "acquire_gen", "acquire_gen(stale)", "release", "recycle",
	"reuse",
};

static int run_op(struct md_block_sync *b, enum op op, uint32_t gen)
{
	switch (op) {
	case ACQ:
		return md_block_sync_acquire(b);
	case ACQ_GEN:
		return md_block_sync_acquire_gen(b, gen);
	case ACQ_STALE:
		return md_block_sync_acquire_gen(b, gen - 1);
	case REL:
		return md_block_sync_release(b);
	case RECYCLE:
		return md_block_sync_recycle(b);
	case REUSE:
		return md_block_sync_reuse(b);
	default:
		return -1;
	}
}

static enum md_reuse_op reported_op(enum op op)
{
	switch (op) {
	case ACQ:
	case ACQ_GEN:
	case ACQ_STALE:
		return MD_REUSE_ACQUIRE;
	case REL:
		return MD_REUSE_RELEASE;
	case RECYCLE:
		return MD_REUSE_RECYCLE;
	default:
		return MD_REUSE_REUSE;
	}
}

#define MAXH MD_BLOCK_MAX_HOLDERS
#define KEEP 0x100		/* the word must not change */

struct row {
	unsigned int state;
	uint32_t holders;
	/*
	 * Per operation: the result, and the state/holders after it. Every
	 * -EINVAL is a refusal, to be counted and reported; -ESTALE is not.
	 */
	struct {
		int ret;
		unsigned int state;
		uint32_t holders;
	} r[NOPS];
};

#define REFUSED { -EINVAL, KEEP, 0 }
#define STALE { -ESTALE, KEEP, 0 }

/*
 * Every state the word can be in, the legal ones and some it can only
 * reach through corruption (or never being initialised), against every
 * operation. Reuse bumps the generation; nothing else touches it.
 */
static const struct row table[] = {
	{ MD_BLOCK_ALLOCATED, 0, {
		[ACQ] = { 0, MD_BLOCK_ACTIVE, 1 },
		[ACQ_GEN] = { 0, MD_BLOCK_ACTIVE, 1 },
		[ACQ_STALE] = STALE,
		[REL] = { 1, MD_BLOCK_RELEASED, 0 },	/* never used */
		[RECYCLE] = REFUSED,
		[REUSE] = REFUSED } },
	{ MD_BLOCK_ACTIVE, 1, {
		[ACQ] = { 0, MD_BLOCK_ACTIVE, 2 },
		[ACQ_GEN] = { 0, MD_BLOCK_ACTIVE, 2 },
		[ACQ_STALE] = STALE,
		[REL] = { 1, MD_BLOCK_RELEASED, 0 },
		[RECYCLE] = REFUSED,
		[REUSE] = REFUSED } },
	{ MD_BLOCK_ACTIVE, 2, {
		[ACQ] = { 0, MD_BLOCK_ACTIVE, 3 },
		[ACQ_GEN] = { 0, MD_BLOCK_ACTIVE, 3 },
		[ACQ_STALE] = STALE,
		[REL] = { 0, MD_BLOCK_ACTIVE, 1 },
		[RECYCLE] = REFUSED,
		[REUSE] = REFUSED } },
	{ MD_BLOCK_ACTIVE, MAXH, {
		[ACQ] = REFUSED,		/* holder count full */
		[ACQ_GEN] = REFUSED,
		[ACQ_STALE] = STALE,
		[REL] = { 0, MD_BLOCK_ACTIVE, MAXH - 1 },
		[RECYCLE] = REFUSED,
		[REUSE] = REFUSED } },
	{ MD_BLOCK_RELEASED, 0, {
		[ACQ] = REFUSED,		/* use after release */
		[ACQ_GEN] = REFUSED,
		[ACQ_STALE] = STALE,
		[REL] = REFUSED,		/* double release */
		[RECYCLE] = { 0, MD_BLOCK_RECYCLED, 0 },
		[REUSE] = REFUSED } },
	{ MD_BLOCK_RECYCLED, 0, {
		[ACQ] = REFUSED,		/* use after free */
		[ACQ_GEN] = REFUSED,
		[ACQ_STALE] = STALE,
		[REL] = REFUSED,
		[RECYCLE] = REFUSED,
		[REUSE] = { 0, MD_BLOCK_ALLOCATED, 0 } } },
	/* Words the API never produces: everything is refused. */
	{ 0, 0, { REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
	{ 5, 0, { REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
	{ 0xff, 7, { REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
	{ MD_BLOCK_ACTIVE, 0,
		{ REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
	{ MD_BLOCK_ALLOCATED, 3,
		{ REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
	{ MD_BLOCK_RELEASED, 1,
		{ REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
	{ MD_BLOCK_RECYCLED, 2,
		{ REFUSED, REFUSED, STALE, REFUSED, REFUSED, REFUSED } },
};

TEST(every_state_every_operation)
{
	static const uint32_t gens[] = { 0, 1, 0x12345678, UINT32_MAX };
	struct seen seen = { 0 };
	struct md_block_sync b;
	size_t i, g;
	int op, checked = 0;

	EXPECT_TRUE(md_reuse_set_handler(record, &seen) == NULL);
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct row *t = &table[i];

		for (g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
			for (op = 0; op < NOPS; op++) {
				uint32_t gen = gens[g];
				uint64_t before = pack(t->state, t->holders, gen);
				uint64_t v0 = md_reuse_violations();
				uint64_t c0 = seen.calls;
				int want = t->r[op].ret, ret;
				int viol = want == -EINVAL;
				uint64_t after;

				if (t->r[op].state == KEEP)
					after = before;
				else
					after = pack(t->r[op].state,
						     t->r[op].holders,
						     gen + (op == REUSE));

				set_word(&b, before);
				ret = run_op(&b, op, gen);
/* Said only when an assertion fails. */
#define CTX TH_LOG("state %u holders %u gen %u: %s", t->state, \
		   t->holders, gen, op_names[op])
				ASSERT_EQ(want, ret) CTX;
				ASSERT_EQ(after, word(&b)) CTX;
				ASSERT_EQ(v0 + viol, md_reuse_violations()) CTX;
				ASSERT_EQ(c0 + viol, seen.calls) CTX;
				if (viol) {
					ASSERT_TRUE(seen.last.block == &b) CTX;
					ASSERT_EQ(reported_op(op),
						  seen.last.op) CTX;
					ASSERT_EQ(t->state, seen.last.state) CTX;
					ASSERT_EQ(t->holders,
						  seen.last.holders) CTX;
					ASSERT_EQ(gen, seen.last.generation) CTX;
				}
#undef CTX
				checked++;
			}
		}
	}
	/* 13 rows x 4 generations x 6 operations. */
	ASSERT_EQ(13 * 4 * NOPS, checked);
	EXPECT_TRUE(md_reuse_set_handler(NULL, NULL) == record);
}

TEST(life_cycle_and_generations)
{
	struct md_block_sync b;
	uint32_t gen;
	int round;

	md_block_sync_init(&b);
	ASSERT_EQ(pack(MD_BLOCK_ALLOCATED, 0, 0), word(&b));
	ASSERT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(&b));
	ASSERT_EQ(0, md_block_sync_holders(&b));
	ASSERT_EQ(0, md_block_sync_generation(&b));

	for (round = 0; round < 5; round++) {
		gen = md_block_sync_generation(&b);
		ASSERT_EQ((uint32_t)round, gen);
		ASSERT_EQ(0, md_block_sync_acquire_gen(&b, gen));
		ASSERT_EQ(MD_BLOCK_ACTIVE, md_block_sync_state(&b));
		ASSERT_EQ(1, md_block_sync_holders(&b));
		ASSERT_EQ(1, md_block_sync_release(&b));
		ASSERT_EQ(MD_BLOCK_RELEASED, md_block_sync_state(&b));
		ASSERT_EQ(0, md_block_sync_recycle(&b));
		ASSERT_EQ(MD_BLOCK_RECYCLED, md_block_sync_state(&b));
		ASSERT_EQ(gen, md_block_sync_generation(&b));
		ASSERT_EQ(0, md_block_sync_reuse(&b));
		ASSERT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(&b));
		ASSERT_EQ(gen + 1, md_block_sync_generation(&b));
		/* A caller that remembers the old generation is told. */
		ASSERT_EQ(-ESTALE, md_block_sync_acquire_gen(&b, gen));
		ASSERT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(&b));
	}
	ASSERT_EQ(0, md_reuse_violations());

	/* The generation wraps; the state and holders are not disturbed. */
	set_word(&b, pack(MD_BLOCK_RECYCLED, 0, UINT32_MAX));
	ASSERT_EQ(0, md_block_sync_reuse(&b));
	ASSERT_EQ(pack(MD_BLOCK_ALLOCATED, 0, 0), word(&b));
	ASSERT_EQ(-ESTALE, md_block_sync_acquire_gen(&b, UINT32_MAX));
	ASSERT_EQ(0, md_block_sync_acquire_gen(&b, 0));

	/* init starts over from anything. */
	set_word(&b, pack(MD_BLOCK_RECYCLED, 9, 77));
	md_block_sync_init(&b);
	ASSERT_EQ(pack(MD_BLOCK_ALLOCATED, 0, 0), word(&b));
	ASSERT_EQ(0, md_reuse_violations());
}

TEST(holders_counted)
{
	struct md_block_sync b;
	uint32_t i, n = 1000;

	md_block_sync_init(&b);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, md_block_sync_acquire(&b));
		ASSERT_EQ(i + 1, md_block_sync_holders(&b));
	}
	/* Only the last holder's release makes it RELEASED. */
	for (i = n; i > 1; i--) {
		ASSERT_EQ(0, md_block_sync_release(&b));
		ASSERT_EQ(MD_BLOCK_ACTIVE, md_block_sync_state(&b));
		ASSERT_EQ(i - 1, md_block_sync_holders(&b));
	}
	ASSERT_EQ(1, md_block_sync_release(&b));
	ASSERT_EQ(MD_BLOCK_RELEASED, md_block_sync_state(&b));
	ASSERT_EQ(0, md_block_sync_holders(&b));
	/* One release too many is a double release. */
	ASSERT_EQ(-EINVAL, md_block_sync_release(&b));
	ASSERT_EQ(1, md_reuse_violations());

	/* The last holder the counter fits. */
	set_word(&b, pack(MD_BLOCK_ACTIVE, MAXH - 1, 3));
	ASSERT_EQ(0, md_block_sync_acquire(&b));
	ASSERT_EQ(MAXH, md_block_sync_holders(&b));
	ASSERT_EQ(-EINVAL, md_block_sync_acquire(&b));
	ASSERT_EQ(pack(MD_BLOCK_ACTIVE, MAXH, 3), word(&b));
	ASSERT_EQ(2, md_reuse_violations());
}

TEST(names)
{
	EXPECT_STREQ("allocated", md_block_state_name(MD_BLOCK_ALLOCATED));
	EXPECT_STREQ("active", md_block_state_name(MD_BLOCK_ACTIVE));
	EXPECT_STREQ("released", md_block_state_name(MD_BLOCK_RELEASED));
	EXPECT_STREQ("recycled", md_block_state_name(MD_BLOCK_RECYCLED));
	EXPECT_STREQ("invalid", md_block_state_name(0));
	EXPECT_STREQ("invalid", md_block_state_name(5));
	EXPECT_STREQ("init", md_reuse_op_name(MD_REUSE_INIT));
	EXPECT_STREQ("acquire", md_reuse_op_name(MD_REUSE_ACQUIRE));
	EXPECT_STREQ("release", md_reuse_op_name(MD_REUSE_RELEASE));
	EXPECT_STREQ("recycle", md_reuse_op_name(MD_REUSE_RECYCLE));
	EXPECT_STREQ("reuse", md_reuse_op_name(MD_REUSE_REUSE));
	EXPECT_STREQ("invalid", md_reuse_op_name(MD_REUSE_REUSE + 1));
	EXPECT_STREQ("invalid", md_reuse_op_name((enum md_reuse_op)-1));
}

static void count_only(const struct md_reuse_violation *v, void *arg)
{
	(*(int *)arg)++;
}

/* A handler that breaks the protocol itself: no deadlock, no recursion. */
static void misbehave(const struct md_reuse_violation *v, void *arg)
{
	struct md_block_sync *other = arg;

	(void)md_block_sync_recycle(other);	/* refused: ALLOCATED */
}

TEST(handler_replaced_and_reentered)
{
	struct md_block_sync b, other;
	int a = 0, c = 0;

	md_block_sync_init(&b);
	md_block_sync_init(&other);
	ASSERT_TRUE(md_reuse_set_handler(count_only, &a) == NULL);
	ASSERT_EQ(-EINVAL, md_block_sync_reuse(&b));
	ASSERT_TRUE(md_reuse_set_handler(count_only, &c) == count_only);
	ASSERT_EQ(-EINVAL, md_block_sync_reuse(&b));
	ASSERT_EQ(1, a);
	ASSERT_EQ(1, c);
	/* The default reports nothing, but the counter still counts. */
	ASSERT_TRUE(md_reuse_set_handler(NULL, NULL) == count_only);
	ASSERT_EQ(-EINVAL, md_block_sync_reuse(&b));
	ASSERT_EQ(1, a);
	ASSERT_EQ(1, c);
	ASSERT_EQ(3, md_reuse_violations());

	ASSERT_TRUE(md_reuse_set_handler(misbehave, &other) == NULL);
	ASSERT_EQ(-EINVAL, md_block_sync_recycle(&b));
	/* Both refusals counted, the handler's own one not reported. */
	ASSERT_EQ(5, md_reuse_violations());
	ASSERT_EQ(pack(MD_BLOCK_ALLOCATED, 0, 0), word(&other));
	ASSERT_TRUE(md_reuse_set_handler(NULL, NULL) == misbehave);
}

/* ------------------------------------------------------------ threads */

#define NTHREADS 8

static uint64_t violations_seen;	/* by the handler, under its lock */

static void count_violation(const struct md_reuse_violation *v, void *arg)
{
	violations_seen++;
}

/*
 * Every thread takes a base hold, then hammers acquire/release pairs
 * (the block can never reach RELEASED in between) and writes its own slot
 * of a plain array while holding; the main thread drops the first hold
 * once everyone has theirs. Exactly one release per round returns 1, and
 * the thread that sees it reads every slot: the other threads' writes must
 * be visible (acq_rel), in plain memory, which ThreadSanitizer checks.
 */
struct hammer {
	struct md_block_sync b;
	pthread_barrier_t start, based, done;
	int rounds, iters;
	uint64_t slot[NTHREADS + 1];	/* plain, written while holding */
	_Atomic int last_release;	/* releases that returned 1 */
	_Atomic int errors;
	uint64_t checked;		/* by the last releaser only */
};

struct hammer_arg {
	struct hammer *h;
	int id;
};

static void last_holder(struct hammer *h, int round)
{
	int t;

	/* Only the last holder gets here: it owns the block now. */
	for (t = 0; t <= NTHREADS; t++) {
		uint64_t want = t == NTHREADS ? (uint64_t)round + 1 :
			(uint64_t)(round + 1) * h->iters;

		if (h->slot[t] != want)
			atomic_fetch_add(&h->errors, 1);
	}
	h->checked++;
}

static void *hammer_thread(void *p)
{
	struct hammer_arg *arg = p;
	struct hammer *h = arg->h;
	int round, i, r;

	for (round = 0; round < h->rounds; round++) {
		pthread_barrier_wait(&h->start);
		if (md_block_sync_acquire(&h->b))
			atomic_fetch_add(&h->errors, 1);
		pthread_barrier_wait(&h->based);
		for (i = 0; i < h->iters; i++) {
			if (md_block_sync_acquire(&h->b))
				atomic_fetch_add(&h->errors, 1);
			h->slot[arg->id]++;
			if (md_block_sync_release(&h->b) != 0)
				atomic_fetch_add(&h->errors, 1);
		}
		r = md_block_sync_release(&h->b);
		if (r == 1) {
			atomic_fetch_add(&h->last_release, 1);
			last_holder(h, round);
		} else if (r) {
			atomic_fetch_add(&h->errors, 1);
		}
		pthread_barrier_wait(&h->done);
	}
	return NULL;
}

TEST(threads_one_last_release)
{
	struct hammer h = { .rounds = 200, .iters = 500 };
	struct hammer_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	int t, round, r, last_main = 0;

	md_reuse_set_handler(count_violation, NULL);
	md_block_sync_init(&h.b);
	pthread_barrier_init(&h.start, NULL, NTHREADS + 1);
	pthread_barrier_init(&h.based, NULL, NTHREADS + 1);
	pthread_barrier_init(&h.done, NULL, NTHREADS + 1);
	for (t = 0; t < NTHREADS; t++) {
		args[t] = (struct hammer_arg){ &h, t };
		ASSERT_EQ(0, pthread_create(&th[t], NULL, hammer_thread,
					    &args[t]));
	}
	for (round = 0; round < h.rounds; round++) {
		/* The main thread's hold keeps the block ACTIVE. */
		ASSERT_EQ(0, md_block_sync_acquire(&h.b));
		h.slot[NTHREADS]++;
		pthread_barrier_wait(&h.start);
		pthread_barrier_wait(&h.based);
		r = md_block_sync_release(&h.b);
		if (r == 1) {
			last_main++;
			atomic_fetch_add(&h.last_release, 1);
			last_holder(&h, round);
		} else {
			ASSERT_EQ(0, r);
		}
		pthread_barrier_wait(&h.done);
		/* Exactly one release of the round made it RELEASED. */
		ASSERT_EQ(round + 1, atomic_load(&h.last_release));
		ASSERT_EQ(MD_BLOCK_RELEASED, md_block_sync_state(&h.b));
		ASSERT_EQ(0, md_block_sync_holders(&h.b));
		ASSERT_EQ(0, md_block_sync_recycle(&h.b));
		ASSERT_EQ(0, md_block_sync_reuse(&h.b));
		ASSERT_EQ((uint32_t)round + 1, md_block_sync_generation(&h.b));
	}
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	ASSERT_EQ(0, atomic_load(&h.errors));
	ASSERT_EQ(h.rounds, h.checked);
	ASSERT_EQ(0, md_reuse_violations());
	ASSERT_EQ(0, violations_seen);
	TH_LOG("%d rounds, the main thread released last in %d", h.rounds,
	       last_main);
}

/*
 * No base holds: every thread loops acquire -> release while others do the
 * same, so at some point one release ends the block's life and every later
 * acquire is refused (use after release). Counts add up: acquires that
 * worked = releases that worked, exactly one release returned 1, and every
 * refused acquire is one violation, counted and reported.
 */
struct race {
	struct md_block_sync b;
	pthread_barrier_t go;
	_Atomic uint64_t acq_ok, acq_refused, rel_ok, rel_last, other;
	int iters;
};

static void *race_thread(void *p)
{
	struct race *r = p;
	int i, ret;

	pthread_barrier_wait(&r->go);
	for (i = 0; i < r->iters; i++) {
		ret = md_block_sync_acquire(&r->b);
		if (ret == -EINVAL) {
			atomic_fetch_add(&r->acq_refused, 1);
			continue;
		}
		if (ret) {
			atomic_fetch_add(&r->other, 1);
			continue;
		}
		atomic_fetch_add(&r->acq_ok, 1);
		ret = md_block_sync_release(&r->b);
		if (ret == 1)
			atomic_fetch_add(&r->rel_last, 1);
		else if (ret == 0)
			atomic_fetch_add(&r->rel_ok, 1);
		else
			atomic_fetch_add(&r->other, 1);
	}
	return NULL;
}

TEST(threads_acquire_release_race)
{
	struct race r = { .iters = 2000 };
	pthread_t th[NTHREADS];
	int t, round, rounds = 50;
	uint64_t total_refused = 0;

	md_reuse_set_handler(count_violation, NULL);
	for (round = 0; round < rounds; round++) {
		md_block_sync_init(&r.b);
		atomic_store(&r.acq_ok, 0);
		atomic_store(&r.acq_refused, 0);
		atomic_store(&r.rel_ok, 0);
		atomic_store(&r.rel_last, 0);
		pthread_barrier_init(&r.go, NULL, NTHREADS);
		for (t = 0; t < NTHREADS; t++)
			ASSERT_EQ(0, pthread_create(&th[t], NULL, race_thread,
						    &r));
		for (t = 0; t < NTHREADS; t++)
			pthread_join(th[t], NULL);
		pthread_barrier_destroy(&r.go);

		ASSERT_EQ(0, atomic_load(&r.other));
		ASSERT_EQ(1, atomic_load(&r.rel_last));
		ASSERT_EQ(atomic_load(&r.acq_ok),
			  atomic_load(&r.rel_ok) + atomic_load(&r.rel_last));
		ASSERT_EQ((uint64_t)NTHREADS * r.iters,
			  atomic_load(&r.acq_ok) + atomic_load(&r.acq_refused));
		ASSERT_EQ(MD_BLOCK_RELEASED, md_block_sync_state(&r.b));
		ASSERT_EQ(0, md_block_sync_holders(&r.b));
		total_refused += atomic_load(&r.acq_refused);
		ASSERT_EQ(total_refused, md_reuse_violations());
		ASSERT_EQ(total_refused, violations_seen);
	}
}

/*
 * Many threads race to recycle one RELEASED block, then to reuse it:
 * exactly one wins each, the others are refused and reported, and the
 * generation moves by exactly one per round.
 */
struct move_race {
	struct md_block_sync b;
	pthread_barrier_t go, mid, end;
	int rounds;
	_Atomic int recycled, reused, refused, other;
	_Atomic int stale, acq_gen_ok;
	uint32_t gen0;			/* written before go, read after */
};

static void *move_thread(void *p)
{
	struct move_race *m = p;
	int round, ret;

	for (round = 0; round < m->rounds; round++) {
		pthread_barrier_wait(&m->go);
		ret = md_block_sync_recycle(&m->b);
		if (!ret)
			atomic_fetch_add(&m->recycled, 1);
		else if (ret == -EINVAL)
			atomic_fetch_add(&m->refused, 1);
		else
			atomic_fetch_add(&m->other, 1);
		pthread_barrier_wait(&m->mid);
		ret = md_block_sync_reuse(&m->b);
		if (!ret)
			atomic_fetch_add(&m->reused, 1);
		else if (ret == -EINVAL)
			atomic_fetch_add(&m->refused, 1);
		else
			atomic_fetch_add(&m->other, 1);
		/* Reused behind the back of whoever remembers gen0. */
		ret = md_block_sync_acquire_gen(&m->b, m->gen0);
		if (ret == -ESTALE)
			atomic_fetch_add(&m->stale, 1);
		else
			atomic_fetch_add(&m->other, 1);
		ret = md_block_sync_acquire_gen(&m->b, m->gen0 + 1);
		if (!ret) {
			atomic_fetch_add(&m->acq_gen_ok, 1);
			if (md_block_sync_release(&m->b) < 0)
				atomic_fetch_add(&m->other, 1);
		}
		pthread_barrier_wait(&m->end);
	}
	return NULL;
}

TEST(threads_recycle_reuse_one_winner)
{
	struct move_race m = { .rounds = 300 };
	pthread_t th[NTHREADS];
	int t, round;

	md_reuse_set_handler(count_violation, NULL);
	pthread_barrier_init(&m.go, NULL, NTHREADS + 1);
	pthread_barrier_init(&m.mid, NULL, NTHREADS);
	pthread_barrier_init(&m.end, NULL, NTHREADS + 1);
	md_block_sync_init(&m.b);
	for (t = 0; t < NTHREADS; t++)
		ASSERT_EQ(0, pthread_create(&th[t], NULL, move_thread, &m));
	for (round = 0; round < m.rounds; round++) {
		/* Put the block in RELEASED, with a hold on the way. */
		ASSERT_EQ(0, md_block_sync_acquire(&m.b));
		ASSERT_EQ(1, md_block_sync_release(&m.b));
		m.gen0 = md_block_sync_generation(&m.b);
		ASSERT_EQ((uint32_t)round, m.gen0);
		atomic_store(&m.recycled, 0);
		atomic_store(&m.reused, 0);
		pthread_barrier_wait(&m.go);
		pthread_barrier_wait(&m.end);
		ASSERT_EQ(1, atomic_load(&m.recycled));
		ASSERT_EQ(1, atomic_load(&m.reused));
		ASSERT_EQ(0, atomic_load(&m.other));
		ASSERT_EQ((uint32_t)round + 1, md_block_sync_generation(&m.b));
		/*
		 * The first acquire_gen of the new generation always works;
		 * every one that worked was released, the last to RELEASED.
		 */
		ASSERT_LE(round + 1, atomic_load(&m.acq_gen_ok));
		ASSERT_EQ(MD_BLOCK_RELEASED, md_block_sync_state(&m.b));
		ASSERT_EQ(0, md_block_sync_holders(&m.b));
		/* Start the next round from ALLOCATED. */
		set_word(&m.b, pack(MD_BLOCK_ALLOCATED, 0, round + 1));
	}
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	/* Per round: N - 1 refused recycles and N - 1 refused reuses. */
	ASSERT_EQ(m.rounds * 2 * (NTHREADS - 1), atomic_load(&m.refused));
	ASSERT_EQ(m.rounds * NTHREADS, atomic_load(&m.stale));
	/*
	 * Refusals: those counted above, plus every acquire_gen that came
	 * after the block went RELEASED again (use after release).
	 */
	ASSERT_EQ(md_reuse_violations(), violations_seen);
	ASSERT_EQ(m.rounds * 2 * (NTHREADS - 1) +
		  (uint64_t)m.rounds * NTHREADS - atomic_load(&m.acq_gen_ok),
		  md_reuse_violations());
}

/*
 * A small pool: threads cycle random blocks through the whole protocol
 * (reuse, acquire, release, recycle), every step racing the others. Per
 * block, the counts of each transition must agree with its final state.
 */
#define NBLOCKS 4

struct pool_race {
	struct md_block_sync b[NBLOCKS];
	_Atomic uint64_t reuse_ok[NBLOCKS], acq_ok[NBLOCKS], rel_ok[NBLOCKS];
	_Atomic uint64_t rel_last[NBLOCKS], recycle_ok[NBLOCKS];
	_Atomic uint64_t refused, other;
	pthread_barrier_t go;
	int iters;
};

struct pool_arg {
	struct pool_race *p;
	uint64_t seed;
};

static void *pool_thread(void *v)
{
	struct pool_arg *a = v;
	struct pool_race *p = a->p;
	uint64_t x = a->seed;
	int i, k, ret;

	pthread_barrier_wait(&p->go);
	for (i = 0; i < p->iters; i++) {
		k = md_xorshift64(&x) % NBLOCKS;

		ret = md_block_sync_reuse(&p->b[k]);
		if (!ret)
			atomic_fetch_add(&p->reuse_ok[k], 1);
		else
			atomic_fetch_add(ret == -EINVAL ? &p->refused :
					 &p->other, 1);
		ret = md_block_sync_acquire(&p->b[k]);
		if (!ret) {
			atomic_fetch_add(&p->acq_ok[k], 1);
			ret = md_block_sync_release(&p->b[k]);
			if (ret == 1)
				atomic_fetch_add(&p->rel_last[k], 1);
			else if (!ret)
				atomic_fetch_add(&p->rel_ok[k], 1);
			else
				atomic_fetch_add(&p->other, 1);
		} else {
			atomic_fetch_add(ret == -EINVAL ? &p->refused :
					 &p->other, 1);
		}
		ret = md_block_sync_recycle(&p->b[k]);
		if (!ret)
			atomic_fetch_add(&p->recycle_ok[k], 1);
		else
			atomic_fetch_add(ret == -EINVAL ? &p->refused :
					 &p->other, 1);
	}
	return NULL;
}

TEST(threads_pool_counts_add_up)
{
	static struct pool_race p = { .iters = 20000 };
	struct pool_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	uint64_t ops = 0;
	int t, k;

	md_reuse_set_handler(count_violation, NULL);
	for (k = 0; k < NBLOCKS; k++)
		set_word(&p.b[k], pack(MD_BLOCK_RECYCLED, 0, 0));
	pthread_barrier_init(&p.go, NULL, NTHREADS);
	for (t = 0; t < NTHREADS; t++) {
		args[t] = (struct pool_arg){ &p, 0x9e3779b97f4a7c15ull * (t + 1) };
		ASSERT_EQ(0, pthread_create(&th[t], NULL, pool_thread,
					    &args[t]));
	}
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);

	ASSERT_EQ(0, atomic_load(&p.other));
	for (k = 0; k < NBLOCKS; k++) {
		uint64_t ru = atomic_load(&p.reuse_ok[k]);
		uint64_t r1 = atomic_load(&p.rel_last[k]);
		uint64_t rc = atomic_load(&p.recycle_ok[k]);
		enum md_block_state s = md_block_sync_state(&p.b[k]);

		TH_LOG("block %d: %llu reuses, %llu acquires, final %s", k,
		       (unsigned long long)ru,
		       (unsigned long long)atomic_load(&p.acq_ok[k]),
		       md_block_state_name(s));
		/* Every hold was given back. */
		ASSERT_EQ(atomic_load(&p.acq_ok[k]),
			  atomic_load(&p.rel_ok[k]) + r1);
		ASSERT_EQ(0, md_block_sync_holders(&p.b[k]));
		/* One generation per reuse. */
		ASSERT_EQ((uint32_t)ru, md_block_sync_generation(&p.b[k]));
		/* reuse -> ... -> last release -> recycle, in that order. */
		switch (s) {
		case MD_BLOCK_RECYCLED:
			ASSERT_EQ(ru, r1);
			ASSERT_EQ(ru, rc);
			break;
		case MD_BLOCK_ALLOCATED:
			ASSERT_EQ(ru, r1 + 1);
			ASSERT_EQ(ru, rc + 1);
			break;
		case MD_BLOCK_RELEASED:
			ASSERT_EQ(ru, r1);
			ASSERT_EQ(ru, rc + 1);
			break;
		default:
			ASSERT_TRUE(0) TH_LOG("block %d left %s", k,
					       md_block_state_name(s));
		}
		ASSERT_LT(0, ru);
		ops += ru + atomic_load(&p.acq_ok[k]) + rc;
	}
	/* Three attempts per iteration: each one worked or was refused. */
	ASSERT_EQ((uint64_t)NTHREADS * p.iters * 3, ops +
		  atomic_load(&p.refused));
	ASSERT_EQ(atomic_load(&p.refused), md_reuse_violations());
	ASSERT_EQ(atomic_load(&p.refused), violations_seen);
}

TEST_HARNESS_MAIN
