/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef exact planner: optimal offsets for a struct md_problem.
 *
 * Exact mode finds a plan whose peak fits in a given capacity or proves
 * that none exists; minimize mode finds the smallest peak (a plan at the
 * lower bound, or a proof that every smaller capacity is infeasible).
 * Both stop at a time limit or when the caller sets *cancel (from a SIGINT
 * handler, say) and then return the best plan known (at worst the best
 * heuristic of md_plan_solve()) marked as not proven.
 *
 * The search is a branch and bound over canonical placements: buffers are
 * placed in non-decreasing offset order, each at the lowest offset where it
 * fits on top of those already placed; see lib/exact.md for the pruning.
 * Alignment and fixed (MD_BUF_FIXED) buffers are honoured.
 *
 * Conventions as in metadef.h: 0 or a negative errno, nothing prints.
 */
#ifndef METADEF_EXACT_H
#define METADEF_EXACT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <metadef/plan.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a search got to: struct md_exact_result.status. */
enum md_exact_status {
	MD_EXACT_FEASIBLE,	/* exact mode: a plan within the capacity */
	MD_EXACT_INFEASIBLE,	/* exact mode: proven that none exists */
	MD_EXACT_OPTIMAL,	/* minimize mode: peak == proven bound */
	MD_EXACT_LIMIT,		/* time limit or cancel: not proven */
};

/*
 * Why a search ended without a proof: struct md_exact_result.stopped.
 */
enum md_exact_stop {
	MD_EXACT_STOP_NONE,	/* it did not stop early: the status is proven */
	MD_EXACT_STOP_TIME,	/* the time limit */
	MD_EXACT_STOP_CANCEL,	/* *cancel was set */
	MD_EXACT_STOP_NODES,	/* md_exact_opts.max_nodes spent */
	MD_EXACT_STOP_TOO_BIG,	/* too many overlapping pairs to search */
};

/*
 * The prunings of the search, each one a switch (md_exact_opts.disable):
 * with any set of them turned off the answers stay exact, only slower.
 * They are described in lib/exact.md.
 */
enum md_exact_prune {
	MD_EXACT_NO_SECTIONS	= 1 << 0, /* bytes left per section vs cap */
	MD_EXACT_NO_STACKING	= 1 << 1, /* two lowest of a section stacked */
	MD_EXACT_NO_DOMINANCE	= 1 << 2, /* no gap a buffer fits wholly in */
	MD_EXACT_NO_DECOMPOSE	= 1 << 3, /* independent parts apart */
	MD_EXACT_NO_MEMO	= 1 << 4, /* failed states remembered */
	MD_EXACT_NO_SYMMETRY	= 1 << 5, /* identical buffers in one order */
	MD_EXACT_NO_HATLESS	= 1 << 6, /* nothing above: no sibling helps */
	MD_EXACT_NO_LB_PAIR	= 1 << 7, /* also try at the lower bound */
	MD_EXACT_NO_RESTARTS	= 1 << 8, /* one ranking, no node budgets */
	MD_EXACT_PRUNE_ALL	= (1 << 9) - 1,
	/*
	 * Not a pruning: the window bound of large problems in minimize
	 * mode (lib/exact.md), off to measure it. Not in PRUNE_ALL.
	 */
	MD_EXACT_NO_WINDOW_BOUND = 1 << 9,
};

/* Passed to the progress callback, at most a few times a second. */
struct md_exact_progress {
	uint64_t best_peak;	/* best plan so far (UINT64_MAX: none) */
	uint64_t lower_bound;	/* proven: no plan has a smaller peak */
	uint64_t capacity;	/* capacity being searched now */
	uint64_t nodes;		/* search nodes so far */
	double nodes_per_sec;
	double seconds;		/* since the start */
};

struct md_exact_opts {
	/*
	 * Exact mode (@minimize == 0): the capacity the plan must fit in.
	 * Minimize mode: ignored.
	 */
	uint64_t capacity;
	int minimize;
	/* Seconds; <= 0 means no limit. */
	double time_limit;
	/* When non-NULL and set non-zero, stop as at the time limit. */
	volatile sig_atomic_t *cancel;
	/* Optional, called at most ~4 times a second from the search. */
	void (*progress)(const struct md_exact_progress *pr, void *arg);
	void *progress_arg;
	/* Transposition table size in MiB (0: default 16). */
	unsigned int memo_mib;
	/* enum md_exact_prune bits: prunings turned off (0: all on). */
	unsigned int disable;
	/* Stop after about this many search nodes (0: no limit). */
	uint64_t max_nodes;
	/*
	 * Minimize mode on problems of more than MD_EXACT_IMPROVE_MIN
	 * buffers (or too big to search): the improvement phase,
	 * md_plan_improve(), runs between search rounds, each slice as long
	 * as the round before it (or for @improve_iters steps when set, so
	 * that with @max_nodes and no time limit the result is reproducible),
	 * seeded with @seed (0: a fixed default).
	 */
	uint64_t seed;
	uint64_t improve_iters;
};

/* Minimize mode improves plans of more buffers than this by local search. */
#define MD_EXACT_IMPROVE_MIN	1000

