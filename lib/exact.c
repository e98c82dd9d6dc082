// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Exact offset planning: branch and bound over canonical placements.
 *
 * Canonical placements. Any plan can be pushed down, buffer by buffer in
 * order of (offset, rank), until each buffer sits at the lowest allowed
 * offset above the buffers before it that overlap it in time. So the search
 * builds plans as sequences: the next buffer goes at
 *
 *	c(x) = lowest aligned offset >= max(S(x), L) that misses every fixed
 *	       buffer, and > L when S(x) <= L and rank(x) < rank(last),
 *
 * where S(x) is the skyline (highest top of a placed buffer) over x's
 * lifetime and L the offset of the buffer placed last. Offsets never go
 * down along a sequence, so a state is (unplaced set, skyline, L).
 *
 * Pruning, all of it exact:
 *  - capacity: every unplaced x needs c(x) + size(x) <= capacity.
 *  - sections: time is cut into elementary sections; in each section the
 *    bytes R(s) still to place go above max(floor(s), m), m the lowest
 *    c(x) of all: max(floor, m) + R(s) <= capacity. floor + R is checked
 *    when a placement raises a floor, m + max R with a max segment tree.
 *  - dominance: placing y while another x would fit entirely below c(y)
 *    (c(x) + size(x) <= c(y)) is never needed: the same completion works
 *    with x moved down there first. So only buffers that start below the
 *    lowest end of all the others are branched on.
 *  - decomposition: when no unplaced buffer crosses some instant, the two
 *    sides are independent; each part is solved alone (smallest first) and
 *    a failing part fails the node without retrying the others.
 *  - memo: failed states are remembered in a transposition table keyed by
 *    a Zobrist hash of the part's unplaced set, the floors of its sections
 *    that still have buffers to place, and L when it still matters.
 *
 * Branching order: lowest c(x) first (no hole left behind), ties by a
 * static rank (long lifetimes, then large sizes first).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metadef/exact.h>

#include "internal.h"
#include "plan_internal.h"

#define NONE		UINT32_MAX
#define CHECK_EVERY	1023u		/* nodes between clock checks */
#define MAX_CANDS	(4u << 20)	/* candidate stack entries (128 MiB) */
#define FRAME_BYTES	1024u		/* stack per level of the search */
#define STACK_SPARE	(1u << 20)	/* stack for everything else */

struct cand {
	uint64_t c;			/* lowest offset on the skyline */
	uint64_t b;			/* lowest offset it can still get */
	uint32_t x;
	uint32_t pos;			/* index in the group's list */
	uint32_t r;			/* rank */
	uint32_t pad;
};

struct grp {
	uint32_t ub, nu;		/* list of unplaced: ua[ub .. ub + nu) */
	uint32_t sa, sb;		/* sections [sa, sb) */
	uint64_t X;			/* hash of the state outside the group */
};

struct bx {
	uint64_t S;			/* skyline over its lifetime */
	uint64_t sz, al;
	uint32_t lo, hi;		/* sections [lo, hi) */
	uint32_t rank;			/* in the ranking being searched */
	uint32_t nob;			/* fixed buffers alive with it */
};

struct rec {
	uint32_t x, fpos, spos;
};

struct sprev {
	uint32_t x;
	uint64_t s;
};

struct ex {
	/* problem: free buffers of size > 0, in rank order */
	size_t n, m;			/* buffers, sections */
	uint32_t *orig;			/* index in the md_problem */
	struct bx *bx;			/* per buffer, hot fields together */
	uint32_t *nbs, *nb;		/* time neighbours, CSR */
	uint32_t *obs;			/* fixed obstacles, CSR into ob */
	uint64_t *ob;			/* pairs [start, end) */
	uint64_t *zb;			/* Zobrist key of each buffer */
	uint64_t *live;			/* bytes alive per section */

	/* search state */
	uint64_t cap, capkey;
	uint64_t *f, *R, *off;
	uint32_t *cnt;			/* buffers crossing boundary s|s+1 */
	uint8_t *placed;
	uint64_t H;
	struct rec *rec;
	size_t nrec;
	uint64_t *fs;
	size_t nf;
	struct sprev *ss;
	size_t nss;
	size_t nsss;			/* allocated entries of ss */
	int64_t *mx, *ad;		/* max segment tree over R */
	size_t tsize;
	uint32_t *zs;			/* scratch: zero boundaries */
	uint64_t *P;			/* scratch: per section */
	uint64_t *bb;			/* lowest offset each buffer can get */
	uint32_t *twin;			/* identical buffer placed first, or NONE */
	uint64_t *stk;			/* scratch of section_ok() */
	uint32_t *sbs, *sb;		/* buffers alive in each section, CSR */
	uint32_t *mark, stamp;		/* sections seen by local_bound() */
	int fresh;			/* a new group: check every section */
	uint32_t depth;			/* of the recursion */
	uint32_t max_depth;		/* what the stack has room for */

	/* arenas (indices, they move) */
	struct cand *ca;
	size_t ctop, ccap;
	uint32_t *ua;
	size_t utop, ucap;

	/* memo */
	uint64_t *memo;
	uint64_t memo_mask;

	/* limits */
	struct timespec t0;
	double deadline;		/* seconds since t0, <= 0: none */
	double last_report;
	uint64_t report_nodes;
	volatile sig_atomic_t *cancel;
	void (*progress)(const struct md_exact_progress *, void *);
	void *progress_arg;
	uint64_t best_peak, proven_lb;
	uint64_t nodes;
	uint64_t budget_end;		/* node budget of this run */
	int bstop;			/* the budget ran out */
	int stop;			/* limit, cancel or no memory */
	int why;			/* enum md_exact_stop, when stop */
	unsigned int disabled;		/* enum md_exact_prune bits */
	uint64_t max_nodes;		/* 0: none */
	int nomem;
	uint32_t *ranks;		/* norder rankings */
	size_t norder, order;
};

/* ------------------------------------------------------------ helpers */

static inline uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Hash of an unplaced buffer and its skyline: the state is their set. */
static inline uint64_t hx(const struct ex *e, uint32_t x, uint64_t S)
{
	return mix64(e->zb[x] ^ (S * 0x2545f4914f6cdd1dULL));
}

static double elapsed(const struct ex *e)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - e->t0.tv_sec) +
	       (double)(t.tv_nsec - e->t0.tv_nsec) * 1e-9;
}

static void report(struct ex *e, double now)
{
	struct md_exact_progress pr;
	double dt = now - e->last_report;

	pr.best_peak = e->best_peak;
	pr.lower_bound = e->proven_lb;
	pr.capacity = e->cap;
	pr.nodes = e->nodes;
	pr.nodes_per_sec = dt > 0 ? (double)(e->nodes - e->report_nodes) / dt
				  : 0;
	pr.seconds = now;
	e->last_report = now;
	e->report_nodes = e->nodes;
	e->progress(&pr, e->progress_arg);
}

