/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The physical layer: one pool of device-visible memory, behind a small
 * ops interface with one adapter per kind of memory (pool_sysram.c: host
 * RAM; a PCI BAR adapter comes next). Above it everything speaks in pool
 * offsets; the buddy allocator hands those out under the pool's lock.
 */
#ifndef _METADEF_POOL_H
#define _METADEF_POOL_H

#include <linux/kref.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/types.h>

#include "buddy.h"

struct md_pool;
struct seq_file;

/**
 * struct md_pool_ops - what an adapter provides
 * @pfn: CPU page frame of the page holding pool byte @offset (for mmap)
 * @dev_addr: address at which the device sees pool byte @offset
 * @scrub: zero [@offset, @offset + @size); may sleep
 * @copy: copy @len bytes (at most MD_MMU_COPY_CHUNK) from pool offset @src
 *        to @dst; the ranges do not overlap
 * @pgprot: page protection for user mappings of the pool
 * @show: extra lines for debugfs "pool"
 * @release: give the memory back; called once, when the last reference
 *           to the pool is gone
 */
struct md_pool_ops {
	unsigned long (*pfn)(struct md_pool *pool, u64 offset);
	u64 (*dev_addr)(struct md_pool *pool, u64 offset);
	void (*scrub)(struct md_pool *pool, u64 offset, u64 size);
	void (*copy)(struct md_pool *pool, u64 dst, u64 src, u64 len);
	pgprot_t (*pgprot)(struct md_pool *pool, pgprot_t prot);
	void (*show)(struct md_pool *pool, struct seq_file *m);
	void (*release)(struct md_pool *pool);
};

/**
 * struct md_pool - a pool of device-visible memory
 * @ops: the adapter
 * @backend: its name, for INFO and debugfs
 * @size: bytes managed
 * @max_block: largest physically contiguous piece (the buddy's cap)
 * @ref: one for whoever created the pool, one per region carved from it
 * @lock: serialises @buddy
 * @buddy: the allocator over [0, @size)
 * @gone: the memory's device went away: no new CPU mappings, no scrubbing
 * @gone_sem: faults hold it for reading while they insert a page, so that
 *            once md_pool_kill() returns no fault can map the dead memory
 */
struct md_pool {
	const struct md_pool_ops *ops;
	const char *backend;
	u64 size;
	u64 max_block;
	struct kref ref;
	struct mutex lock;		/* serialises @buddy */
	struct md_buddy buddy;
	bool gone;
	struct rw_semaphore gone_sem;
};

struct md_device;

int md_pool_init(struct md_pool *pool, const struct md_pool_ops *ops,
		 const char *backend, u64 size, u64 max_block);
void md_pool_put(struct md_pool *pool);

static inline void md_pool_get(struct md_pool *pool)
{
	kref_get(&pool->ref);
}

int md_pool_alloc_range(struct md_pool *pool, struct md_buddy_alloc *a,
			u64 size, u64 align, u64 start, u64 end,
			unsigned int flags);

void md_pool_free(struct md_pool *pool, struct md_buddy_alloc *a);
void md_pool_usage(struct md_pool *pool, u64 *avail, u64 *largest);
u32 md_fragmentation_ppm(u64 avail, u64 largest);
void md_pool_show(struct md_pool *pool, struct seq_file *m);
void md_pool_kill(struct md_pool *pool);

/* The device's current pool: attach, detach, and a counted lookup. */
int md_pool_attach(struct md_device *mdev, struct md_pool *pool);
void md_pool_detach(struct md_device *mdev, struct md_pool *pool);
struct md_pool *md_pool_current(struct md_device *mdev);

/* pool_sysram.c */
struct md_pool *md_sysram_create(struct device *dma_dev, u64 size);

/* pool_pcibar.c */
int md_pcibar_register(struct md_device *mdev, int bar);
void md_pcibar_unregister(void);

#endif /* _METADEF_POOL_H */
