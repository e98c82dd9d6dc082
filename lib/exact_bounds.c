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
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "exact_internal.h"
#include "plan_internal.h"

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

/* ------------------------------------------------------ stronger bounds */


static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * The events of a sweep over the nonzero buffers of @p: starts and ends
 * sorted by time, ends first at the same time (half-open lifetimes).
 * *@lo and *@up are malloc()ed; return the count, or -1 without memory.
 */
static ssize_t sweep_events(const struct md_problem *p, struct md_kv **lo,
			    struct md_kv **up)
{
	size_t i, n = 0;

	*lo = malloc((p->n + 1) * sizeof(**lo));
	*up = malloc((p->n + 1) * sizeof(**up));
	if (!*lo || !*up)
		goto fail;
	for (i = 0; i < p->n; i++) {
		if (!p->bufs[i].size)
			continue;
		(*lo)[n] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
		(*up)[n] = (struct md_kv){ p->bufs[i].upper, (uint32_t)i };
		n++;
	}
	if (md_sort_kv(*lo, n) || md_sort_kv(*up, n))
		goto fail;
	return (ssize_t)n;
fail:
	free(*lo);
	free(*up);
	*lo = *up = NULL;
	return -1;
}

/*
 * The load bound with alignment. When every alignment is a multiple of
 * g, so is every offset: stacked in offset order, the buffers alive at
 * one instant each start at or above the end of the one below rounded
 * up to g. So the peak is at least the sum of their sizes rounded up to
 * g, less the rounding of the one on top (at most the largest rounding
 * of any buffer). Fixed buffers are aligned too (the validator says so).
 */
uint64_t exact_bound_aligned(const struct md_problem *p)
{
	uint64_t g = 0, pad = 0, live = 0, best = 0;
	struct md_kv *lo, *up;
	ssize_t n;
	size_t i, e = 0;

	for (i = 0; i < p->n; i++)
		if (p->bufs[i].size)
			g = gcd64(g, p->bufs[i].align ? p->bufs[i].align : 1);
	if (g <= 1)
		return 0;
	for (i = 0; i < p->n; i++) {
		uint64_t s = p->bufs[i].size, r = s % g ? g - s % g : 0;

		if (s && r > pad)
			pad = r;
	}
	n = sweep_events(p, &lo, &up);
	if (n < 0)
		return 0;
	for (i = 0; i < (size_t)n; i++) {
		const struct md_buffer *b;

		while (up[e].key <= lo[i].key) {
			b = &p->bufs[up[e++].idx];
			live -= (b->size + g - 1) / g * g;
		}
		b = &p->bufs[lo[i].idx];
		live += (b->size + g - 1) / g * g;
		if (live > best)
			best = live;
	}
	free(lo);
	free(up);
	return best > pad ? best - pad : 0;
}

/*
 * Up to @k instants of @p where the most bytes are alive, highest first
 * (the load there in @load[]); ties to the earliest. Return how many.
 */
static size_t peak_instants(const struct md_problem *p, uint64_t *at,
			    uint64_t *load, size_t k)
{
	struct md_kv *lo, *up;
	uint64_t live = 0;
	ssize_t n;
	size_t i, e = 0, have = 0, j;

	n = sweep_events(p, &lo, &up);
	if (n < 0)
		return 0;
	for (i = 0; i < (size_t)n; i++) {
		while (up[e].key <= lo[i].key)
			live -= p->bufs[up[e++].idx].size;
		live += p->bufs[lo[i].idx].size;
		/* only where the load is at a local top: the last start */
		if (i + 1 < (size_t)n && lo[i + 1].key == lo[i].key)
			continue;
		if (have == k && live <= load[k - 1])
			continue;
		j = have < k ? have++ : k - 1;
		while (j && load[j - 1] < live) {
			load[j] = load[j - 1];
			at[j] = at[j - 1];
			j--;
		}
		load[j] = live;
		at[j] = lo[i].key;
	}
	free(lo);
	free(up);
	return have;
}

/*
 * The buffers of @p alive in [@t0, @t1), their lifetimes clipped to it,
 * into @q (emptied first). Return: 0 or -ENOMEM.
 */
static int window_problem(const struct md_problem *p, uint64_t t0,
			  uint64_t t1, struct md_problem *q)
{
	size_t i;

	q->n = 0;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];
		int ret;

		if (b->upper <= t0 || t1 <= b->lower)
			continue;
		ret = md_problem_add(q, NULL, b->lower > t0 ? b->lower : t0,
				     b->upper < t1 ? b->upper : t1, b->size,
				     b->align);
		if (ret)
			return ret;
		q->bufs[q->n - 1].flags = b->flags;
		q->bufs[q->n - 1].offset = b->offset;
	}
	return 0;
}

/*
 * The window bound: the buffers alive in a window of time around a peak
 * instant, clipped to it, are a smaller problem whose every plan is no
 * higher than a plan of @p restricted to them, so the bound the exact
 * search proves on it holds for @p. Windows grow by doubling around each
 * of the three highest instants while they hold at most @max_bufs
 * buffers; each is searched in minimize mode with @nodes search nodes,
 * until the bound reaches @ub or @seconds pass (<= 0: no clock, the same
 * bound every run).
 */
uint64_t exact_bound_window(const struct md_problem *p, uint64_t lb,
			    uint64_t ub, size_t max_bufs, uint64_t nodes,
			    double seconds)
{
	struct timespec start, now;
	uint64_t at[3], load[3], end = 0;
	struct md_problem q;
	size_t k, nk, i;

	for (i = 0; i < p->n; i++)
		if (p->bufs[i].upper > end)
			end = p->bufs[i].upper;
	clock_gettime(CLOCK_MONOTONIC, &start);
	nk = peak_instants(p, at, load, 3);
	md_problem_init(&q);
	for (k = 0; k < nk && lb < ub; k++) {
		uint64_t w, prev_n = 0;

		for (w = 1; lb < ub; w *= 2) {
			struct md_exact_opts o = { 0 };
			struct md_exact_result r;
			uint64_t t0 = at[k] > w ? at[k] - w : 0;
			uint64_t t1 = end - at[k] > w ? at[k] + w : end;

			if (window_problem(p, t0, t1, &q) ||
			    q.n > max_bufs)
				break;
			if (q.n == prev_n) {
				if (t0 == 0 && t1 == end)
					break;
				continue;
			}
			prev_n = q.n;
			o.minimize = 1;
			o.max_nodes = nodes;
			if (seconds > 0) {
				clock_gettime(CLOCK_MONOTONIC, &now);
				o.time_limit = seconds -
					(double)(now.tv_sec - start.tv_sec) -
					(now.tv_nsec - start.tv_nsec) * 1e-9;
				if (o.time_limit <= 0)
					goto out;
			}
			if (md_exact_solve(&q, &o, &r))
				break;
			if (r.lower_bound > lb)
				lb = r.lower_bound < ub ? r.lower_bound : ub;
			md_exact_result_free(&r);
			if (t0 == 0 && t1 == end)
				break;
		}
	}
out:
	md_problem_free(&q);
	return lb;
}
