/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A binary min-heap over the caller's array of fixed-size elements, for
 * the whole library (the planner's lowest-first strategies, the ONNX
 * importer's topological order, the validator's sweep). The caller owns
 * the storage (room for every element it will push) and the count; the
 * order is the caller's strict "less than". Not installed.
 *
 * Deterministic: for a given sequence of pushes and pops the array goes
 * through the same states whatever the element type, so plans do not
 * depend on the heap. Elements that compare equal come out in an
 * unspecified (but reproducible) order; give the order a last tie-break
 * (an index) where that matters.
 */
#ifndef METADEF_HEAP_H
#define METADEF_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* @a comes out before @b. */
typedef bool (*md_heap_less_t)(const void *a, const void *b, void *arg);

struct md_heap {
	void *base;		/* the elements, h[0] the least */
	size_t n;		/* how many */
	size_t size;		/* bytes per element */
	md_heap_less_t less;
	void *arg;		/* passed to less */
};

static inline void md_heap_init(struct md_heap *h, void *base, size_t size,
				md_heap_less_t less, void *arg)
{
	h->base = base;
	h->n = 0;
	h->size = size;
	h->less = less;
	h->arg = arg;
}

/* The least element, or NULL if the heap is empty. */
static inline void *md_heap_top(const struct md_heap *h)
{
	return h->n ? h->base : NULL;
}

static inline void *md_heap_at_(const struct md_heap *h, size_t i)
{
	return (char *)h->base + i * h->size;
}

/*
 * Push and pop are inline: where the heap is a local with a constant
 * element size and order, the compiler turns the copies into moves and
 * the order into inline comparisons (a call per comparison cost the
 * planner a third of its time). Both move a hole rather than swapping:
 * one comparison or two and one copy per level.
 */

/* Add a copy of *@e: the array must have room for h->n + 1 elements. */
static inline __attribute__((always_inline)) void
md_heap_push(struct md_heap *h, const void *e)
{
	size_t i = h->n++;

	while (i) {
		size_t up = (i - 1) / 2;

		if (!h->less(e, md_heap_at_(h, up), h->arg))
			break;
		memcpy(md_heap_at_(h, i), md_heap_at_(h, up), h->size);
		i = up;
	}
	memcpy(md_heap_at_(h, i), e, h->size);
}

/* Take the least element out into *@top; the heap must not be empty. */
static inline __attribute__((always_inline)) void
md_heap_pop(struct md_heap *h, void *top)
{
	size_t i = 0, n;
	const void *e;

	memcpy(top, h->base, h->size);
	n = --h->n;
	/* The last element sinks from the root; its slot is past the end. */
	e = md_heap_at_(h, n);
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h->less(md_heap_at_(h, c + 1),
					 md_heap_at_(h, c), h->arg))
			c++;
		if (!h->less(md_heap_at_(h, c), e, h->arg))
			break;
		memcpy(md_heap_at_(h, i), md_heap_at_(h, c), h->size);
		i = c;
	}
	if (n)
		memcpy(md_heap_at_(h, i), e, h->size);
}

/* Every parent not after its children: 0, or -1 (tests). */
int md_heap_check(const struct md_heap *h);

#endif /* METADEF_HEAP_H */
