/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef dynamic pool: device memory for dynamic shapes.
 *
 * A model whose tensor sizes change with its input (images of varying
 * resolution, sequences of varying length) would otherwise ask the backend
 * for new regions on every request. The dynamic pool reserves a large
 * region once and carves blocks out of it:
 *
 *   - best fit: free blocks smaller than 1024 x the alignment sit in bins
 *     of their exact size (each a red-black tree by address, a bitmap of
 *     the bins that are not empty), larger ones in a red-black tree
 *     ordered by (size, address); an allocation takes the smallest free
 *     block that fits (the lowest address among equals: the first
 *     non-empty bin from its size up, else the tree's lower bound) and
 *     splits off what it does not need;
 *   - coalescing: each region keeps its blocks in address order, so a freed
 *     block merges with a free left and right neighbour in O(log n);
 *   - growth: when no free block fits, the pool reserves one more region,
 *     at least the request and at least @growth_pct percent of what is
 *     already reserved (a backend re-allocation, counted), never more in
 *     total than @capacity (0: no cap); under the cap, entirely free
 *     regions are given back first to make room; when the backend refuses
 *     (-ENOMEM, -EDQUOT) more than the request needs, the pool asks again
 *     for only what the request needs, and if that is refused too, gives
 *     its entirely free regions back and asks once more;
 *   - alignment: every block starts at a multiple of the pool's alignment
 *     (md_device_align() unless configured) and its size is rounded up to
 *     it;
 *   - metadata lives in host memory only (device memory may not be
 *     readable by the CPU): nothing is ever written into a block.
 *
 * Every block carries a struct md_block_sync (reuse.h) and follows the
 * reuse protocol: md_dynpool_alloc() hands it out ALLOCATED; users may
 * acquire and release it; md_dynpool_free() moves it from ALLOCATED (never
 * acquired) or RELEASED (its last holder let go) to RECYCLED in one
 * compare-exchange as it goes back to the free tree (-EBUSY while it is
 * held); when
 * its metadata serves a new block, it becomes ALLOCATED again with the
 * next generation (as md_block_sync_reuse() would make it). A double free, a free of a
 * block the pool does not know, or of a block reused since (stale
 * generation) is refused with -EINVAL and counted in bad_frees; a double
 * free whose block is still RECYCLED is also reported through the reuse
 * protocol's handler (md_reuse_set_handler(): a refused release). Both
 * that handler and @bad_free then run with the pool's lock held: they must
 * not call into the pool (its lock is not recursive; a handler waiting for
 * it from another thread deadlocks with the freeing thread the same way).
 *
 * All calls are thread-safe (one mutex per pool).
 */
#ifndef METADEF_DYNPOOL_H
#define METADEF_DYNPOOL_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/device.h>
#include <metadef/reuse.h>

#ifdef __cplusplus
extern "C" {
#endif

struct md_dynpool;

/* What md_dynpool_alloc() hands out. */
struct md_dynblock {
	uint64_t dev_va;	/* device address of the block */
	void *cpu;		/* CPU address, NULL if the device has none */
	uint64_t size;		/* usable bytes: the request rounded up */
	struct md_block_sync *sync;	/* valid until md_dynpool_destroy() */
	uint32_t generation;	/* of @sync when handed out */
	uint32_t pad;
};

struct md_dynpool_config {
	/*
	 * Bytes reserved by md_dynpool_create() (rounded up to pages, or to
	 * the alignment if larger; grow_min and growth_pct do not apply); 0:
	 * nothing until the first allocation, which reserves what it needs.
	 */
	uint64_t initial;
	/*
	 * A new region is at least this percentage of the bytes already
	 * reserved; 0 means 100 (the reservation doubles).
	 */
	uint32_t growth_pct;
	uint32_t pad;
	/* A new region is at least this many bytes (0: no minimum). */
	uint64_t grow_min;
	/* Total bytes the pool may reserve; 0: no cap. */
	uint64_t capacity;
	/*
	 * Block alignment, a power of two; 0: md_device_align(). Smaller than
	 * the device's alignment is refused.
	 */
	uint64_t align;
	/* Called (pool lock held) for every refused md_dynpool_free(). */
	void (*bad_free)(const struct md_dynblock *b, void *arg);
	void *bad_free_arg;
};

struct md_dynpool_stats {
	uint64_t requests;		/* md_dynpool_alloc() calls */
	uint64_t failures;		/* of those, refused (-ENOMEM, -EINVAL) */
	uint64_t frees;			/* successful md_dynpool_free() calls */
	uint64_t bad_frees;		/* refused md_dynpool_free() calls */
	uint64_t region_allocs;		/* regions obtained from the backend */
	uint64_t backend_reallocs;	/* region_allocs after the first */
	uint64_t region_frees;		/* regions given back */
	uint64_t regions;		/* live regions */
	uint64_t reserved_bytes;	/* in live regions */
	uint64_t reserved_peak;
	uint64_t requested_bytes;	/* live blocks, as requested */
	uint64_t bytes_in_use;		/* live blocks, rounded sizes */
	uint64_t bytes_peak;
	uint64_t blocks_in_use;
	uint64_t free_bytes;
	uint64_t free_blocks;		/* free blocks (bins and tree) */
	uint64_t largest_free;
	double fragmentation;		/* 1 - largest_free / free_bytes; 0 if none */
};

/*
 * md_dynpool_create() - a dynamic pool over @dev (which must outlive it).
 * @cfg may be NULL (defaults as documented above). Return: 0, -EINVAL (bad
 * alignment, initial above capacity), -ENOMEM or the backend's error for
 * the initial reservation.
 */
int md_dynpool_create(struct md_device *dev,
		      const struct md_dynpool_config *cfg,
		      struct md_dynpool **out);

/*
 * md_dynpool_destroy() - give every region back to the device, blocks still
 * in use included (check the stats first to find leaks). NULL is ok.
 */
void md_dynpool_destroy(struct md_dynpool *pool);

/*
 * md_dynpool_alloc() - a block of at least @size bytes (best fit). Return:
 * 0, -EINVAL (size 0 or too large to round), -ENOMEM (nothing fits and the
 * capacity or the backend refuses to grow; no block changed, though regions
 * that were entirely free may have been given back trying) or another
 * backend error.
 */
int md_dynpool_alloc(struct md_dynpool *pool, uint64_t size,
		     struct md_dynblock *out);

/*
 * md_dynpool_free() - give @b back. Return: 0; -EBUSY if the block still
 * has holders (ACTIVE; nothing changed); -EINVAL for a double free, an
 * unknown or a stale descriptor (refused, counted and reported as described
 * above). Against a user acquiring the block at the same moment with
 * md_block_sync_acquire_gen(b->sync, b->generation), one compare-exchange
 * decides: either the acquire comes first (-EBUSY here) or it is refused.
 * Users must acquire with the generation: once the metadata serves a new
 * block, a plain md_block_sync_acquire() would take that one.
 */
int md_dynpool_free(struct md_dynpool *pool, const struct md_dynblock *b);

/*
 * md_dynpool_trim() - give back the regions that are entirely free; when
 * every region is, the largest stays (the pool keeps one reservation).
 * Return: the number of regions given back.
 */
int md_dynpool_trim(struct md_dynpool *pool);

/* md_dynpool_stats() - a consistent copy of the pool's counters. */
void md_dynpool_stats(struct md_dynpool *pool, struct md_dynpool_stats *st);

/* One node of md_dynpool_dump_free()'s tree of the free blocks. */
struct md_dynpool_node {
	uint64_t dev_va;
	uint64_t size;
	int32_t left, right;	/* indexes of the children, -1 for none */
	uint32_t red;		/* 1 red, 0 black */
	uint32_t pad;
};

/*
 * md_dynpool_dump_free() - every free block (bins and tree alike) as one
 * balanced red-black search tree by (size, address), in pre-order (the
 * root first), for inspection and tests: writes up to @max nodes to @out
 * and returns how many there are (more than @max: nothing useful written;
 * call again with room).
 */
size_t md_dynpool_dump_free(struct md_dynpool *pool,
			    struct md_dynpool_node *out, size_t max);

/*
 * md_dynpool_check() - validate every internal invariant: the free tree
 * and every bin (ordering, parent links, root black, no red child of a red
 * node, equal black height on every path, node counts; each bin's blocks
 * of its size, its bit set iff it is not empty; the tree's blocks past the
 * bins), each region's address list
 * (contiguous, covering the region, no two free neighbours), the counters
 * and the reuse states (free blocks RECYCLED, live ones not). Return: 0 or
 * -EUCLEAN with *@why (if not NULL) naming the first broken rule.
 */
int md_dynpool_check(struct md_dynpool *pool, const char **why);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_DYNPOOL_H */
