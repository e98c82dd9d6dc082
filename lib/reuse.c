// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The reuse protocol's state machine (include/metadef/reuse.h): one atomic
 * word per block, every transition a compare-exchange from the state it
 * requires.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <metadef/reuse.h>

#include "internal.h"
#include "reuse_word.h"

static _Atomic(uint64_t) violations;
/* Refusals are rare: the handler and its argument change under a lock. */
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static md_reuse_handler_t handler_fn;
static void *handler_arg;
/* Set while this thread runs the handler: a refusal inside is not reported. */
static __thread bool in_handler;

MD_API md_reuse_handler_t md_reuse_set_handler(md_reuse_handler_t fn,
					       void *arg)
{
	md_reuse_handler_t old;

	pthread_mutex_lock(&handler_lock);
	old = handler_fn;
	handler_fn = fn;
	handler_arg = arg;
	pthread_mutex_unlock(&handler_lock);
	return old;
}

MD_API uint64_t md_reuse_violations(void)
{
	return atomic_load_explicit(&violations, memory_order_relaxed);
}

static int refuse(const struct md_block_sync *b, enum md_reuse_op op,
		  uint64_t w)
{
	struct md_reuse_violation v = {
		.block = b,
		.op = op,
		.state = w_state(w),
		.holders = w_holders(w),
		.generation = w_gen(w),
	};

	atomic_fetch_add_explicit(&violations, 1, memory_order_relaxed);
	if (in_handler)
		return -EINVAL;
	pthread_mutex_lock(&handler_lock);
	if (handler_fn) {
		in_handler = true;
		handler_fn(&v, handler_arg);
		in_handler = false;
	}
	pthread_mutex_unlock(&handler_lock);
	return -EINVAL;
}

static inline bool cas(struct md_block_sync *b, uint64_t *old, uint64_t new)
{
	return atomic_compare_exchange_weak_explicit(w_word(b), old, new,
						     memory_order_acq_rel,
						     memory_order_acquire);
}

MD_API void md_block_sync_init(struct md_block_sync *b)
{
	atomic_init(w_word(b), w_pack(MD_BLOCK_ALLOCATED, 0, 0));
}

/*
 * One transition by compare-exchange: @next (reuse_word.h) says what the
 * word becomes, or 0 to refuse. With @gen, only in that generation.
 * Returns 0 with the new word in *@nwp, -ESTALE or -EINVAL.
 */
static inline int transition(struct md_block_sync *b, enum md_reuse_op op,
			     uint64_t (*next)(uint64_t), const uint32_t *gen,
			     uint64_t *nwp)
{
	uint64_t w = atomic_load_explicit(w_word(b), memory_order_acquire);
	uint64_t nw;

	for (;;) {
		if (gen && w_gen(w) != *gen)
			return -ESTALE;
		nw = next(w);
		if (!nw)
			return refuse(b, op, w);
		if (cas(b, &w, nw)) {
			*nwp = nw;
			return 0;
		}
	}
}

MD_API int md_block_sync_acquire(struct md_block_sync *b)
{
	uint64_t nw;

	return transition(b, MD_REUSE_ACQUIRE, w_acquire, NULL, &nw);
}

MD_API int md_block_sync_acquire_gen(struct md_block_sync *b, uint32_t gen)
{
	uint64_t nw;

	return transition(b, MD_REUSE_ACQUIRE, w_acquire, &gen, &nw);
}

MD_API int md_block_sync_release(struct md_block_sync *b)
{
	uint64_t nw = 0;
	int err = transition(b, MD_REUSE_RELEASE, w_release, NULL, &nw);

	if (err)
		return err;
	return w_state(nw) == MD_BLOCK_RELEASED;
}

MD_API int md_block_sync_recycle(struct md_block_sync *b)
{
	uint64_t nw;

	return transition(b, MD_REUSE_RECYCLE, w_recycle, NULL, &nw);
}

MD_API int md_block_sync_reuse(struct md_block_sync *b)
{
	uint64_t nw;

	return transition(b, MD_REUSE_REUSE, w_reuse, NULL, &nw);
}

MD_API enum md_block_state md_block_sync_state(const struct md_block_sync *b)
{
	return w_state(atomic_load_explicit(w_word(b), memory_order_acquire));
}

MD_API uint32_t md_block_sync_holders(const struct md_block_sync *b)
{
	return w_holders(atomic_load_explicit(w_word(b), memory_order_acquire));
}

MD_API uint32_t md_block_sync_generation(const struct md_block_sync *b)
{
	return w_gen(atomic_load_explicit(w_word(b), memory_order_acquire));
}

MD_API const char *md_block_state_name(enum md_block_state state)
{
	switch (state) {
	case MD_BLOCK_ALLOCATED:
		return "allocated";
	case MD_BLOCK_ACTIVE:
		return "active";
	case MD_BLOCK_RELEASED:
		return "released";
	case MD_BLOCK_RECYCLED:
		return "recycled";
	}
	return "invalid";
}

MD_API const char *md_reuse_op_name(enum md_reuse_op op)
{
	static const char *const names[] = {
		[MD_REUSE_INIT] = "init",
		[MD_REUSE_ACQUIRE] = "acquire",
		[MD_REUSE_RELEASE] = "release",
		[MD_REUSE_RECYCLE] = "recycle",
		[MD_REUSE_REUSE] = "reuse",
	};

	if ((unsigned int)op < sizeof(names) / sizeof(names[0]))
		return names[op];
	return "invalid";
}
