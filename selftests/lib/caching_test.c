// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests: the caching allocator model of the footprint report
 * (tools/bench/caching.c) on small traces whose answer is worked out by
 * hand: rounding, segment sizes, splitting, coalescing, best fit, segment
 * reuse, the two pools, release on a full device, the graph replay, and a
 * random trace under the model's own invariant check.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <metadef/plan.h>

#include "caching.h"
#include "test_util.h"
#include "kselftest_harness.h"

#define K	1024ull
#define M	(1024ull * 1024)

static void check(struct __test_metadata *_metadata, struct cache_sim *cs)
{
	const char *why = "";
	int ret = cache_sim_check(cs, &why);

	if (ret)
		TH_LOG("cache_sim_check: %s", why);
	ASSERT_EQ(0, ret);
}

TEST(rounding)
{
	EXPECT_EQ(0, cache_round_size(0));
	EXPECT_EQ(512, cache_round_size(1));
	EXPECT_EQ(512, cache_round_size(512));
	EXPECT_EQ(1024, cache_round_size(513));
	EXPECT_EQ(M, cache_round_size(M));
	EXPECT_EQ(M + 512, cache_round_size(M + 1));

	/* Small requests: a 2 MiB segment. */
	EXPECT_EQ(2 * M, cache_segment_size(512));
	EXPECT_EQ(2 * M, cache_segment_size(M));
	/* Large under 10 MiB: 20 MiB. */
	EXPECT_EQ(20 * M, cache_segment_size(M + 512));
	EXPECT_EQ(20 * M, cache_segment_size(10 * M - 512));
	/* From 10 MiB: the request rounded up to 2 MiB. */
	EXPECT_EQ(10 * M, cache_segment_size(10 * M));
	EXPECT_EQ(12 * M, cache_segment_size(10 * M + 512));
	EXPECT_EQ(22 * M, cache_segment_size(21 * M));
}

TEST(small_split)
{
	struct cache_sim *cs;
	struct cache_block *a, *b, *c, *d;
	struct cache_stats st;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	EXPECT_EQ(-EINVAL, cache_sim_alloc(cs, 0, &a));
	ASSERT_EQ(0, cache_sim_alloc(cs, 1000, &a));
	EXPECT_EQ(1024, a->size);
	ASSERT_EQ(0, cache_sim_alloc(cs, 100, &b));
	EXPECT_EQ(512, b->size);
	EXPECT_EQ(a->addr + 1024, b->addr);	/* the remainder, split */
	/* 1 MiB: split again; then the rest exactly: no split. */
	ASSERT_EQ(0, cache_sim_alloc(cs, M, &c));
	EXPECT_EQ(a->addr + 1536, c->addr);
	ASSERT_EQ(0, cache_sim_alloc(cs, M - 1536, &d));
	EXPECT_EQ(M - 1536, d->size);
	EXPECT_EQ(a->addr + 1536 + M, d->addr);
	check(_metadata, cs);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(2 * M, st.reserved);
	EXPECT_EQ(1, st.segments);
	EXPECT_EQ(1, st.segment_allocs);
	EXPECT_EQ(3, st.cache_hits);
	EXPECT_EQ(3, st.splits);
	EXPECT_EQ(2 * M, st.allocated);
	EXPECT_EQ(1000 + 100 + 2 * M - 1536, st.requested);
	cache_sim_destroy(cs);
}