/* Time limit, cancel flag and progress. Return: 1 when the search stops. */
static int check_limits(struct ex *e)
{
	double now;

	if (e->cancel && *e->cancel && !e->stop) {
		e->stop = 1;
		e->why = MD_EXACT_STOP_CANCEL;
	}
	if (e->max_nodes && e->nodes >= e->max_nodes && !e->stop) {
		e->stop = 1;
		e->why = MD_EXACT_STOP_NODES;
	}
	if (e->stop)
		return 1;
	if (e->deadline <= 0 && !e->progress)
		return 0;
	now = elapsed(e);
	if (e->deadline > 0 && now >= e->deadline) {
		e->stop = 1;
		e->why = MD_EXACT_STOP_TIME;
		return 1;
	}
	if (e->progress && now - e->last_report >= 0.25)
		report(e, now);
	return 0;
}

static int grow(void **a, size_t *cap, size_t need, size_t elem)
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

static uint64_t lowfeas_fixed(const struct ex *e, uint32_t x, uint64_t v)
{
	uint64_t a = e->bx[x].al, sz = e->bx[x].sz;
	uint32_t k, k0 = e->obs[x], k1 = e->obs[x + 1];

again:
	if (v > e->cap)
		return v;
	for (k = k0; k < k1; k++) {
		uint64_t st = e->ob[2 * k], en = e->ob[2 * k + 1];

		if (st < v + sz && v < en) {
			v = md_round_up(en, a);
			goto again;
		}
	}
	return v;
}

/* Lowest offset >= v for buffer x: aligned, clear of fixed buffers. */
static inline uint64_t lowfeas(const struct ex *e, uint32_t x, uint64_t v)
{
	const struct bx *b = &e->bx[x];

	if (b->al > 1)
		v = md_round_up(v, b->al);
	return b->nob ? lowfeas_fixed(e, x, v) : v;
}

/* ------------------------------------------------------------ max tree */

static void st_add(struct ex *e, size_t x, size_t l, size_t r, size_t a,
		   size_t b, int64_t v)
{
	size_t mid;
	int64_t p, q;

	if (b <= l || r <= a)
		return;
	if (a <= l && r <= b) {
		e->ad[x] += v;
		e->mx[x] += v;
		return;
	}
	mid = (l + r) / 2;
	st_add(e, 2 * x, l, mid, a, b, v);
	st_add(e, 2 * x + 1, mid, r, a, b, v);
	p = e->mx[2 * x];
	q = e->mx[2 * x + 1];
	e->mx[x] = e->ad[x] + (p > q ? p : q);
}

static int64_t st_max(const struct ex *e, size_t x, size_t l, size_t r,
		      size_t a, size_t b)
{
	size_t mid;
	int64_t p, q;

	if (a <= l && r <= b)
		return e->mx[x];
	mid = (l + r) / 2;
	p = a < mid ? st_max(e, 2 * x, l, mid, a, b) : INT64_MIN;
	q = b > mid ? st_max(e, 2 * x + 1, mid, r, a, b) : INT64_MIN;
	return e->ad[x] + (p > q ? p : q);
}

/* ------------------------------------------------------------ memo */

static int memo_has(const struct ex *e, uint64_t key)
{
	uint64_t i = key & e->memo_mask & ~3ULL;

	key |= 1;
	return e->memo[i] == key || e->memo[i + 1] == key ||
	       e->memo[i + 2] == key || e->memo[i + 3] == key;
}

static void memo_put(struct ex *e, uint64_t key)
{
	uint64_t i = key & e->memo_mask & ~3ULL;
	int k;

	key |= 1;
	for (k = 0; k < 4; k++) {
		if (!e->memo[i + k]) {
			e->memo[i + k] = key;
			return;
		}
	}
	e->memo[i + ((key >> 60) & 3)] = key;
}

/* ------------------------------------------------------------ moves */

/*
 * Put x at offset o. Return: 0 when a section bound fails (the move is
 * still made: undo it), 1 otherwise; *zero is set when a boundary inside
 * x's lifetime is no longer crossed by any unplaced buffer.
 */
static int place(struct ex *e, uint32_t x, uint64_t o, int *zero, int *hat)
{
	uint64_t sz = e->bx[x].sz, t = o + sz, cap = e->cap;
	uint32_t lo = e->bx[x].lo, hi = e->bx[x].hi, s, k;
	struct rec *r = &e->rec[e->nrec++];
	int ok = 1;

	r->x = x;
	r->fpos = (uint32_t)e->nf;
	r->spos = (uint32_t)e->nss;
	for (s = lo; s < hi; s++) {
		e->fs[e->nf++] = e->f[s];
		if (o + e->R[s] > cap && !(e->disabled & MD_EXACT_NO_SECTIONS))
			ok = 0;
		e->R[s] -= sz;
		e->f[s] = t;
	}
	st_add(e, 1, 0, e->tsize, lo, hi, -(int64_t)sz);
	*zero = 0;
	for (s = lo; s + 1 < hi; s++)
		if (!--e->cnt[s])
			*zero = 1;
	*hat = 0;
	for (k = e->nbs[x]; k < e->nbs[x + 1]; k++) {
		uint32_t y = e->nb[k];

		if (!e->placed[y])
			*hat = 1;
		if (!e->placed[y] && e->bx[y].S < t) {
			e->ss[e->nss].x = y;
			e->ss[e->nss].s = e->bx[y].S;
			e->nss++;
			e->H ^= hx(e, y, e->bx[y].S) ^ hx(e, y, t);
			e->bx[y].S = t;
		}
	}
	e->placed[x] = 1;
	e->off[x] = o;
	e->H ^= hx(e, x, e->bx[x].S);
	return ok;
}

static void unplace(struct ex *e)
{
	struct rec *r = &e->rec[--e->nrec];
	uint32_t x = r->x, lo = e->bx[x].lo, hi = e->bx[x].hi, s;
	uint64_t sz = e->bx[x].sz;

	e->H ^= hx(e, x, e->bx[x].S);
	e->placed[x] = 0;
	while (e->nss > r->spos) {
		struct sprev *v = &e->ss[--e->nss];

		e->H ^= hx(e, v->x, e->bx[v->x].S) ^ hx(e, v->x, v->s);
		e->bx[v->x].S = v->s;
	}
	for (s = lo; s + 1 < hi; s++)
		e->cnt[s]++;
	st_add(e, 1, 0, e->tsize, lo, hi, (int64_t)sz);
	for (s = lo; s < hi; s++) {
		e->R[s] += sz;
		e->f[s] = e->fs[r->fpos + (s - lo)];
	}
	e->nf = r->fpos;
}

static void undo_to(struct ex *e, size_t nrec)
{
	while (e->nrec > nrec)
		unplace(e);
}

/* ------------------------------------------------------------ search */

static int search(struct ex *e, struct grp *g, uint64_t L, uint32_t lr);

/*
 * One section of local_bound(): the buffers alive in s, each at or above
 * its lowest place, stacked in that order must fit under the capacity
 * (the best order for stacking with release offsets).
 */
