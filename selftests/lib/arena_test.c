// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: arenas (lib/arena.c) on the host backend. Plans made by
 * the planner are executed: every tensor is written through its CPU
 * pointer while it is alive and checked until it dies, so two tensors
 * alive together that share a byte are caught. Several plans share one
 * arena, one active at a time; every error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/arena.h>
#include <metadef/device.h>
#include <metadef/plan.h>

#include "test_util.h"
#include "kselftest_harness.h"
#include "arena_run.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

static void random_problem(struct md_problem *p, size_t n, int ids)
{
	static const uint64_t aligns[] = { 1, 8, 64, 256, 4096 };
	char name[32];
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = rnd() % 60, life = 1 + rnd() % 12;

		snprintf(name, sizeof(name), "t%zu", i);
		md_problem_add(p, ids ? name : NULL, lo, lo + life,
			       1 + rnd() % 3000, aligns[rnd() % 5]);
	}
}

/* The arena for one plan, and that plan bound and active. */
struct one {
	struct md_problem p;
	struct md_plan plan;
	struct md_arena *a;
	struct md_arena_plan *m;
};

static int one_setup(struct md_device *dev, struct one *o, size_t n)
{
	struct md_plan_ref ref;
	int err;

	random_problem(&o->p, n, 1);
	err = md_plan_solve(&o->p, NULL, &o->plan);
	if (err)
		return err;
	ref = (struct md_plan_ref){ &o->p, o->plan.offsets };
	err = md_arena_create(dev, &ref, 1, &o->a);
	if (err)
		return err;
	return md_arena_bind(o->a, &o->p, o->plan.offsets, &o->m);
}

static void one_teardown(struct one *o)
{
	md_arena_destroy(o->a);
	md_plan_free(&o->plan);
	md_problem_free(&o->p);
}

TEST(plan_executes_without_overlap)
{
	struct md_device *dev = host_dev(0);
	struct md_arena_info info;
	struct md_device_stats st;
	struct one o;
	size_t i;
	int round;

	ASSERT_NE(NULL, dev);
	for (round = 0; round < 5; round++) {
		ASSERT_EQ(0, one_setup(dev, &o, 200));
		md_arena_info(o.a, &info);
		/* One region, as large as the plan's peak needs. */
		md_device_stats(dev, &st);
		EXPECT_EQ(1, st.region_allocs - st.region_frees);
		EXPECT_EQ(info.size, st.bytes_current);
		EXPECT_EQ(o.plan.peak, info.peak);
		EXPECT_EQ((o.plan.peak + 4095) / 4096 * 4096, info.size);
		EXPECT_EQ(o.plan.peak, md_arena_plan_peak(o.m));
		EXPECT_EQ(200, md_arena_plan_size(o.m));
		EXPECT_EQ(4096, info.align);	/* the largest buffer alignment */
		EXPECT_EQ(0, info.dev_va % 4096);
		EXPECT_EQ((uintptr_t)info.cpu, info.dev_va);
		/* Reuse happened: the arena is smaller than all buffers. */
		EXPECT_GT(md_problem_total(&o.p), info.size);

		for (i = 0; i < o.p.n; i++) {
			struct md_tensor t;

			ASSERT_EQ(0, md_arena_tensor(o.m, i, &t));
			EXPECT_EQ(i, t.index);
			EXPECT_EQ(o.plan.offsets[i], t.offset);
			EXPECT_EQ(o.p.bufs[i].size, t.size);
			EXPECT_EQ(info.dev_va + t.offset, t.dev_va);
			EXPECT_EQ((char *)info.cpu + t.offset, t.cpu);
			EXPECT_EQ(0, t.dev_va % o.p.bufs[i].align);
			EXPECT_LE(t.offset + t.size, info.size);
			EXPECT_STREQ(o.p.bufs[i].id, t.id);
		}
		ASSERT_EQ(0, md_arena_activate(o.m));
		/* Every buffer finishes intact. */
		EXPECT_EQ(200, run_plan(_metadata, &o.p, o.m, round));
		ASSERT_EQ(0, md_arena_deactivate(o.m));
		one_teardown(&o);
		md_device_stats(dev, &st);
		EXPECT_EQ(0, st.bytes_current);
	}
	md_device_close(dev);
}

