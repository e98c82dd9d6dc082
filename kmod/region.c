// SPDX-License-Identifier: GPL-2.0
/*
 * Regions: one allocation from the pool each, reference counted. The
 * references are the handle in the owning domain's table, one per VMA
 * mapping it (and, later, imports and dma-bufs); the memory is scrubbed and
 * returned to the pool only when the last one goes.
 *
 * Handles live in a per-domain xarray: a handle means something only in the
 * domain that holds it. The mmap offsets live in one device-wide xarray so
 * that mmap can find the region behind an offset; a domain may map only
 * regions it holds a handle to.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "metadef.h"
#include "pool.h"
#include "trace.h"

static void md_region_release(struct kref *ref)
{
	struct md_region *r = container_of(ref, struct md_region, ref);

	WARN_ON(!list_empty(&r->imports));
	xa_erase(&r->mdev->mmap_ids, r->mmap_id);
	md_pool_free(r->pool, &r->alloc);
	md_genl_pool_check(r->mdev, r->pool, true);
	md_domain_uncharge(r->dom, r->alloc.size);
	atomic_dec(&r->dom->nr_regions);
	md_domain_put(r->dom);
	md_pool_put(r->pool);
	kfree(r);
}

void md_region_put(struct md_region *r)
{
	kref_put(&r->ref, md_region_release);
}

/* The owner's handle is going: so is the device's view of the region. */
static void region_unmap_device(struct md_region *r)
{
	if (r->va_mapped) {
		md_mmu_unmap(&r->dom->mmu, r->dev_va, r->alloc.size);
		r->va_mapped = false;
	}
}

/* Translate the buddy's "no space" into the ioctl's "no memory". */
static int alloc_errno(int ret)
{
	return ret == -ENOSPC ? -ENOMEM : ret;
}

/**
 * md_region_create() - allocate a region for @dom
 * @dom: the owning domain
 * @arg: the validated request; its out fields are filled in
 * @priv: the region, for md_region_create_commit() or _undo()
 *
 * The handle is only reserved here: the commit stores the region behind
 * it once the caller knows its number, so no other thread of the domain
 * can free (or use) it before the answer is out, and an undo can take
 * everything back.
 *
 * Return: 0 or a negative errno; nothing is left allocated on error.
 */
