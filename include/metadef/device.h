/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef devices: where runtime memory comes from.
 *
 * A device hands out regions: contiguous ranges of device memory with a
 * device address and, when the CPU can reach them, a CPU mapping. Two
 * backends implement the same calls:
 *
 *   kmod  /dev/metadef: each region is an ALLOC'd region of the module's
 *         pool (a memory domain per device), mapped with mmap; dev_va is
 *         the region's address in the domain's device page table.
 *   host  anonymous memory (mmap): for hosts without the module, tests and
 *         tools; dev_va is the CPU address.
 *
 * Pools, arenas and the dynamic pool sit on top of a device and never touch
 * the backend directly, so everything above runs the same on both.
 */
#ifndef METADEF_DEVICE_H
#define METADEF_DEVICE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Typical per-device alignment of blocks inside pools. */
#define MD_ALIGN_CPU	64
#define MD_ALIGN_GPU	128
#define MD_ALIGN_NPU	256

struct md_device;

struct md_device_config {
	/*
	 * "kmod", "host", or NULL/"auto": kmod when the device node opens,
	 * host otherwise.
	 */
	const char *backend;
	/* kmod: the device node; NULL means /dev/metadef. */
	const char *path;
	/*
	 * Alignment of blocks inside pools on this device: a power of two,
	 * 0 for MD_ALIGN_CPU.
	 */
	uint64_t align;
};

struct md_region {
	uint64_t size;		/* usable bytes: the request rounded up to pages */
	uint64_t dev_va;	/* device address of byte 0 */
	void *cpu;		/* CPU mapping of byte 0, NULL if none */
	uint32_t handle;	/* kmod region handle, 0 on host */
	uint32_t pad;
};

/* Per-device counters: what the backend was asked for. */
struct md_device_stats {
	uint64_t region_allocs;		/* successful md_region_alloc() calls */
	uint64_t region_frees;
	uint64_t region_failures;	/* md_region_alloc() errors */
	uint64_t bytes_current;		/* in live regions */
	uint64_t bytes_peak;
};

/*
 * md_device_open() - open a device. @cfg may be NULL (auto backend,
 * default alignment). Return: 0, -EINVAL (unknown backend, bad alignment),
 * -ENOENT (kmod asked for and the node is missing) or another -errno.
 */
int md_device_open(const struct md_device_config *cfg, struct md_device **out);

/* md_device_close() - close; regions still allocated are freed. NULL is ok. */
void md_device_close(struct md_device *dev);

/* "kmod" or "host". */
const char *md_device_backend(const struct md_device *dev);

/* The block alignment the device was opened with. */
uint64_t md_device_align(const struct md_device *dev);

/* The page size regions are rounded to. */
uint64_t md_device_page_size(const struct md_device *dev);

/*
 * The id of the memory domain the device is (kmod: debugfs "domains",
 * metadefctl domains, INFO's domain_id); 0 for the host backend.
 */
uint32_t md_device_domain(const struct md_device *dev);

/* A consistent copy of the device's counters. */
void md_device_stats(const struct md_device *dev, struct md_device_stats *st);

/*
 * md_region_alloc() - a region of at least @size bytes whose device address
 * is aligned to @align (a power of two; 0 means the page size). Thread-safe.
 * Return: 0, -EINVAL (size 0 or too large to round to a page, bad
 * alignment), -ENOMEM, -EDQUOT (the kmod
 * domain's quota) or another -errno from the backend. Nothing is left
 * allocated on failure.
 */
int md_region_alloc(struct md_device *dev, uint64_t size, uint64_t align,
		    struct md_region *out);

/*
 * md_region_free() - give a region back. Return: 0 or -EINVAL (not a live
 * region of @dev); the region is left untouched on error.
 */
int md_region_free(struct md_device *dev, struct md_region *region);

/*
 * md_device_copy() - copy @size bytes from device address @src_va to
 * @dst_va on the device, the way the device's own DMA would, without the
 * CPU touching either side. kmod: the module's copy engine
 * (METADEF_IOC_COPY), which translates every page through the domain's
 * device page table first, so it reaches regions the CPU has no mapping
 * of and memory imported from another domain, and honours their
 * permissions. host: both ranges must lie inside live regions of @dev.
 * Overlapping ranges leave undefined data (as memcpy). Thread-safe, as
 * long as neither region is freed while the copy runs (as with any DMA).
 * Return: 0, -EINVAL (size 0, a range wrapping around), -EFAULT (a byte
 * of either range not reachable, or the destination not writable), or on
 * kmod another error of the ioctl (-ENODEV: the module's memory is gone);
 * nothing is copied on error.
 */
int md_device_copy(struct md_device *dev, uint64_t dst_va, uint64_t src_va,
		   uint64_t size);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_DEVICE_H */
