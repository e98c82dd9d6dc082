/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The word of struct md_block_sync (reuse.h: state:8 | holders:24 |
 * generation:32) and the protocol's rules, for the code that changes it:
 * reuse.c's transitions and the pools' generation-checked ones (pool.c).
 * Each runs these rules in its own compare-exchange loop and reports a
 * refusal its own way. Not installed.
 */
#ifndef METADEF_REUSE_WORD_H
#define METADEF_REUSE_WORD_H

#include <stdatomic.h>
#include <stdint.h>

#include <metadef/reuse.h>

/*
 * The word as what it is to the library: a C11 atomic. reuse.h declares it
 * a plain uint64_t with the atomic's size and alignment (C++ has no
 * _Atomic), and every access in the library goes through this pointer,
 * never through the plain integer.
 */
static inline _Atomic uint64_t *w_word(const struct md_block_sync *b)
{
	return (_Atomic uint64_t *)&((struct md_block_sync *)b)->word;
}

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
	       _Alignof(_Atomic uint64_t) <= _Alignof(struct md_block_sync),
	       "reuse.h's word must be laid out as a C11 atomic");

#define STATE_MASK	0xffull
#define HOLDER_SHIFT	8
#define HOLDER_MASK	((uint64_t)MD_BLOCK_MAX_HOLDERS << HOLDER_SHIFT)
#define GEN_SHIFT	32

static inline uint64_t w_pack(enum md_block_state s, uint32_t holders,
			      uint32_t gen)
{
	return (uint64_t)s | (uint64_t)holders << HOLDER_SHIFT |
	       (uint64_t)gen << GEN_SHIFT;
}

static inline enum md_block_state w_state(uint64_t w)
{
	return (enum md_block_state)(w & STATE_MASK);
}

static inline uint32_t w_holders(uint64_t w)
{
	return (uint32_t)((w & HOLDER_MASK) >> HOLDER_SHIFT);
}

static inline uint32_t w_gen(uint64_t w)
{
	return (uint32_t)(w >> GEN_SHIFT);
}

/*
 * The transitions, as pure functions of the word: each returns the word
 * that follows @w, or 0 when @w does not allow the transition. 0 is never
 * a word of a block (every state is nonzero); a pool's descriptor that was
 * never handed out holds 0.
 */

/* ALLOCATED -> ACTIVE (1 holder); ACTIVE -> ACTIVE (+1). */
static inline uint64_t w_acquire(uint64_t w)
{
	enum md_block_state s = w_state(w);
	uint32_t h = w_holders(w);

	if (s == MD_BLOCK_ALLOCATED && !h)
		return w_pack(MD_BLOCK_ACTIVE, 1, w_gen(w));
	if (s == MD_BLOCK_ACTIVE && h && h < MD_BLOCK_MAX_HOLDERS)
		return w_pack(MD_BLOCK_ACTIVE, h + 1, w_gen(w));
	return 0;
}

/*
 * ACTIVE -> ACTIVE (-1); the last holder, or a block never used:
 * -> RELEASED.
 */
static inline uint64_t w_release(uint64_t w)
{
	enum md_block_state s = w_state(w);
	uint32_t h = w_holders(w);

	if (s == MD_BLOCK_ACTIVE && h > 1)
		return w_pack(MD_BLOCK_ACTIVE, h - 1, w_gen(w));
	if ((s == MD_BLOCK_ACTIVE && h == 1) ||
	    (s == MD_BLOCK_ALLOCATED && !h))
		return w_pack(MD_BLOCK_RELEASED, 0, w_gen(w));
	return 0;
}

/* RELEASED -> RECYCLED. */
static inline uint64_t w_recycle(uint64_t w)
{
	if (w_state(w) == MD_BLOCK_RELEASED && !w_holders(w))
		return w_pack(MD_BLOCK_RECYCLED, 0, w_gen(w));
	return 0;
}

/* RECYCLED -> ALLOCATED, the next generation. */
static inline uint64_t w_reuse(uint64_t w)
{
	if (w_state(w) == MD_BLOCK_RECYCLED && !w_holders(w))
		return w_pack(MD_BLOCK_ALLOCATED, 0, w_gen(w) + 1);
	return 0;
}

/*
 * A pool's free in one step: release of a block nobody acquired followed
 * by recycle (ALLOCATED -> RECYCLED), or recycle of a RELEASED one.
 */
static inline uint64_t w_retire(uint64_t w)
{
	uint64_t r = w_state(w) == MD_BLOCK_ALLOCATED ? w_release(w) : w;

	return r ? w_recycle(r) : 0;
}

#endif /* METADEF_REUSE_WORD_H */