static int section_ok(struct ex *e, uint32_t s)
{
	uint64_t b1 = UINT64_MAX, b2 = UINT64_MAX, s1 = 0, t;
	uint32_t k;

	if (e->mark[s] == e->stamp)
		return 1;
	e->mark[s] = e->stamp;
	if (!e->R[s])
		return 1;
	/* the two lowest places; the lowest buffer's size */
	for (k = e->sbs[s]; k < e->sbs[s + 1]; k++) {
		uint32_t z = e->sb[k];
		uint64_t b;

		if (e->placed[z])
			continue;
		b = e->bb[z];
		if (b < b1) {
			b2 = b1;
			b1 = b;
			s1 = e->bx[z].sz;
		} else if (b < b2) {
			b2 = b;
		}
	}
	t = (b1 > e->f[s] ? b1 : e->f[s]);
	if (t + e->R[s] > e->cap)
		return 0;
	if (b2 == UINT64_MAX || (e->disabled & MD_EXACT_NO_STACKING))
		return 1;
	t += s1;
	if (b2 > t)
		t = b2;
	return t + e->R[s] - s1 <= e->cap;
}

/*
 * section_bound() after a move, on the sections it can have changed: those
 * of the buffer just placed and of the buffers whose skyline it raised.
 * Elsewhere the parent's check and the m + max R check imply this one.
 */
static int local_bound(struct ex *e)
{
	const struct rec *r = &e->rec[e->nrec - 1];
	uint32_t s, k;

	if (!++e->stamp) {
		memset(e->mark, 0, e->m * sizeof(*e->mark));
		e->stamp = 1;
	}
	for (s = e->bx[r->x].lo; s < e->bx[r->x].hi; s++)
		if (!section_ok(e, s))
			return 0;
	for (k = r->spos; k < e->nss; k++) {
		uint32_t y = e->ss[k].x;

		for (s = e->bx[y].lo; s < e->bx[y].hi; s++)
			if (!section_ok(e, s))
				return 0;
	}
	return 1;
}

/*
 * In each section s, every unplaced buffer crossing s starts at or above
 * its own c(x), so the bytes R(s) go above max(floor(s), min c(x)).
 */
static int section_bound(struct ex *e, const struct grp *g,
			 const struct cand *cv, uint32_t nu)
{
	uint64_t *P = e->P, cap = e->cap;
	uint32_t i, s;

	for (s = g->sa; s < g->sb; s++)
		P[s] = UINT64_MAX;
	for (i = 0; i < nu; i++) {
		uint32_t x = cv[i].x;
		uint64_t c = cv[i].b;

		for (s = e->bx[x].lo; s < e->bx[x].hi; s++)
			if (c < P[s])
				P[s] = c;
	}
	for (s = g->sa; s < g->sb; s++) {
		uint64_t v = P[s] > e->f[s] ? P[s] : e->f[s];

		if (e->R[s] && v + e->R[s] > cap)
			return 0;
	}
	return 1;
}

static int cand_less(const struct cand *a, const struct cand *b)
{
	return a->c < b->c || (a->c == b->c && a->r < b->r);
}

static int cand_cmp(const void *a, const void *b)
{
	return cand_less(a, b) ? -1 : cand_less(b, a);
}

