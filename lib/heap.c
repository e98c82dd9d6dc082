// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Binary min-heap (lib/heap.h). Both operations move a hole rather than
 * swapping: each level costs one comparison or two and one copy.
 */
#include <string.h>

#include "heap.h"

static inline void *at(const struct md_heap *h, size_t i)
{
	return (char *)h->base + i * h->size;
}

void md_heap_push(struct md_heap *h, const void *e)
{
	size_t i = h->n++;

	while (i) {
		size_t up = (i - 1) / 2;

		if (!h->less(e, at(h, up), h->arg))
			break;
		memcpy(at(h, i), at(h, up), h->size);
		i = up;
	}
	memcpy(at(h, i), e, h->size);
}

void md_heap_pop(struct md_heap *h, void *top)
{
	size_t i = 0, n;
	const void *e;

	memcpy(top, h->base, h->size);
	n = --h->n;
	/* The last element sinks from the root; its slot is past the end. */
	e = at(h, n);
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h->less(at(h, c + 1), at(h, c), h->arg))
			c++;
		if (!h->less(at(h, c), e, h->arg))
			break;
		memcpy(at(h, i), at(h, c), h->size);
		i = c;
	}
	if (n)
		memcpy(at(h, i), e, h->size);
}

int md_heap_check(const struct md_heap *h)
{
	size_t i;

	for (i = 1; i < h->n; i++)
		if (h->less(at(h, i), at(h, (i - 1) / 2), h->arg))
			return -1;
	return 0;
}