TEST(large_split_threshold)
{
	struct cache_sim *cs;
	struct cache_block *a, *b, *c, *d;
	struct cache_stats st;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	/* 5 MiB: a 20 MiB segment, split, 15 MiB left free. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 5 * M, &a));
	EXPECT_EQ(5 * M, a->size);
	/* 14.5 MiB from the 15 MiB: 0.5 MiB left is not > 1 MiB: whole. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 14 * M + 512 * K, &b));
	EXPECT_EQ(15 * M, b->size);
	EXPECT_EQ(a->addr + 5 * M, b->addr);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(20 * M, st.allocated);
	EXPECT_EQ(19 * M + 512 * K, st.requested);
	EXPECT_EQ(1, st.splits);
	/* 3 MiB from a's 5 MiB: 2 MiB left is > 1 MiB: split. */
	cache_sim_free(cs, a);
	ASSERT_EQ(0, cache_sim_alloc(cs, 3 * M, &c));
	EXPECT_EQ(3 * M, c->size);
	EXPECT_EQ(b->addr - 5 * M, c->addr);
	/* 1.5 MiB into the 2 MiB left: 0.5 MiB is not split off. */
	ASSERT_EQ(0, cache_sim_alloc(cs, M + 512 * K, &d));
	EXPECT_EQ(2 * M, d->size);
	EXPECT_EQ(c->addr + 3 * M, d->addr);
	/* 19 MiB: its own 20 MiB segment, 1 MiB left is not split off. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 19 * M, &a));
	EXPECT_EQ(20 * M, a->size);
	check(_metadata, cs);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(40 * M, st.reserved);
	EXPECT_EQ(2, st.segments);
	EXPECT_EQ(2, st.splits);
	cache_sim_destroy(cs);
}

TEST(coalescing)
{
	struct cache_sim *cs;
	struct cache_block *a, *b, *c, *d;
	struct cache_stats st;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	ASSERT_EQ(0, cache_sim_alloc(cs, 2 * M, &a));
	ASSERT_EQ(0, cache_sim_alloc(cs, 2 * M, &b));
	ASSERT_EQ(0, cache_sim_alloc(cs, 2 * M, &c));
	/* a | b | c | 14 MiB free */
	cache_sim_free(cs, a);		/* no free neighbour */
	cache_sim_stats(cs, &st);
	EXPECT_EQ(0, st.merges);
	cache_sim_free(cs, c);		/* merges with the 14 MiB above */
	cache_sim_stats(cs, &st);
	EXPECT_EQ(1, st.merges);
	check(_metadata, cs);
	/* 16 MiB: the merged block (c and the rest) fits; a's does not. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 16 * M, &d));
	EXPECT_EQ(b->addr + 2 * M, d->addr);
	EXPECT_EQ(16 * M, d->size);
	cache_sim_free(cs, d);
	/* b between two free blocks: all three become one 20 MiB block. */
	cache_sim_free(cs, b);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(3, st.merges);
	EXPECT_EQ(0, st.allocated);
	EXPECT_EQ(20 * M, st.reserved);
	check(_metadata, cs);
	/* The whole segment again, at its start, from the cache. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 20 * M, &a));
	EXPECT_EQ(20 * M, a->size);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(1, st.segment_allocs);
	cache_sim_free(cs, a);
	/* empty_cache() gives the wholly free segment back. */
	cache_sim_empty_cache(cs);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(0, st.reserved);
	EXPECT_EQ(0, st.segments);
	EXPECT_EQ(1, st.segment_frees);
	EXPECT_EQ(20 * M, st.reserved_peak);
	check(_metadata, cs);
	cache_sim_destroy(cs);
}

