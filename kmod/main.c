// SPDX-License-Identifier: GPL-2.0
/*
 * metadef.ko: module init/exit, parameters, the misc device and its file
 * operations. Each open file description of /dev/metadef is one memory
 * domain.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/platform_device.h>
#include <linux/pseudo_fs.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "buddy.h"
#include "metadef.h"
#include "pool.h"

static struct md_device md_dev = {
	.pool_lock = __MUTEX_INITIALIZER(md_dev.pool_lock),
	.domains = XARRAY_INIT(md_dev.domains, XA_FLAGS_ALLOC1),
	.mmap_ids = XARRAY_INIT(md_dev.mmap_ids, XA_FLAGS_ALLOC1),
	.pool_size = SZ_64M,
	.default_quota = METADEF_QUOTA_UNLIMITED,
	.colors = IDA_INIT(md_dev.colors),
	.share_lock = __MUTEX_INITIALIZER(md_dev.share_lock),
	.grants = RB_ROOT,
	.fault_lock = __SPIN_LOCK_UNLOCKED(md_dev.fault_lock),
	.users_lock = __MUTEX_INITIALIZER(md_dev.users_lock),
	.users = XARRAY_INIT(md_dev.users, 0),
	.max_user_domains = 1024,
	.max_user_pct = 50,
	.max_user_grants = 4096,
	.max_domain_grants = 1024,
	.low_water_armed = ATOMIC_INIT(1),
};

static char *backend = "sysram";
module_param(backend, charp, 0444);
MODULE_PARM_DESC(backend, "Where the pool comes from: sysram (host RAM, default) or pcibar (a PCI device's BAR)");

static int pcibar_bar = 2;
module_param(pcibar_bar, int, 0444);
MODULE_PARM_DESC(pcibar_bar, "With backend=pcibar: the BAR that is the pool (default 2, ivshmem's)");

static int pool_size_set(const char *val, const struct kernel_param *kp)
{
	char *end;
	u64 size;

	size = memparse(val, &end);
	if (end == val || (*end && *end != '\n'))
		return -EINVAL;
	if (size < PAGE_SIZE)
		return -EINVAL;
	*(u64 *)kp->arg = size;
	return 0;
}

static int pool_size_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%llu\n", *(u64 *)kp->arg);
}

static const struct kernel_param_ops pool_size_ops = {
	.set = pool_size_set,
	.get = pool_size_get,
};

module_param_cb(pool_size, &pool_size_ops, &md_dev.pool_size, 0444);
MODULE_PARM_DESC(pool_size, "Bytes of device-visible memory to manage, with K/M/G suffix (default 64M)");

/* 0 (the default) means no limit. */
static int quota_set(const char *val, const struct kernel_param *kp)
{
	char *end;
	u64 size = memparse(val, &end);

	if (end == val || (*end && *end != '\n'))
		return -EINVAL;
	*(u64 *)kp->arg = size ?: METADEF_QUOTA_UNLIMITED;
	return 0;
}

static int quota_get(char *buf, const struct kernel_param *kp)
{
	u64 q = *(u64 *)kp->arg;

	return sysfs_emit(buf, "%llu\n", q == METADEF_QUOTA_UNLIMITED ? 0 : q);
}

static const struct kernel_param_ops quota_ops = {
	.set = quota_set,
	.get = quota_get,
};

module_param_cb(default_quota, &quota_ops, &md_dev.default_quota, 0644);
MODULE_PARM_DESC(default_quota, "Bytes a new domain may hold, with K/M/G suffix (default 0: no limit)");

module_param_named(max_user_domains, md_dev.max_user_domains, uint, 0644);
MODULE_PARM_DESC(max_user_domains, "Domains (open descriptors) a user without CAP_SYS_ADMIN may hold at once (default 1024, 0: no limit)");

/*
 * Bytes with a K/M/G suffix, or "N%" of the pool; 0: no limit. Both
 * fields change together under the parameter's lock; readers take either
 * with READ_ONCE() and at worst see the old or the new limit.
 */
static int user_bytes_set(const char *val, const struct kernel_param *kp)
{
	bool pct = false;
	char *end;
	u64 size;

	size = memparse(val, &end);
	if (end == val)
		return -EINVAL;
	if (*end == '%') {
		if (!size || size > 100)
			return -EINVAL;
		pct = true;
		end++;
	}
	if (*end && *end != '\n')
		return -EINVAL;
	WRITE_ONCE(md_dev.max_user_pct, pct ? size : 0);
	WRITE_ONCE(md_dev.max_user_bytes, pct ? 0 : size);
	return 0;
}

