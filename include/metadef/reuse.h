/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reuse protocol: the life of one block of device memory.
 *
 *            acquire (first holder)        release (last holder)
 *   ALLOCATED ---------------------> ACTIVE ---------------------> RELEASED
 *       ^   \                        |  ^                              |
 *       |    `-- release (never used) ---------------------------------'
 *       |                            |  |                              |
 *       |                            `--' acquire / release            | recycle
 *       |                              (holders + 1 / - 1)             v
 *       `------------------------------ reuse ----------------------- RECYCLED
 *
 * One 64-bit word, changed only atomically (C11 atomics, inside the
 * library), holds the state, the number of holders and a generation that
 * reuse increments. Every transition is a compare-exchange
 * (acq_rel on success, acquire on failure) from the state it requires, so
 * two threads racing to move one block can never both win, and an illegal
 * transition (acquire after release, release of a free block, recycling a
 * block in use, ...) is refused with -EINVAL, counted and reported to the
 * handler set with md_reuse_set_handler(); it never changes the word.
 *
 * The generation lets a caller detect that a block it remembers was reused
 * behind its back (md_block_sync_acquire_gen()).
 */
#ifndef METADEF_REUSE_H
#define METADEF_REUSE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum md_block_state {
	MD_BLOCK_ALLOCATED = 1,	/* handed out, not in use yet */
	MD_BLOCK_ACTIVE = 2,	/* held by one or more users */
	MD_BLOCK_RELEASED = 3,	/* the last holder let go; contents dead */
	MD_BLOCK_RECYCLED = 4,	/* back in its pool, free for reuse */
};

/* The operations, as named in reports. */
enum md_reuse_op {
	MD_REUSE_INIT,
	MD_REUSE_ACQUIRE,
	MD_REUSE_RELEASE,
	MD_REUSE_RECYCLE,
	MD_REUSE_REUSE,
};

/*
 * The word: state:8 | holders:24 | generation:32. Private: read and change
 * it only through the md_block_sync_*() functions, which access it as the
 * C11 atomic it is inside the library. It is a plain integer here (with
 * the atomic's alignment) so that this header is C11 and C++ alike.
 */
struct md_block_sync {
	uint64_t word __attribute__((aligned(8)));
};

#define MD_BLOCK_MAX_HOLDERS	((1u << 24) - 1)

/* What an illegal transition looked like. */
struct md_reuse_violation {
	const struct md_block_sync *block;
	enum md_reuse_op op;
	enum md_block_state state;	/* the state it was refused in */
	uint32_t holders;
	uint32_t generation;
};

typedef void (*md_reuse_handler_t)(const struct md_reuse_violation *v,
				   void *arg);

/* md_block_sync_init() - a new block: ALLOCATED, no holders, generation 0. */
void md_block_sync_init(struct md_block_sync *b);

/*
 * md_block_sync_acquire() - one more holder: ALLOCATED -> ACTIVE (1 holder)
 * or ACTIVE -> ACTIVE (+1). Return: 0 or -EINVAL (any other state, or
 * MD_BLOCK_MAX_HOLDERS reached).
 */
int md_block_sync_acquire(struct md_block_sync *b);

/*
 * md_block_sync_acquire_gen() - as md_block_sync_acquire(), only if the
 * generation is still @gen. Return: 0, -ESTALE (reused since) or -EINVAL.
 */
int md_block_sync_acquire_gen(struct md_block_sync *b, uint32_t gen);

/*
 * md_block_sync_release() - one holder fewer: ACTIVE -> ACTIVE (-1) or, for
 * the last holder, ACTIVE -> RELEASED; ALLOCATED -> RELEASED for a block
 * that was never used. Return: 1 when the block became RELEASED, 0 when
 * holders remain, -EINVAL when illegal (a double release among them).
 */
int md_block_sync_release(struct md_block_sync *b);

/* md_block_sync_recycle() - RELEASED -> RECYCLED. Return: 0 or -EINVAL. */
int md_block_sync_recycle(struct md_block_sync *b);

/*
 * md_block_sync_reuse() - RECYCLED -> ALLOCATED, generation + 1.
 * Return: 0 or -EINVAL.
 */
int md_block_sync_reuse(struct md_block_sync *b);

enum md_block_state md_block_sync_state(const struct md_block_sync *b);
uint32_t md_block_sync_holders(const struct md_block_sync *b);
uint32_t md_block_sync_generation(const struct md_block_sync *b);

/* "allocated", "active", "released", "recycled"; "invalid" otherwise. */
const char *md_block_state_name(enum md_block_state state);
/* "init", "acquire", "release", "recycle", "reuse". */
const char *md_reuse_op_name(enum md_reuse_op op);

/*
 * md_reuse_set_handler() - call @fn (with @arg) on every refused
 * transition, from the refusing thread, with a library lock held (the
 * handler must not call md_reuse_set_handler()); a transition the handler
 * itself gets refused is counted but not reported again. NULL restores the
 * default, which reports nothing beyond the counter. Returns the previous
 * handler. Once it returns, the old handler is not running and will not be
 * called again.
 */
md_reuse_handler_t md_reuse_set_handler(md_reuse_handler_t fn, void *arg);

/* Illegal transitions refused since the program started. */
uint64_t md_reuse_violations(void);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_REUSE_H */
