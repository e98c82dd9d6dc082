// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmetadef: an anytime improvement of a plan (large-neighbourhood search).
 *
 * A plan's peak is set by the buffers whose block ends at it. Each step
 * takes one of them, c, and a neighbourhood around it: a time window
 * around c's lifetime and an offset band [band, peak) at the top of the
 * plan. The buffers alive in the window whose block lies in the band are
 * taken out (at most a few hundred: the window narrows, or the band rises,
 * until they are few enough); everything else stays where it is. They are
 * placed again below a target T = peak - 1, the buffers that stayed being
 * obstacles clipped to the band [band, T) since nothing may go above T:
 * by md_exact_solve() in exact mode (its heuristics, then a short search)
 * when the sub-problem is small, by one heuristic strategy drawn at random
 * when it is not. When they fit, c and every other buffer taken out that
 * touched the peak are below it now: the count of buffers at the peak
 * falls, and when it reaches zero so does the peak. A failed step changes
 * nothing; a sub-problem whose own lower bound is above its capacity is
 * not even tried. The number taken out grows while steps keep failing and
 * shrinks after a success.
 *
 * Descent alone ends in a local optimum that every chain shares (measured
 * on a 33,130-buffer training trace: seeds 1 to 3 all stopped at the same
 * peak for a minute). So a chain whose count at the peak has not fallen
 * for LNS_SIDEWAYS_AFTER steps makes one step in two sideways: the peak
 * itself is the ceiling, and the step is kept when neither the count at
 * the peak nor the mass of the buffers moved (lifetime times top) grows,
 * so it packs the neighbourhood down while the peak stays. After
 * LNS_KICK_AFTER such steps it goes back to its best plan and kicks it:
 * one neighbourhood placed below a ceiling a little above the peak,
 * kept whatever it gives, then descent again (an iterated local search).
 * Each chain keeps its best plan apart from the one it walks on; that
 * best is what is compared and returned, so a kick never makes a result
 * worse. With two chains or more the first keeps to descent alone.
 * descent_only turns both off (the phase as it was).
 *
 * Neither moves a peak buffer whose life is long over a plan packed at
 * the peak's moments: no band near the top has room for it all along its
 * life, and one deep enough holds too many buffers to place again. Once
 * the count at the peak stalls, one step in LNS_EJECT_EVERY is an
 * ejection chain (eject_step()): the buffer goes into the lane of its
 * size cheapest to clear, and the buffers in it go to their lowest fit
 * below the peak or, a few levels deep, to lanes of their own.
 *
 * Every step is local (the sub-problem holds a few hundred buffers at
 * most), so a step costs about the same on 10^3 buffers as on 10^6, and
 * the search can run for as long as it is given. The seed and the number
 * of steps fix the result: the same seed and step count give the same
 * plan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <metadef/exact.h>
#include <metadef/plan.h>

#include "internal.h"
#include "itree.h"
#include "random.h"

/* Buffers taken out per step: the window grows from MIN towards MAX. */
#define LNS_FREE_MIN	24
#define LNS_FREE_MAX	320
/*
 * Buffers in one sub-problem, obstacles included: up to LNS_SUB_EXACT the
 * exact solver (its heuristics, then LNS_NODES search nodes), up to
 * LNS_SUB_MAX one heuristic strategy picked at random, beyond that none.
 */
#define LNS_SUB_EXACT	400
#define LNS_SUB_MAX	20000
#define LNS_NODES	1000
/* Without a time limit or a step count, stop after this many failures. */
#define LNS_STALL	4000
/* Chains (threads) at most; an epoch between their exchanges. */
#define LNS_THREADS_MAX	4
#define LNS_EPOCH_ITERS	64
#define LNS_EPOCH_SECONDS 0.25
/*
 * Sideways steps: after this many steps in a row that did not lower the
 * count at the peak, one step in two re-places its neighbourhood with the
 * peak itself as the ceiling, kept when the count at the peak does not
 * grow (a walk on the plateau of equal plans).
 */
#define LNS_SIDEWAYS_AFTER 32
/*
 * A kick: after this many, a chain goes back to its best plan and
 * re-places one neighbourhood with a ceiling above the peak (by 2^-10 to
 * 2^-17 of it), taken whatever it gives; descent goes on from there.
 */
#define LNS_KICK_AFTER	64
/*
 * An ejection chain (eject_step()): after LNS_SIDEWAYS_AFTER steps that
 * did not lower the count at the peak, one step in LNS_EJECT_EVERY; a
 * chain LNS_EJECT_DEPTH levels deep and of LNS_EJECT_MAX buffers at most.
 */
#define LNS_EJECT_EVERY	4
#define LNS_EJECT_DEPTH	3
#define LNS_EJECT_MAX	256
/* Most steps kept in the trajectory. */
#define LNS_TRAJ_MAX	4096

/*
 * The bytes alive at each moment (the plan does not change them) and a
 * max segment tree over them: the most alive at once during a lifetime.
 */
