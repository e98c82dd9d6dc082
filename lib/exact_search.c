// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Exact planner: the search. A branch and bound over canonical placements
 * (lib/exact.md): the next buffer goes at c(x), the lowest offset on its
 * skyline, offsets never go down along a sequence, and a buffer is only
 * placed when no other one would fit wholly below it (gap dominance).
 * Each move is undone on backtrack: skylines, section floors and bytes
 * left, the max tree, boundary crossings and the state's hash. A group
 * that falls apart in time is searched part by part; failed states go
 * into the memo; identical buffers go in one order; a move with nothing
 * above it ends its siblings (hatless).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "exact_internal.h"

/* Room for @need elements of @elem bytes in *@a (*@cap of them now). */
static int grow_array(void **a, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 1024;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	p = realloc(*a, c * elem);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = c;
	return 0;
}

static int out_of_memory(struct exact *e)
{
	e->limit.nomem = 1;
	e->limit.stop = 1;
	return -1;
}

static uint64_t lowest_fit_fixed(const struct exact *e, uint32_t x,
				 uint64_t v)
{
	uint64_t align = e->buf[x].align, size = e->buf[x].size;
	uint32_t k, k0 = e->prob.fixed_start[x], k1 = e->prob.fixed_start[x + 1];

again:
	if (v > e->search.cap)
		return v;
	for (k = k0; k < k1; k++) {
		uint64_t start = e->prob.fixed[2 * k];
		uint64_t end = e->prob.fixed[2 * k + 1];

		if (start < v + size && v < end) {
			v = md_round_up(end, align);
			goto again;
		}
	}
	return v;
}

/* Lowest offset >= @v for buffer @x: aligned, clear of fixed buffers. */
static inline uint64_t lowest_fit(const struct exact *e, uint32_t x,
				  uint64_t v)
{
	const struct exact_buf *b = &e->buf[x];

	if (b->align > 1)
		v = md_round_up(v, b->align);
	return b->nfixed ? lowest_fit_fixed(e, x, v) : v;
}

/* ------------------------------------------------------------ memo */

static int memo_contains(const struct exact *e, uint64_t key)
{
	const uint64_t *slot = e->memo.slots + (key & e->memo.mask & ~3ULL);

	key |= 1;
	return slot[0] == key || slot[1] == key || slot[2] == key ||
	       slot[3] == key;
}

/* Into an empty way of its bucket, or over one picked by the key. */
static void memo_insert(struct exact *e, uint64_t key)
{
	uint64_t *slot = e->memo.slots + (key & e->memo.mask & ~3ULL);
	int k;

	key |= 1;
	for (k = 0; k < 4; k++) {
		if (!slot[k]) {
			slot[k] = key;
			return;
		}
	}
	slot[(key >> 60) & 3] = key;
}

/* ------------------------------------------------------------ moves */

/*
 * Put @x at offset @o. Return: 0 when a section bound fails (the move is
 * still made: undo it), 1 otherwise; *@cut is set when a boundary inside
 * x's lifetime is no longer crossed by any unplaced buffer, *@hat when an
 * unplaced buffer is alive with @x.
 */
