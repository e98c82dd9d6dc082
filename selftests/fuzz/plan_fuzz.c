// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: plan and validate. The input is a MiniMalloc CSV
 * problem (at most MAX_BUFS buffers); it is planned with md_plan_solve()
 * (all strategies, and one more strategy picked by the input's hash with
 * local search), and:
 *
 * - a plan the library returns must pass md_plan_validate() and the
 *   independent all-pairs check of fuzz.h, with the peak it reports,
 *   never below the lower bound; -EEXIST only when fixed buffers do
 *   overlap; -EFAULT (the library caught its own bad plan) never;
 * - md_plan_validate() on offsets derived from the plan (buffers moved
 *   onto each other, misaligned, ...) must agree with the all-pairs check,
 *   and a conflict it names must be one;
 * - for up to EXACT_BUFS buffers, md_exact_solve() with a small time
 *   limit: its plan validates, is no higher than the plan of
 *   md_plan_solve() it starts from, an optimum it claims is not beaten by
 *   any heuristic, and it never calls infeasible a capacity a heuristic's
 *   plan fits in;
 * - md_plan_improve() on the heuristic's plan, a few steps seeded by the
 *   input: a valid plan, never higher, the peak it reports.
 */
#include <errno.h>

#include <metadef/exact.h>

#include "fuzz.h"

#define MAX_BUFS	48
#define EXACT_BUFS	8
#define EXACT_SECONDS	0.05

static int conflict(const struct md_problem *p, const uint64_t *off,
		    size_t a, size_t b)
{
	const struct md_buffer *x = &p->bufs[a], *y = &p->bufs[b];

	return a != b && x->size && y->size &&
	       x->lower < y->upper && y->lower < x->upper &&
	       off[a] < off[b] + y->size && off[b] < off[a] + x->size;
}

/* Do the fixed buffers, where they are, overlap? */
static int fixed_overlap(const struct md_problem *p)
{
	size_t i, j;

	for (i = 0; i < p->n; i++)
		for (j = i + 1; j < p->n; j++) {
			const struct md_buffer *x = &p->bufs[i], *y = &p->bufs[j];

			if ((x->flags & y->flags & MD_BUF_FIXED) && x->size &&
			    y->size && x->lower < y->upper && y->lower < x->upper &&
			    x->offset < y->offset + y->size &&
			    y->offset < x->offset + x->size)
				return 1;
		}
	return 0;
}

/* Sizes plus alignment padding, all stacked, past 2^64? */
static int stack_overflows(const struct md_problem *p)
{
	unsigned __int128 sum = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		sum += (unsigned __int128)p->bufs[i].size + p->bufs[i].align - 1;
	return sum > UINT64_MAX;
}

static void check_heuristic(const struct md_problem *p,
			    const struct md_plan_opts *o, struct md_plan *pl,
			    int *ret)
{
	*ret = md_plan_solve(p, o, pl);
	FUZZ_CHECK(*ret != -EFAULT, "md_plan_solve() made a plan its validator refused");
	FUZZ_CHECK(*ret == 0 || *ret == -EEXIST || *ret == -EOVERFLOW,
		   "md_plan_solve(strategy %d, improve %d) returned %d",
		   o->strategy, o->improve, *ret);
	FUZZ_CHECK(*ret != -EEXIST || fixed_overlap(p),
		   "md_plan_solve(): -EEXIST, the fixed buffers do not overlap");
	FUZZ_CHECK((*ret == -EOVERFLOW) == stack_overflows(p),
		   "md_plan_solve() returned %d, all buffers stacked with padding %s 2^64",
		   *ret, stack_overflows(p) ? "pass" : "fit in");
	if (*ret)
		return;
	FUZZ_CHECK(pl->n == p->n, "plan of %zu buffers for %zu", pl->n, p->n);
	FUZZ_CHECK(!md_plan_validate(p, pl->offsets, NULL), "returned plan does not validate");
	fuzz_check_plan(p, pl->offsets, "md_plan_solve()");
	FUZZ_CHECK(pl->peak == fuzz_peak(p, pl->offsets), "peak %" PRIu64 ", plan's %" PRIu64,
		   pl->peak, fuzz_peak(p, pl->offsets));
	FUZZ_CHECK(pl->lower_bound == md_problem_lower_bound(p, NULL), "lower bound");
	FUZZ_CHECK(pl->peak >= pl->lower_bound, "peak %" PRIu64 " below the lower bound %" PRIu64,
		   pl->peak, pl->lower_bound);
}

