/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An intrusive red-black tree (Cormen et al., ch. 13): parent pointers,
 * NULL leaves (black), keys compared by the caller's function. Used by the
 * dynamic pool (its free tree), the device (its live regions by address),
 * the planner's sweep (free gaps by offset and by length) and, augmented,
 * by the interval tree (itree.c). Not thread-safe: callers lock.
 *
 * Augmented trees: with @augment set, every node carries a value computed
 * from itself and its children (a subtree's largest end, a count...);
 * @augment recomputes it for one node from its children's, and the tree
 * calls it wherever a node's subtree changes (rotations, the path above
 * an insertion or removal), so the value is right everywhere after every
 * call. A node whose own key data changes in place needs
 * md_rb_augment_path().
 */
#ifndef METADEF_RBTREE_H
#define METADEF_RBTREE_H

#include <stdbool.h>
#include <stddef.h>

struct md_rb_node {
	struct md_rb_node *parent, *left, *right;
	bool red;
};

/* Recompute @n's augmented value from its own data and its children's. */
typedef void (*md_rb_augment_t)(struct md_rb_node *n);

struct md_rb_tree {
	struct md_rb_node *root;
	size_t count;
	md_rb_augment_t augment;	/* NULL: a plain tree */
};

/* < 0, 0, > 0 as @a sorts before, with or after @b. */
typedef int (*md_rb_cmp_t)(const struct md_rb_node *a,
			   const struct md_rb_node *b);

/* Insert @n (its key already set); equal keys go right. */
void md_rb_insert(struct md_rb_tree *t, struct md_rb_node *n, md_rb_cmp_t cmp);
/*
 * Insert @n as the child at @link (&parent->left or ->right, or &t->root
 * with @parent NULL) of a search the caller ran itself (with its key
 * comparison inline, no call per level), then rebalance.
 */
void md_rb_link(struct md_rb_tree *t, struct md_rb_node *n,
		struct md_rb_node *parent, struct md_rb_node **link);
void md_rb_erase(struct md_rb_tree *t, struct md_rb_node *n);
/*
 * @n takes @old's place (links and colour); @old leaves the tree. The
 * caller makes sure @n's key sorts where @old's did (between @old's
 * in-order neighbours): no search, no rebalancing.
 */
void md_rb_replace(struct md_rb_tree *t, struct md_rb_node *old,
		   struct md_rb_node *n);

/* @augment on @n and on each of its ancestors, bottom up. */
void md_rb_augment_path(struct md_rb_tree *t, struct md_rb_node *n);

/* The leftmost / rightmost node of the subtree at @n (NULL if empty). */
struct md_rb_node *md_rb_first(struct md_rb_node *n);
struct md_rb_node *md_rb_last(struct md_rb_node *n);

/* In-order neighbours of @n, or NULL. */
struct md_rb_node *md_rb_next(const struct md_rb_node *n);
struct md_rb_node *md_rb_prev(const struct md_rb_node *n);

/*
 * Check the whole tree: parent links, colours, black heights, the count,
 * keys strictly increasing by @cmp. Return: 0, or -1 with *@why set.
 */
int md_rb_check(const struct md_rb_tree *t, md_rb_cmp_t cmp, const char **why);

#endif /* METADEF_RBTREE_H */
