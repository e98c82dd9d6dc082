// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Heuristic offset planning.
 *
 * Every strategy is an order in which buffers are placed plus a fit rule.
 * Placing one buffer looks at the memory ranges of the placed buffers alive
 * at the same time and at the gaps between them: first fit takes the
 * lowest gap, best fit the tightest one (or the top when no gap fits).
 * Those ranges come from neighbour lists when the problem has few enough
 * time-overlapping pairs, else from the gap tree (gaptree.c: merged ranges
 * over the cliques of the interval graph, O(log) sets per fit), with the
 * placed neighbours one by one (struct stab) as the fallback where memory
 * is too fragmented for it.
 * Both paths give the same plan. The start order needs neither: one sweep
 * over time keeps the free gaps at each instant (place_sweep(), the same
 * plan again). All strategies run,
 * the smallest peak wins, and a deterministic local search (move a buffer
 * that touches the peak earlier in the order, re-place, keep if not worse)
 * polishes the winner. Every plan is validated before it is returned.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metadef/plan.h>

#include "gaptree.h"
#include "internal.h"
#include "itree.h"
#include "plan_internal.h"
#include "heap.h"
#include "random.h"
#include "rbtree.h"

enum fit { FIT_FIRST, FIT_BEST };

struct range {
	uint64_t off, end;
};

/*
 * The solver works on a copy of the problem sorted by lower end, so that
 * buffers close in time are close in memory. Then the buffers alive with
 * buffer i are those before it still alive at its start (a "backward"
 * list, built by one sweep) and those after it that start before it ends
 * (a contiguous range of indices, no list needed). The lists cost one
 * entry per pair of buffers alive together: more than BWD_MAX_ENTRIES
 * pairs (many buffers alive at once) and the gap tree is used instead.
 */
#define BWD_MAX_ENTRIES (1u << 25)
/*
 * Up to this many neighbour entries in all, each pending buffer also keeps
 * the memory ranges of its placed neighbours sorted by offset (insertion
 * on every placement, mostly at the end): finding a gap is then one scan,
 * no gathering, no sort.
 */
#define NB_MAX_ENTRIES (1u << 21)

int md_plan_test_no_lists;
int md_plan_test_no_gaptree;
int md_plan_test_no_sweep;

/* md_plan_set_progress(), per thread. */
static __thread md_plan_progress_fn progress_fn;
static __thread void *progress_arg;
static __thread struct md_plan_progress progress;

#define PROGRESS_EVERY 4096

/*
 * md_plan_opts.time_limit, per thread: the clock is read every
 * DEADLINE_EVERY placements; past the deadline, place() fails with -ETIME.
 */
static __thread double plan_deadline;	/* CLOCK_MONOTONIC seconds, 0: none */
static __thread unsigned int plan_tick;
static __thread int plan_late;

#define DEADLINE_EVERY 1024

static double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

MD_API void md_plan_set_progress(md_plan_progress_fn fn, void *arg)
{
	progress_fn = fn;
	progress_arg = arg;
}

/* A new pass of @strategy begins. */
static void progress_pass(int strategy)
{
	if (!progress_fn)
		return;
	progress.strategy = strategy;
	progress.pass++;
	progress.placed = 0;
	progress_fn(progress_arg, &progress);
}

struct pstate {
	uint64_t off, end;
	uint32_t epoch;		/* == placer epoch: placed in this pass */
};

/*
 * The placed buffers alive with a buffer, without lists (where the gap
 * tree gives up). Sorted by lower end, the buffers that start after b
 * starts and before it ends are a range of indices; those that start no
 * later than b and are alive at its start stab that instant. A segment
 * tree over the distinct lower ends keeps each placed buffer's memory
 * range in the O(log) nodes covering the instants it is alive at: the
 * nodes on one leaf's path to the root hold each buffer alive there
 * exactly once. Both parts together visit only the neighbours themselves
 * (an interval tree walks past many more nodes to reach them), and read
 * their ranges in sequence. Built the first time the gap tree gives up.
 *
 * The library has four segment trees, not one: this one is static
 * (every node's slots counted up front, a flat array per node, filled
 * once per pass, queried leaf to root for a stabbed instant); the gap
 * tree (gaptree.c) is dynamic, keeps per node the union of its ranges as
 * a treap of merged ranges with the largest gap, and answers a window;
 * the exact solver's (exact_bounds.c) holds one number per section with
 * range add and range max; the improvement phase's (improve.c, struct
 * loadmax) is a static range max over the bytes alive at each moment,
 * built once per call. They share the idea of covering an interval with
 * O(log n) nodes, not what a node holds nor the query; the last two both
 * hold a maximum and could become one.
 */
struct stab {
	uint32_t nv;		/* distinct lower ends (leaves) */
	uint32_t *vstart;	/* [nv + 1]: first index of each lower end */
	uint32_t *lpos, *rpos;	/* per buffer: leaves [lpos, rpos) */
	size_t *start;		/* [2 nv + 1]: each node's slots */
	uint32_t *fill;		/* [2 nv]: ranges in each node */
	struct range *r;
};

struct placer {
	const struct md_problem *p;	/* sorted by lower */
	struct md_gaptree gt;	/* memory in use over time (no lists) */
	struct stab sb;		/* and the placed buffers over time */
	uint64_t *uppers;	/* sorted, for the number of neighbours */
	uint32_t *ids;
	int gap_off;		/* the gap tree lost: stab tree only */
	uint32_t gap_tries, gap_lost;	/* in the current window */
	uint32_t *bwd_start;	/* backward lists (CSR), or NULL */
	uint32_t *bwd;
	uint32_t *fwd_end;	/* forward neighbours: (i, fwd_end[i]) */
	size_t *nb_start;	/* sorted placed neighbours, or NULL */
	struct range *nb;
	uint32_t *nb_len;
	struct pstate *st;
	uint32_t epoch;
	uint64_t pairs;		/* of buffers alive at the same time */
	struct range *rng;
	struct range *tmp;	/* radix sort scratch, as big as rng */
	struct range *cur;	/* overlapping(): rng or a part of nb */
	size_t cap;		/* entries of ids, rng and tmp */
	uint64_t peak;
};

/* One sweep in order of lower ends. Gives up (-E2BIG) when too dense. */
static int build_lists(struct placer *pl)
{
	const struct md_problem *p = pl->p;
	size_t n = p->n, i, j, na = 0, len = 0, cap = 1024;
	struct range *act;	/* (upper, index) of the buffers alive */
	int ret = -ENOMEM;

	act = malloc((n + 1) * sizeof(*act));
	pl->bwd_start = malloc((n + 1) * sizeof(*pl->bwd_start));
	pl->fwd_end = malloc((n + 1) * sizeof(*pl->fwd_end));
	pl->bwd = malloc(cap * sizeof(*pl->bwd));
	if (!act || !pl->bwd_start || !pl->fwd_end || !pl->bwd)
		goto out;
	/*
	 * fwd_end[i]: first j with lower_j >= upper_i (two pointers would
	 * need sorted uppers; a binary search is as simple). The forward
	 * neighbours of all buffers are the backward entries of all: count
	 * them before the sweep, whose cost is their number.
	 */
	for (i = 0; i < n; i++) {
		size_t lo = i + 1, hi = n;

		while (lo < hi) {
			size_t m = lo + (hi - lo) / 2;

			if (p->bufs[m].lower < p->bufs[i].upper)
				lo = m + 1;
			else
				hi = m;
		}
		pl->fwd_end[i] = (uint32_t)lo;
		len += lo - i - 1;
	}
	pl->pairs = len;
	if (len > BWD_MAX_ENTRIES || md_plan_test_no_lists) {
		ret = -E2BIG;
		goto out;
	}
	len = 0;
	for (i = 0; i < n; i++) {
		uint64_t lo = p->bufs[i].lower;
		size_t k = 0;

		for (j = 0; j < na; j++)
			if (act[j].off > lo)
				act[k++] = act[j];
		na = k;
		if (len + na > cap) {
			uint32_t *nb;

			while (len + na > cap)
				cap *= 2;
			nb = realloc(pl->bwd, cap * sizeof(*nb));
			if (!nb)
				goto out;
			pl->bwd = nb;
		}
		pl->bwd_start[i] = (uint32_t)len;
		for (j = 0; j < na; j++)
			pl->bwd[len++] = (uint32_t)act[j].end;
		act[na].off = p->bufs[i].upper;
		act[na].end = i;
		na++;
	}
	pl->bwd_start[n] = (uint32_t)len;
	ret = 0;
out:
	if (ret) {
		free(pl->bwd_start);
		free(pl->bwd);
		free(pl->fwd_end);
		pl->bwd_start = NULL;
		pl->bwd = NULL;
		pl->fwd_end = NULL;
	}
	free(act);
	return ret;
}

