// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory in use over a time window: where the heuristic planner looks for
 * gaps when buffers have too many neighbours in time for neighbour lists.
 *
 * Time is first reduced to the maximal cliques of the interval graph:
 * sweeping the ends (an end before a start at the same time: lifetimes
 * are half-open), a clique closes at every end that follows a start. Two
 * buffers are alive together exactly when they share a clique, so every
 * lifetime becomes a range of clique indices. Buffers that are all alive
 * at once share one clique, whatever their lifetimes look like.
 *
 * A segment tree over the cliques stores each placed buffer's memory range
 * at the O(log) nodes that cover its lifetime ("own": these buffers are
 * alive together, so the ranges are disjoint) and in the "agg" set of
 * those nodes and of their ancestors that it only partly covers (every
 * buffer stored in the node's subtree). The buffers alive with a window
 * are then the agg sets of the window's covering nodes plus the own sets
 * of the nodes that stick out of it on either side (each holds one end of
 * the window). Every set is a treap of merged ranges: only the union
 * counts, so a set is as small as the memory it covers is fragmented, not
 * as large as the number of buffers in it. A fit merges the O(log) sets
 * gap by gap, lowest first.
 *
 * Not the same structure as plan.c's stab tree (static flat lists per
 * node, one instant per query) nor exact_bounds.c's max tree (numbers,
 * range add): see plan.c's struct stab for why the library keeps three.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gaptree.h"
#include "plan_internal.h"

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int md_gaptree_init(struct md_gaptree *g, const struct md_problem *p)
{
	size_t n = p->n, s = 0, e = 0, i;
	struct md_kv *lo, *up;
	uint32_t cnt = 0;
	int open = 0, ret = -ENOMEM;

	memset(g, 0, sizeof(*g));
	lo = malloc((n + 1) * sizeof(*lo));
	up = malloc((n + 1) * sizeof(*up));
	g->lo = malloc((n + 1) * sizeof(*g->lo));
	g->hi = malloc((n + 1) * sizeof(*g->hi));
	if (!lo || !up || !g->lo || !g->hi)
		goto out;
	for (i = 0; i < n; i++) {
		lo[i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
		up[i] = (struct md_kv){ p->bufs[i].upper, (uint32_t)i };
		g->align = gcd(g->align, p->bufs[i].align);
	}
	if (!g->align)
		g->align = 1;
	if (md_sort_kv(lo, n) || md_sort_kv(up, n))
		goto out;
	while (e < n) {
		if (s < n && lo[s].key < up[e].key) {
			g->lo[lo[s++].idx] = cnt;
			open = 1;
		} else {
			if (open)
				cnt++;
			open = 0;
			g->hi[up[e++].idx] = cnt;
		}
	}
	g->ncliques = cnt;
	g->size = 1;
	while (g->size < cnt) {
		g->size *= 2;
		g->depth++;
	}
	g->own = calloc(2 * (size_t)g->size, sizeof(*g->own));
	g->agg = calloc(2 * (size_t)g->size, sizeof(*g->agg));
	g->sets = malloc(4 * (g->depth + 2) * sizeof(*g->sets));
	g->next = malloc(4 * (g->depth + 2) * sizeof(*g->next));
	g->pool_cap = 1024;
	g->pool = malloc(g->pool_cap * sizeof(*g->pool));
	if (!g->own || !g->agg || !g->sets || !g->next || !g->pool)
		goto out;
	g->pool_len = 1;
	ret = 0;
out:
	free(lo);
	free(up);
	if (ret)
		md_gaptree_free(g);
	return ret;
}

void md_gaptree_free(struct md_gaptree *g)
{
	free(g->lo);
	free(g->hi);
	free(g->own);
	free(g->agg);
	free(g->pool);
	free(g->sets);
	free(g->next);
	memset(g, 0, sizeof(*g));
}

void md_gaptree_reset(struct md_gaptree *g)
{
	memset(g->own, 0, 2 * (size_t)g->size * sizeof(*g->own));
	memset(g->agg, 0, 2 * (size_t)g->size * sizeof(*g->agg));
	g->pool_len = 1;
	g->free_list = 0;
}

/* ------------------------------------------------------------ sets */

static int node_new(struct md_gaptree *g, uint32_t *out)
{
	uint32_t x = g->free_list;

	if (x) {
		g->free_list = g->pool[x].left;
	} else {
		if (g->pool_len == g->pool_cap) {
			struct md_gap_node *np;
			uint32_t cap;

			if (g->pool_cap > UINT32_MAX / 2)
				return -ENOMEM;
			cap = 2 * g->pool_cap;
			np = realloc(g->pool, cap * sizeof(*np));
			if (!np)
				return -ENOMEM;
			g->pool = np;
			g->pool_cap = cap;
		}
		x = g->pool_len++;
	}
	g->pool[x].left = 0;
	g->pool[x].right = 0;
	*out = x;
	return 0;
}

/* Give the nodes of treap @t back. */
static void free_all(struct md_gaptree *g, uint32_t t)
{
	while (t) {
		uint32_t r = g->pool[t].right;

		free_all(g, g->pool[t].left);
		g->pool[t].left = g->free_list;
		g->free_list = t;
		t = r;
	}
}

/* Higher hash on top; node indices are unique, so are the priorities. */
static inline int above(uint32_t a, uint32_t b)
{
	uint32_t ha = hash32(a), hb = hash32(b);

	return ha != hb ? ha > hb : a > b;
}

/* Room in the gap [from, to) for a block aligned to @align. */
static inline uint64_t room(uint64_t from, uint64_t to, uint64_t align)
{
	uint64_t a = md_round_up(from, align);

	return a < to ? to - a : 0;
}

static inline uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

static void pull(struct md_gap_node *nd, uint32_t x, uint64_t align)
{
	uint32_t l = nd[x].left, r = nd[x].right;

	nd[x].lo = l ? nd[l].lo : nd[x].off;
	nd[x].hi = r ? nd[r].hi : nd[x].end;
	nd[x].gap = max3(l ? nd[l].gap : 0, r ? nd[r].gap : 0,
			 l ? room(nd[l].hi, nd[x].off, align) : 0);
	if (r && room(nd[x].end, nd[r].lo, align) > nd[x].gap)
		nd[x].gap = room(nd[x].end, nd[r].lo, align);
}

static uint32_t merge(struct md_gap_node *nd, uint32_t a, uint32_t b,
		      uint64_t align)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (above(a, b)) {
		nd[a].right = merge(nd, nd[a].right, b, align);
		pull(nd, a, align);
		return a;
	}
	nd[b].left = merge(nd, a, nd[b].left, align);
	pull(nd, b, align);
	return b;
}

