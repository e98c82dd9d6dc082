/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seeded pseudo-random numbers of the library, its tests and its
 * fuzzers: reproducible, not for anything secret. Not installed.
 *
 * One header, two generators with different jobs:
 *  - md_xorshift64() (Marsaglia's xorshift64, shifts 13, 7, 17): the
 *    streams of the planner's searches and of the tests; its state must
 *    never be 0.
 *  - md_splitmix64() (Steele, Lea and Flood's SplitMix64): any state is
 *    fine (0 too), so it turns a user's seed, a counter or a hash into
 *    well-mixed numbers; md_mix64() is its output for one state, a
 *    stateless 64-bit mixer (the exact solver's Zobrist keys, the kmod
 *    selftests' and the fuzzers' streams).
 */
#ifndef METADEF_RANDOM_H
#define METADEF_RANDOM_H

#include <stdint.h>

#define MD_GOLDEN64	0x9e3779b97f4a7c15ULL	/* 2^64 / golden ratio */

/* The next number of the sequence in *@state, which must never be 0. */
static inline uint64_t md_xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* SplitMix64's output for state @z (a bijection of the 64-bit words). */
static inline uint64_t md_mix64(uint64_t z)
{
	z += MD_GOLDEN64;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The next number of SplitMix64's sequence in *@state (any value). */
static inline uint64_t md_splitmix64(uint64_t *state)
{
	uint64_t z = md_mix64(*state);

	*state += MD_GOLDEN64;
	return z;
}

#endif /* METADEF_RANDOM_H */
