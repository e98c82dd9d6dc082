// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Exact offset planning: md_exact_solve() and the other entry points,
 * exact and minimize mode, the restart portfolio, the search thread, the
 * time and node limits.
 *
 * The search is a branch and bound over canonical placements: the buffers
 * go in non-decreasing offset order, each at the lowest offset where it
 * fits on the skyline of those placed before. lib/exact.md describes it,
 * its prunings and their switches; lib/exact_internal.h its state, and
 * where each piece lives:
 *
 *   exact_setup.c   the problem as the search sees it
 *   exact_bounds.c  lower bounds and the pruning bounds of a node
 *   exact_search.c  the recursion, its moves, dominance and the memo
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metadef/exact.h>

#include "internal.h"
#include "plan_internal.h"
#include "exact_internal.h"

/* ------------------------------------------------------------ limits */

double exact_elapsed(const struct exact *e)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - e->limit.start.tv_sec) +
	       (double)(t.tv_nsec - e->limit.start.tv_nsec) * 1e-9;
}

static void report(struct exact *e, double now)
{
	struct exact_limits *lim = &e->limit;
	struct md_exact_progress pr;
	double dt = now - lim->last_report;

	pr.best_peak = lim->best_peak;
	pr.lower_bound = lim->proven_lb;
	pr.capacity = e->search.cap;
	pr.nodes = lim->nodes;
	pr.nodes_per_sec = dt > 0 ?
			   (double)(lim->nodes - lim->report_nodes) / dt : 0;
	pr.seconds = now;
	lim->last_report = now;
	lim->report_nodes = lim->nodes;
	lim->progress(&pr, lim->progress_arg);
}

/* Time limit, cancel flag and progress. Return: 1 when the search stops. */
int exact_check_limits(struct exact *e)
{
	struct exact_limits *lim = &e->limit;
	double now;

	if (lim->cancel && *lim->cancel && !lim->stop) {
		lim->stop = 1;
		lim->why = MD_EXACT_STOP_CANCEL;
	}
	if (lim->max_nodes && lim->nodes >= lim->max_nodes && !lim->stop) {
		lim->stop = 1;
		lim->why = MD_EXACT_STOP_NODES;
	}
	if (lim->stop)
		return 1;
	if (lim->deadline <= 0 && !lim->progress)
		return 0;
	now = exact_elapsed(e);
	if (lim->deadline > 0 && now >= lim->deadline) {
		lim->stop = 1;
		lim->why = MD_EXACT_STOP_TIME;
		return 1;
	}
	if (lim->progress && now - lim->last_report >= 0.25)
		report(e, now);
	return 0;
}

/* ------------------------------------------------------------ search */

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
		key ^= exact_mix64(L ^ ((uint64_t)last_rank << 40) ^
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

/* ------------------------------------------------------------ portfolio */

/*
 * Search for a placement within @cap: each ranking in turn with a node
 * budget that doubles every round (failed states stay in the memo, so a
 * restart skips what was refuted before). When @lb < @cap, every run is
 * paired with one at capacity @lb: a tighter capacity prunes much harder,
 * and a plan within @lb is a plan within @cap (dropped once @lb is
 * refuted). With @max_nodes (0: none) it gives up after about that many
 * nodes. Return: 1 found (search.offset), 0 proven infeasible, -1 stopped
 * (limit, cancel or out of memory), -2 @max_nodes spent.
 */
static int try_capacity(struct exact *e, uint64_t cap, uint64_t lb,
			uint64_t max_nodes)
{
	uint64_t budget = 4 * (uint64_t)e->prob.nbufs + 64;
	uint64_t end = e->limit.nodes + max_nodes;
	size_t n = e->prob.nbufs, nrankings = e->prob.nrankings, k, i;
	int ret, try_lb = lb < cap && !(e->disabled & MD_EXACT_NO_LB_PAIR);

	if (e->disabled & MD_EXACT_NO_RESTARTS) {
		nrankings = 1;
		budget = max_nodes ? max_nodes : UINT64_MAX / 4;
	}
	for (;;) {
		for (k = 0; k < nrankings; k++) {
			int pass;

			e->search.ranking = k;
			for (i = 0; i < n; i++)
				e->buf[i].rank = e->prob.rankings[k * n + i];
			/* pass 0 at the lower bound, pass 1 at cap */
			for (pass = !try_lb; pass < 2; pass++) {
				e->limit.budget_end = e->limit.nodes + budget;
				if (e->limit.budget_end < e->limit.nodes)
					e->limit.budget_end = UINT64_MAX;
				ret = exact_run(e, pass ? cap : lb);
				if (e->limit.nomem || e->limit.stop)
					return -1;
				if (ret == 1)
					return 1;
				if (!ret && pass)
					return 0;
				if (!ret)
					try_lb = 0;
				if (max_nodes && e->limit.nodes >= end)
					return -2;
			}
		}
		budget *= 2;
	}
}

/* ------------------------------------------------------------ API */

static int check_problem(const struct md_problem *p)
{
	size_t i;

	if (!p || (p->n && !p->bufs) || p->n >= UINT32_MAX / 4)
		return -EINVAL;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];

		if (b->upper <= b->lower || !b->align)
			return -EINVAL;
		if ((b->flags & MD_BUF_FIXED) &&
		    (b->offset % b->align || b->offset + b->size < b->offset))
			return -EINVAL;
	}
	return 0;
}

