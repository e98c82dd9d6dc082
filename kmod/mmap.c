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

static vm_fault_t md_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct md_region *r = vma->vm_private_data;
	struct md_pool *pool = r->pool;
	u64 base = md_region_mmap_offset(r) >> PAGE_SHIFT;
	u64 off = (u64)(vmf->pgoff - base) << PAGE_SHIFT;
	vm_fault_t ret;

	if (vmf->pgoff < base || off >= r->alloc.size)
		return VM_FAULT_SIGBUS;
	/* An importer whose access was revoked or dropped faults for good. */
	if (!md_region_may_map(vma->vm_file->private_data, r, false))
		return VM_FAULT_SIGBUS;
	/* Against md_pool_kill(): a dead pool's memory is never mapped. */
	down_read(&pool->gone_sem);
	if (pool->gone)
		ret = VM_FAULT_SIGBUS;
	else
		ret = vmf_insert_pfn(vma, vmf->address,
				     pool->ops->pfn(pool, r->alloc.offset + off));
	up_read(&pool->gone_sem);
	return ret;
}

static const struct vm_operations_struct md_vm_ops = {
	.open = md_vm_open,
	.close = md_vm_close,
	.fault = md_vm_fault,
};

int md_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct md_domain *dom = file->private_data;
	unsigned long pages = vma_pages(vma);
	struct md_region *r;
	u64 first;

	/* Device memory is shared; a private COW copy of it makes no sense. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	r = md_region_lookup_mmap(dom, vma->vm_pgoff);
	if (!r)
		return -EINVAL;
	if (READ_ONCE(r->pool->gone)) {
		md_region_put(r);
		return -ENODEV;
	}
	/* A read-only import maps read-only, and cannot be made writable. */
	if (!md_region_may_map(dom, r, true)) {
		if (vma->vm_flags & VM_WRITE) {
			md_region_put(r);
			return -EACCES;
		}
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	first = vma->vm_pgoff - (md_region_mmap_offset(r) >> PAGE_SHIFT);
	if (first >= r->alloc.size >> PAGE_SHIFT ||
	    pages > (r->alloc.size >> PAGE_SHIFT) - first) {
		md_region_put(r);
		return -EINVAL;
	}

	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_page_prot = r->pool->ops->pgprot(r->pool, vma->vm_page_prot);
	vma->vm_private_data = r;	/* the lookup's reference */
	vma->vm_ops = &md_vm_ops;
	atomic_inc(&r->vmas);
	return 0;
}
