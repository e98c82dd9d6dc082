// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the dynamic pool (include/metadef/dynpool.h) on the host
 * backend. Best fit, splitting, coalescing, the free tree's red-black
 * invariants (checked here from a dump, independently of the library's own
 * check) against a reference model over thousands of seeded random
 * operations, alignment, growth, the reuse protocol, double frees,
 * exhaustion and recovery, trimming, threads.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/reuse.h>

#include "test_util.h"
#include "kselftest_harness.h"

#define KiB	1024ull
#define MiB	(1024ull * 1024)

static uint64_t rng_state;

static void seed(uint64_t s)
{
	rng_state = s ? s : 1;
}

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

static uint64_t rup(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ------------------------------------------- the test's own tree checker */

struct tree {
	const struct md_dynpool_node *n;
	size_t count;
	size_t seen;
	const struct md_dynpool_node *order[8192];	/* in-order */
	const char *why;
};

static bool key_less(const struct md_dynpool_node *a,
		     const struct md_dynpool_node *b)
{
	return a->size < b->size || (a->size == b->size && a->dev_va < b->dev_va);
}

/* Black height of the subtree at @i, or -1 (t->why says why). */
static int subtree(struct tree *t, int32_t i, int32_t parent, bool parent_red)
{
	const struct md_dynpool_node *n;
	int lh, rh;

	if (i < 0)
		return 1;
	/* Pre-order: a child comes after its parent (no cycles). */
	if ((size_t)i >= t->count || i <= parent) {
		t->why = "child index out of range or not after its parent";
		return -1;
	}
	n = &t->n[i];
	if (parent_red && n->red) {
		t->why = "red node with a red parent";
		return -1;
	}
	lh = subtree(t, n->left, i, n->red);
	if (lh < 0)
		return -1;
	if (t->seen >= sizeof(t->order) / sizeof(t->order[0])) {
		t->why = "too many nodes for the checker";
		return -1;
	}
	if (t->seen && !key_less(t->order[t->seen - 1], n)) {
		t->why = "in-order keys not strictly increasing";
		return -1;
	}
	t->order[t->seen++] = n;
	rh = subtree(t, n->right, i, n->red);
	if (rh < 0)
		return -1;
	if (lh != rh) {
		t->why = "black heights differ";
		return -1;
	}
	return lh + !n->red;
}

/* Red-black invariants of a pre-order dump; fills t->order. */
static bool tree_ok(struct tree *t, const struct md_dynpool_node *n,
		    size_t count)
{
	t->n = n;
	t->count = count;
	t->seen = 0;
	t->why = NULL;
	if (!count)
		return true;
	if (n[0].red) {
		t->why = "red root";
		return false;
	}
	if (subtree(t, 0, -1, false) < 0)
		return false;
	if (t->seen != count) {
		t->why = "nodes not reachable from the root";
		return false;
	}
	return true;
}

static struct tree tree;
static struct md_dynpool_node nodes[8192];

/* Dump @pool's free tree and check it; the count, or -1. */
static long dump_checked(struct md_dynpool *pool)
{
	size_t n = md_dynpool_dump_free(pool, nodes, 8192);

	if (n > 8192 || !tree_ok(&tree, nodes, n))
		return -1;
	return (long)n;
}

#define N(sz, va, l, r, isred) { .size = (sz), .dev_va = (va), \
				  .left = (l), .right = (r), .red = (isred) }

/* The checker itself must catch every kind of breakage. */
TEST(tree_checker_rejects_broken_trees)
{
	struct md_dynpool_node good[] = {
		N(20, 0, 1, 2, 0), N(10, 0, -1, -1, 1), N(30, 0, -1, -1, 1),
	};
	struct md_dynpool_node deeper[] = {
		N(20, 0, 1, 4, 0), N(10, 0, 2, 3, 1), N(5, 0, -1, -1, 0),
		N(15, 0, -1, -1, 0), N(30, 0, -1, 5, 0), N(40, 0, -1, -1, 1),
	};
	struct md_dynpool_node red_red[] = {
		N(20, 0, 1, 3, 0), N(10, 0, 2, -1, 1), N(5, 0, -1, -1, 1),
		N(30, 0, -1, -1, 0),
	};
	struct md_dynpool_node height[] = {
		N(20, 0, 1, -1, 0), N(10, 0, -1, -1, 0),
	};
	struct md_dynpool_node order[] = {
		N(20, 0, 1, 2, 0), N(30, 0, -1, -1, 1), N(40, 0, -1, -1, 1),
	};
	struct md_dynpool_node deep_order[] = {	/* locally fine, not globally */
		N(20, 0, 1, 4, 0), N(10, 0, 2, 3, 1), N(5, 0, -1, -1, 0),
		N(25, 0, -1, -1, 0), N(30, 0, -1, 5, 0), N(40, 0, -1, -1, 1),
	};
	struct md_dynpool_node tie[] = {	/* equal sizes: by address */
		N(20, 8, 1, 2, 0), N(20, 9, -1, -1, 1), N(30, 0, -1, -1, 1),
	};
	struct md_dynpool_node red_root[] = { N(20, 0, -1, -1, 1) };
	struct md_dynpool_node cycle[] = {
		N(20, 0, 1, -1, 0), N(10, 0, 0, -1, 1),
	};
	struct md_dynpool_node orphan[] = {
		N(20, 0, -1, -1, 0), N(10, 0, -1, -1, 1),
	};

	ASSERT_TRUE(tree_ok(&tree, good, 3));
	EXPECT_EQ(3, tree.seen);
	EXPECT_EQ(10, tree.order[0]->size);
	ASSERT_TRUE(tree_ok(&tree, deeper, 6));
	EXPECT_FALSE(tree_ok(&tree, red_red, 4));
	EXPECT_FALSE(tree_ok(&tree, height, 2));
	EXPECT_FALSE(tree_ok(&tree, order, 3));
	EXPECT_FALSE(tree_ok(&tree, deep_order, 6));
	EXPECT_FALSE(tree_ok(&tree, tie, 3));
	EXPECT_FALSE(tree_ok(&tree, red_root, 1));
	EXPECT_FALSE(tree_ok(&tree, cycle, 2));
	EXPECT_FALSE(tree_ok(&tree, orphan, 2));
}

/* ------------------------------------------------------ fixed scenarios */

struct pool_env {
	struct md_device *dev;
	struct md_dynpool *pool;
	uint64_t page;
};

static int env_open(struct pool_env *e, uint64_t dev_align,
		    const struct md_dynpool_config *cfg)
{
	e->dev = host_dev(dev_align);
	if (!e->dev)
		return -ENODEV;
	e->page = md_device_page_size(e->dev);
	return md_dynpool_create(e->dev, cfg, &e->pool);
}

static void env_close(struct pool_env *e)
{
	md_dynpool_destroy(e->pool);
	md_device_close(e->dev);
}

static struct md_dynpool_stats stats(struct md_dynpool *pool)
{
	struct md_dynpool_stats st;

	md_dynpool_stats(pool, &st);
	return st;
}

/* The free extent at index @i of the in-order (size, address) list. */
#define FREE_AT(i) (*tree.order[i])

