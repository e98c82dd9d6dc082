// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the tiered pools (include/metadef/pool.h). Tier
 * boundaries, alignment, the reuse protocol and every refused operation,
 * exhaustion (the pool's limit and the backend's) and recovery, exact
 * stats, fragmentation on constructed cases, JSON snapshots read back, the
 * cleaner finding a deliberate leak, metadata kept out of device memory.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/pool.h>

#include "json_mini.h"
#include "test_util.h"
#include "kselftest_harness.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static int cmp_va(const void *a, const void *b)
{
	const struct md_buf *x = a, *y = b;

	return x->dev_va < y->dev_va ? -1 : x->dev_va > y->dev_va;
}

/* 0 if no two of @n blocks overlap, else the index of the first clash. */
static int overlap(const struct md_buf *v, int n)
{
	struct md_buf *s = malloc(sizeof(*s) * (n ? n : 1));
	int i, bad = 0;

	memcpy(s, v, sizeof(*s) * n);
	qsort(s, n, sizeof(*s), cmp_va);
	for (i = 1; i < n && !bad; i++)
		if (s[i - 1].dev_va + s[i - 1].size > s[i].dev_va)
			bad = i;
	free(s);
	return bad;
}

/* A record of the handler's calls. */
struct vlog {
	int n;
	enum md_pool_violation_kind kind[64];
	enum md_reuse_op op[64];
	int state[64];
	uint32_t generation[64], expected[64];
	const char *tag[64];
};

static void vlog_fn(const struct md_pool_violation *v, void *arg)
{
	struct vlog *l = arg;

	if (l->n >= 64)
		return;
	l->kind[l->n] = v->kind;
	l->op[l->n] = v->op;
	l->state[l->n] = v->state;
	l->generation[l->n] = v->generation;
	l->expected[l->n] = v->expected;
	l->tag[l->n] = v->tag;
	l->n++;
}

/* ------------------------------------------------------------ tiers */

TEST(tier_boundaries)
{
	static const struct {
		uint64_t size;
		enum md_pool_tier tier;
	} cases[] = {
		{ 1, MD_TIER_SLAB },
		{ 64, MD_TIER_SLAB },
		{ 65, MD_TIER_SLAB },
		{ MiB - 1, MD_TIER_SLAB },
		{ MiB, MD_TIER_BUDDY },
		{ MiB + 1, MD_TIER_BUDDY },
		{ 16 * MiB - 1, MD_TIER_BUDDY },
		{ 16 * MiB, MD_TIER_BUDDY },
		{ 16 * MiB + 1, MD_TIER_LARGE },
		{ 17 * MiB, MD_TIER_LARGE },
	};
	static const uint64_t aligns[] = { 64, 128, 256 };
	struct md_buf b[10];
	size_t a, i;

	for (a = 0; a < 3; a++) {
		struct md_device *dev = host_dev(aligns[a]);
		struct md_pool *pool;

		ASSERT_NE(NULL, dev);
		ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
		EXPECT_EQ(aligns[a], md_pool_align(pool));
		for (i = 0; i < 10; i++) {
			EXPECT_EQ(cases[i].tier, md_pool_tier_of(cases[i].size));
			ASSERT_EQ(0, md_alloc(pool, cases[i].size, &b[i]));
			EXPECT_EQ(cases[i].tier, b[i].tier);
			EXPECT_GE(b[i].size, cases[i].size);
			EXPECT_EQ(0, b[i].size % aligns[a]);
			EXPECT_EQ(0, b[i].dev_va % aligns[a]);
			EXPECT_EQ((void *)(uintptr_t)b[i].dev_va, b[i].cpu);
			/* The whole block is usable memory. */
			memset(b[i].cpu, (int)i, b[i].size);
		}
		/* The slab's largest class holds 1 MiB - 1 in exactly 1 MiB. */
		EXPECT_EQ(MiB, b[3].size);
		EXPECT_EQ(MiB, b[4].size);
		EXPECT_EQ(16 * MiB, b[7].size);
		EXPECT_EQ(0, overlap(b, 10));
		for (i = 0; i < 10; i++) {
			unsigned char *p = b[i].cpu;

			EXPECT_EQ((unsigned char)i, p[0]);
			EXPECT_EQ((unsigned char)i, p[b[i].size - 1]);
			EXPECT_EQ(0, md_free(pool, &b[i]));
		}
		md_pool_destroy(pool);
		EXPECT_EQ(0, dev_bytes(dev));
		md_device_close(dev);
	}
}

