/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cutgen: hard offset-planning problems whose answer is known by
 * construction. A capacity x time rectangle is cut into rectangles (each
 * a buffer: its time span is the lifetime, its height the size); some of
 * them are then left out, as holes. Putting every buffer back where it was
 * cut from is a plan within the capacity, so the problem is feasible at
 * that capacity, and the lower bound (most bytes alive at once) says how
 * much slack the holes left.
 *
 * The families differ in how the cuts are shaped, as MiniMalloc's
 * "challenging" suite does: sizes and lifetimes spread over three decades
 * (A, C, K) or a near-even grid (G).
 */
#ifndef CUTGEN_H
#define CUTGEN_H

#include <stddef.h>
#include <stdint.h>

enum cutgen_family {
	CUTGEN_MIXED,	/* the biggest piece is cut at a random place */
	CUTGEN_SKEWED,	/* a random piece, cut near one edge: many slivers */
	CUTGEN_EVEN,	/* the biggest piece, cut near its middle */
	CUTGEN_NFAMILIES,
};

struct cutgen_opts {
	uint64_t seed;
	size_t n;		/* buffers wanted (after the holes) */
	enum cutgen_family family;
	unsigned int holes_pct;	/* pieces left out, percent of all cut */
	uint64_t capacity;	/* height of the rectangle, default 2^20 */
	uint64_t horizon;	/* width (time), default 2^20 */
	uint64_t grain;		/* cuts fall on multiples, default 1024 */
};

struct cutgen_buf {
	uint64_t lower, upper;	/* lifetime [lower, upper) */
	uint64_t size;
	uint64_t offset;	/* where it was cut from */
};

/*
 * cutgen() - fill @out (room for o->n) with a problem; return how many
 * buffers were made (o->n unless the rectangle could not be cut that
 * fine) or 0 on bad options.
 */
size_t cutgen(const struct cutgen_opts *o, struct cutgen_buf *out);

const char *cutgen_family_name(enum cutgen_family f);

#endif /* CUTGEN_H */
