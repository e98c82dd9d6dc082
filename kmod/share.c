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
 * Pending grants live in one rbtree by token (O(log n) IMPORT) and on the
 * lists of their owner and their target, which both bound them: at most
 * max_domain_grants per domain, max_user_grants per unprivileged user;
 * either side's close takes its grants away.
 *
 * Grants, imports and revocation are serialised by mdev->share_lock; a
 * region's list of imports is also guarded by its imports_lock, which the
 * CPU fault path holds (for reading) from its access check until the page
 * is in place. Taking an import away holds it for writing, then zaps the
 * CPU mappings: a fault either finished before (and its page is zapped) or
 * sees the import gone. Lock order: share_lock, then r->imports_lock, then
 * mmu->lock; mmap_lock, then r->imports_lock (faults). CPU mappings are
 * zapped and references dropped after the locks are released.
 */
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "metadef.h"
#include "trace.h"

/**
 * struct md_grant - a grant not taken up yet
 * @token: what the target imports with (random, never 0, unique)
 * @r: the region (holds a reference)
 * @owner: the domain that granted it, the region's owner
 * @target: the only domain that may import it
 * @perm: MD_MMU_READ, maybe MD_MMU_WRITE
 * @node: in mdev->grants, by @token
 * @owner_link: in @owner->grants_out
 * @target_link: in @target->grants_in
 */
struct md_grant {
	u64 token;
	struct md_region *r;
	struct md_domain *owner;
	struct md_domain *target;
	u32 perm;
	struct rb_node node;
	struct list_head owner_link;
	struct list_head target_link;
};

static u32 share_perm(u32 flags)
{
	return (flags & METADEF_SHARE_READ ? MD_MMU_READ : 0) |
	       (flags & METADEF_SHARE_WRITE ? MD_MMU_WRITE : 0);
}

static void zap_cpu_mappings(struct md_region *r)
{
	unmap_mapping_range(r->mdev->inode->i_mapping,
			    md_region_mmap_offset(r), r->alloc.size, 1);
}

static struct md_grant *grant_find(struct md_device *mdev, u64 token)
{
	struct rb_node *n = mdev->grants.rb_node;

	lockdep_assert_held(&mdev->share_lock);
	while (n) {
		struct md_grant *g = rb_entry(n, struct md_grant, node);

		if (token < g->token)
			n = n->rb_left;
		else if (token > g->token)
			n = n->rb_right;
		else
			return g;
	}
	return NULL;
}

/*
 * Make @g pending: in the tree and on both domains' lists, counted. False
 * (and nothing changed) when its token is taken already.
 */
static bool grant_link(struct md_device *mdev, struct md_grant *g)
{
	struct rb_node **link = &mdev->grants.rb_node, *parent = NULL;

	lockdep_assert_held(&mdev->share_lock);
	while (*link) {
		struct md_grant *other = rb_entry(*link, struct md_grant, node);

		parent = *link;
		if (g->token < other->token)
			link = &parent->rb_left;
		else if (g->token > other->token)
			link = &parent->rb_right;
		else
			return false;
	}
	rb_link_node(&g->node, parent, link);
	rb_insert_color(&g->node, &mdev->grants);
	list_add(&g->owner_link, &g->owner->grants_out);
	list_add(&g->target_link, &g->target->grants_in);
	g->owner->nr_grants++;
	atomic_inc(&g->owner->user->grants);
	return true;
}

/* Take @g out of the tree and the lists; its region reference stays. */
static void grant_unlink(struct md_device *mdev, struct md_grant *g)
{
	lockdep_assert_held(&mdev->share_lock);
	rb_erase(&g->node, &mdev->grants);
	list_del(&g->owner_link);
	list_del(&g->target_link);
	g->owner->nr_grants--;
	atomic_dec(&g->owner->user->grants);
}

/* Unlinked grants on @dead (by owner_link): drop them, no lock held. */
static void grants_free(struct list_head *dead)
{
	struct md_grant *g, *tmp;

	list_for_each_entry_safe(g, tmp, dead, owner_link) {
		md_region_put(g->r);
		kfree(g);
	}
}

/* May @dom have one more pending grant? */
static int grant_room(struct md_domain *dom)
{
	struct md_device *mdev = dom->dev;
	unsigned int per_domain = READ_ONCE(mdev->max_domain_grants);
	unsigned int per_user = READ_ONCE(mdev->max_user_grants);

	lockdep_assert_held(&mdev->share_lock);
	if (per_domain && dom->nr_grants >= per_domain)
		return -ENOSPC;
	if (per_user && !dom->privileged &&
	    atomic_read(&dom->user->grants) >= per_user)
		return -ENOSPC;
	return 0;
}

/*
 * GRANT; *@size: the region's bytes, once it is found; *@held: on success,
 * the region with a reference of the caller's (for the trace, md_grant()).
 */
