// SPDX-License-Identifier: GPL-2.0
/*
 * What every pool adapter shares: the buddy allocator under a mutex, the
 * reference count that keeps the memory until the last region is gone, and
 * the debugfs view.
 */
#include <linux/fs.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "metadef.h"
#include "pool.h"

int md_pool_init(struct md_pool *pool, const struct md_pool_ops *ops,
		 const char *backend, u64 size, u64 max_block)
{
	int ret;

	pool->ops = ops;
	pool->backend = backend;
	pool->size = size;
	pool->max_block = max_block;
	kref_init(&pool->ref);
	mutex_init(&pool->lock);
	init_rwsem(&pool->gone_sem);
	pool->gone = false;
	ret = md_buddy_init_capped(&pool->buddy, size, PAGE_SIZE, max_block);
	if (ret)
		return ret;
	/* Memory fresh from its source may hold anything: start clean. */
	ops->scrub(pool, 0, pool->buddy.size);
	return 0;
}

static void md_pool_release(struct kref *ref)
{
	struct md_pool *pool = container_of(ref, struct md_pool, ref);

	WARN_ON(pool->buddy.avail != pool->buddy.size);
	md_buddy_fini(&pool->buddy);
	mutex_destroy(&pool->lock);
	pool->ops->release(pool);
}

void md_pool_put(struct md_pool *pool)
{
	if (pool)
		kref_put(&pool->ref, md_pool_release);
}

/**
 * md_pool_alloc_range() - allocate from the pool
 * @pool: the pool; the caller's reference to it is its own
 * @a: the record to fill in
 * @size: bytes
 * @align: 0 or a power of two
 * @start: with MD_BUDDY_RANGE in @flags, the lowest pool offset; else 0
 * @end: with MD_BUDDY_RANGE, the pool offset to end by (exclusive); else 0
 * @flags: MD_BUDDY_*
 *
 * Return: what md_buddy_alloc() returns.
 */
int md_pool_alloc_range(struct md_pool *pool, struct md_buddy_alloc *a,
			u64 size, u64 align, u64 start, u64 end,
			unsigned int flags)
{
	int ret;

	mutex_lock(&pool->lock);
	ret = md_buddy_alloc(&pool->buddy, a, size, align, start, end, flags,
			     GFP_KERNEL);
	mutex_unlock(&pool->lock);
	return ret;
}

/* Scrub, then give back: free pool memory never holds a tenant's data. */
void md_pool_free(struct md_pool *pool, struct md_buddy_alloc *a)
{
	/* Against md_pool_kill(): the memory stays there while we scrub. */
	down_read(&pool->gone_sem);
	if (!pool->gone)
		pool->ops->scrub(pool, a->offset, a->size);
	up_read(&pool->gone_sem);
	mutex_lock(&pool->lock);
	WARN_ON(md_buddy_free(&pool->buddy, a));
	mutex_unlock(&pool->lock);
}

void md_pool_usage(struct md_pool *pool, u64 *avail, u64 *largest)
{
	mutex_lock(&pool->lock);
	*avail = pool->buddy.avail;
	*largest = md_buddy_largest(&pool->buddy);
	mutex_unlock(&pool->lock);
}

/*
 * md_fragmentation_ppm() - 1 - largest / free, in parts per million; 0
 * when nothing is free. debugfs "pool", the POOL_GET answer and the
 * ALLOC_REFUSED event all report this one figure.
 */
u32 md_fragmentation_ppm(u64 avail, u64 largest)
{
	if (!avail || largest >= avail)
		return 0;
	return mul_u64_u64_div_u64(avail - largest, METADEF_PPM, avail);
}

/*
 * debugfs "pool": the names and values of the POOL_GET answer (README,
 * "Observability"), then what only this backend knows.
 */
void md_pool_show(struct md_pool *pool, struct seq_file *m)
{
	u64 avail, largest;

	md_pool_usage(pool, &avail, &largest);
	seq_printf(m, "backend\t%s\n", pool->backend);
	seq_printf(m, "size\t%llu\n", pool->buddy.size);
	seq_printf(m, "free\t%llu\n", avail);
	seq_printf(m, "largest_free\t%llu\n", largest);
	seq_printf(m, "fragmentation_ppm\t%u\n",
		   md_fragmentation_ppm(avail, largest));
	seq_printf(m, "max_block\t%llu\n", pool->max_block ?: pool->buddy.size);
	if (pool->ops->show)
		pool->ops->show(pool, m);
}

/*
 * md_pool_kill() - the memory behind @pool is going away (device removal).
 * Waits for every user of the memory in progress (faults, scrubs, copies
 * hold gone_sem for reading) and makes later ones see @pool->gone; the
 * caller then zaps the user mappings. Regions and their handles live on
 * until their owners drop them.
 */
void md_pool_kill(struct md_pool *pool)
{
	down_write(&pool->gone_sem);
	WRITE_ONCE(pool->gone, true);
	up_write(&pool->gone_sem);
}

int md_pool_attach(struct md_device *mdev, struct md_pool *pool)
{
	int ret = 0;

	mutex_lock(&mdev->pool_lock);
	if (mdev->pool)
		ret = -EBUSY;
	else
		mdev->pool = pool;
	mutex_unlock(&mdev->pool_lock);
	return ret;
}

/* Detach @pool and kill it; the caller still holds its own reference. */
void md_pool_detach(struct md_device *mdev, struct md_pool *pool)
{
	mutex_lock(&mdev->pool_lock);
	if (mdev->pool == pool)
		mdev->pool = NULL;
	mutex_unlock(&mdev->pool_lock);
	md_pool_kill(pool);
	if (mdev->inode)
		unmap_mapping_range(mdev->inode->i_mapping, 0, 0, 1);
}

/* The device's pool with a reference (md_pool_put it), or NULL. */
struct md_pool *md_pool_current(struct md_device *mdev)
{
	struct md_pool *pool;

	mutex_lock(&mdev->pool_lock);
	pool = mdev->pool;
	if (pool)
		md_pool_get(pool);
	mutex_unlock(&mdev->pool_lock);
	return pool;
}