/* The checker itself: a plan with two live tensors overlapping fails. */
TEST(checker_catches_overlap)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p, q;
	struct md_arena *a;
	struct md_arena_plan *m;
	uint64_t good[2] = { 0, 100 }, bad[2] = { 0, 50 };
	struct md_plan_ref ref = { &p, good };

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 4, 100, 1));
	ASSERT_EQ(0, md_problem_add(&p, "b", 2, 6, 100, 1));
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	ASSERT_EQ(0, md_arena_bind(a, &p, good, &m));
	ASSERT_EQ(0, md_arena_activate(m));
	EXPECT_EQ(2, run_plan(_metadata, &p, m, 1));
	ASSERT_EQ(0, md_arena_deactivate(m));
	/* The arena refuses the bad plan... */
	EXPECT_EQ(-EEXIST, md_arena_bind(a, &p, bad, &m));
	EXPECT_EQ(NULL, m);
	/* ... which run_plan() would have caught: b's writes clobber a. */
	md_problem_init(&q);
	ASSERT_EQ(0, md_problem_add(&q, "a", 0, 4, 100, 1));
	ASSERT_EQ(0, md_problem_add(&q, "b", 4, 6, 100, 1));
	/* Same offsets, lifetimes that do not overlap: valid. */
	ASSERT_EQ(0, md_arena_bind(a, &q, bad, &m));
	ASSERT_EQ(0, md_arena_activate(m));
	EXPECT_EQ(2, run_plan(_metadata, &q, m, 2));
	ASSERT_EQ(0, md_arena_deactivate(m));
	/* Lie to the runner: check it against overlapping lifetimes. */
	EXPECT_EQ(-1, run_plan(_metadata, &p, m, 3));
	md_problem_free(&q);
	md_arena_destroy(a);
	md_problem_free(&p);
	md_device_close(dev);
}