/* The search's offsets in problem order (fixed ones kept, empty ones 0). */
static void export_offsets(const struct exact *e, const struct md_problem *p,
			   uint64_t *out)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		out[i] = (p->bufs[i].flags & MD_BUF_FIXED) ? p->bufs[i].offset
							   : 0;
	for (i = 0; i < e->prob.nbufs; i++)
		out[e->prob.orig[i]] = e->search.offset[i];
}

MD_API const char *md_exact_status_name(int status)
{
	switch (status) {
	case MD_EXACT_FEASIBLE:
		return "feasible";
	case MD_EXACT_INFEASIBLE:
		return "infeasible";
	case MD_EXACT_OPTIMAL:
		return "optimal";
	case MD_EXACT_LIMIT:
		return "limit";
	}
	return "?";
}

MD_API const char *md_exact_stop_name(int stopped)
{
	switch (stopped) {
	case MD_EXACT_STOP_NONE:
		return "none";
	case MD_EXACT_STOP_TIME:
		return "time limit";
	case MD_EXACT_STOP_CANCEL:
		return "cancelled";
	case MD_EXACT_STOP_NODES:
		return "node limit";
	case MD_EXACT_STOP_TOO_BIG:
		return "too big";
	}
	return "?";
}

static const char *const prune_names[] = {
	"sections", "stacking", "dominance", "decompose", "memo",
	"symmetry", "hatless", "lb-pair", "restarts",
};

MD_API const char *md_exact_prune_name(unsigned int bit)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(prune_names); i++)
		if (bit == 1u << i)
			return prune_names[i];
	return NULL;
}

MD_API int md_exact_prune_parse(const char *list, unsigned int *bits)
{
	const char *p = list;
	unsigned int out = 0, i;

	if (!list || !bits)
		return -EINVAL;
	if (!strcmp(list, "all")) {
		*bits = MD_EXACT_PRUNE_ALL;
		return 0;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		int found = 0;

		for (i = 0; i < ARRAY_SIZE(prune_names); i++)
			if (len == strlen(prune_names[i]) &&
			    !strncmp(p, prune_names[i], len)) {
				out |= 1u << i;
				found = 1;
			}
		if (!found)
			return -EINVAL;
		p += len;
		if (*p == ',' && *++p == '\0')
			return -EINVAL;
	}
	*bits = out;
	return 0;
}

MD_API void md_exact_result_free(struct md_exact_result *res)
{
	free(res->offsets);
	memset(res, 0, sizeof(*res));
}

static int exact_solve(const struct md_problem *p,
		       const struct md_exact_opts *opts,
		       struct md_exact_result *res, size_t stack)
{
	struct md_exact_opts def = { 0 };
	struct md_plan heur;
	struct timespec t0;
	struct exact e;
	uint64_t *best = NULL, lb, ub;
	int ret, r, have_search = 0;
	uint64_t budget;

	memset(res, 0, sizeof(*res));
	if (!opts) {
		def.minimize = 1;
		def.time_limit = 10;
		opts = &def;
	}
	ret = check_problem(p);
	if (ret)
		return ret;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = md_plan_solve(p, NULL, &heur);
	if (ret)
		return ret;
	best = heur.offsets;
	heur.offsets = NULL;
	ub = heur.peak;
	lb = exact_lower_bound(p);
	res->n = p->n;
	res->capacity = opts->capacity;
	res->heuristic = 1;

	memset(&e, 0, sizeof(e));
	e.limit.start = t0;

	if (!opts->minimize && ub <= opts->capacity) {
		res->status = MD_EXACT_FEASIBLE;
		res->proven = 1;
		goto done;
	}
	if (!opts->minimize && opts->capacity < lb) {
		res->status = MD_EXACT_INFEASIBLE;
		res->proven = 1;
		goto done;
	}
	if (opts->minimize && ub <= lb) {
		res->status = MD_EXACT_OPTIMAL;
		res->proven = 1;
		lb = ub;
		goto done;
	}