TEST(bad_arguments)
{
	struct md_dynpool_config cfg = { 0 };
	struct md_device *dev = host_dev(MD_ALIGN_NPU);
	struct md_dynpool *pool = (void *)1;
	struct md_dynblock b;

	ASSERT_NE(NULL, dev);
	cfg.align = 96;				/* not a power of two */
	EXPECT_EQ(-EINVAL, md_dynpool_create(dev, &cfg, &pool));
	EXPECT_EQ(NULL, pool);
	cfg.align = 128;			/* below the device's 256 */
	EXPECT_EQ(-EINVAL, md_dynpool_create(dev, &cfg, &pool));
	cfg.align = 0;
	cfg.capacity = 64 * KiB;
	cfg.initial = 128 * KiB;		/* above the cap */
	EXPECT_EQ(-EINVAL, md_dynpool_create(dev, &cfg, &pool));

	ASSERT_EQ(0, md_dynpool_create(dev, NULL, &pool));
	EXPECT_EQ(0, stats(pool).region_allocs);	/* nothing yet */
	EXPECT_EQ(-EINVAL, md_dynpool_alloc(pool, 0, &b));
	EXPECT_EQ(-EINVAL, md_dynpool_alloc(pool, UINT64_MAX - 8, &b));
	EXPECT_EQ(2, stats(pool).failures);
	EXPECT_EQ(0, stats(pool).region_allocs);
	md_dynpool_destroy(pool);
	md_device_close(dev);
}

TEST(split_leaves_the_remainder_free)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct pool_env e;
	struct md_dynblock a, b;
	struct md_dynpool_stats st;
	uint64_t base, total;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(1, dump_checked(e.pool));
	base = FREE_AT(0).dev_va;
	total = FREE_AT(0).size;
	EXPECT_EQ(rup(64 * KiB, e.page), total);

	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1000, &a));	/* -> 1024 */
	EXPECT_EQ(base, a.dev_va);
	EXPECT_EQ(1024, a.size);
	EXPECT_EQ((void *)(uintptr_t)a.dev_va, a.cpu);	/* host: same */
	ASSERT_EQ(1, dump_checked(e.pool));
	EXPECT_EQ(base + 1024, FREE_AT(0).dev_va);
	EXPECT_EQ(total - 1024, FREE_AT(0).size);

	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 64, &b));
	EXPECT_EQ(base + 1024, b.dev_va);
	ASSERT_EQ(1, dump_checked(e.pool));
	EXPECT_EQ(base + 1088, FREE_AT(0).dev_va);

	st = stats(e.pool);
	EXPECT_EQ(2, st.blocks_in_use);
	EXPECT_EQ(1088, st.bytes_in_use);
	EXPECT_EQ(1064, st.requested_bytes);
	EXPECT_EQ(total - 1088, st.free_bytes);
	EXPECT_EQ(total - 1088, st.largest_free);
	EXPECT_EQ(1, st.free_blocks);
	EXPECT_EQ(0.0, st.fragmentation);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

/* Holes of 3072, 1024 and 2048 bytes and a large tail. */
TEST(best_fit_takes_the_smallest_fitting_block)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct md_dynblock h1, s1, h2, s2, h3, s3, x, y, z, w;
	struct md_dynpool_stats st;
	struct pool_env e;
	uint64_t tail;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 3072, &h1));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 64, &s1));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1024, &h2));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 64, &s2));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 2048, &h3));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 64, &s3));
	tail = s3.dev_va + 64;
	ASSERT_EQ(0, md_dynpool_free(e.pool, &h1));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &h2));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &h3));
	ASSERT_EQ(4, dump_checked(e.pool));
	EXPECT_EQ(h2.dev_va, FREE_AT(0).dev_va);	/* (1024, h2) first */
	EXPECT_EQ(h3.dev_va, FREE_AT(1).dev_va);
	EXPECT_EQ(h1.dev_va, FREE_AT(2).dev_va);
	EXPECT_EQ(tail, FREE_AT(3).dev_va);
	st = stats(e.pool);
	EXPECT_EQ(4, st.free_blocks);
	EXPECT_EQ(FREE_AT(3).size, st.largest_free);
	EXPECT_EQ(1.0 - (double)st.largest_free / st.free_bytes,
		  st.fragmentation);

	/* 1000 -> 1024: exactly h2, not the larger h3, h1 or the tail. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1000, &x));
	EXPECT_EQ(h2.dev_va, x.dev_va);
	/* 1500 -> 1536: h3 (2048) is the smallest that fits; 512 remain. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1500, &y));
	EXPECT_EQ(h3.dev_va, y.dev_va);
	/* 3000 -> 3008: h1; 64 remain. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 3000, &z));
	EXPECT_EQ(h1.dev_va, z.dev_va);
	ASSERT_EQ(3, dump_checked(e.pool));
	EXPECT_EQ(64, FREE_AT(0).size);
	EXPECT_EQ(h1.dev_va + 3008, FREE_AT(0).dev_va);
	EXPECT_EQ(512, FREE_AT(1).size);
	EXPECT_EQ(h3.dev_va + 1536, FREE_AT(1).dev_va);
	/* 600 -> 640: neither remainder fits; the tail does. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 600, &w));
	EXPECT_EQ(tail, w.dev_va);
	/* 512 exactly: the 512 remainder, no split left over. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 512, &w));
	EXPECT_EQ(h3.dev_va + 1536, w.dev_va);
	ASSERT_EQ(2, dump_checked(e.pool));
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	(void)s1;
	(void)s2;
	env_close(&e);
}

/* Among free blocks of one size, the lowest address wins. */
TEST(best_fit_ties_go_to_the_lowest_address)
{
	struct md_dynpool_config cfg = { .initial = 32 * KiB, .capacity = 32 * KiB };
	struct md_dynblock b[8], x;
	struct pool_env e;
	int i;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4 * KiB, &b[i]));
	ASSERT_EQ(0, dump_checked(e.pool));		/* exactly full */
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b[5]));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b[1]));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b[3]));
	ASSERT_EQ(3, dump_checked(e.pool));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4 * KiB, &x));
	EXPECT_EQ(b[1].dev_va, x.dev_va);
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4 * KiB, &x));
	EXPECT_EQ(b[3].dev_va, x.dev_va);
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4 * KiB, &x));
	EXPECT_EQ(b[5].dev_va, x.dev_va);
	EXPECT_EQ(-ENOMEM, md_dynpool_alloc(e.pool, 64, &x));
	env_close(&e);
}

/* A region of four blocks a b c d of X bytes each, all live. */
struct four {
	struct pool_env e;
	struct md_dynblock a, b, c, d;
	uint64_t x;
};

static int four_open(struct four *f)
{
	struct md_dynpool_config cfg = { 0 };
	int err;

	f->x = 4 * KiB;
	cfg.initial = 4 * f->x;
	cfg.capacity = 4 * f->x;
	err = env_open(&f->e, 64, &cfg);
	if (!err && f->e.page > f->x)
		err = -EOPNOTSUPP;	/* the layout assumes 4 KiB pages */
	if (!err)
		err = md_dynpool_alloc(f->e.pool, f->x, &f->a);
	if (!err)
		err = md_dynpool_alloc(f->e.pool, f->x, &f->b);
	if (!err)
		err = md_dynpool_alloc(f->e.pool, f->x, &f->c);
	if (!err)
		err = md_dynpool_alloc(f->e.pool, f->x, &f->d);
	return err;
}