struct loadmax {
	uint64_t *ts;		/* the moments a lifetime starts or ends */
	uint64_t *tree;		/* 2 * n: leaf i, the load in [ts[i], ts[i+1]) */
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The index of @t in lm->ts (t is one of them). */
static size_t moment(const struct loadmax *lm, uint64_t t)
{
	size_t lo = 0, hi = lm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lm->ts[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int loadmax_init(struct loadmax *lm, const struct md_problem *p)
{
	size_t i, m = 0;
	uint64_t *d;

	memset(lm, 0, sizeof(*lm));
	lm->ts = malloc((2 * p->n + 1) * sizeof(*lm->ts));
	if (!lm->ts)
		return -ENOMEM;
	for (i = 0; i < p->n; i++) {
		lm->ts[m++] = p->bufs[i].lower;
		lm->ts[m++] = p->bufs[i].upper;
	}
	qsort(lm->ts, m, sizeof(*lm->ts), cmp_u64);
	for (i = 0, lm->n = 0; i < m; i++)
		if (!lm->n || lm->ts[lm->n - 1] != lm->ts[i])
			lm->ts[lm->n++] = lm->ts[i];
	lm->tree = calloc(2 * lm->n + 2, sizeof(*lm->tree));
	if (!lm->tree)
		return -ENOMEM;
	/* the load of each segment: differences, then their sums */
	d = lm->tree + lm->n;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];

		d[moment(lm, b->lower)] += b->size;
		d[moment(lm, b->upper)] -= b->size;
	}
	for (i = 1; i < lm->n; i++)
		d[i] += d[i - 1];
	for (i = lm->n - 1; i >= 1; i--)
		lm->tree[i] = lm->tree[2 * i] > lm->tree[2 * i + 1] ?
			      lm->tree[2 * i] : lm->tree[2 * i + 1];
	return 0;
}

static void loadmax_free(struct loadmax *lm)
{
	free(lm->ts);
	free(lm->tree);
}

/* The most bytes alive at once in [lower, upper). */
static uint64_t loadmax_at(const struct loadmax *lm, uint64_t lower,
			   uint64_t upper)
{
	size_t l = moment(lm, lower) + lm->n, r = moment(lm, upper) + lm->n;
	uint64_t m = 0;

	for (; l < r; l /= 2, r /= 2) {
		if (l & 1) {
			m = lm->tree[l] > m ? lm->tree[l] : m;
			l++;
		}
		if (r & 1) {
			r--;
			m = lm->tree[r] > m ? lm->tree[r] : m;
		}
	}
	return m;
}

struct lane_key;

struct lns {
	const struct md_problem *p;
	uint64_t *off;		/* the plan, improved in place */
	const struct md_itree *lifetimes;	/* shared by the chains */
	const struct loadmax *load;		/* shared too */
	uint64_t peak, at_peak;	/* max(off + size), how many reach it */
	uint64_t lb;		/* stop there: proven optimal */
	uint64_t align;		/* lcm of all alignments (0: unbounded) */
	uint64_t rng;
	size_t nfree;		/* buffers taken out now, target */
	/* scratch */
	uint32_t *near, *freed, *crit;
	uint64_t *saved;	/* the freed buffers' offsets before a step */
	uint64_t *boff;		/* this chain's best plan (off after a kick) */
	uint64_t bpeak, bat;	/* its peak and how many reach it */
	size_t near_cap, freed_cap;
	uint8_t *is_freed;
	struct md_problem sub;
	const struct md_improve_opts *o;
	struct timespec t0;
	/* this chain's epoch */
	uint64_t iters, accepted, fails;
	uint64_t flat;		/* steps since the count at the peak fell */
	int sideways;		/* 0: descent only (opts->descent_only) */
	struct lane_key *lbot, *ltop;	/* lane_pick()'s scratch */
	size_t lcap, near_n;
	uint64_t epoch_iters;	/* steps to run (0: until epoch_end) */
	double epoch_end;	/* seconds since t0 */
	int ret;
};

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static uint64_t top(const struct lns *s, uint32_t x)
{
	return s->off[x] + s->p->bufs[x].size;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* lcm of every alignment, 0 when it would pass 2^48 (no band then). */
static uint64_t all_alignments(const struct md_problem *p)
{
	uint64_t l = 1;
	size_t i;

	for (i = 0; i < p->n; i++) {
		uint64_t a = p->bufs[i].align ? p->bufs[i].align : 1;
		uint64_t g = gcd64(l, a);

		if (a / g > (1ULL << 48) / l)
			return 0;
		l = l / g * a;
	}
	return l;
}

static void find_peak(struct lns *s)
{
	size_t i;

	s->peak = 0;
	s->at_peak = 0;
	for (i = 0; i < s->p->n; i++) {
		uint64_t t;

		if (!s->p->bufs[i].size)
			continue;
		t = top(s, i);
		if (t > s->peak) {
			s->peak = t;
			s->at_peak = 0;
		}
		if (t == s->peak)
			s->at_peak++;
	}
}

static int grow32(uint32_t **a, size_t *cap, size_t need)
{
	uint32_t *t;
	size_t c = *cap ? *cap : 256;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	t = realloc(*a, c * sizeof(**a));
	if (!t)
		return -ENOMEM;
	*a = t;
	*cap = c;
	return 0;
}

static int by_offset_desc(const void *a, const void *b, void *arg)
{
	const struct lns *s = arg;
	uint64_t x = s->off[*(const uint32_t *)a];
	uint64_t y = s->off[*(const uint32_t *)b];

	if (x != y)
		return x < y ? 1 : -1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void note(struct md_improve_result *r, const struct timespec *t0,
		 uint64_t peak)
{
	struct md_exact_step *t;

	if (r->nsteps == LNS_TRAJ_MAX)
		return;
	t = realloc(r->steps, (r->nsteps + 1) * sizeof(*t));
	if (!t)
		return;		/* the trajectory is a report, not a result */
	r->steps = t;
	t[r->nsteps].seconds = seconds_since(t0);
	t[r->nsteps].peak = peak;
	t[r->nsteps].iteration = r->iterations;
	r->nsteps++;
}

/* The ids of every lifetime overlapping [lo, hi) into s->near. */
static int collect(struct lns *s, uint64_t lo, uint64_t hi, size_t *n)
{
	size_t k = md_itree_collect(s->lifetimes, lo, hi, s->near,
				    s->near_cap);

	if (k > s->near_cap) {
		int ret = grow32(&s->near, &s->near_cap, k);

		if (ret)
			return ret;
		k = md_itree_collect(s->lifetimes, lo, hi, s->near,
				     s->near_cap);
	}
	*n = k;
	return 0;
}

/*
 * The band's floor: walking down the stack alive at time @t from the
 * peak, the offset below which the free space found reaches @need (0
 * when the whole stack has less).
 */
static uint64_t band_floor(struct lns *s, uint64_t t, uint64_t need)
{
	uint64_t cur = s->peak, gap = 0;
	size_t n, i;

	if (collect(s, t, t + 1, &n))
		return 0;
	qsort_r(s->near, n, sizeof(*s->near), by_offset_desc, s);
	for (i = 0; i < n; i++) {
		uint32_t x = s->near[i];

		if (!s->p->bufs[x].size)
			continue;
		if (top(s, x) < cur)
			gap += cur - top(s, x);
		if (s->off[x] < cur)
			cur = s->off[x];
		if (gap >= need)
			return cur;
	}
	return 0;
}

static int movable(const struct lns *s, uint32_t x)
{
	const struct md_buffer *b = &s->p->bufs[x];

	return b->size && !(b->flags & MD_BUF_FIXED);
}

/*
 * Seconds a sub-problem may take: what is left of the time limit (0: no
 * limit; < 0: none left).
 */
static double time_left(const struct lns *s)
{
	double left;

	if (s->o->time_limit <= 0)
		return 0;
	left = s->o->time_limit - seconds_since(&s->t0);
	return left > 0.001 ? left : -1;
}

/* @v times 2^k / 4 (k <= 4), at least 1, saturating. */
static uint64_t scaled(uint64_t v, unsigned int k)
{
	uint64_t r;

	if (k <= 2)
		r = v >> (2 - k);
	else
		r = v > UINT64_MAX >> (k - 2) ? UINT64_MAX : v << (k - 2);
	return r ? r : 1;
}

/* @len times @r / 8 (r < 16), saturating. */
static uint64_t stretch(uint64_t len, uint64_t r)
{
	return len > UINT64_MAX / 16 ? len : len * r / 8;
}

/*
 * Whether @x, alive in the window, is taken out of the plan: it can move
 * and its block is in the band. (Taking only buffers whose whole life is
 * in the window makes smaller sub-problems, but measured on compiler-shaped
 * traces it finds far less: the long-lived buffers are the ones to move.)
 */
static int takes(const struct lns *s, uint32_t x, uint64_t band)
{
	return movable(s, x) && s->off[x] >= band;
}

/*
 * The band's floor from @v: no higher than c's offset (c is always taken
 * out), rounded down to a multiple of every alignment (0 when their lcm
 * is unbounded), so that offsets relative to it stay aligned.
 */
static uint64_t band_floor_at(const struct lns *s, uint32_t c, uint64_t v)
{
	if (v > s->off[c])
		v = s->off[c];
	return s->align ? v - v % s->align : 0;
}

/*
 * The freed buffers now at their new offsets: a sideways step (@side) is
 * kept only when the count of buffers at the peak did not grow, the old
 * offsets (s->saved) are put back otherwise. Return 1 when kept.
 */
static int keep_or_undo(struct lns *s, size_t nfreed, int side)
{
	uint64_t before = 0, after = 0;
	double mass0 = 0, mass1 = 0;
	size_t i;

	if (side != 1)
		return 1;
	for (i = 0; i < nfreed; i++) {
		const struct md_buffer *b = &s->p->bufs[s->freed[i]];
		double len = (double)(b->upper - b->lower);

		before += s->saved[i] + b->size == s->peak;
		after += top(s, s->freed[i]) == s->peak;
		mass0 += len * (double)(s->saved[i] + b->size);
		mass1 += len * (double)top(s, s->freed[i]);
	}
	if (after <= before && mass1 <= mass0)
		return 1;
	for (i = 0; i < nfreed; i++)
		s->off[s->freed[i]] = s->saved[i];
	return 0;
}

/* A block's bottom or top, with the weight of the buffer (size x life). */
struct lane_key {
	uint64_t key, end;
	double w;
	size_t hard;	/* 1: a buffer that may not move now */
};

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct lane_key *)a)->key;
	uint64_t y = ((const struct lane_key *)b)->key;