TEST(two_plans_share_one_arena)
{
	struct md_device *dev = host_dev(MD_ALIGN_NPU);
	struct md_problem pa, pb;
	struct md_plan la, lb;
	struct md_arena *a;
	struct md_arena_plan *ma, *mb;
	struct md_arena_info info;
	struct md_tensor t;
	struct md_plan_ref refs[2];
	uint64_t big;

	ASSERT_NE(NULL, dev);
	random_problem(&pa, 100, 1);
	random_problem(&pb, 300, 1);
	ASSERT_EQ(0, md_plan_solve(&pa, NULL, &la));
	ASSERT_EQ(0, md_plan_solve(&pb, NULL, &lb));
	big = la.peak > lb.peak ? la.peak : lb.peak;
	ASSERT_NE(la.peak, lb.peak);
	refs[0] = (struct md_plan_ref){ &pa, la.offsets };
	refs[1] = (struct md_plan_ref){ &pb, lb.offsets };
	ASSERT_EQ(0, md_arena_create(dev, refs, 2, &a));
	md_arena_info(a, &info);
	/* The largest peak, not the sum. */
	EXPECT_EQ(big, info.peak);
	EXPECT_EQ((big + 4095) / 4096 * 4096, info.size);
	EXPECT_EQ(0, info.bound);

	ASSERT_EQ(0, md_arena_bind(a, &pa, la.offsets, &ma));
	ASSERT_EQ(0, md_arena_bind(a, &pb, lb.offsets, &mb));
	md_arena_info(a, &info);
	EXPECT_EQ(2, info.bound);
	EXPECT_EQ(NULL, md_arena_active(a));

	/* Both start at the arena's base. */
	ASSERT_EQ(0, md_arena_find(ma, "t0", &t));
	EXPECT_EQ(info.dev_va + la.offsets[0], t.dev_va);
	ASSERT_EQ(0, md_arena_find(mb, "t0", &t));
	EXPECT_EQ(info.dev_va + lb.offsets[0], t.dev_va);

	/* One at a time. */
	ASSERT_EQ(0, md_arena_activate(ma));
	EXPECT_TRUE(md_arena_active(a) == ma);
	EXPECT_EQ(-EALREADY, md_arena_activate(ma));
	EXPECT_EQ(-EBUSY, md_arena_activate(mb));
	EXPECT_EQ(-EINVAL, md_arena_deactivate(mb));
	EXPECT_EQ(-EBUSY, md_arena_unbind(ma));
	EXPECT_TRUE(md_arena_active(a) == ma);
	EXPECT_EQ(100, run_plan(_metadata, &pa, ma, 10));
	ASSERT_EQ(0, md_arena_deactivate(ma));
	EXPECT_EQ(-EINVAL, md_arena_deactivate(ma));

	ASSERT_EQ(0, md_arena_activate(mb));
	EXPECT_EQ(-EBUSY, md_arena_activate(ma));
	EXPECT_EQ(300, run_plan(_metadata, &pb, mb, 11));
	ASSERT_EQ(0, md_arena_deactivate(mb));

	/* And back: a's run works again after b's used the memory. */
	ASSERT_EQ(0, md_arena_activate(ma));
	EXPECT_EQ(100, run_plan(_metadata, &pa, ma, 12));
	md_arena_info(a, &info);
	EXPECT_EQ(3, info.activations);
	EXPECT_EQ(2, info.busy);

	/* Unbinding the inactive one while the other runs is fine. */
	ASSERT_EQ(0, md_arena_unbind(mb));
	md_arena_info(a, &info);
	EXPECT_EQ(1, info.bound);
	ASSERT_EQ(0, md_arena_deactivate(ma));
	ASSERT_EQ(0, md_arena_unbind(ma));
	ASSERT_EQ(0, md_arena_unbind(NULL));
	md_arena_info(a, &info);
	EXPECT_EQ(0, info.bound);

	md_arena_destroy(a);
	md_plan_free(&la);
	md_plan_free(&lb);
	md_problem_free(&pa);
	md_problem_free(&pb);
	md_device_close(dev);
}

TEST(too_small_is_enospc)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p;
	struct md_arena *a;
	struct md_arena_plan *m;
	struct md_arena_info info;
	uint64_t off[1] = { 0 };
	struct md_plan_ref ref = { &p, off };

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "x", 0, 1, 1000, 1));
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	md_arena_info(a, &info);
	EXPECT_EQ(1000, info.peak);
	ASSERT_EQ(4096, info.size);

	/* Up to the capacity fits, one byte more does not. */
	p.bufs[0].size = 4096;
	ASSERT_EQ(0, md_arena_bind(a, &p, off, &m));
	EXPECT_EQ(4096, md_arena_plan_peak(m));
	p.bufs[0].size = 4097;
	m = (struct md_arena_plan *)&m;
	EXPECT_EQ(-ENOSPC, md_arena_bind(a, &p, off, &m));
	EXPECT_EQ(NULL, m);
	p.bufs[0].size = 1;
	off[0] = 4096;
	EXPECT_EQ(-ENOSPC, md_arena_bind(a, &p, off, &m));
	/* An empty buffer may sit at the end, not beyond. */
	p.bufs[0].size = 0;
	ASSERT_EQ(0, md_arena_bind(a, &p, off, &m));
	off[0] = 4097;
	EXPECT_EQ(-ENOSPC, md_arena_bind(a, &p, off, &m));
	md_arena_info(a, &info);
	EXPECT_EQ(2, info.bound);

	md_arena_destroy(a);
	md_problem_free(&p);
	md_device_close(dev);
}