static int grant(struct md_domain *dom, struct metadef_grant *arg, u64 *size,
		 struct md_region **held)
{
	struct md_device *mdev = dom->dev;
	struct md_domain *target;
	struct md_region *r;
	struct md_grant *g;
	int ret = 0;

	if (!arg->flags || (arg->flags & ~METADEF_SHARE_FLAGS) ||
	    !(arg->flags & METADEF_SHARE_READ))
		return -EINVAL;
	if (arg->domain_id == dom->id)
		return -EINVAL;
	r = md_region_get_owned(dom, arg->handle, &ret);
	if (!r)
		return ret;
	*size = r->alloc.size;
	target = md_domain_get_by_id(mdev, arg->domain_id);
	if (!target) {
		ret = -ENOENT;
		goto out_region;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g) {
		ret = -ENOMEM;
		goto out_target;
	}
	g->r = r;
	g->owner = dom;
	g->target = target;
	g->perm = share_perm(arg->flags);

	mutex_lock(&mdev->share_lock);
	/*
	 * A target that is closing takes no grants: none would be dropped.
	 * Nor does a region whose handle a racing FREE dropped: nobody
	 * could revoke the grant any more (md_share_region_freed()).
	 */
	if (target->share_closed || !READ_ONCE(r->handle))
		ret = -ENOENT;
	else
		ret = grant_room(dom);
	if (!ret) {
		do
			g->token = get_random_u64();
		while (!g->token || !grant_link(mdev, g));
		arg->token = g->token;
	}
	mutex_unlock(&mdev->share_lock);
	md_domain_put(target);
	if (ret) {
		kfree(g);
		md_region_put(r);
	} else {
		kref_get(&r->ref);	/* the grant may go before the trace */
		*held = r;
	}
	return ret;

out_target:
	md_domain_put(target);
out_region:
	md_region_put(r);
	return ret;
}

/*
 * GRANT. A refusal is traced here; a success once the caller has its token
 * (md_grant_commit()), or as the -EFAULT the caller gets when it could not
 * be told (md_grant_undo()). *@priv: the region, referenced, for either.
 */
int md_grant(struct md_domain *dom, struct metadef_grant *arg, void **priv)
{
	struct md_region *r = NULL;
	u64 size = 0;
	int ret = grant(dom, arg, &size, &r);

	if (ret)
		trace_metadef_grant(dom->id, arg->domain_id, arg->handle, size,
				    arg->flags, ret);
	else
		*priv = r;
	return ret;
}

/* The granter has its token. */
void md_grant_commit(struct md_domain *dom, struct metadef_grant *arg,
		     void *priv)
{
	struct md_region *r = priv;

	trace_metadef_grant(dom->id, arg->domain_id, arg->handle,
			    r->alloc.size, arg->flags, 0);
	md_region_put(r);
}

/*
 * The granter could not be told its token (the copy-out failed): nobody
 * can import with it, so the grant goes again. A REVOKE by another thread
 * of the owner may have taken it already.
 */
void md_grant_undo(struct md_domain *dom, struct metadef_grant *arg,
		   void *priv)
{
	struct md_device *mdev = dom->dev;
	struct md_region *r = priv;
	struct md_grant *g;

	trace_metadef_grant(dom->id, arg->domain_id, arg->handle,
			    r->alloc.size, arg->flags, -EFAULT);
	md_region_put(r);
	mutex_lock(&mdev->share_lock);
	g = grant_find(mdev, arg->token);
	if (g && g->owner == dom)
		grant_unlink(mdev, g);
	else
		g = NULL;
	mutex_unlock(&mdev->share_lock);
	if (g) {
		md_region_put(g->r);
		kfree(g);
	}
}

/* IMPORT, see md_import(); *@owner and *@owner_handle: the grant's. */
static int import(struct md_domain *dom, struct metadef_import *arg,
		  struct md_import **priv, u32 *owner, u32 *owner_handle)
{
	struct md_device *mdev = dom->dev;
	struct md_import *imp;
	struct md_region *r;
	struct md_grant *g;
	int ret;

	if (arg->flags)
		return -EINVAL;
	/* Tokens are never 0; a token meant for another domain is unknown. */
	if (!arg->token)
		return -ENOENT;
	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	if (!imp)
		return -ENOMEM;

	mutex_lock(&mdev->share_lock);
	g = grant_find(mdev, arg->token);
	ret = -ENOENT;
	if (!g || g->target != dom)
		goto unlock;
	r = g->r;
	*owner = r->owner;
	*owner_handle = READ_ONCE(r->handle);

