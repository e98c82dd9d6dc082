// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Interval tree: a treap keyed by (lo, id) with the subtree's largest hi in
 * every node. Priorities are a hash of the id, so the shape (and with it
 * every walk) is the same for the same input: the planner stays
 * deterministic. Expected depth O(log n); queries cost O(log n + k).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "itree.h"

#define NIL MD_ITREE_NIL

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

int md_itree_init(struct md_itree *t, size_t cap)
{
	if (cap >= NIL)
		return -ERANGE;
	t->nodes = calloc(cap ? cap : 1, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	t->cap = (uint32_t)cap;
	t->root = NIL;
	t->count = 0;
	return 0;
}

int md_itree_grow(struct md_itree *t, size_t cap)
{
	struct md_itree_node *n;

	if (cap <= t->cap)
		return 0;
	if (cap >= NIL)
		return -ERANGE;
	n = realloc(t->nodes, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + t->cap, 0, (cap - t->cap) * sizeof(*n));
	t->nodes = n;
	t->cap = (uint32_t)cap;
	return 0;
}

void md_itree_free(struct md_itree *t)
{
	free(t->nodes);
	t->nodes = NULL;
	t->cap = 0;
	t->root = NIL;
	t->count = 0;
}

void md_itree_clear(struct md_itree *t)
{
	uint32_t i;

	for (i = 0; i < t->cap; i++)
		t->nodes[i].in = 0;
	t->root = NIL;
	t->count = 0;
}

/* Empty intervals overlap nothing and must not steer any search. */
static inline uint64_t own_max(const struct md_itree_node *n)
{
	return n->hi > n->lo ? n->hi : 0;
}

static inline void pull(struct md_itree_node *nd, uint32_t x)
{
	struct md_itree_node *n = &nd[x];
	uint64_t m = own_max(n);

	if (n->left != NIL && nd[n->left].max > m)
		m = nd[n->left].max;
	if (n->right != NIL && nd[n->right].max > m)
		m = nd[n->right].max;
	n->max = m;
}

/* (lo, id) order: true when a sorts before b. */
static inline int before(const struct md_itree_node *nd, uint32_t a,
			 uint32_t b)
{
	if (nd[a].lo != nd[b].lo)
		return nd[a].lo < nd[b].lo;
	return a < b;
}

static uint32_t rot_right(struct md_itree_node *nd, uint32_t x)
{
	uint32_t y = nd[x].left;

	nd[x].left = nd[y].right;
	nd[y].right = x;
	pull(nd, x);
	pull(nd, y);
	return y;
}

static uint32_t rot_left(struct md_itree_node *nd, uint32_t x)
{
	uint32_t y = nd[x].right;

	nd[x].right = nd[y].left;
	nd[y].left = x;
	pull(nd, x);
	pull(nd, y);
	return y;
}

static uint32_t insert(struct md_itree_node *nd, uint32_t root, uint32_t id)
{
	if (root == NIL)
		return id;
	if (before(nd, id, root)) {
		nd[root].left = insert(nd, nd[root].left, id);
		if (nd[nd[root].left].prio > nd[root].prio)
			return rot_right(nd, root);
	} else {
		nd[root].right = insert(nd, nd[root].right, id);
		if (nd[nd[root].right].prio > nd[root].prio)
			return rot_left(nd, root);
	}
	pull(nd, root);
	return root;
}

int md_itree_insert(struct md_itree *t, uint32_t id, uint64_t lo, uint64_t hi)
{
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
	n->left = NIL;
	n->right = NIL;
	n->prio = hash32(id + 0x9e3779b9U);
	n->in = 1;
	t->root = insert(t->nodes, t->root, id);
	t->count++;
	return 0;
}

/* Join two treaps, every key of @a before every key of @b. */
static uint32_t merge(struct md_itree_node *nd, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (nd[a].prio > nd[b].prio) {
		nd[a].right = merge(nd, nd[a].right, b);
		pull(nd, a);
		return a;
	}
	nd[b].left = merge(nd, a, nd[b].left);
	pull(nd, b);
	return b;
}

static uint32_t erase(struct md_itree_node *nd, uint32_t root, uint32_t id)
{
	if (root == NIL)
		return NIL;	/* cannot happen: id is in the tree */
	if (root == id)
		return merge(nd, nd[root].left, nd[root].right);
	if (before(nd, id, root))
		nd[root].left = erase(nd, nd[root].left, id);
	else
		nd[root].right = erase(nd, nd[root].right, id);
	pull(nd, root);
	return root;
}

int md_itree_remove(struct md_itree *t, uint32_t id)
{
	if (id >= t->cap || !t->nodes[id].in)
		return -ENOENT;
	t->root = erase(t->nodes, t->root, id);
	t->nodes[id].in = 0;
	t->count--;
	return 0;
}

static int query(const struct md_itree_node *nd, uint32_t x, uint64_t lo,
		 uint64_t hi, int (*fn)(void *, uint32_t), void *arg)
{
	int ret;

	while (x != NIL) {
		if (nd[x].max <= lo)
			return 0;
		ret = query(nd, nd[x].left, lo, hi, fn, arg);
		if (ret)
			return ret;
		/* Everything from here on starts at or after nd[x].lo. */
		if (nd[x].lo >= hi)
			return 0;
		if (nd[x].hi > lo && nd[x].hi > nd[x].lo) {
			ret = fn(arg, x);
			if (ret)
				return ret;
		}
		x = nd[x].right;
	}
	return 0;
}

int md_itree_query(const struct md_itree *t, uint64_t lo, uint64_t hi,
		   int (*fn)(void *arg, uint32_t id), void *arg)
{
	if (hi <= lo)
		return 0;
	return query(t->nodes, t->root, lo, hi, fn, arg);
}

static void collect(const struct md_itree_node *nd, uint32_t x, uint64_t lo,
		    uint64_t hi, uint32_t *ids, size_t max, size_t *k)
{
	while (x != NIL) {
		if (nd[x].max <= lo)
			return;
		collect(nd, nd[x].left, lo, hi, ids, max, k);
		if (nd[x].lo >= hi)
			return;
		if (nd[x].hi > lo && nd[x].hi > nd[x].lo) {
			if (*k < max)
				ids[*k] = x;
			(*k)++;
		}
		x = nd[x].right;
	}
}

size_t md_itree_collect(const struct md_itree *t, uint64_t lo, uint64_t hi,
			uint32_t *ids, size_t max)
{
	size_t k = 0;

	if (hi > lo)
		collect(t->nodes, t->root, lo, hi, ids, max, &k);
	return k;
}

uint32_t md_itree_any(const struct md_itree *t, uint64_t lo, uint64_t hi)
{
	const struct md_itree_node *nd = t->nodes;
	uint32_t x = t->root;

	if (hi <= lo)
		return NIL;
	/*
	 * Classic search: go left when the left subtree reaches past lo
	 * (if anything overlaps, something there does), else test the node
	 * and go right. Empty intervals do not count in max (own_max()).
	 */
	while (x != NIL) {
		if (nd[x].lo < hi && nd[x].hi > lo && nd[x].hi > nd[x].lo)
			return x;
		if (nd[x].left != NIL && nd[nd[x].left].max > lo)
			x = nd[x].left;
		else
			x = nd[x].right;
	}
	return NIL;
}

static int check(const struct md_itree_node *nd, uint32_t x, size_t *count)
{
	uint64_t m;

	if (x == NIL)
		return 0;
	(*count)++;
	m = own_max(&nd[x]);
	if (nd[x].left != NIL) {
		if (!before(nd, nd[x].left, x) ||
		    nd[nd[x].left].prio > nd[x].prio ||
		    check(nd, nd[x].left, count))
			return -EFAULT;
		if (nd[nd[x].left].max > m)
			m = nd[nd[x].left].max;
	}
	if (nd[x].right != NIL) {
		if (before(nd, nd[x].right, x) ||
		    nd[nd[x].right].prio > nd[x].prio ||
		    check(nd, nd[x].right, count))
			return -EFAULT;
		if (nd[nd[x].right].max > m)
			m = nd[nd[x].right].max;
	}
	return m == nd[x].max ? 0 : -EFAULT;
}

int md_itree_check(const struct md_itree *t)
{
	size_t count = 0;

	if (check(t->nodes, t->root, &count))
		return -EFAULT;
	return count == t->count ? 0 : -EFAULT;
}