/*
 * Split @t into *a and *b: the ranges ending before @v and the others
 * (@by_end), or those starting at or before @v and the others.
 */
static void split(struct md_gap_node *nd, uint32_t t, uint64_t v, int by_end,
		  uint32_t *a, uint32_t *b, uint64_t align)
{
	if (!t) {
		*a = *b = 0;
		return;
	}
	if (by_end ? nd[t].end < v : nd[t].off <= v) {
		split(nd, nd[t].right, v, by_end, &nd[t].right, b, align);
		*a = t;
	} else {
		split(nd, nd[t].left, v, by_end, a, &nd[t].left, align);
		*b = t;
	}
	pull(nd, t, align);
}

/* Add [off, end) to the set rooted at *@root, merging what it touches. */
static int set_add(struct md_gaptree *g, uint32_t *root, uint64_t off,
		   uint64_t end)
{
	struct md_gap_node *nd;
	uint32_t a, m, r, x;
	int ret;

	ret = node_new(g, &x);
	if (ret)
		return ret;
	nd = g->pool;
	split(nd, *root, off, 1, &a, &m, g->align);
	split(nd, m, end, 0, &m, &r, g->align);
	if (m) {
		if (nd[m].lo < off)
			off = nd[m].lo;
		if (nd[m].hi > end)
			end = nd[m].hi;
		free_all(g, m);
	}
	nd[x].off = off;
	nd[x].end = end;
	pull(nd, x, g->align);
	*root = merge(nd, merge(nd, a, x, g->align), r, g->align);
	return 0;
}

/* The first range of @t ending after @v, or 0. */
static uint32_t set_after(const struct md_gap_node *nd, uint32_t t,
			  uint64_t v)
{
	uint32_t best = 0;

	while (t) {
		if (nd[t].end > v) {
			best = t;
			t = nd[t].left;
		} else {
			t = nd[t].right;
		}
	}
	return best;
}

/* The end of the last range of @t ending at or before @v, or 0. */
static uint64_t set_end_before(const struct md_gap_node *nd, uint32_t t,
			       uint64_t v)
{
	uint64_t best = 0;

	while (t) {
		if (nd[t].end <= v) {
			best = nd[t].end;
			t = nd[t].right;
		} else {
			t = nd[t].left;
		}
	}
	return best;
}

struct want {
	uint64_t from, size, align;
};

/* Lowest aligned a >= w->from with [a, a + size) inside [gs, ge), or 0. */
static inline int fits(const struct want *w, uint64_t gs, uint64_t ge,
			    uint64_t *a)
{
	*a = md_round_up(gs > w->from ? gs : w->from, w->align);
	return *a <= ge && ge - *a >= w->size;
}