/*
 * Free blocks below 1024 x the alignment sit in bins of their size (by
 * address), larger ones in the tree (lib/dynpool.c, DP_BINS). Best fit
 * across that edge: an exact bin first (lowest address), a larger bin,
 * then the tree's smallest block; the dump stays one valid tree of every
 * free block in (size, address) order, and the largest free block is
 * found in the tree or, without one, in the bins.
 */
TEST(best_fit_across_the_bins_and_the_tree)
{
	enum { A = 64 };
	struct md_dynpool_config cfg = { .initial = 2 * MiB, .capacity = 2 * MiB };
	struct md_dynblock blk[9], x, y, z;
	static const uint64_t units[9] = { 1023, 1, 1024, 1, 1023, 1, 1025, 1,
					   1 };
	struct md_dynpool_stats st;
	struct pool_env e;
	int i;

	ASSERT_EQ(0, env_open(&e, A, &cfg));
	for (i = 0; i < 9; i++)
		ASSERT_EQ(0, md_dynpool_alloc(e.pool, units[i] * A, &blk[i]));
	/* Free the four big ones; the 1-unit blocks keep them apart. */
	for (i = 0; i < 8; i += 2)
		ASSERT_EQ(0, md_dynpool_free(e.pool, &blk[i]));
	ASSERT_EQ(5, dump_checked(e.pool));	/* and the tail */
	ASSERT_EQ(0, md_dynpool_check(e.pool, NULL));
	st = stats(e.pool);
	EXPECT_EQ(tree.order[4]->size, st.largest_free);

	/* An exact bin: the lower of the two 1023-unit blocks. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1023 * A, &x));
	EXPECT_EQ(blk[0].dev_va, x.dev_va);
	/* A larger bin: the other one, split; its 23 units go to a bin. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1000 * A, &y));
	EXPECT_EQ(blk[4].dev_va, y.dev_va);
	ASSERT_EQ(0, md_dynpool_check(e.pool, NULL));
	/* No bin fits: the tree's smallest (1024 units), 1 unit left. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1023 * A, &z));
	EXPECT_EQ(blk[2].dev_va, z.dev_va);
	ASSERT_EQ(4, dump_checked(e.pool));
	EXPECT_EQ(A, tree.order[0]->size);
	EXPECT_EQ(blk[2].dev_va + 1023 * A, tree.order[0]->dev_va);
	EXPECT_EQ(23 * A, tree.order[1]->size);
	EXPECT_EQ(1025 * A, tree.order[2]->size);
	ASSERT_EQ(0, md_dynpool_check(e.pool, NULL));

	/* Everything back: one block again. */
	ASSERT_EQ(0, md_dynpool_free(e.pool, &x));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &y));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &z));
	for (i = 1; i < 9; i += 2)
		ASSERT_EQ(0, md_dynpool_free(e.pool, &blk[i]));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &blk[8]));
	ASSERT_EQ(1, dump_checked(e.pool));
	EXPECT_EQ(2 * MiB, tree.order[0]->size);
	ASSERT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

/* With an alignment that puts every size in a bin: no tree at all. */
TEST(every_free_block_in_a_bin)
{
	struct md_dynpool_config cfg = { .initial = 1 * MiB, .capacity = 1 * MiB,
					 .align = 4096 };
	struct md_dynblock b[4];
	struct md_dynpool_stats st;
	struct pool_env e;
	int i;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	st = stats(e.pool);
	EXPECT_EQ(1 * MiB, st.largest_free);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, md_dynpool_alloc(e.pool, (i + 1) * 4096, &b[i]));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b[1]));
	ASSERT_EQ(2, dump_checked(e.pool));
	st = stats(e.pool);
	EXPECT_EQ(1 * MiB - 10 * 4096, st.largest_free);
	EXPECT_EQ(2, st.free_blocks);
	EXPECT_EQ(1 * MiB - 8 * 4096, st.free_bytes);
	ASSERT_EQ(0, md_dynpool_check(e.pool, NULL));
	for (i = 0; i < 4; i++)
		if (i != 1)
			ASSERT_EQ(0, md_dynpool_free(e.pool, &b[i]));
	st = stats(e.pool);
	EXPECT_EQ(1 * MiB, st.largest_free);
	EXPECT_EQ(1, st.free_blocks);
	ASSERT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

TEST(coalesce_with_the_left_neighbour)
{
	struct four f;

	ASSERT_EQ(0, four_open(&f));
	ASSERT_EQ(f.a.dev_va + f.x, f.b.dev_va);
	ASSERT_EQ(0, dump_checked(f.e.pool));
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.a));
	ASSERT_EQ(1, dump_checked(f.e.pool));
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.b));	/* a is free */
	ASSERT_EQ(1, dump_checked(f.e.pool));
	EXPECT_EQ(f.a.dev_va, FREE_AT(0).dev_va);
	EXPECT_EQ(2 * f.x, FREE_AT(0).size);
	EXPECT_EQ(2 * f.x, stats(f.e.pool).largest_free);
	EXPECT_EQ(0.0, stats(f.e.pool).fragmentation);
	EXPECT_EQ(0, md_dynpool_check(f.e.pool, NULL));
	env_close(&f.e);
}

TEST(coalesce_with_the_right_neighbour)
{
	struct four f;

	ASSERT_EQ(0, four_open(&f));
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.d));
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.c));	/* d is free */
	ASSERT_EQ(1, dump_checked(f.e.pool));
	EXPECT_EQ(f.c.dev_va, FREE_AT(0).dev_va);
	EXPECT_EQ(2 * f.x, FREE_AT(0).size);
	/* b: its right neighbour is the merged c+d. */
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.b));
	ASSERT_EQ(1, dump_checked(f.e.pool));
	EXPECT_EQ(f.b.dev_va, FREE_AT(0).dev_va);
	EXPECT_EQ(3 * f.x, FREE_AT(0).size);
	EXPECT_EQ(0, md_dynpool_check(f.e.pool, NULL));
	env_close(&f.e);
}

TEST(coalesce_with_both_neighbours)
{
	struct md_dynpool_stats st;
	struct four f;

	ASSERT_EQ(0, four_open(&f));
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.a));
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.c));
	ASSERT_EQ(2, dump_checked(f.e.pool));		/* no merge yet */
	st = stats(f.e.pool);
	EXPECT_EQ(2, st.free_blocks);
	EXPECT_EQ(f.x, st.largest_free);
	EXPECT_EQ(0.5, st.fragmentation);
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.b));	/* a and c free */
	ASSERT_EQ(1, dump_checked(f.e.pool));
	EXPECT_EQ(f.a.dev_va, FREE_AT(0).dev_va);
	EXPECT_EQ(3 * f.x, FREE_AT(0).size);
	st = stats(f.e.pool);
	EXPECT_EQ(1, st.free_blocks);
	EXPECT_EQ(3 * f.x, st.largest_free);
	EXPECT_EQ(0.0, st.fragmentation);
	ASSERT_EQ(0, md_dynpool_free(f.e.pool, &f.d));
	ASSERT_EQ(1, dump_checked(f.e.pool));
	EXPECT_EQ(4 * f.x, FREE_AT(0).size);
	EXPECT_EQ(0, md_dynpool_check(f.e.pool, NULL));
	env_close(&f.e);
}