	return x < y ? -1 : x > y;
}

/* How many of the sorted @v[0..n) have a key below @x. */
static size_t keys_below(const struct lane_key *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].key < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int lane_grow(struct lns *s, size_t n)
{
	void *t;

	if (n <= s->lcap)
		return 0;
	n *= 2;
	t = realloc(s->lbot, n * sizeof(*s->lbot));
	if (!t)
		return -ENOMEM;
	s->lbot = t;
	t = realloc(s->ltop, n * sizeof(*s->ltop));
	if (!t)
		return -ENOMEM;
	s->ltop = t;
	s->lcap = n;
	return 0;
}

/*
 * A lane for @c: the offset range [*lane, *lane + size) of c's size,
 * below the peak and crossed by no fixed buffer alive with c, that the
 * movable ones alive with c cross least (by the sum of their sizes times
 * lifetimes: what must move to clear it), ties broken at random. Return
 * how many cross it, or a negative errno (-ERANGE: no lane). s->near
 * keeps the buffers alive with c, s->near_n of them.
 */
static long lane_pick(struct lns *s, uint32_t c, uint64_t *lane)
{
	const struct md_buffer *cb = &s->p->bufs[c];
	uint64_t a = cb->align ? cb->align : 1, sz = cb->size, best = 0;
	uint64_t ceil = s->peak - 1;
	size_t n, i, m = 0, bestn = 0, ties = 0;
	double bestw = -1;
	int ret;

	ret = collect(s, cb->lower, cb->upper, &n);
	if (ret)
		return ret;
	s->near_n = n;
	ret = lane_grow(s, n + 1);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		uint32_t x = s->near[i];
		const struct md_buffer *b = &s->p->bufs[x];
		uint64_t room;
		double w;

		if (x == c || !b->size || s->is_freed[x] == 1)
			continue;
		/*
		 * What it costs to move: its area, over the room left at
		 * the fullest moment of its life (little near the peak's
		 * moments, where everything is packed).
		 */
		room = s->peak - loadmax_at(s->load, b->lower, b->upper);
		w = (double)b->size * (double)(b->upper - b->lower) /
		    (double)(room ? room : 1);
		s->lbot[m].key = s->off[x];
		s->ltop[m].key = top(s, x);
		s->lbot[m].w = s->ltop[m].w = w;
		s->lbot[m].hard = s->ltop[m].hard =
			!movable(s, x) || s->is_freed[x];
		m++;
	}
	qsort(s->lbot, m, sizeof(*s->lbot), by_key);
	qsort(s->ltop, m, sizeof(*s->ltop), by_key);
	/* weights summed in place: entry i holds the sum of 0..i */
	for (i = 1; i < m; i++) {
		s->lbot[i].w += s->lbot[i - 1].w;
		s->ltop[i].w += s->ltop[i - 1].w;
		s->lbot[i].hard += s->lbot[i - 1].hard;
		s->ltop[i].hard += s->ltop[i - 1].hard;
	}
	/* the lanes: at 0 and on top of each block, aligned up */
	for (i = 0; i <= m; i++) {
		uint64_t l = i == 0 ? 0 : s->ltop[i - 1].key;
		size_t nb, nt;
		double w;

		l = (l + a - 1) / a * a;
		if (l > ceil || ceil - l < sz)
			continue;
		/* those starting below the lane's top, less those ended */
		nb = keys_below(s->lbot, m, l + sz);
		nt = keys_below(s->ltop, m, l + 1);
		if ((nb ? s->lbot[nb - 1].hard : 0) !=
		    (nt ? s->ltop[nt - 1].hard : 0))
			continue;	/* a fixed or placed buffer crosses it */
		w = (nb ? s->lbot[nb - 1].w : 0) - (nt ? s->ltop[nt - 1].w : 0);
		/* times 1 to 5 at random: chains try different lanes */
		w *= 1 + (double)(md_xorshift64(&s->rng) % 1024) / 256;
		if (bestw < 0 || w < bestw) {
			bestw = w;
			best = l;
			bestn = nb - nt;
			ties = 1;
		} else if (w == bestw && l != best &&
			   !(md_xorshift64(&s->rng) % ++ties)) {
			best = l;
			bestn = nb - nt;
		}
	}
	*lane = best;
	return bestw < 0 ? -ERANGE : (long)bestn;
}