static int place_buffer(struct exact *e, uint32_t x, uint64_t o, int *cut,
			int *hat)
{
	struct exact_search *st = &e->search;
	uint64_t size = e->buf[x].size, top = o + size, cap = st->cap;
	uint32_t lo = e->buf[x].sec_begin, hi = e->buf[x].sec_end, s, k;
	struct exact_move *mv = &st->moves[st->nmoves++];
	int ok = 1;

	mv->buf = x;
	mv->floors_at = (uint32_t)st->nsaved_floors;
	mv->skylines_at = (uint32_t)st->nsaved_skylines;
	for (s = lo; s < hi; s++) {
		st->saved_floors[st->nsaved_floors++] = st->floor[s];
		if (o + st->left[s] > cap &&
		    !(e->disabled & MD_EXACT_NO_SECTIONS))
			ok = 0;
		st->left[s] -= size;
		st->floor[s] = top;
	}
	exact_tree_add(e, 1, 0, e->bound.tree_size, lo, hi, -(int64_t)size);
	*cut = 0;
	for (s = lo; s + 1 < hi; s++)
		if (!--st->crossing[s])
			*cut = 1;
	*hat = 0;
	for (k = e->prob.nbr_start[x]; k < e->prob.nbr_start[x + 1]; k++) {
		uint32_t y = e->prob.nbrs[k];
		uint64_t sky = e->buf[y].skyline;

		if (!st->placed[y])
			*hat = 1;
		if (!st->placed[y] && sky < top) {
			st->saved_skylines[st->nsaved_skylines].buf = y;
			st->saved_skylines[st->nsaved_skylines].skyline = sky;
			st->nsaved_skylines++;
			st->hash ^= exact_buf_key(e, y, sky) ^
				    exact_buf_key(e, y, top);
			e->buf[y].skyline = top;
		}
	}
	st->placed[x] = 1;
	st->offset[x] = o;
	st->hash ^= exact_buf_key(e, x, e->buf[x].skyline);
	return ok;
}

/* Undo the last move. */
static void unplace_last(struct exact *e)
{
	struct exact_search *st = &e->search;
	struct exact_move *mv = &st->moves[--st->nmoves];
	uint32_t x = mv->buf, lo = e->buf[x].sec_begin, hi = e->buf[x].sec_end;
	uint64_t size = e->buf[x].size;
	uint32_t s;

	st->hash ^= exact_buf_key(e, x, e->buf[x].skyline);
	st->placed[x] = 0;
	while (st->nsaved_skylines > mv->skylines_at) {
		struct exact_saved_skyline *v =
			&st->saved_skylines[--st->nsaved_skylines];

		st->hash ^= exact_buf_key(e, v->buf, e->buf[v->buf].skyline) ^
			    exact_buf_key(e, v->buf, v->skyline);
		e->buf[v->buf].skyline = v->skyline;
	}
	for (s = lo; s + 1 < hi; s++)
		st->crossing[s]++;
	exact_tree_add(e, 1, 0, e->bound.tree_size, lo, hi, (int64_t)size);
	for (s = lo; s < hi; s++) {
		st->left[s] += size;
		st->floor[s] = st->saved_floors[mv->floors_at + (s - lo)];
	}
	st->nsaved_floors = mv->floors_at;
}

static void undo_moves_to(struct exact *e, size_t nmoves)
{
	while (e->search.nmoves > nmoves)
		unplace_last(e);
}

/* ------------------------------------------------------------ recursion */

static int search_group(struct exact *e, struct exact_group *g, uint64_t L,
			uint32_t last_rank);

/* Branching order: lowest offset first, then rank. */
static int cand_less(const struct exact_cand *a, const struct exact_cand *b)
{
	return a->offset < b->offset ||
	       (a->offset == b->offset && a->rank < b->rank);
}

static int cand_cmp(const void *a, const void *b)
{
	return cand_less(a, b) ? -1 : cand_less(b, a);
}

