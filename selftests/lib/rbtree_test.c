// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: the red-black tree (lib/rbtree.[ch]) against a sorted
 * array, its invariants checked after every change, and its checker
 * catching trees broken on purpose.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rbtree.h"
#include "test_util.h"
#include "kselftest_harness.h"

struct item {
	struct md_rb_node rb;
	uint32_t key;
	uint32_t seq;		/* insertion number: equal keys keep it */
	int in;
};

static int item_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct item *x = (const struct item *)a;
	const struct item *y = (const struct item *)b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_item_ptr(const void *a, const void *b)
{
	return item_cmp(*(const struct md_rb_node *const *)a,
			*(const struct md_rb_node *const *)b);
}

/* The tree's in-order walk, both ways, equals the sorted live items. */
static int same_as_sorted(struct md_rb_tree *t, struct item *it, size_t n,
			  struct md_rb_node **buf)
{
	struct md_rb_node *x;
	size_t k = 0, i;

	for (i = 0; i < n; i++)
		if (it[i].in)
			buf[k++] = &it[i].rb;
	qsort(buf, k, sizeof(*buf), cmp_item_ptr);
	if (k != t->count)
		return 0;
	i = 0;
	for (x = md_rb_first(t->root); x; x = md_rb_next(x))
		if (i >= k || x != buf[i++])
			return 0;
	if (i != k)
		return 0;
	for (x = md_rb_last(t->root); x; x = md_rb_prev(x))
		if (!i || x != buf[--i])
			return 0;
	return i == 0;
}

TEST(random_inserts_and_erases_match_a_sorted_array)
{
	enum { N = 2000, STEPS = 20000 };
	struct item *it = calloc(N, sizeof(*it));
	struct md_rb_node **buf = calloc(N, sizeof(*buf));
	struct md_rb_tree t = { NULL, 0, NULL };
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	const char *why = NULL;
	uint32_t seq = 0;
	int step;

	ASSERT_NE(NULL, it);
	ASSERT_NE(NULL, buf);
	for (step = 0; step < STEPS; step++) {
		struct item *x = &it[xorshift64(&seed) % N];

		if (x->in) {
			md_rb_erase(&t, &x->rb);
			x->in = 0;
		} else {
			/* Few distinct keys: many equal ones. */
			x->key = (uint32_t)(xorshift64(&seed) % 300);
			x->seq = seq++;
			md_rb_insert(&t, &x->rb, item_cmp);
			x->in = 1;
		}
		ASSERT_EQ(0, md_rb_check(&t, item_cmp, &why)) {
			TH_LOG("step %d: %s", step, why);
		}
		if (step % 97 == 0)
			ASSERT_TRUE(same_as_sorted(&t, it, N, buf));
	}
	ASSERT_TRUE(same_as_sorted(&t, it, N, buf));
	free(it);
	free(buf);
}

/*
 * md_rb_replace(): an item that is out takes the place of one that is in,
 * with a key between the old one's neighbours (the dynamic pool's split
 * and coalescing); md_rb_link() through md_rb_insert() is covered above.
 */
