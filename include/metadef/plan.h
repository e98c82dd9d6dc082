/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef planning: static memory planning for tensors.
 *
 * A planning problem is a set of buffers, each alive on the half-open time
 * interval [lower, upper) and needing size bytes at an offset that is a
 * multiple of its alignment. A plan gives every buffer an offset so that no
 * two buffers alive at the same time overlap in memory; its peak is
 * max(offset + size). The problem representation (struct md_problem) is
 * independent of where it came from (MiniMalloc CSV, a graph) and of the
 * solver (heuristics here, an exact solver later); md_plan_validate() is the
 * one validator every solver uses.
 *
 * Conventions as in metadef.h: 0 or a negative errno, nothing prints.
 */
#ifndef METADEF_PLAN_H
#define METADEF_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ problem */

#define MD_BUF_FIXED	(1u << 0)	/* offset is given, not planned */

/* One buffer of a planning problem. */
struct md_buffer {
	uint64_t lower;		/* first time step it is alive */
	uint64_t upper;		/* first time step it is dead (> lower) */
	uint64_t size;		/* bytes */
	uint64_t align;		/* offset alignment in bytes, >= 1 (any
				 * value, not only powers of two) */
	uint64_t offset;	/* fixed offset when MD_BUF_FIXED */
	uint32_t flags;		/* MD_BUF_* */
	char *id;		/* name (owned; may be NULL: index is used) */
};

/* A planning problem: the buffers, nothing else. */
struct md_problem {
	struct md_buffer *bufs;
	size_t n;
	size_t cap;		/* allocated entries of bufs */
	int has_align;		/* input carried an alignment column */
	int has_offset;		/* input carried an offset column */
};

/* Where and why parsing failed. */
struct md_error {
	unsigned int line;	/* 1-based line of the input, 0 if none */
	char msg[160];
};

void md_problem_init(struct md_problem *p);
void md_problem_free(struct md_problem *p);

/*
 * md_problem_add() - append a buffer (copies @id). align 0 means 1.
 * Return: 0, -EINVAL (upper <= lower) or -ENOMEM.
 */
int md_problem_add(struct md_problem *p, const char *id, uint64_t lower,
		   uint64_t upper, uint64_t size, uint64_t align);

/*
 * md_problem_parse_csv() - parse MiniMalloc CSV: a header naming the
 * columns (id, lower, upper, size and optionally alignment, offset, in any
 * order), then one buffer per line. Blank lines and lines starting with '#'
 * are skipped. Rejects bad numbers, negative sizes, upper <= lower,
 * duplicate ids, missing or extra fields; @err (may be NULL) says which
 * line and why.
 * Return: 0, -EINVAL (malformed) or -ENOMEM.
 */
int md_problem_parse_csv(struct md_problem *p, const char *text, size_t len,
			 struct md_error *err);

/*
 * md_problem_write_csv() - format @p with @offsets (NULL: no offset column)
 * as MiniMalloc CSV into a malloc()ed string in *@out.
 */
int md_problem_write_csv(const struct md_problem *p, const uint64_t *offsets,
			 char **out);

/*
 * md_problem_lower_bound() - max over time of the bytes alive: no plan can
 * have a smaller peak. Also the time horizon in *@t_end (may be NULL).
 */
uint64_t md_problem_lower_bound(const struct md_problem *p, uint64_t *t_end);

/* Sum of all sizes: the arena needed without any reuse. */
uint64_t md_problem_total(const struct md_problem *p);

/* ------------------------------------------------------------ validator */

/* Two buffers alive at the same time whose memory overlaps. */
struct md_conflict {
	size_t a, b;			/* buffer indices */
	uint64_t a_lower, a_upper, a_off, a_end;
	uint64_t b_lower, b_upper, b_off, b_end;
};

/*
 * md_plan_validate() - check @offsets (one per buffer) against @p in
 * O(n log n): alignment, fixed offsets, and no two time-overlapping buffers
 * overlapping in memory. On -EEXIST, *@c (may be NULL) names one
 * conflicting pair with both intervals.
 * Return: 0 (valid), -EEXIST (overlap), -EINVAL (misaligned or moved fixed
 * buffer; c->a names it) or -ENOMEM.
 */
