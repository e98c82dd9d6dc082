// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl dispatcher and one handler per command.
 *
 * The dispatcher owns the uAPI rules shared by every command: it finds the
 * command in a table (unknown: -ENOTTY), copies the argument in with the
 * size the caller was compiled with (shorter: zero-filled; longer: the extra
 * bytes must be zero), runs the handler on the kernel copy, and copies the
 * result back truncated to the caller's size. Handlers only validate their
 * own fields and never touch user memory.
 */
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "metadef.h"
#include "pool.h"
#include "trace.h"

/* Largest argument of any command: the dispatcher's on-stack buffer. */
#define MD_IOCTL_MAX_SIZE 256

/* Reserved fields must be zero: they are how structs grow later. */
#define reserved_clear(arg) \
	(!memchr_inv((arg)->reserved, 0, sizeof((arg)->reserved)))

int md_info_check(const struct metadef_info *info)
{
	if (info->flags || !reserved_clear(info))
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_info_check);

void md_info_fill(struct md_domain *dom, struct metadef_info *info)
{
	struct md_pool *pool = md_pool_current(dom->dev);

	memset(info, 0, sizeof(*info));
	info->abi_version = METADEF_ABI_VERSION;
	info->page_size = PAGE_SIZE;
	info->domain_id = dom->id;
	info->domain_quota = READ_ONCE(dom->quota);
	info->domain_used = atomic64_read(&dom->used);
	if (pool) {
		info->pool_size = pool->buddy.size;
		md_pool_usage(pool, &info->pool_free, &info->pool_largest_free);
		strscpy(info->backend, pool->backend, sizeof(info->backend));
		md_pool_put(pool);
	} else {
		strscpy(info->backend, "none", sizeof(info->backend));
	}
}
EXPORT_SYMBOL_IF_KUNIT(md_info_fill);

static int md_ioctl_info(struct md_domain *dom, void *arg, void **priv)
{
	struct metadef_info *info = arg;
	int ret;

	ret = md_info_check(info);
	if (ret)
		return ret;
	md_info_fill(dom, info);
	return 0;
}