/*
 * The lowest place for @w in the gap before subtree @t (from @prev, the
 * end of the range before it) or between its ranges; UINT64_MAX if none.
 * Subtrees that end before w->from or whose gaps are all too small (even
 * at the common alignment) are not entered.
 */
static uint64_t set_fit(const struct md_gap_node *nd, uint32_t t,
			uint64_t prev, const struct want *w, uint64_t galign)
{
	uint64_t a;

	while (t) {
		uint32_t l = nd[t].left;
		uint64_t r;

		if (nd[t].hi <= w->from)
			return UINT64_MAX;
		if (nd[t].gap < w->size && room(prev, nd[t].lo, galign) <
		    w->size)
			return UINT64_MAX;
		if (l) {
			r = set_fit(nd, l, prev, w, galign);
			if (r != UINT64_MAX)
				return r;
			prev = nd[l].hi;
		}
		if (fits(w, prev, nd[t].off, &a))
			return a;
		prev = nd[t].end;
		t = nd[t].right;
	}
	return UINT64_MAX;
}

/* Lowest aligned a >= w->from with [a, a + size) free in set @t. */
static uint64_t set_next_free(const struct md_gap_node *nd, uint32_t t,
			      const struct want *w, uint64_t galign)
{
	uint64_t a;

	if (t && nd[t].hi > w->from) {
		a = set_fit(nd, t, 0, w, galign);
		if (a != UINT64_MAX)
			return a;
		return md_round_up(nd[t].hi, w->align);
	}
	return md_round_up(w->from, w->align);
}

/* ------------------------------------------------------------ tree */

/* Does tree node @w (at @level above the leaves) lie inside [lo, hi)? */
static inline int inside(const struct md_gaptree *g, uint32_t w,
			 unsigned int level, uint32_t lo, uint32_t hi)
{
	uint64_t first = ((uint64_t)w << level) - g->size;
	uint64_t last = (((uint64_t)w + 1) << level) - g->size;

	return lo <= first && last <= hi;
}

int md_gaptree_insert(struct md_gaptree *g, uint32_t i, uint64_t off,
		      uint64_t end)
{
	uint32_t lo = g->lo[i], hi = g->hi[i], a, b;
	unsigned int k;
	int ret;

	if (end <= off)
		return 0;
	/* The covering nodes; a leaf's own set is its agg set. */
	for (a = lo + g->size, b = hi + g->size, k = 0; a < b;
	     a >>= 1, b >>= 1, k++) {
		if (a & 1) {
			if (k && (ret = set_add(g, &g->own[a], off, end)))
				return ret;
			if ((ret = set_add(g, &g->agg[a], off, end)))
				return ret;
			a++;
		}
		if (b & 1) {
			b--;
			if (k && (ret = set_add(g, &g->own[b], off, end)))
				return ret;
			if ((ret = set_add(g, &g->agg[b], off, end)))
				return ret;
		}
	}
	/* Their ancestors: the nodes holding an end but not inside. */
	for (k = 1; k <= g->depth; k++) {
		uint32_t u = (lo + g->size) >> k, v = (hi - 1 + g->size) >> k;

		if (!inside(g, u, k, lo, hi) &&
		    (ret = set_add(g, &g->agg[u], off, end)))
			return ret;
		if (v != u && !inside(g, v, k, lo, hi) &&
		    (ret = set_add(g, &g->agg[v], off, end)))
			return ret;
	}
	return 0;
}

/* The sets holding the placed buffers alive with buffer @i; how many. */
static size_t gather(struct md_gaptree *g, uint32_t i)
{
	uint32_t lo = g->lo[i], hi = g->hi[i], a, b, *set = g->sets;
	size_t ns = 0;
	unsigned int k;

	for (a = lo + g->size, b = hi + g->size; a < b; a >>= 1, b >>= 1) {
		if (a & 1) {
			if (g->agg[a])
				set[ns++] = g->agg[a];
			a++;
		}
		if (b & 1 && g->agg[--b])
			set[ns++] = g->agg[b];
	}
	for (k = 1; k <= g->depth; k++) {
		uint32_t u = (lo + g->size) >> k, v = (hi - 1 + g->size) >> k;

		if (g->own[u] && !inside(g, u, k, lo, hi))
			set[ns++] = g->own[u];
		if (v != u && g->own[v] && !inside(g, v, k, lo, hi))
			set[ns++] = g->own[v];
	}
	return ns;
}