TEST(size_classes_exact)
{
	/* Requests and the block they must get at alignment 256. */
	static const uint64_t cases[][2] = {
		{ 1, 256 }, { 256, 256 }, { 257, 512 }, { 1000, 1024 },
		{ 2048, 2048 }, { 2049, 2560 }, { 2600, 3072 },
		{ 4097, 5120 }, { 100000, 114688 }, { 600 * KiB, 640 * KiB },
		{ MiB - 1, MiB },
		/* buddy: whole 64 KiB granules */
		{ MiB + 1, MiB + 64 * KiB }, { 3 * MiB, 3 * MiB },
		/* large: whole pages */
		{ 16 * MiB + 1, 16 * MiB + 4 * KiB },
	};
	struct md_device *dev = host_dev(256);
	struct md_pool *pool;
	struct md_buf b;
	size_t i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(4096, md_device_page_size(dev));
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, md_alloc(pool, cases[i][0], &b));
		EXPECT_EQ(cases[i][1], b.size) {
			TH_LOG("request %llu", (unsigned long long)cases[i][0]);
		}
		EXPECT_EQ(0, md_free(pool, &b));
	}
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(bad_sizes_and_configs)
{
	struct md_device *dev = host_dev(64);
	struct md_pool_config cfg = { 0 };
	struct md_pool *pool;
	struct md_buf b = { 0 }, z = { 0 };

	ASSERT_NE(NULL, dev);
	cfg.align = 96;
	EXPECT_EQ(-EINVAL, md_pool_create(dev, &cfg, &pool));
	EXPECT_EQ(NULL, pool);
	cfg.align = 0;
	cfg.slab_region = 3 * MiB;
	EXPECT_EQ(-EINVAL, md_pool_create(dev, &cfg, &pool));
	cfg.slab_region = 0;
	cfg.buddy_region = 8 * MiB;	/* a 16 MiB block would not fit */
	EXPECT_EQ(-EINVAL, md_pool_create(dev, &cfg, &pool));
	cfg.buddy_region = 0;
	/* A flag this library does not know is not silently ignored. */
	cfg.flags = 0x80000000u;
	EXPECT_EQ(-EINVAL, md_pool_create(dev, &cfg, &pool));
	EXPECT_EQ(NULL, pool);
	cfg.flags = 0;
	cfg.pad = 1;
	EXPECT_EQ(-EINVAL, md_pool_create(dev, &cfg, &pool));
	cfg.pad = 0;
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	EXPECT_EQ(-EINVAL, md_alloc(pool, 0, &b));
	EXPECT_EQ(-EINVAL, md_alloc(pool, 1ull << 63, &b));
	EXPECT_EQ(0, memcmp(&b, &z, sizeof(b)));	/* untouched */
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* Many sizes in every tier: aligned, disjoint, and each its own memory. */
TEST(alignment_and_disjoint)
{
	static const uint64_t aligns[] = { 64, 128, 256 };
	enum { N = 400 };
	struct md_buf *b = calloc(N, sizeof(*b));
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t a;
	int i;

	ASSERT_NE(NULL, b);
	for (a = 0; a < 3; a++) {
		struct md_device *dev = host_dev(aligns[a]);
		struct md_pool *pool;

		ASSERT_NE(NULL, dev);
		ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
		for (i = 0; i < N; i++) {
			uint64_t size;

			xorshift64(&seed);
			if (i % 100 == 99)
				size = 16 * MiB + 1 + seed % (4 * MiB);
			else if (i % 10 == 9)
				size = MiB + seed % (15 * MiB);
			else
				size = 1 + seed % (MiB - 1);
			ASSERT_EQ(0, md_alloc(pool, size, &b[i]));
			ASSERT_EQ(0, b[i].dev_va % aligns[a]);
			ASSERT_EQ(0, b[i].size % aligns[a]);
			ASSERT_GE(b[i].size, size);
			*(uint64_t *)b[i].cpu = b[i].dev_va;
			*(uint64_t *)((char *)b[i].cpu + b[i].size - 8) = ~b[i].dev_va;
		}
		EXPECT_EQ(0, overlap(b, N));
		for (i = 0; i < N; i++) {
			EXPECT_EQ(b[i].dev_va, *(uint64_t *)b[i].cpu);
			EXPECT_EQ(~b[i].dev_va,
				  *(uint64_t *)((char *)b[i].cpu + b[i].size - 8));
			ASSERT_EQ(0, md_free(pool, &b[i]));
		}
		md_pool_destroy(pool);
		md_device_close(dev);
	}
	free(b);
}

/*
 * Metadata is out of band: after a churn of allocations and frees in every
 * tier, no page of device memory was ever touched (the host backend's
 * regions are untouched anonymous memory until someone writes them).
 */
TEST(metadata_out_of_band)
{
	struct md_device *dev = host_dev(256);
	long page = sysconf(_SC_PAGESIZE);
	enum { N = 300 };
	struct md_buf b[N];
	struct md_pool *pool;
	unsigned char *vec;
	int i, round;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (round = 0; round < 3; round++) {
		for (i = 0; i < N; i++) {
			uint64_t size = i % 50 == 49 ? 20 * MiB :
					i % 10 == 9 ? 2 * MiB + i * KiB :
						      64 + (uint64_t)i * 997;

			ASSERT_EQ(0, md_alloc(pool, size, &b[i]));
		}
		for (i = 0; i < N; i += 2)
			ASSERT_EQ(0, md_free(pool, &b[i]));
		for (i = 0; i < N; i += 2) {
			ASSERT_EQ(0, md_buf_acquire(pool, &b[i + 1]));
			ASSERT_EQ(1, md_buf_release(pool, &b[i + 1]));
		}
		for (i = 1; i < N; i += 2)
			ASSERT_EQ(0, md_free(pool, &b[i]));
	}
	for (i = 0; i < N; i++) {
		uint64_t size = i % 50 == 49 ? 20 * MiB + 5 :
				i % 10 == 9 ? 3 * MiB + i * KiB :
					      64 + (uint64_t)i * 3001;

		ASSERT_EQ(0, md_alloc(pool, size, &b[i]));
	}
	vec = malloc(32 * MiB / page + 2);
	for (i = 0; i < N; i++) {
		uintptr_t start = (uintptr_t)b[i].cpu & ~(uintptr_t)(page - 1);
		uintptr_t end = (uintptr_t)b[i].cpu + b[i].size;
		size_t len = end - start, k;

		ASSERT_EQ(0, mincore((void *)start, len, vec));
		for (k = 0; k < (len + page - 1) / page; k++)
			ASSERT_EQ(0, vec[k] & 1);
	}
	free(vec);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ protocol */

/*
 * A block's tag belongs to one life: the descriptor's next life without
 * opts has none (the pool writes the tags only when they change), and a
 * tagged one has its own.
 */
TEST(tags_follow_each_life)
{
	static const uint64_t sizes[] = { 100, 3 * MiB, 20 * MiB };
	struct md_pool_config cfg = { .handler = vlog_fn };
	struct md_device *dev = host_dev(128);
	struct md_pool *pool;
	struct vlog log = { 0 };
	size_t t;

	ASSERT_NE(NULL, dev);
	cfg.handler_arg = &log;
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	for (t = 0; t < 3; t++) {
		struct md_buf b, again, third;

		log.n = 0;
		ASSERT_EQ(0, md_alloc_tagged(pool, sizes[t], "first", &b));
		ASSERT_EQ(0, md_buf_acquire(pool, &b));
		EXPECT_EQ(-EBUSY, md_free(pool, &b));
		ASSERT_EQ(1, md_buf_release(pool, &b));
		ASSERT_EQ(0, md_free(pool, &b));

		ASSERT_EQ(0, md_alloc(pool, sizes[t], &again));
		EXPECT_EQ(b.block, again.block);
		ASSERT_EQ(0, md_buf_acquire(pool, &again));
		EXPECT_EQ(-EBUSY, md_free(pool, &again));
		ASSERT_EQ(1, md_buf_release(pool, &again));
		ASSERT_EQ(0, md_free(pool, &again));

		ASSERT_EQ(0, md_alloc_tagged(pool, sizes[t], "third", &third));
		EXPECT_EQ(b.block, third.block);
		ASSERT_EQ(0, md_buf_acquire(pool, &third));
		EXPECT_EQ(-EBUSY, md_free(pool, &third));
		ASSERT_EQ(1, md_buf_release(pool, &third));
		ASSERT_EQ(0, md_free(pool, &third));

		ASSERT_EQ(3, log.n);
		EXPECT_STREQ("first", log.tag[0]);
		EXPECT_EQ(NULL, log.tag[1]);
		EXPECT_STREQ("third", log.tag[2]);
	}
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* The whole protocol, and every refusal, on one block of each tier. */
TEST(reuse_protocol_and_violations)
{
	static const uint64_t sizes[] = { 100, 3 * MiB, 20 * MiB };
	struct md_pool_config cfg = { .handler = vlog_fn };
	struct md_device *dev = host_dev(128);
	struct md_pool *pool, *other;
	struct md_pool_stats st;
	struct vlog log = { 0 };
	size_t t;

	ASSERT_NE(NULL, dev);
	cfg.handler_arg = &log;
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	ASSERT_EQ(0, md_pool_create(dev, NULL, &other));

	for (t = 0; t < 3; t++) {
		struct md_buf b, again, foreign;
		uint64_t v0 = md_reuse_violations();

		log.n = 0;
		ASSERT_EQ(0, md_alloc_tagged(pool, sizes[t], "proto", &b));
		EXPECT_EQ(t, b.tier);
		EXPECT_EQ(MD_BLOCK_ALLOCATED, md_buf_state(pool, &b));
		EXPECT_EQ(0, md_buf_acquire(pool, &b));
		EXPECT_EQ(MD_BLOCK_ACTIVE, md_buf_state(pool, &b));
		EXPECT_EQ(0, md_buf_acquire(pool, &b));
		/* Free while held: refused, nothing changes. */
		EXPECT_EQ(-EBUSY, md_free(pool, &b));
		EXPECT_EQ(MD_BLOCK_ACTIVE, md_buf_state(pool, &b));
		EXPECT_EQ(0, md_buf_release(pool, &b));
		EXPECT_EQ(-EBUSY, md_free(pool, &b));
		EXPECT_EQ(1, md_buf_release(pool, &b));
		EXPECT_EQ(MD_BLOCK_RELEASED, md_buf_state(pool, &b));
		/* Released: no more holders. */
		EXPECT_EQ(-EINVAL, md_buf_release(pool, &b));
		EXPECT_EQ(-EINVAL, md_buf_acquire(pool, &b));
		/* The owner's free recycles it. */
		EXPECT_EQ(0, md_free(pool, &b));
		EXPECT_EQ(-ESTALE, md_buf_state(pool, &b));
		EXPECT_EQ(-EINVAL, md_free(pool, &b));		/* double */
		EXPECT_EQ(-ESTALE, md_buf_acquire(pool, &b));	/* after free */
		EXPECT_EQ(-ESTALE, md_buf_release(pool, &b));

		/* The same descriptor's next life: the old handle is stale. */
		ASSERT_EQ(0, md_alloc(pool, sizes[t], &again));
		EXPECT_EQ(b.block, again.block);
		EXPECT_EQ(b.generation + 1, again.generation);
		EXPECT_EQ(-ESTALE, md_free(pool, &b));
		EXPECT_EQ(-ESTALE, md_buf_acquire(pool, &b));
		EXPECT_EQ(MD_BLOCK_ALLOCATED, md_buf_state(pool, &again));

		/* Handles of another pool, or none. */
		ASSERT_EQ(0, md_alloc(other, sizes[t], &foreign));
		EXPECT_EQ(-EINVAL, md_free(pool, &foreign));
		EXPECT_EQ(-EINVAL, md_buf_acquire(pool, &foreign));
		EXPECT_EQ(MD_BLOCK_ALLOCATED, md_buf_state(other, &foreign));
		EXPECT_EQ(-EINVAL, md_free(pool, NULL));

		/* Released without ever being acquired, then freed. */
		EXPECT_EQ(1, md_buf_release(pool, &again));
		EXPECT_EQ(0, md_free(pool, &again));
		EXPECT_EQ(0, md_free(other, &foreign));

		ASSERT_EQ(12, log.n);
		EXPECT_EQ(MD_POOL_FREE_HELD, log.kind[0]);
		EXPECT_EQ(MD_BLOCK_ACTIVE, log.state[0]);
		EXPECT_STREQ("proto", log.tag[0]);
		EXPECT_EQ(MD_POOL_FREE_HELD, log.kind[1]);
		EXPECT_EQ(MD_POOL_BAD_TRANSITION, log.kind[2]);
		EXPECT_EQ(MD_REUSE_RELEASE, log.op[2]);
		EXPECT_EQ(MD_POOL_BAD_TRANSITION, log.kind[3]);
		EXPECT_EQ(MD_REUSE_ACQUIRE, log.op[3]);
		EXPECT_EQ(MD_POOL_DOUBLE_FREE, log.kind[4]);
		EXPECT_EQ(MD_BLOCK_RECYCLED, log.state[4]);
		EXPECT_EQ(MD_POOL_USE_AFTER_FREE, log.kind[5]);
		EXPECT_EQ(MD_POOL_USE_AFTER_FREE, log.kind[6]);
		EXPECT_EQ(MD_POOL_USE_AFTER_FREE, log.kind[7]);
		EXPECT_EQ(b.generation + 1, log.generation[7]);
		EXPECT_EQ(b.generation, log.expected[7]);
		EXPECT_EQ(MD_POOL_USE_AFTER_FREE, log.kind[8]);
		EXPECT_EQ(MD_POOL_BAD_HANDLE, log.kind[9]);
		EXPECT_EQ(MD_POOL_BAD_HANDLE, log.kind[10]);
		EXPECT_EQ(MD_POOL_BAD_HANDLE, log.kind[11]);
		/* The pool never went around reuse.c's own refusals. */
		EXPECT_EQ(v0, md_reuse_violations());
	}
	md_pool_stats(pool, &st);
	EXPECT_EQ(6, st.violation[MD_POOL_FREE_HELD]);
	EXPECT_EQ(6, st.violation[MD_POOL_BAD_TRANSITION]);
	EXPECT_EQ(3, st.violation[MD_POOL_DOUBLE_FREE]);
	EXPECT_EQ(12, st.violation[MD_POOL_USE_AFTER_FREE]);
	EXPECT_EQ(9, st.violation[MD_POOL_BAD_HANDLE]);
	EXPECT_EQ(36, st.violations);
	/* Refusals changed no figure: everything allocated was freed. */
	EXPECT_EQ(0, st.total.current_count);
	EXPECT_EQ(6, st.total.alloc_count);
	md_pool_stats(other, &st);
	EXPECT_EQ(0, st.violations);
	md_pool_destroy(other);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * md_alloc() hands a block out of this thread's cache with one store, not
 * a compare-exchange (nothing else writes a RECYCLED word). What that
 * must not change, for blocks in the cache (a full bin, part of it
 * flushed back to the slabs) and without caches: every double free of a
 * cached block refused and counted, every old handle stale after the
 * block's next life, the generation one more per life, each block handed
 * out once.
 */
static void cached_blocks_refusals(struct __test_metadata *_metadata,
				   uint32_t flags)
{
	enum { N = 200 };
	struct md_pool_config cfg = { .flags = flags };
	struct md_device *dev = host_dev(64);
	static struct md_buf old[N], now[N];
	struct md_pool_stats st;
	struct md_pool *pool;
	int i, j, reused = 0;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, md_alloc(pool, 64, &old[i]));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, md_free(pool, &old[i]));
	/* In this thread's bin or back on a slab: RECYCLED either way. */
	for (i = 0; i < N; i++) {
		EXPECT_EQ(-EINVAL, md_free(pool, &old[i]));
		EXPECT_EQ(-ESTALE, md_buf_acquire(pool, &old[i]));
		EXPECT_EQ(-ESTALE, md_buf_state(pool, &old[i]));
	}
	/* The next lives, from the bin first. */
	for (i = 0; i < N; i++) {
		ASSERT_EQ(0, md_alloc(pool, 64, &now[i]));
		EXPECT_EQ(MD_BLOCK_ALLOCATED, md_buf_state(pool, &now[i]));
		for (j = 0; j < i; j++)
			ASSERT_NE(now[j].block, now[i].block);
	}
	/* A block not handed out again is still RECYCLED: a double free. */
	for (i = 0; i < N; i++) {
		for (j = 0; j < N; j++)
			if (now[j].block == old[i].block)
				break;
		if (j < N) {
			reused++;
			EXPECT_EQ(old[i].generation + 1, now[j].generation);
			EXPECT_EQ(-ESTALE, md_free(pool, &old[i]));
		} else {
			EXPECT_EQ(-EINVAL, md_free(pool, &old[i]));
		}
		EXPECT_EQ(-ESTALE, md_buf_release(pool, &old[i]));
	}
	/* At least the bin's worth came back from the cache. */
	EXPECT_GE(reused, 32);
	for (i = 0; i < N; i++) {
		EXPECT_EQ(0, md_free(pool, &now[i]));
		EXPECT_EQ(-EINVAL, md_free(pool, &now[i]));
	}
	md_pool_stats(pool, &st);
	EXPECT_EQ(3 * N - reused, st.violation[MD_POOL_DOUBLE_FREE]);
	EXPECT_EQ(2 * N + reused, st.violation[MD_POOL_USE_AFTER_FREE]);
	EXPECT_EQ(5 * N, st.violations);
	EXPECT_EQ(2 * N, st.total.alloc_count);
	EXPECT_EQ(2 * N, st.total.free_count);
	EXPECT_EQ(0, st.total.current_count);
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(cached_blocks_double_free_and_stale)
{
	cached_blocks_refusals(_metadata, 0);
}

TEST(cached_blocks_double_free_and_stale_without_thread_caches)
{
	cached_blocks_refusals(_metadata, MD_POOL_NO_TCACHE);
}

/* Many holders; the block is RELEASED only when the last one goes. */
TEST(holders_counted)
{
	struct md_device *dev = host_dev(64);
	struct md_pool *pool;
	struct md_buf b;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	ASSERT_EQ(0, md_alloc(pool, 4096, &b));
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, md_buf_acquire(pool, &b));
	for (i = 0; i < 99; i++) {
		ASSERT_EQ(0, md_buf_release(pool, &b));
		ASSERT_EQ(-EBUSY, md_free(pool, &b));
	}
	EXPECT_EQ(1, md_buf_release(pool, &b));
	EXPECT_EQ(0, md_free(pool, &b));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ exhaustion */

static void expect_oom(struct __test_metadata *_metadata,
		       const struct md_oom_info *oom, int err,
		       enum md_pool_tier tier, uint64_t req, bool limit_hit)
{
	EXPECT_EQ(err, oom->error);
	EXPECT_EQ(tier, oom->tier);
	EXPECT_EQ(req, oom->requested);
	EXPECT_EQ(limit_hit, oom->limit_hit);
	EXPECT_NE(NULL, strstr(oom->message, "out of memory"));
	EXPECT_NE(NULL, strstr(oom->message, md_pool_tier_name(tier)));
	EXPECT_NE(NULL, strstr(oom->message, limit_hit ? "limit" : "backend"));
}

TEST(exhaustion_large_and_recovery)
{
	struct md_pool_config cfg = { .limit = 64 * MiB };
	struct md_device *dev = host_dev(256);
	struct md_oom_info oom, last;
	struct md_alloc_opts opts = { .tag = "big", .oom = &oom };
	struct md_buf b[4], c;
	struct md_pool *pool;
	struct md_device_stats ds, ds2;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	EXPECT_EQ(-ENOENT, md_pool_last_oom(pool, &last));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, md_alloc_ex(pool, 20 * MiB, &opts, &b[i]));
	memset(&oom, 0, sizeof(oom));
	ASSERT_EQ(-ENOMEM, md_alloc_ex(pool, 20 * MiB, &opts, &b[3]));
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_LARGE, 20 * MiB, true);
	EXPECT_EQ(64 * MiB, oom.limit);
	EXPECT_EQ(20 * MiB, oom.block_size);
	EXPECT_EQ(60 * MiB, oom.stats.total.region_bytes);
	EXPECT_EQ(60 * MiB, oom.stats.tier[MD_TIER_LARGE].current_bytes);
	EXPECT_EQ(3, oom.stats.total.current_count);
	EXPECT_EQ(1, oom.stats.tier[MD_TIER_LARGE].oom_count);
	EXPECT_NE(NULL, strstr(oom.message, "20 MiB"));
	EXPECT_NE(NULL, strstr(oom.message, "64 MiB"));
	ASSERT_EQ(0, md_pool_last_oom(pool, &last));
	EXPECT_STREQ(oom.message, last.message);

	/* A freed region is cached and taken again: no new region. */
	ASSERT_EQ(0, md_free(pool, &b[1]));
	md_device_stats(dev, &ds);
	ASSERT_EQ(0, md_alloc(pool, 19 * MiB, &c));
	EXPECT_EQ(b[1].dev_va, c.dev_va);
	EXPECT_EQ(20 * MiB, c.size);
	md_device_stats(dev, &ds2);
	EXPECT_EQ(ds.region_allocs, ds2.region_allocs);
	/* Nothing is cached now: no room for 40 MiB. */
	EXPECT_EQ(-ENOMEM, md_alloc(pool, 40 * MiB, &b[3]));
	ASSERT_EQ(0, md_free(pool, &c));
	ASSERT_EQ(0, md_free(pool, &b[2]));
	/* Two cached 20 MiB regions make room for one of 40 MiB. */
	ASSERT_EQ(0, md_alloc(pool, 40 * MiB, &b[3]));
	EXPECT_EQ(60 * MiB, dev_bytes(dev));
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_free(pool, &b[3]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(exhaustion_buddy_and_recovery)
{
	struct md_pool_config cfg = { .limit = 64 * MiB };
	struct md_device *dev = host_dev(256);
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_buf b[5], c;
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &b[i]));
	ASSERT_EQ(-ENOMEM, md_alloc_ex(pool, 16 * MiB, &opts, &b[4]));
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_BUDDY, 16 * MiB, true);
	EXPECT_EQ(64 * MiB, oom.stats.tier[MD_TIER_BUDDY].current_bytes);
	EXPECT_EQ(0, oom.stats.tier[MD_TIER_BUDDY].free_bytes);
	ASSERT_EQ(-ENOMEM, md_alloc_ex(pool, MiB, &opts, &b[4]));
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_BUDDY, MiB, true);
	/* Nor can the slab tier get a region now. */
	ASSERT_EQ(-ENOMEM, md_alloc_ex(pool, 64, &opts, &b[4]));
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_SLAB, 64, true);
	EXPECT_EQ(3, oom.stats.total.oom_count);

	ASSERT_EQ(0, md_free(pool, &b[2]));
	ASSERT_EQ(0, md_alloc(pool, MiB, &c));
	EXPECT_EQ(b[2].dev_va, c.dev_va);
	ASSERT_EQ(0, md_free(pool, &c));
	ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &b[2]));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(exhaustion_slab_and_recovery)
{
	struct md_pool_config cfg = { .limit = MiB, .slab_region = MiB };
	struct md_device *dev = host_dev(64);
	enum { N = 16384 };	/* 1 MiB of 64-byte blocks */
	struct md_buf *b = calloc(N + 1, sizeof(*b));
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_pool_stats st;
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, md_alloc(pool, 64, &b[i]));
	ASSERT_EQ(-ENOMEM, md_alloc_ex(pool, 64, &opts, &b[N]));
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_SLAB, 64, true);
	EXPECT_EQ(MiB, oom.stats.tier[MD_TIER_SLAB].current_bytes);
	EXPECT_EQ(MiB, oom.stats.tier[MD_TIER_SLAB].region_bytes);
	EXPECT_EQ(N, oom.stats.tier[MD_TIER_SLAB].current_count);
	/* Another class cannot get a slab either. */
	ASSERT_EQ(-ENOMEM, md_alloc(pool, 4096, &b[N]));
	EXPECT_EQ(0, overlap(b, N));

	ASSERT_EQ(0, md_free(pool, &b[777]));
	ASSERT_EQ(0, md_alloc(pool, 64, &b[777]));
	/* Free a whole slab's worth: its class's slab is empty, then reused
	 * by another class once the OOM path gives it back. */
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	ASSERT_EQ(0, md_alloc(pool, 4096, &b[N]));
	EXPECT_EQ(4096, b[N].size);
	md_pool_stats(pool, &st);
	EXPECT_EQ(N - 1024 + 1, st.tier[MD_TIER_SLAB].current_count);
	for (i = 1024; i <= N; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_destroy(pool);
	md_device_close(dev);
	free(b);
}

