// SPDX-License-Identifier: GPL-2.0
/*
 * Sharing between domains: explicit grants, imports, revocation.
 *
 * The owner of a region grants it to one named domain, read-only or
 * read-write, and gets a random 64-bit token. Only that domain can import
 * with it, once; the import maps the region into the importer's device
 * page table (in the importer's color) and gives it a handle and the
 * region's mmap offset. Imports can be dropped (FREE on their handle) but
 * never re-granted, and they never free the owner's memory. REVOKE takes
 * access back at once: the importers' device mappings go, their CPU
 * mappings are zapped and fault only for domains still allowed.
 *
 * Everything here is under mdev->share_lock. Lock order: share_lock, then
 * mmu->lock; mmap_lock, then share_lock (the fault path). CPU mappings are
 * zapped and references dropped after share_lock is released.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "metadef.h"

struct md_grant {
	u64 token;
	struct md_region *r;		/* holds a reference */
	struct md_domain *owner;
	u32 target;
	u32 perm;
	struct list_head link;
};

static u32 share_perm(u32 flags)
{
	return (flags & METADEF_SHARE_READ ? MD_MMU_READ : 0) |
	       (flags & METADEF_SHARE_WRITE ? MD_MMU_WRITE : 0);
}

static bool domain_exists(struct md_device *mdev, u32 id)
{
	bool found;

	xa_lock(&mdev->domains);
	found = xa_load(&mdev->domains, id);
	xa_unlock(&mdev->domains);
	return found;
}

static void zap_cpu_mappings(struct md_region *r)
{
	unmap_mapping_range(r->mdev->inode->i_mapping,
			    md_region_mmap_offset(r), r->alloc.size, 1);
}

int md_grant(struct md_domain *dom, struct metadef_grant *arg)
{
	struct md_device *mdev = dom->dev;
	struct md_grant *g, *other;
	struct md_region *r;
	int ret = 0;

	if (!arg->flags || (arg->flags & ~METADEF_SHARE_FLAGS) ||
	    !(arg->flags & METADEF_SHARE_READ))
		return -EINVAL;
	if (arg->domain_id == dom->id)
		return -EINVAL;
	r = md_region_get_owned(dom, arg->handle, &ret);
	if (!r)
		return ret;
	if (!domain_exists(mdev, arg->domain_id)) {
		md_region_put(r);
		return -ENOENT;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g) {
		md_region_put(r);
		return -ENOMEM;
	}
	g->r = r;
	g->owner = dom;
	g->target = arg->domain_id;
	g->perm = share_perm(arg->flags);

	mutex_lock(&mdev->share_lock);
again:
	g->token = get_random_u64();
	if (!g->token)
		goto again;
	list_for_each_entry(other, &mdev->grants, link)
		if (other->token == g->token)
			goto again;
	list_add(&g->link, &mdev->grants);
	mutex_unlock(&mdev->share_lock);
	arg->token = g->token;
	return 0;
}

int md_import(struct md_domain *dom, struct metadef_import *arg)
{
	struct md_device *mdev = dom->dev;
	struct md_grant *g, *found = NULL;
	struct md_import *imp;
	struct md_region *r;
	int ret;

	if (arg->flags)
		return -EINVAL;
	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	if (!imp)
		return -ENOMEM;

	mutex_lock(&mdev->share_lock);
	/* A token meant for another domain is as unknown as a wrong one. */
	list_for_each_entry(g, &mdev->grants, link)
		if (g->token == arg->token && g->target == dom->id) {
			found = g;
			break;
		}
	ret = -ENOENT;
	if (!found || !arg->token)
		goto unlock;
	r = found->r;

	ret = md_domain_bind_pool(dom, r->pool);
	if (ret)
		goto unlock;
	/* The same VA in every table: a second import of it is refused. */
	ret = md_mmu_map(&dom->mmu, r->dev_va, r->alloc.offset, r->alloc.size,
			 found->perm, dom->color);
	if (ret)
		goto unlock;

	imp->r = r;
	imp->dom = dom;
	imp->perm = found->perm;
	xa_lock(&dom->handles);
	ret = __xa_alloc(&dom->handles, &arg->handle,
			 xa_tag_pointer(imp, MD_HANDLE_IMPORT), xa_limit_31b,
			 GFP_KERNEL);
	xa_unlock(&dom->handles);
	if (ret) {
		md_mmu_unmap(&dom->mmu, r->dev_va, r->alloc.size);
		goto unlock;
	}
	/* Taken up: the grant's region reference becomes the import's. */
	list_add(&imp->link, &r->imports);
	atomic_inc(&dom->nr_imports);
	list_del(&found->link);
	mutex_unlock(&mdev->share_lock);
	kfree(found);

	arg->dev_va = r->dev_va;
	arg->mmap_offset = md_region_mmap_offset(r);
	arg->size = r->alloc.size;
	return 0;

unlock:
	mutex_unlock(&mdev->share_lock);
	kfree(imp);
	return ret;
}

