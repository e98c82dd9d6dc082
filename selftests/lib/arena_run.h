/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tests: run a plan bound to an arena through the tensors' CPU pointers,
 * for arena_test (host) and runtime_test (the kmod backend, in the VM).
 * Every tensor is written with its own pattern when it is born and
 * checked at every step it is alive, so two tensors alive together that
 * share a byte are caught. Include after kselftest_harness.h.
 */
#ifndef METADEF_TEST_ARENA_RUN_H
#define METADEF_TEST_ARENA_RUN_H

#include <stdint.h>

#include <metadef/arena.h>
#include <metadef/plan.h>

static inline unsigned char pattern(size_t buf, uint64_t byte, unsigned int salt)
{
	uint64_t x = (buf + 1) * 0x9e3779b97f4a7c15ULL ^ byte * 0xff51afd7ULL ^
		     salt;

	return (unsigned char)(x ^ x >> 29 ^ x >> 47);
}

static inline void fill(const struct md_tensor *t, unsigned int salt)
{
	unsigned char *p = t->cpu;
	uint64_t i;

	for (i = 0; i < t->size; i++)
		p[i] = pattern(t->index, i, salt);
}

/* The first byte of @t that is not its pattern, or -1. */
static inline int64_t check(const struct md_tensor *t, unsigned int salt)
{
	const unsigned char *p = t->cpu;
	uint64_t i;

	for (i = 0; i < t->size; i++)
		if (p[i] != pattern(t->index, i, salt))
			return (int64_t)i;
	return -1;
}

/*
 * Run the plan bound as @m: at every time step write the tensors that
 * start then, and check every tensor alive (including those just
 * written, after all of the step's writes). Returns the number of
 * tensors checked at their last step, or -1 with the culprit logged.
 */
static inline long run_plan(struct __test_metadata *_metadata,
		     const struct md_problem *p, struct md_arena_plan *m,
		     unsigned int salt)
{
	uint64_t t, t_end = 0;
	long finished = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->bufs[i].upper > t_end)
			t_end = p->bufs[i].upper;
	for (t = 0; t < t_end; t++) {
		for (i = 0; i < p->n; i++) {
			struct md_tensor x;

			if (p->bufs[i].lower != t)
				continue;
			if (md_arena_tensor(m, i, &x))
				return -1;
			fill(&x, salt);
		}
		for (i = 0; i < p->n; i++) {
			struct md_tensor x;
			int64_t bad;

			if (p->bufs[i].lower > t || p->bufs[i].upper <= t)
				continue;
			if (md_arena_tensor(m, i, &x))
				return -1;
			bad = check(&x, salt);
			if (bad >= 0) {
				TH_LOG("t=%llu: buffer %zu [%llu, %llu) at %llu+%llu: byte %lld overwritten",
				       (unsigned long long)t, i,
				       (unsigned long long)p->bufs[i].lower,
				       (unsigned long long)p->bufs[i].upper,
				       (unsigned long long)x.offset,
				       (unsigned long long)x.size,
				       (long long)bad);
				return -1;
			}
			if (p->bufs[i].upper == t + 1)
				finished++;
		}
	}
	return finished;
}

#endif /* METADEF_TEST_ARENA_RUN_H */
