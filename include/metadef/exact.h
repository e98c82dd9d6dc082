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
 * fits on top of those already placed; see lib/exact.c for the pruning.
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
	uint64_t nodes;		/* search nodes visited */
	double seconds;
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

#ifdef __cplusplus
}
#endif

#endif /* METADEF_EXACT_H */