/*
 * The lowest offset of @x's alignment where it fits below @ceil among the
 * buffers alive with it, those floating (s->is_freed == 1) left out, into
 * *@at. Return 1 when found, 0 when not, or a negative errno.
 */
static int fit_lowest(struct lns *s, uint32_t x, uint64_t ceil,
		      uint64_t *at)
{
	const struct md_buffer *xb = &s->p->bufs[x];
	uint64_t a = xb->align ? xb->align : 1, cand = 0;
	size_t n, i, m = 0;
	int ret;

	ret = collect(s, xb->lower, xb->upper, &n);
	if (!ret)
		ret = lane_grow(s, n + 1);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		uint32_t y = s->near[i];

		if (y == x || !s->p->bufs[y].size || s->is_freed[y] == 1)
			continue;
		s->lbot[m].key = s->off[y];
		s->lbot[m++].end = top(s, y);
	}
	qsort(s->lbot, m, sizeof(*s->lbot), by_key);
	for (i = 0; i < m; i++) {
		if (cand > ceil || ceil - cand < xb->size)
			return 0;
		if (s->lbot[i].key >= cand + xb->size)
			break;
		if (s->lbot[i].end > cand)
			cand = (s->lbot[i].end + a - 1) / a * a;
	}
	if (cand > ceil || ceil - cand < xb->size)
		return 0;
	*at = cand;
	return 1;
}

/*
 * An ejection chain from @c, which no step lowers (a long life over a
 * plan full near the peak): c goes to the lowest place where it fits
 * below the peak, or, when there is none, to the lane of lane_pick(),
 * and the buffers in that lane are ejected: each of them in turn goes to
 * its lowest place below the peak or to its own lane, ejecting others,
 * LNS_EJECT_DEPTH levels deep and LNS_EJECT_MAX buffers at most. A buffer
 * placed is not ejected again. When every ejected buffer found a place,
 * c is below the peak (return 1); otherwise nothing changed (return 0).
 * A negative errno on failure.
 */