TEST(bind_refuses_bad_plans)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p;
	struct md_arena *a;
	struct md_arena_plan *m;
	uint64_t off[2] = { 0, 256 };
	struct md_plan_ref ref = { &p, off };

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 2, 256, 256));
	ASSERT_EQ(0, md_problem_add(&p, "b", 1, 3, 256, 256));
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	ASSERT_EQ(0, md_arena_bind(a, &p, off, &m));

	off[1] = 128;		/* overlaps a, and misaligned */
	EXPECT_EQ(-EINVAL, md_arena_bind(a, &p, off, &m));
	p.bufs[1].align = 1;	/* only overlapping now */
	EXPECT_EQ(-EEXIST, md_arena_bind(a, &p, off, &m));
	off[1] = 256;
	p.bufs[1].flags = MD_BUF_FIXED;	/* fixed elsewhere */
	p.bufs[1].offset = 512;
	EXPECT_EQ(-EINVAL, md_arena_bind(a, &p, off, &m));
	p.bufs[1].flags = 0;
	off[1] = UINT64_MAX - 10;	/* wraps */
	EXPECT_EQ(-EINVAL, md_arena_bind(a, &p, off, &m));
	off[1] = 256;
	EXPECT_EQ(-EINVAL, md_arena_bind(a, NULL, off, &m));
	EXPECT_EQ(-EINVAL, md_arena_bind(a, &p, NULL, &m));
	ASSERT_EQ(0, md_arena_bind(a, &p, off, &m));

	md_arena_destroy(a);
	md_problem_free(&p);
	md_device_close(dev);
}

TEST(create_errors)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p;
	struct md_arena *a = (struct md_arena *)&a;
	uint64_t off[1] = { UINT64_MAX - 10 };
	struct md_plan_ref ref = { &p, off };
	struct md_device_stats st;

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 2, 256, 1));
	EXPECT_EQ(-EINVAL, md_arena_create(dev, &ref, 0, &a));
	EXPECT_EQ(NULL, a);
	EXPECT_EQ(-EINVAL, md_arena_create(dev, NULL, 1, &a));
	EXPECT_EQ(-EINVAL, md_arena_create(dev, &ref, 1, &a));	/* wraps */
	ref.offsets = NULL;
	EXPECT_EQ(-EINVAL, md_arena_create(dev, &ref, 1, &a));
	ref = (struct md_plan_ref){ NULL, off };
	EXPECT_EQ(-EINVAL, md_arena_create(dev, &ref, 1, &a));
	/* Larger than the address space: the device's error. */
	off[0] = 1ULL << 62;
	ref = (struct md_plan_ref){ &p, off };
	EXPECT_EQ(-ENOMEM, md_arena_create(dev, &ref, 1, &a));
	EXPECT_EQ(NULL, a);
	md_device_stats(dev, &st);
	EXPECT_EQ(0, st.region_allocs);
	EXPECT_EQ(0, st.bytes_current);
	md_problem_free(&p);
	md_device_close(dev);
}

TEST(empty_plans)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p;
	struct md_arena *a;
	struct md_arena_plan *m;
	struct md_arena_info info;
	struct md_tensor t;
	uint64_t off[1] = { 0 };
	struct md_plan_ref ref = { &p, off };

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	/* No buffers at all: one page, a plan with nothing in it. */
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	md_arena_info(a, &info);
	EXPECT_EQ(0, info.peak);
	EXPECT_EQ(4096, info.size);
	ASSERT_EQ(0, md_arena_bind(a, &p, off, &m));
	EXPECT_EQ(0, md_arena_plan_size(m));
	EXPECT_EQ(-ENOENT, md_arena_tensor(m, 0, &t));
	EXPECT_EQ(-ENOENT, md_arena_find(m, "x", &t));
	ASSERT_EQ(0, md_arena_activate(m));
	md_arena_destroy(a);	/* active and bound: all of it goes */
	md_problem_free(&p);
	md_device_close(dev);
}

