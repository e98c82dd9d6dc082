/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A model of a deep-learning framework's caching device allocator, the
 * peer of the footprint report (models_bench): PyTorch's
 * CUDACachingAllocator as its documentation and source describe it, with
 * its default settings (no max_split_size, no expandable segments, one
 * stream). Written here from that description; no code of theirs.
 *
 *   - A request of n bytes is rounded up to a multiple of 512 (at least
 *     512).
 *   - Requests of at most 1 MiB come from the small pool, the others
 *     from the large pool; a pool only ever serves its own requests.
 *   - A request takes the best cached free block of its pool: the
 *     smallest that fits, then the lowest address.
 *   - With none, a segment is allocated from the device: 2 MiB for a
 *     small request; 20 MiB for a large request under 10 MiB; else the
 *     request rounded up to a multiple of 2 MiB.
 *   - The block taken is split when what remains is >= 512 B (small
 *     pool) or > 1 MiB (large pool): the request keeps the low part, the
 *     rest stays free in the pool. Unsplit, the whole block is handed out.
 *   - A freed block merges with its free neighbours in the same segment.
 *   - Segments go back to the device only when an allocation would fail
 *     (the device is full): every wholly free segment is released and the
 *     segment allocation tried once more. The device has @capacity bytes
 *     (0: no limit), reserved bytes count against it.
 *
 * Its figure is the peak of reserved bytes (segments held), the memory a
 * framework process takes from the device; allocated bytes (blocks handed
 * out, rounding and unsplit remainders included) and requested bytes are
 * kept beside it.
 */
#ifndef METADEF_BENCH_CACHING_H
#define METADEF_BENCH_CACHING_H

#include <stdbool.h>
#include <stdint.h>

#include <metadef/plan.h>

#include "rbtree.h"

#define CACHE_MIN_BLOCK		512ull		/* rounding, small split */
#define CACHE_SMALL_SIZE	(1ull << 20)	/* largest small request */
#define CACHE_SMALL_BUFFER	(2ull << 20)	/* small pool's segments */
#define CACHE_LARGE_BUFFER	(20ull << 20)	/* large segments < 10 MiB */
#define CACHE_MIN_LARGE_ALLOC	(10ull << 20)	/* from here: own segment */
#define CACHE_ROUND_LARGE	(2ull << 20)	/* its rounding */

struct cache_block {
	struct md_rb_node node;		/* first: its pool's free tree */
	uint64_t addr, size;
	uint64_t requested;		/* bytes asked for, while allocated */
	struct cache_block *prev, *next;	/* neighbours, same segment */
	bool allocated;
	bool small;			/* small pool */
};

struct cache_stats {
	uint64_t reserved, reserved_peak;	/* segments held */
	uint64_t allocated, allocated_peak;	/* blocks handed out */
	uint64_t requested, requested_peak;	/* bytes asked for */
	uint64_t segments;			/* held now */
	uint64_t segment_allocs, segment_frees;	/* device calls */
	uint64_t allocs, frees;			/* requests served */
	uint64_t cache_hits;		/* served from a cached block */
	uint64_t splits, merges;
	uint64_t flushes;		/* cached segments released on OOM */
	uint64_t ooms;			/* requests that failed */
};

struct cache_sim;

/* Round a request as the allocator does (0 stays 0). */
uint64_t cache_round_size(uint64_t size);
/* The segment a request of @rounded bytes gets when nothing is cached. */
uint64_t cache_segment_size(uint64_t rounded);

/* A new allocator on a device of @capacity bytes (0: unbounded). */
int cache_sim_create(uint64_t capacity, struct cache_sim **out);
void cache_sim_destroy(struct cache_sim *cs);

/*
 * cache_sim_alloc() - serve a request of @size bytes (> 0); *@out is the
 * block (its addr and size). Return: 0, -EINVAL (size 0), -ENOMEM (the
 * device is full even after the cached segments were released, or the
 * host is out of memory).
 */
int cache_sim_alloc(struct cache_sim *cs, uint64_t size,
		    struct cache_block **out);
void cache_sim_free(struct cache_sim *cs, struct cache_block *b);

/* torch.cuda.empty_cache(): release every segment that is wholly free. */
void cache_sim_empty_cache(struct cache_sim *cs);

void cache_sim_stats(const struct cache_sim *cs, struct cache_stats *st);

/*
 * Check the allocator's invariants (segments tiled by their blocks, no
 * two free neighbours, the pools hold exactly the free blocks, the byte
 * counts add up). Return: 0, or -1 with *@why set.
 */
int cache_sim_check(const struct cache_sim *cs, const char **why);

/*
 * cache_replay() - run @p's buffers through @cs as a framework would
 * execute the graph: at each time step t, first every buffer whose life
 * ended (upper == t) is freed, then every buffer born at t (lower == t)
 * is allocated, each group in buffer order; the buffers alive to the end
 * are freed last. Buffers of size 0 allocate nothing.
 * Return: 0 or a negative errno (-ENOMEM: the device was too small).
 */
int cache_replay(struct cache_sim *cs, const struct md_problem *p);

#endif /* METADEF_BENCH_CACHING_H */
