// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The red-black tree of rbtree.h: the classic algorithms (Cormen et al.,
 * ch. 13) with parent pointers and NULL leaves, which are black.
 */
#include "rbtree.h"

static inline bool is_red(const struct md_rb_node *n)
{
	return n && n->red;
}

/* Put @v where @u hangs (its parent's link or the root). */
static void rb_replace_link(struct md_rb_tree *t, struct md_rb_node *u,
			    struct md_rb_node *v)
{
	if (!u->parent)
		t->root = v;
	else if (u == u->parent->left)
		u->parent->left = v;
	else
		u->parent->right = v;
	if (v)
		v->parent = u->parent;
}

static void rb_rotate_left(struct md_rb_tree *t, struct md_rb_node *x)
{
	struct md_rb_node *y = x->right;

	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	rb_replace_link(t, x, y);
	y->left = x;
	x->parent = y;
	if (t->augment) {	/* x is y's child now: x first */
		t->augment(x);
		t->augment(y);
	}
}

static void rb_rotate_right(struct md_rb_tree *t, struct md_rb_node *x)
{
	struct md_rb_node *y = x->left;

	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	rb_replace_link(t, x, y);
	y->right = x;
	x->parent = y;
	if (t->augment) {
		t->augment(x);
		t->augment(y);
	}
}

static void rb_insert_fixup(struct md_rb_tree *t, struct md_rb_node *z)
{
	struct md_rb_node *p, *g, *u;

	while ((p = z->parent) && p->red) {
		g = p->parent;	/* exists: a red node is never the root */
		if (p == g->left) {
			u = g->right;
			if (is_red(u)) {
				p->red = false;
				u->red = false;
				g->red = true;
				z = g;
				continue;
			}
			if (z == p->right) {
				rb_rotate_left(t, p);
				z = p;
				p = z->parent;
			}
			p->red = false;
			g->red = true;
			rb_rotate_right(t, g);
		} else {
			u = g->left;
			if (is_red(u)) {
				p->red = false;
				u->red = false;
				g->red = true;
				z = g;
				continue;
			}
			if (z == p->left) {
				rb_rotate_right(t, p);
				z = p;
				p = z->parent;
			}
			p->red = false;
			g->red = true;
			rb_rotate_left(t, g);
		}
	}
	t->root->red = false;
}

/* Insert @n (its key already set); equal keys go right. */
void md_rb_insert(struct md_rb_tree *t, struct md_rb_node *n, md_rb_cmp_t cmp)
{
	struct md_rb_node **link = &t->root, *parent = NULL;

	while (*link) {
		parent = *link;
		link = cmp(n, parent) < 0 ? &parent->left : &parent->right;
	}
	md_rb_link(t, n, parent, link);
}

void md_rb_link(struct md_rb_tree *t, struct md_rb_node *n,
		struct md_rb_node *parent, struct md_rb_node **link)
{
	n->parent = parent;
	n->left = NULL;
	n->right = NULL;
	n->red = true;
	*link = n;
	t->count++;
	/* Right above, then kept right by each rotation of the fixup. */
	if (t->augment)
		md_rb_augment_path(t, n);
	rb_insert_fixup(t, n);
}

void md_rb_augment_path(struct md_rb_tree *t, struct md_rb_node *n)
{
	for (; n; n = n->parent)
		t->augment(n);
}

void md_rb_replace(struct md_rb_tree *t, struct md_rb_node *old,
		   struct md_rb_node *n)
{
	*n = *old;
	rb_replace_link(t, old, n);
	if (n->left)
		n->left->parent = n;
	if (n->right)
		n->right->parent = n;
	if (t->augment)
		md_rb_augment_path(t, n);
}

/*
 * Restore the black height after a black node was removed above @x, which
 * may be NULL (hence its parent @xp is passed along).
 */
static void rb_erase_fixup(struct md_rb_tree *t, struct md_rb_node *x,
			   struct md_rb_node *xp)
{
	struct md_rb_node *w;