static void sort_cands(struct exact_cand *v, size_t n)
{
	size_t i, j;

	if (n > 24) {
		qsort(v, n, sizeof(*v), cand_cmp);
		return;
	}
	for (i = 1; i < n; i++) {
		struct exact_cand t = v[i];

		for (j = i; j > 0 && cand_less(&t, &v[j - 1]); j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

/* Parts in the order they are searched: smallest first, then in time. */
static int part_cmp(const void *a, const void *b)
{
	const struct exact_group *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	return x->sec_begin < y->sec_begin ? -1 :
	       x->sec_begin > y->sec_begin;
}

/*
 * The unplaced buffers unplaced[@first .. @first + @count) split at the
 * boundaries search.cuts[0 .. @ncuts) (ascending; no unplaced buffer
 * crosses them). Search each part alone, after the last move (offset @L,
 * rank @last_rank). Return: as search_group(); *@nparts is the number of
 * non-empty parts (when < 2 nothing was done and the caller searches the
 * group as a whole).
 */
static int search_parts(struct exact *e, uint32_t first, uint32_t count,
			size_t ncuts, uint64_t L, uint32_t last_rank,
			int *nparts)
{
	struct exact_search *st = &e->search;
	size_t nmoves0 = st->nmoves, nunplaced0 = st->nunplaced;
	uint32_t i, k, next, *part_of = NULL;
	struct exact_group *parts;
	int ret = 1, np = 0;

	*nparts = 0;
	parts = calloc(ncuts + 1, sizeof(*parts));
	part_of = malloc((count + 1) * sizeof(*part_of));
	if (!parts || !part_of) {
		ret = out_of_memory(e);
		goto out;
	}
	for (k = 0; k <= ncuts; k++) {
		parts[k].sec_begin = UINT32_MAX;
		parts[k].sec_end = 0;
	}
	for (i = 0; i < count; i++) {
		uint32_t x = st->unplaced[first + i], a = 0, b = (uint32_t)ncuts;
		struct exact_group *pt;

		/* parts left of x: boundaries z with z + 1 <= its start */
		while (a < b) {
			uint32_t mid = (a + b) / 2;

			if (st->cuts[mid] + 1 <= e->buf[x].sec_begin)
				a = mid + 1;
			else
				b = mid;
		}
		part_of[i] = a;
		pt = &parts[a];
		pt->count++;
		if (e->buf[x].sec_begin < pt->sec_begin)
			pt->sec_begin = e->buf[x].sec_begin;
		if (e->buf[x].sec_end > pt->sec_end)
			pt->sec_end = e->buf[x].sec_end;
	}
	for (k = 0; k <= ncuts; k++)
		np += parts[k].count > 0;
	*nparts = np;
	if (np < 2)
		goto out;
	if (grow_array((void **)&st->unplaced, &st->unplaced_cap,
		       st->nunplaced + count, sizeof(*st->unplaced))) {
		ret = out_of_memory(e);
		goto out;
	}
	/* each part's list on top of the stack of lists */
	next = (uint32_t)st->nunplaced;
	for (k = 0; k <= ncuts; k++) {
		parts[k].first = next;
		next += parts[k].count;
		parts[k].count = 0;
	}
	for (i = 0; i < count; i++) {
		struct exact_group *pt = &parts[part_of[i]];

		st->unplaced[pt->first + pt->count++] = st->unplaced[first + i];
	}
	st->nunplaced = next;
	qsort(parts, ncuts + 1, sizeof(*parts), part_cmp);
	for (k = 0; k <= ncuts && ret == 1; k++) {
		struct exact_group *pt = &parts[k];
		uint64_t h = 0;

		if (!pt->count)
			continue;
		for (i = 0; i < pt->count; i++) {
			uint32_t x = st->unplaced[pt->first + i];

			h ^= exact_buf_key(e, x, e->buf[x].skyline);
		}
		pt->outside_hash = st->hash ^ h;
		e->bound.fresh = 1;
		ret = search_group(e, pt, L, last_rank);
	}
	if (ret != 1)
		undo_moves_to(e, nmoves0);
	st->nunplaced = nunplaced0;
out:
	free(parts);
	free(part_of);
	return ret;
}

/*
 * The candidates of group @g at this node, in the candidate stack from
 * @base: each unplaced buffer with c(x) and its lowest place (c(x), or L
 * when it cannot go at c(x) now). *@min_offset is the lowest c(x),
 * *@min_lowest the lowest place, *@min_end the lowest c(x) + size(x).
 * Return: 0 when one of them cannot fit under the capacity.
 */
static int find_cands(struct exact *e, const struct exact_group *g,
		      struct exact_cand *cv, uint64_t L, uint32_t last_rank,
		      uint64_t *min_offset, uint64_t *min_lowest,
		      uint64_t *min_end)
{
	uint64_t cap = e->search.cap;
	uint32_t i;

	for (i = 0; i < g->count; i++) {
		uint32_t x = e->search.unplaced[g->first + i];
		uint64_t c = lowest_fit(e, x, e->buf[x].skyline), b = c, end;

		/*
		 * Not placeable now: below the last offset (or at it, of a
		 * lower rank). Something must first go under it, above L.
		 */
		if (c < L || (c == L && e->buf[x].rank < last_rank))
			b = L;
		if (b > cap - e->buf[x].size)
			return 0;
		if (c < *min_offset)
			*min_offset = c;
		cv[i].offset = c;
		cv[i].lowest = b;
		e->bound.lowest[x] = b;
		cv[i].buf = x;
		cv[i].pos = i;
		cv[i].rank = e->buf[x].rank;
		if (b < *min_lowest)
			*min_lowest = b;
		end = c + e->buf[x].size;
		if (end < *min_end)
			*min_end = end;
	}
	return 1;
}

/*
 * Keep the candidates that may go next, in branching order: at their
 * own c(x), after the last move in (offset, rank) order, under the
 * lowest end of all (gap dominance: @min_end), within the capacity with
 * the most bytes left of a section (@max_left), and after their twin.
 * Return: how many.
 */
static uint32_t eligible_cands(const struct exact *e, struct exact_cand *cv,
			       uint32_t n, uint64_t L, uint32_t last_rank,
			       uint64_t min_end, uint64_t max_left)
{
	const uint32_t *twin = e->prob.twin;
	uint64_t cap = e->search.cap;
	uint32_t i, ne = 0;

	if (e->disabled & MD_EXACT_NO_DOMINANCE)
		min_end = UINT64_MAX;
	for (i = 0; i < n; i++)
		if (cv[i].lowest == cv[i].offset && cv[i].offset < min_end &&
		    cv[i].offset + max_left <= cap &&
		    (twin[cv[i].buf] == EXACT_NONE ||
		     e->search.placed[twin[cv[i].buf]] ||
		     (e->disabled & MD_EXACT_NO_SYMMETRY)) &&
		    (cv[i].offset > L || cv[i].rank > last_rank))
			cv[ne++] = cv[i];
	sort_cands(cv, ne);
	return ne;
}

/* Swap the buffer at @pos of group @g's list with its last one. */
static void swap_last(struct exact *e, const struct exact_group *g,
		      uint32_t pos, uint32_t last)
{
	uint32_t *u = e->search.unplaced + g->first, t;

	t = u[pos];
	u[pos] = u[last];
	u[last] = t;
}

/*
 * Complete group @g from the current state (last offset @L, its rank
 * @last_rank). Return: 1 solved (the placements stay), 0 infeasible (state
 * restored), -1 stopped (state restored).
 */
static int search_group(struct exact *e, struct exact_group *g, uint64_t L,
			uint32_t last_rank)
{
	uint64_t min_offset = UINT64_MAX, min_lowest = UINT64_MAX;
	uint64_t min_end = UINT64_MAX, max_left, key, cap = e->search.cap;
	struct exact_search *st = &e->search;
	uint32_t n = g->count, i, ne;
	size_t base = st->ncands;
	struct exact_cand *cv;
	int ret;

	if (!n)
		return 1;
	/* big groups make slow nodes: look at the clock more often */
	if ((!(++e->limit.nodes & EXACT_CHECK_EVERY) || n > 4096) &&
	    exact_check_limits(e))
		return -1;
	if (e->limit.stop)
		return -1;
	if (e->limit.nodes >= e->limit.budget_end)
		return -1;	/* this run's budget: the caller sees no stop */
	if (base + n > EXACT_MAX_CANDS || st->depth >= st->max_depth) {
		/* a limit, like the clock: not an error */
		e->limit.stop = 1;
		e->limit.why = MD_EXACT_STOP_TOO_BIG;
		return -1;
	}
	if (grow_array((void **)&st->cands, &st->cands_cap, base + n,
		       sizeof(*st->cands)))
		return out_of_memory(e);
	cv = st->cands + base;
	if (!find_cands(e, g, cv, L, last_rank, &min_offset, &min_lowest,
			&min_end))
		return 0;
	if (e->disabled & MD_EXACT_NO_SECTIONS) {
		max_left = 0;
		e->bound.fresh = 0;
	} else {
		max_left = (uint64_t)exact_tree_max(e, 1, 0,
						    e->bound.tree_size,
						    g->sec_begin, g->sec_end);
		if (min_lowest + max_left > cap)
			return 0;
		if (e->bound.fresh) {
			e->bound.fresh = 0;
			if (!exact_bound_sections(e, g, cv, n))
				return 0;
		} else if (!exact_bound_after_move(e)) {
			return 0;
		}
	}
	key = st->hash ^ g->outside_hash ^ st->cap_key;
	if (min_offset <= L)
		key ^= md_mix64(L ^ ((uint64_t)last_rank << 40) ^
				   0x632be59bd9b4e019ULL);
	if (!(e->disabled & MD_EXACT_NO_MEMO) && memo_contains(e, key))
		return 0;
	ne = eligible_cands(e, cv, n, L, last_rank, min_end, max_left);
	for (i = 0; i < ne; i++) {
		/* the stack moves when it grows: copy, index it again */
		struct exact_cand cd = st->cands[base + i];
		uint32_t last = g->count - 1;
		int cut, ok, hat;

		st->ncands = base + ne;
		ok = place_buffer(e, cd.buf, cd.offset, &cut, &hat);
		swap_last(e, g, cd.pos, last);
		g->count--;
		ret = 0;
		if (ok) {
			int nparts = 0;

			st->depth++;
			if (cut && g->count &&
			    !(e->disabled & MD_EXACT_NO_DECOMPOSE)) {
				uint32_t s, ncuts = 0;

				for (s = e->buf[cd.buf].sec_begin;
				     s + 1 < e->buf[cd.buf].sec_end; s++)
					if (!st->crossing[s])
						st->cuts[ncuts++] = s;
				ret = search_parts(e, g->first, g->count, ncuts,
						   cd.offset, cd.rank, &nparts);
			}
			if (nparts < 2)
				ret = search_group(e, g, cd.offset, cd.rank);
			st->depth--;
		}
		if (ret == 1)
			return 1;
		g->count++;
		swap_last(e, g, cd.pos, last);
		unplace_last(e);
		if (ret < 0) {
			st->ncands = base;
			return ret;
		}
		/*
		 * Hatless: nothing unplaced overlaps cd.buf, so the rest did
		 * not depend on it. Every later sibling goes above it (or
		 * level, ranked after it), and cd.buf, whose skyline nothing
		 * can raise now, could never be placed after one: they all
		 * fail too.
		 */
		if (!hat && !(e->disabled & MD_EXACT_NO_HATLESS))
			break;
	}
	st->ncands = base;
	if (!(e->disabled & MD_EXACT_NO_MEMO))
		memo_insert(e, key);
	return 0;
}

/*
 * exact_run() - one search for a placement within @cap, in the ranking in
 * buf[].rank, until limit.budget_end. Return: 1 found (search.offset), 0
 * proven infeasible, -1 stopped (a limit, cancel, out of memory, or the
 * budget: limit.stop says which).
 */
int exact_run(struct exact *e, uint64_t cap)
{
	struct exact_search *st = &e->search;
	size_t n = e->prob.nbufs, i;
	struct exact_group g;
	uint32_t s, ncuts = 0;
	int nparts = 0, ret;

	exact_reset(e, cap);
	if (!n)
		return 1;
	if (grow_array((void **)&st->unplaced, &st->unplaced_cap, n,
		       sizeof(*st->unplaced))) {
		e->limit.nomem = 1;
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (e->buf[i].size > cap)
			return 0;
		st->unplaced[i] = (uint32_t)i;
	}
	st->nunplaced = n;
	g.first = 0;
	g.count = (uint32_t)n;
	g.sec_begin = 0;
	g.sec_end = (uint32_t)e->prob.nsecs;
	g.outside_hash = 0;
	for (s = 0; s + 1 < e->prob.nsecs; s++)
		if (!st->crossing[s])
			st->cuts[ncuts++] = s;
	ret = 0;
	if (ncuts && !(e->disabled & MD_EXACT_NO_DECOMPOSE))
		ret = search_parts(e, 0, g.count, ncuts, 0, 0, &nparts);
	if (nparts < 2) {
		e->bound.fresh = 1;
		ret = search_group(e, &g, 0, 0);
	}
	return ret;
}
