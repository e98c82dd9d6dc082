/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef tiered pools: device memory for a runtime's tensors.
 *
 * A pool sits on a struct md_device and serves each request from one of
 * three tiers (four with MD_POOL_DYNAMIC, below), chosen by the requested
 * size:
 *
 *   slab   size <  1 MiB   size classes (4 per power of two); slabs carved
 *                          out of "slab regions" (8 MiB by default); a
 *                          per-thread cache of free blocks per class
 *   buddy  1 MiB .. 16 MiB a binary buddy over 64 MiB regions (64 KiB
 *                          granules; a block is trimmed to whole granules)
 *   large  size > 16 MiB   a region of its own (md_region_alloc()); a freed
 *                          one is cached for a later request it fits
 *
 * or, with MD_POOL_DYNAMIC, every request of 1 MiB and up from a fourth:
 *
 *   dynamic size >= 1 MiB  best fit in a few growing regions, coalescing
 *                          (the dynamic pool's engine, dynpool.h), for
 *                          models whose tensor sizes change per request
 *
 * Every block starts at a multiple of the pool's alignment (the device's,
 * md_device_align(), unless configured) and its size is a multiple of it.
 *
 * Metadata is strictly out of band: the device memory may not be readable
 * by the CPU, so nothing is ever written into it. Each block is described
 * by a host-side descriptor (struct md_pool_block, private) and the caller
 * holds a struct md_buf: the descriptor, the generation it was handed out
 * in, the device address and the CPU address (NULL if there is none).
 *
 * The reuse protocol (reuse.h): every descriptor carries a struct
 * md_block_sync, and
 *
 *   md_alloc()         RECYCLED -> ALLOCATED (generation + 1), or a new
 *                      descriptor initialized ALLOCATED
 *   md_buf_acquire()   ALLOCATED -> ACTIVE (1 holder), ACTIVE -> ACTIVE (+1)
 *   md_buf_release()   ACTIVE -> ACTIVE (-1); the last holder: -> RELEASED
 *   md_free()          ALLOCATED (never used) or RELEASED (its users are
 *                      done) -> RELEASED -> RECYCLED in one compare-exchange:
 *                      the block goes back to its tier
 *   md_memory_cleaner() RELEASED -> RECYCLED for blocks nobody freed
 *
 * Every transition is a compare-exchange on the block's word that also
 * checks the generation in the caller's md_buf, so a handle kept past
 * md_free() can never touch the block's next life. Illegal operations are
 * refused, counted (md_pool_stats()) and reported to the pool's handler;
 * they never change anything:
 *
 *   free of an ACTIVE block              -EBUSY   MD_POOL_FREE_HELD
 *   free of a RECYCLED block             -EINVAL  MD_POOL_DOUBLE_FREE
 *   any call with an older generation,   -ESTALE  MD_POOL_USE_AFTER_FREE
 *     acquire/release of a RECYCLED block
 *   acquire/release of a RELEASED block  -EINVAL  MD_POOL_BAD_TRANSITION
 *   a handle not from this pool          -EINVAL  MD_POOL_BAD_HANDLE
 *
 * Descriptors live as long as the pool, so a stale handle is always safe
 * to pass in (it is refused, not undefined behaviour).
 *
 * Exhaustion (the configured limit, or the backend's -ENOMEM / -EDQUOT):
 * the pool first gives cached free memory back to the device and retries
 * once; if that fails md_alloc_ex() returns the error and fills a struct
 * md_oom_info with the figures and a message. Frees make room again.
 *
 * All calls are thread-safe. lib/runtime.md has the details.
 */
#ifndef METADEF_POOL_H
#define METADEF_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <metadef/device.h>
#include <metadef/reuse.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Requests below this go to the slab tier. */
#define MD_POOL_SLAB_LIMIT	(1ull << 20)
/* Requests up to and including this go to the buddy tier; above: large. */
#define MD_POOL_BUDDY_LIMIT	(16ull << 20)

enum md_pool_tier {
	MD_TIER_SLAB,
	MD_TIER_BUDDY,
	MD_TIER_LARGE,
	MD_TIER_DYNAMIC,	/* only with MD_POOL_DYNAMIC */
	MD_TIER_COUNT
};

struct md_pool;
struct md_pool_block;	/* host-side descriptor: private */

/* What md_alloc() hands out; copy it freely. */
struct md_buf {
	struct md_pool_block *block;
	uint64_t dev_va;	/* device address of the block */
	void *cpu;		/* CPU address, NULL if the device has none */
	uint64_t size;		/* usable bytes: >= the request */
	uint32_t generation;	/* of the block when handed out */
	uint32_t tier;		/* enum md_pool_tier */
};

enum md_pool_violation_kind {
	MD_POOL_DOUBLE_FREE,
	MD_POOL_FREE_HELD,
	MD_POOL_USE_AFTER_FREE,
	MD_POOL_BAD_TRANSITION,
	MD_POOL_BAD_HANDLE,
	MD_POOL_VIOLATION_KINDS
};

/* A refused operation, as the handler sees it. */
struct md_pool_violation {
	enum md_pool_violation_kind kind;
	enum md_reuse_op op;		/* MD_REUSE_ACQUIRE, _RELEASE or _RECYCLE (free) */
	enum md_block_state state;	/* the block's state then (0 if unknown) */
	uint32_t holders;
	uint32_t generation;		/* the block's */
	uint32_t expected;		/* the caller's handle's */
	const struct md_buf *buf;
	const char *tag;		/* of the block's current life, may be NULL */
	const char *site;
};

typedef void (*md_pool_handler_t)(const struct md_pool_violation *v,
				  void *arg);

/* Flags of struct md_pool_config. */
#define MD_POOL_NO_TCACHE	0x1u	/* no per-thread caches: every slab op locks */
/*
 * Requests of MD_POOL_SLAB_LIMIT and up go to the dynamic tier instead of
 * buddy and large (its regions: at least buddy_region each, at most
 * @limit in all; they count against the limit like the other tiers').
 */
#define MD_POOL_DYNAMIC		0x2u
/*
 * Blocks are routinely acquired, released or freed by threads other than
 * the one that allocated them: every md_free() is a compare-exchange.
 * Without it the thread that allocated a block frees it with plain
 * stores, and another thread's first write to a block's state (acquire,
 * release, free) runs membarrier(2), a barrier on every running thread of
 * the process, once per block descriptor (lib/runtime.md).
 */
#define MD_POOL_SHARED_BLOCKS	0x4u

struct md_pool_config {
	/* Block alignment, a power of two; 0: md_device_align(dev). */
	uint64_t align;
	/* Bytes of device regions the pool may hold in all; 0: no limit. */
	uint64_t limit;
	/* Size of the regions slabs are carved from, a power of two >= 1 MiB; 0: 8 MiB. */
	uint64_t slab_region;
	/* Size of the buddy tier's regions, a power of two >= 16 MiB; 0: 64 MiB. */
	uint64_t buddy_region;
	uint32_t flags;		/* MD_POOL_*; others: -EINVAL */
	uint32_t pad;		/* 0 */
	/* Called for every refused operation (no pool lock held); may be NULL. */
	md_pool_handler_t handler;
	void *handler_arg;
};

/*
 * Optional details of one allocation. @tag and @site are kept by pointer
 * and read by snapshots, the cleaner and violation reports, which may run
 * in another thread just as the block is freed: they must stay valid as
 * long as the pool (string literals, MD_SITE, or strings the runtime keeps
 * until md_pool_destroy()).
 */
struct md_alloc_opts {
	const char *tag;	/* owner tag */
	const char *site;	/* allocation site, e.g. MD_SITE */
	struct md_oom_info *oom;	/* filled when md_alloc_ex() fails for lack of memory */
};

#define MD_STR_(x)	#x
#define MD_STR(x)	MD_STR_(x)
/* "file.c:123" of the line it appears on. */
#define MD_SITE		__FILE__ ":" MD_STR(__LINE__)

/* Counters of one tier, or of the whole pool (struct md_pool_stats.total). */
struct md_tier_stats {
	uint64_t alloc_count;		/* blocks handed out, ever */
	uint64_t free_count;		/* blocks recycled, ever (md_free or cleaner) */
	uint64_t current_count;		/* alloc_count - free_count */
	uint64_t peak_count;
	uint64_t allocated_bytes;	/* block sizes handed out, ever */
	uint64_t freed_bytes;		/* block sizes recycled, ever */
	uint64_t current_bytes;		/* allocated_bytes - freed_bytes */
	uint64_t peak_bytes;
	uint64_t requested_bytes;	/* what callers asked for, live blocks */
	uint64_t requested_total;	/* what callers asked for, ever */
	uint64_t region_count;		/* backend regions held */
	uint64_t region_bytes;		/* their bytes ("reserved") */
	uint64_t region_peak_bytes;
	uint64_t region_allocs;		/* md_region_alloc() successes, ever */
	uint64_t region_frees;
	uint64_t free_bytes;		/* region_bytes - current_bytes */
	uint64_t largest_free;		/* largest free extent (lib/runtime.md) */
	double fragmentation;		/* 1 - largest_free / free_bytes; 0 if none */
	uint64_t oom_count;		/* allocations refused for lack of memory */
};

struct md_pool_stats {
	struct md_tier_stats tier[MD_TIER_COUNT];
	struct md_tier_stats total;
	uint64_t violations;			/* refused operations, all kinds */
	uint64_t violation[MD_POOL_VIOLATION_KINDS];
	uint64_t limit;				/* the configured limit, 0: none */
	uint64_t align;
	const char *backend;			/* "kmod" or "host" */
};

/* Why md_alloc_ex() failed, with the figures at that moment. */
struct md_oom_info {
	int error;			/* -ENOMEM or -EDQUOT */
	uint32_t tier;			/* enum md_pool_tier of the request */
	uint64_t requested;		/* the request */
	uint64_t block_size;		/* what it would have taken */
	uint64_t limit;			/* the pool's limit, 0: none */
	int limit_hit;			/* 1: the pool's limit refused, 0: the backend */
	int pad;
	struct md_pool_stats stats;
	char message[640];		/* one line, for a log or an exception */
};

/*
 * md_pool_create() - a pool over @dev (which must outlive it). @cfg may be
 * NULL. Return: 0, -EINVAL (alignment not a power of two, region sizes,
 * unknown flags, pad not 0) or -ENOMEM.
 */
int md_pool_create(struct md_device *dev, const struct md_pool_config *cfg,
		   struct md_pool **out);

/*
 * md_pool_destroy() - give every region back to the device, blocks still
 * held included (run md_memory_cleaner() first to find them). Handles of
 * the pool must not be used afterwards. NULL is ok.
 */
void md_pool_destroy(struct md_pool *pool);

struct md_device *md_pool_device(const struct md_pool *pool);
uint64_t md_pool_align(const struct md_pool *pool);

/* The tier a request of @size bytes goes to. */
enum md_pool_tier md_pool_tier_of(uint64_t size);

/* "slab", "buddy", "large", "dynamic"; "invalid" otherwise. */
const char *md_pool_tier_name(enum md_pool_tier tier);
const char *md_pool_violation_name(enum md_pool_violation_kind kind);

/*
 * md_alloc() - a block of at least @size bytes, ALLOCATED. Return: 0,
 * -EINVAL (size 0 or too large), -ENOMEM, -EDQUOT or another backend error;
 * @out is untouched on error.
 */
int md_alloc(struct md_pool *pool, uint64_t size, struct md_buf *out);

/* md_alloc_ex() - md_alloc() with a tag, a site and OOM details (@opts may be NULL). */
int md_alloc_ex(struct md_pool *pool, uint64_t size,
		const struct md_alloc_opts *opts, struct md_buf *out);

/* md_alloc_ex() with @tag and @site only (C and C++ alike). */
static inline int md_alloc_tagged_at(struct md_pool *pool, uint64_t size,
				     const char *tag, const char *site,
				     struct md_buf *out)
{
	struct md_alloc_opts opts = { tag, site, NULL };

	return md_alloc_ex(pool, size, &opts, out);
}

/* md_alloc() recording @tag and the caller's file and line. */
#define md_alloc_tagged(pool, size, owner, out)				\
	md_alloc_tagged_at((pool), (size), (owner), MD_SITE, (out))

/*
 * md_free() - give a block back (see the table above). Return: 0, -EBUSY,
 * -EINVAL or -ESTALE; nothing changes on error.
 */
int md_free(struct md_pool *pool, const struct md_buf *buf);

/*
 * md_buf_acquire() - one more holder (ALLOCATED or ACTIVE). Return: 0,
 * -EINVAL or -ESTALE.
 */
int md_buf_acquire(struct md_pool *pool, const struct md_buf *buf);

/*
 * md_buf_release() - one holder fewer. Return: 1 when the block became
 * RELEASED (the last holder), 0 when holders remain, -EINVAL or -ESTALE.
 */
int md_buf_release(struct md_pool *pool, const struct md_buf *buf);

/*
 * md_buf_state() - the block's state (enum md_block_state) if @buf is
 * still its current life, -ESTALE if the block was recycled since (even if
 * not reused yet: RECYCLED is reported as -ESTALE too), -EINVAL for a
 * handle not from @pool.
 */
int md_buf_state(struct md_pool *pool, const struct md_buf *buf);

/*
 * md_pool_stats() - the pool's counters (lib/runtime.md defines them).
 * Exact when no other thread is allocating at the same time.
 */
void md_pool_stats(struct md_pool *pool, struct md_pool_stats *st);

/*
 * md_pool_last_oom() - the most recent allocation refused for lack of
 * memory. Return: 0, or -ENOENT if there was none.
 */
int md_pool_last_oom(struct md_pool *pool, struct md_oom_info *oom);

/*
 * md_snapshot() - the pool as JSON: its configuration, its stats and every
 * live (not recycled) block with size, requested size, tier, state,
 * holders, generation, tag and site. Return: 0, -EIO (write error) or
 * -ENOMEM (no memory to list the blocks; nothing written).
 */
int md_snapshot(struct md_pool *pool, FILE *out);

/*
 * md_snapshot_buf() - md_snapshot() into @buf (at most @len bytes with the
 * NUL). Return: the length of the whole snapshot (as snprintf(): larger
 * than or equal to @len means it was cut), -ENOMEM or -EIO.
 */
long md_snapshot_buf(struct md_pool *pool, char *buf, size_t len);

/* Flags of md_pool_summary(). */
#define MD_SUMMARY_BYTES	0x1u	/* every size in bytes, for scripts */
#define MD_SUMMARY_FLAGS	0x1u	/* all of them */

/*
 * md_pool_summary() - the pool's figures as a table for people to read
 * (what framework allocators call a memory summary): one column per tier
 * and one for the whole pool; rows reserved (region bytes) and its peak,
 * allocated (block bytes handed out, live) with its peak and its total
 * ever, active (bytes of blocks users hold right now: ACTIVE), requested,
 * free, largest free extent, fragmentation, blocks (live, peak, ever),
 * active blocks, regions (held, ever obtained), allocations refused for
 * lack of memory; then the refused operations by kind. Sizes in B, KiB,
 * MiB, GiB or TiB (two decimals), or exact with MD_SUMMARY_BYTES. The
 * figures are md_pool_stats()'s (lib/runtime.md) but active, counted by
 * walking the live blocks. Return: 0, -EINVAL (NULL @pool or @out, unknown
 * flags) or -EIO (write error).
 */
int md_pool_summary(struct md_pool *pool, FILE *out, unsigned int flags);

/*
 * md_pool_summary_buf() - md_pool_summary() into @buf (at most @len bytes
 * with the NUL). Return: the length of the whole summary (as snprintf():
 * larger than or equal to @len means it was cut), -EINVAL, -ENOMEM or -EIO.
 */
long md_pool_summary_buf(struct md_pool *pool, char *buf, size_t len,
			 unsigned int flags);

/* What md_memory_cleaner() did and found. */
struct md_cleaner_report {
	uint64_t recycled_blocks;	/* RELEASED blocks it recycled */
	uint64_t recycled_bytes;
	uint64_t slabs_released;	/* empty slabs back to their region */
	uint64_t regions_released;	/* regions back to the device */
	uint64_t region_bytes_released;
	uint64_t held_blocks;		/* still ALLOCATED or ACTIVE */
	uint64_t held_bytes;
};

/*
 * md_memory_cleaner() - recycle everything recyclable: RELEASED blocks
 * nobody freed, this thread's cached blocks, empty slabs, cached large
 * regions and empty regions (back to the device); then report every block
 * still held (ALLOCATED or ACTIVE), one line each, to @report (may be
 * NULL). Other threads' caches are flushed at their next call into the
 * pool. @pool NULL: every live pool of the process. @out may be NULL.
 * Return: the number of blocks still held, or -ENOMEM when there was no
 * memory to list them (what was recyclable is recycled all the same; with
 * @pool NULL, the pools after that one are not cleaned).
 */
long md_memory_cleaner(struct md_pool *pool, FILE *report,
		       struct md_cleaner_report *out);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_POOL_H */
