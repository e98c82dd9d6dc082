// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Radix sort of (key, index) pairs for the planner and the validator:
 * stable, so equal keys stay in index order and plans are deterministic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

int md_sort_kv(struct md_kv *a, size_t n)
{
	uint64_t all_or = 0, all_and = ~0ULL;
	struct md_kv *tmp, *src = a, *dst;
	size_t cnt[256], i;
	unsigned int shift;

	if (n < 2)
		return 0;
	for (i = 0; i < n; i++) {
		all_or |= a[i].key;
		all_and &= a[i].key;
	}
	if (all_or == all_and)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (shift = 0; shift < 64; shift += 8) {
		size_t sum = 0;

		/* A byte that is the same in every key does not reorder. */
		if (!(((all_or ^ all_and) >> shift) & 0xff))
			continue;
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(src[i].key >> shift) & 0xff]++;
		for (i = 0; i < 256; i++) {
			size_t c = cnt[i];

			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[cnt[(src[i].key >> shift) & 0xff]++] = src[i];
		src = dst;
		dst = (dst == a) ? tmp : a;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	return 0;
}
