// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Arenas (include/metadef/arena.h): plans executed on one device region,
 * several plans sharing it, one of them active at a time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/arena.h>

#include "dlist.h"
#include "internal.h"

struct slot {
	uint64_t offset;
	uint64_t size;
	const char *id;		/* into md_arena_plan.ids, or NULL */
};

struct md_arena_plan {
	struct md_arena *arena;
	struct md_arena_plan *next, *prev;	/* the arena's bound plans */
	size_t n;
	uint64_t peak;
	struct slot *slots;
	char *ids;		/* every id, NUL-terminated, back to back */
	size_t *by_id;		/* indices of buffers with an id, sorted */
	size_t nid;
};

MD_DLIST_DEFINE(plan_list, struct md_arena_plan)

struct md_arena {
	struct md_device *dev;
	struct md_region region;
	uint64_t peak;
	uint64_t align;
	pthread_mutex_t lock;	/* the list, active and the counters */
	struct md_arena_plan *plans;
	struct md_arena_plan *active;
	size_t bound;
	uint64_t activations;
	uint64_t busy;
};

/* The highest offset + size of @offsets' buffers; -EINVAL on overflow. */
static int extent(const struct md_problem *p, const uint64_t *offsets,
		  uint64_t *end, uint64_t *align)
{
	size_t i;

	*end = 0;
	*align = 1;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];
		uint64_t a = b->align & -b->align;	/* its power of two */

		if (offsets[i] + b->size < offsets[i])
			return -EINVAL;
		if (offsets[i] + b->size > *end)
			*end = offsets[i] + b->size;
		if (a > *align)
			*align = a;
	}
	return 0;
}

MD_API int md_arena_create(struct md_device *dev,
			   const struct md_plan_ref *plans, size_t n,
			   struct md_arena **out)
{
	uint64_t peak = 0, align = md_device_align(dev);
	struct md_arena *a;
	size_t i;
	int err;

	*out = NULL;
	if (!n || !plans)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		uint64_t end, al;

		if (!plans[i].problem || !plans[i].offsets)
			return -EINVAL;
		err = extent(plans[i].problem, plans[i].offsets, &end, &al);
		if (err)
			return err;
		if (end > peak)
			peak = end;
		if (al > align)
			align = al;
	}

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	err = md_region_alloc(dev, peak ? peak : 1, align, &a->region);
	if (err) {
		free(a);
		return err;
	}
	a->dev = dev;
	a->peak = peak;
	a->align = align;
	pthread_mutex_init(&a->lock, NULL);
	*out = a;
	return 0;
}

static void plan_free(struct md_arena_plan *m)
{
	free(m->slots);
	free(m->ids);
	free(m->by_id);
	free(m);
}

MD_API void md_arena_destroy(struct md_arena *a)
{
	if (!a)
		return;
	while (a->plans) {
		struct md_arena_plan *m = a->plans;

		a->plans = m->next;
		plan_free(m);
	}
	md_region_free(a->dev, &a->region);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

MD_API void md_arena_info(const struct md_arena *a,
			  struct md_arena_info *info)
{
	struct md_arena *w = (struct md_arena *)a;

	pthread_mutex_lock(&w->lock);
	*info = (struct md_arena_info){
		.size = a->region.size,
		.peak = a->peak,
		.align = a->align,
		.dev_va = a->region.dev_va,
		.cpu = a->region.cpu,
		.bound = a->bound,
		.activations = a->activations,
		.busy = a->busy,
	};
	pthread_mutex_unlock(&w->lock);
}

static int by_id_cmp(const void *x, const void *y, void *arg)
{
	const struct md_arena_plan *m = arg;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = strcmp(m->slots[i].id, m->slots[j].id);

	if (c)
		return c;
	return i < j ? -1 : i > j;
}

/* Copy sizes, offsets and ids; sort the ids for md_arena_find(). */
static int plan_copy(struct md_arena_plan *m, const struct md_problem *p,
		     const uint64_t *offsets)
{
	size_t i, len = 0;
	char *s;

	m->n = p->n;
	m->slots = calloc(p->n ? p->n : 1, sizeof(*m->slots));
	m->by_id = calloc(p->n ? p->n : 1, sizeof(*m->by_id));
	if (!m->slots || !m->by_id)
		return -ENOMEM;
	for (i = 0; i < p->n; i++)
		if (p->bufs[i].id)
			len += strlen(p->bufs[i].id) + 1;
	s = m->ids = malloc(len ? len : 1);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < p->n; i++) {
		const struct md_buffer *b = &p->bufs[i];

		m->slots[i].offset = offsets[i];
		m->slots[i].size = b->size;
		if (offsets[i] + b->size > m->peak)
			m->peak = offsets[i] + b->size;
		if (!b->id)
			continue;
		len = strlen(b->id) + 1;
		memcpy(s, b->id, len);
		m->slots[i].id = s;
		s += len;
		m->by_id[m->nid++] = i;
	}
	qsort_r(m->by_id, m->nid, sizeof(*m->by_id), by_id_cmp, m);
	return 0;
}