TEST(alignment_follows_the_device_and_the_config)
{
	struct md_dynpool_config cfg = { .initial = 1 * MiB };
	struct md_dynblock b[64];
	struct pool_env e;
	uint64_t aligns[] = { 0, 1024, 8192 };
	unsigned int k;
	int i;

	for (k = 0; k < 3; k++) {
		uint64_t want = aligns[k] ? aligns[k] : MD_ALIGN_NPU;

		cfg.align = aligns[k];
		ASSERT_EQ(0, env_open(&e, MD_ALIGN_NPU, &cfg));
		seed(7 + k);
		for (i = 0; i < 64; i++) {
			uint64_t size = 1 + rnd() % 5000;

			ASSERT_EQ(0, md_dynpool_alloc(e.pool, size, &b[i]));
			EXPECT_EQ(0, b[i].dev_va % want);
			EXPECT_EQ(rup(size, want), b[i].size);
			memset(b[i].cpu, i, b[i].size);	/* CPU-visible on host */
		}
		for (i = 0; i < 64; i += 2)
			ASSERT_EQ(0, md_dynpool_free(e.pool, &b[i]));
		for (i = 0; i < 64; i += 2) {
			ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1 + rnd() % 3000,
						      &b[i]));
			EXPECT_EQ(0, b[i].dev_va % want);
			memset(b[i].cpu, i, b[i].size);
		}
		/* No two blocks overlap: each still holds its own bytes. */
		for (i = 0; i < 64; i++) {
			unsigned char *p = b[i].cpu;

			EXPECT_EQ((unsigned char)i, p[0]);
			EXPECT_EQ((unsigned char)i, p[b[i].size - 1]);
		}
		EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
		env_close(&e);
	}
}

TEST(growth_counts_backend_reallocations)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct md_device_stats ds;
	struct md_dynpool_stats st;
	struct md_dynblock a, b, c, d;
	struct pool_env e;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	st = stats(e.pool);
	EXPECT_EQ(1, st.region_allocs);		/* the initial reservation */
	EXPECT_EQ(0, st.backend_reallocs);
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 48 * KiB, &a));
	EXPECT_EQ(1, stats(e.pool).region_allocs);
	/* 16 KiB free: 48 KiB more needs a region of max(48K, 100 % of 64K). */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 48 * KiB, &b));
	st = stats(e.pool);
	EXPECT_EQ(2, st.region_allocs);
	EXPECT_EQ(1, st.backend_reallocs);
	EXPECT_EQ(2, st.regions);
	EXPECT_EQ(rup(64 * KiB, e.page) * 2, st.reserved_bytes);
	/* 16 KiB fits a remainder: no growth. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 16 * KiB, &c));
	EXPECT_EQ(1, stats(e.pool).backend_reallocs);
	/* 100 KiB: a region of max(100K, 128K). */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 100 * KiB, &d));
	st = stats(e.pool);
	EXPECT_EQ(3, st.region_allocs);
	EXPECT_EQ(2, st.backend_reallocs);
	EXPECT_EQ(rup(64 * KiB, e.page) * 4, st.reserved_bytes);
	EXPECT_EQ(st.reserved_bytes, st.reserved_peak);
	/* The device saw the same. */
	md_device_stats(e.dev, &ds);
	EXPECT_EQ(st.region_allocs, ds.region_allocs);
	EXPECT_EQ(st.reserved_bytes, ds.bytes_current);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

TEST(growth_policy_without_initial_reservation)
{
	struct md_dynpool_config cfg = { .growth_pct = 50, .grow_min = 32 * KiB };
	struct md_dynpool_stats st;
	struct md_dynblock a, b, c;
	struct pool_env e;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	EXPECT_EQ(0, stats(e.pool).region_allocs);
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 10 * KiB, &a));
	st = stats(e.pool);
	EXPECT_EQ(1, st.region_allocs);		/* the first: not a re-allocation */
	EXPECT_EQ(0, st.backend_reallocs);
	EXPECT_EQ(rup(32 * KiB, e.page), st.reserved_bytes);	/* grow_min */
	/* 40 KiB: max(40K, 32K, 50 % of 32K) = 40K. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 40 * KiB, &b));
	st = stats(e.pool);
	EXPECT_EQ(1, st.backend_reallocs);
	EXPECT_EQ(rup(32 * KiB, e.page) + rup(40 * KiB, e.page),
		  st.reserved_bytes);
	/* 100 KiB with 72K reserved: max(100K, 32K, 36K) = 100K. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 100 * KiB, &c));
	st = stats(e.pool);
	EXPECT_EQ(2, st.backend_reallocs);
	EXPECT_EQ(rup(32 * KiB, e.page) + rup(40 * KiB, e.page) +
		  rup(100 * KiB, e.page), st.reserved_bytes);
	env_close(&e);
}

/*
 * The initial reservation is what was asked for ("reserve the largest size
 * once"); grow_min and growth_pct shape the regions added later.
 */
TEST(initial_reservation_is_not_a_growth)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB,
					 .grow_min = 1 * MiB,
					 .growth_pct = 400 };
	struct md_dynpool_stats st;
	struct md_dynblock a, b;
	struct pool_env e;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	st = stats(e.pool);
	EXPECT_EQ(1, st.region_allocs);
	EXPECT_EQ(rup(64 * KiB, e.page), st.reserved_bytes);
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, st.reserved_bytes, &a));
	/* Now growth: max(4K, grow_min 1M, 400 % of 64K) = 1M. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4 * KiB, &b));
	st = stats(e.pool);
	EXPECT_EQ(1, st.backend_reallocs);
	EXPECT_EQ(rup(64 * KiB, e.page) + 1 * MiB, st.reserved_bytes);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

/*
 * The growth policy asks for more than the request needs (here double the
 * 64 MiB reserved); a backend that cannot give that much can still give
 * what the request needs, and the request is served.
 */
TEST(backend_refusing_the_growth_still_serves_the_request)
{
	struct md_dynpool_config cfg = { .initial = 64 * MiB };
	struct md_dynblock a, b;
	struct md_device_stats ds;
	struct md_dynpool_stats st;
	struct pool_env e;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer's runtime maps memory of its own as it goes. */
	SKIP(return, "no address-space cap under ThreadSanitizer");
#endif

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 64 * MiB, &a));	/* full */
	ASSERT_EQ(0, cap_address_space(16 * MiB));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1 * MiB, &b));
	st = stats(e.pool);
	EXPECT_EQ(0, st.failures);
	EXPECT_EQ(2, st.regions);
	EXPECT_EQ(65 * MiB, st.reserved_bytes);
	EXPECT_EQ(1, st.backend_reallocs);
	md_device_stats(e.dev, &ds);
	EXPECT_EQ(1, ds.region_failures);	/* the 64 MiB it asked first */
	EXPECT_EQ(st.reserved_bytes, ds.bytes_current);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &a));
	env_close(&e);
}

/*
 * The backend cannot give even what the request needs, while the pool
 * holds an entirely free region too small for it: that region goes back
 * to the backend and the request is served from the room it leaves.
 */
