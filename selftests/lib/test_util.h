/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host tests: small pieces several of them share.
 */
#ifndef METADEF_TEST_UTIL_H
#define METADEF_TEST_UTIL_H

#include <stdint.h>

#include <metadef/plan.h>

/*
 * xorshift64: the tests' seeded, reproducible pseudo-random numbers.
 * Each test keeps its own state (never 0) and so its own sequence.
 */
static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* MiniMalloc's 5-buffer example: optimum 12. */
static inline void example12(struct md_problem *p)
{
	md_problem_init(p);
	md_problem_add(p, "b1", 0, 3, 4, 0);
	md_problem_add(p, "b2", 3, 9, 4, 0);
	md_problem_add(p, "b3", 0, 9, 4, 0);
	md_problem_add(p, "b4", 9, 21, 4, 0);
	md_problem_add(p, "b5", 0, 21, 4, 0);
}

#endif /* METADEF_TEST_UTIL_H */
