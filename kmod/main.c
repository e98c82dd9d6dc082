// SPDX-License-Identifier: GPL-2.0
/*
 * metadef.ko: module init/exit, parameters, the misc device and its file
 * operations. Each open file description of /dev/metadef is one memory
 * domain.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "buddy.h"
#include "metadef.h"

static struct md_device md_dev = {
	.domains = XARRAY_INIT(md_dev.domains, XA_FLAGS_ALLOC1),
	.pool_size = SZ_64M,
};

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

static int md_open(struct inode *inode, struct file *file)
{
	struct md_domain *dom;
	int ret;

	dom = kzalloc(sizeof(*dom), GFP_KERNEL);
	if (!dom)
		return -ENOMEM;

	dom->dev = &md_dev;
	dom->pid = task_tgid_nr(current);
	get_task_comm(dom->comm, current);

	ret = xa_alloc_cyclic(&md_dev.domains, &dom->id, dom, xa_limit_31b,
			      &md_dev.next_domain, GFP_KERNEL);
	if (ret < 0) {
		kfree(dom);
		return ret;
	}

	file->private_data = dom;
	return 0;
}

static int md_release(struct inode *inode, struct file *file)
{
	struct md_domain *dom = file->private_data;

	xa_erase(&md_dev.domains, dom->id);
	kfree(dom);
	return 0;
}

static const struct file_operations md_fops = {
	.owner = THIS_MODULE,
	.open = md_open,
	.release = md_release,
	.unlocked_ioctl = md_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static int __init md_init(void)
{
	int ret;

	md_dev.misc.minor = MISC_DYNAMIC_MINOR;
	md_dev.misc.name = METADEF_DEVICE_NAME;
	md_dev.misc.fops = &md_fops;
	md_dev.misc.mode = 0666;

	ret = md_buddy_cache_init();
	if (ret)
		return ret;

	md_debugfs_init(&md_dev);

	ret = misc_register(&md_dev.misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", METADEF_DEVICE_NAME, ret);
		md_debugfs_exit(&md_dev);
		md_buddy_cache_exit();
		return ret;
	}

	pr_info("abi %u, pool %llu bytes\n", METADEF_ABI_VERSION,
		md_dev.pool_size);
	return 0;
}

static void __exit md_exit(void)
{
	misc_deregister(&md_dev.misc);
	md_debugfs_exit(&md_dev);
	WARN_ON(!xa_empty(&md_dev.domains));
	xa_destroy(&md_dev.domains);
	md_buddy_cache_exit();
}

module_init(md_init);
module_exit(md_exit);

MODULE_DESCRIPTION("metadef: device-visible memory pools, domains and isolation for accelerators");
MODULE_AUTHOR("The metadef developers");
MODULE_LICENSE("GPL");
