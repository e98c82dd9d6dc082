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

/* ------------------------------------------------------------ names */

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
	"symmetry", "hatless", "lb-pair", "restarts", "window",
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

/* ------------------------------------------------------------ modes */

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

/*
 * Exact mode: a plan within @cap into @best, or a proof that none exists
 * (*@lb goes above @cap). Return: 0 or -ENOMEM.
 */
static int solve_exact_mode(struct exact *e, const struct md_problem *p,
			    uint64_t cap, uint64_t *best, uint64_t *lb,
			    struct md_exact_result *res)
{
	int r = try_capacity(e, cap, *lb, 0);

	if (e->limit.nomem)
		return -ENOMEM;
	if (r == 1) {
		export_offsets(e, p, best);
		res->heuristic = 0;
		res->status = MD_EXACT_FEASIBLE;
		res->proven = 1;
	} else if (r == 0) {
		res->status = MD_EXACT_INFEASIBLE;
		res->proven = 1;
		*lb = cap + 1;
	} else {
		res->status = MD_EXACT_LIMIT;
	}
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

static int improve_slice(struct exact *e, const struct md_problem *p,
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
static int more_strategies(struct exact *e, const struct md_problem *p,
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
			double left = opts->time_limit - exact_elapsed(e);

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
			add_step(res, exact_elapsed(e), *ub, res->improve_iters);
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
static int improve_turn(struct exact *e, const struct md_problem *p,
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
static int improve_slice(struct exact *e, const struct md_problem *p,
			 const struct md_exact_opts *opts,
			 struct md_exact_result *res, uint64_t *best,
			 uint64_t *ub, uint64_t lb, double seconds)
{
	struct md_improve_opts io = { 0 };
	struct md_improve_result ir;
	double now = exact_elapsed(e);
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
	if (e->limit.progress) {
		e->limit.best_peak = *ub;
		e->limit.proven_lb = lb;
		report(e, exact_elapsed(e));
	}
	return 0;
}

/*
 * Minimize mode on a problem too big to search: the skipped strategies,
 * then the improvement phase for the rest of the limit, the two lines
 * taking turns in slices of 2 s. Return: 0 or a negative errno.
 */
static int improve_only(struct exact *e, const struct md_problem *p,
			const struct md_exact_opts *opts, uint32_t ran,
			uint64_t *best, uint64_t *ub, uint64_t lb,
			struct md_exact_result *res)
{
	struct line alt = { 0 };
	int ret;

	e->limit.progress = opts->progress;
	e->limit.progress_arg = opts->progress_arg;
	add_step(res, exact_elapsed(e), *ub, 0);
	ret = more_strategies(e, p, opts, res, best, ub, lb, ran, &alt);
	while (!ret && *ub > lb && !(opts->cancel && *opts->cancel) &&
	       opts->time_limit > 0 && exact_elapsed(e) < opts->time_limit)
		ret = improve_turn(e, p, opts, res, best, ub, lb,
				   alt.off ? 2.0 : 0, &alt);
	if (!ret && *ub > lb && opts->time_limit <= 0)
		ret = improve_slice(e, p, opts, res, best, ub, lb, 0);
	free(alt.off);
	if (ret)
		return ret;
	if (*ub <= lb) {
		res->status = MD_EXACT_OPTIMAL;
		res->proven = 1;
		res->stopped = MD_EXACT_STOP_NONE;
	} else if (opts->cancel && *opts->cancel) {
		res->stopped = MD_EXACT_STOP_CANCEL;
	} else if (opts->time_limit > 0) {
		res->stopped = MD_EXACT_STOP_TIME;
	}
	return 0;
}

/*
 * Minimize mode, from the proven bound *@lb and the best peak @ub (the
 * plan in @best): rounds with a node budget that doubles when a round
 * settles nothing. Each round first runs exact mode just below the best
 * peak (paired with a run at the proven bound, as exact mode does), so
 * minimize gets at least as far as exact mode would at that capacity;
 * then the middle between bound and best peak. A plan found lowers the
 * best peak, a proof raises the bound. On large problems the improvement
 * phase takes turns with the rounds (lib/exact.md). Return: 0 or -ENOMEM
 * (or an error of the improvement phase).
 */
static int solve_minimize(struct exact *e, const struct md_problem *p,
			  const struct md_exact_opts *opts, uint32_t ran,
			  uint64_t *best, uint64_t *lb_io, uint64_t ub,
			  struct md_exact_result *res)
{
	uint64_t budget = 8 * (uint64_t)e->prob.nbufs + 4096, lb = *lb_io;
	double slice = 0.1, deadline = e->limit.deadline;
	struct line alt = { 0 };
	int r, ret = 0, large, nosearch = 0;

	add_step(res, exact_elapsed(e), ub, 0);
	/*
	 * Large problems: search rounds and improvement slices take turns,
	 * each round cut off when its slice of time is spent (a search of
	 * thousands of buffers may not settle a round in the whole limit).
	 */
	large = p->n > MD_EXACT_IMPROVE_MIN;
	if (large) {
		ret = more_strategies(e, p, opts, res, best, &ub, lb, ran,
				      &alt);
		if (ret)
			goto out;
	}
	while (lb < ub) {
		uint64_t caps[2] = { ub - 1, lb + (ub - lb) / 2 };
		double round_start = exact_elapsed(e);
		int k, settled = 0;

		if (nosearch) {
			/* the search gave up: the rest is improvement */
			ret = improve_turn(e, p, opts, res, best, &ub, lb,
					   opts->time_limit > 0 ? 2.0 : 0,
					   &alt);
			if (ret)
				goto out;
			if (opts->cancel && *opts->cancel)
				e->limit.why = MD_EXACT_STOP_CANCEL;
			else if (opts->time_limit > 0 &&
				 exact_elapsed(e) >= opts->time_limit)
				e->limit.why = MD_EXACT_STOP_TIME;
			else if (opts->time_limit > 0)
				continue;
			else
				e->limit.why = MD_EXACT_STOP_TOO_BIG;
			goto limit;
		}

		for (k = 0; k < 2 && !settled; k++) {
			if (k && caps[1] >= caps[0])
				break;
			e->limit.best_peak = ub;
			e->limit.proven_lb = lb;
			if (large) {
				/* the round ends when its slice does */
				double end = exact_elapsed(e) + slice;

				e->limit.deadline = opts->time_limit > 0 &&
						    opts->time_limit < end ?
						    opts->time_limit : end;
			}
			r = try_capacity(e, caps[k], lb, budget);
			if (e->limit.nomem) {
				ret = -ENOMEM;
				goto out;
			}
			if (r == -1 && large &&
			    e->limit.why == MD_EXACT_STOP_TIME &&
			    !(opts->time_limit > 0 &&
			      exact_elapsed(e) >= opts->time_limit)) {
				/* only the slice ran out: go on */
				e->limit.stop = 0;
				e->limit.why = MD_EXACT_STOP_NONE;
				r = -2;
			}
			if (r == -1 && large &&
			    e->limit.why == MD_EXACT_STOP_TOO_BIG) {
				/* too deep to search: improve until the limit */
				e->limit.stop = 0;
				e->limit.why = MD_EXACT_STOP_NONE;
				nosearch = 1;
				break;
			}
			if (r == -1)
				goto limit;
			if (r == 1) {
				export_offsets(e, p, best);
				res->heuristic = 0;
				ub = md_plan_peak(p, best);
				add_step(res, exact_elapsed(e), ub,
					 res->improve_iters);
				settled = 1;
			} else if (!r) {
				lb = caps[k] + 1;
				settled = 1;
			}
		}
		if (settled || nosearch)
			continue;
		budget *= 2;
		/*
		 * A large problem the search cannot settle: as long again
		 * for the improvement phase, which may lower the best peak;
		 * the slices grow as the rounds do.
		 */
		if (large) {
			double took = exact_elapsed(e) - round_start;

			slice = took > slice ? took : slice;
			ret = improve_turn(e, p, opts, res, best, &ub, lb,
					   slice, &alt);
			if (ret)
				goto out;
			slice *= 1.5;
			if (opts->time_limit > 0 &&
			    exact_elapsed(e) >= opts->time_limit) {
				e->limit.why = MD_EXACT_STOP_TIME;
				goto limit;
			}
			if (opts->cancel && *opts->cancel) {
				e->limit.why = MD_EXACT_STOP_CANCEL;
				goto limit;
			}
		}
	}
limit:
	e->limit.deadline = deadline;
	if (lb >= ub) {
		lb = ub;
		res->status = MD_EXACT_OPTIMAL;
		res->proven = 1;
	} else {
		res->status = MD_EXACT_LIMIT;
	}
	*lb_io = lb;
out:
	free(alt.off);
	return ret;
}

/*
 * The bounds beyond the load (lib/exact_bounds.c): alignment rounding
 * always; on large problems in minimize mode, where the search seldom
 * proves anything, also the exact search on windows around the peak.
 */
static uint64_t stronger_bound(const struct md_problem *p,
			       const struct md_exact_opts *opts,
			       uint64_t lb, uint64_t ub)
{
	uint64_t a = exact_bound_aligned(p);

	if (a > lb)
		lb = a < ub ? a : ub;
	if (opts->minimize && p->n > MD_EXACT_IMPROVE_MIN && lb < ub &&
	    !(opts->disable & MD_EXACT_NO_WINDOW_BOUND))
		lb = exact_bound_window(p, lb, ub, EXACT_WINDOW_BUFS,
					EXACT_WINDOW_NODES,
					opts->time_limit > 0 ?
					EXACT_WINDOW_SHARE * opts->time_limit :
					0);
	return lb;
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
	int ret, have_search = 0;

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
	res->load_bound = lb;
	lb = stronger_bound(p, opts, lb, ub);
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
		/*
		 * Too big to search: in minimize mode the improvement phase
		 * has the time; otherwise the heuristic is the answer.
		 */
		res->status = MD_EXACT_LIMIT;
		res->stopped = MD_EXACT_STOP_TOO_BIG;
		ret = 0;
		if (opts->minimize) {
			ret = improve_only(&e, p, opts, heur.ran, best, &ub,
					   lb, res);
			if (ret)
				goto out;
			if (ub <= lb)
				lb = ub;
		}
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

	if (!opts->minimize)
		ret = solve_exact_mode(&e, p, opts->capacity, best, &lb, res);
	else
		ret = solve_minimize(&e, p, opts, heur.ran, best, &lb, ub,
				     res);
	if (ret)
		goto out;
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

/* ------------------------------------------------------------ thread */

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
