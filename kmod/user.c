// SPDX-License-Identifier: GPL-2.0
/*
 * Per-user accounting. A tenant is a domain, and a user may open many:
 * every limit that matters holds per user as well, or opening one more
 * descriptor would multiply it. For each user with a domain alive there is
 * one struct md_user, holding its domain count, the pool bytes charged to
 * all of its domains and their pending grants.
 *
 * The limits (module parameters, writable at run time by root) bind users
 * without CAP_SYS_ADMIN at the time they opened the domain; the usage of
 * privileged domains is counted all the same, so debugfs "users" shows
 * everything:
 *
 *  - max_user_domains (default 1024): every domain holds one of 65535
 *    color tags; like inotify's max_user_instances.
 *  - max_user_bytes (default 50%): without it one unprivileged process can
 *    take the whole pool; half leaves room for a second tenant, and the
 *    administrator sets what the host needs ("0": no limit).
 *  - max_user_grants (default 4096) and max_domain_grants (default 1024):
 *    a pending grant is kernel memory that a user could pile up at will.
 */
#include <linux/cred.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "metadef.h"

/**
 * md_user_get() - count a new domain of @uid
 * @mdev: the device
 * @uid: the user opening it
 * @privileged: the opener has CAP_SYS_ADMIN (no domain limit)
 *
 * Return: the user's accounting, or ERR_PTR(-EMFILE) when an unprivileged
 * user holds max_user_domains already, or ERR_PTR(-ENOMEM).
 */
struct md_user *md_user_get(struct md_device *mdev, kuid_t uid,
			    bool privileged)
{
	unsigned int max = READ_ONCE(mdev->max_user_domains);
	unsigned long key = __kuid_val(uid);
	struct md_user *user, *fresh;
	int ret;

	/* Allocated up front: the common case is a user seen before. */
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return ERR_PTR(-ENOMEM);

	mutex_lock(&mdev->users_lock);
	user = xa_load(&mdev->users, key);
	if (user && max && user->domains >= max && !privileged) {
		user = ERR_PTR(-EMFILE);
		goto out;
	}
	if (!user) {
		fresh->uid = uid;
		atomic64_set(&fresh->bytes, 0);
		atomic_set(&fresh->grants, 0);
		ret = xa_err(xa_store(&mdev->users, key, fresh, GFP_KERNEL));
		if (ret) {
			user = ERR_PTR(ret);
			goto out;
		}
		user = fresh;
		fresh = NULL;
	}
	user->domains++;
out:
	mutex_unlock(&mdev->users_lock);
	kfree(fresh);
	return user;
}

/* A domain of @user is gone for good (its memory is back in the pool). */
void md_user_put(struct md_device *mdev, struct md_user *user)
{
	mutex_lock(&mdev->users_lock);
	if (!--user->domains) {
		xa_erase(&mdev->users, __kuid_val(user->uid));
		kfree(user);
	}
	mutex_unlock(&mdev->users_lock);
}

/* What an unprivileged user may hold of a pool of @pool_size bytes. */
u64 md_user_byte_limit(struct md_device *mdev, u64 pool_size)
{
	unsigned int pct = READ_ONCE(mdev->max_user_pct);
	u64 bytes = READ_ONCE(mdev->max_user_bytes);

	if (pct)
		return mul_u64_u32_div(pool_size, pct, 100);
	return bytes ?: U64_MAX;
}

/* debugfs "users": one line per user with a domain. */
void md_users_show(struct md_device *mdev, struct seq_file *m)
{
	struct md_user *user;
	unsigned long uid;

	seq_puts(m, "uid\tdomains\tbytes\tgrants\n");
	mutex_lock(&mdev->users_lock);
	xa_for_each(&mdev->users, uid, user)
		seq_printf(m, "%u\t%u\t%llu\t%d\n",
			   from_kuid(&init_user_ns, user->uid), user->domains,
			   (u64)atomic64_read(&user->bytes),
			   atomic_read(&user->grants));
	mutex_unlock(&mdev->users_lock);
}