	ret = md_domain_bind_pool(dom, r->pool);
	if (ret)
		goto unlock;
	/* The same VA in every table: a second import of it is refused. */
	ret = md_mmu_map(&dom->mmu, r->dev_va, r->alloc.offset, r->alloc.size,
			 g->perm, dom->color);
	if (ret)
		goto unlock;
	ret = xa_alloc(&dom->handles, &arg->handle, NULL, xa_limit_31b,
		       GFP_KERNEL);
	if (ret) {
		md_mmu_unmap(&dom->mmu, r->dev_va, r->alloc.size);
		ret = ret == -EBUSY ? -ENOMEM : ret;
		goto unlock;
	}

	imp->r = r;
	imp->dom = dom;
	imp->perm = g->perm;
	imp->id = atomic64_inc_return(&mdev->import_seq);
	imp->grant = g;
	down_write(&r->imports_lock);
	list_add(&imp->link, &r->imports);
	up_write(&r->imports_lock);
	atomic_inc(&dom->nr_imports);
	/* Taken up: the grant's region reference becomes the import's. */
	grant_unlink(mdev, g);
	mutex_unlock(&mdev->share_lock);

	arg->dev_va = r->dev_va;
	arg->mmap_offset = md_region_mmap_offset(r);
	arg->size = r->alloc.size;
	*priv = imp;
	return 0;

unlock:
	mutex_unlock(&mdev->share_lock);
	kfree(imp);
	return ret;
}

/**
 * md_import() - take up a grant addressed to @dom
 * @dom: the caller's domain, the grant's target
 * @arg: the validated request; its out fields are filled in
 * @priv: the new import, for md_import_commit() or md_import_undo()
 *
 * The import is live when this returns (the device and CPU may reach the
 * region), but its handle is only reserved: it is stored by the commit,
 * once the caller knows it, so no other thread of the domain can drop it
 * first. The grant is kept until then, so an undo can give it back.
 *
 * Return: 0, or a negative errno and nothing changed.
 */
int md_import(struct md_domain *dom, struct metadef_import *arg, void **priv)
{
	struct md_import *imp = NULL;
	u32 owner = 0, owner_handle = 0;
	int ret;

	ret = import(dom, arg, &imp, &owner, &owner_handle);
	/* A success is traced by the commit, or by the undo as -EFAULT. */
	if (ret) {
		trace_metadef_import(dom->id, arg->handle, owner, owner_handle,
				     arg->size, arg->dev_va, 0, ret);
	} else {
		imp->owner = owner;
		imp->owner_handle = owner_handle;
	}
	*priv = imp;
	return ret;
}

static void trace_import_answer(struct md_domain *dom,
				const struct metadef_import *arg,
				const struct md_import *imp, int ret)
{
	trace_metadef_import(dom->id, arg->handle, imp->owner,
			     imp->owner_handle, arg->size, arg->dev_va,
			     md_access_flags(imp->perm), ret);
}

/* The importer knows its handle: store it; the grant is spent. */
void md_import_commit(struct md_domain *dom, struct metadef_import *arg,
		      void *priv)
{
	struct md_import *imp = priv;

	trace_import_answer(dom, arg, imp, 0);
	kfree(imp->grant);
	imp->grant = NULL;
	/* Replaces the reserved entry: nothing to allocate, cannot fail. */
	xa_store(&dom->handles, arg->handle,
		 xa_tag_pointer(imp, MD_HANDLE_IMPORT), GFP_NOWAIT);
}

/* Cut @imp off its region (share_lock held); returns the region to put. */
static struct md_region *detach_import(struct md_import *imp)
{
	struct md_region *r = imp->r;

	lockdep_assert_held(&imp->dom->dev->share_lock);
	if (!r)
		return NULL;
	down_write(&r->imports_lock);
	list_del(&imp->link);
	imp->r = NULL;
	up_write(&r->imports_lock);
	md_mmu_unmap(&imp->dom->mmu, r->dev_va, r->alloc.size);
	atomic_dec(&imp->dom->nr_imports);
	return r;
}

/*
 * The importer could not be told: take the import back and make the
 * grant pending again, unless the owner revoked or closed meanwhile.
 */
void md_import_undo(struct md_domain *dom, struct metadef_import *arg,
		    void *priv)
{
	struct md_device *mdev = dom->dev;
	struct md_import *imp = priv;
	struct md_grant *g = imp->grant;
	bool restored = false;
	struct md_region *r;

	trace_import_answer(dom, arg, imp, -EFAULT);
	mutex_lock(&mdev->share_lock);
	r = detach_import(imp);
	/* Not for an owner that closed or dropped its handle meanwhile. */
	if (r && !g->owner->share_closed && READ_ONCE(r->handle))
		restored = grant_link(mdev, g);	/* the reference is its again */
	mutex_unlock(&mdev->share_lock);
	xa_erase(&dom->handles, arg->handle);
	if (r) {
		/* It may have been mapped through a guessed mmap offset. */
		zap_cpu_mappings(r);
		if (!restored)
			md_region_put(r);
	}
	if (!restored)
		kfree(g);
	kfree(imp);
}