TEST(backend_short_gets_the_empty_regions_back)
{
	struct md_dynpool_config cfg = { .initial = 16 * MiB };
	struct md_dynpool_stats st;
	struct md_dynblock a;
	struct pool_env e;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer's runtime maps memory of its own as it goes. */
	SKIP(return, "no address-space cap under ThreadSanitizer");
#endif

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(0, cap_address_space(24 * MiB));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 32 * MiB, &a));
	st = stats(e.pool);
	EXPECT_EQ(0, st.failures);
	EXPECT_EQ(1, st.regions);
	EXPECT_EQ(1, st.region_frees);
	EXPECT_EQ(32 * MiB, st.reserved_bytes);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));

	/* Nothing left to give back: refused, and the block stays. */
	EXPECT_EQ(-ENOMEM, md_dynpool_alloc(e.pool, 32 * MiB, &a));
	st = stats(e.pool);
	EXPECT_EQ(1, st.failures);
	EXPECT_EQ(1, st.blocks_in_use);
	EXPECT_EQ(32 * MiB, st.reserved_bytes);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

static struct md_reuse_violation seen_v[8];
static int nseen_v;

static void record_violation(const struct md_reuse_violation *v, void *arg)
{
	if (nseen_v < 8)
		seen_v[nseen_v] = *v;
	nseen_v++;
}

static int nbad;
static uint64_t last_bad_va;

static void record_bad_free(const struct md_dynblock *b, void *arg)
{
	nbad++;
	last_bad_va = b->dev_va;
	*(int *)arg += 1;
}

TEST(double_and_unknown_frees_are_refused_and_reported)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct md_dynblock a, b, again, fake;
	uint64_t v0 = md_reuse_violations();
	struct md_dynpool_stats st;
	struct pool_env e;
	int calls = 0;

	cfg.bad_free = record_bad_free;
	cfg.bad_free_arg = &calls;
	md_reuse_set_handler(record_violation, NULL);
	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096, &a));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096, &b));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(MD_BLOCK_RECYCLED, md_block_sync_state(a.sync));

	/* Double free: refused, counted, reported by the reuse protocol. */
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &a));
	st = stats(e.pool);
	EXPECT_EQ(1, st.bad_frees);
	EXPECT_EQ(1, st.frees);
	EXPECT_EQ(1, calls);
	EXPECT_EQ(a.dev_va, last_bad_va);
	EXPECT_EQ(v0 + 1, md_reuse_violations());
	ASSERT_EQ(1, nseen_v);
	EXPECT_EQ(a.sync, seen_v[0].block);
	EXPECT_EQ(MD_REUSE_RELEASE, seen_v[0].op);
	EXPECT_EQ(MD_BLOCK_RECYCLED, seen_v[0].state);
	EXPECT_EQ(MD_BLOCK_RECYCLED, md_block_sync_state(a.sync));

	/* Unknown blocks: an address not handed out, a foreign sync. */
	fake = b;
	fake.dev_va += 64;
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &fake));
	fake = b;
	fake.sync = (struct md_block_sync *)&fake;
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &fake));
	fake = b;
	fake.size += 64;
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &fake));
	EXPECT_EQ(4, stats(e.pool).bad_frees);
	EXPECT_EQ(4, calls);
	EXPECT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(b.sync));

	/* Stale: a's memory and metadata serve a new block now. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096, &again));
	ASSERT_EQ(a.dev_va, again.dev_va);
	EXPECT_EQ(a.sync, again.sync);
	EXPECT_EQ(a.generation + 1, again.generation);
	EXPECT_EQ(-ESTALE, md_block_sync_acquire_gen(again.sync, a.generation));
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(again.sync));
	EXPECT_EQ(5, stats(e.pool).bad_frees);
	/* No reuse report for it: the metadata belongs to the new block. */
	EXPECT_EQ(v0 + 1, md_reuse_violations());

	/* Nothing was damaged: the real frees work. */
	EXPECT_EQ(0, md_dynpool_free(e.pool, &again));
	EXPECT_EQ(0, md_dynpool_free(e.pool, &b));
	st = stats(e.pool);
	EXPECT_EQ(3, st.frees);
	EXPECT_EQ(0, st.blocks_in_use);
	EXPECT_EQ(st.reserved_bytes, st.free_bytes);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	EXPECT_EQ(5, nbad);
	env_close(&e);
}

/*
 * md_dynpool_free() finds the block from the descriptor's sync pointer (no
 * search by address): a pointer into the metadata that is not a block's
 * sync, another live block's sync, a free or cached block's are all
 * refused, and change nothing.
 */