/*
 * Gap by gap through the union of the sets, lowest first: what the list
 * planner's scan does, for zero-sized buffers (which fit in a gap of any
 * length, so skipping to gaps that are large enough does not help).
 */
static uint64_t walk_fit(struct md_gaptree *g, size_t ns,
			 const struct want *w, int best)
{
	const struct md_gap_node *nd = g->pool;
	uint64_t cur = 0, best_off = UINT64_MAX, best_len = UINT64_MAX;
	uint32_t *next = g->next;
	size_t j;

	for (j = 0; j < ns; j++)
		next[j] = set_after(nd, g->sets[j], 0);
	for (;;) {
		uint64_t nxt, ao;
		int moved;

		/* Walk up through what is covered at cur. */
		do {
			moved = 0;
			nxt = UINT64_MAX;
			for (j = 0; j < ns; j++) {
				uint32_t x = next[j];

				if (x && nd[x].end <= cur)
					x = next[j] = set_after(nd, g->sets[j],
								cur);
				if (!x)
					continue;
				if (nd[x].off <= cur) {
					cur = nd[x].end;
					moved = 1;
				} else if (nd[x].off < nxt) {
					nxt = nd[x].off;
				}
			}
		} while (moved);
		if (nxt == UINT64_MAX)
			break;
		/* The gap [cur, nxt). */
		if (fits(w, cur, nxt, &ao)) {
			if (!best)
				return ao;
			if (nxt - cur < best_len) {
				best_len = nxt - cur;
				best_off = ao;
			}
		}
		cur = nxt;
	}
	return best_off != UINT64_MAX ? best_off : md_round_up(cur, w->align);
}

/*
 * Lowest aligned a >= w->from free in every set: each set in turn moves a
 * up to its own next free place until all of them agree. a only grows, so
 * each set keeps its first range ending after a (g->next, 0: none, NONE:
 * not looked up yet): most turns only find a still free.
 */
#define NONE UINT32_MAX

static uint64_t leapfrog(struct md_gaptree *g, size_t ns, struct want *w,
			 size_t *budget)
{
	const struct md_gap_node *nd = g->pool;
	uint64_t a = md_round_up(w->from, w->align);
	size_t j = 0, agree = 0;

	while (agree < ns) {
		uint32_t x = g->next[j];

		if (!*budget)
			return UINT64_MAX;
		--*budget;
		if (x == NONE || (x && nd[x].end <= a))
			x = g->next[j] = set_after(nd, g->sets[j], a);
		if (!x || (nd[x].off >= a && nd[x].off - a >= w->size)) {
			agree++;
		} else {
			w->from = a;
			a = set_next_free(nd, g->sets[j], w, g->align);
			agree = 1;
		}
		j = j + 1 == ns ? 0 : j + 1;
	}
	return a;
}

int md_gaptree_fit(struct md_gaptree *g, uint32_t i, uint64_t size,
		   uint64_t align, int best, size_t budget, uint64_t *out)
{
	const struct md_gap_node *nd = g->pool;
	struct want w = { 0, size, align };
	uint64_t top = 0, best_off = UINT64_MAX, best_len = UINT64_MAX;
	size_t ns = gather(g, i), j;

	if (!size) {
		*out = walk_fit(g, ns, &w, best);
		return 0;
	}
	for (j = 0; j < ns; j++)
		g->next[j] = NONE;
	if (!best) {
		*out = leapfrog(g, ns, &w, &budget);
		return *out == UINT64_MAX && !budget ? -EAGAIN : 0;
	}
	for (j = 0; j < ns; j++)
		if (nd[g->sets[j]].hi > top)
			top = nd[g->sets[j]].hi;
	/*
	 * Best fit: from one gap that fits to the next, each measured in the
	 * union (from the last range ending below it to the first one
	 * starting above it, over all sets); the first that fits exactly ends
	 * the search.
	 */
	for (;;) {
		uint64_t a = leapfrog(g, ns, &w, &budget), gs = 0, ge = UINT64_MAX;

		if (a == UINT64_MAX && !budget)
			return -EAGAIN;
		if (a >= top) {
			*out = best_off != UINT64_MAX ? best_off : a;
			return 0;
		}
		for (j = 0; j < ns; j++) {
			uint32_t x = set_after(nd, g->sets[j], a);
			uint64_t e = set_end_before(nd, g->sets[j], a);

			if (x && nd[x].off < ge)
				ge = nd[x].off;
			if (e > gs)
				gs = e;
		}
		if (ge - gs < best_len) {
			best_len = ge - gs;
			best_off = a;
			if (best_len == size) {
				*out = a;
				return 0;
			}
		}
		w.from = ge;
	}
}
