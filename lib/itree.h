/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Augmented interval tree: the library's red-black tree (rbtree.h) ordered
 * by (lo, id), each node carrying the largest hi of its subtree. Intervals
 * are half-open [lo, hi); empty ones overlap nothing. Nodes live in an
 * array indexed by the caller's id, so insertion and removal allocate
 * nothing. Internal to libmetadef.
 */
#ifndef METADEF_ITREE_H
#define METADEF_ITREE_H

#include <stddef.h>
#include <stdint.h>

#include "rbtree.h"

#define MD_ITREE_NIL UINT32_MAX

struct md_itree_node {
	struct md_rb_node rb;	/* first */
	uint64_t lo, hi, max;
	uint32_t in;		/* 1 while in the tree */
};

struct md_itree {
	struct md_itree_node *nodes;
	uint32_t cap;
	struct md_rb_tree t;	/* t.count: intervals in the tree */
};

/* Room for ids [0, cap). Return: 0 or -ENOMEM. */
int md_itree_init(struct md_itree *t, size_t cap);
void md_itree_free(struct md_itree *t);
/* Room for ids [0, cap) (never shrinks). Return: 0, -ENOMEM, -ERANGE. */
int md_itree_grow(struct md_itree *t, size_t cap);
/* Empty the tree, keeping its storage. */
void md_itree_clear(struct md_itree *t);

/* Return: 0, -EEXIST (id already in), -ERANGE (id >= cap), -EINVAL (hi<lo). */
int md_itree_insert(struct md_itree *t, uint32_t id, uint64_t lo, uint64_t hi);
/* Return: 0 or -ENOENT. */
int md_itree_remove(struct md_itree *t, uint32_t id);

/*
 * Call @fn for every interval overlapping [lo, hi), in order of (lo, id);
 * a non-zero return from @fn stops the walk and is returned.
 */
int md_itree_query(const struct md_itree *t, uint64_t lo, uint64_t hi,
		   int (*fn)(void *arg, uint32_t id), void *arg);

/*
 * Fill @ids (room for @max) with the intervals overlapping [lo, hi) in
 * order of (lo, id). Return: how many overlap (may exceed @max: then only
 * @max are stored).
 */
size_t md_itree_collect(const struct md_itree *t, uint64_t lo, uint64_t hi,
			uint32_t *ids, size_t max);

/* Any one interval overlapping [lo, hi), or MD_ITREE_NIL. */
uint32_t md_itree_any(const struct md_itree *t, uint64_t lo, uint64_t hi);

/*
 * Check the red-black tree (order, colours, links, count), the max
 * augmentation and the in flags: 0 or -EFAULT.
 */
int md_itree_check(const struct md_itree *t);

#endif /* METADEF_ITREE_H */
