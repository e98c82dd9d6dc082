// SPDX-License-Identifier: GPL-2.0
/*
 * The copy engine: METADEF_IOC_COPY, standing in for an accelerator's DMA.
 * It sees memory only through the caller's device page table (the walk and
 * the copy loop are md_mmu_copy() in mmu.c): both ranges are translated
 * first, run by run, and a single fault fails the whole copy before a byte
 * moves; then the pool copies once per joint run of the two sides. The
 * table's writers are kept out (by its lock, or for a one-page copy by
 * md_mmu_copy()'s own exclusion) until the copy is done, so no page can be
 * unmapped, freed and handed to another tenant in between; the pool's
 * gone_sem is held too, so a PCI device cannot go away under it.
 *
 * Lock order: pool->gone_sem, then mmu->lock (taken by md_mmu_copy()).
 */
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/spinlock.h>

#include "metadef.h"
#include "pool.h"
#include "trace.h"

void md_fault_record(struct md_domain *dom, u64 va, unsigned int access,
		     enum md_mmu_fault reason)
{
	struct md_device *mdev = dom->dev;
	struct md_fault_entry *f;

	atomic_inc(&dom->nr_faults);
	spin_lock(&mdev->fault_lock);
	f = &mdev->faults[mdev->nr_faults++ % MD_FAULT_LOG];
	f->time_ns = ktime_get_ns();
	f->va = va;
	f->domain = dom->id;
	f->access = access;
	f->reason = reason;
	spin_unlock(&mdev->fault_lock);
	trace_metadef_fault(dom->id, va, md_access_flags(access), reason);
	md_genl_mmu_fault(dom, va, access, reason);
}

static void pool_copy(void *pool, u64 dst, u64 src, u64 len)
{
	struct md_pool *p = pool;

	p->ops->copy(p, dst, src, len);
}

static int copy_checked(struct md_domain *dom, struct metadef_copy *arg)
{
	struct md_mmu_fault_info fault;
	struct md_pool *pool;
	int ret;

	/* Flags, padding and reserved fields: checked by the dispatcher. */
	if (!arg->size)
		return -EINVAL;
	if (arg->src_va + arg->size < arg->src_va ||
	    arg->dst_va + arg->size < arg->dst_va)
		return -EINVAL;

	/* The pool the domain's table points into, not whichever is current. */
	pool = READ_ONCE(dom->pool);
	if (!pool) {
		/* Nothing was ever mapped: the first page faults. */
		md_fault_record(dom, arg->src_va, MD_MMU_READ, MD_MMU_UNMAPPED);
		return -EFAULT;
	}
	down_read(&pool->gone_sem);
	if (pool->gone) {
		up_read(&pool->gone_sem);
		return -ENODEV;
	}
	ret = md_mmu_copy(&dom->mmu, arg->dst_va, arg->src_va, arg->size,
			  pool_copy, pool, &fault);
	up_read(&pool->gone_sem);
	if (ret == -EFAULT)
		md_fault_record(dom, fault.va, fault.access, fault.reason);
	return ret;
}

int md_copy(struct md_domain *dom, struct metadef_copy *arg)
{
	u64 t0 = md_trace_clock(trace_metadef_copy_enabled());
	int ret = copy_checked(dom, arg);

	trace_metadef_copy(dom->id, arg, ret, md_trace_since(t0));
	return ret;
}
