/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The word of struct md_block_sync (reuse.h: state:8 | holders:24 |
 * generation:32), for the code that changes it: reuse.c's transitions and
 * the pools' own generation-checked ones (pool.c). Not installed.
 */
#ifndef METADEF_REUSE_WORD_H
#define METADEF_REUSE_WORD_H

#include <stdint.h>

#include <metadef/reuse.h>

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

#endif /* METADEF_REUSE_WORD_H */
