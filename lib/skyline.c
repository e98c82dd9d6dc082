// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Skyline over time for the planner: h(t) is the top of the highest block
 * placed at time t. A buffer put "on the skyline" goes at max h over its
 * lifetime, and raises h there to its own top. Times are compressed to the
 * distinct lower/upper values; a segment tree with range-chmax and
 * range-max answers both in O(log T). No hole below the skyline is ever
 * reused, which is what makes it cheap: the scalable placement for large
 * problems, and the canonical placement of exact solvers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

int md_skyline_init(struct md_skyline *s, const struct md_problem *p)
{
	struct md_kv *kv;
	size_t i, n = p->n, nt = 0;

	memset(s, 0, sizeof(*s));
	kv = malloc((2 * n + 1) * sizeof(*kv));
	s->lo = malloc((n + 1) * sizeof(*s->lo));
	s->hi = malloc((n + 1) * sizeof(*s->hi));
	if (!kv || !s->lo || !s->hi)
		goto nomem;
	for (i = 0; i < n; i++) {
		kv[2 * i] = (struct md_kv){ p->bufs[i].lower, (uint32_t)(2 * i) };
		kv[2 * i + 1] = (struct md_kv){ p->bufs[i].upper,
						(uint32_t)(2 * i + 1) };
	}
	if (md_sort_kv(kv, 2 * n))
		goto nomem;
	/* Rank of each end among the distinct times. */
	for (i = 0; i < 2 * n; i++) {
		uint32_t e = kv[i].idx;

		if (i && kv[i].key != kv[i - 1].key)
			nt++;
		if (e & 1)
			s->hi[e / 2] = (uint32_t)nt;
		else
			s->lo[e / 2] = (uint32_t)nt;
	}
	/* Elementary segments [t_k, t_k+1): nt of them (at least 1). */
	s->nseg = nt ? nt : 1;
	s->size = 1;
	while (s->size < s->nseg)
		s->size <<= 1;
	s->mx = calloc(2 * s->size, sizeof(*s->mx));
	s->tag = calloc(2 * s->size, sizeof(*s->tag));
	if (!s->mx || !s->tag)
		goto nomem;
	free(kv);
	return 0;
nomem:
	free(kv);
	md_skyline_free(s);
	return -ENOMEM;
}

void md_skyline_free(struct md_skyline *s)
{
	free(s->lo);
	free(s->hi);
	free(s->mx);
	free(s->tag);
	memset(s, 0, sizeof(*s));
}

void md_skyline_reset(struct md_skyline *s)
{
	memset(s->mx, 0, 2 * s->size * sizeof(*s->mx));
	memset(s->tag, 0, 2 * s->size * sizeof(*s->tag));
}

static uint64_t qmax(const struct md_skyline *s, size_t x, size_t l, size_t r,
		     size_t a, size_t b)
{
	size_t m;
	uint64_t v, w;

	if (a <= l && r <= b)
		return s->mx[x];
	/* The tag covers every point of this node, some of them in [a, b). */
	v = s->tag[x];
	m = (l + r) / 2;
	if (a < m) {
		w = qmax(s, 2 * x, l, m, a, b);
		if (w > v)
			v = w;
	}
	if (b > m) {
		w = qmax(s, 2 * x + 1, m, r, a, b);
		if (w > v)
			v = w;
	}
	return v;
}

static void chmax(struct md_skyline *s, size_t x, size_t l, size_t r,
		  size_t a, size_t b, uint64_t v)
{
	size_t m;

	if (a <= l && r <= b) {
		if (v > s->tag[x])
			s->tag[x] = v;
		if (v > s->mx[x])
			s->mx[x] = v;
		return;
	}
	m = (l + r) / 2;
	if (a < m)
		chmax(s, 2 * x, l, m, a, b, v);
	if (b > m)
		chmax(s, 2 * x + 1, m, r, a, b, v);
	s->mx[x] = s->tag[x];
	if (s->mx[2 * x] > s->mx[x])
		s->mx[x] = s->mx[2 * x];
	if (s->mx[2 * x + 1] > s->mx[x])
		s->mx[x] = s->mx[2 * x + 1];
}

uint64_t md_skyline_top(const struct md_skyline *s, uint32_t i)
{
	if (s->hi[i] <= s->lo[i])
		return 0;
	return qmax(s, 1, 0, s->size, s->lo[i], s->hi[i]);
}

void md_skyline_raise(struct md_skyline *s, uint32_t i, uint64_t top)
{
	if (s->hi[i] > s->lo[i])
		chmax(s, 1, 0, s->size, s->lo[i], s->hi[i], top);
}
