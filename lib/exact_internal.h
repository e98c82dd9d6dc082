/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exact planner's state, shared by its files (lib/exact.md says what
 * the search does; its "Code layout and names" says where):
 *
 *   exact.c         md_exact_solve() and the other entry points, the two
 *                   modes, the restart portfolio, the search thread, the
 *                   time and node limits and progress reports
 *   exact_setup.c   the problem as the search sees it (free buffers in
 *                   sections, neighbours, fixed obstacles, twins, the
 *                   rankings, the memo's table) and its reset before a run
 *   exact_bounds.c  the lower bound of a problem and the pruning bounds of
 *                   a search node (sections, stacking, the max tree)
 *   exact_search.c  the branch and bound: moves and their undo, candidates
 *                   and dominance, symmetry, decomposition into parts,
 *                   hatless, the memo
 *
 * Notation of the comments, as in lib/exact.md: c(x) the lowest offset
 * buffer x can take on its skyline, L the offset of the buffer placed
 * last, R(s) the bytes still to place in section s.
 *
 * Not installed.
 */
#ifndef METADEF_EXACT_INTERNAL_H
#define METADEF_EXACT_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <metadef/exact.h>
#include <metadef/plan.h>

#include "random.h"

#define EXACT_NONE		UINT32_MAX	/* no buffer */
#define EXACT_CHECK_EVERY	1023u		/* nodes between clock checks */
#define EXACT_MAX_CANDS		(4u << 20)	/* candidate stack (128 MiB) */
#define EXACT_FRAME_BYTES	1024u		/* stack per level of the search */
#define EXACT_STACK_SPARE	(1u << 20)	/* stack for everything else */
/* Neighbour (or fixed obstacle) pairs above this: too big to search. */
#define EXACT_MAX_PAIRS		(8u << 20)

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif

/*
 * One buffer the search places (free, size > 0), its hot fields together.
 * size, align, the sections and nfixed are set up once; the search moves
 * skyline, and sets rank for each ranking it tries.
 */
struct exact_buf {
	uint64_t skyline;	/* highest top placed over its lifetime */
	uint64_t size;
	uint64_t align;		/* >= 1 */
	uint32_t sec_begin;	/* its sections: [sec_begin, sec_end) */
	uint32_t sec_end;
	uint32_t rank;		/* in the ranking searched: breaks ties */
	uint32_t nfixed;	/* fixed buffers alive with it */
};

/* A buffer a search node may place next (the candidate stack). */
struct exact_cand {
	uint64_t offset;	/* c(x): lowest offset on its skyline */
	uint64_t lowest;	/* lowest offset it can still get: c(x) or L */
	uint32_t buf;
	uint32_t pos;		/* index in its group's list of unplaced */
	uint32_t rank;
	uint32_t pad;
};

/* Unplaced buffers searched alone: the whole problem, or one part. */
struct exact_group {
	uint32_t first;		/* its buffers: unplaced[first ..] */
	uint32_t count;		/* ... first + count) */
	uint32_t sec_begin;	/* its sections: [sec_begin, sec_end) */
	uint32_t sec_end;
	uint64_t outside_hash;	/* hash of the state outside the group */
};

/* A buffer placed, with where its undo information starts. */
struct exact_move {
	uint32_t buf;
	uint32_t floors_at;	/* its sections' floors before: saved_floors[] */
	uint32_t skylines_at;	/* skylines it raised: saved_skylines[] */
};

/* A neighbour's skyline before a move raised it. */
struct exact_saved_skyline {
	uint32_t buf;
	uint64_t skyline;
};

/*
 * The problem, fixed after set-up. Buffers are the free ones of size > 0
 * (index x; orig[x] in the md_problem); sections are the elementary time
 * intervals between the distinct ends of their lifetimes. CSR lists: the
 * entries of x are list[start[x] .. start[x + 1]).
 */
struct exact_problem {
	size_t nbufs;
	size_t nsecs;			/* >= 1 */
	uint32_t *orig;			/* index in the md_problem */
	uint32_t *nbr_start, *nbrs;	/* buffers alive with each, CSR */
	uint32_t *fixed_start;		/* fixed obstacles of each, CSR ... */
	uint64_t *fixed;		/* ... into [start, end) offset pairs */
	uint32_t *sec_start, *sec_bufs;	/* buffers alive in each section */
	uint64_t *live;			/* bytes alive in each section */
	uint64_t *zobrist;		/* random key of each buffer */
	/* per buffer: its identical buffer placed first, or EXACT_NONE */
	uint32_t *twin;
	uint32_t *rankings;		/* nrankings rankings, nbufs each */
	size_t nrankings;
};

/*
 * Where the search is: what it placed, and what undoing each move needs.
 * Reset by exact_reset() before each run.
 */
struct exact_search {
	uint64_t cap;			/* capacity of this run */
	uint64_t cap_key;		/* hash of cap and ranking (memo) */
	size_t ranking;			/* which one of prob.rankings */
	/* per section: the top of the last buffer placed in it */
	uint64_t *floor;
	uint64_t *left;			/* per section: R(s) */
	/* per boundary s|s+1: unplaced buffers alive on both sides */
	uint32_t *crossing;
	uint64_t *offset;		/* per buffer: where it was placed */
	uint8_t *placed;		/* per buffer */
	/* of every unplaced buffer with its skyline (exact_buf_key()) */
	uint64_t hash;
	struct exact_move *moves;	/* the placements, in order */
	size_t nmoves;
	uint64_t *saved_floors;		/* undo of floor[] */
	size_t nsaved_floors;
	struct exact_saved_skyline *saved_skylines; /* undo of skylines */
	size_t nsaved_skylines;
	uint32_t *cuts;			/* scratch: boundaries nothing crosses */
	uint32_t depth;			/* of the recursion */
	uint32_t max_depth;		/* what the thread's stack has room for */
	struct exact_cand *cands;	/* candidate stack, a frame per node */
	size_t ncands, cands_cap;
	uint32_t *unplaced;		/* groups' lists, a stack of them */
	size_t nunplaced, unplaced_cap;
};

/* The pruning bounds' state (exact_bounds.c). */
struct exact_bound {
	int64_t *tree_max;		/* max segment tree over left[]: max */
	int64_t *tree_add;		/* ... and the add pending at a node */
	size_t tree_size;		/* leaves: a power of two >= nsecs */
	uint64_t *sec_low;		/* scratch: lowest place per section */
	/* per buffer: the lowest offset it can still get, at this node */
	uint64_t *lowest;
	uint32_t *seen, stamp;		/* sections checked at this node */
	int fresh;			/* a new group: check every section */
};

/* Failed states: a 4-way set-associative table of hashes. */
struct exact_memo {
	uint64_t *slots;		/* key | 1, 0 when empty */
	uint64_t mask;			/* slots - 1 (a power of two) */
};

/* When to stop, and what to report (exact.c). */
struct exact_limits {
	struct timespec start;		/* of the call */
	double deadline;		/* seconds since start, <= 0: none */
	volatile sig_atomic_t *cancel;
	uint64_t max_nodes;		/* 0: none */
	uint64_t nodes;			/* search nodes so far, all runs */
	uint64_t budget_end;		/* this run stops at this node count */
	int stop;			/* limit, cancel or no memory: unwind */
	int why;			/* enum md_exact_stop, when stop */
	int nomem;
	void (*progress)(const struct md_exact_progress *pr, void *arg);
	void *progress_arg;
	double last_report;		/* seconds since start */
	uint64_t report_nodes;		/* nodes at the last report */
	uint64_t best_peak;		/* reported: best plan so far */
	uint64_t proven_lb;		/* reported: proven lower bound */
};

struct exact {
	struct exact_buf *buf;		/* per buffer, in problem order */
	struct exact_problem prob;
	struct exact_search search;
	struct exact_bound bound;
	struct exact_memo memo;
	struct exact_limits limit;
	unsigned int disabled;		/* enum md_exact_prune bits */
};

/* Hash of unplaced buffer @x with @skyline: the state is their set. */
static inline uint64_t exact_buf_key(const struct exact *e, uint32_t x,
				     uint64_t skyline)
{
	return md_mix64(e->prob.zobrist[x] ^
			   (skyline * 0x2545f4914f6cdd1dULL));
}

/* exact.c */
double exact_elapsed(const struct exact *e);
int exact_check_limits(struct exact *e);

/* exact_setup.c */
int exact_setup(struct exact *e, const struct md_problem *p,
		unsigned int memo_mib);
void exact_free(struct exact *e);
void exact_reset(struct exact *e, uint64_t cap);

/* exact_bounds.c */
/*
 * The window bound: sub-problems of at most so many buffers, nodes each,
 * and at most this share of minimize mode's time limit.
 */
#define EXACT_WINDOW_BUFS	300
#define EXACT_WINDOW_NODES	20000
#define EXACT_WINDOW_SHARE	0.05
uint64_t exact_lower_bound(const struct md_problem *p);
uint64_t exact_bound_aligned(const struct md_problem *p);
uint64_t exact_bound_window(const struct md_problem *p, uint64_t lb,
			    uint64_t ub, size_t max_bufs, uint64_t nodes,
			    double seconds);
void exact_tree_add(struct exact *e, size_t node, size_t l, size_t r,
		    size_t a, size_t b, int64_t v);
int64_t exact_tree_max(const struct exact *e, size_t node, size_t l,
		       size_t r, size_t a, size_t b);
int exact_bound_sections(struct exact *e, const struct exact_group *g,
			 const struct exact_cand *cv, uint32_t n);
int exact_bound_after_move(struct exact *e);

/* exact_search.c */
int exact_run(struct exact *e, uint64_t cap);

#endif /* METADEF_EXACT_INTERNAL_H */