static void sort_cands(struct cand *v, size_t n)
{
	size_t i, j;

	if (n > 24) {
		qsort(v, n, sizeof(*v), cand_cmp);
		return;
	}
	for (i = 1; i < n; i++) {
		struct cand t = v[i];

		for (j = i; j > 0 && cand_less(&t, &v[j - 1]); j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

static int comp_cmp(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;

	if (x->nu != y->nu)
		return x->nu < y->nu ? -1 : 1;
	return x->sa < y->sa ? -1 : x->sa > y->sa;
}

/*
 * The unplaced buffers ua[ub .. ub + nu) split at the boundaries zs[0..nz)
 * (ascending; no unplaced buffer crosses them). Solve each part alone.
 * Return: as search(); *parts is the number of non-empty parts (when < 2
 * nothing was done and the caller searches the group as a whole).
 */
static int solve_parts(struct ex *e, uint32_t ub, uint32_t nu, size_t nz,
		       uint64_t L, uint32_t lr, int *parts)
{
	uint32_t i, k, nb, *tmpc = NULL;
	struct grp *cp;
	size_t nrec0 = e->nrec, utop0 = e->utop;
	int ret = 1, np = 0;

	*parts = 0;
	cp = calloc(nz + 1, sizeof(*cp));
	tmpc = malloc((nu + 1) * sizeof(*tmpc));
	if (!cp || !tmpc) {
		e->nomem = 1;
		e->stop = 1;
		ret = -1;
		goto out;
	}
	for (k = 0; k <= nz; k++) {
		cp[k].sa = UINT32_MAX;
		cp[k].sb = 0;
	}
	for (i = 0; i < nu; i++) {
		uint32_t x = e->ua[ub + i], a = 0, b = (uint32_t)nz;

		/* parts left of x: boundaries z with z + 1 <= lo(x) */
		while (a < b) {
			uint32_t mid = (a + b) / 2;

			if (e->zs[mid] + 1 <= e->bx[x].lo)
				a = mid + 1;
			else
				b = mid;
		}
		tmpc[i] = a;
		cp[a].nu++;
		if (e->bx[x].lo < cp[a].sa)
			cp[a].sa = e->bx[x].lo;
		if (e->bx[x].hi > cp[a].sb)
			cp[a].sb = e->bx[x].hi;
	}
	for (k = 0; k <= nz; k++)
		np += cp[k].nu > 0;
	*parts = np;
	if (np < 2)
		goto out;
	if (grow((void **)&e->ua, &e->ucap, e->utop + nu, sizeof(*e->ua))) {
		e->nomem = 1;
		e->stop = 1;
		ret = -1;
		goto out;
	}
	nb = (uint32_t)e->utop;
	for (k = 0; k <= nz; k++) {
		cp[k].ub = nb;
		nb += cp[k].nu;
		cp[k].nu = 0;
	}
	for (i = 0; i < nu; i++) {
		struct grp *c = &cp[tmpc[i]];

		e->ua[c->ub + c->nu++] = e->ua[ub + i];
	}
	e->utop = nb;
	qsort(cp, nz + 1, sizeof(*cp), comp_cmp);
	for (k = 0; k <= nz && ret == 1; k++) {
		struct grp *c = &cp[k];
		uint64_t h = 0;

		if (!c->nu)
			continue;
		for (i = 0; i < c->nu; i++) {
			uint32_t x = e->ua[c->ub + i];

			h ^= hx(e, x, e->bx[x].S);
		}
		c->X = e->H ^ h;
		e->fresh = 1;
		ret = search(e, c, L, lr);
	}
	if (ret != 1)
		undo_to(e, nrec0);
	e->utop = utop0;
out:
	free(cp);
	free(tmpc);
	return ret;
}

/*
 * Complete group g from the current state (last offset L, its rank lr).
 * Return: 1 solved (the placements stay), 0 infeasible (state restored),
 * -1 stopped (state restored).
 */
static int search(struct ex *e, struct grp *g, uint64_t L, uint32_t lr)
{
	uint64_t minc = UINT64_MAX, m = UINT64_MAX, key, cap = e->cap;
	uint64_t e1 = UINT64_MAX, rmax;
	uint32_t nu = g->nu, i, ne = 0;
	size_t cbase = e->ctop;
	struct cand *cv;
	int ret;

	if (!nu)
		return 1;
	/* big groups make slow nodes: look at the clock more often */
	if ((!(++e->nodes & CHECK_EVERY) || nu > 4096) && check_limits(e))
		return -1;
	if (e->stop)
		return -1;
	if (e->nodes >= e->budget_end) {
		e->bstop = 1;
		return -1;
	}
	if (cbase + nu > MAX_CANDS || e->depth >= e->max_depth) {
		/* a limit, like the clock: not an error */
		e->stop = 1;
		e->why = MD_EXACT_STOP_TOO_BIG;
		return -1;
	}
	if (grow((void **)&e->ca, &e->ccap, cbase + nu, sizeof(*e->ca))) {
		e->nomem = 1;
		e->stop = 1;
		return -1;
	}
	cv = e->ca + cbase;
	for (i = 0; i < nu; i++) {
		uint32_t x = e->ua[g->ub + i];
		uint64_t c = lowfeas(e, x, e->bx[x].S), b = c, end;

		/*
		 * Not placeable now: below the last offset (or at it, of a
		 * lower rank). Something must first go under it, above L.
		 */
		if (c < L || (c == L && e->bx[x].rank < lr))
			b = L;
		if (b > cap - e->bx[x].sz)
			return 0;
		if (c < minc)
			minc = c;
		cv[i].c = c;
		cv[i].b = b;
		e->bb[x] = b;
		cv[i].x = x;
		cv[i].pos = i;
		cv[i].r = e->bx[x].rank;
		if (b < m)
			m = b;
		end = c + e->bx[x].sz;
		if (end < e1)
			e1 = end;
	}
	if (e->disabled & MD_EXACT_NO_SECTIONS) {
		rmax = 0;
		e->fresh = 0;
	} else {
		rmax = (uint64_t)st_max(e, 1, 0, e->tsize, g->sa, g->sb);
		if (m + rmax > cap)
			return 0;
		if (e->fresh) {
			e->fresh = 0;
			if (!section_bound(e, g, cv, nu))
				return 0;
		} else if (!local_bound(e)) {
			return 0;
		}
	}
	key = e->H ^ g->X ^ e->capkey;
	if (minc <= L)
		key ^= mix64(L ^ ((uint64_t)lr << 40) ^ 0x632be59bd9b4e019ULL);
	if (!(e->disabled & MD_EXACT_NO_MEMO) && memo_has(e, key))
		return 0;
	if (e->disabled & MD_EXACT_NO_DOMINANCE)
		e1 = UINT64_MAX;
	/* eligible: at or above L, and below the lowest end of all */
	for (i = 0; i < nu; i++)
		if (cv[i].b == cv[i].c && cv[i].c < e1 &&
		    cv[i].c + rmax <= cap &&
		    (e->twin[cv[i].x] == NONE || e->placed[e->twin[cv[i].x]] ||
		     (e->disabled & MD_EXACT_NO_SYMMETRY)) &&
		    (cv[i].c > L || cv[i].r > lr))
			cv[ne++] = cv[i];
	sort_cands(cv, ne);
	for (i = 0; i < ne; i++) {
		struct cand cd = e->ca[cbase + i];
		uint32_t *u = e->ua + g->ub, last = g->nu - 1, t;
		int zero, ok, hat;

		e->ctop = cbase + ne;
		ok = place(e, cd.x, cd.c, &zero, &hat);
		t = u[cd.pos];
		u[cd.pos] = u[last];
		u[last] = t;
		g->nu--;
		ret = 0;
		if (ok) {
			int parts = 0;

			e->depth++;
			if (zero && g->nu && !(e->disabled & MD_EXACT_NO_DECOMPOSE)) {
				uint32_t s, nz = 0;

				for (s = e->bx[cd.x].lo; s + 1 < e->bx[cd.x].hi; s++)
					if (!e->cnt[s])
						e->zs[nz++] = s;
				ret = solve_parts(e, g->ub, g->nu, nz, cd.c,
						  cd.r, &parts);
			}
			if (parts < 2)
				ret = search(e, g, cd.c, cd.r);
			e->depth--;
		}
		if (ret == 1)
			return 1;
		u = e->ua + g->ub;
		g->nu++;
		t = u[cd.pos];
		u[cd.pos] = u[last];
		u[last] = t;
		unplace(e);
		if (ret < 0) {
			e->ctop = cbase;
			return ret;
		}
		/*
		 * Hatless: nothing unplaced overlaps cd.x, so the rest did not
		 * depend on it. Every later sibling goes above it (or level,
		 * ranked after it), and cd.x, whose skyline nothing can raise
		 * now, could never be placed after one: they all fail too.
		 */
		if (!hat && !(e->disabled & MD_EXACT_NO_HATLESS))
			break;
	}
	e->ctop = cbase;
	if (!(e->disabled & MD_EXACT_NO_MEMO))
		memo_put(e, key);
	return 0;
}

/* ------------------------------------------------------------ setup */

static void ex_free(struct ex *e)
{
	free(e->orig);
	free(e->bx);
	free(e->nbs);
	free(e->nb);
	free(e->obs);
	free(e->ob);
	free(e->zb);
	free(e->live);
	free(e->f);
	free(e->R);
	free(e->off);
	free(e->cnt);
	free(e->placed);
	free(e->rec);
	free(e->fs);
	free(e->ss);
	free(e->mx);
	free(e->ad);
	free(e->zs);
	free(e->P);
	free(e->bb);
	free(e->twin);
	free(e->stk);
	free(e->sbs);
	free(e->sb);
	free(e->mark);
	free(e->ca);
	free(e->ua);
	free(e->memo);
	free(e->ranks);
}

/* Neighbour pairs above this make the exact search pointless. */
#define MAX_PAIRS	(8u << 20)

/*
 * Time neighbours by a sweep in start order: O(n log n + pairs). Two
 * buffers overlap in time iff their section spans intersect.
 */
static int build_neighbours(struct ex *e)
{
	size_t n = e->n, a, b, pairs = 0, k, pass;
	struct md_kv *kv;
	uint32_t *deg;

	kv = malloc((n + 1) * sizeof(*kv));
	deg = calloc(n + 1, sizeof(*deg));
	e->nbs = calloc(n + 1, sizeof(*e->nbs));
	if (!kv || !deg || !e->nbs)
		goto nomem;
	for (a = 0; a < n; a++)
		kv[a] = (struct md_kv){ e->bx[a].lo, (uint32_t)a };
	if (md_sort_kv(kv, n))
		goto nomem;
	for (pass = 0; pass < 2; pass++) {
		for (a = 0; a < n; a++) {
			uint32_t i = kv[a].idx;

			for (b = a + 1; b < n; b++) {
				uint32_t j = kv[b].idx;

				if (e->bx[j].lo >= e->bx[i].hi)
					break;
				if (!pass) {
					deg[i]++;
					deg[j]++;
					if (++pairs > MAX_PAIRS) {
						free(kv);
						free(deg);
						return -E2BIG;
					}
					continue;
				}
				k = e->nbs[i] + deg[i]++;
				e->nb[k] = j;
				k = e->nbs[j] + deg[j]++;
				e->nb[k] = i;
			}
		}
		if (pass)
			break;
		for (a = 0; a < n; a++)
			e->nbs[a + 1] = e->nbs[a] + deg[a];
		e->nb = malloc((2 * pairs + 1) * sizeof(*e->nb));
		if (!e->nb)
			goto nomem;
		memset(deg, 0, n * sizeof(*deg));
	}
	free(kv);
	free(deg);
	return 0;
nomem:
	free(kv);
	free(deg);
	return -ENOMEM;
}

/*
 * Identical buffers (same lifetime, size, alignment) are interchangeable:
 * each one waits for its identical predecessor in input order, so the
 * search never tries both ways round.
 */
static int find_twins(struct ex *e, const struct md_problem *p)
{
	struct md_kv *kv;
	size_t n = e->n, i, pass;

	kv = malloc((n + 1) * sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		kv[i] = (struct md_kv){ 0, (uint32_t)i };
	/* stable passes: equal buffers end up adjacent, in input order */
	for (pass = 0; pass < 4; pass++) {
		for (i = 0; i < n; i++) {
			const struct md_buffer *b = &p->bufs[e->orig[kv[i].idx]];

			kv[i].key = pass == 0 ? b->align : pass == 1 ? b->size :
				    pass == 2 ? b->upper : b->lower;
		}
		if (md_sort_kv(kv, n)) {
			free(kv);
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		const struct md_buffer *a, *b;

		e->twin[kv[i].idx] = NONE;
		if (!i)
			continue;
		a = &p->bufs[e->orig[kv[i - 1].idx]];
		b = &p->bufs[e->orig[kv[i].idx]];
		if (a->lower == b->lower && a->upper == b->upper &&
		    a->size == b->size && a->align == b->align)
			e->twin[kv[i].idx] = kv[i - 1].idx;
	}
	free(kv);
	return 0;
}

/*
 * Static rankings, tried in turn with growing node budgets. Letters are
 * keys, most significant first, all descending: T the most bytes alive in
 * any section of the buffer's lifetime, W its lifetime, A its area
 * (lifetime x size), Z its size; then input order.
 */
static const char *const orders[] = { "WAT", "TAW", "TWA" };
#define NORDER (sizeof(orders) / sizeof(orders[0]))

static int build_ranks(struct ex *e, const struct md_problem *p)
{
	size_t n = e->n, i, k, no = NORDER;
	struct md_kv *kv;
	e->norder = no;
	e->ranks = malloc((no * n + 1) * sizeof(*e->ranks));
	kv = malloc((n + 1) * sizeof(*kv));
	if (!e->ranks || !kv) {
		free(kv);
		return -ENOMEM;
	}
	for (k = 0; k < no; k++) {
		const char *o = orders[k];
		int c;

		for (i = 0; i < n; i++)
			kv[i] = (struct md_kv){ 0, (uint32_t)i };
		for (c = (int)strlen(o) - 1; c >= 0; c--) {
			for (i = 0; i < n; i++) {
				uint32_t x = kv[i].idx, s;
				const struct md_buffer *b = &p->bufs[e->orig[x]];
				uint64_t v = 0, w = b->upper - b->lower;

				switch (o[c]) {
				case 'T':
					for (s = e->bx[x].lo; s < e->bx[x].hi; s++)
						if (e->live[s] > v)
							v = e->live[s];
					break;
				case 'W':
					v = w;
					break;
				case 'A':
					v = w > UINT64_MAX / (b->size | 1) ?
					    UINT64_MAX : w * b->size;
					break;
				default:
					v = b->size;
					break;
				}
				kv[i].key = ~v;
			}
			if (md_sort_kv(kv, n)) {
				free(kv);
				return -ENOMEM;
			}
		}
		for (i = 0; i < n; i++)
			e->ranks[k * n + kv[i].idx] = (uint32_t)(i + 1);
	}
	free(kv);
	return 0;
}

/* Set up the search over the free buffers of p with size > 0. */
static int ex_init(struct ex *e, const struct md_problem *p,
		   unsigned int memo_mib)
{
	struct md_kv *kv = NULL;
	size_t n = 0, i, k, nfix = 0, nt = 0, nob = 0, msz;
	uint64_t seed = 0x243f6a8885a308d3ULL, tot = 0;
	int ret = -ENOMEM;

	memset(e, 0, sizeof(*e));
	for (i = 0; i < p->n; i++) {
		if (p->bufs[i].flags & MD_BUF_FIXED)
			nfix++;
		else if (p->bufs[i].size)
			n++;
	}
	e->n = n;
	e->orig = malloc((n + 1) * sizeof(*e->orig));
	kv = malloc((2 * p->n + 1) * sizeof(*kv));
	if (!e->orig || !kv)
		goto out;
	for (i = 0, k = 0; i < p->n; i++)
		if (!(p->bufs[i].flags & MD_BUF_FIXED) && p->bufs[i].size)
			e->orig[k++] = (uint32_t)i;

	/* sections: the distinct ends of free buffers */
	e->bx = calloc(n + 1, sizeof(*e->bx));
	e->zb = malloc((n + 1) * sizeof(*e->zb));
	if (!e->bx || !e->zb)
		goto out;
	for (i = 0; i < n; i++) {
		const struct md_buffer *b = &p->bufs[e->orig[i]];

		kv[2 * i] = (struct md_kv){ b->lower, (uint32_t)(2 * i) };
		kv[2 * i + 1] = (struct md_kv){ b->upper, (uint32_t)(2 * i + 1) };
		e->bx[i].sz = b->size;
		e->bx[i].al = b->align ? b->align : 1;
		e->zb[i] = mix64(seed += 0x9e3779b97f4a7c15ULL);
		tot += b->size;
		if (tot < b->size || tot > (uint64_t)INT64_MAX / 4) {
			ret = -E2BIG;
			goto out;
		}
	}
	if (md_sort_kv(kv, 2 * n))
		goto out;
	for (i = 0; i < 2 * n; i++) {
		uint32_t x = kv[i].idx;

		if (i && kv[i].key != kv[i - 1].key)
			nt++;
		if (x & 1)
			e->bx[x / 2].hi = (uint32_t)nt;
		else
			e->bx[x / 2].lo = (uint32_t)nt;
	}
	e->m = nt ? nt : 1;

	/* fixed buffers: obstacles of the free buffers alive with them */
	e->obs = calloc(n + 2, sizeof(*e->obs));
	if (!e->obs)
		goto out;
	if (nfix) {
		uint32_t *fx = malloc(nfix * sizeof(*fx)), nf = 0;

		if (!fx)
			goto out;
		for (k = 0; k < p->n; k++)
			if ((p->bufs[k].flags & MD_BUF_FIXED) && p->bufs[k].size)
				fx[nf++] = (uint32_t)k;
		for (i = 0; i < n; i++) {
			const struct md_buffer *b = &p->bufs[e->orig[i]];

			for (k = 0; k < nf; k++) {
				const struct md_buffer *c = &p->bufs[fx[k]];

				if (c->lower < b->upper && b->lower < c->upper)
					nob++;
			}
			e->obs[i + 1] = (uint32_t)nob;
			e->bx[i].nob = (uint32_t)(nob - e->obs[i]);
			if (nob > MAX_PAIRS) {
				free(fx);
				ret = -E2BIG;
				goto out;
			}
		}
		e->ob = malloc((2 * nob + 1) * sizeof(*e->ob));
		if (!e->ob) {
			free(fx);
			goto out;
		}
		nob = 0;
		for (i = 0; i < n; i++) {
			const struct md_buffer *b = &p->bufs[e->orig[i]];

			for (k = 0; k < nf; k++) {
				const struct md_buffer *c = &p->bufs[fx[k]];

				if (c->lower < b->upper && b->lower < c->upper) {
					e->ob[2 * nob] = c->offset;
					e->ob[2 * nob + 1] = c->offset + c->size;
					nob++;
				}
			}
		}
		free(fx);
	}

	ret = build_neighbours(e);
	if (ret)
		goto out;
	ret = -ENOMEM;

	msz = e->m + 1;
	e->live = calloc(msz, sizeof(*e->live));
	e->f = calloc(msz, sizeof(*e->f));
	e->R = calloc(msz, sizeof(*e->R));
	e->off = calloc(n + 1, sizeof(*e->off));
	e->cnt = calloc(msz, sizeof(*e->cnt));
	e->placed = calloc(n + 1, 1);
	e->rec = calloc(n + 1, sizeof(*e->rec));
	e->zs = calloc(msz, sizeof(*e->zs));
	e->P = calloc(msz, sizeof(*e->P));
	e->mark = calloc(msz, sizeof(*e->mark));
	e->sbs = calloc(msz + 1, sizeof(*e->sbs));
	e->bb = calloc(n + 1, sizeof(*e->bb));
	e->twin = malloc((n + 1) * sizeof(*e->twin));
	e->stk = malloc((2 * n + 2) * sizeof(*e->stk));
	if (!e->live || !e->f || !e->R || !e->off || !e->cnt ||
	    !e->placed || !e->rec || !e->zs || !e->P || !e->mark ||
	    !e->sbs || !e->bb || !e->twin || !e->stk)
		goto out;
	for (i = 0, k = 0; i < n; i++)
		k += e->bx[i].hi - e->bx[i].lo;
	if (k > 8 * (size_t)MAX_PAIRS) {
		ret = -E2BIG;	/* too long-lived to search */
		goto out;
	}
	e->fs = malloc((k + 1) * sizeof(*e->fs));
	e->sb = malloc((k + 1) * sizeof(*e->sb));
	e->nsss = e->nbs[n] + 1;
	e->ss = malloc(e->nsss * sizeof(*e->ss));
	if (!e->fs || !e->ss || !e->sb)
		goto out;
	for (i = 0; i < n; i++) {
		uint32_t s;

		for (s = e->bx[i].lo; s < e->bx[i].hi; s++) {
			e->live[s] += e->bx[i].sz;
			e->sbs[s + 1]++;
		}
	}
	for (i = 0; i < e->m; i++)
		e->sbs[i + 1] += e->sbs[i];
	memcpy(e->mark, e->sbs, e->m * sizeof(*e->mark));
	for (i = 0; i < n; i++) {
		uint32_t s;

		for (s = e->bx[i].lo; s < e->bx[i].hi; s++)
			e->sb[e->mark[s]++] = (uint32_t)i;
	}
	memset(e->mark, 0, e->m * sizeof(*e->mark));
	e->tsize = 1;
	while (e->tsize < e->m)
		e->tsize <<= 1;
	e->mx = calloc(2 * e->tsize, sizeof(*e->mx));
	e->ad = calloc(2 * e->tsize, sizeof(*e->ad));
	if (!e->mx || !e->ad)
		goto out;

	ret = find_twins(e, p);
	if (ret)
		goto out;
	ret = build_ranks(e, p);
	if (ret)
		goto out;
	ret = -ENOMEM;
	if (!memo_mib)
		memo_mib = 16;
	msz = ((size_t)memo_mib << 20) / sizeof(uint64_t);
	k = 4;
	while (k * 2 <= msz)
		k *= 2;
	e->memo = calloc(k, sizeof(*e->memo));
	if (!e->memo)
		goto out;
	e->memo_mask = k - 1;
	ret = 0;
out:
	free(kv);
	if (ret)
		ex_free(e);
	return ret;
}

/* Reset the state to nothing placed, for capacity cap. */
static void ex_reset(struct ex *e, uint64_t cap)
{
	size_t i, s;

	e->cap = cap;
	e->capkey = mix64(cap ^ 0x9c6e6877736c46e3ULL ^
			  ((uint64_t)e->order << 44));
	for (i = 0; i < e->n; i++)
		e->bx[i].S = 0;
	memset(e->f, 0, e->m * sizeof(*e->f));
	memset(e->placed, 0, e->n);
	memset(e->cnt, 0, e->m * sizeof(*e->cnt));
	memset(e->mx, 0, 2 * e->tsize * sizeof(*e->mx));
	memset(e->ad, 0, 2 * e->tsize * sizeof(*e->ad));
	e->nrec = e->nf = e->nss = 0;
	e->depth = 0;
	e->ctop = e->utop = 0;
	e->H = 0;
	for (s = 0; s < e->m; s++) {
		e->R[s] = e->live[s];
		if (e->R[s])
			st_add(e, 1, 0, e->tsize, s, s + 1, (int64_t)e->R[s]);
	}
	for (i = 0; i < e->n; i++) {
		uint32_t b;

		e->H ^= hx(e, (uint32_t)i, 0);
		for (b = e->bx[i].lo; b + 1 < e->bx[i].hi; b++)
			e->cnt[b]++;
	}
}

/*
 * Search for a placement within cap. Return: 1 found (e->off), 0 proven
 * infeasible, -1 stopped (limit, cancel or out of memory).
 */
static int ex_run(struct ex *e, uint64_t cap)
{
	struct grp g;
	uint32_t s, nz = 0;
	size_t i;
	int parts = 0, ret;

	ex_reset(e, cap);
	if (!e->n)
		return 1;
	if (grow((void **)&e->ua, &e->ucap, e->n, sizeof(*e->ua))) {
		e->nomem = 1;
		return -1;
	}
	for (i = 0; i < e->n; i++) {
		if (e->bx[i].sz > cap)
			return 0;
		e->ua[i] = (uint32_t)i;
	}
	e->utop = e->n;
	g.ub = 0;
	g.nu = (uint32_t)e->n;
	g.sa = 0;
	g.sb = (uint32_t)e->m;
	g.X = 0;
	for (s = 0; s + 1 < e->m; s++)
		if (!e->cnt[s])
			e->zs[nz++] = s;
	ret = 0;
	if (nz && !(e->disabled & MD_EXACT_NO_DECOMPOSE))
		ret = solve_parts(e, 0, g.nu, nz, 0, 0, &parts);
	if (parts < 2) {
		e->fresh = 1;
		ret = search(e, &g, 0, 0);
	}
	return ret;
}

/*
 * Search for a placement within cap: each ranking in turn with a node
 * budget that doubles every round (failed states stay in the memo, so a
 * restart skips what was refuted before). When lb < cap, every run is
 * paired with one at capacity lb: a tighter capacity prunes much harder,
 * and a plan within lb is a plan within cap (dropped once lb is refuted).
 * With @maxnodes (0: none) it gives up after about that many nodes.
 * Return: 1 found (e->off), 0 proven infeasible, -1 stopped (limit,
 * cancel or out of memory), -2 @maxnodes spent.
 */
static int ex_solve(struct ex *e, uint64_t cap, uint64_t lb,
		    uint64_t maxnodes)
{
	uint64_t budget = 4 * (uint64_t)e->n + 64, end = e->nodes + maxnodes;
	size_t k, i, norder = e->norder;
	int ret, try_lb = lb < cap && !(e->disabled & MD_EXACT_NO_LB_PAIR);

	if (e->disabled & MD_EXACT_NO_RESTARTS) {
		norder = 1;
		budget = maxnodes ? maxnodes : UINT64_MAX / 4;
	}
	for (;;) {
		for (k = 0; k < norder; k++) {
			int pass;

			e->order = k;
			for (i = 0; i < e->n; i++)
				e->bx[i].rank = e->ranks[k * e->n + i];
			for (pass = !try_lb; pass < 2; pass++) {
				e->bstop = 0;
				e->budget_end = e->nodes + budget;
				if (e->budget_end < e->nodes)
					e->budget_end = UINT64_MAX;
				ret = ex_run(e, pass ? cap : lb);
				if (e->nomem || e->stop)
					return -1;
				if (ret == 1)
					return 1;
				if (!ret && pass)
					return 0;
				if (!ret)
					try_lb = 0;
				if (maxnodes && e->nodes >= end)
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

/* A lower bound on the peak of every plan. */
static uint64_t lower_bound(const struct md_problem *p)
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

/* The search's offsets in problem order (fixed ones kept, empty ones 0). */
static void export(const struct ex *e, const struct md_problem *p,
		   uint64_t *out)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		out[i] = (p->bufs[i].flags & MD_BUF_FIXED) ? p->bufs[i].offset
							   : 0;
	for (i = 0; i < e->n; i++)
		out[e->orig[i]] = e->off[i];
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

	for (i = 0; i < sizeof(prune_names) / sizeof(prune_names[0]); i++)
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

		for (i = 0; i < sizeof(prune_names) / sizeof(prune_names[0]); i++)
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
	free(res->steps);
	memset(res, 0, sizeof(*res));
}

/* Minimize mode: note a lower best peak (a report: never fails). */
static void add_step(struct md_exact_result *res, double seconds,
		     uint64_t peak, uint64_t iteration)
{
	struct md_exact_step *t;

	if (res->nsteps && res->steps[res->nsteps - 1].peak <= peak)
		return;
	if (res->nsteps >= 4096)
		return;
	t = realloc(res->steps, (res->nsteps + 1) * sizeof(*t));
	if (!t)
		return;
	res->steps = t;
	t[res->nsteps].seconds = seconds;
	t[res->nsteps].peak = peak;
	t[res->nsteps].iteration = iteration;
	res->nsteps++;
}

static int improve_slice(struct ex *e, const struct md_problem *p,
			 const struct md_exact_opts *opts,
			 struct md_exact_result *res, uint64_t *best,
			 uint64_t *ub, uint64_t lb, double seconds);

/* A plan the improvement phase works on, and its peak. */
struct line {
	uint64_t *off;
	uint64_t peak;
	unsigned int turn;
};

/*
 * Minimize mode on a large problem: the static-order strategies that
 * md_plan_solve() skipped for its work budget (@ran: those it ran), each
 * given at most a quarter of the time left. On training graphs the
 * lifetime and conflict orders end near the bound where the two that fit
 * the budget do not. (The dynamic orders are left out: at 3*10^4 buffers
 * one of them takes about a minute.)
 */
static int more_strategies(struct ex *e, const struct md_problem *p,
			   const struct md_exact_opts *opts,
			   struct md_exact_result *res, uint64_t *best,
			   uint64_t *ub, uint64_t lb, uint32_t ran,
			   struct line *alt)
{
	uint64_t start = *ub;
	static const int order[] = {
		MD_STRAT_CONFLICT, MD_STRAT_LIFETIME, MD_STRAT_AREA,
		MD_STRAT_SIZE_BEST, MD_STRAT_SIZE_FIRST, MD_STRAT_START,
	};
	size_t k;

	for (k = 0; k < sizeof(order) / sizeof(order[0]) && *ub > lb; k++) {
		struct md_plan_opts po = { .strategy = order[k] };
		struct md_plan pl;
		int ret;

		if (ran & (1u << order[k]))
			continue;
		if (opts->cancel && *opts->cancel)
			break;
		if (opts->time_limit > 0) {
			double left = opts->time_limit - elapsed(e);

			if (left <= 0.01)
				break;
			po.time_limit = left / 4;
		}
		ret = md_plan_solve(p, &po, &pl);
		if (ret == -ENOMEM)
			return ret;
		if (ret)
			continue;	/* out of time, or past 2^64 this way */
		if (pl.peak < *ub) {
			if (*ub == start && !alt->off) {
				/* the first plan becomes the second line */
				alt->off = malloc(p->n * sizeof(*alt->off));
				if (alt->off) {
					memcpy(alt->off, best,
					       p->n * sizeof(*best));
					alt->peak = start;
				}
			}
			memcpy(best, pl.offsets, p->n * sizeof(*best));
			*ub = pl.peak;
			add_step(res, elapsed(e), *ub, res->improve_iters);
		}
		md_plan_free(&pl);
	}
	return 0;
}

/*
 * Two lines take turns in the improvement phase when another order beat
 * md_plan_solve()'s first plan: the best plan, and that first plan (the
 * search finds different ways down from different plans: on a BERT trace
 * from the first it reached 1.017x the bound, from the best, 1.053x, it
 * found nothing in 20 s). Whichever gets lower is the best plan.
 */
static int improve_turn(struct ex *e, const struct md_problem *p,
			const struct md_exact_opts *opts,
			struct md_exact_result *res, uint64_t *best,
			uint64_t *ub, uint64_t lb, double seconds,
			struct line *alt)
{
	int ret;

	if (!alt->off || !(alt->turn++ & 1))
		return improve_slice(e, p, opts, res, best, ub, lb, seconds);
	ret = improve_slice(e, p, opts, res, alt->off, &alt->peak, lb,
			    seconds);
	if (!ret && alt->peak < *ub) {
		memcpy(best, alt->off, p->n * sizeof(*best));
		*ub = alt->peak;
		res->heuristic = 0;
	}
	return ret;
}

/*
 * Minimize mode: improve @best (peak *@ub) by md_plan_improve() for
 * @seconds (<= 0: until the limit or, without one, until it stalls).
 */
static int improve_slice(struct ex *e, const struct md_problem *p,
			 const struct md_exact_opts *opts,
			 struct md_exact_result *res, uint64_t *best,
			 uint64_t *ub, uint64_t lb, double seconds)
{
	struct md_improve_opts io = { 0 };
	struct md_improve_result ir;
	double now = elapsed(e);
	size_t i;
	int ret;

	if (opts->time_limit > 0) {
		double left = opts->time_limit - now;

		if (left <= 0)
			return 0;
		io.time_limit = seconds > 0 && seconds < left ? seconds : left;
	} else {
		io.time_limit = seconds;
	}
	if (opts->improve_iters) {
		/* a count, not the clock, ends the slice: reproducible */
		io.max_iters = opts->improve_iters;
		io.time_limit = opts->time_limit > 0 ?
				opts->time_limit - now : 0;
	}
	io.seed = (opts->seed ? opts->seed : 0x5851f42d4c957f2dULL) +
		  res->improve_iters * 0x9e3779b97f4a7c15ULL;
	io.lower_bound = lb;
	io.cancel = opts->cancel;
	ret = md_plan_improve(p, best, &io, &ir);
	if (ret)
		return ret;
	for (i = 1; i < ir.nsteps; i++)
		add_step(res, now + ir.steps[i].seconds, ir.steps[i].peak,
			 res->improve_iters + ir.steps[i].iteration);
	res->improve_iters += ir.iterations;
	if (ir.peak < *ub) {
		*ub = ir.peak;
		res->heuristic = 0;
	}
	md_improve_result_free(&ir);
	if (e->progress) {
		e->best_peak = *ub;
		e->proven_lb = lb;
		report(e, elapsed(e));
	}
	return 0;
}

static int exact_solve(const struct md_problem *p,
		       const struct md_exact_opts *opts,
		       struct md_exact_result *res, size_t stack)
{
	struct md_exact_opts def = { 0 };
	struct md_plan heur;
	struct timespec t0;
	struct ex e;
	uint64_t *best = NULL, lb, ub;
	struct line alt = { 0 };
	int ret, r, have_search = 0, large;
	double slice, deadline;
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
	lb = lower_bound(p);
	res->n = p->n;
	res->capacity = opts->capacity;
	res->heuristic = 1;

	memset(&e, 0, sizeof(e));
	e.t0 = t0;

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

	ret = ex_init(&e, p, opts->memo_mib);
	e.t0 = t0;	/* the clock runs from the call, heuristics included */
	if (ret == -E2BIG) {
		/*
		 * Too big to search: in minimize mode the improvement phase
		 * has the time; otherwise the heuristic is the answer.
		 */
		res->status = MD_EXACT_LIMIT;
		res->stopped = MD_EXACT_STOP_TOO_BIG;
		ret = 0;
		if (opts->minimize) {
			e.progress = opts->progress;
			e.progress_arg = opts->progress_arg;
			add_step(res, elapsed(&e), ub, 0);
			ret = more_strategies(&e, p, opts, res, best, &ub, lb,
					      heur.ran, &alt);
			/* slices of 2 s: the two lines take turns */
			while (!ret && ub > lb &&
			       !(opts->cancel && *opts->cancel) &&
			       opts->time_limit > 0 &&
			       elapsed(&e) < opts->time_limit)
				ret = improve_turn(&e, p, opts, res, best, &ub,
						   lb, alt.off ? 2.0 : 0, &alt);
			if (!ret && ub > lb && opts->time_limit <= 0)
				ret = improve_slice(&e, p, opts, res, best,
						    &ub, lb, 0);
			if (ret)
				goto out;
			if (ub <= lb) {
				lb = ub;
				res->status = MD_EXACT_OPTIMAL;
				res->proven = 1;
				res->stopped = MD_EXACT_STOP_NONE;
			} else if (opts->cancel && *opts->cancel) {
				res->stopped = MD_EXACT_STOP_CANCEL;
			} else if (opts->time_limit > 0) {
				res->stopped = MD_EXACT_STOP_TIME;
			}
		}
		goto done;
	}
	if (ret)
		goto out;
	have_search = 1;
	e.disabled = opts->disable;
	e.max_nodes = opts->max_nodes;
	e.max_depth = stack > STACK_SPARE ?
		      (uint32_t)((stack - STACK_SPARE) / FRAME_BYTES) : 0;
	e.deadline = opts->time_limit;
	e.cancel = opts->cancel;
	e.progress = opts->progress;
	e.progress_arg = opts->progress_arg;
	e.best_peak = ub;
	e.proven_lb = lb;

	if (!opts->minimize) {
		r = ex_solve(&e, opts->capacity, lb, 0);
		if (e.nomem) {
			ret = -ENOMEM;
			goto out;
		}
		if (r == 1) {
			export(&e, p, best);
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
	budget = 8 * (uint64_t)e.n + 4096;
	add_step(res, elapsed(&e), ub, 0);
	/*
	 * Large problems: search rounds and improvement slices take turns,
	 * each round cut off when its slice of time is spent (a search of
	 * thousands of buffers may not settle a round in the whole limit).
	 */
	large = p->n > MD_EXACT_IMPROVE_MIN;
	slice = 0.1;
	deadline = e.deadline;
	if (large) {
		ret = more_strategies(&e, p, opts, res, best, &ub, lb,
				      heur.ran, &alt);
		if (ret)
			goto out;
	}
	while (lb < ub) {
		uint64_t caps[2] = { ub - 1, lb + (ub - lb) / 2 };
		double round_start = elapsed(&e);
		int k, settled = 0;

		for (k = 0; k < 2 && !settled; k++) {
			if (k && caps[1] >= caps[0])
				break;
			e.best_peak = ub;
			e.proven_lb = lb;
			if (large) {
				/* the round ends when its slice does */
				double end = elapsed(&e) + slice;

				e.deadline = opts->time_limit > 0 &&
					     opts->time_limit < end ?
					     opts->time_limit : end;
			}
			r = ex_solve(&e, caps[k], lb, budget);
			if (e.nomem) {
				ret = -ENOMEM;
				goto out;
			}
			if (r == -1 && large && e.why == MD_EXACT_STOP_TIME &&
			    !(opts->time_limit > 0 &&
			      elapsed(&e) >= opts->time_limit)) {
				/* only the slice ran out: go on */
				e.stop = 0;
				e.why = MD_EXACT_STOP_NONE;
				r = -2;
			}
			if (r == -1)
				goto limit;
			if (r == 1) {
				export(&e, p, best);
				res->heuristic = 0;
				ub = md_plan_peak(p, best);
				add_step(res, elapsed(&e), ub,
					 res->improve_iters);
				settled = 1;
			} else if (!r) {
				lb = caps[k] + 1;
				settled = 1;
			}
		}
		if (settled)
			continue;
		budget *= 2;
		/*
		 * A large problem the search cannot settle: as long again
		 * for the improvement phase, which may lower the best peak;
		 * the slices grow as the rounds do.
		 */
		if (large) {
			double took = elapsed(&e) - round_start;

			slice = took > slice ? took : slice;
			ret = improve_turn(&e, p, opts, res, best, &ub, lb,
					   slice, &alt);
			if (ret)
				goto out;
			slice *= 1.5;
			if (opts->time_limit > 0 &&
			    elapsed(&e) >= opts->time_limit) {
				e.why = MD_EXACT_STOP_TIME;
				goto limit;
			}
			if (opts->cancel && *opts->cancel) {
				e.why = MD_EXACT_STOP_CANCEL;
				goto limit;
			}
		}
	}
limit:
	e.deadline = deadline;
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
	res->nodes = e.nodes;
	res->seconds = elapsed(&e);
	if (!res->proven && !res->stopped)
		res->stopped = e.why ? e.why : MD_EXACT_STOP_TIME;
	if (e.progress) {
		e.best_peak = res->peak;
		e.proven_lb = lb;
		report(&e, res->seconds);
	}
	ret = 0;
out:
	if (have_search)
		ex_free(&e);
	free(alt.off);
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

	c.stack = STACK_SPARE + (n + 16) * (size_t)FRAME_BYTES;
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
