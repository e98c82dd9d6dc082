// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library's one radix sort: stable LSD on 16-byte records keyed by
 * their first 64 bits, for the planner's (key, index) pairs (md_sort_kv)
 * and its neighbours' memory ranges; stable, so equal keys keep their
 * order and plans are deterministic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

_Static_assert(sizeof(struct md_kv) == 16 && offsetof(struct md_kv, key) == 0,
	       "md_kv is a 16-byte record keyed by its first 64 bits");

static inline uint64_t key_at(const unsigned char *r)
{
	uint64_t k;

	memcpy(&k, r, sizeof(k));
	return k;
}

void md_radix_sort16(void *a, void *tmp, size_t n)
{
	unsigned char *src = a, *dst = tmp;
	uint64_t all_or = 0, all_and = ~0ULL;
	size_t cnt[256], i;
	unsigned int shift;

	for (i = 0; i < n; i++) {
		uint64_t k = key_at(src + 16 * i);

		all_or |= k;
		all_and &= k;
	}
	for (shift = 0; shift < 64; shift += 8) {
		size_t sum = 0;

		/* A byte that is the same in every key does not reorder. */
		if (!(((all_or ^ all_and) >> shift) & 0xff))
			continue;
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(key_at(src + 16 * i) >> shift) & 0xff]++;
		for (i = 0; i < 256; i++) {
			size_t c = cnt[i];

			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			memcpy(dst + 16 * cnt[(key_at(src + 16 * i) >> shift) &
					      0xff]++, src + 16 * i, 16);
		src = dst;
		dst = dst == (unsigned char *)a ? tmp : a;
	}
	if (src != (unsigned char *)a)
		memcpy(a, src, 16 * n);
}

int md_sort_kv(struct md_kv *a, size_t n)
{
	uint64_t k0;
	struct md_kv *tmp;
	size_t i;

	if (n < 2)
		return 0;
	/* All keys equal: nothing moves, nothing to allocate. */
	k0 = a[0].key;
	for (i = 1; i < n && a[i].key == k0; i++)
		;
	if (i == n)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	md_radix_sort16(a, tmp, n);
	free(tmp);
	return 0;
}
