// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Interval tree: the red-black tree of rbtree.[ch] keyed by (lo, id), with
 * the subtree's largest hi in every node kept by the tree's augment hook.
 * Depth at most 2 log2(n + 1); queries cost O(log n + k) and report in
 * key order, so what callers see does not depend on the tree's shape.
 *
 * The nodes are an array indexed by id: md_itree_grow() moves it to a
 * larger one and rewrites every link by its index in the old one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "itree.h"

#define NIL MD_ITREE_NIL

static inline struct md_itree_node *node_of(const struct md_rb_node *n)
{
	return (struct md_itree_node *)n;	/* rb is the first member */
}

/* Empty intervals overlap nothing and must not steer any search. */
static inline uint64_t own_max(const struct md_itree_node *n)
{
	return n->hi > n->lo ? n->hi : 0;
}

static void augment(struct md_rb_node *rb)
{
	struct md_itree_node *n = node_of(rb);
	uint64_t m = own_max(n);

	if (rb->left && node_of(rb->left)->max > m)
		m = node_of(rb->left)->max;
	if (rb->right && node_of(rb->right)->max > m)
		m = node_of(rb->right)->max;
	n->max = m;
}

/* (lo, id) order: ids are positions in the one array. */
static int node_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct md_itree_node *x = node_of(a), *y = node_of(b);

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x > y) - (x < y);
}

int md_itree_init(struct md_itree *t, size_t cap)
{
	if (cap >= NIL)
		return -ERANGE;
	t->nodes = calloc(cap ? cap : 1, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	t->cap = (uint32_t)cap;
	t->t = (struct md_rb_tree){ NULL, 0, augment };
	return 0;
}

/* @p, a link into @from's array, into @to's. */
static struct md_rb_node *rebase(struct md_rb_node *p,
				 const struct md_itree_node *from,
				 struct md_itree_node *to)
{
	return p ? &to[node_of(p) - from].rb : NULL;
}

int md_itree_grow(struct md_itree *t, size_t cap)
{
	struct md_itree_node *n;
	uint32_t i;

	if (cap <= t->cap)
		return 0;
	if (cap >= NIL)
		return -ERANGE;
	/* Not realloc: the links are rewritten from the old array. */
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		n[i] = t->nodes[i];
		if (!n[i].in)
			continue;
		n[i].rb.parent = rebase(n[i].rb.parent, t->nodes, n);
		n[i].rb.left = rebase(n[i].rb.left, t->nodes, n);
		n[i].rb.right = rebase(n[i].rb.right, t->nodes, n);
	}
	t->t.root = rebase(t->t.root, t->nodes, n);
	free(t->nodes);
	t->nodes = n;
	t->cap = (uint32_t)cap;
	return 0;
}

void md_itree_free(struct md_itree *t)
{
	free(t->nodes);
	t->nodes = NULL;
	t->cap = 0;
	t->t = (struct md_rb_tree){ NULL, 0, augment };
}

void md_itree_clear(struct md_itree *t)
{
	uint32_t i;

	for (i = 0; i < t->cap; i++)
		t->nodes[i].in = 0;
	t->t = (struct md_rb_tree){ NULL, 0, augment };
}

int md_itree_insert(struct md_itree *t, uint32_t id, uint64_t lo, uint64_t hi)
{
	struct md_rb_node **link = &t->t.root, *parent = NULL;
	struct md_itree_node *n;

	if (id >= t->cap)
		return -ERANGE;
	if (hi < lo)
		return -EINVAL;
	n = &t->nodes[id];
	if (n->in)
		return -EEXIST;
	n->lo = lo;
	n->hi = hi;
	n->max = own_max(n);
	n->in = 1;
	while (*link) {
		const struct md_itree_node *p = node_of(*link);

		parent = *link;
		link = lo < p->lo || (lo == p->lo && n < p) ? &parent->left :
							       &parent->right;
	}
	md_rb_link(&t->t, &n->rb, parent, link);
	return 0;
}

