/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef block metadata: what the logical layer knows about a block —
 * handle, requested and aligned size, the intervals in which it is used,
 * 64 compatibility flags — and per-device alignment.
 *
 * Conventions as in metadef.h: 0 or a negative errno, nothing prints.
 */
#ifndef METADEF_META_H
#define METADEF_META_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum md_device_kind {
	MD_DEV_CPU,		/* default alignment 64 */
	MD_DEV_GPU,		/* 128 */
	MD_DEV_NPU,		/* 256 */
	MD_DEV_COUNT,
};

/* Alignment per device; copy, change, pass around (no global state). */
struct md_align_cfg {
	uint64_t align[MD_DEV_COUNT];
};

/* CPU 64, GPU 128, NPU 256. */
void md_align_cfg_default(struct md_align_cfg *cfg);
/* Set one device's alignment: a power of two. Return: 0 or -EINVAL. */
int md_align_cfg_set(struct md_align_cfg *cfg, enum md_device_kind dev,
		     uint64_t align);
/*
 * The alignment a tensor gets on @dev: its own when it asks for one
 * (@tensor_align != 0), the device's otherwise. 0 for a bad device.
 */
uint64_t md_align_for(const struct md_align_cfg *cfg, enum md_device_kind dev,
		      uint64_t tensor_align);
/* "cpu", "gpu", "npu" <-> enum md_device_kind. Return: 0 or -EINVAL. */
int md_device_parse(const char *name, enum md_device_kind *dev);
const char *md_device_name(enum md_device_kind dev);

/*
 * One usage interval (UsageInterval): the block is used by ops
 * [op_start, op_end) (half-open, like planner lifetimes). allow_overlap
 * marks a phase in which others may overlap it (e.g. an input an op is
 * allowed to overwrite in place): it does not block reuse.
 */
struct md_interval {
	uint64_t op_start, op_end;
	int allow_overlap;
};

/* MemoryMetadata. */
struct md_meta {
	uint64_t handle;
	uint64_t base_size;	/* requested */
	uint64_t aligned_size;	/* base_size rounded up to align */
	uint64_t align;
	uint64_t compat;	/* 64 compatibility flags */
	struct md_interval *iv;	/* sorted by op_start (owned) */
	size_t niv, cap;
};

/*
 * md_meta_init() - a block of @size bytes aligned to @align (a power of
 * two, 0 means 1); every compatibility flag set.
 * Return: 0, -EINVAL or -EOVERFLOW (aligned size does not fit).
 */
int md_meta_init(struct md_meta *m, uint64_t handle, uint64_t size,
		 uint64_t align);
void md_meta_free(struct md_meta *m);
/* Add a usage interval (op_end > op_start). Return: 0, -EINVAL, -ENOMEM. */
int md_meta_add_interval(struct md_meta *m, uint64_t op_start,
			 uint64_t op_end, int allow_overlap);
/*
 * First op and one past the last op in which the block is in use, not
 * counting allow_overlap intervals. Return: 0, or -ENOENT if none.
 */
int md_meta_lifetime(const struct md_meta *m, uint64_t *start, uint64_t *end);
/*
 * md_meta_can_share() - may @a and @b occupy the same memory? Only when
 * they share a compatibility flag and no interval of one overlaps an
 * interval of the other (intervals with allow_overlap never block).
 */
int md_meta_can_share(const struct md_meta *a, const struct md_meta *b);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_META_H */