/* The OOM path gives cached memory back and retries. */
TEST(reclaim_on_oom)
{
	struct md_pool_config cfg = { .limit = 64 * MiB };
	struct md_device *dev = host_dev(256);
	struct md_pool_stats st;
	struct md_buf s[100], b[4];
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, md_alloc(pool, 1000, &s[i]));
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, md_free(pool, &s[i]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(8 * MiB, st.tier[MD_TIER_SLAB].region_bytes);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &b[i]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(0, st.tier[MD_TIER_SLAB].region_bytes);
	EXPECT_EQ(64 * MiB, st.tier[MD_TIER_BUDDY].region_bytes);
	EXPECT_EQ(0, st.total.oom_count);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* The backend runs out (address space capped): -ENOMEM, then recovery. */
TEST(exhaustion_backend)
{
	struct md_device *dev = host_dev(256);
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_buf b[64];
	struct md_pool *pool;
	int i, n, err = 0;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	/* Each test runs in a child of its own: the cap stays there. */
	ASSERT_EQ(0, cap_address_space(512 * MiB));
	for (n = 0; n < 64; n++) {
		err = md_alloc_ex(pool, 100 * MiB, &opts, &b[n]);
		if (err)
			break;
	}
	ASSERT_EQ(-ENOMEM, err);
	EXPECT_GE(n, 3);
	EXPECT_LE(n, 5);
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_LARGE, 100 * MiB, false);
	EXPECT_EQ(0, oom.limit);
	EXPECT_EQ((uint64_t)n * 100 * MiB, oom.stats.total.region_bytes);
	EXPECT_EQ(n, oom.stats.total.current_count);
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_alloc(pool, 100 * MiB, &b[0]));
	/* A different size than what is cached: the cache is given back. */
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_alloc(pool, 60 * MiB, &b[0]));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * The pool's limit refuses the buddy tier's larger regions, then the
 * backend refuses the one the limit allows: the report names the backend,
 * whose refusal was the last.
 */
