/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory in use over a time window, for placing buffers when many are
 * alive at once (see gaptree.c). Internal to libmetadef.
 */
#ifndef METADEF_GAPTREE_H
#define METADEF_GAPTREE_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/plan.h>

/*
 * One merged memory range [off, end) in a node's set (a treap), with its
 * subtree's first offset, last end and largest gap between two ranges
 * (less the padding to the problem's common alignment).
 */
struct md_gap_node {
	uint64_t off, end;
	uint64_t lo, hi, gap;
	uint32_t left, right;	/* 0: none */
};

struct md_gaptree {
	uint32_t *lo, *hi;	/* buffer i spans cliques [lo[i], hi[i]) */
	size_t ncliques;
	uint32_t size;		/* leaves: a power of two >= ncliques */
	uint64_t align;		/* gcd of all alignments */
	unsigned int depth;	/* log2(size) */
	uint32_t *own;		/* per tree node: buffers stored there */
	uint32_t *agg;		/* per tree node: all of its subtree's */
	struct md_gap_node *pool;	/* entry 0 unused (the empty set) */
	uint32_t pool_len, pool_cap, free_list;
	uint32_t *sets;		/* query scratch: the roots to merge */
	uint32_t *next;		/* query scratch: per set, next range */
};

/*
 * md_gaptree_init() - lifetimes of @p (n < 2^32 - 1 buffers) mapped to the
 * maximal cliques of its interval graph. Return: 0 or -ENOMEM.
 */
int md_gaptree_init(struct md_gaptree *g, const struct md_problem *p);
void md_gaptree_free(struct md_gaptree *g);
/* Forget every range (start of a pass). */
void md_gaptree_reset(struct md_gaptree *g);

/* Buffer @i occupies [off, end) over its lifetime. Return: 0 or -ENOMEM. */
int md_gaptree_insert(struct md_gaptree *g, uint32_t i, uint64_t off,
		      uint64_t end);

/*
 * md_gaptree_fit() - where buffer @i (@size bytes, aligned to @align) goes
 * among the ranges of the buffers alive with it: @best 0 takes the lowest
 * gap that fits, 1 the tightest one (lowest on ties); with no such gap,
 * the top of everything alive with it, rounded up. Into *@out.
 * Return: 0, or -EAGAIN when that took more than @budget steps (one step
 * looks at one set; memory so fragmented that the caller is better off
 * scanning the neighbours one by one).
 */
int md_gaptree_fit(struct md_gaptree *g, uint32_t i, uint64_t size,
		   uint64_t align, int best, size_t budget, uint64_t *out);

#endif /* METADEF_GAPTREE_H */
