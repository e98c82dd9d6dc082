// SPDX-License-Identifier: GPL-2.0
/*
 * cutgen: problems with a known feasible capacity, made by cutting a
 * rectangle into pieces (see cutgen.h). Deterministic in the seed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cutgen.h"

struct piece {
	uint64_t t0, t1;	/* grains of time */
	uint64_t o0, o1;	/* grains of offset */
};

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double unif(uint64_t *s)
{
	return (next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t area(const struct piece *p)
{
	return (p->t1 - p->t0) * (p->o1 - p->o0);
}

/* Which piece to cut next, or -1 when none can be. */
static long pick(const struct piece *v, size_t n, enum cutgen_family f,
		 uint64_t *s)
{
	double total = 0, r;
	size_t i, best = 0;
	int found = 0;

	if (f == CUTGEN_MIXED || f == CUTGEN_EVEN) {
		/*
		 * EVEN: always the biggest; MIXED: the biggest of three drawn
		 * at random, so that small and big pieces both survive.
		 */
		if (f == CUTGEN_MIXED) {
			int k;

			for (k = 0; k < 3; k++) {
				i = next(s) % n;
				if (area(&v[i]) > 1 &&
				    (!found || area(&v[i]) > area(&v[best]))) {
					best = i;
					found = 1;
				}
			}
			if (found)
				return best;
		}
		for (i = 0; i < n; i++)
			if (area(&v[i]) > 1 &&
			    (!found || area(&v[i]) > area(&v[best]))) {
				best = i;
				found = 1;
			}
		return found ? (long)best : -1;
	}
	/* SKEWED: any piece, the chance growing as the root of its area. */
	for (i = 0; i < n; i++)
		if (area(&v[i]) > 1)
			total += sqrt((double)area(&v[i]));
	if (total == 0)
		return -1;
	r = unif(s) * total;
	for (i = 0; i < n; i++) {
		if (area(&v[i]) <= 1)
			continue;
		r -= sqrt((double)area(&v[i]));
		best = i;
		if (r < 0)
			break;
	}
	return best;
}

/* Where to cut a side of @len grains (>= 2): in [1, len - 1]. */
static uint64_t cut_at(uint64_t len, enum cutgen_family f, uint64_t *s)
{
	double u = unif(s);
	uint64_t c;

	switch (f) {
	case CUTGEN_EVEN:
		u = 0.35 + 0.3 * u;
		break;
	case CUTGEN_SKEWED:
		u = u * u * 0.5;	/* near an edge ... */
		if (next(s) & 1)	/* ... either one */
			u = 1 - u;
		break;
	default:
		break;
	}
	c = (uint64_t)(u * len + 0.5);
	if (c < 1)
		c = 1;
	if (c > len - 1)
		c = len - 1;
	return c;
}

size_t cutgen(const struct cutgen_opts *o, struct cutgen_buf *out)
{
	uint64_t cap = o->capacity ? o->capacity : 1 << 20;
	uint64_t hor = o->horizon ? o->horizon : 1 << 20;
	uint64_t g = o->grain ? o->grain : 1024;
	uint64_t s = o->seed * 0x2545f4914f6cdd1dull + 1;
	struct piece *v;
	size_t m, n = 1, i, k;

	if (!o->n || o->holes_pct >= 100 || o->family >= CUTGEN_NFAMILIES ||
	    cap % g || hor % g)
		return 0;
	m = o->n * 100 / (100 - o->holes_pct);
	if (m < o->n)
		m = o->n;
	v = calloc(m, sizeof(*v));
	if (!v)
		return 0;
	v[0] = (struct piece){ 0, hor / g, 0, cap / g };
	while (n < m) {
		long j = pick(v, n, o->family, &s);
		struct piece *p, *q;
		uint64_t w, h;
		int in_time;

		if (j < 0)
			break;
		p = &v[j];
		q = &v[n++];
		*q = *p;
		w = p->t1 - p->t0;
		h = p->o1 - p->o0;
		/* Cut across the longer side more often, never a 1-grain one. */
		if (w < 2)
			in_time = 0;
		else if (h < 2)
			in_time = 1;
		else
			in_time = unif(&s) * (w + h) < w;
		if (in_time) {
			p->t1 = p->t0 + cut_at(w, o->family, &s);
			q->t0 = p->t1;
		} else {
			p->o1 = p->o0 + cut_at(h, o->family, &s);
			q->o0 = p->o1;
		}
	}
	/* Leave out pieces at random (a partial Fisher-Yates shuffle). */
	for (i = 0; i < n; i++) {
		struct piece t;

		k = i + next(&s) % (n - i);
		t = v[i];
		v[i] = v[k];
		v[k] = t;
	}
	if (n > o->n)
		n = o->n;
	for (i = 0; i < n; i++)
		out[i] = (struct cutgen_buf){
			.lower = v[i].t0 * g,
			.upper = v[i].t1 * g,
			.size = (v[i].o1 - v[i].o0) * g,
			.offset = v[i].o0 * g,
		};
	free(v);
	return n;
}

const char *cutgen_family_name(enum cutgen_family f)
{
	static const char *const names[] = { "mixed", "skewed", "even" };

	return f < CUTGEN_NFAMILIES ? names[f] : "?";
}