/*
 * The importer drops its import (FREE on its handle, or closing). Returns
 * the bytes it reached, 0 if it was revoked; their device VA in *@dev_va
 * if not NULL.
 */
u64 md_unimport(struct md_import *imp, u64 *dev_va)
{
	struct md_device *mdev = imp->dom->dev;
	struct md_region *r;
	u64 size = 0;

	mutex_lock(&mdev->share_lock);
	r = detach_import(imp);
	mutex_unlock(&mdev->share_lock);
	if (r) {
		size = r->alloc.size;
		if (dev_va)
			*dev_va = r->dev_va;
		/* Its CPU mappings must fault (and fail) from now on. */
		zap_cpu_mappings(r);
		md_region_put(r);
	}
	kfree(imp);
	return size;
}

/* What one REVOKE took away, for its tracepoint. */
struct revoke_count {
	u64 size;
	unsigned int imports;
	unsigned int grants;
};

static int revoke(struct md_domain *dom, struct metadef_revoke *arg,
		  struct revoke_count *n)
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
	n->size = r->alloc.size;

	mutex_lock(&mdev->share_lock);
	list_for_each_entry_safe(imp, itmp, &r->imports, link)
		if (!arg->domain_id || imp->dom->id == arg->domain_id)
			refs += !!detach_import(imp);
	list_for_each_entry_safe(g, gtmp, &dom->grants_out, owner_link)
		if (g->r == r &&
		    (!arg->domain_id || g->target->id == arg->domain_id)) {
			grant_unlink(mdev, g);
			list_add(&g->owner_link, &dead);
			n->grants++;
		}
	mutex_unlock(&mdev->share_lock);
	n->imports = refs;

	/*
	 * Every fault that passed its check before the imports went has put
	 * its page in place by now (it held imports_lock): this zaps it.
	 */
	zap_cpu_mappings(r);
	while (refs--)
		md_region_put(r);
	grants_free(&dead);
	md_region_put(r);
	return 0;
}

int md_revoke(struct md_domain *dom, struct metadef_revoke *arg)
{
	u64 t0 = md_trace_clock(trace_metadef_revoke_enabled());
	struct revoke_count n = { 0 };
	int ret = revoke(dom, arg, &n);

	trace_metadef_revoke(dom->id, arg->handle, arg->domain_id, n.size,
			     n.imports, n.grants, ret, md_trace_since(t0));
	return ret;
}

/*
 * The owner dropped its handle of @r (FREE, or its domain closing): the
 * grants of @r nobody took up go, since no REVOKE could reach them any
 * more; they would keep the memory allocated and charged for as long as
 * the owner's domain lives, and importable by a domain the owner is done
 * with. Imports already taken up stay (README: an owner's FREE leaves
 * importers their access). The caller has cleared r->handle before, so a
 * racing GRANT either linked its grant first or sees the handle gone.
 */
void md_share_region_freed(struct md_region *r)
{
	struct md_device *mdev = r->mdev;
	struct md_domain *dom = r->dom;
	struct md_grant *g, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&mdev->share_lock);
	list_for_each_entry_safe(g, tmp, &dom->grants_out, owner_link)
		if (g->r == r) {
			grant_unlink(mdev, g);
			list_add(&g->owner_link, &dead);
		}
	mutex_unlock(&mdev->share_lock);
	grants_free(&dead);
}

/*
 * The domain is closing: its grants nobody took up go with it, and so do
 * grants addressed to it, which nobody could take up any more.
 */
void md_share_domain_close(struct md_domain *dom)
{
	struct md_device *mdev = dom->dev;
	struct md_grant *g, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&mdev->share_lock);
	dom->share_closed = true;
	list_for_each_entry_safe(g, tmp, &dom->grants_out, owner_link) {
		grant_unlink(mdev, g);
		list_add(&g->owner_link, &dead);
	}
	list_for_each_entry_safe(g, tmp, &dom->grants_in, target_link) {
		grant_unlink(mdev, g);
		list_add(&g->owner_link, &dead);
	}
	mutex_unlock(&mdev->share_lock);
	grants_free(&dead);
}

/**
 * md_region_import_of() - @dom's live import of @r, if any
 * @dom: the domain
 * @r: the region; the caller holds r->imports_lock and must keep holding
 *     it while it uses the import
 */
struct md_import *md_region_import_of(struct md_domain *dom,
				      struct md_region *r)
{
	struct md_import *imp;

	lockdep_assert_held(&r->imports_lock);
	list_for_each_entry(imp, &r->imports, link)
		if (imp->dom == dom)
			return imp;
	return NULL;
}
