// SPDX-License-Identifier: GPL-2.0
/*
 * Memory domains (tenants). A domain is one open file description of
 * /dev/metadef; each region charged to it holds a reference, so the
 * domain is freed after the last of them however they are released.
 *
 * Quota: every region is charged its allocated size when it is created
 * and uncharged when its memory goes back to the pool (not when the
 * handle is freed: a mapped region still holds memory). A charge that
 * would exceed the domain's quota, or its user's limit over all of the
 * user's domains (user.c), fails with -EDQUOT before anything is
 * allocated.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "metadef.h"
#include "pool.h"

struct md_domain *md_domain_create(struct md_device *mdev)
{
	struct md_domain *dom;
	int ret;

	dom = kzalloc(sizeof(*dom), GFP_KERNEL);
	if (!dom)
		return ERR_PTR(-ENOMEM);

	kref_init(&dom->ref);
	dom->dev = mdev;
	dom->pid = task_tgid_nr(current);
	get_task_comm(dom->comm, current);
	dom->quota = mdev->default_quota;
	atomic64_set(&dom->used, 0);
	xa_init_flags(&dom->handles, XA_FLAGS_ALLOC1);
	atomic_set(&dom->nr_faults, 0);
	atomic_set(&dom->nr_imports, 0);
	INIT_LIST_HEAD(&dom->grants_out);
	INIT_LIST_HEAD(&dom->grants_in);
	dom->uid = current_uid();
	dom->privileged = capable(CAP_SYS_ADMIN);

	dom->user = md_user_get(mdev, dom->uid, dom->privileged);
	if (IS_ERR(dom->user)) {
		ret = PTR_ERR(dom->user);
		goto err_free;
	}
	ret = ida_alloc_range(&mdev->colors, 1, U16_MAX, GFP_KERNEL);
	if (ret < 0)
		goto err_user;
	dom->color = ret;
	ret = md_mmu_init(&dom->mmu, dom->color);
	if (ret)
		goto err_color;

	ret = xa_alloc_cyclic(&mdev->domains, &dom->id, dom, xa_limit_31b,
			      &mdev->next_domain, GFP_KERNEL);
	if (ret < 0)
		goto err_mmu;
	md_debugfs_domain_add(dom);
	return dom;

err_mmu:
	md_mmu_fini(&dom->mmu);
err_color:
	ida_free(&mdev->colors, dom->color);
err_user:
	md_user_put(mdev, dom->user);
err_free:
	kfree(dom);
	return ERR_PTR(ret);
}

static void md_domain_release(struct kref *ref)
{
	struct md_domain *dom = container_of(ref, struct md_domain, ref);

	WARN_ON(atomic64_read(&dom->used));
	WARN_ON(dom->mmu.nr_leaves);
	md_pool_put(dom->pool);
	md_mmu_fini(&dom->mmu);
	ida_free(&dom->dev->colors, dom->color);
	md_user_put(dom->dev, dom->user);
	kfree(dom);
}

void md_domain_put(struct md_domain *dom)
{
	kref_put(&dom->ref, md_domain_release);
}

/* The open domain @id with a reference (md_domain_put it), or NULL. */
struct md_domain *md_domain_get_by_id(struct md_device *mdev, u32 id)
{
	struct md_domain *dom;

	xa_lock(&mdev->domains);
	dom = xa_load(&mdev->domains, id);
	if (dom && !kref_get_unless_zero(&dom->ref))
		dom = NULL;
	xa_unlock(&mdev->domains);
	return dom;
}

/* The file is closing: the id disappears, the handles are dropped. */
void md_domain_close(struct md_domain *dom)
{
	md_debugfs_domain_remove(dom);
	xa_erase(&dom->dev->domains, dom->id);
	md_share_domain_close(dom);
	md_region_release_domain(dom);
	md_genl_domain_leak(dom);
	md_domain_put(dom);
}

/*
 * Tie @dom to @pool on its first allocation (taking a pool reference);
 * -ENODEV when it is tied to another pool already.
 */
int md_domain_bind_pool(struct md_domain *dom, struct md_pool *pool)
{
	if (READ_ONCE(dom->pool) == pool)
		return 0;
	md_pool_get(pool);
	if (!cmpxchg(&dom->pool, NULL, pool))
		return 0;
	md_pool_put(pool);
	return READ_ONCE(dom->pool) == pool ? 0 : -ENODEV;
}

/* Add @bytes to @counter unless it would pass @limit. */
static bool charge_within(atomic64_t *counter, u64 bytes, u64 limit)
{
	s64 old = atomic64_read(counter);
	u64 new;

	do {
		new = (u64)old + bytes;
		if (new < bytes || new > limit)
			return false;
	} while (!atomic64_try_cmpxchg(counter, &old, new));
	return true;
}

/**
 * md_domain_charge() - charge @bytes to @dom and to its user
 * @dom: the domain allocating
 * @bytes: what it asks for, whole pages, at most @pool_size (the caller
 *         refuses larger sizes first), so no counter comes near overflowing
 * @pool_size: the size of the pool it allocates from
 *
 * Return: 0; -EDQUOT over the domain's quota or (unprivileged domains) the
 * user's limit. Nothing is charged on error.
 */
int md_domain_charge(struct md_domain *dom, u64 bytes, u64 pool_size)
{
	struct md_device *mdev = dom->dev;
	u64 user_limit = U64_MAX;

	u64 quota = READ_ONCE(dom->quota);

	if (!charge_within(&dom->used, bytes, quota)) {
		md_genl_quota_reached(dom, bytes, METADEF_SCOPE_DOMAIN, quota,
				      atomic64_read(&dom->used));
		return -EDQUOT;
	}
	if (!dom->privileged)
		user_limit = md_user_byte_limit(mdev, pool_size);
	if (!charge_within(&dom->user->bytes, bytes, user_limit)) {
		atomic64_sub(bytes, &dom->used);
		md_genl_quota_reached(dom, bytes, METADEF_SCOPE_USER,
				      user_limit,
				      atomic64_read(&dom->user->bytes));
		return -EDQUOT;
	}
	return 0;
}

void md_domain_uncharge(struct md_domain *dom, u64 bytes)
{
	atomic64_sub(bytes, &dom->user->bytes);
	atomic64_sub(bytes, &dom->used);
}

/**
 * md_domain_set_quota() - METADEF_IOC_SET_QUOTA
 * @dom: the caller's domain
 * @id: the domain to change, 0 for the caller's own
 * @quota: bytes; METADEF_QUOTA_UNLIMITED for no limit
 *
 * A quota below the current usage is allowed: nothing is taken away, new
 * allocations fail until usage drops below it.
 *
 * Return: 0, -EPERM without CAP_SYS_ADMIN, -ENOENT for an unknown id.
 */
int md_domain_set_quota(struct md_domain *dom, u32 id, u64 quota)
{
	struct md_device *mdev = dom->dev;
	struct md_domain *target;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!id || id == dom->id) {
		WRITE_ONCE(dom->quota, quota);
		return 0;
	}
	xa_lock(&mdev->domains);
	target = xa_load(&mdev->domains, id);
	if (target)
		WRITE_ONCE(target->quota, quota);
	xa_unlock(&mdev->domains);
	return target ? 0 : -ENOENT;
}