TEST(lookup_by_id)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p;
	struct md_plan plan;
	struct md_arena *a;
	struct md_arena_plan *m;
	struct md_tensor t;
	struct md_plan_ref ref;
	char name[16];
	size_t i;

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "n%02zu", 49 - i);
		ASSERT_EQ(0, md_problem_add(&p, i % 10 == 3 ? NULL : name,
					    i, i + 3, 64 + i, 8));
	}
	ASSERT_EQ(0, md_problem_add(&p, "dup", 0, 1, 8, 1));	/* 50 */
	ASSERT_EQ(0, md_problem_add(&p, "dup", 1, 2, 8, 1));	/* 51 */
	ASSERT_EQ(0, md_problem_add(&p, "", 0, 1, 8, 1));	/* 52 */
	ASSERT_EQ(0, md_plan_solve(&p, NULL, &plan));
	ref = (struct md_plan_ref){ &p, plan.offsets };
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	ASSERT_EQ(0, md_arena_bind(a, &p, plan.offsets, &m));
	/* The binding keeps its own copy: the plan can go. */
	md_plan_free(&plan);
	for (i = 0; i < p.n; i++)
		if (p.bufs[i].id)
			memset(p.bufs[i].id, 'z', strlen(p.bufs[i].id));
	md_problem_free(&p);

	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "n%02zu", 49 - i);
		if (i % 10 == 3) {
			EXPECT_EQ(-ENOENT, md_arena_find(m, name, &t));
			ASSERT_EQ(0, md_arena_tensor(m, i, &t));
			EXPECT_EQ(NULL, t.id);
			continue;
		}
		ASSERT_EQ(0, md_arena_find(m, name, &t)) TH_LOG("%s", name);
		EXPECT_EQ(i, t.index);
		EXPECT_EQ(64 + i, t.size);
		EXPECT_STREQ(name, t.id);
	}
	ASSERT_EQ(0, md_arena_find(m, "dup", &t));
	EXPECT_EQ(50, t.index);
	ASSERT_EQ(0, md_arena_find(m, "", &t));
	EXPECT_EQ(52, t.index);
	EXPECT_EQ(-ENOENT, md_arena_find(m, "n5", &t));
	EXPECT_EQ(-ENOENT, md_arena_find(m, "n500", &t));
	EXPECT_EQ(-ENOENT, md_arena_find(m, "a", &t));
	EXPECT_EQ(-ENOENT, md_arena_find(m, "zzz", &t));
	EXPECT_EQ(-ENOENT, md_arena_find(m, NULL, &t));
	EXPECT_EQ(-ENOENT, md_arena_tensor(m, 53, &t));
	EXPECT_EQ(-ENOENT, md_arena_tensor(m, SIZE_MAX, &t));
	md_arena_destroy(a);
	md_device_close(dev);
}

/*
 * Alignment at the device: the base is aligned for the plans the arena
 * was created for; a plan it was not created for binds only if its
 * buffers land aligned, whatever the base turned out to be.
 */
TEST(alignment_at_the_device)
{
	struct md_device *dev = host_dev(0);
	struct md_problem p, q;
	struct md_arena *a;
	struct md_arena_plan *m;
	struct md_arena_info info;
	struct md_tensor t;
	uint64_t off[2] = { 0, 2 << 20 }, qoff[1] = { 0 };
	struct md_plan_ref ref = { &p, off };
	int want;

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 2, 100, 64));
	ASSERT_EQ(0, md_problem_add(&p, "b", 0, 2, 100, 2 << 20));
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	md_arena_info(a, &info);
	EXPECT_EQ(2 << 20, info.align);
	EXPECT_EQ(0, info.dev_va % (2 << 20));
	ASSERT_EQ(0, md_arena_bind(a, &p, off, &m));
	ASSERT_EQ(0, md_arena_find(m, "b", &t));
	EXPECT_EQ(0, t.dev_va % (2 << 20));

	/*
	 * Offset 0 is a multiple of any alignment, but the base may not be:
	 * 12 KiB, 3 and 4 MiB depend on where the region landed.
	 */
	md_problem_init(&q);
	ASSERT_EQ(0, md_problem_add(&q, "c", 0, 1, 10, 4096 * 3));
	want = info.dev_va % (4096 * 3) ? -EINVAL : 0;
	EXPECT_EQ(want, md_arena_bind(a, &q, qoff, &m));
	/* Non-powers of two count at the device too. */
	q.bufs[0].align = 3;
	qoff[0] = 3;
	want = (info.dev_va + 3) % 3 ? -EINVAL : 0;
	EXPECT_EQ(want, md_arena_bind(a, &q, qoff, &m));
	q.bufs[0].align = 4 << 20;
	qoff[0] = 0;
	want = info.dev_va % (4 << 20) ? -EINVAL : 0;
	EXPECT_EQ(want, md_arena_bind(a, &q, qoff, &m));
	md_problem_free(&q);
	md_arena_destroy(a);

	/* Device alignment larger than any buffer's: the device's. */
	md_device_close(dev);
	dev = host_dev(1 << 20);
	ASSERT_NE(NULL, dev);
	p.bufs[1].align = 1;
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	md_arena_info(a, &info);
	EXPECT_EQ(1 << 20, info.align);
	EXPECT_EQ(0, info.dev_va % (1 << 20));
	md_arena_destroy(a);
	md_problem_free(&p);
	md_device_close(dev);
}