/* Offsets near the plan's: some valid, most not. */
static void check_validator(const struct md_problem *p, const uint64_t *plan,
			    uint64_t seed)
{
	uint64_t off[MAX_BUFS];
	struct md_conflict c;
	size_t i, a, b;
	int round, ret, bad;

	for (round = 0; round < 4; round++) {
		for (i = 0; i < p->n; i++) {
			uint64_t r = fuzz_rand(&seed);
			size_t j = (size_t)(r >> 8) % p->n;

			switch (r & 7) {
			case 0:
				off[i] = plan[j];
				break;
			case 1:
				off[i] = plan[j] + p->bufs[j].size;
				break;
			case 2:
				off[i] = plan[i] + (r >> 40) % 3;
				break;
			case 3:
				off[i] = plan[j] + p->bufs[j].size - 1;
				break;
			default:
				off[i] = plan[i];
			}
		}
		ret = md_plan_validate(p, off, &c);
		bad = fuzz_plan_invalid(p, off, &a, &b);
		FUZZ_CHECK(ret == 0 || ret == -EEXIST || ret == -EINVAL,
			   "md_plan_validate() returned %d", ret);
		FUZZ_CHECK(!ret == !bad, "md_plan_validate() says %d, the all-pairs check %s (%zu, %zu)",
			   ret, bad ? "invalid" : "valid", a, b);
		if (ret == -EEXIST) {
			FUZZ_CHECK(c.a < p->n && c.b < p->n && conflict(p, off, c.a, c.b),
				   "named conflict %zu, %zu is none", c.a, c.b);
			FUZZ_CHECK(c.a_off == off[c.a] && c.b_off == off[c.b] &&
				   c.a_end == off[c.a] + p->bufs[c.a].size &&
				   c.b_end == off[c.b] + p->bufs[c.b].size &&
				   c.a_lower == p->bufs[c.a].lower &&
				   c.b_upper == p->bufs[c.b].upper,
				   "conflict report does not describe the pair");
		}
		if (ret == -EINVAL) {
			const struct md_buffer *x = &p->bufs[c.a];

			FUZZ_CHECK(c.a < p->n, "named buffer %zu", c.a);
			FUZZ_CHECK((x->align && off[c.a] % x->align) ||
				   off[c.a] > UINT64_MAX - x->size ||
				   ((x->flags & MD_BUF_FIXED) && off[c.a] != x->offset),
				   "buffer %zu named as misplaced is not", c.a);
		}
	}
}

static void run_exact(const struct md_problem *p, struct md_exact_opts *o,
		  struct md_exact_result *r, uint64_t heur_peak)
{
	int ret;

	o->time_limit = EXACT_SECONDS;
	o->memo_mib = 1;
	ret = md_exact_solve(p, o, r);
	FUZZ_CHECK(!ret, "md_exact_solve(%s %" PRIu64 ") returned %d",
		   o->minimize ? "minimize" : "capacity", o->capacity, ret);
	FUZZ_CHECK(r->n == p->n && r->offsets, "no plan");
	FUZZ_CHECK(!md_plan_validate(p, r->offsets, NULL), "exact plan does not validate");
	fuzz_check_plan(p, r->offsets, "md_exact_solve()");
	FUZZ_CHECK(r->peak == fuzz_peak(p, r->offsets), "exact peak %" PRIu64 ", plan's %" PRIu64,
		   r->peak, fuzz_peak(p, r->offsets));
	FUZZ_CHECK(r->lower_bound <= r->peak, "bound %" PRIu64 " above its own plan %" PRIu64,
		   r->lower_bound, r->peak);
	FUZZ_CHECK(r->lower_bound <= heur_peak, "bound %" PRIu64 " above a heuristic plan %" PRIu64,
		   r->lower_bound, heur_peak);
}

/*
 * @all_peak: md_plan_solve() with the default options, the plan the exact
 * solver starts from; @best_peak: the lowest of every heuristic plan.
 */
