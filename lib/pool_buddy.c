// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pools' binary buddy (lib/pool_internal.h): free blocks of each order
 * in a bitmap, so that finding a block's buddy is one bit test, and all of
 * it in host memory. Allocations are trimmed: the tail of the power of two
 * goes back at once as smaller blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bitmath.h"
#include "pool_internal.h"

static inline uint64_t words(const struct mbuddy *b, unsigned int k)
{
	return (((uint64_t)1 << (b->order - k)) + 63) / 64;
}

static inline void set_free(struct mbuddy *b, unsigned int k, uint64_t i)
{
	b->bits[k][i >> 6] |= 1ull << (i & 63);
	b->nfree[k]++;
}

static inline void set_used(struct mbuddy *b, unsigned int k, uint64_t i)
{
	b->bits[k][i >> 6] &= ~(1ull << (i & 63));
	b->nfree[k]--;
}

static inline bool is_free(const struct mbuddy *b, unsigned int k, uint64_t i)
{
	return b->bits[k][i >> 6] >> (i & 63) & 1;
}

int mbuddy_init(struct mbuddy *b, unsigned int order)
{
	uint64_t total = 0, at = 0;
	unsigned int k;

	if (order >= MB_ORDERS)
		return -EINVAL;
	memset(b, 0, sizeof(*b));
	b->order = order;
	for (k = 0; k <= order; k++)
		total += words(b, k);
	b->mem = calloc(total, sizeof(uint64_t));
	if (!b->mem)
		return -ENOMEM;
	for (k = 0; k <= order; k++) {
		b->bits[k] = b->mem + at;
		at += words(b, k);
	}
	set_free(b, order, 0);
	b->free_units = (uint64_t)1 << order;
	return 0;
}

void mbuddy_fini(struct mbuddy *b)
{
	free(b->mem);
	b->mem = NULL;
}

/* Free the block of order @k at index @i, merging with free buddies. */
static void free_block(struct mbuddy *b, unsigned int k, uint64_t i)
{
	while (k < b->order && is_free(b, k, i ^ 1)) {
		set_used(b, k, i ^ 1);
		i >>= 1;
		k++;
	}
	set_free(b, k, i);
}

static uint64_t find_free(const struct mbuddy *b, unsigned int k)
{
	uint64_t n = words(b, k), w;

	for (w = 0; w < n; w++)
		if (b->bits[k][w])
			return w * 64 + md_ctz64(b->bits[k][w]);
	return 0;	/* not reached: nfree[k] said there is one */
}

int64_t mbuddy_alloc(struct mbuddy *b, uint64_t units)
{
	unsigned int k, j;
	uint64_t i, off, p, end;

	if (!units || units > (uint64_t)1 << b->order)
		return -1;
	k = md_ceil_log2(units);
	for (j = k; j <= b->order && !b->nfree[j]; j++)
		;
	if (j > b->order)
		return -1;
	i = find_free(b, j);
	set_used(b, j, i);
	while (j > k) {		/* split, keep the lower half */
		j--;
		i <<= 1;
		set_free(b, j, i + 1);
	}
	off = i << k;
	b->free_units -= units;

	/*
	 * Trim: [units, 2^k) goes back as aligned pieces; each one's buddy
	 * lies below it, in use, so none of them merges.
	 */
	end = (uint64_t)1 << k;
	for (p = units; p < end; ) {
		uint64_t s = p & -p;

		free_block(b, md_ctz64(s), (off + p) >> md_ctz64(s));
		p += s;
	}
	return (int64_t)off;
}

void mbuddy_free(struct mbuddy *b, uint64_t off, uint64_t units)
{
	unsigned int k = md_ceil_log2(units), i;
	uint64_t p = 0;

	/* The pieces in descending size: each aligned to its own size. */
	for (i = k + 1; i-- > 0; ) {
		if (!(units >> i & 1))
			continue;
		free_block(b, i, (off + p) >> i);
		p += (uint64_t)1 << i;
	}
	b->free_units += units;
}

uint64_t mbuddy_largest(const struct mbuddy *b)
{
	unsigned int k;

	for (k = b->order + 1; k-- > 0; )
		if (b->nfree[k])
			return (uint64_t)1 << k;
	return 0;
}
