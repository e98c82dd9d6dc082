/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner's scale shapes: make bench-plan times them at 10^5 and 10^6
 * buffers (and plans three of each random family against MiniMalloc),
 * selftests/lib/plan_test.c checks them smaller. Every random draw comes
 * from the caller's xorshift state *@rng, so a seed gives one problem.
 */
#ifndef METADEF_BENCH_SHAPES_H
#define METADEF_BENCH_SHAPES_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <metadef/plan.h>

#include "random.h"

enum shape {
	SH_ALIVE, SH_CHAIN, SH_RANDOM, SH_WIDE, SH_PAR, SH_PAR64, SH_COUNT
};

/* A buffer's size: 1..64 times 2^0..2^10 bytes. */
static inline uint64_t shape_size(uint64_t *rng)
{
	return (1 + md_xorshift64(rng) % 64) << (md_xorshift64(rng) % 11);
}

/*
 * @n buffers of shape @s (SH_ALIVE to SH_WIDE), 64-byte aligned, into
 * *@p (initialised here; the caller frees it, also on an error).
 * all alive: staggered lifetimes that all share one instant; chain: each
 * buffer lives two steps; random (graph-like): two buffers a step, most
 * dying within 8 steps, 1 % living up to 1000; random (wide): uniformly
 * random starts, lifetimes up to a tenth of the horizon (thousands alive,
 * memory cut into many pieces). Return: 0 or md_problem_add()'s error.
 */
static inline int shape_problem(enum shape s, size_t n, uint64_t *rng,
				struct md_problem *p)
{
	size_t i;
	int ret = 0;

	md_problem_init(p);
	for (i = 0; i < n && !ret; i++) {
		uint64_t lo, hi;

		switch (s) {
		case SH_ALIVE:
			lo = i;
			hi = n + i + 1;
			break;
		case SH_CHAIN:
			lo = i;
			hi = i + 2;
			break;
		case SH_RANDOM:
			lo = i / 2;
			hi = lo + (md_xorshift64(rng) % 100 ?
				   1 + md_xorshift64(rng) % 8 :
				   1 + md_xorshift64(rng) % 1000);
			break;
		default:
			lo = md_xorshift64(rng) % n;
			hi = lo + 1 + md_xorshift64(rng) % (n / 10 + 1);
			break;
		}
		ret = md_problem_add(p, NULL, lo, hi, shape_size(rng), 64);
	}
	return ret;
}

/*
 * A graph in parallel mode: n ops, each reading the previous tensor (one
 * in four also the one before) and the weights, one output each;
 * a barrier every @bar ops (0: none, every tensor alive the whole run).
 * Return: the text (malloc()ed, *@len bytes) or NULL.
 */
static inline char *parallel_graph(size_t n, size_t bar, uint64_t *rng,
				   size_t *len)
{
	size_t cap = n * 64 + 256, i, l = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	l += snprintf(s + l, cap - l, "mode parallel\ninput w 64K\ninput x 4K\n");
	for (i = 0; i < n; i++) {
		char in[48];

		if (!i)
			snprintf(in, sizeof(in), "x");
		else if (i > 1 && md_xorshift64(rng) % 4 == 0)
			snprintf(in, sizeof(in), "t%zu t%zu", i - 1, i - 2);
		else
			snprintf(in, sizeof(in), "t%zu", i - 1);
		l += snprintf(s + l, cap - l, "op o%zu %s w -> t%zu:%" PRIu64 "\n",
			      i, in, i, shape_size(rng));
		if (bar && i % bar == bar - 1)
			l += snprintf(s + l, cap - l, "barrier\n");
	}
	l += snprintf(s + l, cap - l, "output t%zu\n", n - 1);
	*len = l;
	return s;
}

#endif /* METADEF_BENCH_SHAPES_H */
