// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Exact planner: the set-up. The problem as the search sees it: the free
 * buffers of size > 0 with their sections (the elementary time intervals
 * between the distinct ends of their lifetimes), time neighbours, fixed
 * obstacles, twins (symmetry), the static rankings and the memo's table;
 * and the reset of the search state before each run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "exact_internal.h"

/* Everything exact_setup() allocated, and what the search grew since. */
void exact_free(struct exact *e)
{
	free(e->buf);
	free(e->prob.orig);
	free(e->prob.nbr_start);
	free(e->prob.nbrs);
	free(e->prob.fixed_start);
	free(e->prob.fixed);
	free(e->prob.sec_start);
	free(e->prob.sec_bufs);
	free(e->prob.live);
	free(e->prob.zobrist);
	free(e->prob.twin);
	free(e->prob.rankings);
	free(e->search.floor);
	free(e->search.left);
	free(e->search.crossing);
	free(e->search.offset);
	free(e->search.placed);
	free(e->search.moves);
	free(e->search.saved_floors);
	free(e->search.saved_skylines);
	free(e->search.cuts);
	free(e->search.cands);
	free(e->search.unplaced);
	free(e->bound.tree_max);
	free(e->bound.tree_add);
	free(e->bound.sec_low);
	free(e->bound.lowest);
	free(e->bound.seen);
	free(e->memo.slots);
}

/*
 * The free buffers of size > 0 (prob.orig), their sizes, alignments and
 * keys, and the sections: the distinct ends of their lifetimes, in order.
 */
static int setup_buffers(struct exact *e, const struct md_problem *p)
{
	uint64_t seed = 0x243f6a8885a308d3ULL, total = 0;
	size_t n = 0, i, k, nsecs = 0;
	struct md_kv *kv;
	int ret = -ENOMEM;

	for (i = 0; i < p->n; i++)
		if (!(p->bufs[i].flags & MD_BUF_FIXED) && p->bufs[i].size)
			n++;
	e->prob.nbufs = n;
	e->prob.orig = malloc((n + 1) * sizeof(*e->prob.orig));
	kv = malloc((2 * p->n + 1) * sizeof(*kv));
	if (!e->prob.orig || !kv)
		goto out;
	for (i = 0, k = 0; i < p->n; i++)
		if (!(p->bufs[i].flags & MD_BUF_FIXED) && p->bufs[i].size)
			e->prob.orig[k++] = (uint32_t)i;

	e->buf = calloc(n + 1, sizeof(*e->buf));
	e->prob.zobrist = malloc((n + 1) * sizeof(*e->prob.zobrist));
	if (!e->buf || !e->prob.zobrist)
		goto out;
	for (i = 0; i < n; i++) {
		const struct md_buffer *b = &p->bufs[e->prob.orig[i]];

		kv[2 * i] = (struct md_kv){ b->lower, (uint32_t)(2 * i) };
		kv[2 * i + 1] = (struct md_kv){ b->upper,
						(uint32_t)(2 * i + 1) };
		e->buf[i].size = b->size;
		e->buf[i].align = b->align ? b->align : 1;
		seed += 0x9e3779b97f4a7c15ULL;
		e->prob.zobrist[i] = md_mix64(seed);
		total += b->size;
		if (total < b->size || total > (uint64_t)INT64_MAX / 4) {
			ret = -E2BIG;
			goto out;
		}
	}
	if (md_sort_kv(kv, 2 * n))
		goto out;
	for (i = 0; i < 2 * n; i++) {
		uint32_t x = kv[i].idx;

		if (i && kv[i].key != kv[i - 1].key)
			nsecs++;
		if (x & 1)
			e->buf[x / 2].sec_end = (uint32_t)nsecs;
		else
			e->buf[x / 2].sec_begin = (uint32_t)nsecs;
	}
	e->prob.nsecs = nsecs ? nsecs : 1;
	ret = 0;
out:
	free(kv);
	return ret;
}