TEST(best_fit)
{
	struct cache_sim *cs;
	struct cache_block *x[6], *p, *q, *r;
	static const uint64_t size[6] = {
		64 * K, 16 * K, 32 * K, 16 * K, 64 * K, 16 * K
	};
	int i;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, cache_sim_alloc(cs, size[i], &x[i]));
	/* Free 64 K at 0, 32 K at 80 K, 64 K at 128 K; the rest above. */
	cache_sim_free(cs, x[0]);
	cache_sim_free(cs, x[2]);
	cache_sim_free(cs, x[4]);
	check(_metadata, cs);
	/* 20 K: the smallest block that fits is the 32 K one. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 20 * K, &p));
	EXPECT_EQ(x[1]->addr + 16 * K, p->addr);
	/* 64 K twice: the lower of the two equal blocks first. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 64 * K, &q));
	EXPECT_EQ(x[1]->addr - 64 * K, q->addr);
	ASSERT_EQ(0, cache_sim_alloc(cs, 64 * K, &r));
	EXPECT_EQ(x[3]->addr + 16 * K, r->addr);
	check(_metadata, cs);
	cache_sim_destroy(cs);
}

TEST(segment_reuse)
{
	struct cache_sim *cs;
	struct cache_block *a;
	struct cache_stats st;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	/* A 20 MiB segment serves every large request under 20 MiB. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 5 * M, &a));
	cache_sim_free(cs, a);
	ASSERT_EQ(0, cache_sim_alloc(cs, 8 * M, &a));
	cache_sim_free(cs, a);
	ASSERT_EQ(0, cache_sim_alloc(cs, 18 * M + 1, &a));
	cache_sim_free(cs, a);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(1, st.segment_allocs);
	EXPECT_EQ(20 * M, st.reserved_peak);
	EXPECT_EQ(2, st.cache_hits);
	/* 21 MiB does not fit in it: a 22 MiB segment besides. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 21 * M, &a));
	cache_sim_free(cs, a);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(2, st.segment_allocs);
	EXPECT_EQ(42 * M, st.reserved_peak);
	/* 11 MiB: best fit takes the 20 MiB block, not the 22. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 11 * M, &a));
	EXPECT_EQ(11 * M, a->size);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(2, st.segments);
	check(_metadata, cs);
	cache_sim_destroy(cs);
}

TEST(pools_apart)
{
	struct cache_sim *cs;
	struct cache_block *a, *b;
	struct cache_stats st;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	/* A wholly free 2 MiB small segment does not serve 1.5 MiB. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 4 * K, &a));
	cache_sim_free(cs, a);
	ASSERT_EQ(0, cache_sim_alloc(cs, M + 512 * K, &b));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(22 * M, st.reserved);
	EXPECT_EQ(2, st.segments);
	EXPECT_FALSE(b->small);
	cache_sim_free(cs, b);
	/* Nor does the free large segment serve a small request... */
	ASSERT_EQ(0, cache_sim_alloc(cs, M, &a));
	EXPECT_TRUE(a->small);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(2, st.segments);	/* ...it went to the small one */
	cache_sim_free(cs, a);
	/* 1 MiB is small, 1 MiB + 1 is large. */
	ASSERT_EQ(0, cache_sim_alloc(cs, M, &a));
	ASSERT_EQ(0, cache_sim_alloc(cs, M, &b));
	EXPECT_TRUE(b->small);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(2 * M, st.allocated);
	EXPECT_EQ(2, st.segments);
	cache_sim_free(cs, a);
	cache_sim_free(cs, b);
	ASSERT_EQ(0, cache_sim_alloc(cs, M + 1, &a));
	EXPECT_FALSE(a->small);
	EXPECT_EQ(M + 512, a->size);
	check(_metadata, cs);
	cache_sim_destroy(cs);
}

TEST(release_when_full)
{
	struct cache_sim *cs;
	struct cache_block *a, *b;
	struct cache_stats st;

	/* A device of 24 MiB. */
	ASSERT_EQ(0, cache_sim_create(24 * M, &cs));
	ASSERT_EQ(0, cache_sim_alloc(cs, 10 * M, &a));	/* 10 MiB segment */
	ASSERT_EQ(0, cache_sim_alloc(cs, K, &b));	/* 2 MiB segment */
	cache_sim_free(cs, a);
	cache_sim_free(cs, b);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(12 * M, st.reserved);
	/* 14 MiB needs a segment: 26 > 24, the cache is released first. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 14 * M, &a));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(14 * M, st.reserved);
	EXPECT_EQ(1, st.flushes);
	EXPECT_EQ(2, st.segment_frees);
	EXPECT_EQ(14 * M, st.reserved_peak);
	/* 12 MiB more: nothing cached to give back: out of memory. */
	EXPECT_EQ(-ENOMEM, cache_sim_alloc(cs, 12 * M, &b));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(1, st.ooms);
	EXPECT_EQ(14 * M, st.reserved);
	/* ... but 10 MiB fits beside it, exactly. */
	ASSERT_EQ(0, cache_sim_alloc(cs, 10 * M, &b));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(24 * M, st.reserved);
	check(_metadata, cs);
	cache_sim_destroy(cs);
}