	ret = exact_setup(&e, p, opts->memo_mib);
	/* the clock runs from the call, heuristics included */
	e.limit.start = t0;
	if (ret == -E2BIG) {
		/* too big to search: the heuristic is the answer */
		res->status = MD_EXACT_LIMIT;
		res->stopped = MD_EXACT_STOP_TOO_BIG;
		ret = 0;
		goto done;
	}
	if (ret)
		goto out;
	have_search = 1;
	e.disabled = opts->disable;
	e.limit.max_nodes = opts->max_nodes;
	e.search.max_depth = stack > EXACT_STACK_SPARE ?
		(uint32_t)((stack - EXACT_STACK_SPARE) / EXACT_FRAME_BYTES) : 0;
	e.limit.deadline = opts->time_limit;
	e.limit.cancel = opts->cancel;
	e.limit.progress = opts->progress;
	e.limit.progress_arg = opts->progress_arg;
	e.limit.best_peak = ub;
	e.limit.proven_lb = lb;

	if (!opts->minimize) {
		r = try_capacity(&e, opts->capacity, lb, 0);
		if (e.limit.nomem) {
			ret = -ENOMEM;
			goto out;
		}
		if (r == 1) {
			export_offsets(&e, p, best);
			res->heuristic = 0;
			res->status = MD_EXACT_FEASIBLE;
			res->proven = 1;
		} else if (r == 0) {
			res->status = MD_EXACT_INFEASIBLE;
			res->proven = 1;
			lb = opts->capacity + 1;
		} else {
			res->status = MD_EXACT_LIMIT;
		}
		goto done;
	}

	/*
	 * Minimize: rounds with a node budget that doubles when a round
	 * settles nothing. Each round first runs exact mode just below the
	 * best peak (paired with a run at the proven bound, as exact mode
	 * does), so minimize gets at least as far as exact mode would at
	 * that capacity; then the middle between bound and best peak. A
	 * plan found lowers the best peak, a proof raises the bound.
	 */
	budget = 8 * (uint64_t)e.prob.nbufs + 4096;
	while (lb < ub) {
		uint64_t caps[2] = { ub - 1, lb + (ub - lb) / 2 };
		int k, settled = 0;

		for (k = 0; k < 2 && !settled; k++) {
			if (k && caps[1] >= caps[0])
				break;
			e.limit.best_peak = ub;
			e.limit.proven_lb = lb;
			r = try_capacity(&e, caps[k], lb, budget);
			if (e.limit.nomem) {
				ret = -ENOMEM;
				goto out;
			}
			if (r == -1)
				goto limit;
			if (r == 1) {
				export_offsets(&e, p, best);
				res->heuristic = 0;
				ub = md_plan_peak(p, best);
				settled = 1;
			} else if (!r) {
				lb = caps[k] + 1;
				settled = 1;
			}
		}
		if (!settled)
			budget *= 2;
	}
limit:
	if (lb >= ub) {
		lb = ub;
		res->status = MD_EXACT_OPTIMAL;
		res->proven = 1;
	} else {
		res->status = MD_EXACT_LIMIT;
	}
done:
	ret = md_plan_validate(p, best, NULL);
	if (ret) {
		ret = ret == -ENOMEM ? ret : -EFAULT;
		goto out;
	}
	res->offsets = best;
	best = NULL;
	res->peak = md_plan_peak(p, res->offsets);
	res->lower_bound = lb;
	res->nodes = e.limit.nodes;
	res->seconds = exact_elapsed(&e);
	if (!res->proven && !res->stopped)
		res->stopped = e.limit.why ? e.limit.why
					   : MD_EXACT_STOP_TIME;
	if (e.limit.progress) {
		e.limit.best_peak = res->peak;
		e.limit.proven_lb = lb;
		report(&e, res->seconds);
	}
	ret = 0;
out:
	if (have_search)
		exact_free(&e);
	free(best);
	if (ret)
		memset(res, 0, sizeof(*res));
	return ret;
}

struct solve_call {
	const struct md_problem *p;
	const struct md_exact_opts *opts;
	struct md_exact_result *res;
	size_t stack;
	int ret;
};

static void *solve_thread(void *arg)
{
	struct solve_call *c = arg;

	c->ret = exact_solve(c->p, c->opts, c->res, c->stack);
	return NULL;
}

/*
 * The search recurses once per buffer placed, so it runs on a thread of
 * its own whose stack has room for every buffer of the problem: a problem
 * that does not split into parts never meets a depth limit.
 */
MD_API int md_exact_solve(const struct md_problem *p,
			  const struct md_exact_opts *opts,
			  struct md_exact_result *res)
{
	struct solve_call c = { p, opts, res, 0, 0 };
	pthread_attr_t attr;
	pthread_t t;
	size_t n = p ? p->n : 0;

	c.stack = EXACT_STACK_SPARE + (n + 16) * (size_t)EXACT_FRAME_BYTES;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	if (pthread_attr_setstacksize(&attr, c.stack) ||
	    pthread_create(&t, &attr, solve_thread, &c)) {
		pthread_attr_destroy(&attr);
		/* no thread: search on this stack, within 8 MiB */
		return exact_solve(p, opts, res, 8u << 20);
	}
	pthread_attr_destroy(&attr);
	pthread_join(t, NULL);
	return c.ret;
}
