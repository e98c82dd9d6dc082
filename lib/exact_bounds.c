// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Exact planner: the bounds. The lower bound of a whole problem (the most
 * bytes alive at once, and the top of each buffer alone), and the
 * pruning bounds of a search node: per section, the bytes R(s) still to
 * place go above the lowest place any of them can still get (checked on
 * every section of a new group, then after each move on the sections it
 * changed, with the two lowest stacked), and over a group the lowest
 * place of all plus the most bytes left in one of its sections (a max
 * segment tree over R). All of them are exact: they never cut a node
 * with a solution below it. lib/exact.md describes them.
 */
#include <stdint.h>
#include <string.h>

#include "exact_internal.h"

/* A lower bound on the peak of every plan of @p. */
uint64_t exact_lower_bound(const struct md_problem *p)
{
	uint64_t lb = md_problem_lower_bound(p, NULL);
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];
		uint64_t top = b->size;

		if (!b->size)
			continue;
		if (b->flags & MD_BUF_FIXED)
			top = b->offset + b->size;
		if (top > lb)
			lb = top;
	}
	return lb;
}

/*
 * The max segment tree over the bytes left per section: node @node covers
 * sections [@l, @r); add @v to the sections [@a, @b). A number per node
 * with range add and range max: not the planner's segment trees of
 * memory ranges (struct stab in plan.c, gaptree.c; see plan.c on why
 * there are three).
 */
void exact_tree_add(struct exact *e, size_t node, size_t l, size_t r,
		    size_t a, size_t b, int64_t v)
{
	int64_t *max = e->bound.tree_max, *add = e->bound.tree_add;
	size_t mid;
	int64_t p, q;

	if (b <= l || r <= a)
		return;
	if (a <= l && r <= b) {
		add[node] += v;
		max[node] += v;
		return;
	}
	mid = (l + r) / 2;
	exact_tree_add(e, 2 * node, l, mid, a, b, v);
	exact_tree_add(e, 2 * node + 1, mid, r, a, b, v);
	p = max[2 * node];
	q = max[2 * node + 1];
	max[node] = add[node] + (p > q ? p : q);
}

/* The most bytes left in a section of [@a, @b) (node @node: [@l, @r)). */
int64_t exact_tree_max(const struct exact *e, size_t node, size_t l,
		       size_t r, size_t a, size_t b)
{
	size_t mid;
	int64_t p, q;

	if (a <= l && r <= b)
		return e->bound.tree_max[node];
	mid = (l + r) / 2;
	p = a < mid ? exact_tree_max(e, 2 * node, l, mid, a, b) : INT64_MIN;
	q = b > mid ? exact_tree_max(e, 2 * node + 1, mid, r, a, b) :
		      INT64_MIN;
	return e->bound.tree_add[node] + (p > q ? p : q);
}

/*
 * One section of exact_bound_after_move(): the buffers alive in @s, each
 * at or above its lowest place, stacked in that order must fit under the
 * capacity (the best order for stacking with release offsets). Only the
 * two lowest are looked at: the lowest one goes first, the second above
 * its end and its own lowest place, the rest above that.
 */
static int section_fits(struct exact *e, uint32_t s)
{
	uint64_t low1 = UINT64_MAX, low2 = UINT64_MAX, size1 = 0, t;
	uint64_t left = e->search.left[s], cap = e->search.cap;
	uint32_t k;

	if (e->bound.seen[s] == e->bound.stamp)
		return 1;
	e->bound.seen[s] = e->bound.stamp;
	if (!left)
		return 1;
	/* the two lowest places; the lowest buffer's size */
	for (k = e->prob.sec_start[s]; k < e->prob.sec_start[s + 1]; k++) {
		uint32_t z = e->prob.sec_bufs[k];
		uint64_t b;

		if (e->search.placed[z])
			continue;
		b = e->bound.lowest[z];
		if (b < low1) {
			low2 = low1;
			low1 = b;
			size1 = e->buf[z].size;
		} else if (b < low2) {
			low2 = b;
		}
	}
	t = low1 > e->search.floor[s] ? low1 : e->search.floor[s];
	if (t + left > cap)
		return 0;
	if (low2 == UINT64_MAX || (e->disabled & MD_EXACT_NO_STACKING))
		return 1;
	t += size1;
	if (low2 > t)
		t = low2;
	return t + left - size1 <= cap;
}

/*
 * exact_bound_sections() after a move, on the sections it can have
 * changed: those of the buffer just placed and of the buffers whose
 * skyline it raised. Elsewhere the parent's check and the m + max R check
 * imply this one. Needs bound.lowest[] of the node. Return: 0 when it
 * fails.
 */
int exact_bound_after_move(struct exact *e)
{
	const struct exact_move *mv = &e->search.moves[e->search.nmoves - 1];
	uint32_t s, k;

	if (!++e->bound.stamp) {
		memset(e->bound.seen, 0,
		       e->prob.nsecs * sizeof(*e->bound.seen));
		e->bound.stamp = 1;
	}
	for (s = e->buf[mv->buf].sec_begin; s < e->buf[mv->buf].sec_end; s++)
		if (!section_fits(e, s))
			return 0;
	for (k = mv->skylines_at; k < e->search.nsaved_skylines; k++) {
		uint32_t y = e->search.saved_skylines[k].buf;

		for (s = e->buf[y].sec_begin; s < e->buf[y].sec_end; s++)
			if (!section_fits(e, s))
				return 0;
	}
	return 1;
}

/*
 * Every section of group @g: each unplaced buffer crossing section s
 * starts at or above its own lowest place (@cv[0 .. @n), the group's
 * candidates), so the bytes R(s) go above max(floor(s), the lowest of
 * them). Return: 0 when a section does not fit.
 */
int exact_bound_sections(struct exact *e, const struct exact_group *g,
			 const struct exact_cand *cv, uint32_t n)
{
	uint64_t *low = e->bound.sec_low, cap = e->search.cap;
	uint32_t i, s;

	for (s = g->sec_begin; s < g->sec_end; s++)
		low[s] = UINT64_MAX;
	for (i = 0; i < n; i++) {
		uint32_t x = cv[i].buf;
		uint64_t c = cv[i].lowest;

		for (s = e->buf[x].sec_begin; s < e->buf[x].sec_end; s++)
			if (c < low[s])
				low[s] = c;
	}
	for (s = g->sec_begin; s < g->sec_end; s++) {
		uint64_t v = low[s] > e->search.floor[s] ? low[s] :
							   e->search.floor[s];

		if (e->search.left[s] && v + e->search.left[s] > cap)
			return 0;
	}
	return 1;
}
