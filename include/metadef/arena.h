/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef arenas: executing plans on a device.
 *
 * An arena is one region of a device (md_region_alloc()) that plans are
 * laid out in: every buffer of a plan lives at arena base + its planned
 * offset, so a model's tensors cost one allocation however many there are.
 * Plans come from any planner as a problem and one offset per buffer:
 * md_plan.offsets (md_plan_solve()), md_exact_result.offsets
 * (md_exact_solve()) or md_graph_plan.plan.offsets (md_graph_plan()).
 *
 * Several plans whose runs never overlap in time (models, graphs, phases)
 * share one arena (inter-model reuse, as md_overlay() computes): each
 * starts at offset 0, and the arena is as large as the largest of them.
 * Binding a plan to an arena checks it once (validated, fits, aligned);
 * activating it claims the arena for one run. Only one bound plan is
 * active at a time, since the memory of the others is the same memory: a
 * tensor's contents are defined only while its plan is active, and only
 * what was written during that activation (the arena does not clear it).
 *
 *   md_arena_create(dev, plans, n, &a)     one region: max peak of @plans
 *   md_arena_bind(a, problem, offsets, &m) check a plan, copy what it needs
 *   md_arena_activate(m) ... run ... md_arena_deactivate(m)
 *   md_arena_tensor(m, i, &t) / md_arena_find(m, "id", &t)
 *   md_arena_unbind(m), md_arena_destroy(a)
 *
 * Conventions as in metadef.h: 0 or a negative errno, nothing prints.
 * Thread-safety: every call may come from any thread; create/destroy and
 * bind/unbind pair up like malloc/free (no call on an arena or a binding
 * may race with its destruction). md_arena_tensor() and md_arena_find()
 * only read what bind computed and take no lock.
 */
#ifndef METADEF_ARENA_H
#define METADEF_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/device.h>
#include <metadef/plan.h>

#ifdef __cplusplus
extern "C" {
#endif

struct md_arena;
/* A plan bound to an arena: its tensors' places in the arena. */
struct md_arena_plan;

/* A plan as planners produce it: the problem and one offset per buffer. */
struct md_plan_ref {
	const struct md_problem *problem;
	const uint64_t *offsets;
};

/* Where one buffer of a bound plan lives. */
struct md_tensor {
	uint64_t offset;	/* in the arena, as planned */
	uint64_t size;		/* bytes */
	uint64_t dev_va;	/* device address: arena dev_va + offset */
	void *cpu;		/* CPU address, NULL if the device has none */
	const char *id;		/* the buffer's id (NULL if it had none);
				 * owned by the binding */
	size_t index;		/* the buffer's index in the problem */
};

/* What md_arena_info() reports. */
struct md_arena_info {
	uint64_t size;		/* capacity: the region's usable bytes */
	uint64_t peak;		/* the largest peak of the plans it was
				 * created for (<= size) */
	uint64_t align;		/* its device address is a multiple of this */
	uint64_t dev_va;	/* device address of byte 0 */
	void *cpu;		/* CPU address of byte 0, NULL if none */
	size_t bound;		/* plans bound now */
	uint64_t activations;	/* successful md_arena_activate() calls */
	uint64_t busy;		/* activations refused with -EBUSY */
};

/*
 * md_arena_create() - one region of @dev for the @n plans of @plans (n >= 1),
 * none of which runs while another does. Its capacity is the largest peak
 * (the highest offset + size of any buffer, as md_plan_peak() but counting
 * empty buffers too) rounded up to the device's page size (at least one
 * page); its device address is aligned to md_device_align(@dev) and to the
 * largest power of two dividing a buffer's alignment in @plans, so the
 * planned offsets keep their alignment on the device. The plans are only
 * measured here (not validated, not bound, not referenced later): bind
 * each one that will run with md_arena_bind().
 * Return: 0, -EINVAL (@n is 0, a NULL problem or offsets, an offset + size
 * that overflows), or an error of md_region_alloc() (-ENOMEM, -EDQUOT...).
 */
int md_arena_create(struct md_device *dev, const struct md_plan_ref *plans,
		    size_t n, struct md_arena **out);

/*
 * md_arena_destroy() - unbind every plan (their pointers become invalid),
 * give the region back and free @a, active plan or not. Call it before
 * md_device_close() of its device. NULL is ok.
 */
void md_arena_destroy(struct md_arena *a);

/* md_arena_info() - a consistent copy of @a's figures. */
void md_arena_info(const struct md_arena *a, struct md_arena_info *info);

/*
 * md_arena_bind() - check the plan @offsets for @problem against @a and
 * record where each buffer lives. @problem and @offsets may be freed
 * afterwards: the binding keeps its own copy of offsets, sizes and ids.
 * The plan must be valid (md_plan_validate()), fit in the capacity (every
 * buffer, of any size, ends at or below it) and keep every buffer's
 * alignment at its device address (dev_va + offset); the last can only
 * fail for a plan @a was not created for, or for alignments that are not
 * powers of two. Binding does not activate.
 * Return: 0, -EINVAL (NULL argument, misaligned buffer, moved fixed buffer),
 * -EEXIST (two buffers alive at the same time overlap), -ENOSPC (does not
 * fit) or -ENOMEM.
 */
int md_arena_bind(struct md_arena *a, const struct md_problem *problem,
		  const uint64_t *offsets, struct md_arena_plan **out);

/*
 * md_arena_unbind() - forget a bound plan. Return: 0, or -EBUSY while it is
 * active (nothing changes then). NULL is ok (0).
 */
int md_arena_unbind(struct md_arena_plan *m);

/*
 * md_arena_activate() - claim the arena for @m's run. Return: 0, -EALREADY
 * (@m is active already) or -EBUSY (another plan of the arena is active;
 * counted in md_arena_info().busy).
 */
int md_arena_activate(struct md_arena_plan *m);

/*
 * md_arena_deactivate() - end @m's run: another plan may be activated; the
 * contents of @m's tensors are dead. Return: 0 or -EINVAL (not active).
 */
int md_arena_deactivate(struct md_arena_plan *m);

/* md_arena_active() - the arena's active plan, NULL when none is. */
struct md_arena_plan *md_arena_active(struct md_arena *a);

/* md_arena_plan_size() - the number of buffers of a bound plan. */
size_t md_arena_plan_size(const struct md_arena_plan *m);

/* md_arena_plan_peak() - a bound plan's peak (highest offset + size). */
uint64_t md_arena_plan_peak(const struct md_arena_plan *m);

/*
 * md_arena_tensor() - where buffer @index of the bound plan lives. The
 * addresses do not change while @m is bound, active or not; the memory
 * behind them belongs to @m only while @m is active.
 * Return: 0 or -ENOENT (no such buffer).
 */
int md_arena_tensor(const struct md_arena_plan *m, size_t index,
		    struct md_tensor *out);

/*
 * md_arena_find() - as md_arena_tensor(), by the buffer's id (buffers
 * without one are only reached by index; with duplicate ids, the lowest
 * index). O(log n). Return: 0 or -ENOENT.
 */
int md_arena_find(const struct md_arena_plan *m, const char *id,
		  struct md_tensor *out);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_ARENA_H */