TEST(exhaustion_backend_after_the_limit)
{
	struct md_pool_config cfg = { .limit = 40 * MiB,
				      .buddy_region = 32 * MiB };
	struct md_device *dev = host_dev(256);
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_buf a, b, c;
	struct md_pool *pool;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	/* One 32 MiB buddy region, used up. */
	ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &a));
	ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &b));
	/*
	 * A 32 or 16 MiB region would exceed the limit; 8 and 4 MiB (the
	 * block's size, the least the tier takes) do not, but will not map.
	 */
	ASSERT_EQ(0, cap_address_space(2 * MiB));
	ASSERT_EQ(-ENOMEM, md_alloc_ex(pool, 4 * MiB, &opts, &c));
	expect_oom(_metadata, &oom, -ENOMEM, MD_TIER_BUDDY, 4 * MiB, false);
	EXPECT_EQ(40 * MiB, oom.limit);
	EXPECT_EQ(32 * MiB, oom.stats.total.region_bytes);
	ASSERT_EQ(0, md_free(pool, &a));
	ASSERT_EQ(0, md_free(pool, &b));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ stats */

struct expect {
	uint64_t alloc, freed, ab, fb, req, reqtot, cur, peak, curc, peakc;
};

static void track(struct expect *e, const struct md_buf *b, uint64_t req,
		  bool alloc)
{
	if (alloc) {
		e->alloc++;
		e->ab += b->size;
		e->req += req;
		e->reqtot += req;
		e->cur += b->size;
		e->curc++;
	} else {
		e->freed++;
		e->fb += b->size;
		e->req -= req;
		e->cur -= b->size;
		e->curc--;
	}
	if (e->cur > e->peak)
		e->peak = e->cur;
	if (e->curc > e->peakc)
		e->peakc = e->curc;
}

static void check_tier(struct __test_metadata *_metadata,
		       const struct md_tier_stats *s, const struct expect *e)
{
	EXPECT_EQ(e->alloc, s->alloc_count);
	EXPECT_EQ(e->freed, s->free_count);
	EXPECT_EQ(e->curc, s->current_count);
	EXPECT_EQ(e->peakc, s->peak_count);
	EXPECT_EQ(e->ab, s->allocated_bytes);
	EXPECT_EQ(e->fb, s->freed_bytes);
	EXPECT_EQ(e->cur, s->current_bytes);
	EXPECT_EQ(e->peak, s->peak_bytes);
	EXPECT_EQ(e->req, s->requested_bytes);
	EXPECT_EQ(e->reqtot, s->requested_total);
	EXPECT_EQ(s->region_bytes - s->current_bytes, s->free_bytes);
}