static int eject_step(struct lns *s, uint32_t c)
{
	uint32_t q[LNS_EJECT_MAX];
	uint64_t old[LNS_EJECT_MAX];
	uint8_t depth[LNS_EJECT_MAX];
	uint64_t ceil = s->peak - 1;
	size_t head = 0, tail = 1, i, n;
	int ret = 1;

	if (s->peak < 2)
		return 0;
	q[0] = c;
	old[0] = s->off[c];
	depth[0] = 0;
	s->is_freed[c] = 1;
	while (head < tail && ret == 1) {
		uint32_t x = q[head];
		const struct md_buffer *xb = &s->p->bufs[x];
		uint8_t d = depth[head++];
		uint64_t at = 0;
		long k;

		if (time_left(s) < 0) {
			ret = 0;	/* the limit: nothing changes */
			break;
		}
		ret = fit_lowest(s, x, ceil, &at);
		if (ret < 0)
			break;
		if (ret) {
			s->off[x] = at;
			s->is_freed[x] = 2;
			continue;
		}
		if (d >= LNS_EJECT_DEPTH)
			break;
		k = lane_pick(s, x, &at);
		if (k < 0) {
			ret = k == -ERANGE ? 0 : (int)k;
			break;
		}
		if (tail + (size_t)k > LNS_EJECT_MAX) {
			ret = 0;
			break;
		}
		s->off[x] = at;
		s->is_freed[x] = 2;
		n = s->near_n;
		for (i = 0; i < n; i++) {
			uint32_t y = s->near[i];

			if (y == x || s->is_freed[y] || !s->p->bufs[y].size ||
			    s->off[y] >= at + xb->size || top(s, y) <= at)
				continue;
			q[tail] = y;
			old[tail] = s->off[y];
			depth[tail++] = d + 1;
			s->is_freed[y] = 1;
		}
		ret = 1;
	}
	if (ret != 1 || head < tail) {
		for (i = 0; i < tail; i++)
			s->off[q[i]] = old[i];
		ret = ret < 0 ? ret : 0;
	}
	for (i = 0; i < tail; i++)
		s->is_freed[q[i]] = 0;
	return ret;
}

/*
 * One step around buffer @c: below the peak, or, when @side, no higher
 * than the peak (a sideways step, kept when the count at the peak does
 * not grow). Return 1 when the plan changed, 0 when it did not, or a
 * negative errno.
 */