static void check_exact(const struct md_problem *p, uint64_t all_peak,
			uint64_t best_peak)
{
	struct md_exact_opts o = { 0 };
	struct md_exact_result r;
	uint64_t opt = 0;
	int optimal;

	o.minimize = 1;
	run_exact(p, &o, &r, best_peak);
	/* Stopped by the clock, it may keep the plan it started from. */
	FUZZ_CHECK(r.peak <= all_peak, "minimize: peak %" PRIu64 " above the heuristic's %" PRIu64,
		   r.peak, all_peak);
	FUZZ_CHECK(r.status == MD_EXACT_OPTIMAL || r.status == MD_EXACT_LIMIT,
		   "minimize: status %d", r.status);
	optimal = r.status == MD_EXACT_OPTIMAL;
	FUZZ_CHECK(!optimal || (r.proven && r.lower_bound == r.peak),
		   "optimal %" PRIu64 " with bound %" PRIu64, r.peak, r.lower_bound);
	FUZZ_CHECK(!optimal || r.peak <= best_peak,
		   "optimal %" PRIu64 ", a heuristic found %" PRIu64, r.peak, best_peak);
	opt = r.peak;
	md_exact_result_free(&r);

	/* The heuristics' best peak is feasible. */
	memset(&o, 0, sizeof(o));
	o.capacity = best_peak;
	run_exact(p, &o, &r, best_peak);
	FUZZ_CHECK(r.status != MD_EXACT_INFEASIBLE,
		   "capacity %" PRIu64 " called infeasible, a heuristic's plan fits", best_peak);
	FUZZ_CHECK(r.status != MD_EXACT_FEASIBLE || r.peak <= best_peak,
		   "feasible at %" PRIu64 " with a plan of %" PRIu64, best_peak, r.peak);
	md_exact_result_free(&r);

	/* Below a proven optimum nothing fits. */
	if (optimal && opt) {
		o.capacity = opt - 1;
		run_exact(p, &o, &r, best_peak);
		FUZZ_CHECK(r.status != MD_EXACT_FEASIBLE,
			   "a plan of %" PRIu64 " below the proven optimum %" PRIu64, r.peak, opt);
		FUZZ_CHECK(r.status != MD_EXACT_INFEASIBLE || r.lower_bound > opt - 1,
			   "infeasible with bound %" PRIu64, r.lower_bound);
		md_exact_result_free(&r);
	}
}

static void check_improve(const struct md_problem *p, const uint64_t *off,
			  uint64_t peak, uint64_t h)
{
	struct md_improve_opts o = { .max_iters = 1 + h % 24, .seed = h,
				     .threads = 1 + (int)((h >> 5) & 1) };
	struct md_improve_result r;
	uint64_t *x = malloc((p->n ? p->n : 1) * sizeof(*x));
	int ret;

	if (!x)
		return;
	memcpy(x, off, p->n * sizeof(*x));
	ret = md_plan_improve(p, x, &o, &r);
	FUZZ_CHECK(!ret, "md_plan_improve() returned %d", ret);
	FUZZ_CHECK(r.start_peak == peak, "start peak %" PRIu64 ", plan's %" PRIu64,
		   r.start_peak, peak);
	FUZZ_CHECK(r.peak <= peak, "improved to %" PRIu64 " from %" PRIu64, r.peak, peak);
	fuzz_check_plan(p, x, "md_plan_improve()");
	FUZZ_CHECK(r.peak == fuzz_peak(p, x), "improve peak %" PRIu64 ", plan's %" PRIu64,
		   r.peak, fuzz_peak(p, x));
	md_improve_result_free(&r);
	free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct md_plan_opts all = { .strategy = MD_STRAT_ALL }, one = all;
	uint64_t h = fuzz_hash(data, size);
	struct md_plan pl, pl1;
	struct md_problem p;
	int ret, ret1;

	md_problem_init(&p);
	if (md_problem_parse_csv(&p, (const char *)data, size, NULL) ||
	    !p.n || p.n > MAX_BUFS)
		goto out;

	check_heuristic(&p, &all, &pl, &ret);
	one.strategy = (int)(h % (MD_STRAT_COUNT + 1));
	one.improve = (int)((h >> 8) % 3);
	one.exhaustive = (int)((h >> 16) & 1);
	check_heuristic(&p, &one, &pl1, &ret1);
	FUZZ_CHECK(ret == ret1, "all strategies: %d, strategy %d: %d", ret, one.strategy, ret1);
	if (ret)
		goto out;
	/* Local search never makes it worse; all strategies beat one. */
	if (one.strategy == MD_STRAT_ALL)
		FUZZ_CHECK(pl1.peak <= pl.peak, "improve %d: %" PRIu64 " > %" PRIu64,
			   one.improve, pl1.peak, pl.peak);

	check_validator(&p, pl.offsets, h);
	check_improve(&p, pl.offsets, pl.peak, h);
	if (p.n <= EXACT_BUFS)
		check_exact(&p, pl.peak, pl.peak < pl1.peak ? pl.peak : pl1.peak);
	md_plan_free(&pl);
	md_plan_free(&pl1);
out:
	md_problem_free(&p);
	return 0;
}