TEST(free_checks_the_sync_pointer)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct md_dynblock a, b, c, fake;
	struct pool_env e;
	int calls = 0;

	cfg.bad_free = record_bad_free;
	cfg.bad_free_arg = &calls;
	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096, &a));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096, &b));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096, &c));
	/* Inside the metadata, not at a sync. */
	fake = a;
	fake.sync = (struct md_block_sync *)((char *)a.sync + 4);
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &fake));
	/* b's metadata with a's address, a's with b's. */
	fake = a;
	fake.sync = b.sync;
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &fake));
	fake = b;
	fake.dev_va = a.dev_va;
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &fake));
	/* b freed and merged into its free right neighbour: cached. */
	ASSERT_EQ(0, md_dynpool_free(e.pool, &c));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b));
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &b));
	EXPECT_EQ(-EINVAL, md_dynpool_free(e.pool, &c));
	EXPECT_EQ(5, stats(e.pool).bad_frees);
	EXPECT_EQ(5, calls);
	EXPECT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(a.sync));
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	EXPECT_EQ(0, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(1, stats(e.pool).free_blocks);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

TEST(reuse_protocol_through_a_blocks_life)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct md_dynblock a, b;
	struct pool_env e;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 1000, &a));
	EXPECT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(a.sync));
	EXPECT_EQ(a.generation, md_block_sync_generation(a.sync));
	ASSERT_EQ(0, md_block_sync_acquire(a.sync));
	ASSERT_EQ(0, md_block_sync_acquire(a.sync));
	EXPECT_EQ(MD_BLOCK_ACTIVE, md_block_sync_state(a.sync));
	/* Held: free refuses and changes nothing. */
	EXPECT_EQ(-EBUSY, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(2, md_block_sync_holders(a.sync));
	EXPECT_EQ(1, stats(e.pool).blocks_in_use);
	EXPECT_EQ(0, md_block_sync_release(a.sync));
	EXPECT_EQ(-EBUSY, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(1, md_block_sync_release(a.sync));	/* the last holder */
	EXPECT_EQ(MD_BLOCK_RELEASED, md_block_sync_state(a.sync));
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	EXPECT_EQ(0, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(MD_BLOCK_RECYCLED, md_block_sync_state(a.sync));
	EXPECT_EQ(a.generation, md_block_sync_generation(a.sync));
	/* Recycled memory: users cannot take it. */
	EXPECT_EQ(-EINVAL, md_block_sync_acquire(a.sync));
	/* Reused: ALLOCATED again, next generation. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 512, &b));
	EXPECT_EQ(a.dev_va, b.dev_va);
	EXPECT_EQ(MD_BLOCK_ALLOCATED, md_block_sync_state(b.sync));
	EXPECT_EQ(a.generation + 1, md_block_sync_generation(b.sync));
	EXPECT_EQ(0, md_dynpool_free(e.pool, &b));
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

TEST(exhaustion_under_a_cap_and_recovery)
{
	struct md_dynpool_config cfg = { .capacity = 64 * KiB };
	struct md_dynpool_stats before, st;
	struct md_dynblock b[16], big;
	struct md_device_stats ds;
	struct pool_env e;
	int n, i;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	if (e.page > 8 * KiB)
		SKIP(return, "page size %llu", (unsigned long long)e.page);
	/* Regions of 8K, 8K, 16K, 32K: then the cap. */
	for (n = 0; n < 16; n++) {
		int err = md_dynpool_alloc(e.pool, 8 * KiB, &b[n]);

		if (err) {
			EXPECT_EQ(-ENOMEM, err);
			break;
		}
	}
	EXPECT_EQ(8, n);
	st = stats(e.pool);
	EXPECT_EQ(64 * KiB, st.reserved_bytes);
	EXPECT_EQ(4, st.region_allocs);
	EXPECT_EQ(1, st.failures);
	EXPECT_EQ(0, st.free_bytes);

	/* A failure changes nothing. */
	before = stats(e.pool);
	EXPECT_EQ(-ENOMEM, md_dynpool_alloc(e.pool, 64, &big));
	st = stats(e.pool);
	EXPECT_EQ(before.requests + 1, st.requests);
	EXPECT_EQ(before.failures + 1, st.failures);
	EXPECT_EQ(before.reserved_bytes, st.reserved_bytes);
	EXPECT_EQ(before.blocks_in_use, st.blocks_in_use);
	EXPECT_EQ(before.region_allocs, st.region_allocs);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));

	/* Recovery: freed blocks serve again without the backend. */
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b[3]));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 8 * KiB, &b[3]));
	EXPECT_EQ(4, stats(e.pool).region_allocs);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, md_dynpool_free(e.pool, &b[i]));
	/*
	 * 40K fits no region (the largest is 32K) and the cap is reached:
	 * the empty regions go back and one of 64K replaces them.
	 */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 40 * KiB, &big));
	st = stats(e.pool);
	EXPECT_EQ(4, st.region_frees);
	EXPECT_EQ(5, st.region_allocs);
	EXPECT_EQ(1, st.regions);
	EXPECT_EQ(64 * KiB, st.reserved_bytes);
	EXPECT_EQ(64 * KiB, st.reserved_peak);
	md_device_stats(e.dev, &ds);
	EXPECT_EQ(4, ds.region_frees);
	EXPECT_EQ(64 * KiB, ds.bytes_current);
	ASSERT_EQ(0, md_dynpool_free(e.pool, &big));
	/* The whole capacity as one block. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 64 * KiB, &big));
	EXPECT_EQ(-ENOMEM, md_dynpool_alloc(e.pool, 64, &b[0]));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &big));
	/* More than the cap: refused, the empty region is kept. */
	EXPECT_EQ(-ENOMEM, md_dynpool_alloc(e.pool, 64 * KiB + 1, &big));
	st = stats(e.pool);
	EXPECT_EQ(1, st.regions);
	EXPECT_EQ(4, st.region_frees);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

TEST(trim_returns_empty_extra_regions)
{
	struct md_dynpool_config cfg = { .initial = 64 * KiB };
	struct md_dynblock a, b, c, d;
	struct md_device_stats ds;
	struct md_dynpool_stats st;
	struct pool_env e;
	uint64_t r1;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	r1 = rup(64 * KiB, e.page);
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 48 * KiB, &a));
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 48 * KiB, &b));	/* + 64K */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 100 * KiB, &c));	/* + 128K */
	EXPECT_EQ(3, stats(e.pool).regions);
	EXPECT_EQ(0, md_dynpool_trim(e.pool));		/* nothing empty */
	ASSERT_EQ(0, md_dynpool_free(e.pool, &b));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &c));
	/* a still lives in the first region: both others go. */
	EXPECT_EQ(2, md_dynpool_trim(e.pool));
	st = stats(e.pool);
	EXPECT_EQ(1, st.regions);
	EXPECT_EQ(r1, st.reserved_bytes);
	EXPECT_EQ(2, st.region_frees);
	md_device_stats(e.dev, &ds);
	EXPECT_EQ(2, ds.region_frees);
	EXPECT_EQ(r1, ds.bytes_current);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));

	/* All empty: the largest stays. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 100 * KiB, &d));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &a));
	ASSERT_EQ(0, md_dynpool_free(e.pool, &d));
	EXPECT_EQ(2, stats(e.pool).regions);
	EXPECT_EQ(1, md_dynpool_trim(e.pool));
	st = stats(e.pool);
	EXPECT_EQ(1, st.regions);
	EXPECT_EQ(rup(100 * KiB, e.page) > r1 ? rup(100 * KiB, e.page) : r1,
		  st.reserved_bytes);
	EXPECT_EQ(0, md_dynpool_trim(e.pool));
	/* Still serves. */
	ASSERT_EQ(0, md_dynpool_alloc(e.pool, 8 * KiB, &a));
	EXPECT_EQ(0, md_dynpool_free(e.pool, &a));
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

/* ------------------------------------------- random operations, a model */

#define MAX_LIVE	4096

struct live_ref {
	struct md_dynblock b;
	uint64_t stamp;
};

static struct live_ref live[MAX_LIVE];
static int nlive;

/* Host memory is CPU-visible: mark both ends of each block. */
static void stamp_block(struct live_ref *l, uint64_t stamp)
{
	l->stamp = stamp;
	memcpy(l->b.cpu, &stamp, 8);
	memcpy((char *)l->b.cpu + l->b.size - 8, &stamp, 8);
}

static bool stamp_ok(const struct live_ref *l)
{
	uint64_t a, z;

	memcpy(&a, l->b.cpu, 8);
	memcpy(&z, (char *)l->b.cpu + l->b.size - 8, 8);
	return a == l->stamp && z == l->stamp;
}

static uint64_t random_size(void)
{
	uint64_t r = rnd() % 100;

	if (r < 60)
		return 1 + rnd() % 4096;
	if (r < 90)
		return 4096 + rnd() % (60 * KiB);
	return 64 * KiB + rnd() % (448 * KiB);
}

struct extent {
	uint64_t va, size;
	bool free;
};

static struct extent ext[MAX_LIVE + 8192];

static int ext_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->va < y->va ? -1 : x->va > y->va;
}

/* Live blocks (the model) and free extents (the dump), by address. */
static size_t gather(size_t nfree)
{
	size_t n = 0, i;

	for (i = 0; i < (size_t)nlive; i++)
		ext[n++] = (struct extent){ live[i].b.dev_va, live[i].b.size, false };
	for (i = 0; i < nfree; i++)
		ext[n++] = (struct extent){ tree.order[i]->dev_va,
					    tree.order[i]->size, true };
	qsort(ext, n, sizeof(ext[0]), ext_cmp);
	return n;
}

/* One region [base, base + len): tiled exactly, no free neighbours. */
static const char *tiles(uint64_t base, uint64_t len, size_t nfree)
{
	size_t n = gather(nfree), i;
	uint64_t at = base;

	for (i = 0; i < n; i++) {
		if (ext[i].va != at)
			return ext[i].va < at ? "overlap" : "gap";
		if (i && ext[i].free && ext[i - 1].free)
			return "two free neighbours not merged";
		at += ext[i].size;
	}
	return at == base + len ? NULL : "does not cover the region";
}