static int step(struct lns *s, uint32_t c, int side)
{
	const struct md_problem *p = s->p;
	const struct md_buffer *cb = &p->bufs[c];
	struct md_exact_opts eo = { 0 };
	struct md_exact_result er;
	uint64_t len = cb->upper - cb->lower, w0, w1, band, target, span0, span1;
	uint64_t ext0, ext1, need, t = cb->lower;
	size_t nnear, nfreed = 0, i, k;
	int ret, changed = 0, tries, gap, attempt;

	/*
	 * The band: in one step of two, down to the offset where, at each
	 * of a few moments of c's life, it holds free space for c's size
	 * times 1/4 to 4 (room to move into), and the window is narrowed
	 * until few enough buffers are taken; in the other, the band is
	 * what the nfree highest buffers of the stretched window span.
	 */
	gap = md_xorshift64(&s->rng) & 1;
	band = 0;
	if (gap) {
		need = scaled(cb->size, md_xorshift64(&s->rng) % 5);
		band = UINT64_MAX;
		for (k = 0; k < 6 && band; k++) {
			uint64_t tk = k == 0 ? cb->lower :
				      k == 1 ? cb->upper - 1 :
				      cb->lower + md_xorshift64(&s->rng) % len;
			uint64_t f = band_floor(s, tk, need);

			band = f < band ? f : band;
			if (k == 2)
				t = tk;
			if (len == 1)
				break;
		}
		band = band_floor_at(s, c, band);
	}
	if (side == 2)
		target = s->peak +
			 (s->peak >> (10 + md_xorshift64(&s->rng) % 10));
	else
		target = side ? s->peak : s->peak - 1;
	if (target < s->peak - 1)
		target = UINT64_MAX - 1;	/* the kick overflowed */

	/*
	 * The window: c's lifetime, stretched on both sides at random; when
	 * that frees too many, c's lifetime, then the moment t alone.
	 */
	ext0 = stretch(len, md_xorshift64(&s->rng) % 16);
	ext1 = stretch(len, md_xorshift64(&s->rng) % 16);
	w0 = cb->lower > ext0 ? cb->lower - ext0 : 0;
	w1 = cb->upper + ext1 < cb->upper ? UINT64_MAX : cb->upper + ext1;
	for (tries = 0; tries < 3; tries++) {
		if (tries == 1) {
			w0 = cb->lower;
			w1 = cb->upper;
		} else if (tries == 2) {
			w0 = t;
			w1 = t + 1;
		}
		ret = collect(s, w0, w1, &nnear);
		if (ret)
			return ret;
		for (i = k = 0; i < nnear; i++)
			k += takes(s, s->near[i], band);
		if (k <= s->nfree || !gap)
			break;
	}
	if (k > s->nfree) {
		size_t want = s->nfree / 2 +
			      md_xorshift64(&s->rng) % (s->nfree / 2 + 1);

		/* still too many: the highest of them, c among them */
		qsort_r(s->near, nnear, sizeof(*s->near), by_offset_desc, s);
		for (i = k = 0; i < nnear && k < want; i++)
			k += takes(s, s->near[i], 0);
		band = band_floor_at(s, c, s->off[s->near[i - 1]]);
	}
	for (attempt = 0;; attempt++) {
		for (i = 0; i < nnear; i++) {
			uint32_t x = s->near[i];

			if (x == c || takes(s, x, band)) {
				s->freed[nfreed++] = x;
				s->is_freed[x] = 1;
			}
		}
		/* A band that is too wide (equal offsets) is not searched. */
		if (nfreed > 2 * LNS_FREE_MAX || !nfreed)
			goto out;

		/* The freed buffers' lifetimes: the obstacles are alive there. */
		span0 = UINT64_MAX;
		span1 = 0;
		for (i = 0; i < nfreed; i++) {
			const struct md_buffer *b = &p->bufs[s->freed[i]];

			span0 = b->lower < span0 ? b->lower : span0;
			span1 = b->upper > span1 ? b->upper : span1;
		}
		ret = collect(s, span0, span1, &nnear);
		if (ret)
			goto out_err;

		s->sub.n = 0;
		for (i = 0; i < nfreed; i++) {
			const struct md_buffer *b = &p->bufs[s->freed[i]];

			ret = md_problem_add(&s->sub, NULL, b->lower, b->upper,
					     b->size, b->align);
			if (ret)
				goto out_err;
		}
		for (i = 0; i < nnear; i++) {
			uint32_t y = s->near[i];
			const struct md_buffer *b = &p->bufs[y];
			uint64_t lo, hi;
			struct md_buffer *f;

			if (s->is_freed[y] || !b->size)
				continue;
			lo = s->off[y] > band ? s->off[y] : band;
			hi = top(s, y) < target ? top(s, y) : target;
			if (hi <= lo)
				continue;	/* wholly outside [band, target) */
			ret = md_problem_add(&s->sub, NULL, b->lower, b->upper,
					     hi - lo, 1);
			if (ret)
				goto out_err;
			f = &s->sub.bufs[s->sub.n - 1];
			f->flags = MD_BUF_FIXED;
			f->offset = lo - band;
		}

		eo.capacity = target - band;
		if (s->sub.n > LNS_SUB_MAX)
			goto out;	/* too crowded to search in one step */
		if (md_problem_lower_bound(&s->sub, NULL) <= eo.capacity)
			break;
		/*
		 * No room in the band at some moment of a buffer taken out
		 * that touches the peak: twice as deep, twice more at most.
		 */
		for (i = 0; i < nfreed; i++)
			s->is_freed[s->freed[i]] = 0;
		nfreed = 0;
		if (attempt == 2 || !band)
			goto out;
		band = band_floor_at(s, c, band > s->peak - band ?
					     band - (s->peak - band) : 0);
		ret = collect(s, w0, w1, &nnear);
		if (ret)
			return ret;
	}
	if (s->sub.n > LNS_SUB_EXACT) {
		struct md_plan_opts po = { 0 };
		struct md_plan pl;

		po.strategy = md_xorshift64(&s->rng) % MD_STRAT_COUNT;
		po.time_limit = time_left(s);
		if (po.time_limit < 0)
			goto out;
		ret = md_plan_solve(&s->sub, &po, &pl);
		if (ret == -ENOMEM)
			goto out_err;
		if (ret)
			goto out;	/* e.g. -EOVERFLOW: no plan this way */
		if (pl.peak <= eo.capacity) {
			for (i = 0; i < nfreed; i++) {
				s->saved[i] = s->off[s->freed[i]];
				s->off[s->freed[i]] = band + pl.offsets[i];
			}
			changed = keep_or_undo(s, nfreed, side);
		}
		md_plan_free(&pl);
		goto out;
	}
	eo.max_nodes = LNS_NODES;
	eo.time_limit = time_left(s);
	if (eo.time_limit < 0)
		goto out;
	eo.memo_mib = 1;	/* a default table costs more than the step */
	eo.cancel = s->o->cancel;
	ret = md_exact_solve(&s->sub, &eo, &er);
	if (ret == -ENOMEM)
		goto out_err;
	if (ret)
		goto out;
	if (er.status == MD_EXACT_FEASIBLE && er.peak <= eo.capacity) {
		for (i = 0; i < nfreed; i++) {
			s->saved[i] = s->off[s->freed[i]];
			s->off[s->freed[i]] = band + er.offsets[i];
		}
		changed = keep_or_undo(s, nfreed, side);
	}
	md_exact_result_free(&er);
out:
	for (i = 0; i < nfreed; i++)
		s->is_freed[s->freed[i]] = 0;
	return changed;
out_err:
	for (i = 0; i < nfreed; i++)
		s->is_freed[s->freed[i]] = 0;
	return ret;
}

/* A chain whose plan is worse than its best takes its best again. */
static void back_to_best(struct lns *s)
{
	if (s->peak == s->bpeak && s->at_peak == s->bat)
		return;
	memcpy(s->off, s->boff, s->p->n * sizeof(*s->off));
	s->peak = s->bpeak;
	s->at_peak = s->bat;
}

/* The stops that end a chain's epoch early: a proof, cancel, the limit. */
static int chain_stop(const struct lns *s)
{
	const struct md_improve_opts *o = s->o;

	if (s->bpeak <= s->lb || (o->cancel && *o->cancel))
		return 1;
	return o->time_limit > 0 && seconds_since(&s->t0) >= o->time_limit;
}