static int user_bytes_get(char *buf, const struct kernel_param *kp)
{
	unsigned int pct = READ_ONCE(md_dev.max_user_pct);

	if (pct)
		return sysfs_emit(buf, "%u%%\n", pct);
	return sysfs_emit(buf, "%llu\n", READ_ONCE(md_dev.max_user_bytes));
}

static const struct kernel_param_ops user_bytes_ops = {
	.set = user_bytes_set,
	.get = user_bytes_get,
};

module_param_cb(max_user_bytes, &user_bytes_ops, NULL, 0644);
MODULE_PARM_DESC(max_user_bytes, "Pool bytes a user without CAP_SYS_ADMIN may hold over all of its domains, with K/M/G suffix or as N% of the pool (default 50%, 0: no limit)");

module_param_named(max_user_grants, md_dev.max_user_grants, uint, 0644);
MODULE_PARM_DESC(max_user_grants, "Pending grants a user without CAP_SYS_ADMIN may have over all of its domains (default 4096, 0: no limit)");

module_param_named(max_domain_grants, md_dev.max_domain_grants, uint, 0644);
MODULE_PARM_DESC(max_domain_grants, "Pending grants one domain may have (default 1024, 0: no limit)");

/* Bytes with a K/M/G suffix; 0: no event. Setting it arms the event. */
static int low_water_set(const char *val, const struct kernel_param *kp)
{
	char *end;
	u64 size = memparse(val, &end);

	if (end == val || (*end && *end != '\n'))
		return -EINVAL;
	WRITE_ONCE(md_dev.low_water, size);
	atomic_set(&md_dev.low_water_armed, 1);
	return 0;
}

static const struct kernel_param_ops low_water_ops = {
	.set = low_water_set,
	.get = pool_size_get,
};

module_param_cb(low_water, &low_water_ops, &md_dev.low_water, 0644);
MODULE_PARM_DESC(low_water, "Free pool bytes below which the netlink event POOL_LOW is sent, with K/M/G suffix (default 0: never)");

static int md_open(struct inode *inode, struct file *file)
{
	struct md_domain *dom = md_domain_create(&md_dev);

	if (IS_ERR(dom))
		return PTR_ERR(dom);
	/* One address_space for every open file, whatever node it came by. */
	file->f_mapping = md_dev.inode->i_mapping;
	file->private_data = dom;
	return 0;
}

static int md_release(struct inode *inode, struct file *file)
{
	md_domain_close(file->private_data);
	return 0;
}