/* Several regions: nothing overlaps; sizes add up to @reserved. */
static const char *disjoint(uint64_t reserved, size_t nfree)
{
	size_t n = gather(nfree), i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++) {
		if (i && ext[i - 1].va + ext[i - 1].size > ext[i].va)
			return "overlap";
		sum += ext[i].size;
	}
	return sum == reserved ? NULL : "live + free != reserved";
}

/* The pool's stats against the model and the last dump. */
static const char *stats_match(struct md_dynpool *pool, size_t nfree,
			       uint64_t bad)
{
	struct md_dynpool_stats st;
	uint64_t in_use = 0, free_bytes = 0, largest;
	size_t i;

	md_dynpool_stats(pool, &st);
	for (i = 0; i < (size_t)nlive; i++)
		in_use += live[i].b.size;
	for (i = 0; i < nfree; i++)
		free_bytes += tree.order[i]->size;
	largest = nfree ? tree.order[nfree - 1]->size : 0;
	if (st.blocks_in_use != (uint64_t)nlive || st.bytes_in_use != in_use)
		return "blocks or bytes in use";
	if (st.free_blocks != nfree || st.free_bytes != free_bytes)
		return "free blocks or bytes";
	if (st.largest_free != largest)
		return "largest free";
	if (st.free_bytes + st.bytes_in_use != st.reserved_bytes)
		return "free + in use != reserved";
	if (st.bytes_peak < st.bytes_in_use ||
	    st.reserved_peak < st.reserved_bytes)
		return "peaks";
	if (st.fragmentation != (free_bytes ?
				 1.0 - (double)largest / free_bytes : 0.0))
		return "fragmentation";
	if (st.bad_frees != bad)
		return "bad frees";
	return NULL;
}

/*
 * One region at its cap, so every outcome is predictable from the dump
 * taken before: the address best fit must pick, or -ENOMEM.
 */
TEST(random_ops_in_one_region_match_the_model)
{
	struct md_dynpool_config cfg = { .initial = 4 * MiB, .capacity = 4 * MiB };
	uint64_t base, len, bad = 0, allocs = 0, frees = 0, nomem = 0;
	const char *why;
	struct pool_env e;
	long n;
	int op;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	seed(0x5eed0001);
	nlive = 0;
	ASSERT_EQ(1, dump_checked(e.pool));
	base = tree.order[0]->dev_va;
	len = tree.order[0]->size;
	n = 1;
	for (op = 0; op < 20000; op++) {
		if (!nlive || (nlive < MAX_LIVE && rnd() % 100 < 55)) {
			uint64_t size = random_size(), need = rup(size, 64);
			uint64_t want = 0;
			struct live_ref *l = &live[nlive];
			long i;
			int err;

			for (i = 0; i < n; i++) {
				if (tree.order[i]->size >= need) {
					want = tree.order[i]->dev_va;
					break;
				}
			}
			err = md_dynpool_alloc(e.pool, size, &l->b);
			if (!want) {
				ASSERT_EQ(-ENOMEM, err) TH_LOG("op %d", op);
				nomem++;
			} else {
				ASSERT_EQ(0, err) TH_LOG("op %d", op);
				ASSERT_EQ(want, l->b.dev_va) TH_LOG("op %d", op);
				ASSERT_EQ(need, l->b.size);
				stamp_block(l, rnd());
				nlive++;
				allocs++;
			}
		} else {
			int i = rnd() % nlive;
			struct md_dynblock b = live[i].b;

			ASSERT_TRUE(stamp_ok(&live[i])) TH_LOG("op %d", op);
			ASSERT_EQ(0, md_dynpool_free(e.pool, &b));
			live[i] = live[--nlive];
			frees++;
			if (rnd() % 50 == 0) {
				ASSERT_EQ(-EINVAL, md_dynpool_free(e.pool, &b));
				bad++;
			}
		}
		n = dump_checked(e.pool);
		ASSERT_LE(0, n) TH_LOG("op %d: free tree: %s", op, tree.why);
		ASSERT_EQ(0, md_dynpool_check(e.pool, &why))
			TH_LOG("op %d: %s", op, why);
		why = tiles(base, len, n);
		ASSERT_EQ(NULL, why) TH_LOG("op %d: %s", op, why);
		why = stats_match(e.pool, n, bad);
		ASSERT_EQ(NULL, why) TH_LOG("op %d: %s", op, why);
	}
	/* The run covered what it claims to. */
	EXPECT_LT(5000, allocs);
	EXPECT_LT(100, nomem);
	EXPECT_LT(20, bad);
	EXPECT_EQ(1, stats(e.pool).region_allocs);
	TH_LOG("%llu allocs, %llu frees, %llu -ENOMEM, %llu double frees",
	       (unsigned long long)allocs, (unsigned long long)frees,
	       (unsigned long long)nomem, (unsigned long long)bad);
	while (nlive)
		ASSERT_EQ(0, md_dynpool_free(e.pool, &live[--nlive].b));
	ASSERT_EQ(1, dump_checked(e.pool));
	EXPECT_EQ(len, tree.order[0]->size);
	env_close(&e);
}