int md_plan_validate(const struct md_problem *p, const uint64_t *offsets,
		     struct md_conflict *c);

/* Peak of a plan: max(offset + size), 0 for an empty problem. */
uint64_t md_plan_peak(const struct md_problem *p, const uint64_t *offsets);

/* ------------------------------------------------------------ heuristics */

enum md_strategy {
	MD_STRAT_SIZE_BEST,	/* size descending, best fit */
	MD_STRAT_SIZE_FIRST,	/* size descending, first fit (the baseline) */
	MD_STRAT_LIFETIME,	/* lifetime length descending, best fit */
	MD_STRAT_CONFLICT,	/* conflict degree (bytes alive alongside) */
	MD_STRAT_AREA,		/* size x lifetime descending, best fit */
	MD_STRAT_START,		/* start time ascending, best fit */
	/*
	 * Dynamic orders: next comes the buffer that fits lowest (first fit),
	 * ties to the longest-lived, the earliest start, the latest end.
	 * Keep these last.
	 */
	MD_STRAT_LOWEST_LONG,
	MD_STRAT_LOWEST_EARLY,
	MD_STRAT_LOWEST_LATE,
	MD_STRAT_COUNT,
	MD_STRAT_ALL = MD_STRAT_COUNT,	/* all of the above + improvement */
};

struct md_plan_opts {
	/*
	 * MD_STRAT_ALL or one strategy. With MD_STRAT_ALL, large dense
	 * problems run only the strategies that fit a fixed work budget
	 * (estimated from the number of time-overlapping pairs, never from
	 * the clock) unless @exhaustive is set.
	 */
	int strategy;
	/*
	 * Local search passes after the strategies (0: none). Each pass
	 * re-places every buffer; deterministic (fixed seed).
	 */
	int improve;
	int exhaustive;
	/*
	 * Seconds (<= 0: none). Past it no strategy is started or finished:
	 * the best plan of those that finished is the answer (-ETIME when
	 * none did), the local search stops where it is.
	 */
	double time_limit;
};

struct md_plan {
	uint64_t *offsets;	/* one per buffer, malloc()ed */
	size_t n;
	uint64_t peak;
	uint64_t lower_bound;	/* md_problem_lower_bound() */
	uint64_t total;		/* md_problem_total(): no reuse */
	int strategy;		/* the strategy that won */
	int improved;		/* 1 when the improvement pass beat it */
	uint32_t ran;		/* bit (1 << strategy) for each one run */
	uint64_t strategy_peak[MD_STRAT_COUNT];	/* peak of each one run */
};

/* Name of a strategy ("size-best", ...), "improved" or "?". */
const char *md_strategy_name(int strategy);

/*
 * md_plan_solve() - plan @p with the heuristics of @opts (NULL: all
 * strategies within the work budget, no local search),
 * validate the result and fill @plan (release with md_plan_free()). The same
 * input and options always give the same plan.
 * Return: 0, -EINVAL (bad problem), -EEXIST (two fixed buffers overlap:
 * md_plan_validate() on the fixed ones says which), -EOVERFLOW (sizes plus
 * alignment padding do not fit in 64 bits), -ETIME (opts->time_limit
 * passed before any strategy finished), -EFAULT (a solver produced an
 * invalid plan: a bug) or -ENOMEM.
 */
int md_plan_solve(const struct md_problem *p, const struct md_plan_opts *opts,
		  struct md_plan *plan);

void md_plan_free(struct md_plan *plan);

/* Where a long md_plan_solve() is (for a progress display). */
struct md_plan_progress {
	int strategy;		/* running now (MD_STRAT_COUNT: local search) */
	unsigned int pass;	/* 1-based: strategies and search passes */
	unsigned int passes;	/* how many this solve will run */
	size_t placed;		/* buffers placed in this pass */
	size_t n;		/* buffers of the problem */
};

typedef void (*md_plan_progress_fn)(void *arg,
				    const struct md_plan_progress *pr);

/*
 * md_plan_set_progress() - have every md_plan_solve() of the calling thread
 * (md_graph_plan() included) call @fn every few thousand placements and at
 * the start of each pass; NULL turns it off. @fn must not plan.
 */
void md_plan_set_progress(md_plan_progress_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_PLAN_H */