int md_region_create(struct md_domain *dom, struct metadef_alloc *arg,
		     void **priv)
{
	struct md_device *mdev = dom->dev;
	unsigned int bflags = 0;
	struct md_region *r;
	struct md_pool *pool;
	int ret;

	if (arg->flags & METADEF_ALLOC_TOPDOWN)
		bflags |= MD_BUDDY_TOPDOWN;
	if (arg->flags & METADEF_ALLOC_RANGE)
		bflags |= MD_BUDDY_RANGE;

	/* The reference taken here becomes the region's. */
	pool = md_pool_current(mdev);
	if (!pool)
		return -ENODEV;
	/*
	 * A domain's device page table describes one pool: after a pcibar
	 * device is replaced, its old mappings would point into the new one.
	 * Such a domain allocates no more; a new open gets the new pool.
	 */
	ret = md_domain_bind_pool(dom, pool);
	if (ret) {
		md_pool_put(pool);
		return ret;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		md_pool_put(pool);
		return -ENOMEM;
	}
	kref_init(&r->ref);
	init_rwsem(&r->imports_lock);
	INIT_LIST_HEAD(&r->imports);
	r->mdev = mdev;
	r->pool = pool;
	r->owner = dom->id;
	r->pid = task_tgid_nr(current);
	r->size = arg->size;

	/*
	 * Charge first: over quota means nothing is allocated at all. A
	 * range that starts past the pool (malformed: EINVAL, whatever the
	 * quota) and more than the pool holds are refused before that.
	 */
	if ((arg->flags & METADEF_ALLOC_RANGE) &&
	    arg->range_start >= pool->buddy.size) {
		ret = -EINVAL;
	} else if (arg->size > pool->buddy.size) {
		md_genl_alloc_refused(dom, pool, arg->size);
		ret = -ENOMEM;
	} else {
		ret = md_domain_charge(dom, PAGE_ALIGN(arg->size),
				       pool->buddy.size);
	}
	if (ret) {
		kfree(r);
		md_pool_put(pool);
		return ret;
	}
	ret = md_pool_alloc_range(pool, &r->alloc, arg->size, arg->align,
				  arg->range_start, arg->range_end, bflags);
	if (ret) {
		md_domain_uncharge(dom, PAGE_ALIGN(arg->size));
		if (ret == -ENOSPC)
			md_genl_alloc_refused(dom, pool, arg->size);
		kfree(r);
		md_pool_put(pool);
		return alloc_errno(ret);
	}
	md_genl_pool_check(mdev, pool, false);
	/* The allocator rounds to whole pages too: the charge is exact. */
	WARN_ON(r->alloc.size != PAGE_ALIGN(arg->size));
	kref_get(&dom->ref);
	r->dom = dom;
	atomic_inc(&dom->nr_regions);

	/* The owner's device page table maps it, read-write, in its color. */
	r->dev_va = MD_DEV_VA_BASE + r->alloc.offset;
	ret = md_mmu_map(&dom->mmu, r->dev_va, r->alloc.offset, r->alloc.size,
			 MD_MMU_READ | MD_MMU_WRITE, dom->color);
	if (ret)
		goto err_put;
	r->va_mapped = true;

	ret = xa_alloc(&mdev->mmap_ids, &r->mmap_id, r,
		       XA_LIMIT(1, MD_MMAP_MAX_ID), GFP_KERNEL);
	if (ret)
		goto err_put;

	/* A reserved entry: xa_load() sees nothing there until the commit. */
	ret = xa_alloc(&dom->handles, &arg->handle, NULL, xa_limit_31b,
		       GFP_KERNEL);
	if (ret)
		goto err_put;

	/*
	 * Without an IOMMU the device address is the physical address, which
	 * unprivileged users are not told (as with /proc/pid/pagemap).
	 */
	if (capable(CAP_SYS_ADMIN))
		arg->dev_addr = pool->ops->dev_addr(pool, r->alloc.offset);
	arg->mmap_offset = md_region_mmap_offset(r);
	arg->alloc_size = r->alloc.size;
	arg->dev_va = r->dev_va;
	*priv = r;
	return 0;

err_put:
	region_unmap_device(r);
	md_region_put(r);
	return ret == -EBUSY ? -ENOMEM : ret;
}

/* The caller knows the handle: the region goes behind it. */
void md_region_create_commit(struct md_domain *dom, struct metadef_alloc *arg,
			     void *priv)
{
	struct md_region *r = priv;

	/*
	 * Replacing the reserved entry allocates nothing, so it cannot fail;
	 * the handle is recorded in the same step, for a racing FREE.
	 */
	xa_lock(&dom->handles);
	__xa_store(&dom->handles, arg->handle, r, GFP_NOWAIT);
	r->handle = arg->handle;
	xa_unlock(&dom->handles);
}

/* The caller could not be told: no handle, no region. */
void md_region_create_undo(struct md_domain *dom, struct metadef_alloc *arg,
			   void *priv)
{
	struct md_region *r = priv;

	xa_erase(&dom->handles, arg->handle);
	region_unmap_device(r);
	md_region_put(r);
}

/**
 * md_region_get_owned() - the region behind a handle @dom owns
 * @dom: the caller's domain
 * @handle: its handle
 * @err: set to -ENOENT (no such handle) or -EPERM (an import: not the
 *       caller's to share or export) when NULL is returned
 *
 * Return: the region with a reference the caller puts, or NULL.
 */