/* Fixed buffers: obstacles of the free buffers alive with them. */
static int setup_fixed(struct exact *e, const struct md_problem *p)
{
	size_t n = e->prob.nbufs, nfixed = 0, pairs = 0, i, k;
	uint32_t *fixed, nf = 0;

	e->prob.fixed_start = calloc(n + 2, sizeof(*e->prob.fixed_start));
	if (!e->prob.fixed_start)
		return -ENOMEM;
	for (i = 0; i < p->n; i++)
		if (p->bufs[i].flags & MD_BUF_FIXED)
			nfixed++;
	if (!nfixed)
		return 0;
	fixed = malloc(nfixed * sizeof(*fixed));
	if (!fixed)
		return -ENOMEM;
	for (k = 0; k < p->n; k++)
		if ((p->bufs[k].flags & MD_BUF_FIXED) && p->bufs[k].size)
			fixed[nf++] = (uint32_t)k;
	for (i = 0; i < n; i++) {
		const struct md_buffer *b = &p->bufs[e->prob.orig[i]];

		for (k = 0; k < nf; k++) {
			const struct md_buffer *c = &p->bufs[fixed[k]];

			if (c->lower < b->upper && b->lower < c->upper)
				pairs++;
		}
		e->prob.fixed_start[i + 1] = (uint32_t)pairs;
		e->buf[i].nfixed = (uint32_t)(pairs - e->prob.fixed_start[i]);
		if (pairs > EXACT_MAX_PAIRS) {
			free(fixed);
			return -E2BIG;
		}
	}
	e->prob.fixed = malloc((2 * pairs + 1) * sizeof(*e->prob.fixed));
	if (!e->prob.fixed) {
		free(fixed);
		return -ENOMEM;
	}
	pairs = 0;
	for (i = 0; i < n; i++) {
		const struct md_buffer *b = &p->bufs[e->prob.orig[i]];

		for (k = 0; k < nf; k++) {
			const struct md_buffer *c = &p->bufs[fixed[k]];

			if (c->lower < b->upper && b->lower < c->upper) {
				e->prob.fixed[2 * pairs] = c->offset;
				e->prob.fixed[2 * pairs + 1] =
					c->offset + c->size;
				pairs++;
			}
		}
	}
	free(fixed);
	return 0;
}

/*
 * Time neighbours by a sweep in start order: O(n log n + pairs). Two
 * buffers overlap in time iff their section spans intersect.
 */
static int build_neighbours(struct exact *e)
{
	size_t n = e->prob.nbufs, a, b, pairs = 0, k, pass;
	struct md_kv *kv;
	uint32_t *deg;

	kv = malloc((n + 1) * sizeof(*kv));
	deg = calloc(n + 1, sizeof(*deg));
	e->prob.nbr_start = calloc(n + 1, sizeof(*e->prob.nbr_start));
	if (!kv || !deg || !e->prob.nbr_start)
		goto nomem;
	for (a = 0; a < n; a++)
		kv[a] = (struct md_kv){ e->buf[a].sec_begin, (uint32_t)a };
	if (md_sort_kv(kv, n))
		goto nomem;
	for (pass = 0; pass < 2; pass++) {
		for (a = 0; a < n; a++) {
			uint32_t i = kv[a].idx;

			for (b = a + 1; b < n; b++) {
				uint32_t j = kv[b].idx;

				if (e->buf[j].sec_begin >= e->buf[i].sec_end)
					break;
				if (!pass) {
					deg[i]++;
					deg[j]++;
					if (++pairs > EXACT_MAX_PAIRS) {
						free(kv);
						free(deg);
						return -E2BIG;
					}
					continue;
				}
				k = e->prob.nbr_start[i] + deg[i]++;
				e->prob.nbrs[k] = j;
				k = e->prob.nbr_start[j] + deg[j]++;
				e->prob.nbrs[k] = i;
			}
		}
		if (pass)
			break;
		for (a = 0; a < n; a++)
			e->prob.nbr_start[a + 1] = e->prob.nbr_start[a] + deg[a];
		e->prob.nbrs = malloc((2 * pairs + 1) * sizeof(*e->prob.nbrs));
		if (!e->prob.nbrs)
			goto nomem;
		memset(deg, 0, n * sizeof(*deg));
	}
	free(kv);
	free(deg);
	return 0;
nomem:
	free(kv);
	free(deg);
	return -ENOMEM;
}

/*
 * Per section: the bytes alive and the buffers alive (CSR); and the
 * search's and the bounds' arrays, per section and per buffer.
 */