int md_alloc_check(const struct metadef_alloc *arg)
{
	if (!arg->size || (arg->flags & ~METADEF_ALLOC_FLAGS) ||
	    !reserved_clear(arg))
		return -EINVAL;
	if (arg->align && !is_power_of_2(arg->align))
		return -EINVAL;
	if (arg->flags & METADEF_ALLOC_RANGE) {
		if (!PAGE_ALIGNED(arg->range_start) ||
		    !PAGE_ALIGNED(arg->range_end) ||
		    arg->range_start >= arg->range_end)
			return -EINVAL;
	} else if (arg->range_start || arg->range_end) {
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(md_alloc_check);

static int md_ioctl_alloc(struct md_domain *dom, void *data,
			  void **priv)
{
	struct metadef_alloc *arg = data;
	u64 t0 = md_trace_clock(trace_metadef_alloc_enabled());
	int ret;

	/* Out fields are outputs only: whatever came in is overwritten. */
	arg->handle = 0;
	arg->dev_addr = 0;
	arg->mmap_offset = 0;
	arg->alloc_size = 0;
	arg->dev_va = 0;
	ret = md_alloc_check(arg);
	if (!ret)
		ret = md_region_create(dom, arg, priv);
	/*
	 * A success is traced once the caller has its answer (commit), or
	 * as the -EFAULT the caller gets when it could not be told (undo).
	 */
	if (ret)
		trace_metadef_alloc(dom->id, arg, ret, md_trace_since(t0));
	else
		((struct md_region *)*priv)->trace_t0 = t0;
	return ret;
}

/* The caller never learnt the handle: the region must not stay behind. */
static void md_ioctl_alloc_undo(struct md_domain *dom, void *data,
				void *priv)
{
	struct md_region *r = priv;

	trace_metadef_alloc(dom->id, data, -EFAULT,
			    md_trace_since(r->trace_t0));
	md_region_create_undo(dom, data, priv);
}

static void md_ioctl_alloc_commit(struct md_domain *dom, void *data,
				  void *priv)
{
	struct md_region *r = priv;

	trace_metadef_alloc(dom->id, data, 0, md_trace_since(r->trace_t0));
	md_region_create_commit(dom, data, priv);
}

static int md_ioctl_free(struct md_domain *dom, void *data,
			 void **priv)
{
	struct metadef_free *arg = data;

	if (arg->flags || !reserved_clear(arg))
		return -EINVAL;
	return md_region_free_handle(dom, arg->handle);
}

static int md_ioctl_set_quota(struct md_domain *dom, void *data,
			      void **priv)
{
	struct metadef_quota *arg = data;

	if (arg->flags || !reserved_clear(arg))
		return -EINVAL;
	return md_domain_set_quota(dom, arg->domain_id, arg->quota);
}

static int md_ioctl_copy(struct md_domain *dom, void *data,
			 void **priv)
{
	struct metadef_copy *arg = data;

	if (arg->flags || arg->pad || !reserved_clear(arg))
		return -EINVAL;
	return md_copy(dom, arg);
}

static int md_ioctl_grant(struct md_domain *dom, void *data,
			  void **priv)
{
	struct metadef_grant *arg = data;

	if (arg->pad || !reserved_clear(arg))
		return -EINVAL;
	arg->token = 0;
	return md_grant(dom, arg, priv);
}

/* The granter never learnt its token: no grant stays behind. */
static void md_ioctl_grant_undo(struct md_domain *dom, void *data, void *priv)
{
	md_grant_undo(dom, data, priv);
}

static void md_ioctl_grant_commit(struct md_domain *dom, void *data,
				  void *priv)
{
	md_grant_commit(dom, data, priv);
}

static int md_ioctl_import(struct md_domain *dom, void *data,
			   void **priv)
{
	struct metadef_import *arg = data;

	if (!reserved_clear(arg))
		return -EINVAL;
	arg->handle = 0;
	arg->dev_va = 0;
	arg->mmap_offset = 0;
	arg->size = 0;
	return md_import(dom, arg, priv);
}

/* The importer never learnt its handle: the grant is pending again. */
static void md_ioctl_import_undo(struct md_domain *dom, void *data,
				 void *priv)
{
	md_import_undo(dom, data, priv);
}

static void md_ioctl_import_commit(struct md_domain *dom, void *data,
				   void *priv)
{
	md_import_commit(dom, data, priv);
}

static int md_ioctl_revoke(struct md_domain *dom, void *data,
			   void **priv)
{
	struct metadef_revoke *arg = data;

	if (!reserved_clear(arg))
		return -EINVAL;
	return md_revoke(dom, arg);
}

static int md_ioctl_export(struct md_domain *dom, void *data, void **priv)
{
	struct metadef_export *arg = data;

	if ((arg->flags & ~METADEF_EXPORT_FLAGS) || arg->pad ||
	    !reserved_clear(arg))
		return -EINVAL;
	arg->fd = -1;
	return md_dmabuf_export(dom, arg, priv);
}

static void md_ioctl_export_undo(struct md_domain *dom, void *data, void *priv)
{
	md_dmabuf_export_undo(data, priv);
}

static void md_ioctl_export_commit(struct md_domain *dom, void *data,
				   void *priv)
{
	md_dmabuf_export_commit(data, priv);
}

static const struct md_ioctl_desc md_ioctls[] = {
	{
		.cmd = METADEF_IOC_INFO,
		.name = "INFO",
		.min_size = sizeof(struct metadef_info),
		.handler = md_ioctl_info,
	},
	{
		.cmd = METADEF_IOC_ALLOC,
		.name = "ALLOC",
		.min_size = METADEF_ALLOC_SIZE_VER0,
		.handler = md_ioctl_alloc,
		.undo = md_ioctl_alloc_undo,
		.commit = md_ioctl_alloc_commit,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_FREE,
		.name = "FREE",
		.min_size = sizeof(struct metadef_free),
		.handler = md_ioctl_free,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_SET_QUOTA,
		.name = "SET_QUOTA",
		.min_size = sizeof(struct metadef_quota),
		.handler = md_ioctl_set_quota,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_COPY,
		.name = "COPY",
		.min_size = sizeof(struct metadef_copy),
		.handler = md_ioctl_copy,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_GRANT,
		.name = "GRANT",
		.min_size = sizeof(struct metadef_grant),
		.handler = md_ioctl_grant,
		.undo = md_ioctl_grant_undo,
		.commit = md_ioctl_grant_commit,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_IMPORT,
		.name = "IMPORT",
		.min_size = sizeof(struct metadef_import),
		.handler = md_ioctl_import,
		.undo = md_ioctl_import_undo,
		.commit = md_ioctl_import_commit,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_REVOKE,
		.name = "REVOKE",
		.min_size = sizeof(struct metadef_revoke),
		.handler = md_ioctl_revoke,
		.write = true,
	},
	{
		.cmd = METADEF_IOC_EXPORT_DMABUF,
		.name = "EXPORT_DMABUF",
		.min_size = sizeof(struct metadef_export),
		.handler = md_ioctl_export,
		.undo = md_ioctl_export_undo,
		.commit = md_ioctl_export_commit,
		.write = true,
	},
};

/*
 * Find the table entry for @cmd. Type, number and direction must match;
 * the size may differ from the current one (older or newer callers) but
 * not drop below the first version's size nor exceed what we can buffer.
 */
const struct md_ioctl_desc *md_ioctl_lookup(unsigned int cmd)
{
	unsigned int usize = _IOC_SIZE(cmd);
	size_t i;

	if (_IOC_TYPE(cmd) != METADEF_IOC_MAGIC)
		return NULL;

	for (i = 0; i < ARRAY_SIZE(md_ioctls); i++) {
		const struct md_ioctl_desc *d = &md_ioctls[i];

		if (_IOC_NR(d->cmd) != _IOC_NR(cmd) ||
		    _IOC_DIR(d->cmd) != _IOC_DIR(cmd))
			continue;
		if (usize < d->min_size || usize > MD_IOCTL_MAX_SIZE)
			return NULL;
		return d;
	}
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(md_ioctl_lookup);

long md_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct md_domain *dom = file->private_data;
	void __user *uarg = (void __user *)arg;
	const struct md_ioctl_desc *d;
	unsigned int usize, ksize;
	u8 buf[MD_IOCTL_MAX_SIZE] __aligned(8);
	void *priv = NULL;
	int ret;

	d = md_ioctl_lookup(cmd);
	if (!d)
		return -ENOTTY;
	/* The descriptor is the capability: a read-only one may only ask. */
	if (d->write && !(file->f_mode & FMODE_WRITE))
		return -EBADF;

	usize = _IOC_SIZE(cmd);
	ksize = _IOC_SIZE(d->cmd);
	BUILD_BUG_ON(sizeof(struct metadef_info) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(sizeof(struct metadef_alloc) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(offsetofend(struct metadef_alloc, reserved) !=
		     METADEF_ALLOC_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct metadef_free) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(sizeof(struct metadef_quota) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(sizeof(struct metadef_copy) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(sizeof(struct metadef_import) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(sizeof(struct metadef_revoke) > MD_IOCTL_MAX_SIZE);
	BUILD_BUG_ON(sizeof(struct metadef_export) > MD_IOCTL_MAX_SIZE);

	memset(buf, 0, ksize);
	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		/* Newer callers' extra bytes must all be zero. */
		ret = copy_struct_from_user(buf, ksize, uarg, usize);
		if (ret == -E2BIG)
			return -EINVAL;
		if (ret)
			return ret;
	}

	ret = d->handler(dom, buf, &priv);
	if (ret)
		return ret;

	if (_IOC_DIR(cmd) & _IOC_READ) {
		/* A newer caller's tail is zeroed, an older one truncated. */
		if (copy_to_user(uarg, buf, min(usize, ksize)) ||
		    (usize > ksize && clear_user(uarg + ksize, usize - ksize))) {
			if (d->undo)
				d->undo(dom, buf, priv);
			return -EFAULT;
		}
	}
	if (d->commit)
		d->commit(dom, buf, priv);
	return 0;
}
