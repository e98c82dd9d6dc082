// SPDX-License-Identifier: GPL-2.0
/*
 * Mapping regions into user space. Every VMA holds a reference to its
 * region (taken at mmap and in ->open, which runs for fork, split and
 * mremap; dropped in ->close), so memory freed by its handle stays alive
 * while it is mapped. Pages are inserted at fault time, never up front, so
 * a later zap of the device's shared address_space makes the next touch
 * fault again instead of reaching stale memory.
 *
 * An importer's mapping is bound to the import it was made through: its
 * rights (read, or read-write) are that import's, fixed when it was
 * mapped, and once that import is dropped or revoked the mapping faults
 * for good, whatever the domain imports later. A later read-only import
 * can so never be written through a mapping made writable under an
 * earlier one. Each fault checks the import under the region's
 * imports_lock and inserts its page before releasing it, so a REVOKE
 * (which takes the lock to detach, then zaps) never misses a page.
 */
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/refcount.h>
#include <linux/slab.h>

#include "compat.h"
#include "metadef.h"
#include "pool.h"
#include "trace.h"

/**
 * struct md_mapping - what the VMAs of one mmap() of /dev/metadef share
 * @ref: one per VMA (fork and splits add VMAs)
 * @r: the region (each VMA holds a reference)
 * @import_id: the import it was made through; 0: the owner's
 */
struct md_mapping {
	refcount_t ref;
	struct md_region *r;
	u64 import_id;
};

static void md_vm_open(struct vm_area_struct *vma)
{
	struct md_mapping *m = vma->vm_private_data;

	refcount_inc(&m->ref);
	kref_get(&m->r->ref);
	atomic_inc(&m->r->vmas);
}

static void md_vm_close(struct vm_area_struct *vma)
{
	struct md_mapping *m = vma->vm_private_data;
	struct md_region *r = m->r;

	atomic_dec(&r->vmas);
	if (refcount_dec_and_test(&m->ref))
		kfree(m);
	md_region_put(r);
}

static void md_dmabuf_vm_open(struct vm_area_struct *vma)
{
	struct md_region *r = vma->vm_private_data;

	kref_get(&r->ref);
	atomic_inc(&r->vmas);
}

static void md_dmabuf_vm_close(struct vm_area_struct *vma)
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

/* The CPU fault's tracepoint: where in @r, and did a page go in. */
static void trace_fault(u32 domain, struct vm_fault *vmf, struct md_region *r,
			vm_fault_t ret)
{
	u64 base = md_region_mmap_offset(r) >> PAGE_SHIFT;

	trace_metadef_cpu_fault(domain, r->owner, READ_ONCE(r->handle),
				(u64)(vmf->pgoff - base) << PAGE_SHIFT,
				ret & VM_FAULT_ERROR ? -EFAULT : 0);
}

/*
 * Does the import @m was made through still live? (The owner's mappings
 * always do.) Caller holds r->imports_lock.
 */
static bool mapping_live(struct md_mapping *m, struct md_domain *dom)
{
	struct md_import *imp;

	lockdep_assert_held(&m->r->imports_lock);
	if (!m->import_id)
		return true;
	imp = md_region_import_of(dom, m->r);
	return imp && imp->id == m->import_id;
}

/* A domain's own mapping, of a region it owns or imported. */
static vm_fault_t md_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct md_mapping *m = vma->vm_private_data;
	struct md_domain *dom = vma->vm_file->private_data;
	struct md_region *r = m->r;
	vm_fault_t ret;

	/* The check and the insertion under one hold: see the top. */
	down_read(&r->imports_lock);
	if (mapping_live(m, dom))
		ret = md_region_fault(vmf, r);
	else
		ret = VM_FAULT_SIGBUS;
	up_read(&r->imports_lock);
	trace_fault(dom->id, vmf, r, ret);
	return ret;
}

/* A dma-buf's mapping: the dma-buf's holder may map it, whoever it is. */
static vm_fault_t md_dmabuf_vm_fault(struct vm_fault *vmf)
{
	struct md_region *r = vmf->vma->vm_private_data;
	vm_fault_t ret = md_region_fault(vmf, r);

	/* Domain 0: a dma-buf's holder is not a domain. */
	trace_fault(0, vmf, r, ret);
	return ret;
}

static const struct vm_operations_struct md_vm_ops = {
	.open = md_vm_open,
	.close = md_vm_close,
	.fault = md_vm_fault,
};

