// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/metadef/: read-only seq_file views of the module's
 * state, for root only.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "metadef.h"

static int domains_show(struct seq_file *m, void *unused)
{
	struct md_device *mdev = m->private;
	struct md_domain *dom;
	unsigned long id;

	seq_puts(m, "id\tpid\tcomm\n");
	xa_lock(&mdev->domains);
	xa_for_each(&mdev->domains, id, dom)
		seq_printf(m, "%u\t%d\t%s\n", dom->id, dom->pid, dom->comm);
	xa_unlock(&mdev->domains);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(domains);

static int info_show(struct seq_file *m, void *unused)
{
	struct md_device *mdev = m->private;

	seq_printf(m, "abi_version\t%u\n", METADEF_ABI_VERSION);
	seq_printf(m, "page_size\t%lu\n", PAGE_SIZE);
	seq_printf(m, "pool_size\t%llu\n", mdev->pool_size);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(info);

void md_debugfs_init(struct md_device *mdev)
{
	/* debugfs failures are not fatal: the device works without it. */
	mdev->debugfs = debugfs_create_dir(METADEF_DEVICE_NAME, NULL);
	debugfs_create_file("info", 0400, mdev->debugfs, mdev, &info_fops);
	debugfs_create_file("domains", 0400, mdev->debugfs, mdev,
			    &domains_fops);
}

void md_debugfs_exit(struct md_device *mdev)
{
	debugfs_remove_recursive(mdev->debugfs);
	mdev->debugfs = NULL;
}