/* Threads racing to activate: one wins each round; counts add up. */
struct act_race {
	struct md_arena_plan *m[4];
	pthread_barrier_t go, done, looked;
	int rounds;
	int won[4], busy[4], other[4];
};

struct act_arg {
	struct act_race *r;
	int id;
};

static void *act_thread(void *v)
{
	struct act_arg *arg = v;
	struct act_race *r = arg->r;
	int round, ret;

	for (round = 0; round < r->rounds; round++) {
		pthread_barrier_wait(&r->go);
		ret = md_arena_activate(r->m[arg->id]);
		if (!ret)
			r->won[arg->id]++;
		else if (ret == -EBUSY)
			r->busy[arg->id]++;
		else
			r->other[arg->id]++;
		pthread_barrier_wait(&r->done);
		/* The main thread looks; the winner lets go after that. */
		pthread_barrier_wait(&r->looked);
		if (!ret && md_arena_deactivate(r->m[arg->id]))
			r->other[arg->id]++;
	}
	return NULL;
}

TEST(threads_one_active)
{
	static struct act_race r = { .rounds = 300 };
	struct md_device *dev = host_dev(0);
	struct act_arg args[4];
	struct md_problem p;
	struct md_arena *a;
	struct md_arena_info info;
	struct md_arena_plan *m;
	pthread_t th[4];
	uint64_t off[1] = { 0 };
	struct md_plan_ref ref = { &p, off };
	int t, won = 0, busy = 0, round;

	ASSERT_NE(NULL, dev);
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "x", 0, 1, 100, 1));
	ASSERT_EQ(0, md_arena_create(dev, &ref, 1, &a));
	for (t = 0; t < 4; t++)
		ASSERT_EQ(0, md_arena_bind(a, &p, off, &r.m[t]));
	pthread_barrier_init(&r.go, NULL, 5);
	pthread_barrier_init(&r.done, NULL, 5);
	pthread_barrier_init(&r.looked, NULL, 5);
	for (t = 0; t < 4; t++) {
		args[t] = (struct act_arg){ &r, t };
		ASSERT_EQ(0, pthread_create(&th[t], NULL, act_thread, &args[t]));
	}
	for (round = 0; round < r.rounds; round++) {
		pthread_barrier_wait(&r.go);
		pthread_barrier_wait(&r.done);
		m = md_arena_active(a);
		ASSERT_TRUE(m == r.m[0] || m == r.m[1] || m == r.m[2] ||
			    m == r.m[3]);
		pthread_barrier_wait(&r.looked);
	}
	for (t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		EXPECT_EQ(0, r.other[t]);
		won += r.won[t];
		busy += r.busy[t];
	}
	EXPECT_EQ(r.rounds, won);
	EXPECT_EQ(3 * r.rounds, busy);
	md_arena_info(a, &info);
	EXPECT_EQ(r.rounds, info.activations);
	EXPECT_EQ(3 * r.rounds, info.busy);
	EXPECT_EQ(NULL, md_arena_active(a));
	md_arena_destroy(a);
	md_problem_free(&p);
	md_device_close(dev);
}

TEST_HARNESS_MAIN