struct md_region *md_region_get_owned(struct md_domain *dom, u32 handle,
				      int *err)
{
	struct md_region *r = NULL;
	void *entry;

	xa_lock(&dom->handles);
	entry = xa_load(&dom->handles, handle);
	if (!entry)
		*err = -ENOENT;
	else if (xa_pointer_tag(entry) == MD_HANDLE_IMPORT)
		*err = -EPERM;
	else if (kref_get_unless_zero(&((struct md_region *)entry)->ref))
		r = entry;
	else
		*err = -ENOENT;
	xa_unlock(&dom->handles);
	return r;
}

/*
 * Drop what a handle holds: an import, or the owner's reference. Returns
 * the bytes it gave access to (0: a revoked import); *@dev_va and *@mapped
 * (the region's CPU mappings left) are set when they are not NULL.
 */
static u64 drop_handle_entry(void *entry, u64 *dev_va, unsigned int *mapped)
{
	struct md_region *r;
	u64 size;

	if (xa_pointer_tag(entry) == MD_HANDLE_IMPORT)
		return md_unimport(xa_untag_pointer(entry), dev_va);
	r = entry;
	size = r->alloc.size;
	if (dev_va)
		*dev_va = r->dev_va;
	if (mapped)
		*mapped = atomic_read(&r->vmas);
	WRITE_ONCE(r->handle, 0);
	region_unmap_device(r);
	md_share_region_freed(r);
	md_region_put(r);
	return size;
}

/*
 * Drop @dom's handle; the region lives on while mappings hold it. A handle
 * an ALLOC or IMPORT in flight has only reserved is not there yet, and
 * stays reserved for it.
 */
int md_region_free_handle(struct md_domain *dom, u32 handle)
{
	u64 t0 = md_trace_clock(trace_metadef_free_enabled());
	unsigned int mapped = 0;
	u64 size = 0, dev_va = 0;
	void *entry;

	xa_lock(&dom->handles);
	entry = xa_load(&dom->handles, handle);
	if (entry)
		__xa_erase(&dom->handles, handle);
	xa_unlock(&dom->handles);
	if (entry)
		size = drop_handle_entry(entry, &dev_va, &mapped);
	trace_metadef_free(dom->id, handle,
			   entry && xa_pointer_tag(entry) == MD_HANDLE_IMPORT,
			   size, dev_va, mapped, entry ? 0 : -ENOENT,
			   md_trace_since(t0));
	return entry ? 0 : -ENOENT;
}

/*
 * Drop every handle of a domain that is going away; each is a free the
 * tenant did not ask for, traced as one (metadef_free, ret 0).
 */
void md_region_release_domain(struct md_domain *dom)
{
	bool tracing = trace_metadef_free_enabled();
	unsigned long h;
	void *entry;

	xa_for_each(&dom->handles, h, entry) {
		u64 t0 = md_trace_clock(tracing);
		unsigned int mapped = 0;
		u64 size, dev_va = 0;

		xa_erase(&dom->handles, h);
		size = drop_handle_entry(entry, &dev_va, &mapped);
		trace_metadef_free(dom->id, h,
				   xa_pointer_tag(entry) == MD_HANDLE_IMPORT,
				   size, dev_va, mapped, 0,
				   md_trace_since(t0));
	}
	xa_destroy(&dom->handles);
}

/*
 * The live region behind mmap page offset @pgoff, with a reference, or
 * NULL. Whether @dom may map it is md_mmap()'s to decide.
 */
struct md_region *md_region_lookup_mmap(struct md_domain *dom,
					unsigned long pgoff)
{
	unsigned long id = pgoff >> (MD_MMAP_SHIFT - PAGE_SHIFT);
	struct md_region *r;

	if (!id || id > MD_MMAP_MAX_ID)
		return NULL;
	xa_lock(&dom->dev->mmap_ids);
	r = xa_load(&dom->dev->mmap_ids, id);
	if (r && !kref_get_unless_zero(&r->ref))
		r = NULL;
	xa_unlock(&dom->dev->mmap_ids);
	return r;
}

u64 md_region_mmap_offset(const struct md_region *r)
{
	return (u64)r->mmap_id << MD_MMAP_SHIFT;
}