static const struct vm_operations_struct md_dmabuf_vm_ops = {
	.open = md_dmabuf_vm_open,
	.close = md_dmabuf_vm_close,
	.fault = md_dmabuf_vm_fault,
};

/* Is [vm_pgoff, +pages) inside @r, and its pool alive? */
static int check_vma(struct md_region *r, struct vm_area_struct *vma)
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
	return 0;
}

/* Point @vma at @priv (takes over the caller's reference to @r). */
static void setup_vma(struct md_region *r, struct vm_area_struct *vma,
		      const struct vm_operations_struct *ops, void *priv)
{
	md_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = r->pool->ops->pgprot(r->pool, vma->vm_page_prot);
	vma->vm_private_data = priv;
	vma->vm_ops = ops;
	atomic_inc(&r->vmas);
}

/* What one mmap() of /dev/metadef reached, for its tracepoint. */
struct map_info {
	u32 owner;
	u32 handle;
	u64 import_id;
	u64 offset;
};

static int map(struct md_domain *dom, struct vm_area_struct *vma,
	       struct map_info *t)
{
	struct md_import *imp = NULL;
	struct md_mapping *m;
	struct md_region *r;
	u32 perm;
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
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	ret = -ENOMEM;
	if (!m)
		goto err_put;
	refcount_set(&m->ref, 1);
	m->r = r;

	/*
	 * The rights of the mapping, decided here only: the owner's while it
	 * holds its handle, or those of one live import. Without either the
	 * region is as good as not there.
	 */
	down_read(&r->imports_lock);
	if (r->dom == dom) {
		perm = READ_ONCE(r->handle) ? MD_MMU_READ | MD_MMU_WRITE : 0;
	} else {
		imp = md_region_import_of(dom, r);
		perm = imp ? imp->perm : 0;
		m->import_id = imp ? imp->id : 0;
	}
	up_read(&r->imports_lock);
	t->owner = r->owner;
	t->handle = READ_ONCE(r->handle);
	t->import_id = m->import_id;
	t->offset = (vma->vm_pgoff - (md_region_mmap_offset(r) >> PAGE_SHIFT))
		    << PAGE_SHIFT;

	ret = -EINVAL;
	if (!perm)
		goto err_free;
	ret = check_vma(r, vma);
	if (ret)
		goto err_free;
	/* A read-only import maps read-only, and cannot be made writable. */
	if (!(perm & MD_MMU_WRITE)) {
		ret = -EACCES;
		if (vma->vm_flags & VM_WRITE)
			goto err_free;
		md_vm_flags_clear(vma, VM_MAYWRITE);
	}
	setup_vma(r, vma, &md_vm_ops, m);
	return 0;

err_free:
	kfree(m);
err_put:
	md_region_put(r);
	return ret;
}

int md_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct md_domain *dom = file->private_data;
	bool write = vma->vm_flags & VM_WRITE;
	struct map_info t = { 0 };
	int ret = map(dom, vma, &t);

	trace_metadef_map(dom->id, t.owner, t.handle, t.import_id,
			  vma->vm_end - vma->vm_start, t.offset,
			  METADEF_SHARE_READ | (write ? METADEF_SHARE_WRITE : 0),
			  ret);
	return ret;
}

/**
 * md_mmap_region() - map @r for a dma-buf's mmap
 * @r: the region (the caller keeps its own reference)
 * @vma: the new mapping; vm_pgoff is relative to the region
 * @mapping: a file whose mapping is the device's shared address_space
 *
 * @mapping replaces the dma-buf's file on @vma, so that md_pool_kill()'s
 * zap reaches this mapping as well; only once nothing can fail: before
 * 5.11, mmap_region()'s error path puts the file it was called with, not
 * the vma's, so a refusal after the swap put the dma-buf's file twice (its
 * count reached 0 while it was still in the caller's descriptor table).
 * Permissions were checked against the dma-buf's file by mmap(2).
 */
int md_mmap_region(struct md_region *r, struct vm_area_struct *vma,
		   struct file *mapping)
{
	int ret;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	vma->vm_pgoff += md_region_mmap_offset(r) >> PAGE_SHIFT;
	ret = check_vma(r, vma);
	if (ret)
		return ret;
	md_vma_set_file(vma, mapping);
	kref_get(&r->ref);
	setup_vma(r, vma, &md_dmabuf_vm_ops, r);
	return 0;
}
