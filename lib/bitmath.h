/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Powers of two, for the whole library (not installed). */
#ifndef METADEF_BITMATH_H
#define METADEF_BITMATH_H

#include <stdbool.h>
#include <stdint.h>

/* @v is a power of two (0 is not). */
static inline bool md_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The largest k with 2^k <= @n, for n >= 1 (the kernel's ilog2()). */
static inline unsigned int md_ilog2(uint64_t n)
{
	return 63 - __builtin_clzll(n);
}

/* The number of trailing zero bits of @n, for n >= 1. */
static inline unsigned int md_ctz64(uint64_t n)
{
	return __builtin_ctzll(n);
}

/* The smallest k with 2^k >= @n (0 for n <= 1; 64 for n > 2^63). */
static inline unsigned int md_ceil_log2(uint64_t n)
{
	return n <= 1 ? 0 : md_ilog2(n - 1) + 1;
}

/* 2^md_ceil_log2(@n), for n <= 2^63. */
static inline uint64_t md_pow2_ceil(uint64_t n)
{
	return (uint64_t)1 << md_ceil_log2(n);
}

#endif /* METADEF_BITMATH_H */