	while (x != t->root && !is_red(x)) {
		if (x == xp->left) {
			w = xp->right;	/* exists: that side is one black deeper */
			if (w->red) {
				w->red = false;
				xp->red = true;
				rb_rotate_left(t, xp);
				w = xp->right;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = true;
				x = xp;
				xp = x->parent;
				continue;
			}
			if (!is_red(w->right)) {
				w->left->red = false;
				w->red = true;
				rb_rotate_right(t, w);
				w = xp->right;
			}
			w->red = xp->red;
			xp->red = false;
			w->right->red = false;
			rb_rotate_left(t, xp);
		} else {
			w = xp->left;
			if (w->red) {
				w->red = false;
				xp->red = true;
				rb_rotate_right(t, xp);
				w = xp->left;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = true;
				x = xp;
				xp = x->parent;
				continue;
			}
			if (!is_red(w->left)) {
				w->right->red = false;
				w->red = true;
				rb_rotate_left(t, w);
				w = xp->left;
			}
			w->red = xp->red;
			xp->red = false;
			w->left->red = false;
			rb_rotate_right(t, xp);
		}
		x = t->root;
	}
	if (x)
		x->red = false;
}

struct md_rb_node *md_rb_first(struct md_rb_node *n)
{
	while (n && n->left)
		n = n->left;
	return n;
}

struct md_rb_node *md_rb_last(struct md_rb_node *n)
{
	while (n && n->right)
		n = n->right;
	return n;
}

struct md_rb_node *md_rb_next(const struct md_rb_node *n)
{
	const struct md_rb_node *p;

	if (n->right)
		return md_rb_first(n->right);
	for (p = n->parent; p && n == p->right; p = p->parent)
		n = p;
	return (struct md_rb_node *)p;
}

struct md_rb_node *md_rb_prev(const struct md_rb_node *n)
{
	const struct md_rb_node *p;

	if (n->left)
		return md_rb_last(n->left);
	for (p = n->parent; p && n == p->left; p = p->parent)
		n = p;
	return (struct md_rb_node *)p;
}

void md_rb_erase(struct md_rb_tree *t, struct md_rb_node *z)
{
	struct md_rb_node *x, *xp, *y;
	bool removed_red;

	if (!z->left || !z->right) {
		/* z has at most one child: it takes z's place. */
		x = z->left ? z->left : z->right;
		xp = z->parent;
		removed_red = z->red;
		rb_replace_link(t, z, x);
	} else {
		/* z's successor y takes z's place and colour. */
		y = md_rb_first(z->right);
		removed_red = y->red;
		x = y->right;
		if (y->parent == z) {
			xp = y;
		} else {
			xp = y->parent;
			rb_replace_link(t, y, x);
			y->right = z->right;
			y->right->parent = y;
		}
		rb_replace_link(t, z, y);
		y->left = z->left;
		y->left->parent = y;
		y->red = z->red;
	}
	t->count--;
	z->parent = z->left = z->right = NULL;
	/*
	 * Every subtree that changed hangs on the path from xp up (y, if it
	 * moved, is on it): right first, then kept right by the rotations.
	 */
	if (t->augment && xp)
		md_rb_augment_path(t, xp);
	if (!removed_red)
		rb_erase_fixup(t, x, xp);
}

/*
 * Check @n's subtree: parent links, no red child of a red node, in-order
 * strictly increasing by @cmp (*@prev is the previous node in order).
 * Return: its black height (NULL leaves count 1) or -1 with *@why set.
 */
static int rb_check_sub(const struct md_rb_node *n,
			const struct md_rb_node *parent,
			const struct md_rb_node **prev, size_t *count,
			md_rb_cmp_t cmp, const char **why)
{
	int lh, rh;

	if (!n)
		return 1;
	if (n->parent != parent) {
		*why = "rbtree: parent link";
		return -1;
	}
	if (n->red && (is_red(n->left) || is_red(n->right))) {
		*why = "rbtree: red node with a red child";
		return -1;
	}
	lh = rb_check_sub(n->left, n, prev, count, cmp, why);
	if (lh < 0)
		return -1;
	if (*prev && cmp(*prev, n) >= 0) {
		*why = "rbtree: keys out of order";
		return -1;
	}
	*prev = n;
	(*count)++;
	rh = rb_check_sub(n->right, n, prev, count, cmp, why);
	if (rh < 0)
		return -1;
	if (lh != rh) {
		*why = "rbtree: black heights differ";
		return -1;
	}
	return lh + !n->red;
}

int md_rb_check(const struct md_rb_tree *t, md_rb_cmp_t cmp, const char **why)
{
	const struct md_rb_node *prev = NULL;
	size_t count = 0;

	if (t->root && (t->root->parent || t->root->red)) {
		*why = "rbtree: root red or with a parent";
		return -1;
	}
	if (rb_check_sub(t->root, NULL, &prev, &count, cmp, why) < 0)
		return -1;
	if (count != t->count) {
		*why = "rbtree: node count";
		return -1;
	}
	return 0;
}