MD_API int md_arena_bind(struct md_arena *a, const struct md_problem *problem,
			 const uint64_t *offsets, struct md_arena_plan **out)
{
	struct md_arena_plan *m;
	size_t i;
	int err;

	*out = NULL;
	if (!problem || !offsets)
		return -EINVAL;
	err = md_plan_validate(problem, offsets, NULL);
	if (err)
		return err == -ERANGE ? -ENOMEM : err;
	for (i = 0; i < problem->n; i++) {
		const struct md_buffer *b = &problem->bufs[i];

		/* Validated: offset + size does not overflow. */
		if (offsets[i] + b->size > a->region.size)
			return -ENOSPC;
	}
	for (i = 0; i < problem->n; i++) {
		uint64_t al = problem->bufs[i].align;

		if (al > 1 && (a->region.dev_va + offsets[i]) % al)
			return -EINVAL;
	}

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	err = plan_copy(m, problem, offsets);
	if (err) {
		plan_free(m);
		return err;
	}
	m->arena = a;

	pthread_mutex_lock(&a->lock);
	plan_list_add(&a->plans, m);
	a->bound++;
	pthread_mutex_unlock(&a->lock);
	*out = m;
	return 0;
}

MD_API int md_arena_unbind(struct md_arena_plan *m)
{
	struct md_arena *a;

	if (!m)
		return 0;
	a = m->arena;
	pthread_mutex_lock(&a->lock);
	if (a->active == m) {
		pthread_mutex_unlock(&a->lock);
		return -EBUSY;
	}
	plan_list_del(&a->plans, m);
	a->bound--;
	pthread_mutex_unlock(&a->lock);
	plan_free(m);
	return 0;
}

MD_API int md_arena_activate(struct md_arena_plan *m)
{
	struct md_arena *a = m->arena;
	int err = 0;

	pthread_mutex_lock(&a->lock);
	if (a->active == m) {
		err = -EALREADY;
	} else if (a->active) {
		a->busy++;
		err = -EBUSY;
	} else {
		a->active = m;
		a->activations++;
	}
	pthread_mutex_unlock(&a->lock);
	return err;
}

MD_API int md_arena_deactivate(struct md_arena_plan *m)
{
	struct md_arena *a = m->arena;
	int err = 0;

	pthread_mutex_lock(&a->lock);
	if (a->active == m)
		a->active = NULL;
	else
		err = -EINVAL;
	pthread_mutex_unlock(&a->lock);
	return err;
}

MD_API struct md_arena_plan *md_arena_active(struct md_arena *a)
{
	struct md_arena_plan *m;

	pthread_mutex_lock(&a->lock);
	m = a->active;
	pthread_mutex_unlock(&a->lock);
	return m;
}

MD_API size_t md_arena_plan_size(const struct md_arena_plan *m)
{
	return m->n;
}

MD_API uint64_t md_arena_plan_peak(const struct md_arena_plan *m)
{
	return m->peak;
}

MD_API int md_arena_tensor(const struct md_arena_plan *m, size_t index,
			   struct md_tensor *out)
{
	const struct md_region *r = &m->arena->region;
	const struct slot *s;

	if (index >= m->n)
		return -ENOENT;
	s = &m->slots[index];
	*out = (struct md_tensor){
		.offset = s->offset,
		.size = s->size,
		.dev_va = r->dev_va + s->offset,
		.cpu = r->cpu ? (char *)r->cpu + s->offset : NULL,
		.id = s->id,
		.index = index,
	};
	return 0;
}

MD_API int md_arena_find(const struct md_arena_plan *m, const char *id,
			 struct md_tensor *out)
{
	size_t lo = 0, hi = m->nid;

	if (!id)
		return -ENOENT;
	/* The first entry whose id is >= @id. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m->slots[m->by_id[mid]].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == m->nid || strcmp(m->slots[m->by_id[lo]].id, id))
		return -ENOENT;
	return md_arena_tensor(m, m->by_id[lo], out);
}