static int setup_sections(struct exact *e)
{
	struct exact_problem *pb = &e->prob;
	size_t n = pb->nbufs, nsecs = pb->nsecs, slots = nsecs + 1, i, k;
	uint32_t *fill;

	pb->live = calloc(slots, sizeof(*pb->live));
	e->search.floor = calloc(slots, sizeof(*e->search.floor));
	e->search.left = calloc(slots, sizeof(*e->search.left));
	e->search.offset = calloc(n + 1, sizeof(*e->search.offset));
	e->search.crossing = calloc(slots, sizeof(*e->search.crossing));
	e->search.placed = calloc(n + 1, 1);
	e->search.moves = calloc(n + 1, sizeof(*e->search.moves));
	e->search.cuts = calloc(slots, sizeof(*e->search.cuts));
	e->bound.sec_low = calloc(slots, sizeof(*e->bound.sec_low));
	e->bound.seen = calloc(slots, sizeof(*e->bound.seen));
	pb->sec_start = calloc(slots + 1, sizeof(*pb->sec_start));
	e->bound.lowest = calloc(n + 1, sizeof(*e->bound.lowest));
	pb->twin = malloc((n + 1) * sizeof(*pb->twin));
	if (!pb->live || !e->search.floor || !e->search.left ||
	    !e->search.offset || !e->search.crossing || !e->search.placed ||
	    !e->search.moves || !e->search.cuts || !e->bound.sec_low ||
	    !e->bound.seen || !pb->sec_start || !e->bound.lowest || !pb->twin)
		return -ENOMEM;
	/* k: (buffer, section) pairs, the entries of sec_bufs */
	for (i = 0, k = 0; i < n; i++)
		k += e->buf[i].sec_end - e->buf[i].sec_begin;
	if (k > 8 * (size_t)EXACT_MAX_PAIRS)
		return -E2BIG;	/* too long-lived to search */
	e->search.saved_floors = malloc((k + 1) *
					sizeof(*e->search.saved_floors));
	pb->sec_bufs = malloc((k + 1) * sizeof(*pb->sec_bufs));
	e->search.saved_skylines = malloc((pb->nbr_start[n] + 1) *
					  sizeof(*e->search.saved_skylines));
	if (!e->search.saved_floors || !e->search.saved_skylines ||
	    !pb->sec_bufs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint32_t s;

		for (s = e->buf[i].sec_begin; s < e->buf[i].sec_end; s++) {
			pb->live[s] += e->buf[i].size;
			pb->sec_start[s + 1]++;
		}
	}
	for (i = 0; i < nsecs; i++)
		pb->sec_start[i + 1] += pb->sec_start[i];
	/* bound.seen, all 0 after, is the fill pointer meanwhile */
	fill = e->bound.seen;
	memcpy(fill, pb->sec_start, nsecs * sizeof(*fill));
	for (i = 0; i < n; i++) {
		uint32_t s;

		for (s = e->buf[i].sec_begin; s < e->buf[i].sec_end; s++)
			pb->sec_bufs[fill[s]++] = (uint32_t)i;
	}
	memset(fill, 0, nsecs * sizeof(*fill));
	e->bound.tree_size = 1;
	while (e->bound.tree_size < nsecs)
		e->bound.tree_size <<= 1;
	e->bound.tree_max = calloc(2 * e->bound.tree_size,
				   sizeof(*e->bound.tree_max));
	e->bound.tree_add = calloc(2 * e->bound.tree_size,
				   sizeof(*e->bound.tree_add));
	if (!e->bound.tree_max || !e->bound.tree_add)
		return -ENOMEM;
	return 0;
}

/*
 * Identical buffers (same lifetime, size, alignment) are interchangeable:
 * each one waits for its identical predecessor in input order, so the
 * search never tries both ways round.
 */