static const struct file_operations md_fops = {
	.owner = THIS_MODULE,
	.open = md_open,
	.release = md_release,
	.unlocked_ioctl = md_ioctl,
	.mmap = md_mmap,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/*
 * A private pseudo filesystem provides the inode whose address_space all
 * open files share (file->f_mapping), as DRM does for its devices.
 */
#define METADEF_FS_MAGIC 0x6d646566	/* "mdef" */

static struct vfsmount *md_mnt;
static int md_mnt_count;

static int md_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, METADEF_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: the mount is pinned from module init to module exit, and a
 * module reference taken by it would keep the module from ever unloading.
 * Nothing of this module runs after exit releases the mount.
 */
static struct file_system_type md_fs_type = {
	.name = "metadef",
	.init_fs_context = md_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

static int md_inode_init(void)
{
	int ret = simple_pin_fs(&md_fs_type, &md_mnt, &md_mnt_count);

	if (ret)
		return ret;
	md_dev.inode = alloc_anon_inode(md_mnt->mnt_sb);
	if (IS_ERR(md_dev.inode)) {
		ret = PTR_ERR(md_dev.inode);
		md_dev.inode = NULL;
		simple_release_fs(&md_mnt, &md_mnt_count);
	}
	return ret;
}

/* Files of dma-buf mappings: nothing but a module reference and f_mapping. */
static const struct file_operations md_mapping_fops = {
	.owner = THIS_MODULE,
	.llseek = noop_llseek,
};

/**
 * md_mapping_file() - a new file whose f_mapping is the device's shared
 * address_space, for the mappings of a dma-buf (vma_set_file()): they are
 * zapped with every other mapping of the device's memory. It holds a
 * module reference, as an open /dev/metadef does, so that no mapping
 * outlives the module. fput() it.
 */
struct file *md_mapping_file(void)
{
	struct file *file;

	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-ENOENT);
	ihold(md_dev.inode);
	file = alloc_file_pseudo(md_dev.inode, md_mnt, "metadef-dmabuf",
				 O_RDWR, &md_mapping_fops);
	if (IS_ERR(file)) {
		iput(md_dev.inode);
		module_put(THIS_MODULE);
	}
	return file;
}

static void md_inode_exit(void)
{
	iput(md_dev.inode);
	md_dev.inode = NULL;
	simple_release_fs(&md_mnt, &md_mnt_count);
}

static int md_sysram_setup(void)
{
	struct platform_device *pdev;
	struct md_pool *pool;
	int ret;

	pdev = platform_device_register_simple(METADEF_DEVICE_NAME,
					       PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err;

	pool = md_sysram_create(&pdev->dev, md_dev.pool_size);
	if (IS_ERR(pool)) {
		ret = PTR_ERR(pool);
		pr_err("cannot take %llu bytes of host RAM: %d\n",
		       md_dev.pool_size, ret);
		goto err;
	}
	md_dev.pdev = pdev;
	WARN_ON(md_pool_attach(&md_dev, pool));
	return 0;
err:
	platform_device_unregister(pdev);
	return ret;
}

static bool use_pcibar(void)
{
	return !strcmp(backend, "pcibar");
}

static int md_pool_setup(void)
{
	if (use_pcibar())
		return md_pcibar_register(&md_dev, pcibar_bar);
	if (!strcmp(backend, "sysram"))
		return md_sysram_setup();
	pr_err("unknown backend '%s' (known: sysram, pcibar)\n", backend);
	return -EINVAL;
}

static void md_pool_teardown(void)
{
	struct md_pool *pool;

	if (use_pcibar()) {
		md_pcibar_unregister();
		return;
	}
	pool = md_pool_current(&md_dev);
	if (pool) {
		md_pool_detach(&md_dev, pool);
		md_pool_put(pool);	/* ours, from md_pool_current() */
		md_pool_put(pool);	/* the one md_sysram_create() gave */
	}
	platform_device_unregister(md_dev.pdev);
	md_dev.pdev = NULL;
}

static int __init md_init(void)
{
	int ret;

	ret = md_inode_init();
	if (ret)
		return ret;
	ret = md_pool_setup();
	if (ret)
		goto err_inode;

	md_debugfs_init(&md_dev);

	md_dev.misc.minor = MISC_DYNAMIC_MINOR;
	md_dev.misc.name = METADEF_DEVICE_NAME;
	md_dev.misc.fops = &md_fops;
	/* 0600: tools/udev/60-metadef.rules gives it to group "metadef". */
	ret = misc_register(&md_dev.misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", METADEF_DEVICE_NAME, ret);
		goto err_debugfs;
	}
	ret = md_genl_init(&md_dev);
	if (ret) {
		pr_err("cannot register the generic netlink family: %d\n", ret);
		goto err_misc;
	}

	if (md_dev.pool)
		pr_info("abi %u, %s pool of %llu bytes\n", METADEF_ABI_VERSION,
			md_dev.pool->backend, md_dev.pool->buddy.size);
	else
		pr_info("abi %u, no pool yet (backend %s)\n",
			METADEF_ABI_VERSION, backend);
	return 0;

err_misc:
	misc_deregister(&md_dev.misc);
err_debugfs:
	md_debugfs_exit(&md_dev);
	md_pool_teardown();
err_inode:
	md_inode_exit();
	return ret;
}

static void __exit md_exit(void)
{
	md_genl_exit();
	misc_deregister(&md_dev.misc);
	md_debugfs_exit(&md_dev);
	WARN_ON(!xa_empty(&md_dev.domains));
	WARN_ON(!xa_empty(&md_dev.mmap_ids));
	md_pool_teardown();
	WARN_ON(md_dev.pool);
	md_inode_exit();
	xa_destroy(&md_dev.domains);
	WARN_ON(!xa_empty(&md_dev.users));
	WARN_ON(!RB_EMPTY_ROOT(&md_dev.grants));
	ida_destroy(&md_dev.colors);
}

module_init(md_init);
module_exit(md_exit);

MODULE_DESCRIPTION("metadef: device-visible memory pools, domains and isolation for accelerators");
MODULE_AUTHOR("The metadef developers");
MODULE_LICENSE("GPL");