/* One chain for one epoch: steps around buffers at its peak. */
static void *run_chain(void *arg)
{
	struct lns *s = arg;
	const struct md_problem *p = s->p;
	uint64_t done = 0;
	size_t i;

	s->ret = 0;
	while (!chain_stop(s)) {
		size_t ncrit = 0;
		uint64_t was, peak;
		int ret, side = 0, eject = 0;
		uint32_t c;

		if (s->epoch_iters ? done >= s->epoch_iters :
		    seconds_since(&s->t0) >= s->epoch_end)
			break;
		if (s->sideways && s->flat >= LNS_KICK_AFTER) {
			back_to_best(s);
			side = 2;
			s->flat = 0;
		} else if (!s->o->descent_only && !s->o->no_eject &&
			   s->flat >= LNS_SIDEWAYS_AFTER &&
			   !(md_xorshift64(&s->rng) % LNS_EJECT_EVERY)) {
			eject = 1;
		} else if (s->sideways && s->flat >= LNS_SIDEWAYS_AFTER) {
			side = md_xorshift64(&s->rng) & 1;
		}
		was = s->at_peak;
		peak = s->peak;
		for (i = 0; i < p->n; i++)
			if (movable(s, i) && top(s, i) == s->peak)
				s->crit[ncrit++] = i;
		if (!ncrit)
			break;	/* fixed buffers hold the peak */
		done++;
		s->iters++;
		c = s->crit[md_xorshift64(&s->rng) % ncrit];
		ret = eject ? eject_step(s, c) : step(s, c, side);
		if (ret < 0) {
			s->ret = ret;
			break;
		}
		if (ret) {
			s->accepted++;
			find_peak(s);
			if (s->peak < s->bpeak ||
			    (s->peak == s->bpeak && s->at_peak < s->bat)) {
				memcpy(s->boff, s->off,
				       p->n * sizeof(*s->boff));
				s->bpeak = s->peak;
				s->bat = s->at_peak;
			}
		}
		if (side == 2) {
			/* a kick: descent goes on from here */
		} else if (ret && (s->peak < peak || s->at_peak < was)) {
			s->flat = 0;
			s->fails = 0;
			if (s->nfree > LNS_FREE_MIN)
				s->nfree = s->nfree * 3 / 4;
		} else {
			s->flat++;
			if (side)
				continue;	/* the window size is descent's */
			s->fails++;
			if (!(s->fails % 16) && s->nfree < LNS_FREE_MAX)
				s->nfree = s->nfree * 3 / 2;
		}
	}
	return NULL;
}

static int chain_init(struct lns *s, const struct md_problem *p,
		      const uint64_t *offsets)
{
	size_t n = p->n ? p->n : 1;

	s->off = malloc(n * sizeof(*s->off));
	s->freed = malloc(n * sizeof(*s->freed));
	s->crit = malloc(n * sizeof(*s->crit));
	s->saved = malloc(n * sizeof(*s->saved));
	s->boff = malloc(n * sizeof(*s->boff));
	s->is_freed = calloc(n, 1);
	md_problem_init(&s->sub);
	if (!s->off || !s->freed || !s->crit || !s->saved || !s->boff ||
	    !s->is_freed || grow32(&s->near, &s->near_cap, 1024))
		return -ENOMEM;
	memcpy(s->off, offsets, p->n * sizeof(*s->off));
	memcpy(s->boff, offsets, p->n * sizeof(*s->boff));
	s->nfree = LNS_FREE_MIN;
	return 0;
}

static void chain_free(struct lns *s)
{
	free(s->off);
	free(s->freed);
	free(s->crit);
	free(s->saved);
	free(s->boff);
	free(s->is_freed);
	free(s->near);
	free(s->lbot);
	free(s->ltop);
	md_problem_free(&s->sub);
}

/* Chains compare by peak, then by how many buffers reach it. */
static int chain_better(const struct lns *a, const struct lns *b)
{
	return a->bpeak < b->bpeak ||
	       (a->bpeak == b->bpeak && a->bat < b->bat);
}

static int default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > LNS_THREADS_MAX ? LNS_THREADS_MAX : (int)n;
}

/*
 * The chains run in epochs, one thread each: at the end of an epoch every
 * chain behind the best (a higher peak, or as high with more buffers at
 * it) takes the best chain's plan and goes on from there with its own
 * random numbers; one as good keeps its own (with descent_only, every
 * chain takes the best's). An epoch is LNS_EPOCH_ITERS steps per chain when
 * opts->max_iters is set and there is no time limit (so the result does
 * not depend on the clock), otherwise a quarter of a second.
 */
MD_API int md_plan_improve(const struct md_problem *p, uint64_t *offsets,
			   const struct md_improve_opts *o,
			   struct md_improve_result *r)
{
	struct md_improve_opts def = { 0 };
	struct lns ch[LNS_THREADS_MAX];
	pthread_t tid[LNS_THREADS_MAX];
	struct md_itree lifetimes;
	struct loadmax load;
	struct timespec t0;
	int nch, k, ret, best = 0;
	uint64_t lb, align, stall = 0;
	size_t i;