int md_itree_remove(struct md_itree *t, uint32_t id)
{
	if (id >= t->cap || !t->nodes[id].in)
		return -ENOENT;
	md_rb_erase(&t->t, &t->nodes[id].rb);
	t->nodes[id].in = 0;
	return 0;
}

static inline uint32_t id_of(const struct md_itree *t,
			     const struct md_itree_node *n)
{
	return (uint32_t)(n - t->nodes);
}

static int query(const struct md_itree *t, const struct md_rb_node *x,
		 uint64_t lo, uint64_t hi, int (*fn)(void *, uint32_t),
		 void *arg)
{
	int ret;

	while (x) {
		const struct md_itree_node *n = node_of(x);

		if (n->max <= lo)
			return 0;
		ret = query(t, x->left, lo, hi, fn, arg);
		if (ret)
			return ret;
		/* Everything from here on starts at or after n->lo. */
		if (n->lo >= hi)
			return 0;
		if (n->hi > lo && n->hi > n->lo) {
			ret = fn(arg, id_of(t, n));
			if (ret)
				return ret;
		}
		x = x->right;
	}
	return 0;
}

int md_itree_query(const struct md_itree *t, uint64_t lo, uint64_t hi,
		   int (*fn)(void *arg, uint32_t id), void *arg)
{
	if (hi <= lo)
		return 0;
	return query(t, t->t.root, lo, hi, fn, arg);
}

static void collect(const struct md_itree *t, const struct md_rb_node *x,
		    uint64_t lo, uint64_t hi, uint32_t *ids, size_t max,
		    size_t *k)
{
	while (x) {
		const struct md_itree_node *n = node_of(x);

		if (n->max <= lo)
			return;
		collect(t, x->left, lo, hi, ids, max, k);
		if (n->lo >= hi)
			return;
		if (n->hi > lo && n->hi > n->lo) {
			if (*k < max)
				ids[*k] = id_of(t, n);
			(*k)++;
		}
		x = x->right;
	}
}

size_t md_itree_collect(const struct md_itree *t, uint64_t lo, uint64_t hi,
			uint32_t *ids, size_t max)
{
	size_t k = 0;

	if (hi > lo)
		collect(t, t->t.root, lo, hi, ids, max, &k);
	return k;
}

uint32_t md_itree_any(const struct md_itree *t, uint64_t lo, uint64_t hi)
{
	const struct md_rb_node *x = t->t.root;

	if (hi <= lo)
		return NIL;
	/*
	 * Classic search: go left when the left subtree reaches past lo
	 * (if anything overlaps, something there does), else test the node
	 * and go right. Empty intervals do not count in max (own_max()).
	 */
	while (x) {
		const struct md_itree_node *n = node_of(x);

		if (n->lo < hi && n->hi > lo && n->hi > n->lo)
			return id_of(t, n);
		if (x->left && node_of(x->left)->max > lo)
			x = x->left;
		else
			x = x->right;
	}
	return NIL;
}

/* The max of every node of @x's subtree; counts the nodes marked in. */
static int check_max(const struct md_rb_node *x, size_t *in)
{
	const struct md_itree_node *n;
	uint64_t m;

	if (!x)
		return 0;
	n = node_of(x);
	if (!n->in)
		return -EFAULT;
	(*in)++;
	m = own_max(n);
	if (x->left && node_of(x->left)->max > m)
		m = node_of(x->left)->max;
	if (x->right && node_of(x->right)->max > m)
		m = node_of(x->right)->max;
	if (m != n->max)
		return -EFAULT;
	if (check_max(x->left, in) || check_max(x->right, in))
		return -EFAULT;
	return 0;
}

int md_itree_check(const struct md_itree *t)
{
	const char *why = NULL;
	size_t in = 0, marked = 0;
	uint32_t i;

	if (t->t.augment != augment)
		return -EFAULT;
	if (md_rb_check(&t->t, node_cmp, &why))
		return -EFAULT;
	if (check_max(t->t.root, &in) || in != t->t.count)
		return -EFAULT;
	for (i = 0; i < t->cap; i++)
		marked += t->nodes[i].in;
	return marked == in ? 0 : -EFAULT;
}
