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

MD_API int md_plan_validate(const struct md_problem *p,
			    const uint64_t *offsets, struct md_conflict *c)
{
	struct md_kv *start = NULL, *end = NULL;
	uint32_t *slot_of = NULL, *owner = NULL, *free_slots = NULL;
	struct md_itree t = { 0 };
	size_t i, e = 0, live = 0, maxlive = 0, nfree;
	int ret;

	if (p->n >= MD_ITREE_NIL)
		return -ERANGE;
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
	end = malloc(p->n * sizeof(*end) + 1);
	slot_of = malloc(p->n * sizeof(*slot_of) + 1);
	if (!start || !end || !slot_of) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->n; i++) {
		start[i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)i };
		end[i] = (struct md_kv){ p->bufs[i].upper, (uint32_t)i };
	}
	if (md_sort_kv(start, p->n) || md_sort_kv(end, p->n)) {
		ret = -ENOMEM;
		goto out;
	}
	/*
	 * Tree nodes are recycled slots, as many as buffers are ever alive
	 * at once: a small tree that stays in cache.
	 */
	for (i = 0; i < p->n; i++) {
		while (e < p->n && end[e].key <= start[i].key) {
			e++;
			live--;
		}
		if (++live > maxlive)
			maxlive = live;
	}
	e = 0;
	owner = malloc(maxlive * sizeof(*owner) + 1);
	free_slots = malloc(maxlive * sizeof(*free_slots) + 1);
	if (!owner || !free_slots || md_itree_init(&t, maxlive)) {
		ret = -ENOMEM;
		goto out;
	}
	for (nfree = 0; nfree < maxlive; nfree++)
		free_slots[nfree] = (uint32_t)(maxlive - 1 - nfree);
	for (i = 0; i < p->n; i++) {
		uint32_t x = start[i].idx, y;
		const struct md_buffer *b = &p->bufs[x];

		/* [lower, upper): whatever ended by now is gone. */
		while (e < p->n && end[e].key <= b->lower) {
			uint32_t z = end[e].idx;

			if (p->bufs[z].size) {
				md_itree_remove(&t, slot_of[z]);
				free_slots[nfree++] = slot_of[z];
			}
			e++;
		}
		if (!b->size)
			continue;
		y = md_itree_any(&t, offsets[x], offsets[x] + b->size);
		if (y != MD_ITREE_NIL) {
			fill(c, p, offsets, owner[y], x);
			ret = -EEXIST;
			goto out;
		}
		slot_of[x] = free_slots[--nfree];
		owner[slot_of[x]] = x;
		md_itree_insert(&t, slot_of[x], offsets[x],
				offsets[x] + b->size);
	}
	ret = 0;
out:
	md_itree_free(&t);
	free(start);
	free(end);
	free(slot_of);
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