static size_t degree(const struct placer *pl, uint32_t i)
{
	return pl->bwd_start[i + 1] - pl->bwd_start[i] +
	       (pl->fwd_end[i] - i - 1);
}

static void stab_free(struct stab *sb)
{
	free(sb->vstart);
	free(sb->lpos);
	free(sb->rpos);
	free(sb->start);
	free(sb->fill);
	free(sb->r);
	memset(sb, 0, sizeof(*sb));
}

/* The nodes covering leaves [@l, @r) into @x (at most 2 per level). */
static int stab_nodes(const struct stab *sb, size_t l, size_t r, size_t *x)
{
	int k = 0;

	for (l += sb->nv, r += sb->nv; l < r; l >>= 1, r >>= 1) {
		if (l & 1)
			x[k++] = l++;
		if (r & 1)
			x[k++] = --r;
	}
	return k;
}

static int stab_init(struct stab *sb, const struct md_problem *p)
{
	size_t n = p->n, i, x, nv = 0, node[128];
	int k;

	memset(sb, 0, sizeof(*sb));
	sb->vstart = malloc((n + 1) * sizeof(*sb->vstart));
	sb->lpos = malloc((n + 1) * sizeof(*sb->lpos));
	sb->rpos = malloc((n + 1) * sizeof(*sb->rpos));
	if (!sb->vstart || !sb->lpos || !sb->rpos)
		goto nomem;
	for (i = 0; i < n; i++) {
		if (!i || p->bufs[i].lower != p->bufs[i - 1].lower)
			sb->vstart[nv++] = (uint32_t)i;
		sb->lpos[i] = (uint32_t)(nv - 1);
	}
	sb->vstart[nv] = (uint32_t)n;
	sb->nv = (uint32_t)nv;
	for (i = 0; i < n; i++) {	/* first leaf at or after upper */
		size_t lo = sb->lpos[i] + 1, hi = nv;

		while (lo < hi) {
			size_t m = lo + (hi - lo) / 2;

			if (p->bufs[sb->vstart[m]].lower < p->bufs[i].upper)
				lo = m + 1;
			else
				hi = m;
		}
		sb->rpos[i] = (uint32_t)lo;
	}
	sb->start = calloc(2 * nv + 1, sizeof(*sb->start));
	sb->fill = calloc(2 * nv + 1, sizeof(*sb->fill));
	if (!sb->start || !sb->fill)
		goto nomem;
	for (i = 0; i < n; i++)
		for (k = stab_nodes(sb, sb->lpos[i], sb->rpos[i], node); k--;)
			sb->start[node[k] + 1]++;
	for (x = 0; x < 2 * nv; x++)
		sb->start[x + 1] += sb->start[x];
	sb->r = malloc((sb->start[2 * nv] + 1) * sizeof(*sb->r));
	if (!sb->r)
		goto nomem;
	return 0;
nomem:
	stab_free(sb);
	return -ENOMEM;
}

static void stab_reset(struct stab *sb)
{
	if (sb->fill)
		memset(sb->fill, 0, 2 * sb->nv * sizeof(*sb->fill));
}

static void stab_insert(struct stab *sb, uint32_t i, uint64_t off,
			uint64_t end)
{
	size_t node[128], x;
	int k;

	for (k = stab_nodes(sb, sb->lpos[i], sb->rpos[i], node); k--;) {
		x = node[k];
		sb->r[sb->start[x] + sb->fill[x]++] = (struct range){ off, end };
	}
}

/* Without lists: the gap tree, and the placed neighbours to fall back on. */
static int gap_init(struct placer *pl)
{
	const struct md_problem *p = pl->p;
	struct md_kv *kv = malloc((p->n + 1) * sizeof(*kv));
	size_t i;

	pl->uppers = malloc((p->n + 1) * sizeof(*pl->uppers));
	if (!kv || !pl->uppers)
		goto nomem;
	for (i = 0; i < p->n; i++)
		kv[i] = (struct md_kv){ p->bufs[i].upper, (uint32_t)i };
	if (md_sort_kv(kv, p->n))
		goto nomem;
	for (i = 0; i < p->n; i++)
		pl->uppers[i] = kv[i].key;
	free(kv);
	kv = NULL;
	if (md_gaptree_init(&pl->gt, p))
		goto nomem;
	return 0;
nomem:
	free(kv);
	free(pl->uppers);
	pl->uppers = NULL;
	free(pl->st);
	free(pl->ids);
	free(pl->rng);
	free(pl->tmp);
	return -ENOMEM;
}

static int placer_init(struct placer *pl, const struct md_problem *p)
{
	size_t i, total = 0;
	int ret;

	memset(pl, 0, sizeof(*pl));
	pl->p = p;
	pl->cap = 64;
	pl->st = calloc(p->n + 1, sizeof(*pl->st));
	pl->ids = malloc(pl->cap * sizeof(*pl->ids));
	pl->rng = malloc(pl->cap * sizeof(*pl->rng));
	pl->tmp = malloc(pl->cap * sizeof(*pl->tmp));
	if (!pl->st || !pl->ids || !pl->rng || !pl->tmp)
		goto nomem;
	ret = build_lists(pl);
	if (ret == -ENOMEM)
		goto nomem;
	if (ret)
		return gap_init(pl);
	for (i = 0; i < p->n; i++)
		total += degree(pl, (uint32_t)i);
	if (total <= NB_MAX_ENTRIES) {
		pl->nb_start = malloc((p->n + 1) * sizeof(*pl->nb_start));
		pl->nb = malloc((total + 1) * sizeof(*pl->nb));
		pl->nb_len = calloc(p->n + 1, sizeof(*pl->nb_len));
		if (!pl->nb_start || !pl->nb || !pl->nb_len) {
			free(pl->nb_start);
			free(pl->nb);
			free(pl->nb_len);
			pl->nb_start = NULL;
			pl->nb = NULL;
			pl->nb_len = NULL;
		} else {
			pl->nb_start[0] = 0;
			for (i = 0; i < p->n; i++)
				pl->nb_start[i + 1] = pl->nb_start[i] +
						      degree(pl, (uint32_t)i);
		}
	}
	return 0;
nomem:
	free(pl->st);
	free(pl->rng);
	free(pl->tmp);
	return -ENOMEM;
}

static void placer_free(struct placer *pl)
{
	if (!pl->bwd_start) {
		md_gaptree_free(&pl->gt);
		stab_free(&pl->sb);
	}
	free(pl->uppers);
	free(pl->ids);
	free(pl->bwd_start);
	free(pl->bwd);
	free(pl->fwd_end);
	free(pl->nb_start);
	free(pl->nb);
	free(pl->nb_len);
	free(pl->st);
	free(pl->rng);
	free(pl->tmp);
}