/* A scripted sequence against figures the test keeps itself. */
static void stats_script(struct __test_metadata *_metadata, uint32_t flags)
{
	struct md_pool_config cfg = { .flags = flags };
	struct md_device *dev = host_dev(256);
	struct expect e[MD_TIER_COUNT + 1];
	struct md_pool_stats st;
	struct md_buf b[600];
	uint64_t req[600], seed = 12345;
	struct md_pool *pool;
	int i, t, round;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	memset(e, 0, sizeof(e));
	memset(b, 0, sizeof(b));
	for (round = 0; round < 4; round++) {
		for (i = 0; i < 600; i++) {
			if (b[i].block && (seed >> 3) % 3 == 0) {
				t = b[i].tier;
				ASSERT_EQ(0, md_free(pool, &b[i]));
				track(&e[t], &b[i], req[i], false);
				track(&e[MD_TIER_COUNT], &b[i], req[i], false);
				b[i].block = NULL;
			} else if (!b[i].block) {
				xorshift64(&seed);
				req[i] = i % 97 == 0 ? 17 * MiB + seed % MiB :
					 i % 13 == 0 ? MiB + seed % (8 * MiB) :
						       1 + (seed >> 20) % (300 * KiB);
				ASSERT_EQ(0, md_alloc(pool, req[i], &b[i]));
				t = b[i].tier;
				track(&e[t], &b[i], req[i], true);
				track(&e[MD_TIER_COUNT], &b[i], req[i], true);
			}
			xorshift64(&seed);
		}
		md_pool_stats(pool, &st);
		for (t = 0; t < MD_TIER_COUNT; t++)
			check_tier(_metadata, &st.tier[t], &e[t]);
		check_tier(_metadata, &st.total, &e[MD_TIER_COUNT]);
		/* The regions the pool holds are what the device gave. */
		EXPECT_EQ(dev_bytes(dev), st.total.region_bytes);
		EXPECT_EQ(st.tier[0].region_bytes + st.tier[1].region_bytes +
			  st.tier[2].region_bytes, st.total.region_bytes);
		EXPECT_EQ(0, st.violations);
		EXPECT_STREQ("host", st.backend);
		EXPECT_EQ(256, st.align);
	}
	for (i = 0; i < 600; i++) {
		if (!b[i].block)
			continue;
		ASSERT_EQ(0, md_free(pool, &b[i]));
		track(&e[b[i].tier], &b[i], req[i], false);
		track(&e[MD_TIER_COUNT], &b[i], req[i], false);
	}
	md_pool_stats(pool, &st);
	for (t = 0; t < MD_TIER_COUNT; t++)
		check_tier(_metadata, &st.tier[t], &e[t]);
	check_tier(_metadata, &st.total, &e[MD_TIER_COUNT]);
	EXPECT_EQ(0, st.total.current_bytes);
	EXPECT_EQ(0, st.total.requested_bytes);
	EXPECT_GT(e[MD_TIER_SLAB].alloc, 500);
	EXPECT_GT(e[MD_TIER_BUDDY].alloc, 50);
	EXPECT_GT(e[MD_TIER_LARGE].alloc, 5);
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(stats_exact)
{
	stats_script(_metadata, 0);
}

TEST(stats_exact_without_thread_caches)
{
	stats_script(_metadata, MD_POOL_NO_TCACHE);
}

/* Region counters follow the device's. */
TEST(stats_regions)
{
	struct md_device *dev = host_dev(64);
	struct md_device_stats ds;
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf a, b, c;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	ASSERT_EQ(0, md_alloc(pool, 100, &a));
	ASSERT_EQ(0, md_alloc(pool, 2 * MiB, &b));
	ASSERT_EQ(0, md_alloc(pool, 32 * MiB, &c));
	md_pool_stats(pool, &st);
	EXPECT_EQ(1, st.tier[MD_TIER_SLAB].region_count);
	EXPECT_EQ(8 * MiB, st.tier[MD_TIER_SLAB].region_bytes);
	EXPECT_EQ(1, st.tier[MD_TIER_BUDDY].region_count);
	EXPECT_EQ(64 * MiB, st.tier[MD_TIER_BUDDY].region_bytes);
	EXPECT_EQ(1, st.tier[MD_TIER_LARGE].region_count);
	EXPECT_EQ(32 * MiB, st.tier[MD_TIER_LARGE].region_bytes);
	EXPECT_EQ(3, st.total.region_allocs);
	EXPECT_EQ(104 * MiB, st.total.region_peak_bytes);
	md_device_stats(dev, &ds);
	EXPECT_EQ(ds.region_allocs, st.total.region_allocs);
	EXPECT_EQ(ds.bytes_current, st.total.region_bytes);
	ASSERT_EQ(0, md_free(pool, &a));
	ASSERT_EQ(0, md_free(pool, &b));
	ASSERT_EQ(0, md_free(pool, &c));
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	md_pool_stats(pool, &st);
	EXPECT_EQ(0, st.total.region_bytes);
	EXPECT_EQ(0, st.total.region_count);
	EXPECT_EQ(3, st.total.region_frees);
	EXPECT_EQ(104 * MiB, st.total.region_peak_bytes);
	EXPECT_EQ(0, dev_bytes(dev));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* Peaks: the most that was ever held at once, per tier and in all. */
TEST(stats_peaks)
{
	enum { N = 5000 };	/* past a thread's 1 MiB publishing threshold */
	struct md_device *dev = host_dev(256);
	struct md_buf *v = calloc(N, sizeof(*v));
	struct md_pool_stats st;
	struct md_buf b[2];
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_NE(NULL, v);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, md_alloc(pool, 1000, &v[i]));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, md_alloc(pool, 2 * MiB, &b[i]));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, md_free(pool, &v[i]));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	for (i = 0; i < 20; i++)
		ASSERT_EQ(0, md_alloc(pool, 1000, &v[i]));
	for (i = 0; i < 15; i++)
		ASSERT_EQ(0, md_free(pool, &v[i]));
	ASSERT_EQ(0, md_alloc(pool, 2 * MiB, &b[0]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(20 * 1024, st.tier[MD_TIER_SLAB].peak_bytes);
	EXPECT_EQ(20, st.tier[MD_TIER_SLAB].peak_count);
	EXPECT_EQ(5 * 1024, st.tier[MD_TIER_SLAB].current_bytes);
	EXPECT_EQ(4 * MiB, st.tier[MD_TIER_BUDDY].peak_bytes);
	EXPECT_EQ(2, st.tier[MD_TIER_BUDDY].peak_count);
	EXPECT_EQ(2 * MiB, st.tier[MD_TIER_BUDDY].current_bytes);
	/*
	 * The tiers peaked at different times: the total is not their sum.
	 * Bytes peaked with 10 + 2 blocks, the count with the 20.
	 */
	EXPECT_EQ(4 * MiB + 10 * 1024, st.total.peak_bytes);
	EXPECT_EQ(20, st.total.peak_count);
	for (i = 15; i < 20; i++)
		ASSERT_EQ(0, md_free(pool, &v[i]));
	ASSERT_EQ(0, md_free(pool, &b[0]));

	/* Many slab blocks: the thread publishes on the way. */
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, md_alloc(pool, 1000, &v[i]));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, md_free(pool, &v[i]));
	for (i = 0; i < N / 2; i++)
		ASSERT_EQ(0, md_alloc(pool, 1000, &v[i]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(N * 1024, st.tier[MD_TIER_SLAB].peak_bytes);
	EXPECT_EQ(N, st.tier[MD_TIER_SLAB].peak_count);
	EXPECT_EQ(N * 1024, st.total.peak_bytes);
	EXPECT_EQ(N, st.total.peak_count);
	EXPECT_EQ(N / 2 * 1024, st.total.current_bytes);
	for (i = 0; i < N / 2; i++)
		ASSERT_EQ(0, md_free(pool, &v[i]));
	free(v);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* The tail of a trimmed buddy block serves other requests. */
TEST(buddy_trim_tails_usable)
{
	struct md_pool_config cfg = { .limit = 64 * MiB };
	struct md_device *dev = host_dev(256);
	struct md_buf b[32], extra;
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	/* 3 MiB blocks at 4 MiB boundaries, 1 MiB tails in between. */
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(0, md_alloc(pool, 3 * MiB, &b[i]));
		EXPECT_EQ(0, (b[i].dev_va - b[0].dev_va) % (4 * MiB));
	}
	for (i = 16; i < 32; i++)
		ASSERT_EQ(0, md_alloc(pool, MiB, &b[i]));
	/* The region is full now. */
	EXPECT_EQ(-ENOMEM, md_alloc(pool, MiB, &extra));
	EXPECT_EQ(0, overlap(b, 32));
	for (i = 0; i < 32; i++)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ fragmentation */

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-12;
}

TEST(fragmentation_buddy)
{
	struct md_device *dev = host_dev(256);
	struct md_pool_stats st;
	const struct md_tier_stats *t = &st.tier[MD_TIER_BUDDY];
	struct md_buf b[64];
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &b[i]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(0, t->free_bytes);
	EXPECT_TRUE(near(0.0, t->fragmentation));
	/* Two separate 16 MiB holes: half of the free space is usable. */
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_free(pool, &b[2]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(32 * MiB, t->free_bytes);
	EXPECT_EQ(16 * MiB, t->largest_free);
	EXPECT_TRUE(near(0.5, t->fragmentation));
	/* b[1] joins b[0]'s hole: 32 of 48 MiB in one piece. */
	ASSERT_EQ(0, md_free(pool, &b[1]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(32 * MiB, t->largest_free);
	EXPECT_TRUE(near(1.0 - 32.0 / 48.0, t->fragmentation));
	ASSERT_EQ(0, md_free(pool, &b[3]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(64 * MiB, t->largest_free);
	EXPECT_TRUE(near(0.0, t->fragmentation));

	/* 1 MiB blocks, every other one freed: 32 holes of 1 MiB. */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, md_alloc(pool, MiB, &b[i]));
	for (i = 0; i < 64; i += 2)
		ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(1, t->region_count);
	EXPECT_EQ(32 * MiB, t->free_bytes);
	EXPECT_EQ(MiB, t->largest_free);
	EXPECT_TRUE(near(1.0 - 1.0 / 32.0, t->fragmentation));
	for (i = 1; i < 64; i += 2)
		ASSERT_EQ(0, md_free(pool, &b[i]));

	/* 3 MiB is trimmed to 48 granules; the upper half stays whole. */
	ASSERT_EQ(0, md_alloc(pool, 3 * MiB, &b[0]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(61 * MiB, t->free_bytes);
	EXPECT_EQ(32 * MiB, t->largest_free);
	EXPECT_TRUE(near(1.0 - 32.0 / 61.0, t->fragmentation));
	/* The total: slab and large tiers hold nothing. */
	EXPECT_EQ(61 * MiB, st.total.free_bytes);
	EXPECT_TRUE(near(t->fragmentation, st.total.fragmentation));
	ASSERT_EQ(0, md_free(pool, &b[0]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(fragmentation_slab_and_large)
{
	struct md_pool_config cfg = { .flags = MD_POOL_NO_TCACHE };
	struct md_device *dev = host_dev(64);
	struct md_pool_stats st;
	struct md_buf b[8], l[2];
	struct md_pool *pool;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	/* 512 KiB class: a 4 MiB slab of 8; the other 4 MiB uncarved. */
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, md_alloc(pool, 512 * KiB, &b[i]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(4 * MiB, st.tier[MD_TIER_SLAB].free_bytes);
	EXPECT_EQ(4 * MiB, st.tier[MD_TIER_SLAB].largest_free);
	EXPECT_TRUE(near(0.0, st.tier[MD_TIER_SLAB].fragmentation));
	ASSERT_EQ(0, md_free(pool, &b[3]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(4 * MiB + 512 * KiB, st.tier[MD_TIER_SLAB].free_bytes);
	EXPECT_TRUE(near(1.0 - 4.0 / 4.5, st.tier[MD_TIER_SLAB].fragmentation));
	/* Large: two cached regions of 20 and 30 MiB: 30 of 50 usable. */
	ASSERT_EQ(0, md_alloc(pool, 20 * MiB, &l[0]));
	ASSERT_EQ(0, md_alloc(pool, 30 * MiB, &l[1]));
	ASSERT_EQ(0, md_free(pool, &l[0]));
	ASSERT_EQ(0, md_free(pool, &l[1]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(50 * MiB, st.tier[MD_TIER_LARGE].free_bytes);
	EXPECT_EQ(30 * MiB, st.tier[MD_TIER_LARGE].largest_free);
	EXPECT_TRUE(near(0.4, st.tier[MD_TIER_LARGE].fragmentation));
	EXPECT_EQ(30 * MiB, st.total.largest_free);
	for (i = 0; i < 8; i++)
		if (i != 3)
			ASSERT_EQ(0, md_free(pool, &b[i]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ snapshots */

struct want {
	struct md_buf b;
	uint64_t req;
	const char *tag, *site;
	enum md_block_state state;
	uint32_t holders;
	bool live;
};

static char *snapshot_text(struct md_pool *pool)
{
	long n = md_snapshot_buf(pool, NULL, 0);
	char *s;

	if (n < 0)
		return NULL;
	s = malloc(n + 1);
	if (s && md_snapshot_buf(pool, s, n + 1) != n) {
		free(s);
		return NULL;
	}
	return s;
}

TEST(snapshot_json_read_back)
{
	static const char *const tags[] = {
		"encoder.qkv", "decoder/ffn", "a \"quoted\" \\ tag\n", NULL,
		"kv-cache", "logits", "conv1", "conv2",
	};
	static const uint64_t sizes[] = {
		100, 4000, 70000, 900 * KiB, MiB, 5 * MiB + 3, 17 * MiB, 64,
	};
	struct md_device *dev = host_dev(128);
	struct want w[8];
	struct md_pool_stats st;
	struct md_pool *pool;
	struct jv root;
	const struct jv *blocks, *stats;
	char *text, *ftext;
	size_t flen;
	FILE *f;
	int i, live = 0;
	size_t k;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	memset(w, 0, sizeof(w));
	for (i = 0; i < 8; i++) {
		struct md_alloc_opts o = { .tag = tags[i] };

		o.site = i % 2 ? MD_SITE : NULL;
		ASSERT_EQ(0, md_alloc_ex(pool, sizes[i], &o, &w[i].b));
		w[i].req = sizes[i];
		w[i].tag = tags[i];
		w[i].site = o.site;
		w[i].state = MD_BLOCK_ALLOCATED;
		w[i].live = true;
	}
	/* ACTIVE with two holders, RELEASED, and two freed ones. */
	ASSERT_EQ(0, md_buf_acquire(pool, &w[1].b));
	ASSERT_EQ(0, md_buf_acquire(pool, &w[1].b));
	w[1].state = MD_BLOCK_ACTIVE;
	w[1].holders = 2;
	ASSERT_EQ(0, md_buf_acquire(pool, &w[5].b));
	ASSERT_EQ(1, md_buf_release(pool, &w[5].b));
	w[5].state = MD_BLOCK_RELEASED;
	ASSERT_EQ(0, md_free(pool, &w[2].b));
	w[2].live = false;
	ASSERT_EQ(0, md_free(pool, &w[6].b));
	w[6].live = false;

	text = snapshot_text(pool);
	ASSERT_NE(NULL, text);
	/* The FILE * flavour writes the same. */
	f = open_memstream(&ftext, &flen);
	ASSERT_EQ(0, md_snapshot(pool, f));
	fclose(f);
	EXPECT_STREQ(text, ftext);
	free(ftext);
	/* Cut short, as snprintf(). */
	{
		char small[16];

		EXPECT_EQ((long)strlen(text), md_snapshot_buf(pool, small, 16));
		EXPECT_EQ(15, strlen(small));
		EXPECT_EQ(0, strncmp(small, text, 15));
	}

	ASSERT_TRUE(json_parse(text, &root)) {
		TH_LOG("not JSON:\n%s", text);
	}
	EXPECT_EQ(1, json_u64(&root, "version"));
	EXPECT_STREQ("host", json_str(&root, "backend"));
	EXPECT_EQ(128, json_u64(&root, "align"));
	md_pool_stats(pool, &st);
	stats = json_get(&root, "stats");
	ASSERT_NE(NULL, stats);
	EXPECT_EQ(st.total.current_bytes,
		  json_u64(json_get(stats, "total"), "current_bytes"));
	EXPECT_EQ(st.tier[MD_TIER_BUDDY].allocated_bytes,
		  json_u64(json_get(stats, "buddy"), "allocated_bytes"));
	EXPECT_EQ(st.tier[MD_TIER_SLAB].requested_bytes,
		  json_u64(json_get(stats, "slab"), "requested_bytes"));
	EXPECT_EQ(0, json_u64(json_get(stats, "violations"), "total"));

	blocks = json_get(&root, "blocks");
	ASSERT_NE(NULL, blocks);
	ASSERT_EQ(J_ARR, blocks->t);
	for (i = 0; i < 8; i++)
		live += w[i].live;
	ASSERT_EQ(live, blocks->n);
	/* Every block once, with every field; nothing that was freed. */
	for (i = 0; i < 8; i++) {
		const struct jv *found = NULL;

		for (k = 0; k < blocks->n; k++)
			if (json_u64(&blocks->items[k], "dev_va") == w[i].b.dev_va)
				found = &blocks->items[k];
		if (!w[i].live) {
			EXPECT_EQ(NULL, found);
			continue;
		}
		ASSERT_NE(NULL, found);
		EXPECT_EQ(w[i].b.size, json_u64(found, "size"));
		EXPECT_EQ(w[i].req, json_u64(found, "requested"));
		EXPECT_STREQ(md_pool_tier_name(w[i].b.tier),
			     json_str(found, "tier"));
		EXPECT_STREQ(md_block_state_name(w[i].state),
			     json_str(found, "state"));
		EXPECT_EQ(w[i].holders, json_u64(found, "holders"));
		EXPECT_EQ(w[i].b.generation, json_u64(found, "generation"));
		if (w[i].tag) {
			EXPECT_STREQ(w[i].tag, json_str(found, "tag"));
		} else {
			EXPECT_EQ(J_NULL, json_get(found, "tag")->t);
		}
		if (w[i].site) {
			EXPECT_STREQ(w[i].site, json_str(found, "site"));
			EXPECT_NE(NULL, strstr(w[i].site, "pool_test.c:"));
		} else {
			EXPECT_EQ(J_NULL, json_get(found, "site")->t);
		}
	}
	jv_free(&root);
	free(text);

	/* An empty pool's snapshot is valid JSON with no blocks. */
	for (i = 0; i < 8; i++) {
		if (!w[i].live)
			continue;
		while (md_buf_state(pool, &w[i].b) == MD_BLOCK_ACTIVE)
			ASSERT_LE(0, md_buf_release(pool, &w[i].b));
		ASSERT_EQ(0, md_free(pool, &w[i].b));
	}
	text = snapshot_text(pool);
	ASSERT_TRUE(json_parse(text, &root));
	EXPECT_EQ(0, json_get(&root, "blocks")->n);
	jv_free(&root);
	free(text);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * A locale whose decimal point is a comma (made with localedef in a
 * directory of the test's own: the host may have none installed).
 */
static bool comma_locale(char *dir)
{
	char path[256], cmd[700];
	FILE *f;

	if (!mkdtemp(dir))
		return false;
	snprintf(path, sizeof(path), "%s/comma.def", dir);
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs("LC_NUMERIC\ndecimal_point \",\"\nthousands_sep \"\"\n"
	      "grouping -1\nEND LC_NUMERIC\n", f);
	fclose(f);
	/* -c: the other categories are missing, which is only a warning. */
	snprintf(cmd, sizeof(cmd),
		 "localedef -c -i %s -f UTF-8 %s/xx_XX.UTF-8 >/dev/null 2>&1",
		 path, dir);
	if (system(cmd) < 0)
		return false;
	setenv("LOCPATH", dir, 1);
	if (!setlocale(LC_NUMERIC, "xx_XX.UTF-8"))
		return false;
	snprintf(path, sizeof(path), "%.1f", 0.5);
	return !strcmp(path, "0,5");
}

/* The snapshot is JSON whatever the program's locale says. */
TEST(snapshot_json_under_a_comma_locale)
{
	struct md_device *dev = host_dev(256);
	char dir[] = "/tmp/md_pool_test_XXXXXX", cmd[64];
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf b[4];
	struct jv root;
	bool comma;
	char *text;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	/* Two separate 16 MiB holes in the buddy tier: fragmentation 0.5. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_alloc(pool, 16 * MiB, &b[i]));
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_free(pool, &b[2]));
	comma = comma_locale(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		TH_LOG("could not remove %s", dir);
	if (!comma)
		SKIP(return, "no locale with a decimal comma (localedef)");
	text = snapshot_text(pool);
	setlocale(LC_NUMERIC, "C");	/* json_mini reads with strtod() */
	ASSERT_NE(NULL, text);
	ASSERT_TRUE(json_parse(text, &root)) {
		TH_LOG("not JSON:\n%s", text);
	}
	md_pool_stats(pool, &st);
	EXPECT_EQ(0.5, st.tier[MD_TIER_BUDDY].fragmentation);
	EXPECT_EQ(0.5, json_get(json_get(json_get(&root, "stats"), "buddy"),
				"fragmentation")->num);
	jv_free(&root);
	free(text);
	ASSERT_EQ(0, md_free(pool, &b[1]));
	ASSERT_EQ(0, md_free(pool, &b[3]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/*
 * JSON text is UTF-8: a tag or site that is not (a Latin-1 name, a cut
 * sequence) comes out with U+FFFD for each bad byte; UTF-8 stays as it is.
 */
TEST(snapshot_json_tags_not_utf8)
{
	static const char *const tags[] = {
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",	/* UTF-8 */
		"caf\xe9",			/* Latin-1 */
		"cut \xe2\x82",		/* a sequence cut short */
		"\xc0\xaf \xed\xa0\x80",	/* overlong, a surrogate */
	};
	static const char *const want[] = {
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		"caf\xef\xbf\xbd",
		"cut \xef\xbf\xbd\xef\xbf\xbd",
		"\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
	};
	struct md_device *dev = host_dev(64);
	const struct jv *blocks;
	struct md_pool *pool;
	struct md_buf b[4];
	struct jv root;
	char *text;
	size_t k;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < 4; i++) {
		struct md_alloc_opts o = { .tag = tags[i],
					   .site = tags[3 - i] };

		ASSERT_EQ(0, md_alloc_ex(pool, 64, &o, &b[i]));
	}
	text = snapshot_text(pool);
	ASSERT_NE(NULL, text);
	ASSERT_TRUE(json_parse(text, &root)) {
		TH_LOG("not JSON:\n%s", text);
	}
	blocks = json_get(&root, "blocks");
	ASSERT_NE(NULL, blocks);
	ASSERT_EQ(4, blocks->n);
	for (i = 0; i < 4; i++) {
		const struct jv *found = NULL;

		for (k = 0; k < blocks->n; k++) {
			const struct jv *it = &blocks->items[k];

			if (json_u64(it, "dev_va") == b[i].dev_va)
				found = it;
		}
		ASSERT_NE(NULL, found);
		EXPECT_STREQ(want[i], json_str(found, "tag"));
		EXPECT_STREQ(want[3 - i], json_str(found, "site"));
		ASSERT_EQ(0, md_free(pool, &b[i]));
	}
	jv_free(&root);
	free(text);
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ cleaner */

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

TEST(cleaner_finds_deliberate_leak)
{
	struct md_device *dev = host_dev(256);
	struct md_cleaner_report rep;
	struct md_pool_stats st;
	struct md_buf leak[3], rel[2], held, ok[20];
	struct md_pool *pool;
	char *text;
	size_t len;
	FILE *f;
	long n;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < 20; i++)
		ASSERT_EQ(0, md_alloc(pool, 1000 + i * 5000, &ok[i]));
	/* The leak: three blocks nobody frees, in three tiers. */
	ASSERT_EQ(0, md_alloc_tagged(pool, 3000, "leak-small", &leak[0]));
	ASSERT_EQ(0, md_alloc_tagged(pool, 2 * MiB, "leak-buddy", &leak[1]));
	ASSERT_EQ(0, md_alloc_tagged(pool, 20 * MiB, "leak-large", &leak[2]));
	/* Used and released by their users, never freed: recyclable. */
	ASSERT_EQ(0, md_alloc_tagged(pool, 500, "released", &rel[0]));
	ASSERT_EQ(0, md_alloc_tagged(pool, 4 * MiB, "released", &rel[1]));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, md_buf_acquire(pool, &rel[i]));
		ASSERT_EQ(1, md_buf_release(pool, &rel[i]));
	}
	/* Still held by a user. */
	ASSERT_EQ(0, md_alloc_tagged(pool, 777, "in-use", &held));
	ASSERT_EQ(0, md_buf_acquire(pool, &held));
	for (i = 0; i < 20; i++)
		ASSERT_EQ(0, md_free(pool, &ok[i]));

	f = open_memstream(&text, &len);
	n = md_memory_cleaner(pool, f, &rep);
	fclose(f);
	EXPECT_EQ(4, n);
	EXPECT_EQ(4, rep.held_blocks);
	EXPECT_EQ(leak[0].size + leak[1].size + leak[2].size + held.size,
		  rep.held_bytes);
	EXPECT_EQ(2, rep.recycled_blocks);
	EXPECT_EQ(rel[0].size + rel[1].size, rep.recycled_bytes);
	EXPECT_EQ(4, count_lines(text, "  held: "));
	EXPECT_EQ(1, count_lines(text, "tag leak-small"));
	EXPECT_EQ(1, count_lines(text, "tag leak-buddy"));
	EXPECT_EQ(1, count_lines(text, "tag leak-large"));
	EXPECT_EQ(1, count_lines(text, "active slab block of 1024 B (requested 777 B)"));
	EXPECT_EQ(0, count_lines(text, "tag released"));
	EXPECT_EQ(4, count_lines(text, "pool_test.c:"));
	EXPECT_NE(NULL, strstr(text, "4 blocks still held"));
	EXPECT_NE(NULL, strstr(text, "recycled 2 released blocks"));
	free(text);

	/* The recycled ones are gone for their owner: a free is a double free. */
	EXPECT_EQ(-ESTALE, md_buf_state(pool, &rel[0]));
	EXPECT_EQ(-EINVAL, md_free(pool, &rel[0]));
	EXPECT_EQ(-EINVAL, md_free(pool, &rel[1]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(4, st.total.current_count);
	EXPECT_EQ(2, st.violation[MD_POOL_DOUBLE_FREE]);
	/* Only the regions that still hold a leak remain. */
	EXPECT_EQ(3, st.total.region_count);

	/* Fix the leak: nothing held, everything back to the device. */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, md_free(pool, &leak[i]));
	ASSERT_EQ(1, md_buf_release(pool, &held));
	ASSERT_EQ(0, md_free(pool, &held));
	n = md_memory_cleaner(pool, NULL, &rep);
	EXPECT_EQ(0, n);
	EXPECT_EQ(0, rep.recycled_blocks);
	EXPECT_EQ(3, rep.regions_released);
	EXPECT_EQ(0, dev_bytes(dev));
	md_pool_stats(pool, &st);
	EXPECT_EQ(0, st.total.region_bytes);
	EXPECT_EQ(0, st.total.current_bytes);
	/* The pool works on after a full clean. */
	ASSERT_EQ(0, md_alloc(pool, 3000, &ok[0]));
	ASSERT_EQ(0, md_free(pool, &ok[0]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* One line per held block, whatever its tag and site hold. */
TEST(cleaner_report_one_line_each)
{
	struct md_device *dev = host_dev(64);
	struct md_alloc_opts o = { .tag = "two\nlines", .site = "a\tb\r" };
	struct md_pool *pool;
	struct md_buf b;
	char *text;
	size_t len;
	FILE *f;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	ASSERT_EQ(0, md_alloc_ex(pool, 100, &o, &b));
	f = open_memstream(&text, &len);
	EXPECT_EQ(1, md_memory_cleaner(pool, f, NULL));
	fclose(f);
	/* The summary line and one held line. */
	EXPECT_EQ(2, count_lines(text, "\n"));
	EXPECT_NE(NULL, strstr(text, ": 1 block still held"));
	EXPECT_EQ(0, count_lines(text, "\r"));
	EXPECT_EQ(1, count_lines(text, "tag two\\nlines, site a\\tb\\r\n"));
	free(text);
	ASSERT_EQ(0, md_free(pool, &b));
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST(cleaner_every_pool)
{
	struct md_device *dev = host_dev(64);
	struct md_pool *p1, *p2;
	struct md_buf a, b, c;
	char *text;
	size_t len;
	FILE *f;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &p1));
	ASSERT_EQ(0, md_pool_create(dev, NULL, &p2));
	ASSERT_EQ(0, md_alloc_tagged(p1, 64, "one", &a));
	ASSERT_EQ(0, md_alloc_tagged(p2, 2 * MiB, "two", &b));
	ASSERT_EQ(0, md_alloc(p2, 64, &c));
	ASSERT_EQ(0, md_free(p2, &c));
	f = open_memstream(&text, &len);
	EXPECT_EQ(2, md_memory_cleaner(NULL, f, NULL));
	fclose(f);
	EXPECT_EQ(1, count_lines(text, "tag one"));
	EXPECT_EQ(1, count_lines(text, "tag two"));
	free(text);
	md_pool_destroy(p1);
	EXPECT_EQ(1, md_memory_cleaner(NULL, NULL, NULL));
	md_pool_destroy(p2);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
}

TEST(destroy_with_live_blocks)
{
	struct md_device *dev = host_dev(64);
	struct md_pool *pool;
	struct md_buf b;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < 50; i++)
		ASSERT_EQ(0, md_alloc(pool, 1 + (uint64_t)i * 400 * KiB, &b));
	EXPECT_GT(dev_bytes(dev), 0);
	md_pool_destroy(pool);
	EXPECT_EQ(0, dev_bytes(dev));
	md_device_close(dev);
}

/* ------------------------------------------------------------ summary */

/* The summary's rows, in order, and where md_pool_stats() has each. */
#define SROW(l, f)	{ l, offsetof(struct md_tier_stats, f), 0 }
static const struct {
	const char *label;
	size_t off;
	int active;	/* 1: active bytes, 2: active blocks (not in stats) */
} summary_rows[] = {
	SROW("reserved", region_bytes),
	SROW("peak", region_peak_bytes),
	SROW("allocated", current_bytes),
	SROW("peak", peak_bytes),
	SROW("ever", allocated_bytes),
	{ "active", 0, 1 },
	SROW("requested", requested_bytes),
	SROW("free", free_bytes),
	SROW("largest free", largest_free),
	SROW("fragmentation", fragmentation),
	SROW("blocks", current_count),
	SROW("peak", peak_count),
	SROW("ever", alloc_count),
	{ "active blocks", 0, 2 },
	SROW("regions", region_count),
	SROW("ever", region_allocs),
	SROW("out of memory", oom_count),
};

/*
 * A known sequence over every tier (some blocks held, some freed, two
 * refused frees), then the summary in bytes read back row by row: every
 * figure is md_pool_stats()'s, the active ones what the test holds.
 */
TEST(summary_agrees_with_stats)
{
	static const uint64_t sizes[] = {
		100, 3000, 64 * KiB, 700 * KiB, 2 * MiB, 5 * MiB, 20 * MiB,
		40 * MiB, 1000, 2 * MiB,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	uint64_t act_b[MD_TIER_COUNT + 1] = { 0 }, act_c[MD_TIER_COUNT + 1] = { 0 };
	struct md_device *dev = host_dev(256);
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf b[N];
	char *text, *line, *save = NULL;
	long len, len2;
	size_t r = 0;
	int i, t;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_pool_create(dev, NULL, &pool));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, md_alloc(pool, sizes[i], &b[i]));
	/* Held: 0, 4, 6 (slab, buddy, large); freed: 1, 5, 7. */
	for (i = 0; i < N; i++) {
		if (i == 0 || i == 4 || i == 6) {
			ASSERT_EQ(0, md_buf_acquire(pool, &b[i]));
			act_b[b[i].tier] += b[i].size;
			act_c[b[i].tier]++;
			act_b[MD_TIER_COUNT] += b[i].size;
			act_c[MD_TIER_COUNT]++;
		}
	}
	/* 3 is acquired and released: RELEASED, not active. */
	ASSERT_EQ(0, md_buf_acquire(pool, &b[3]));
	ASSERT_EQ(1, md_buf_release(pool, &b[3]));
	ASSERT_EQ(0, md_free(pool, &b[1]));
	ASSERT_EQ(0, md_free(pool, &b[5]));
	ASSERT_EQ(0, md_free(pool, &b[7]));
	ASSERT_EQ(-EINVAL, md_free(pool, &b[7]));	/* double free */
	ASSERT_EQ(-EBUSY, md_free(pool, &b[0]));	/* held */

	EXPECT_EQ(-EINVAL, md_pool_summary(pool, stdout, 0x80));
	EXPECT_EQ(-EINVAL, md_pool_summary(pool, NULL, 0));
	len = md_pool_summary_buf(pool, NULL, 0, MD_SUMMARY_BYTES);
	ASSERT_GT(len, 0);
	text = malloc((size_t)len + 1);
	ASSERT_NE(NULL, text);
	len2 = md_pool_summary_buf(pool, text, (size_t)len + 1,
				   MD_SUMMARY_BYTES);
	ASSERT_EQ(len, len2);
	ASSERT_EQ((size_t)len, strlen(text));
	md_pool_stats(pool, &st);

	line = strtok_r(text, "\n", &save);
	ASSERT_NE(NULL, line);
	EXPECT_NE(NULL, strstr(line, "backend host"));
	EXPECT_NE(NULL, strstr(line, "alignment 256"));
	line = strtok_r(NULL, "\n", &save);	/* the column heads */
	ASSERT_NE(NULL, line);
	EXPECT_NE(NULL, strstr(line, "slab"));
	EXPECT_NE(NULL, strstr(line, "buddy"));
	EXPECT_NE(NULL, strstr(line, "large"));
	EXPECT_NE(NULL, strstr(line, "total"));
	for (r = 0; r < sizeof(summary_rows) / sizeof(summary_rows[0]); r++) {
		char label[15], *p, *end;

		line = strtok_r(NULL, "\n", &save);
		ASSERT_NE(NULL, line);
		ASSERT_GT(strlen(line), 14u);
		memcpy(label, line, 14);
		label[14] = '\0';
		for (i = 13; i >= 0 && label[i] == ' '; i--)
			label[i] = '\0';
		p = label;
		while (*p == ' ')
			p++;
		ASSERT_STREQ(summary_rows[r].label, p);
		p = line + 14;
		for (t = 0; t <= MD_TIER_COUNT; t++) {
			const struct md_tier_stats *s = t < MD_TIER_COUNT ?
				&st.tier[t] : &st.total;
			const char *f = (const char *)s + summary_rows[r].off;

			if (summary_rows[r].off ==
			    offsetof(struct md_tier_stats, fragmentation) &&
			    !summary_rows[r].active) {
				double d = strtod(p, &end), want;

				memcpy(&want, f, sizeof(want));
				ASSERT_NE(p, end);
				EXPECT_LT(fabs(d - want), 1e-4) TH_LOG(
					"row %s tier %d", p, t);
			} else {
				uint64_t v = strtoull(p, &end, 10), want;

				ASSERT_NE(p, end);
				if (summary_rows[r].active == 1)
					want = act_b[t];
				else if (summary_rows[r].active == 2)
					want = act_c[t];
				else
					memcpy(&want, f, sizeof(want));
				EXPECT_EQ(want, v) TH_LOG("row %zu (%s), tier %d",
							  r, summary_rows[r].label,
							  t);
			}
			p = end;
		}
	}
	/* The sequence left figures a summary must show, not zeros. */
	EXPECT_EQ(7u, st.total.current_count);
	EXPECT_EQ(3u, act_c[MD_TIER_COUNT]);
	EXPECT_GT(st.tier[MD_TIER_LARGE].region_bytes, 0u);
	line = strtok_r(NULL, "\n", &save);
	ASSERT_NE(NULL, line);
	EXPECT_NE(NULL, strstr(line, "refused operations 2:"));
	EXPECT_NE(NULL, strstr(line, "double free 1"));
	EXPECT_NE(NULL, strstr(line, "free while held 1"));
	EXPECT_EQ(NULL, strtok_r(NULL, "\n", &save));

	/* For people: units, and a cut buffer says the whole length. */
	len = md_pool_summary_buf(pool, text, 64, 0);
	ASSERT_GT(len, 64);
	EXPECT_EQ(63u, strlen(text));
	free(text);
	len = md_pool_summary_buf(pool, NULL, 0, 0);
	text = malloc((size_t)len + 1);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(len, md_pool_summary_buf(pool, text, (size_t)len + 1, 0));
	EXPECT_NE(NULL, strstr(text, " MiB"));
	EXPECT_NE(NULL, strstr(text, " KiB"));
	free(text);

	ASSERT_EQ(1, md_buf_release(pool, &b[0]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

/* ------------------------------------------------------------ dynamic */

static int cmp_buf_va(const void *a, const void *b)
{
	const struct md_buf *x = a, *y = b;

	return x->dev_va < y->dev_va ? -1 : x->dev_va > y->dev_va;
}

static int walk_count(const char *json, const char *needle)
{
	int n = 0;

	while ((json = strstr(json, needle))) {
		n++;
		json++;
	}
	return n;
}

/*
 * MD_POOL_DYNAMIC: 1 MiB and up from the dynamic tier, behind the same
 * table as the others. Random allocations and frees against a model of
 * the live blocks: tiers, disjoint ranges, every stats figure of the
 * tier; then the protocol's refusals, the snapshot, the cleaner (a
 * RELEASED block recycled, free regions back) and the limit.
 */
TEST(dynamic_tier_behind_the_same_interface)
{
	enum { N = 64, STEPS = 3000 };
	struct md_pool_config cfg = { .flags = MD_POOL_DYNAMIC };
	struct md_device *dev = host_dev(256);
	uint64_t seed = test_seed(0xd1a1c7ULL), req[N] = { 0 };
	uint64_t cur_b = 0, cur_c = 0, req_b = 0, nalloc = 0;
	struct md_buf b[N], sorted[N];
	struct md_cleaner_report rep;
	struct md_pool_stats st;
	struct md_pool *pool;
	char *snap;
	long len;
	int i, k, n;

	ASSERT_NE(NULL, dev);
	EXPECT_STREQ("dynamic", md_pool_tier_name(MD_TIER_DYNAMIC));
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	memset(b, 0, sizeof(b));
	for (i = 0; i < STEPS; i++) {
		uint64_t r = xorshift64(&seed);

		k = (int)(r % N);
		if (b[k].block) {
			if (b[k].tier == MD_TIER_DYNAMIC) {
				cur_b -= b[k].size;
				cur_c--;
				req_b -= req[k];
			}
			ASSERT_EQ(0, md_free(pool, &b[k]));
			b[k].block = NULL;
			continue;
		}
		/* Mostly 1..48 MiB, some small ones for the slab tier. */
		req[k] = (r >> 8) % 8 ? MiB + (r >> 16) % (47 * MiB) :
			 1 + (r >> 16) % (64 * KiB);
		ASSERT_EQ(0, md_alloc(pool, req[k], &b[k]));
		ASSERT_EQ(req[k] >= MD_POOL_SLAB_LIMIT ? MD_TIER_DYNAMIC :
			  MD_TIER_SLAB, b[k].tier);
		ASSERT_GE(b[k].size, req[k]);
		ASSERT_EQ(0u, b[k].dev_va % 256);
		if (b[k].tier == MD_TIER_DYNAMIC) {
			ASSERT_LT(b[k].size - req[k], 256u);
			cur_b += b[k].size;
			cur_c++;
			req_b += req[k];
			nalloc++;
		}
		if (i % 50)
			continue;
		/* The live dynamic blocks never overlap. */
		for (n = 0, k = 0; k < N; k++)
			if (b[k].block && b[k].tier == MD_TIER_DYNAMIC)
				sorted[n++] = b[k];
		qsort(sorted, n, sizeof(sorted[0]), cmp_buf_va);
		for (k = 1; k < n; k++)
			ASSERT_LE(sorted[k - 1].dev_va + sorted[k - 1].size,
				  sorted[k].dev_va);
		md_pool_stats(pool, &st);
		ASSERT_EQ(cur_b, st.tier[MD_TIER_DYNAMIC].current_bytes);
		ASSERT_EQ(cur_c, st.tier[MD_TIER_DYNAMIC].current_count);
		ASSERT_EQ(req_b, st.tier[MD_TIER_DYNAMIC].requested_bytes);
		ASSERT_EQ(nalloc, st.tier[MD_TIER_DYNAMIC].alloc_count);
		ASSERT_EQ(0u, st.tier[MD_TIER_BUDDY].alloc_count);
		ASSERT_EQ(0u, st.tier[MD_TIER_LARGE].alloc_count);
		ASSERT_GE(st.tier[MD_TIER_DYNAMIC].region_bytes, cur_b);
		ASSERT_LE(st.tier[MD_TIER_DYNAMIC].largest_free,
			  st.tier[MD_TIER_DYNAMIC].free_bytes);
		ASSERT_GE(st.total.region_bytes,
			  st.tier[MD_TIER_DYNAMIC].region_bytes);
	}
	ASSERT_GT(nalloc, 1000u);

	/* The protocol on a dynamic block: held, released, freed twice. */
	for (k = 0; k < N && !(b[k].block && b[k].tier == MD_TIER_DYNAMIC);
	     k++)
		;
	ASSERT_LT(k, N);
	ASSERT_EQ(0, md_buf_acquire(pool, &b[k]));
	ASSERT_EQ(-EBUSY, md_free(pool, &b[k]));
	len = md_snapshot_buf(pool, NULL, 0);
	ASSERT_GT(len, 0);
	snap = malloc((size_t)len + 1);
	ASSERT_NE(NULL, snap);
	ASSERT_EQ(len, md_snapshot_buf(pool, snap, (size_t)len + 1));
	EXPECT_EQ((int)cur_c, walk_count(snap, "{\"tier\":\"dynamic\""));
	EXPECT_NE(NULL, strstr(snap, "\"dynamic\":{"));
	free(snap);
	ASSERT_EQ(1, md_buf_release(pool, &b[k]));
	/* RELEASED, nobody frees it: the cleaner recycles it. */
	memset(&rep, 0, sizeof(rep));
	md_memory_cleaner(pool, NULL, &rep);
	EXPECT_GE(rep.recycled_blocks, 1u);
	cur_b -= b[k].size;
	cur_c--;
	EXPECT_EQ(-EINVAL, md_free(pool, &b[k]));
	b[k].block = NULL;
	md_pool_stats(pool, &st);
	EXPECT_EQ(cur_b, st.tier[MD_TIER_DYNAMIC].current_bytes);
	EXPECT_EQ(1u, st.violation[MD_POOL_FREE_HELD]);
	EXPECT_EQ(1u, st.violation[MD_POOL_DOUBLE_FREE]);

	/* Everything freed: the cleaner gives the free regions back. */
	for (k = 0; k < N; k++)
		if (b[k].block)
			ASSERT_EQ(0, md_free(pool, &b[k]));
	memset(&rep, 0, sizeof(rep));
	md_memory_cleaner(pool, NULL, &rep);
	md_pool_stats(pool, &st);
	EXPECT_EQ(0u, st.tier[MD_TIER_DYNAMIC].current_bytes);
	EXPECT_LE(st.tier[MD_TIER_DYNAMIC].region_count, 1u);
	EXPECT_EQ(st.tier[MD_TIER_DYNAMIC].region_bytes,
		  st.tier[MD_TIER_DYNAMIC].largest_free);
	EXPECT_EQ(st.tier[MD_TIER_DYNAMIC].region_allocs -
		  st.tier[MD_TIER_DYNAMIC].region_frees,
		  st.tier[MD_TIER_DYNAMIC].region_count);
	md_pool_destroy(pool);

	/* The limit: a refusal counted in the dynamic tier. */
	cfg.limit = 64 * MiB;
	ASSERT_EQ(0, md_pool_create(dev, &cfg, &pool));
	ASSERT_EQ(0, md_alloc(pool, 40 * MiB, &b[0]));
	EXPECT_EQ(-ENOMEM, md_alloc(pool, 40 * MiB, &b[1]));
	md_pool_stats(pool, &st);
	EXPECT_EQ(1u, st.tier[MD_TIER_DYNAMIC].oom_count);
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_alloc(pool, 60 * MiB, &b[1]));
	ASSERT_EQ(0, md_free(pool, &b[1]));
	md_pool_destroy(pool);
	md_device_close(dev);
}

TEST_HARNESS_MAIN
