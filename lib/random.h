/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seeded pseudo-random numbers of the library and its tests
 * (Marsaglia's xorshift64, shifts 13, 7, 17): reproducible, not for
 * anything secret. Not installed.
 */
#ifndef METADEF_RANDOM_H
#define METADEF_RANDOM_H

#include <stdint.h>

/* The next number of the sequence in *@state, which must never be 0. */
static inline uint64_t md_xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif /* METADEF_RANDOM_H */
