// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Plan validation, shared by every solver: a sweep over time keeps the
 * buffers alive at the current instant in an interval tree keyed by their
 * memory range [offset, offset + size); each buffer that starts asks the
 * tree whether its range is taken. O(n log n).
 */
#include <errno.h>
#include <stdlib.h>

#include <metadef/plan.h>

#include "internal.h"
#include "heap.h"
#include "itree.h"
#include "plan_internal.h"

static void fill(struct md_conflict *c, const struct md_problem *p,
		 const uint64_t *off, size_t a, size_t b)
{
	if (!c)
		return;
	c->a = a;
	c->a_lower = p->bufs[a].lower;
	c->a_upper = p->bufs[a].upper;
	c->a_off = off[a];
	c->a_end = off[a] + p->bufs[a].size;
	c->b = b;
	if (b == (size_t)-1)
		return;
	c->b_lower = p->bufs[b].lower;
	c->b_upper = p->bufs[b].upper;
	c->b_off = off[b];
	c->b_end = off[b] + p->bufs[b].size;
}

/* Buffers alive at the sweep's current time, by end (a min-heap). */
struct live {
	uint64_t upper;
	uint32_t idx, slot;
};

static bool live_less(const void *a, const void *b, void *arg)
{
	(void)arg;
	return ((const struct live *)a)->upper < ((const struct live *)b)->upper;
}

MD_API int md_plan_validate(const struct md_problem *p,
			    const uint64_t *offsets, struct md_conflict *c)
{
	struct md_kv *start = NULL;
	struct live *heap = NULL;
	uint32_t *owner = NULL, *free_slots = NULL;
	struct md_itree t = { 0 };
	struct md_heap hp;
	size_t i, nfree = 0, nslots = 0, cap = 0;
	int ret;

	if (p->n >= MD_ITREE_NIL)
		return -ERANGE;
	md_heap_init(&hp, NULL, sizeof(*heap), live_less, NULL);
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];

		if ((b->align > 1 && offsets[i] % b->align) ||
		    offsets[i] + b->size < offsets[i] ||
		    ((b->flags & MD_BUF_FIXED) && offsets[i] != b->offset)) {
			fill(c, p, offsets, i, (size_t)-1);
			return -EINVAL;
		}
	}
	start = malloc(p->n * sizeof(*start) + 1);
	if (!start || md_itree_init(&t, 0)) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->n; i++)
		start[i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
	if (md_sort_kv(start, p->n)) {
		ret = -ENOMEM;
		goto out;
	}
	/*
	 * Tree nodes are recycled slots, as many as buffers are ever alive
	 * at once: a small tree that stays in cache, and no array of n.
	 */
	for (i = 0; i < p->n; i++) {
		uint32_t x = start[i].idx, y, slot;
		const struct md_buffer *b = &p->bufs[x];

		/* [lower, upper): whatever ended by now is gone. */
		while (hp.n && heap[0].upper <= b->lower) {
			struct live e;

			md_heap_pop(&hp, &e);
			md_itree_remove(&t, e.slot);
			free_slots[nfree++] = e.slot;
		}
		if (!b->size)
			continue;
		y = md_itree_any(&t, offsets[x], offsets[x] + b->size);
		if (y != MD_ITREE_NIL) {
			fill(c, p, offsets, owner[y], x);
			ret = -EEXIST;
			goto out;
		}
		if (!nfree) {
			if (nslots == cap) {
				size_t nc = cap ? 2 * cap : 256;
				struct live *nh2 = realloc(heap, nc * sizeof(*nh2));
				uint32_t *no, *nf;

				if (nh2) {
					heap = nh2;
					hp.base = heap;
				}
				no = realloc(owner, nc * sizeof(*no));
				if (no)
					owner = no;
				nf = realloc(free_slots, nc * sizeof(*nf));
				if (nf)
					free_slots = nf;
				if (!nh2 || !no || !nf || md_itree_grow(&t, nc)) {
					ret = -ENOMEM;
					goto out;
				}
				cap = nc;
			}
			free_slots[nfree++] = (uint32_t)nslots++;
		}
		slot = free_slots[--nfree];
		owner[slot] = x;
		md_itree_insert(&t, slot, offsets[x], offsets[x] + b->size);
		md_heap_push(&hp, &(struct live){ b->upper, x, slot });
	}
	ret = 0;
out:
	md_itree_free(&t);
	free(start);
	free(heap);
	free(owner);
	free(free_slots);
	return ret;
}

MD_API uint64_t md_plan_peak(const struct md_problem *p,
			     const uint64_t *offsets)
{
	uint64_t peak = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->bufs[i].size && offsets[i] + p->bufs[i].size > peak)
			peak = offsets[i] + p->bufs[i].size;
	return peak;
}