TEST(replay)
{
	struct cache_sim *cs;
	struct cache_stats st;
	struct md_problem p;

	/*
	 * A chain of 1000-byte tensors, each alive two steps: at step 2 a
	 * dies before c is made, so never more than two blocks are out.
	 */
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 2, 1000, 0));
	ASSERT_EQ(0, md_problem_add(&p, "b", 1, 3, 1000, 0));
	ASSERT_EQ(0, md_problem_add(&p, "c", 2, 4, 1000, 0));
	ASSERT_EQ(0, md_problem_add(&p, "d", 3, 5, 1000, 0));
	ASSERT_EQ(0, md_problem_add(&p, "z", 1, 2, 0, 0));	/* nothing */
	ASSERT_EQ(0, cache_sim_create(0, &cs));
	ASSERT_EQ(0, cache_replay(cs, &p));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(2048, st.allocated_peak);
	EXPECT_EQ(2000, st.requested_peak);
	EXPECT_EQ(2 * M, st.reserved_peak);
	EXPECT_EQ(4, st.allocs);
	EXPECT_EQ(4, st.frees);
	EXPECT_EQ(0, st.allocated);
	check(_metadata, cs);
	md_problem_free(&p);

	/*
	 * Three 6 MiB tensors one after the other, then 12 MiB with one
	 * of them: one 20 MiB segment serves the first three, and its free
	 * 14 MiB the last; the small segment of the first trace stays.
	 */
	md_problem_init(&p);
	ASSERT_EQ(0, md_problem_add(&p, "a", 0, 1, 6 * M, 0));
	ASSERT_EQ(0, md_problem_add(&p, "b", 1, 2, 6 * M, 0));
	ASSERT_EQ(0, md_problem_add(&p, "c", 2, 4, 6 * M, 0));
	ASSERT_EQ(0, md_problem_add(&p, "d", 3, 4, 12 * M, 0));
	ASSERT_EQ(0, cache_replay(cs, &p));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(22 * M, st.reserved_peak);
	EXPECT_EQ(18 * M, st.allocated_peak);
	EXPECT_EQ(2, st.segment_allocs);	/* the small one before */
	check(_metadata, cs);
	cache_sim_destroy(cs);

	/* Too small a device: the replay fails and gives its blocks back. */
	ASSERT_EQ(0, cache_sim_create(16 * M, &cs));
	EXPECT_EQ(-ENOMEM, cache_replay(cs, &p));
	cache_sim_stats(cs, &st);
	EXPECT_EQ(0, st.allocated);
	check(_metadata, cs);
	cache_sim_destroy(cs);
	md_problem_free(&p);
}

TEST(random_trace)
{
	static const uint64_t scale[] = { 600, 40 * K, 900 * K, 6 * M, 30 * M };
	uint64_t seed = 0x9e3779b97f4a7c15ull, live = 0, peak = 0;
	struct cache_block *held[64] = { NULL };
	uint64_t sz[64] = { 0 };
	struct cache_sim *cs;
	struct cache_stats st;
	int i, k;

	ASSERT_EQ(0, cache_sim_create(0, &cs));
	for (i = 0; i < 20000; i++) {
		k = (int)(xorshift64(&seed) % 64);
		if (held[k]) {
			cache_sim_free(cs, held[k]);
			held[k] = NULL;
			live -= sz[k];
		} else {
			sz[k] = 1 + xorshift64(&seed) %
				scale[xorshift64(&seed) % 5];
			ASSERT_EQ(0, cache_sim_alloc(cs, sz[k], &held[k]));
			ASSERT_GE(held[k]->size, cache_round_size(sz[k]));
			live += sz[k];
			if (live > peak)
				peak = live;
		}
		if (i % 97 == 0)
			check(_metadata, cs);
	}
	cache_sim_stats(cs, &st);
	EXPECT_EQ(peak, st.requested_peak);
	EXPECT_GE(st.allocated_peak, st.requested_peak);
	EXPECT_GE(st.reserved_peak, st.allocated_peak);
	for (k = 0; k < 64; k++)
		if (held[k])
			cache_sim_free(cs, held[k]);
	check(_metadata, cs);
	cache_sim_empty_cache(cs);
	cache_sim_stats(cs, &st);
	EXPECT_EQ(0, st.reserved);	/* everything merged back */
	cache_sim_destroy(cs);
}

TEST_HARNESS_MAIN
