/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the libFuzzer targets of selftests/fuzz/: a failed check
 * prints what it saw and aborts, which libFuzzer reports as a crash and
 * saves the input; and a plan checker written apart from the library's
 * validator (all pairs, O(n^2), for the small problems the targets make).
 */
#ifndef METADEF_FUZZ_H
#define METADEF_FUZZ_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/plan.h>

#include "random.h"

#define FUZZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s: ",	\
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

/* The input as a NUL-terminated string (malloc()ed; NULL: no memory). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

static inline uint64_t fuzz_hash(const uint8_t *data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3ULL;
	return h;
}

static inline uint64_t fuzz_rand(uint64_t *s)
{
	return md_splitmix64(s);
}

/*
 * Is @off a valid plan for @p? Every buffer aligned, inside 64 bits and at
 * its fixed offset if it has one; no two buffers alive at the same time
 * ([lower, upper) intersect) overlap in memory ([off, off + size)
 * intersect; a buffer of size 0 takes no memory). Return: 0 when valid, or
 * 1 with the first offending buffer (and, for an overlap, the other one)
 * in *@a and *@b (b = SIZE_MAX for a buffer wrong on its own).
 */
static inline int fuzz_plan_invalid(const struct md_problem *p,
				    const uint64_t *off, size_t *a, size_t *b)
{
	size_t i, j;

	for (i = 0; i < p->n; i++) {
		const struct md_buffer *x = &p->bufs[i];

		if ((x->align && off[i] % x->align) ||
		    off[i] > UINT64_MAX - x->size ||
		    ((x->flags & MD_BUF_FIXED) && off[i] != x->offset)) {
			*a = i;
			*b = SIZE_MAX;
			return 1;
		}
	}
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *x = &p->bufs[i];

		for (j = i + 1; j < p->n; j++) {
			const struct md_buffer *y = &p->bufs[j];

			if (!x->size || !y->size)
				continue;
			if (x->lower >= y->upper || y->lower >= x->upper)
				continue;
			if (off[i] >= off[j] + y->size ||
			    off[j] >= off[i] + x->size)
				continue;
			*a = i;
			*b = j;
			return 1;
		}
	}
	return 0;
}

/* max(offset + size) over the buffers that take memory (size > 0). */
static inline uint64_t fuzz_peak(const struct md_problem *p,
				 const uint64_t *off)
{
	uint64_t peak = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->bufs[i].size && off[i] + p->bufs[i].size > peak)
			peak = off[i] + p->bufs[i].size;
	return peak;
}

/* Abort unless @off is valid by fuzz_plan_invalid(); @what names the plan. */
static inline void fuzz_check_plan(const struct md_problem *p,
				   const uint64_t *off, const char *what)
{
	size_t a, b;

	if (!fuzz_plan_invalid(p, off, &a, &b))
		return;
	if (b == SIZE_MAX)
		FUZZ_CHECK(0, "%s: buffer %zu [%" PRIu64 ", %" PRIu64 ") size %" PRIu64
			   " align %" PRIu64 " at %" PRIu64 ": misaligned, fixed elsewhere or past 2^64",
			   what, a, p->bufs[a].lower, p->bufs[a].upper,
			   p->bufs[a].size, p->bufs[a].align, off[a]);
	FUZZ_CHECK(0, "%s: buffers %zu [%" PRIu64 ", %" PRIu64 ") at [%" PRIu64 ", +%" PRIu64
		   ") and %zu [%" PRIu64 ", %" PRIu64 ") at [%" PRIu64 ", +%" PRIu64 ") overlap",
		   what, a, p->bufs[a].lower, p->bufs[a].upper, off[a],
		   p->bufs[a].size, b, p->bufs[b].lower, p->bufs[b].upper,
		   off[b], p->bufs[b].size);
}

#endif /* METADEF_FUZZ_H */
