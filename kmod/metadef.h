/* SPDX-License-Identifier: GPL-2.0 */
/*
 * metadef.ko internal interfaces: shared by the files of the module, never
 * by user space (that is include/uapi/linux/metadef.h).
 */
#ifndef _METADEF_H
#define _METADEF_H

#include <linux/miscdevice.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include <uapi/linux/metadef.h>

/*
 * Symbols the KUnit suites in tests/ need are exported into a namespace of
 * their own, and only on kernels that can run KUnit at all.
 */
#if IS_ENABLED(CONFIG_KUNIT)
#define MD_EXPORT_FOR_TESTS(sym) EXPORT_SYMBOL_NS_GPL(sym, METADEF_KUNIT)
#else
#define MD_EXPORT_FOR_TESTS(sym)
#endif

struct dentry;

/**
 * struct md_device - the one metadef device of this module
 * @misc: /dev/metadef
 * @domains: open domains by id (xa_alloc_cyclic: ids are not reused soon)
 * @next_domain: cursor for xa_alloc_cyclic
 * @debugfs: /sys/kernel/debug/metadef/
 * @pool_size: bytes of device-visible memory managed (module parameter)
 */
struct md_device {
	struct miscdevice misc;
	struct xarray domains;
	u32 next_domain;
	struct dentry *debugfs;
	u64 pool_size;
};

/**
 * struct md_domain - a memory domain (tenant): one open file description
 * @dev: the device it was opened on
 * @id: domain id reported by METADEF_IOC_INFO, unique while open
 * @pid: thread group that opened it (for debugfs)
 * @comm: command name of the opener (for debugfs)
 */
struct md_domain {
	struct md_device *dev;
	u32 id;
	pid_t pid;
	char comm[TASK_COMM_LEN];
};

/* ioctl.c */

/**
 * struct md_ioctl_desc - one entry of the ioctl table
 * @cmd: the command as defined in the uAPI header (current size)
 * @name: for logs and debugfs
 * @min_size: smallest argument size ever shipped (the first version)
 * @handler: does the work on a kernel copy of the argument
 */
struct md_ioctl_desc {
	unsigned int cmd;
	const char *name;
	unsigned int min_size;
	int (*handler)(struct md_domain *dom, void *arg);
};

const struct md_ioctl_desc *md_ioctl_lookup(unsigned int cmd);
int md_info_check(const struct metadef_info *info);
void md_info_fill(struct md_domain *dom, struct metadef_info *info);
long md_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* debugfs.c */
void md_debugfs_init(struct md_device *mdev);
void md_debugfs_exit(struct md_device *mdev);

#endif /* _METADEF_H */