	if (!p || !offsets || !r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	if (!o)
		o = &def;
	ret = md_plan_validate(p, offsets, NULL);
	if (ret)
		return ret == -ENOMEM ? ret : -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	nch = o->threads > 0 ? o->threads : default_threads();
	if (nch > LNS_THREADS_MAX)
		nch = LNS_THREADS_MAX;
	lb = o->lower_bound ? o->lower_bound : md_problem_lower_bound(p, NULL);
	align = all_alignments(p);

	memset(ch, 0, sizeof(ch));
	memset(&lifetimes, 0, sizeof(lifetimes));
	ret = loadmax_init(&load, p);
	if (!ret)
		ret = md_itree_init(&lifetimes, p->n ? p->n : 1);
	for (i = 0; !ret && i < p->n; i++)
		ret = md_itree_insert(&lifetimes, i, p->bufs[i].lower,
				      p->bufs[i].upper);
	for (k = 0; !ret && k < nch; k++) {
		struct lns *s = &ch[k];

		ret = chain_init(s, p, offsets);
		s->p = p;
		s->lifetimes = &lifetimes;
		s->load = &load;
		s->o = o;
		s->t0 = t0;
		s->lb = lb;
		s->align = align;
		/*
		 * With two chains or more, the first keeps to descent:
		 * where descent still finds its way down slowly (a U-Net
		 * trace lost 1.9 % in 10 s when every chain kicked), it
		 * goes on as before.
		 */
		s->sideways = !o->descent_only && (k > 0 || nch == 1);
		s->rng = (o->seed ? o->seed : 0x9e3779b97f4a7c15ULL) +
			 (uint64_t)k * 0xbf58476d1ce4e5b9ULL;
		if (!s->rng)
			s->rng = 1;
		find_peak(s);
		s->bpeak = s->peak;
		s->bat = s->at_peak;
	}
	if (ret)
		goto out;
	r->start_peak = ch[0].peak;
	note(r, &t0, ch[0].peak);

	while (p->n >= 2 && ch[best].bpeak > lb) {
		uint64_t left = o->max_iters ? o->max_iters - r->iterations : 0;
		uint64_t before = ch[best].bpeak, iters = 0;
		double now = seconds_since(&t0);
		int started = 0;

		if (o->cancel && *o->cancel)
			break;
		if (o->max_iters && r->iterations >= o->max_iters)
			break;
		if (o->time_limit > 0 && now >= o->time_limit)
			break;
		if (!o->max_iters && o->time_limit <= 0 && stall >= LNS_STALL)
			break;
		for (k = 0; k < nch; k++) {
			ch[k].epoch_iters = 0;
			ch[k].epoch_end = now + LNS_EPOCH_SECONDS;
			if (o->max_iters || o->time_limit <= 0) {
				uint64_t e = (left + nch - 1) / nch;

				ch[k].epoch_iters = LNS_EPOCH_ITERS;
				if (o->max_iters && e < LNS_EPOCH_ITERS)
					ch[k].epoch_iters = e ? e : 1;
			}
		}
		for (k = 1; k < nch; k++) {
			if (pthread_create(&tid[k], NULL, run_chain, &ch[k]))
				break;
			started = k;
		}
		run_chain(&ch[0]);
		for (k = 1; k <= started; k++)
			pthread_join(tid[k], NULL);
		/* a chain that could not start ran nothing: fine */
		for (k = 0; k < nch; k++) {
			if (ch[k].ret) {
				ret = ch[k].ret;
				goto out;
			}
			iters += ch[k].iters;
			r->accepted += ch[k].accepted;
			ch[k].iters = 0;
			ch[k].accepted = 0;
		}
		r->iterations += iters;
		if (!iters)
			break;	/* no chain had a buffer to move */
		best = 0;
		for (k = 1; k < nch; k++)
			if (chain_better(&ch[k], &ch[best]))
				best = k;
		if (ch[best].bpeak < before) {
			note(r, &t0, ch[best].bpeak);
			stall = 0;
		} else {
			stall += iters;
		}
		for (k = 0; k < nch; k++) {
			/*
			 * A chain as good as the best goes on with its own
			 * plan (with sideways steps, the chains then walk
			 * their plateaus apart); only one behind takes it.
			 */
			if (k == best || (!o->descent_only &&
					  !chain_better(&ch[best], &ch[k])))
				continue;
			memcpy(ch[k].off, ch[best].boff,
			       p->n * sizeof(*ch[k].off));
			memcpy(ch[k].boff, ch[best].boff,
			       p->n * sizeof(*ch[k].boff));
			ch[k].peak = ch[k].bpeak = ch[best].bpeak;
			ch[k].at_peak = ch[k].bat = ch[best].bat;
			ch[k].flat = 0;
		}
	}
	ret = md_plan_validate(p, ch[best].boff, NULL);
	if (ret) {
		ret = ret == -ENOMEM ? ret : -EFAULT;
		goto out;
	}
	memcpy(offsets, ch[best].boff, p->n * sizeof(*offsets));
	r->peak = ch[best].bpeak;
	r->optimal = ch[best].bpeak <= lb;
	r->seconds = seconds_since(&t0);
out:
	for (k = 0; k < nch; k++)
		chain_free(&ch[k]);
	md_itree_free(&lifetimes);
	loadmax_free(&load);
	if (ret) {
		free(r->steps);
		r->steps = NULL;
		r->nsteps = 0;
	}
	return ret;
}

MD_API void md_improve_result_free(struct md_improve_result *r)
{
	if (!r)
		return;
	free(r->steps);
	r->steps = NULL;
	r->nsteps = 0;
}