static int find_twins(struct exact *e, const struct md_problem *p)
{
	const uint32_t *orig = e->prob.orig;
	size_t n = e->prob.nbufs, i, pass;
	struct md_kv *kv;

	kv = malloc((n + 1) * sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		kv[i] = (struct md_kv){ 0, (uint32_t)i };
	/* stable passes: equal buffers end up adjacent, in input order */
	for (pass = 0; pass < 4; pass++) {
		for (i = 0; i < n; i++) {
			const struct md_buffer *b = &p->bufs[orig[kv[i].idx]];

			kv[i].key = pass == 0 ? b->align : pass == 1 ? b->size :
				    pass == 2 ? b->upper : b->lower;
		}
		if (md_sort_kv(kv, n)) {
			free(kv);
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		const struct md_buffer *a, *b;

		e->prob.twin[kv[i].idx] = EXACT_NONE;
		if (!i)
			continue;
		a = &p->bufs[orig[kv[i - 1].idx]];
		b = &p->bufs[orig[kv[i].idx]];
		if (a->lower == b->lower && a->upper == b->upper &&
		    a->size == b->size && a->align == b->align)
			e->prob.twin[kv[i].idx] = kv[i - 1].idx;
	}
	free(kv);
	return 0;
}

/*
 * Static rankings, tried in turn with growing node budgets. Letters are
 * keys, most significant first, all descending: T the most bytes alive in
 * any section of the buffer's lifetime, W its lifetime, A its area
 * (lifetime x size), Z its size; then input order.
 */
static const char *const rankings[] = { "WAT", "TAW", "TWA" };
#define NRANKINGS ARRAY_SIZE(rankings)

/* Key @letter of a ranking for buffer @x (larger ranks first). */
static uint64_t rank_key(const struct exact *e, const struct md_problem *p,
			 uint32_t x, char letter)
{
	const struct md_buffer *b = &p->bufs[e->prob.orig[x]];
	uint64_t v = 0, w = b->upper - b->lower;
	uint32_t s;

	switch (letter) {
	case 'T':
		for (s = e->buf[x].sec_begin; s < e->buf[x].sec_end; s++)
			if (e->prob.live[s] > v)
				v = e->prob.live[s];
		break;
	case 'W':
		v = w;
		break;
	case 'A':
		v = w > UINT64_MAX / (b->size | 1) ? UINT64_MAX : w * b->size;
		break;
	default:
		v = b->size;
		break;
	}
	return v;
}

static int build_rankings(struct exact *e, const struct md_problem *p)
{
	size_t n = e->prob.nbufs, i, k;
	struct md_kv *kv;

	e->prob.nrankings = NRANKINGS;
	e->prob.rankings = malloc((NRANKINGS * n + 1) *
				  sizeof(*e->prob.rankings));
	kv = malloc((n + 1) * sizeof(*kv));
	if (!e->prob.rankings || !kv) {
		free(kv);
		return -ENOMEM;
	}
	for (k = 0; k < NRANKINGS; k++) {
		const char *keys = rankings[k];
		int c;

		for (i = 0; i < n; i++)
			kv[i] = (struct md_kv){ 0, (uint32_t)i };
		/* stable sorts, least significant key first */
		for (c = (int)strlen(keys) - 1; c >= 0; c--) {
			for (i = 0; i < n; i++)
				kv[i].key = ~rank_key(e, p, kv[i].idx, keys[c]);
			if (md_sort_kv(kv, n)) {
				free(kv);
				return -ENOMEM;
			}
		}
		for (i = 0; i < n; i++)
			e->prob.rankings[k * n + kv[i].idx] = (uint32_t)(i + 1);
	}
	free(kv);
	return 0;
}

/* The transposition table: @memo_mib MiB (0: 16), a power of two. */
static int setup_memo(struct exact *e, unsigned int memo_mib)
{
	size_t slots, k = 4;

	if (!memo_mib)
		memo_mib = 16;
	slots = ((size_t)memo_mib << 20) / sizeof(uint64_t);
	while (k * 2 <= slots)
		k *= 2;
	e->memo.slots = calloc(k, sizeof(*e->memo.slots));
	if (!e->memo.slots)
		return -ENOMEM;
	e->memo.mask = k - 1;
	return 0;
}

/*
 * exact_setup() - the search over the free buffers of @p with size > 0:
 * zeroes @e, then builds the problem, the state's arrays and the memo.
 * Return: 0, -E2BIG (too big to search) or -ENOMEM; on an error nothing
 * is left to free.
 */
int exact_setup(struct exact *e, const struct md_problem *p,
		unsigned int memo_mib)
{
	int ret;

	memset(e, 0, sizeof(*e));
	ret = setup_buffers(e, p);
	if (!ret)
		ret = setup_fixed(e, p);
	if (!ret)
		ret = build_neighbours(e);
	if (!ret)
		ret = setup_sections(e);
	if (!ret)
		ret = find_twins(e, p);
	if (!ret)
		ret = build_rankings(e, p);
	if (!ret)
		ret = setup_memo(e, memo_mib);
	if (ret)
		exact_free(e);
	return ret;
}

/* Reset the search to nothing placed, for capacity @cap. */
void exact_reset(struct exact *e, uint64_t cap)
{
	struct exact_search *st = &e->search;
	size_t n = e->prob.nbufs, nsecs = e->prob.nsecs, i, s;

	st->cap = cap;
	st->cap_key = md_mix64(cap ^ 0x9c6e6877736c46e3ULL ^
				  ((uint64_t)st->ranking << 44));
	for (i = 0; i < n; i++)
		e->buf[i].skyline = 0;
	memset(st->floor, 0, nsecs * sizeof(*st->floor));
	memset(st->placed, 0, n);
	memset(st->crossing, 0, nsecs * sizeof(*st->crossing));
	memset(e->bound.tree_max, 0,
	       2 * e->bound.tree_size * sizeof(*e->bound.tree_max));
	memset(e->bound.tree_add, 0,
	       2 * e->bound.tree_size * sizeof(*e->bound.tree_add));
	st->nmoves = 0;
	st->nsaved_floors = 0;
	st->nsaved_skylines = 0;
	st->depth = 0;
	st->ncands = 0;
	st->nunplaced = 0;
	st->hash = 0;
	for (s = 0; s < nsecs; s++) {
		st->left[s] = e->prob.live[s];
		if (st->left[s])
			exact_tree_add(e, 1, 0, e->bound.tree_size, s, s + 1,
				       (int64_t)st->left[s]);
	}
	for (i = 0; i < n; i++) {
		uint32_t b;

		st->hash ^= exact_buf_key(e, (uint32_t)i, 0);
		for (b = e->buf[i].sec_begin; b + 1 < e->buf[i].sec_end; b++)
			st->crossing[b]++;
	}
}
