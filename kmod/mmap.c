// SPDX-License-Identifier: GPL-2.0
/*
 * Mapping regions into user space. Every VMA holds a reference to its
 * region (taken at mmap and in ->open, which runs for fork, split and
 * mremap; dropped in ->close), so memory freed by its handle stays alive
 * while it is mapped. Pages are inserted at fault time, never up front, so
 * a later zap of the device's shared address_space makes the next touch
 * fault again instead of reaching stale memory.
 */
#include <linux/fs.h>
#include <linux/mm.h>

#include "metadef.h"
#include "pool.h"

static void md_vm_open(struct vm_area_struct *vma)
{
	struct md_region *r = vma->vm_private_data;

	kref_get(&r->ref);
	atomic_inc(&r->vmas);
}

static void md_vm_close(struct vm_area_struct *vma)
{
	struct md_region *r = vma->vm_private_data;

	atomic_dec(&r->vmas);
	md_region_put(r);
}

/* Both kinds of mapping: in bounds, a live pool, one pfn at a time. */
static vm_fault_t md_region_fault(struct vm_fault *vmf, struct md_region *r)
{
	struct md_pool *pool = r->pool;
	u64 base = md_region_mmap_offset(r) >> PAGE_SHIFT;
	u64 off = (u64)(vmf->pgoff - base) << PAGE_SHIFT;
	vm_fault_t ret;

	if (vmf->pgoff < base || off >= r->alloc.size)
		return VM_FAULT_SIGBUS;
	/* Against md_pool_kill(): a dead pool's memory is never mapped. */
	down_read(&pool->gone_sem);
	if (pool->gone)
		ret = VM_FAULT_SIGBUS;
	else
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     pool->ops->pfn(pool, r->alloc.offset + off));
	up_read(&pool->gone_sem);
	return ret;
}

/* A domain's own mapping, of a region it owns or imported. */
static vm_fault_t md_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct md_region *r = vma->vm_private_data;

	/* An importer whose access was revoked or dropped faults for good. */
	if (!md_region_may_map(vma->vm_file->private_data, r, false))
		return VM_FAULT_SIGBUS;
	return md_region_fault(vmf, r);
}

/* A dma-buf's mapping: the dma-buf's holder may map it, whoever it is. */
static vm_fault_t md_dmabuf_vm_fault(struct vm_fault *vmf)
{
	return md_region_fault(vmf, vmf->vma->vm_private_data);
}

static const struct vm_operations_struct md_vm_ops = {
	.open = md_vm_open,
	.close = md_vm_close,
	.fault = md_vm_fault,
};

static const struct vm_operations_struct md_dmabuf_vm_ops = {
	.open = md_vm_open,
	.close = md_vm_close,
	.fault = md_dmabuf_vm_fault,
};

/*
 * Point @vma at @r; @vma->vm_pgoff is in the device's offset space. Takes
 * over the caller's reference to @r on success.
 */
static int setup_vma(struct md_region *r, struct vm_area_struct *vma,
		     const struct vm_operations_struct *ops)
{
	unsigned long pages = vma_pages(vma);
	u64 base = md_region_mmap_offset(r) >> PAGE_SHIFT;
	u64 first;

	if (READ_ONCE(r->pool->gone))
		return -ENODEV;
	if (vma->vm_pgoff < base)
		return -EINVAL;
	first = vma->vm_pgoff - base;
	if (first >= r->alloc.size >> PAGE_SHIFT ||
	    pages > (r->alloc.size >> PAGE_SHIFT) - first)
		return -EINVAL;

	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_page_prot = r->pool->ops->pgprot(r->pool, vma->vm_page_prot);
	vma->vm_private_data = r;
	vma->vm_ops = ops;
	atomic_inc(&r->vmas);
	return 0;
}

int md_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct md_domain *dom = file->private_data;
	struct md_region *r;
	int ret;

	/*
	 * Device memory is shared; a private COW copy of it makes no sense.
	 * (VM_MAYSHARE: a read-only file's shared mapping loses VM_SHARED.)
	 */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;

	r = md_region_lookup_mmap(dom, vma->vm_pgoff);
	if (!r)
		return -EINVAL;
	/* A read-only import maps read-only, and cannot be made writable. */
	if (!md_region_may_map(dom, r, true)) {
		if (vma->vm_flags & VM_WRITE) {
			md_region_put(r);
			return -EACCES;
		}
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	ret = setup_vma(r, vma, &md_vm_ops);
	if (ret)
		md_region_put(r);
	return ret;
}

/**
 * md_mmap_region() - map @r for a dma-buf's mmap
 * @r: the region (the caller keeps its own reference)
 * @vma: the new mapping; vm_pgoff is relative to the region
 *
 * The caller has already put a file on @vma whose mapping is the device's
 * shared address_space (see md_dmabuf_mmap()), so that md_pool_kill()'s
 * zap reaches this mapping as well. Permissions were checked against the
 * dma-buf's file by mmap(2).
 */
int md_mmap_region(struct md_region *r, struct vm_area_struct *vma)
{
	int ret;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	vma->vm_pgoff += md_region_mmap_offset(r) >> PAGE_SHIFT;
	kref_get(&r->ref);
	ret = setup_vma(r, vma, &md_dmabuf_vm_ops);
	if (ret)
		md_region_put(r);
	return ret;
}
