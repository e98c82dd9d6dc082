// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Binary min-heap (lib/heap.h): push and pop are inline there; the
 * checker, for tests, is here.
 */
#include "heap.h"

int md_heap_check(const struct md_heap *h)
{
	size_t i;

	for (i = 1; i < h->n; i++)
		if (h->less(md_heap_at_(h, i), md_heap_at_(h, (i - 1) / 2),
			    h->arg))
			return -1;
	return 0;
}