/* Growth without a cap, trims now and then; the device agrees. */
TEST(random_ops_with_growth_and_trim)
{
	struct md_dynpool_config cfg = { .growth_pct = 50 };
	struct md_dynpool_stats st;
	struct md_device_stats ds;
	uint64_t grew = 0;
	const char *why;
	struct pool_env e;
	long n = 0;
	int op;

	ASSERT_EQ(0, env_open(&e, MD_ALIGN_GPU, &cfg));
	seed(0x5eed0002);
	nlive = 0;
	for (op = 0; op < 10000; op++) {
		if (!nlive || (nlive < 600 && rnd() % 100 < 52)) {
			uint64_t size = random_size(), need = rup(size, 128);
			struct live_ref *l = &live[nlive];
			uint64_t want = 0, before = stats(e.pool).region_allocs;
			long i;

			for (i = 0; i < n; i++) {
				if (tree.order[i]->size >= need) {
					want = tree.order[i]->dev_va;
					break;
				}
			}
			ASSERT_EQ(0, md_dynpool_alloc(e.pool, size, &l->b));
			ASSERT_EQ(0, l->b.dev_va % 128);
			st = stats(e.pool);
			if (want) {
				ASSERT_EQ(want, l->b.dev_va) TH_LOG("op %d", op);
				ASSERT_EQ(before, st.region_allocs);
			} else {
				ASSERT_EQ(before + 1, st.region_allocs);
				grew++;
			}
			stamp_block(l, rnd());
			nlive++;
		} else {
			int i = rnd() % nlive;

			ASSERT_TRUE(stamp_ok(&live[i])) TH_LOG("op %d", op);
			ASSERT_EQ(0, md_dynpool_free(e.pool, &live[i].b));
			live[i] = live[--nlive];
		}
		if (op % 997 == 996)
			md_dynpool_trim(e.pool);
		n = dump_checked(e.pool);
		ASSERT_LE(0, n) TH_LOG("op %d: free tree: %s", op, tree.why);
		ASSERT_EQ(0, md_dynpool_check(e.pool, &why))
			TH_LOG("op %d: %s", op, why);
		st = stats(e.pool);
		why = disjoint(st.reserved_bytes, n);
		ASSERT_EQ(NULL, why) TH_LOG("op %d: %s", op, why);
		why = stats_match(e.pool, n, 0);
		ASSERT_EQ(NULL, why) TH_LOG("op %d: %s", op, why);
		md_device_stats(e.dev, &ds);
		ASSERT_EQ(st.region_allocs, ds.region_allocs);
		ASSERT_EQ(st.region_frees, ds.region_frees);
		ASSERT_EQ(st.reserved_bytes, ds.bytes_current);
		ASSERT_EQ(st.region_allocs - 1, st.backend_reallocs);
	}
	EXPECT_LT(3, grew);
	EXPECT_EQ(grew, stats(e.pool).region_allocs);
	while (nlive)
		ASSERT_EQ(0, md_dynpool_free(e.pool, &live[--nlive].b));
	st = stats(e.pool);
	EXPECT_EQ(st.reserved_bytes, st.free_bytes);
	EXPECT_EQ(st.regions, st.free_blocks);	/* each region one block */
	md_dynpool_trim(e.pool);
	EXPECT_EQ(1, stats(e.pool).regions);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

/* ------------------------------------------------------------- threads */

struct worker {
	struct md_dynpool *pool;
	uint64_t seed;
	int ops, errors, allocs;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct live_ref mine[64];
	uint64_t s = w->seed;
	int n = 0, op;

	for (op = 0; op < w->ops; op++) {
		xorshift64(&s);
		if (!n || (n < 64 && s % 2)) {
			struct live_ref *l = &mine[n];

			if (md_dynpool_alloc(w->pool, 1 + (s >> 8) % (64 * KiB),
					     &l->b)) {
				w->errors++;
				continue;
			}
			stamp_block(l, s);
			n++;
			w->allocs++;
		} else {
			int i = (s >> 8) % n;

			if (!stamp_ok(&mine[i]) ||
			    md_dynpool_free(w->pool, &mine[i].b))
				w->errors++;
			mine[i] = mine[--n];
		}
	}
	while (n)
		if (!stamp_ok(&mine[--n]) || md_dynpool_free(w->pool, &mine[n].b))
			w->errors++;
	return NULL;
}

TEST(threads_share_a_pool)
{
	struct md_dynpool_config cfg = { .initial = 1 * MiB };
	struct worker w[4];
	pthread_t t[4];
	struct md_dynpool_stats st;
	struct pool_env e;
	int i, allocs = 0;

	ASSERT_EQ(0, env_open(&e, 64, &cfg));
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ e.pool, 0x7001 + i * 7919, 20000, 0, 0 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, work, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].errors);
		allocs += w[i].allocs;
	}
	st = stats(e.pool);
	EXPECT_EQ(allocs, st.requests);
	EXPECT_EQ(allocs, st.frees);
	EXPECT_EQ(0, st.blocks_in_use);
	EXPECT_EQ(st.reserved_bytes, st.free_bytes);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	env_close(&e);
}

/*
 * A user acquires a block while its owner frees it, both running at once
 * (on two CPUs when there are two): either the acquire wins (the free is
 * refused with -EBUSY until the user lets go) or the free wins (the
 * acquire is refused). A free that checked the state and then released in
 * a second step could take the user's hold away: the user's release would
 * then be refused. The delays vary who comes first; the log says how often
 * each side won (a busy host may leave one side few wins).
 */
#define RACE_ROUNDS 2000

struct race {
	struct md_dynpool *pool;
	struct md_dynblock blk;
	atomic_int round, armed, done;
	int acquired, late, bad;
};

/* The racers' CPUs: two of those allowed, or -1 when there is one. */
static int race_cpu[2] = { -1, -1 };
static bool race_two_cpus;

static void race_pick_cpus(void)
{
	cpu_set_t allowed;
	int cpu, n = 0;

	race_two_cpus = false;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	for (cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			race_cpu[n++] = cpu;
	race_two_cpus = n == 2;
}

/* Put the calling thread on racer @k's CPU, if the racers have two. */
static void race_pin(int k)
{
	cpu_set_t one;

	if (!race_two_cpus)
		return;
	CPU_ZERO(&one);
	CPU_SET(race_cpu[k], &one);
	pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

/*
 * Wait for @v to become @value. A racer that yields on a busy host hands
 * its CPU to another program for a whole time slice, and the other racer
 * is done long before it is back: on a CPU of its own it only spins.
 */
static void spin_until(atomic_int *v, int value)
{
	unsigned long n = 0;

	while (atomic_load(v) != value)
		if (!race_two_cpus && ++n % 1000 == 0)
			sched_yield();
}

static void *race_user(void *arg)
{
	struct race *r = arg;
	volatile int spin;
	int i, err;

	race_pin(1);
	for (i = 1; i <= RACE_ROUNDS; i++) {
		spin_until(&r->round, i);
		atomic_store(&r->armed, i);
		for (spin = 0; spin < i % 11 * 200; spin++)
			;
		err = md_block_sync_acquire_gen(r->blk.sync, r->blk.generation);
		if (!err) {
			r->acquired++;
			for (spin = 0; spin < 200; spin++)	/* in use */
				;
			if (md_block_sync_release(r->blk.sync) != 1)
				r->bad++;
		} else if (err == -EINVAL || err == -ESTALE) {
			r->late++;
		} else {
			r->bad++;
		}
		atomic_fetch_add(&r->done, 1);
	}
	return NULL;
}

TEST(free_racing_an_acquire)
{
	md_reuse_handler_t old = md_reuse_set_handler(NULL, NULL);
	struct race r = { 0 };
	struct pool_env e;
	volatile int spin;
	int i, err, busy = 0;
	pthread_t t;

	ASSERT_EQ(0, env_open(&e, 64, NULL));
	r.pool = e.pool;
	race_pick_cpus();
	race_pin(0);
	ASSERT_EQ(0, pthread_create(&t, NULL, race_user, &r));
	for (i = 1; i <= RACE_ROUNDS; i++) {
		ASSERT_EQ(0, md_dynpool_alloc(e.pool, 4096 + i % 7 * 64,
					      &r.blk));
		atomic_store(&r.done, 0);
		atomic_store(&r.round, i);
		/* The user runs now; vary who comes first. */
		spin_until(&r.armed, i);
		for (spin = 0; spin < i % 13 * 150; spin++)
			;
		while ((err = md_dynpool_free(e.pool, &r.blk)) == -EBUSY)
			busy++;
		ASSERT_EQ(0, err);
		spin_until(&r.done, 1);
	}
	pthread_join(t, NULL);
	EXPECT_EQ(0, r.bad);
	EXPECT_EQ(RACE_ROUNDS, r.acquired + r.late);
	EXPECT_EQ(0, stats(e.pool).blocks_in_use);
	EXPECT_EQ(0, md_dynpool_check(e.pool, NULL));
	TH_LOG("%d acquired first, %d refused as late, %d frees refused "
	       "while held (%s)", r.acquired, r.late, busy,
	       race_two_cpus ? "a CPU each" : "one CPU");
	env_close(&e);
	md_reuse_set_handler(old, NULL);
}

TEST_HARNESS_MAIN