/* One improvement of the best plan: when, what peak, after how many steps. */
struct md_exact_step {
	double seconds;		/* since the call started */
	uint64_t peak;
	uint64_t iteration;	/* improvement steps tried before it */
};

struct md_exact_result {
	uint64_t *offsets;	/* one per buffer, malloc()ed, validated */
	size_t n;
	uint64_t peak;		/* md_plan_peak(offsets) */
	/*
	 * Proven lower bound on the peak of every plan. In exact mode with
	 * MD_EXACT_INFEASIBLE it is > capacity.
	 */
	uint64_t lower_bound;
	uint64_t capacity;	/* exact mode: the capacity asked for */
	int status;		/* enum md_exact_status */
	int proven;		/* 1: the status is a proof, 0: limit hit */
	int heuristic;		/* 1: offsets come from md_plan_solve() */
	int stopped;		/* enum md_exact_stop: why, when not proven */
	uint64_t nodes;		/* search nodes visited */
	double seconds;
	/*
	 * Minimize mode: every lowering of the best peak, the heuristic's
	 * first (malloc()ed; NULL when the heuristic was the answer).
	 */
	struct md_exact_step *steps;
	size_t nsteps;
	uint64_t improve_iters;	/* improvement steps run */
	/*
	 * The most bytes alive at once (md_problem_lower_bound(), or a
	 * larger buffer alone): @lower_bound is at least this, more when a
	 * stronger bound or the search proved more.
	 */
	uint64_t load_bound;
};

/*
 * md_exact_solve() - plan @p exactly with @opts (NULL: minimize, 10 s).
 * Always fills @res with a valid plan on success (release with
 * md_exact_result_free()); res->status and res->proven say what is known
 * about it. In exact mode a plan above the capacity is returned (the best
 * heuristic) when none fits or the limit stops the search.
 * Return: 0, -EINVAL (bad problem or options), -EFAULT (a plan failed
 * validation: a bug) or -ENOMEM.
 */
int md_exact_solve(const struct md_problem *p, const struct md_exact_opts *opts,
		   struct md_exact_result *res);

void md_exact_result_free(struct md_exact_result *res);

/* "feasible", "infeasible", "optimal", "limit" or "?". */
const char *md_exact_status_name(int status);

/* "none", "time limit", "cancelled", "node limit", "too big" or "?". */
const char *md_exact_stop_name(int stopped);

/*
 * md_exact_prune_name() - the name of one enum md_exact_prune bit
 * ("sections", "stacking", ...), NULL for anything else;
 * md_exact_prune_parse() turns a comma-separated list of those names into
 * bits (0, or -EINVAL naming nothing known).
 */
const char *md_exact_prune_name(unsigned int bit);
int md_exact_prune_parse(const char *list, unsigned int *bits);

/* ------------------------------------------------------------ improvement */


struct md_improve_opts {
	double time_limit;	/* seconds; <= 0: none */
	/*
	 * Steps to try (0: no count). With neither a count nor a time limit
	 * it stops after a few thousand steps in a row that changed nothing.
	 */
	uint64_t max_iters;
	uint64_t seed;		/* 0: a fixed default */
	uint64_t lower_bound;	/* stop when the peak reaches it (0: the
				 * most bytes alive at once) */
	volatile sig_atomic_t *cancel;
	/*
	 * Chains searching side by side, one thread each, taking the best
	 * plan among them now and then (0: one per CPU, at most 4).
	 */
	int threads;
	/*
	 * 1: steps only ever lower the count of buffers at the peak, and
	 * every chain restarts from the best plan each epoch (the phase as
	 * it was before sideways steps and ejection chains; for comparison
	 * and tests).
	 */
	int descent_only;
	/* 1: no ejection chains (for comparison and tests). */
	int no_eject;
};

struct md_improve_result {
	uint64_t start_peak;	/* the peak of the plan passed in */
	uint64_t peak;		/* the peak now: never above start_peak */
	int optimal;		/* peak == the lower bound */
	uint64_t iterations;	/* steps tried */
	uint64_t accepted;	/* steps that changed the plan */
	double seconds;
	/* Every lowering of the peak, the start first (malloc()ed). */
	struct md_exact_step *steps;
	size_t nsteps;
};

/*
 * md_plan_improve() - lower the peak of the valid plan @offsets of @p by a
 * large-neighbourhood search (lib/improve.c): each step takes the buffers
 * around one that ends at the peak out of the plan and places them again
 * below it; when that stalls, sideways steps and kicks from the best plan
 * (unless opts->descent_only). @offsets changes only to another valid
 * plan whose peak is not higher. The same @opts (seed and max_iters, no time limit) give the same
 * plan. Release @r with md_improve_result_free().
 * Return: 0, -EINVAL (bad problem or @offsets not a valid plan), -EFAULT
 * (the search made an invalid plan: a bug; @offsets unchanged), -ENOMEM.
 */
int md_plan_improve(const struct md_problem *p, uint64_t *offsets,
		    const struct md_improve_opts *opts,
		    struct md_improve_result *r);

void md_improve_result_free(struct md_improve_result *r);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_EXACT_H */