TEST(replace_keeps_order_and_colours)
{
	enum { N = 1000, STEPS = 20000 };
	struct item *it = calloc(N, sizeof(*it));
	struct md_rb_node **buf = calloc(N, sizeof(*buf));
	struct md_rb_tree t = { NULL, 0, NULL };
	uint64_t seed = 0x2545f4914f6cdd1dULL;
	const char *why = NULL;
	uint32_t seq = 0;
	int step, replaced = 0;

	ASSERT_NE(NULL, it);
	ASSERT_NE(NULL, buf);
	for (step = 0; step < N / 2; step++) {
		it[step].key = (uint32_t)(xorshift64(&seed) % 100000);
		it[step].seq = seq++;
		md_rb_insert(&t, &it[step].rb, item_cmp);
		it[step].in = 1;
	}
	for (step = 0; step < STEPS; step++) {
		struct item *x = &it[xorshift64(&seed) % N];
		struct item *y = &it[xorshift64(&seed) % N];
		struct item *lo, *hi;

		if (!x->in || y->in)
			continue;
		lo = (struct item *)md_rb_prev(&x->rb);
		hi = (struct item *)md_rb_next(&x->rb);
		/* A key strictly between the neighbours, x's own if none. */
		y->key = x->key;
		y->seq = seq++;
		if (hi && (hi->key > x->key + 1))
			y->key = x->key + 1;
		if (hi && item_cmp(&y->rb, &hi->rb) >= 0)
			continue;
		if (lo && item_cmp(&lo->rb, &y->rb) >= 0)
			continue;
		md_rb_replace(&t, &x->rb, &y->rb);
		x->in = 0;
		y->in = 1;
		replaced++;
		ASSERT_EQ(0, md_rb_check(&t, item_cmp, &why)) {
			TH_LOG("step %d: %s", step, why);
		}
		if (step % 97 == 0)
			ASSERT_TRUE(same_as_sorted(&t, it, N, buf));
	}
	ASSERT_TRUE(same_as_sorted(&t, it, N, buf));
	EXPECT_LT(1000, replaced);
	free(it);
	free(buf);
}

TEST(empty_tree)
{
	struct md_rb_tree t = { NULL, 0, NULL };
	const char *why = NULL;

	EXPECT_EQ(NULL, md_rb_first(t.root));
	EXPECT_EQ(NULL, md_rb_last(t.root));
	EXPECT_EQ(0, md_rb_check(&t, item_cmp, &why));
}

/* The checker is what the other tests trust: it must see each breakage. */
TEST(checker_catches_broken_trees)
{
	struct item it[64];
	struct md_rb_tree t = { NULL, 0, NULL };
	struct md_rb_node *r, *leaf;
	const char *why = NULL;
	uint32_t k;

	memset(it, 0, sizeof(it));
	for (k = 0; k < 64; k++) {
		it[k].key = k;
		it[k].seq = k;
		md_rb_insert(&t, &it[k].rb, item_cmp);
	}
	ASSERT_EQ(0, md_rb_check(&t, item_cmp, &why));
	r = t.root;

	r->red = true;
	EXPECT_EQ(-1, md_rb_check(&t, item_cmp, &why));
	EXPECT_STREQ("rbtree: root red or with a parent", why);
	r->red = false;

	t.count++;
	EXPECT_EQ(-1, md_rb_check(&t, item_cmp, &why));
	EXPECT_STREQ("rbtree: node count", why);
	t.count--;

	/* A leaf's key moved past its successor. */
	leaf = md_rb_first(t.root);
	((struct item *)leaf)->key = 1000;
	EXPECT_EQ(-1, md_rb_check(&t, item_cmp, &why));
	EXPECT_STREQ("rbtree: keys out of order", why);
	((struct item *)leaf)->key = 0;

	/* Recolouring a black leaf changes one path's black height. */
	for (leaf = md_rb_first(t.root); leaf; leaf = md_rb_next(leaf))
		if (!leaf->left && !leaf->right && !leaf->red &&
		    !leaf->parent->red)
			break;
	ASSERT_NE(NULL, leaf);
	leaf->red = true;
	EXPECT_EQ(-1, md_rb_check(&t, item_cmp, &why));
	EXPECT_STREQ("rbtree: black heights differ", why);
	leaf->red = false;

	leaf = md_rb_last(t.root);
	leaf->parent = NULL;
	EXPECT_EQ(-1, md_rb_check(&t, item_cmp, &why));
	EXPECT_STREQ("rbtree: parent link", why);
}

/* Augmented: each node keeps its subtree's size and largest key. */
struct aitem {
	struct md_rb_node rb;
	uint32_t key, seq;
	uint32_t size, max;	/* the augmented values */
	int in;
};

