// SPDX-License-Identifier: GPL-2.0
/*
 * The caching allocator model (caching.h): segments from a simulated
 * device, carved into blocks; free blocks wait in one of two pools (small,
 * large), each a red-black tree ordered by (size, address) so that best
 * fit is one descent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "caching.h"

struct cache_seg {
	struct cache_seg *prev, *next;	/* every segment held */
	struct cache_block *head;	/* its lowest block */
	uint64_t addr, size;
	bool small;
};

struct cache_sim {
	struct md_rb_tree pool[2];	/* [1]: small */
	struct cache_seg *segs;
	uint64_t capacity;		/* 0: unbounded */
	uint64_t next_addr;		/* where the next segment goes */
	struct cache_stats st;
};

static inline struct cache_block *to_block(const struct md_rb_node *n)
{
	return (struct cache_block *)n;		/* node is the first member */
}

/* Smaller size first, then lower address. */
static int block_cmp(const struct md_rb_node *a, const struct md_rb_node *b)
{
	const struct cache_block *x = to_block(a), *y = to_block(b);

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

uint64_t cache_round_size(uint64_t size)
{
	if (!size)
		return 0;
	if (size < CACHE_MIN_BLOCK)
		return CACHE_MIN_BLOCK;
	return (size + CACHE_MIN_BLOCK - 1) / CACHE_MIN_BLOCK * CACHE_MIN_BLOCK;
}

uint64_t cache_segment_size(uint64_t rounded)
{
	if (rounded <= CACHE_SMALL_SIZE)
		return CACHE_SMALL_BUFFER;
	if (rounded < CACHE_MIN_LARGE_ALLOC)
		return CACHE_LARGE_BUFFER;
	return (rounded + CACHE_ROUND_LARGE - 1) / CACHE_ROUND_LARGE *
	       CACHE_ROUND_LARGE;
}

int cache_sim_create(uint64_t capacity, struct cache_sim **out)
{
	struct cache_sim *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return -ENOMEM;
	cs->capacity = capacity;
	cs->next_addr = CACHE_ROUND_LARGE;	/* 0 is no address */
	*out = cs;
	return 0;
}

static void release_segment(struct cache_sim *cs, struct cache_seg *s)
{
	struct cache_block *b = s->head;

	md_rb_erase(&cs->pool[s->small], &b->node);
	free(b);
	if (s->prev)
		s->prev->next = s->next;
	else
		cs->segs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	cs->st.reserved -= s->size;
	cs->st.segments--;
	cs->st.segment_frees++;
	free(s);
}

void cache_sim_destroy(struct cache_sim *cs)
{
	if (!cs)
		return;
	while (cs->segs) {
		struct cache_seg *s = cs->segs;
		struct cache_block *b = s->head, *n;

		cs->segs = s->next;
		for (; b; b = n) {
			n = b->next;
			free(b);
		}
		free(s);
	}
	free(cs);
}

/* A segment is wholly free when its one block is free and unsplit. */
static bool seg_free(const struct cache_seg *s)
{
	return !s->head->allocated && !s->head->next;
}

void cache_sim_empty_cache(struct cache_sim *cs)
{
	struct cache_seg *s = cs->segs, *n;

	for (; s; s = n) {
		n = s->next;
		if (seg_free(s))
			release_segment(cs, s);
	}
}

/* The best free block of a pool for @size: smallest, then lowest. */
static struct cache_block *best_fit(struct md_rb_tree *t, uint64_t size)
{
	struct md_rb_node *n = t->root, *best = NULL;

	while (n) {
		if (to_block(n)->size >= size) {
			best = n;	/* the leftmost such is the answer */
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best ? to_block(best) : NULL;
}

static struct cache_block *new_segment(struct cache_sim *cs, uint64_t size,
				       bool small)
{
	struct cache_seg *s = calloc(1, sizeof(*s));
	struct cache_block *b = calloc(1, sizeof(*b));

	if (!s || !b) {
		free(s);
		free(b);
		return NULL;
	}
	s->addr = cs->next_addr;
	s->size = size;
	s->small = small;
	s->head = b;
	s->next = cs->segs;
	if (cs->segs)
		cs->segs->prev = s;
	cs->segs = s;
	/* Device addresses: segment after segment, 2 MiB aligned. */
	cs->next_addr += (size + CACHE_ROUND_LARGE - 1) / CACHE_ROUND_LARGE *
			 CACHE_ROUND_LARGE;
	b->addr = s->addr;
	b->size = size;
	b->small = small;
	cs->st.reserved += size;
	if (cs->st.reserved > cs->st.reserved_peak)
		cs->st.reserved_peak = cs->st.reserved;
	cs->st.segments++;
	cs->st.segment_allocs++;
	return b;
}

static bool should_split(const struct cache_block *b, uint64_t size)
{
	uint64_t rest = b->size - size;

	return b->small ? rest >= CACHE_MIN_BLOCK : rest > CACHE_SMALL_SIZE;
}

int cache_sim_alloc(struct cache_sim *cs, uint64_t size,
		    struct cache_block **out)
{
	uint64_t want = cache_round_size(size), seg;
	bool small = want <= CACHE_SMALL_SIZE;
	struct md_rb_tree *pool = &cs->pool[small];
	struct cache_block *b;

	if (!size)
		return -EINVAL;
	b = best_fit(pool, want);
	if (b) {
		md_rb_erase(pool, &b->node);
		cs->st.cache_hits++;
	} else {
		seg = cache_segment_size(want);
		if (cs->capacity && cs->st.reserved + seg > cs->capacity) {
			/* Out of device memory: give back what is cached. */
			cache_sim_empty_cache(cs);
			cs->st.flushes++;
			if (cs->st.reserved + seg > cs->capacity) {
				cs->st.ooms++;
				return -ENOMEM;
			}
		}
		b = new_segment(cs, seg, small);
		if (!b)
			return -ENOMEM;
	}
	if (should_split(b, want)) {
		struct cache_block *rest = calloc(1, sizeof(*rest));

		if (!rest) {
			md_rb_insert(pool, &b->node, block_cmp);
			return -ENOMEM;
		}
		rest->addr = b->addr + want;
		rest->size = b->size - want;
		rest->small = small;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->size = want;
		md_rb_insert(pool, &rest->node, block_cmp);
		cs->st.splits++;
	}
	b->allocated = true;
	b->requested = size;
	cs->st.allocs++;
	cs->st.allocated += b->size;
	if (cs->st.allocated > cs->st.allocated_peak)
		cs->st.allocated_peak = cs->st.allocated;
	cs->st.requested += size;
	if (cs->st.requested > cs->st.requested_peak)
		cs->st.requested_peak = cs->st.requested;
	*out = b;
	return 0;
}

/* @b (free, in no tree) takes its free upper neighbour @n (in none). */
static void merge(struct cache_sim *cs, struct cache_block *b,
		  struct cache_block *n)
{
	b->size += n->size;
	b->next = n->next;
	if (n->next)
		n->next->prev = b;
	free(n);
	cs->st.merges++;
}

void cache_sim_free(struct cache_sim *cs, struct cache_block *b)
{
	struct cache_block *n = b->next, *p = b->prev;

	b->allocated = false;
	cs->st.frees++;
	cs->st.allocated -= b->size;
	cs->st.requested -= b->requested;
	b->requested = 0;
	if (n && !n->allocated) {
		md_rb_erase(&cs->pool[n->small], &n->node);
		merge(cs, b, n);
	}
	if (p && !p->allocated) {
		/* The lower block stays: a segment's head never moves. */
		md_rb_erase(&cs->pool[p->small], &p->node);
		merge(cs, p, b);
		b = p;
	}
	md_rb_insert(&cs->pool[b->small], &b->node, block_cmp);
}

void cache_sim_stats(const struct cache_sim *cs, struct cache_stats *st)
{
	*st = cs->st;
}

int cache_sim_check(const struct cache_sim *cs, const char **why)
{
	uint64_t reserved = 0, allocated = 0, requested = 0, nfree = 0;
	uint64_t nseg = 0;
	const struct cache_seg *s;
	const struct cache_block *b;
	int i;

	for (i = 0; i < 2; i++)
		if (md_rb_check(&cs->pool[i], block_cmp, why))
			return -1;
	for (s = cs->segs; s; s = s->next) {
		uint64_t at = s->addr;

		nseg++;
		reserved += s->size;
		if (s->head->prev) {
			*why = "a segment's head has a lower neighbour";
			return -1;
		}
		for (b = s->head; b; b = b->next) {
			if (b->addr != at || !b->size) {
				*why = "blocks do not tile their segment";
				return -1;
			}
			if (b->small != s->small) {
				*why = "a block of the wrong pool";
				return -1;
			}
			if (b->next && b->next->prev != b) {
				*why = "broken neighbour links";
				return -1;
			}
			if (!b->allocated && b->next && !b->next->allocated) {
				*why = "two free neighbours not merged";
				return -1;
			}
			if (b->allocated) {
				allocated += b->size;
				requested += b->requested;
			} else {
				nfree++;
			}
			at += b->size;
		}
		if (at != s->addr + s->size) {
			*why = "blocks do not tile their segment";
			return -1;
		}
	}
	if (nfree != cs->pool[0].count + cs->pool[1].count) {
		*why = "the pools do not hold exactly the free blocks";
		return -1;
	}
	if (reserved != cs->st.reserved || nseg != cs->st.segments ||
	    allocated != cs->st.allocated || requested != cs->st.requested) {
		*why = "byte counts do not add up";
		return -1;
	}
	return 0;
}

struct event {
	uint64_t t;
	uint32_t alloc;		/* 0: free (first at a step), 1: alloc */
	uint32_t buf;
};

static int event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->alloc != y->alloc)
		return x->alloc < y->alloc ? -1 : 1;
	return (x->buf > y->buf) - (x->buf < y->buf);
}

int cache_replay(struct cache_sim *cs, const struct md_problem *p)
{
	struct cache_block **blk = calloc(p->n + 1, sizeof(*blk));
	struct event *ev = malloc((2 * p->n + 1) * sizeof(*ev));
	size_t i, n = 0;
	int err = 0;

	if (!blk || !ev) {
		free(blk);
		free(ev);
		return -ENOMEM;
	}
	for (i = 0; i < p->n; i++) {
		if (!p->bufs[i].size)
			continue;
		ev[n++] = (struct event){ p->bufs[i].lower, 1, (uint32_t)i };
		ev[n++] = (struct event){ p->bufs[i].upper, 0, (uint32_t)i };
	}
	qsort(ev, n, sizeof(*ev), event_cmp);
	for (i = 0; i < n && !err; i++) {
		uint32_t k = ev[i].buf;

		if (ev[i].alloc) {
			err = cache_sim_alloc(cs, p->bufs[k].size, &blk[k]);
		} else {
			cache_sim_free(cs, blk[k]);
			blk[k] = NULL;
		}
	}
	/* On failure, give back what this replay still holds. */
	for (i = 0; err && i < p->n; i++)
		if (blk[i])
			cache_sim_free(cs, blk[i]);
	free(blk);
	free(ev);
	return err;
}