/* Cut @imp off its region (share_lock held); returns the region to put. */
static struct md_region *detach_import(struct md_import *imp)
{
	struct md_region *r = imp->r;

	if (!r)
		return NULL;
	list_del(&imp->link);
	md_mmu_unmap(&imp->dom->mmu, r->dev_va, r->alloc.size);
	atomic_dec(&imp->dom->nr_imports);
	imp->r = NULL;
	return r;
}

/* The importer drops its import (FREE on its handle, or closing). */
void md_unimport(struct md_import *imp)
{
	struct md_device *mdev = imp->dom->dev;
	struct md_region *r;

	mutex_lock(&mdev->share_lock);
	r = detach_import(imp);
	mutex_unlock(&mdev->share_lock);
	if (r) {
		/* Its CPU mappings must fault (and fail) from now on. */
		zap_cpu_mappings(r);
		md_region_put(r);
	}
	kfree(imp);
}

int md_revoke(struct md_domain *dom, struct metadef_revoke *arg)
{
	struct md_device *mdev = dom->dev;
	struct md_import *imp, *itmp;
	struct md_grant *g, *gtmp;
	unsigned int refs = 0;
	struct md_region *r;
	LIST_HEAD(dead);
	int ret = 0;

	if (arg->flags || arg->pad)
		return -EINVAL;
	r = md_region_get_owned(dom, arg->handle, &ret);
	if (!r)
		return ret;

	mutex_lock(&mdev->share_lock);
	list_for_each_entry_safe(imp, itmp, &r->imports, link)
		if (!arg->domain_id || imp->dom->id == arg->domain_id)
			refs += !!detach_import(imp);
	list_for_each_entry_safe(g, gtmp, &mdev->grants, link)
		if (g->r == r && (!arg->domain_id || g->target == arg->domain_id))
			list_move(&g->link, &dead);
	mutex_unlock(&mdev->share_lock);

	zap_cpu_mappings(r);
	while (refs--)
		md_region_put(r);
	list_for_each_entry_safe(g, gtmp, &dead, link) {
		md_region_put(g->r);
		kfree(g);
	}
	md_region_put(r);
	return 0;
}

/* The owner is closing: its grants nobody took up go with it. */
void md_share_domain_close(struct md_domain *dom)
{
	struct md_device *mdev = dom->dev;
	struct md_grant *g, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&mdev->share_lock);
	list_for_each_entry_safe(g, tmp, &mdev->grants, link)
		if (g->owner == dom)
			list_move(&g->link, &dead);
	mutex_unlock(&mdev->share_lock);
	list_for_each_entry_safe(g, tmp, &dead, link) {
		md_region_put(g->r);
		kfree(g);
	}
}

/*
 * May @dom map (fault in) @r, for writing if @write? Its owner may; so may
 * a domain holding a live import with the permission.
 */
bool md_region_may_map(struct md_domain *dom, struct md_region *r,
		       bool write)
{
	struct md_import *imp;
	bool ok = false;

	if (r->dom == dom)
		return true;
	mutex_lock(&dom->dev->share_lock);
	list_for_each_entry(imp, &r->imports, link)
		if (imp->dom == dom) {
			ok = !write || (imp->perm & MD_MMU_WRITE);
			break;
		}
	mutex_unlock(&dom->dev->share_lock);
	return ok;
}