static struct aitem *ai(const struct md_rb_node *n)
{
	return (struct aitem *)n;
}

static int aitem_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	if (ai(a)->key != ai(b)->key)
		return ai(a)->key < ai(b)->key ? -1 : 1;
	return (ai(a)->seq > ai(b)->seq) - (ai(a)->seq < ai(b)->seq);
}

static void aug(struct md_rb_node *n)
{
	struct aitem *x = ai(n);

	x->size = 1;
	x->max = x->key;
	if (n->left) {
		x->size += ai(n->left)->size;
		if (ai(n->left)->max > x->max)
			x->max = ai(n->left)->max;
	}
	if (n->right) {
		x->size += ai(n->right)->size;
		if (ai(n->right)->max > x->max)
			x->max = ai(n->right)->max;
	}
}

/* Recount from scratch: -1 if a stored value is wrong. */
static long recount(const struct md_rb_node *n, uint32_t *max)
{
	uint32_t lm = 0, rm = 0;
	long l, r;

	if (!n)
		return 0;
	l = recount(n->left, &lm);
	r = recount(n->right, &rm);
	if (l < 0 || r < 0)
		return -1;
	*max = ai(n)->key;
	if (n->left && lm > *max)
		*max = lm;
	if (n->right && rm > *max)
		*max = rm;
	if (ai(n)->size != (uint32_t)(l + r + 1) || ai(n)->max != *max)
		return -1;
	return l + r + 1;
}

/*
 * Inserts, erases, replaces and in-place key changes in random order: the
 * augmented values equal a recount after every one of them.
 */
TEST(augmented_values_right_after_every_change)
{
	enum { N = 1500, STEPS = 15000 };
	struct aitem *it = calloc(N + 1, sizeof(*it));
	struct md_rb_tree t = { NULL, 0, aug };
	uint64_t seed = test_seed(0xa55a5aa5ULL);
	const char *why = NULL;
	uint32_t seq = 0, m;
	size_t live = 0;
	int step;

	ASSERT_NE(NULL, it);
	for (step = 0; step < STEPS; step++) {
		struct aitem *x = &it[xorshift64(&seed) % N];
		uint64_t r = xorshift64(&seed) % 10;

		if (!x->in) {
			x->key = (uint32_t)(xorshift64(&seed) % 100000);
			x->seq = seq++;
			md_rb_insert(&t, &x->rb, aitem_cmp);
			x->in = 1;
			live++;
		} else if (r < 6) {
			md_rb_erase(&t, &x->rb);
			x->in = 0;
			live--;
		} else if (r < 8) {
			/* Replace by the spare slot N with the same key. */
			struct aitem *y = &it[N];

			y->key = x->key;
			y->seq = x->seq;
			md_rb_replace(&t, &x->rb, &y->rb);
			*x = *y;
			md_rb_replace(&t, &y->rb, &x->rb);
			x->in = 1;
		} else {
			/* A key change that keeps the order: in place. */
			struct md_rb_node *nx = md_rb_next(&x->rb);
			uint32_t hi = nx ? ai(nx)->key : 200000;

			if (hi > x->key + 1) {
				x->key += (uint32_t)(xorshift64(&seed) %
						     (hi - x->key));
				if (nx && x->key == hi)
					x->key--;
				md_rb_augment_path(&t, &x->rb);
			}
		}
		ASSERT_EQ(live, t.count);
		ASSERT_EQ((long)live, recount(t.root, &m));
		if (step % 50 == 0)
			ASSERT_EQ(0, md_rb_check(&t, aitem_cmp, &why)) TH_LOG(
				"%s", why);
	}
	ASSERT_GT(live, 100u);
	/* A stale value is caught by the recount (the test can fail). */
	ai(t.root)->size++;
	EXPECT_EQ(-1, recount(t.root, &m));
	free(it);
}

TEST_HARNESS_MAIN