static void placer_reset(struct placer *pl)
{
	if (!pl->bwd_start) {
		md_gaptree_reset(&pl->gt);
		stab_reset(&pl->sb);
	}
	if (pl->nb_len)
		memset(pl->nb_len, 0, pl->p->n * sizeof(*pl->nb_len));
	if (++pl->epoch == 0) {
		size_t i;

		for (i = 0; i < pl->p->n; i++)
			pl->st[i].epoch = 0;
		pl->epoch = 1;
	}
	pl->peak = 0;
}

static inline int is_placed(const struct placer *pl, uint32_t x)
{
	return pl->st[x].epoch == pl->epoch;
}

static int grow(struct placer *pl, size_t k)
{
	size_t cap = 2 * k;
	uint32_t *ni = realloc(pl->ids, cap * sizeof(*ni));
	struct range *nr;

	if (!ni)
		return -ENOMEM;
	pl->ids = ni;
	nr = realloc(pl->rng, cap * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	pl->rng = nr;
	nr = realloc(pl->tmp, cap * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	pl->tmp = nr;
	pl->cap = cap;
	return 0;
}

static void swap_range(struct range *a, struct range *b)
{
	struct range t = *a;

	*a = *b;
	*b = t;
}

/* Sort by offset: quicksort (median of three) down to insertion sort. */
static void sort_ranges(struct range *r, size_t k)
{
	size_t i, j;

	while (k > 16) {
		uint64_t pivot;
		size_t m = k / 2;

		if (r[m].off < r[0].off)
			swap_range(&r[m], &r[0]);
		if (r[k - 1].off < r[0].off)
			swap_range(&r[k - 1], &r[0]);
		if (r[k - 1].off < r[m].off)
			swap_range(&r[k - 1], &r[m]);
		pivot = r[m].off;
		i = 0;
		j = k - 1;
		for (;;) {
			while (r[i].off < pivot)
				i++;
			while (r[j].off > pivot)
				j--;
			if (i >= j)
				break;
			swap_range(&r[i], &r[j]);
			i++;
			j--;
		}
		/* Recurse into the smaller part, loop on the larger. */
		if (j + 1 < k - j - 1) {
			sort_ranges(r, j + 1);
			r += j + 1;
			k -= j + 1;
		} else {
			sort_ranges(r + j + 1, k - j - 1);
			k = j + 1;
		}
	}
	for (i = 1; i < k; i++) {
		struct range x = r[i];

		for (j = i; j > 0 && r[j - 1].off > x.off; j--)
			r[j] = r[j - 1];
		r[j] = x;
	}
}

/*
 * Many ranges (a long-lived buffer among thousands of short ones): the
 * library's radix sort (sort.c) on the offset.
 */
static void sort_ranges_big(struct placer *pl, size_t k)
{
	if (k <= 96)
		sort_ranges(pl->rng, k);
	else
		md_radix_sort16(pl->rng, pl->tmp, k);
}

_Static_assert(sizeof(struct range) == 16 && offsetof(struct range, off) == 0,
	       "struct range is a 16-byte record keyed by its offset");

/* Memory ranges of the placed buffers alive with @b, sorted by offset. */
static inline void add_range(struct placer *pl, uint32_t x, size_t *m)
{
	const struct pstate *st = &pl->st[x];

	if (st->epoch == pl->epoch && st->end > st->off) {
		pl->rng[*m].off = st->off;
		pl->rng[*m].end = st->end;
		(*m)++;
	}
}

/*
 * Without lists: the placed neighbours from the stab tree (struct stab),
 * those that start later from their indices.
 */
static int collect(struct placer *pl, uint32_t bx, size_t *nk)
{
	struct stab *sb = &pl->sb;
	size_t k, m = 0, x, j;
	uint32_t a, e;

	/* Built when first needed, with the buffers placed so far. */
	if (!sb->r) {
		if (stab_init(&pl->sb, pl->p))
			return -ENOMEM;
		for (x = 0; x < pl->p->n; x++)
			if (is_placed(pl, (uint32_t)x) &&
			    pl->st[x].end > pl->st[x].off)
				stab_insert(&pl->sb, (uint32_t)x,
					    pl->st[x].off, pl->st[x].end);
	}
	a = sb->vstart[sb->lpos[bx] + 1];
	e = sb->vstart[sb->rpos[bx]];
	k = e - a;
	for (x = sb->lpos[bx] + sb->nv; x; x >>= 1)
		k += sb->fill[x];
	if (k > pl->cap && grow(pl, k))
		return -ENOMEM;
	for (x = sb->lpos[bx] + sb->nv; x; x >>= 1) {
		const struct range *r = &sb->r[sb->start[x]];

		for (j = 0; j < sb->fill[x]; j++)
			pl->rng[m++] = r[j];
	}
	for (; a < e; a++)
		add_range(pl, a, &m);
	sort_ranges_big(pl, m);
	pl->cur = pl->rng;
	*nk = m;
	return 0;
}

/* Index of the first of the @n sorted @v that is > @x. */
static size_t count_le(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (v[m] <= x)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/*
 * Without lists, the gap tree answers in a few steps per set unless the
 * memory of the buffers alive with @bx is cut into many pieces; then the
 * neighbours one by one are cheaper. The gap tree may take as many steps
 * as @bx has neighbours (placed or not: the lowers are sorted, so are
 * the uppers), and -EAGAIN says it would need more. When it loses more
 * often than not over a window of placements, it is given up for the rest
 * of the solve (the same input always takes the same path).
 */
#define GAP_WINDOW 256

static int gap_fit(struct placer *pl, uint32_t bx, enum fit fit,
		   uint64_t *out)
{
	const struct md_buffer *b = &pl->p->bufs[bx];
	size_t n = pl->p->n, lo = 0, hi = n, nb;
	int ret;

	if (pl->gap_off || md_plan_test_no_gaptree)
		return -EAGAIN;
	while (lo < hi) {	/* buffers starting before b ends */
		size_t m = lo + (hi - lo) / 2;

		if (pl->p->bufs[m].lower < b->upper)
			lo = m + 1;
		else
			hi = m;
	}
	nb = lo - count_le(pl->uppers, n, b->lower);
	ret = md_gaptree_fit(&pl->gt, bx, b->size, b->align, fit == FIT_BEST,
			     nb / 8 + 32, out);
	pl->gap_lost += ret == -EAGAIN;
	if (++pl->gap_tries == GAP_WINDOW) {
		if (pl->gap_lost > GAP_WINDOW / 2)
			pl->gap_off = 1;
		pl->gap_tries = 0;
		pl->gap_lost = 0;
	}
	return ret;
}

static int overlapping(struct placer *pl, uint32_t bx, size_t *nk)
{
	uint32_t a, e;
	size_t k, m = 0;

	if (!pl->bwd_start)
		return collect(pl, bx, nk);
	a = pl->bwd_start[bx];
	e = pl->bwd_start[bx + 1];
	k = degree(pl, bx);
	if (pl->nb) {
		pl->cur = &pl->nb[pl->nb_start[bx]];
		*nk = pl->nb_len[bx];
		return 0;
	}
	if (k > pl->cap && grow(pl, k))
		return -ENOMEM;
	for (; a < e; a++)
		add_range(pl, pl->bwd[a], &m);
	for (a = bx + 1; a < pl->fwd_end[bx]; a++)
		add_range(pl, a, &m);
	sort_ranges_big(pl, m);
	pl->cur = pl->rng;	/* after grow(): rng may have moved */
	*nk = m;
	return 0;
}

/*
 * On top of everything, which ends at @top: fixed buffers may sit
 * anywhere, so the top can be too high for @b to end within 64 bits.
 */
static int on_top(const struct md_buffer *b, uint64_t top, uint64_t *out)
{
	uint64_t a = md_round_up(top, b->align);

	if (a < top || (top % b->align && a == UINT64_MAX) ||
	    b->size > UINT64_MAX - a)
		return -EOVERFLOW;
	*out = a;
	return 0;
}

/* The offset @fit picks for @b among the placed buffers. */
static int find_offset(struct placer *pl, uint32_t bx, enum fit fit,
		       uint64_t *out)
{
	const struct md_buffer *b = &pl->p->bufs[bx];
	uint64_t cur = 0, best = UINT64_MAX, best_len = UINT64_MAX, a;
	size_t k, i;
	int ret;

	if (!pl->bwd_start) {
		ret = gap_fit(pl, bx, fit, out);
		if (ret != -EAGAIN)
			return ret;
	}
	ret = overlapping(pl, bx, &k);
	if (ret)
		return ret;
	for (i = 0; i < k; i++) {
		const struct range *r = &pl->cur[i];

		if (r->off > cur) {
			a = md_round_up(cur, b->align);
			if (a <= r->off && r->off - a >= b->size) {
				if (fit == FIT_FIRST) {
					*out = a;
					return 0;
				}
				if (r->off - cur < best_len) {
					best_len = r->off - cur;
					best = a;
				}
			}
		}
		if (r->end > cur)
			cur = r->end;
	}
	if (best_len != UINT64_MAX) {
		*out = best;
		return 0;
	}
	return on_top(b, cur, out);
}

/* Insert [off, end) into the sorted list of pending buffer y. */
static void nb_insert(struct placer *pl, uint32_t y, uint64_t off,
		      uint64_t end)
{
	struct range *l = &pl->nb[pl->nb_start[y]];
	uint32_t n = pl->nb_len[y], lo = 0, hi = n;

	if (n && l[n - 1].off > off) {
		while (lo < hi) {
			uint32_t m = lo + (hi - lo) / 2;

			if (l[m].off <= off)
				lo = m + 1;
			else
				hi = m;
		}
		memmove(&l[lo + 1], &l[lo], (n - lo) * sizeof(*l));
	} else {
		lo = n;
	}
	l[lo].off = off;
	l[lo].end = end;
	pl->nb_len[y] = n + 1;
}

/* @x is at @off: its state, the peak, the progress report. */
static void mark_placed(struct placer *pl, uint32_t x, uint64_t off)
{
	const struct md_buffer *b = &pl->p->bufs[x];

	pl->st[x].off = off;
	pl->st[x].end = off + b->size;
	pl->st[x].epoch = pl->epoch;
	if (progress_fn && ++progress.placed % PROGRESS_EVERY == 0)
		progress_fn(progress_arg, &progress);
	if (plan_deadline > 0 && !(++plan_tick % DEADLINE_EVERY) &&
	    mono_now() >= plan_deadline)
		plan_late = 1;
	if (off + b->size > pl->peak && b->size)
		pl->peak = off + b->size;
}

static int place(struct placer *pl, uint32_t x, uint64_t off)
{
	const struct md_buffer *b = &pl->p->bufs[x];
	uint32_t a;
	int ret;

	mark_placed(pl, x, off);
	if (plan_late)
		return -ETIME;
	if (pl->nb && b->size) {
		for (a = pl->bwd_start[x]; a < pl->bwd_start[x + 1]; a++)
			if (!is_placed(pl, pl->bwd[a]))
				nb_insert(pl, pl->bwd[a], off, off + b->size);
		for (a = x + 1; a < pl->fwd_end[x]; a++)
			if (!is_placed(pl, a))
				nb_insert(pl, a, off, off + b->size);
	}
	if (pl->bwd_start)
		return 0;
	if (b->size && pl->sb.r)
		stab_insert(&pl->sb, x, off, off + b->size);
	ret = 0;
	if (!pl->gap_off)
		ret = md_gaptree_insert(&pl->gt, x, off, off + b->size);
	return ret;
}

/* Fixed buffers go first, where they are told. */
static int place_fixed(struct placer *pl)
{
	size_t i;
	int ret;

	for (i = 0; i < pl->p->n; i++) {
		if (!(pl->p->bufs[i].flags & MD_BUF_FIXED))
			continue;
		ret = place(pl, (uint32_t)i, pl->p->bufs[i].offset);
		if (ret)
			return ret;
	}
	return 0;
}

/* Place the free buffers in @order (fixed ones are skipped). */
static int place_order(struct placer *pl, const uint32_t *order, size_t n,
		       enum fit fit)
{
	size_t i;
	int ret;

	placer_reset(pl);
	ret = place_fixed(pl);
	for (i = 0; !ret && i < n; i++) {
		uint32_t x = order[i];
		uint64_t off;

		if (pl->p->bufs[x].flags & MD_BUF_FIXED)
			continue;
		ret = find_offset(pl, x, fit, &off);
		if (!ret)
			ret = place(pl, x, off);
	}
	return ret;
}

/* ------------------------------------------------------------ sweep */

/*
 * The start order with best fit, in one sweep over time. Placed in order
 * of lower ends, the placed buffers alive with the next one are exactly
 * those alive at its start: the blocks in use at that instant. So the
 * gaps between those blocks are kept as time goes on -- a buffer that
 * ends frees its block, merged with the gaps beside it; a buffer placed
 * in a gap splits it -- in red-black trees: one by offset, and for each
 * alignment in the problem one by the length a gap has left once its
 * start is aligned ("usable"). Best fit is the tightest gap that holds the
 * buffer, ties to the lowest (find_offset()'s choice among the same
 * blocks): it is among the gaps whose usable length lies between the
 * buffer's size and the first such gap's usable length plus the padding
 * it may have, a short range of the tree. Same plan as find_offset(), in
 * O(n log n) where find_offset() visits every neighbour. Not with fixed
 * buffers (placed first, they are in use before they start), nor with
 * more than SWEEP_ALIGNS alignments.
 */
#define SWEEP_ALIGNS 4

struct sweep_gap;

struct sweep_len {
	struct md_rb_node rb;
	uint64_t usable;	/* end - (off aligned) */
	struct sweep_gap *gap;
	int in;			/* in its tree (usable >= 0) */
};

struct sweep_gap {
	struct md_rb_node by_off;	/* first: a node is its gap */
	uint64_t off, end;
	struct sweep_gap *next_free;
	struct sweep_len len[SWEEP_ALIGNS];
};

#define SWEEP_CHUNK 512

struct sweep_chunk {
	struct sweep_chunk *next;
	struct sweep_gap gap[SWEEP_CHUNK];
};

struct sweep {
	struct md_rb_tree by_off;
	struct md_rb_tree by_len[SWEEP_ALIGNS];
	uint64_t align[SWEEP_ALIGNS];
	int naligns;
	struct sweep_chunk *chunks;
	struct sweep_gap *free;
	uint64_t top;		/* end of the highest block in use */
};

static int gap_off_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct sweep_gap *x = (const struct sweep_gap *)a;
	const struct sweep_gap *y = (const struct sweep_gap *)b;

	return (x->off > y->off) - (x->off < y->off);
}

static int gap_len_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct sweep_len *x = (const struct sweep_len *)a;
	const struct sweep_len *y = (const struct sweep_len *)b;

	if (x->usable != y->usable)
		return x->usable < y->usable ? -1 : 1;
	return (x->gap->off > y->gap->off) - (x->gap->off < y->gap->off);
}

static int sweep_add(struct sweep *sw, uint64_t off, uint64_t end)
{
	struct sweep_gap *g;
	int k;

	if (end <= off)
		return 0;
	if (!sw->free) {
		struct sweep_chunk *c = malloc(sizeof(*c));
		int i;

		if (!c)
			return -ENOMEM;
		c->next = sw->chunks;
		sw->chunks = c;
		for (i = SWEEP_CHUNK - 1; i >= 0; i--) {
			c->gap[i].next_free = sw->free;
			sw->free = &c->gap[i];
		}
	}
	g = sw->free;
	sw->free = g->next_free;
	g->off = off;
	g->end = end;
	md_rb_insert(&sw->by_off, &g->by_off, gap_off_cmp);
	for (k = 0; k < sw->naligns; k++) {
		struct sweep_len *l = &g->len[k];
		uint64_t a = md_round_up(off, sw->align[k]);

		l->gap = g;
		l->in = a <= end;
		if (!l->in)
			continue;
		l->usable = end - a;
		md_rb_insert(&sw->by_len[k], &l->rb, gap_len_cmp);
	}
	return 0;
}

static void sweep_del(struct sweep *sw, struct sweep_gap *g)
{
	int k;

	md_rb_erase(&sw->by_off, &g->by_off);
	for (k = 0; k < sw->naligns; k++)
		if (g->len[k].in)
			md_rb_erase(&sw->by_len[k], &g->len[k].rb);
	g->next_free = sw->free;
	sw->free = g;
}

/* The gap that ends at @off, or NULL. */
static struct sweep_gap *gap_ending_at(struct sweep *sw, uint64_t off)
{
	struct md_rb_node *n = sw->by_off.root;
	struct sweep_gap *last = NULL;

	while (n) {
		struct sweep_gap *g = (struct sweep_gap *)n;

		if (g->off < off) {
			last = g;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return last && last->end == off ? last : NULL;
}

/* The gap that starts at @off, or NULL. */
static struct sweep_gap *gap_starting_at(struct sweep *sw, uint64_t off)
{
	struct md_rb_node *n = sw->by_off.root;

	while (n) {
		struct sweep_gap *g = (struct sweep_gap *)n;

		if (g->off == off)
			return g;
		n = off < g->off ? n->left : n->right;
	}
	return NULL;
}

/* The block [@off, @end) is no longer in use. */
static int sweep_release(struct sweep *sw, uint64_t off, uint64_t end)
{
	struct sweep_gap *below = gap_ending_at(sw, off), *above;

	if (end == sw->top) {
		sw->top = below ? below->off : off;
		if (below)
			sweep_del(sw, below);
		return 0;
	}
	above = gap_starting_at(sw, end);
	if (below) {
		off = below->off;
		sweep_del(sw, below);
	}
	if (above) {
		end = above->end;
		sweep_del(sw, above);
	}
	return sweep_add(sw, off, end);
}

/* The tightest gap that holds @b (ties: the lowest), or NULL. */
static struct sweep_gap *sweep_best(struct sweep *sw, const struct md_buffer *b)
{
	struct md_rb_node *n, *first = NULL;
	struct sweep_gap *best = NULL;
	uint64_t cap, best_len = 0;
	int k;

	for (k = 0; sw->align[k] != b->align; k++)
		;
	for (n = sw->by_len[k].root; n;) {
		if (((struct sweep_len *)n)->usable >= b->size) {
			first = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	if (!first)
		return NULL;
	cap = ((struct sweep_len *)first)->usable;
	cap = cap > UINT64_MAX - (b->align - 1) ? UINT64_MAX :
						   cap + (b->align - 1);
	for (n = first; n && ((struct sweep_len *)n)->usable <= cap;
	     n = md_rb_next(n)) {
		struct sweep_gap *g = ((struct sweep_len *)n)->gap;
		uint64_t len = g->end - g->off;

		if (!best || len < best_len ||
		    (len == best_len && g->off < best->off)) {
			best = g;
			best_len = len;
		}
	}
	return best;
}

/* Best fit for @b among the gaps, else on top; the gaps follow. */
static int sweep_place(struct sweep *sw, const struct md_buffer *b,
		       uint64_t *out)
{
	struct sweep_gap *g = sweep_best(sw, b);
	uint64_t a;
	int ret;

	if (g) {
		uint64_t off = g->off, end = g->end;

		a = md_round_up(off, b->align);
		*out = a;
		if (!b->size)
			return 0;
		sweep_del(sw, g);
		ret = sweep_add(sw, off, a);
		return ret ? ret : sweep_add(sw, a + b->size, end);
	}
	ret = on_top(b, sw->top, &a);
	if (ret)
		return ret;
	*out = a;
	if (!b->size)
		return 0;
	ret = sweep_add(sw, sw->top, a);	/* the alignment's padding */
	sw->top = a + b->size;
	return ret;
}

/* The problem's alignments into @sw; 0 if there are too many. */
static int sweep_aligns(struct sweep *sw, const struct md_problem *p)
{
	size_t i;
	int k;

	for (i = 0; i < p->n; i++) {
		for (k = 0; k < sw->naligns; k++)
			if (sw->align[k] == p->bufs[i].align)
				break;
		if (k < sw->naligns)
			continue;
		if (sw->naligns == SWEEP_ALIGNS)
			return 0;
		sw->align[sw->naligns++] = p->bufs[i].align;
	}
	return 1;
}

/* Place @order, which is sorted by lower end (no fixed buffers). */
static int place_sweep(struct placer *pl, const uint32_t *order, size_t n,
		       struct md_kv *by_upper)
{
	const struct md_buffer *bufs = pl->p->bufs;
	struct sweep sw;
	size_t i, done = 0;
	int ret;

	placer_reset(pl);
	memset(&sw, 0, sizeof(sw));
	sweep_aligns(&sw, pl->p);
	for (i = 0; i < n; i++)
		by_upper[i] = (struct md_kv){ bufs[i].upper, (uint32_t)i };
	ret = md_sort_kv(by_upper, n);
	for (i = 0; !ret && i < n; i++) {
		uint32_t x = order[i];
		uint64_t off;

		for (; !ret && done < n &&
		       by_upper[done].key <= bufs[x].lower; done++) {
			const struct pstate *y = &pl->st[by_upper[done].idx];

			if (y->end > y->off)
				ret = sweep_release(&sw, y->off, y->end);
		}
		if (!ret)
			ret = sweep_place(&sw, &bufs[x], &off);
		if (!ret)
			mark_placed(pl, x, off);
		if (!ret && plan_late)
			ret = -ETIME;
	}
	while (sw.chunks) {
		struct sweep_chunk *c = sw.chunks;

		sw.chunks = c->next;
		free(c);
	}
	return ret;
}

/* The sweep applies: no fixed buffer, few alignments. */
static int sweep_applies(const struct md_problem *p)
{
	struct sweep sw;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->bufs[i].flags & MD_BUF_FIXED)
			return 0;
	memset(&sw, 0, sizeof(sw));
	return sweep_aligns(&sw, p);
}

/* ------------------------------------------------------------ orders */

/*
 * Sort @order by @key descending, ties by @tie descending, then by index:
 * two stable radix passes.
 */
static int order_by(uint32_t *order, size_t n, const uint64_t *key,
		    const uint64_t *tie, struct md_kv *kv)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++)
		kv[i] = (struct md_kv){ ~tie[i], (uint32_t)i };
	ret = md_sort_kv(kv, n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		kv[i].key = ~key[kv[i].idx];
	ret = md_sort_kv(kv, n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		order[i] = kv[i].idx;
	return 0;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Index of the first element of sorted @a (n entries) that is > @v. */
static size_t upper_idx(const struct md_kv *a, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].key <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Bytes alive at some time alongside each buffer (itself included):
 * sum of sizes with lower < upper_b minus those with upper <= lower_b,
 * from prefix sums over the sorted ends. O(n log n).
 */
static int conflict_bytes(const struct md_problem *p, uint64_t *out)
{
	struct md_kv *lo, *up;
	uint64_t *slo, *sup;
	size_t i, n = p->n;
	int ret = -ENOMEM;

	lo = malloc((n + 1) * sizeof(*lo));
	up = malloc((n + 1) * sizeof(*up));
	slo = malloc((n + 1) * sizeof(*slo));
	sup = malloc((n + 1) * sizeof(*sup));
	if (!lo || !up || !slo || !sup)
		goto out;
	for (i = 0; i < n; i++) {
		lo[i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
		up[i] = (struct md_kv){ p->bufs[i].upper, (uint32_t)i };
	}
	if (md_sort_kv(lo, n) || md_sort_kv(up, n))
		goto out;
	slo[0] = sup[0] = 0;
	for (i = 0; i < n; i++) {
		slo[i + 1] = slo[i] + p->bufs[lo[i].idx].size;
		sup[i + 1] = sup[i] + p->bufs[up[i].idx].size;
	}
	for (i = 0; i < n; i++) {
		const struct md_buffer *b = &p->bufs[i];
		/* lower < upper_b  <=>  lower <= upper_b - 1 */
		size_t a = upper_idx(lo, n, b->upper - 1);
		size_t d = upper_idx(up, n, b->lower);

		out[i] = slo[a] - sup[d];
	}
	ret = 0;
out:
	free(lo);
	free(up);
	free(slo);
	free(sup);
	return ret;
}

static int make_order(const struct md_problem *p, int strat, uint32_t *order,
		      uint64_t *key, uint64_t *tie, struct md_kv *kv)
{
	size_t i, n = p->n;
	int ret;

	for (i = 0; i < n; i++) {
		const struct md_buffer *b = &p->bufs[i];
		uint64_t life = b->upper - b->lower;

		switch (strat) {
		case MD_STRAT_SIZE_BEST:
		case MD_STRAT_SIZE_FIRST:
			key[i] = b->size;
			tie[i] = life;
			break;
		case MD_STRAT_LIFETIME:
			key[i] = life;
			tie[i] = b->size;
			break;
		case MD_STRAT_AREA:
			key[i] = sat_mul(b->size, life);
			tie[i] = b->size;
			break;
		case MD_STRAT_START:
			key[i] = ~b->lower;
			tie[i] = b->size;
			break;
		default:
			tie[i] = b->size;
			break;
		}
	}
	if (strat == MD_STRAT_CONFLICT) {
		ret = conflict_bytes(p, key);
		if (ret)
			return ret;
	}
	return order_by(order, n, key, tie, kv);
}

/* ------------------------------------------------------------ lowest */

struct hent {
	uint64_t off;
	uint64_t tie, tie2;	/* smaller first */
	uint32_t idx;
};

static bool hent_less(const void *pa, const void *pb, void *arg)
{
	const struct hent *a = pa, *b = pb;

	(void)arg;
	if (a->off != b->off)
		return a->off < b->off;
	if (a->tie != b->tie)
		return a->tie < b->tie;
	if (a->tie2 != b->tie2)
		return a->tie2 < b->tie2;
	return a->idx < b->idx;
}

/* Heap keys of the lowest-first strategies: smaller goes first on ties. */
static void lowest_ties(const struct md_buffer *b, int strat, uint64_t *t1,
			uint64_t *t2)
{
	uint64_t life = b->upper - b->lower;

	switch (strat) {
	case MD_STRAT_LOWEST_EARLY:	/* earliest start, then longest */
		*t1 = b->lower;
		*t2 = ~life;
		break;
	case MD_STRAT_LOWEST_LATE:	/* latest end, then longest */
		*t1 = ~b->upper;
		*t2 = ~life;
		break;
	default:			/* longest, then largest */
		*t1 = ~life;
		*t2 = ~b->size;
		break;
	}
}

/* Pending buffers whose cached lowest offset a new block overlaps. */
struct stale_ctx {
	const struct md_problem *p;
	const uint64_t *cached;
	uint8_t *stale;
	uint64_t off, end;
};

static int mark_stale(void *arg, uint32_t y)
{
	struct stale_ctx *c = arg;
	uint64_t sz = c->p->bufs[y].size;

	if (sz && c->cached[y] < c->end && c->cached[y] + sz > c->off)
		c->stale[y] = 1;
	return 0;
}

/*
 * Dynamic order: always place next the buffer that can go lowest (first
 * fit), ties broken per @strat. A buffer's lowest offset only grows as
 * others are placed, and only when a new block covers it: a second tree
 * holds the lifetimes of the pending buffers, each placement marks the
 * pending buffers it invalidates, and only those are re-evaluated when
 * they reach the top of the heap. The order it ends up with goes to
 * @order.
 */
static int place_lowest(struct placer *pl, int strat, uint32_t *order,
			uint64_t *cached)
{
	const struct md_problem *p = pl->p;
	struct stale_ctx sc = { p, cached, NULL, 0, 0 };
	struct md_itree pend;
	struct md_heap hp;
	struct hent *h;
	size_t i, k = 0;
	int ret;

	h = malloc((p->n + 1) * sizeof(*h));
	sc.stale = malloc(p->n + 1);
	if (!h || !sc.stale || md_itree_init(&pend, p->n)) {
		free(h);
		free(sc.stale);
		return -ENOMEM;
	}
	md_heap_init(&hp, h, sizeof(*h), hent_less, NULL);
	placer_reset(pl);
	ret = place_fixed(pl);
	for (i = 0; i < p->n && !ret; i++) {
		const struct md_buffer *b = &p->bufs[i];
		struct hent e = { 0, 0, 0, (uint32_t)i };

		if (b->flags & MD_BUF_FIXED)
			continue;
		lowest_ties(b, strat, &e.tie, &e.tie2);
		ret = find_offset(pl, (uint32_t)i, FIT_FIRST, &e.off);
		cached[i] = e.off;
		sc.stale[i] = 0;
		md_heap_push(&hp, &e);
		if (!ret && !pl->bwd_start)
			ret = md_itree_insert(&pend, (uint32_t)i, b->lower,
					      b->upper);
	}
	while (hp.n && !ret) {
		const struct md_buffer *b;
		struct hent e;

		md_heap_pop(&hp, &e);
		b = &p->bufs[e.idx];

		if (sc.stale[e.idx]) {
			ret = find_offset(pl, e.idx, FIT_FIRST, &e.off);
			if (ret)
				break;
			sc.stale[e.idx] = 0;
			if (e.off != cached[e.idx]) {
				cached[e.idx] = e.off;
				md_heap_push(&hp, &e);
				continue;
			}
		}
		if (!pl->bwd_start)
			md_itree_remove(&pend, e.idx);
		ret = place(pl, e.idx, e.off);
		order[k++] = e.idx;
		if (ret || !b->size)
			continue;
		sc.off = e.off;
		sc.end = e.off + b->size;
		if (pl->bwd_start) {
			uint32_t a;

			for (a = pl->bwd_start[e.idx];
			     a < pl->bwd_start[e.idx + 1]; a++)
				if (!is_placed(pl, pl->bwd[a]))
					mark_stale(&sc, pl->bwd[a]);
			for (a = e.idx + 1; a < pl->fwd_end[e.idx]; a++)
				if (!is_placed(pl, a))
					mark_stale(&sc, a);
		} else {
			md_itree_query(&pend, b->lower, b->upper, mark_stale,
				       &sc);
		}
	}
	/*
	 * The order is all n buffers, as from make_order(): the local search
	 * permutes all of it. The fixed ones go last; place_order() skips them.
	 */
	for (i = 0; i < p->n && !ret; i++)
		if (p->bufs[i].flags & MD_BUF_FIXED)
			order[k++] = (uint32_t)i;
	md_itree_free(&pend);
	free(h);
	free(sc.stale);
	return ret;
}

/* ------------------------------------------------------------ driver */

MD_API const char *md_strategy_name(int strategy)
{
	static const char *const names[MD_STRAT_COUNT] = {
		[MD_STRAT_SIZE_BEST] = "size-best-fit",
		[MD_STRAT_SIZE_FIRST] = "size-first-fit",
		[MD_STRAT_LIFETIME] = "lifetime",
		[MD_STRAT_CONFLICT] = "conflict",
		[MD_STRAT_AREA] = "area",
		[MD_STRAT_START] = "start",
		[MD_STRAT_LOWEST_LONG] = "lowest-long",
		[MD_STRAT_LOWEST_EARLY] = "lowest-early",
		[MD_STRAT_LOWEST_LATE] = "lowest-late",
	};

	if (strategy >= 0 && strategy < MD_STRAT_COUNT)
		return names[strategy];
	return "?";
}

struct solver {
	const struct md_problem *p;	/* the sorted copy */
	struct placer pl;
	uint32_t *order, *best_order, *trial;
	uint64_t *key, *tie;
	struct md_kv *kv;
	uint64_t *best_off;
	uint64_t best_peak;
	int have_best;		/* best_*: a plan was kept */
	int best_strat;
	int improved;
	int sweep;		/* the start order is placed by place_sweep() */
	enum fit best_fit;
};

static void keep_if_better(struct solver *s, const uint32_t *order, int strat,
			   enum fit fit)
{
	size_t n = s->p->n, i;

	/* Not a sentinel: a plan may end at exactly 2^64 - 1. */
	if (s->have_best && s->pl.peak >= s->best_peak)
		return;
	s->have_best = 1;
	s->best_peak = s->pl.peak;
	if (strat == MD_STRAT_COUNT) {
		s->improved = 1;
	} else {
		s->best_strat = strat;
		s->improved = 0;
	}
	s->best_fit = fit;
	for (i = 0; i < n; i++)
		s->best_off[i] = s->pl.st[i].off;
	memcpy(s->best_order, order, n * sizeof(*order));
}

static int run_strategy(struct solver *s, int strat, struct md_plan *plan)
{
	enum fit fit = strat == MD_STRAT_SIZE_FIRST ? FIT_FIRST : FIT_BEST;
	size_t n = s->p->n;
	int ret;

	progress_pass(strat);
	if (strat >= MD_STRAT_LOWEST_LONG) {
		ret = place_lowest(&s->pl, strat, s->order, s->key);
		fit = FIT_FIRST;
	} else {
		ret = make_order(s->p, strat, s->order, s->key, s->tie, s->kv);
		if (!ret && strat == MD_STRAT_START && s->sweep)
			ret = place_sweep(&s->pl, s->order, n, s->kv);
		else if (!ret)
			ret = place_order(&s->pl, s->order, n, fit);
	}
	/* No plan within 64 bits this way; another strategy may find one. */
	if (ret == -EOVERFLOW)
		return 0;
	if (ret)
		return ret;
	plan->strategy_peak[strat] = s->pl.peak;
	plan->ran |= 1u << strat;
	keep_if_better(s, s->order, strat, fit);
	return 0;
}

static int at_peak(const struct solver *s, uint32_t x, uint64_t peak)
{
	return s->pl.st[x].end == peak && s->p->bufs[x].size;
}

/*
 * Local search on the winning order: take a buffer whose block touches the
 * peak (or, every other try, any buffer), move it to an earlier position,
 * re-place everything; keep the new order when the peak does not grow
 * (plateaus let the search drift). Fixed seed and pass count: the same
 * problem always gives the same plan.
 */
static int improve(struct solver *s, int passes)
{
	size_t n = s->p->n, i;
	uint64_t seed = 0x2545f4914f6cdd1dULL ^ n;
	uint64_t cur_peak = s->best_peak;
	int pass, ret;

	if (n < 2)
		return 0;
	memcpy(s->order, s->best_order, n * sizeof(*s->order));
	ret = place_order(&s->pl, s->order, n, s->best_fit);
	if (ret)
		return ret;
	for (pass = 0; pass < passes; pass++) {
		size_t from, to, cnt = 0, pick;
		uint32_t x;

		progress_pass(MD_STRAT_COUNT);
		if (pass & 1) {
			from = md_xorshift64(&seed) % n;
		} else {
			for (i = 0; i < n; i++)
				cnt += at_peak(s, s->order[i], cur_peak);
			if (!cnt)
				continue;
			pick = md_xorshift64(&seed) % cnt;
			for (from = 0; from < n; from++)
				if (at_peak(s, s->order[from], cur_peak) &&
				    !pick--)
					break;
		}
		if (!from)
			continue;
		to = md_xorshift64(&seed) % from;
		memcpy(s->trial, s->order, n * sizeof(*s->trial));
		x = s->trial[from];
		memmove(&s->trial[to + 1], &s->trial[to],
			(from - to) * sizeof(*s->trial));
		s->trial[to] = x;
		ret = place_order(&s->pl, s->trial, n, s->best_fit);
		if (ret && ret != -EOVERFLOW)
			return ret;
		if (!ret && s->pl.peak <= cur_peak) {
			uint32_t *t = s->order;

			s->order = s->trial;
			s->trial = t;
			cur_peak = s->pl.peak;
			if (cur_peak < s->best_peak)
				keep_if_better(s, s->order, MD_STRAT_COUNT,
					       s->best_fit);
		} else {
			/* Back to the placement of the current order. */
			ret = place_order(&s->pl, s->order, n, s->best_fit);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int check_problem(const struct md_problem *p)
{
	uint64_t room = UINT64_MAX;
	size_t i;

	if (p->n >= MD_ITREE_NIL)
		return -ERANGE;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];

		if (b->upper <= b->lower || !b->align)
			return -EINVAL;
		/* Even stacking everything, with padding, must fit. */
		if (b->size > room || b->align - 1 > room - b->size)
			return -EOVERFLOW;
		room -= b->size + (b->align - 1);
		if ((b->flags & MD_BUF_FIXED) &&
		    (b->offset % b->align || b->offset + b->size < b->offset))
			return -EINVAL;
	}
	return 0;
}

/* Fixed buffers must not overlap each other: nothing could fix that. */
static int check_fixed(const struct md_problem *p)
{
	struct md_problem f;
	uint64_t *off;
	size_t i, k = 0;
	int ret;

	for (i = 0; i < p->n; i++)
		k += !!(p->bufs[i].flags & MD_BUF_FIXED);
	if (k < 2)
		return 0;
	md_problem_init(&f);
	f.bufs = malloc(k * sizeof(*f.bufs));
	off = malloc(k * sizeof(*off));
	if (!f.bufs || !off) {
		free(f.bufs);
		free(off);
		return -ENOMEM;
	}
	for (i = 0; i < p->n; i++) {
		if (!(p->bufs[i].flags & MD_BUF_FIXED))
			continue;
		off[f.n] = p->bufs[i].offset;
		f.bufs[f.n++] = p->bufs[i];
	}
	ret = md_plan_validate(&f, off, NULL);
	free(f.bufs);
	free(off);
	return ret;
}

/*
 * Strategies in the order they are tried when the work budget does not
 * allow all of them: the dynamic ones win most often on hard inputs but
 * cost several placements' worth of work each.
 */
static const int strat_priority[MD_STRAT_COUNT] = {
	MD_STRAT_LOWEST_LONG, MD_STRAT_LOWEST_EARLY, MD_STRAT_LOWEST_LATE,
	MD_STRAT_SIZE_FIRST, MD_STRAT_SIZE_BEST, MD_STRAT_CONFLICT,
	MD_STRAT_LIFETIME, MD_STRAT_AREA, MD_STRAT_START,
};

/* Work budget of one md_plan_solve() in neighbour visits (see below). */
#define WORK_BUDGET (1ull << 22)

/*
 * Estimated neighbour visits of one strategy: every neighbour of every
 * buffer with the lists. Without them a placement costs a few visits of
 * each of the O(log) sets of the gap tree; the dynamic strategies still
 * visit every pending neighbour of every buffer they place.
 */
static uint64_t strat_cost(const struct solver *s, int strat)
{
	const struct placer *pl = &s->pl;
	uint64_t n = pl->p->n, e = n + 2 * pl->pairs;

	if (strat == MD_STRAT_START && s->sweep)
		return 4 * n;	/* a few tree steps per buffer */
	if (strat >= MD_STRAT_LOWEST_LONG)
		return 6 * e;
	if (pl->bwd_start)
		return e;
	return 16 * n * (pl->gt.depth + 1);
}

/* Neighbour visits the greedy fallback may cost (about a second). */
#define FALLBACK_BUDGET (1ull << 27)

/*
 * run_all() ran @ran strategies, @mask: whether the classic greedy runs
 * as well (see there).
 */
static int greedy_too(const struct solver *s, int ran, unsigned int mask)
{
	const struct placer *pl = &s->pl;

	return ran == 1 && mask == 1u << MD_STRAT_START && s->sweep &&
	       pl->p->n + 2 * pl->pairs <= FALLBACK_BUDGET;
}

/* How many strategies run_all() will run (for the progress report). */
static unsigned int count_runs(struct solver *s, const struct md_plan_opts *o)
{
	uint64_t spent = 0;
	unsigned int mask = 0;
	int ran = 0;
	int i;

	if (o->strategy != MD_STRAT_ALL)
		return 1;
	for (i = 0; i < MD_STRAT_COUNT; i++) {
		uint64_t c = strat_cost(s, strat_priority[i]);

		if (!o->exhaustive && spent + c > WORK_BUDGET)
			continue;
		spent += c;
		ran++;
		mask |= 1u << strat_priority[i];
	}
	return ran + (!ran || greedy_too(s, ran, mask));
}

static int run_all(struct solver *s, const struct md_plan_opts *o,
		   struct md_plan *plan)
{
	uint64_t spent = 0;
	int i, ran = 0, ret;

	for (i = 0; i < MD_STRAT_COUNT; i++) {
		int strat = strat_priority[i];
		uint64_t c = strat_cost(s, strat);

		if (!o->exhaustive && spent + c > WORK_BUDGET)
			continue;
		ret = run_strategy(s, strat, plan);
		if (ret)
			return ret == -ETIME && s->have_best ? 0 : ret;
		spent += c;
		ran++;
	}
	/*
	 * Only the sweep fit the budget: the gap tree was expected to be too
	 * slow. The classic greedy still runs when the neighbours it would
	 * visit, at worst, are not many more than the budget: it beats the
	 * sweep where many buffers live long (memory then fragments, and the
	 * start order cannot put the large ones first).
	 */
	if (!ran || greedy_too(s, ran, plan->ran))
		return run_strategy(s, MD_STRAT_SIZE_FIRST, plan);
	return 0;
}

/* The problem sorted by lower end (stable), and the original indices. */
static int sorted_copy(const struct md_problem *p, struct md_problem *q,
		       uint32_t **idx)
{
	struct md_kv *kv;
	size_t i;

	md_problem_init(q);
	kv = malloc((p->n + 1) * sizeof(*kv));
	q->bufs = malloc((p->n + 1) * sizeof(*q->bufs));
	*idx = malloc((p->n + 1) * sizeof(**idx));
	if (!kv || !q->bufs || !*idx)
		goto nomem;
	for (i = 0; i < p->n; i++)
		kv[i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
	if (md_sort_kv(kv, p->n))
		goto nomem;
	for (i = 0; i < p->n; i++) {
		q->bufs[i] = p->bufs[kv[i].idx];
		q->bufs[i].id = NULL;
		(*idx)[i] = kv[i].idx;
	}
	q->n = q->cap = p->n;
	free(kv);
	return 0;
nomem:
	free(kv);
	free(q->bufs);
	free(*idx);
	q->bufs = NULL;
	*idx = NULL;
	return -ENOMEM;
}

MD_API int md_plan_solve(const struct md_problem *p,
			 const struct md_plan_opts *opts,
			 struct md_plan *plan)
{
	struct md_plan_opts def = { .strategy = MD_STRAT_ALL };
	struct md_problem q;
	uint32_t *idx = NULL;
	uint64_t *off = NULL;
	struct solver s;
	size_t n = p->n, i;
	double saved_deadline;
	int ret, saved_late;

	memset(plan, 0, sizeof(*plan));
	if (!opts)
		opts = &def;
	if (opts->strategy < 0 || opts->strategy > MD_STRAT_ALL)
		return -EINVAL;
	ret = check_problem(p);
	if (!ret)
		ret = check_fixed(p);
	if (ret)
		return ret;
	ret = sorted_copy(p, &q, &idx);
	if (ret)
		return ret;
	memset(&s, 0, sizeof(s));
	s.p = &q;
	s.best_peak = 0;
	s.best_strat = -1;
	s.sweep = sweep_applies(&q) && !md_plan_test_no_sweep;
	ret = placer_init(&s.pl, &q);
	if (ret) {
		free(q.bufs);
		free(idx);
		return ret;
	}

	s.order = malloc((n + 1) * sizeof(*s.order));
	s.best_order = malloc((n + 1) * sizeof(*s.best_order));
	s.trial = malloc((n + 1) * sizeof(*s.trial));
	s.key = malloc((n + 1) * sizeof(*s.key));
	s.tie = malloc((n + 1) * sizeof(*s.tie));
	s.kv = malloc((n + 1) * sizeof(*s.kv));
	s.best_off = calloc(n + 1, sizeof(*s.best_off));
	off = calloc(n + 1, sizeof(*off));
	ret = -ENOMEM;
	if (!s.order || !s.best_order || !s.trial || !s.key || !s.tie ||
	    !s.kv || !s.best_off || !off)
		goto out;

	memset(&progress, 0, sizeof(progress));
	progress.n = n;
	progress.passes = count_runs(&s, opts) +
			  (opts->improve > 0 && n >= 2 ? opts->improve : 0);
	saved_deadline = plan_deadline;
	saved_late = plan_late;
	plan_deadline = opts->time_limit > 0 ? mono_now() + opts->time_limit : 0;
	plan_late = 0;
	if (opts->strategy == MD_STRAT_ALL)
		ret = run_all(&s, opts, plan);
	else
		ret = run_strategy(&s, opts->strategy, plan);
	if (!ret && n && !s.have_best)
		ret = -EOVERFLOW;	/* every strategy ran past 2^64 */
	if (!ret && opts->improve > 0 && !plan_late)
		ret = improve(&s, opts->improve);
	/* the limit cut the local search short: its best plan stands */
	if (ret == -ETIME && s.have_best)
		ret = 0;
	plan_deadline = saved_deadline;
	plan_late = saved_late;
	if (ret)
		goto out;
	for (i = 0; i < n; i++)
		off[idx[i]] = s.best_off[i];

	ret = md_plan_validate(p, off, NULL);
	if (ret) {
		ret = ret == -ENOMEM ? ret : -EFAULT;
		goto out;
	}
	plan->offsets = off;
	off = NULL;
	plan->n = n;
	plan->peak = s.best_peak;
	plan->lower_bound = md_problem_lower_bound(p, NULL);
	plan->total = md_problem_total(p);
	plan->improved = s.improved;
	plan->strategy = s.best_strat;
	ret = 0;
out:
	placer_free(&s.pl);
	free(s.order);
	free(s.best_order);
	free(s.trial);
	free(s.key);
	free(s.tie);
	free(s.kv);
	free(s.best_off);
	free(off);
	free(q.bufs);
	free(idx);
	return ret;
}

MD_API void md_plan_free(struct md_plan *plan)
{
	free(plan->offsets);
	memset(plan, 0, sizeof(*plan));
}
