// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/metadef/: read-only seq_file views of the module's
 * state, for root only.
 */
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "metadef.h"
#include "pool.h"

static int domains_show(struct seq_file *m, void *unused)
{
	struct md_device *mdev = m->private;
	struct md_domain *dom;
	unsigned long id;

	seq_puts(m, "id\tpid\tuid\tcomm\tcolor\tquota\tused\tregions\timports\tfaults\tgrants\n");
	xa_lock(&mdev->domains);
	xa_for_each(&mdev->domains, id, dom) {
		u64 quota = READ_ONCE(dom->quota);

		seq_printf(m, "%u\t%d\t%u\t%s\t%u\t", dom->id, dom->pid,
			   from_kuid(&init_user_ns, dom->uid), dom->comm,
			   dom->color);
		if (quota == METADEF_QUOTA_UNLIMITED)
			seq_puts(m, "unlimited");
		else
			seq_printf(m, "%llu", quota);
		seq_printf(m, "\t%lld\t%d\t%d\t%d\t%u\n",
			   (s64)atomic64_read(&dom->used),
			   atomic_read(&dom->nr_regions),
			   atomic_read(&dom->nr_imports),
			   atomic_read(&dom->nr_faults),
			   READ_ONCE(dom->nr_grants));
	}
	xa_unlock(&mdev->domains);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(domains);

/* "unlimited" where the netlink answer (and metadefctl --json) says null. */
static void show_bytes(struct seq_file *m, const char *name, u64 v)
{
	if (v == U64_MAX)
		seq_printf(m, "%s\tunlimited\n", name);
	else
		seq_printf(m, "%s\t%llu\n", name, v);
}

/*
 * The limits carry the names of their module parameters, as LIMITS_GET
 * and metadefctl do; max_user_bytes is the limit as set (0: none) and
 * max_user_bytes_effective what it comes to on the current pool.
 */
static int info_show(struct seq_file *m, void *unused)
{
	struct md_device *mdev = m->private;
	struct md_pool *pool = md_pool_current(mdev);

	seq_printf(m, "abi_version\t%u\n", METADEF_ABI_VERSION);
	seq_printf(m, "page_size\t%lu\n", PAGE_SIZE);
	seq_printf(m, "pool_size_param\t%llu\n", mdev->pool_size);
	show_bytes(m, "default_quota", READ_ONCE(mdev->default_quota));
	seq_printf(m, "max_user_domains\t%u\n",
		   READ_ONCE(mdev->max_user_domains));
	seq_printf(m, "max_user_bytes\t%llu\n", READ_ONCE(mdev->max_user_bytes));
	seq_printf(m, "max_user_pct\t%u\n", READ_ONCE(mdev->max_user_pct));
	show_bytes(m, "max_user_bytes_effective",
		   pool ? md_user_byte_limit(mdev, pool->buddy.size) : U64_MAX);
	if (pool)
		md_pool_put(pool);
	seq_printf(m, "max_user_grants\t%u\n", READ_ONCE(mdev->max_user_grants));
	seq_printf(m, "max_domain_grants\t%u\n",
		   READ_ONCE(mdev->max_domain_grants));
	seq_printf(m, "low_water\t%llu\n", READ_ONCE(mdev->low_water));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(info);

/* What each user holds over all of its domains (user.c). */
static int users_show(struct seq_file *m, void *unused)
{
	md_users_show(m->private, m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(users);

static int pool_show(struct seq_file *m, void *unused)
{
	struct md_pool *pool = md_pool_current(m->private);

	if (!pool) {
		seq_puts(m, "backend\tnone\n");
		return 0;
	}
	md_pool_show(pool, m);
	md_pool_put(pool);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pool);

static int buddy_show(struct seq_file *m, void *unused)
{
	struct md_pool *pool = md_pool_current(m->private);

	if (!pool)
		return 0;
	mutex_lock(&pool->lock);
	md_buddy_show(&pool->buddy, m);
	mutex_unlock(&pool->lock);
	md_pool_put(pool);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(buddy);

/*
 * Every live region, mapped-only ones included: they all sit in mmap_ids,
 * and a region leaves it (under this lock) before it is freed.
 */
static int regions_show(struct seq_file *m, void *unused)
{
	struct md_device *mdev = m->private;
	struct md_region *r;
	unsigned long id;

	seq_puts(m, "domain\thandle\tpid\toffset\tsize\trefs\tmapped\tdmabufs\n");
	xa_lock(&mdev->mmap_ids);
	xa_for_each(&mdev->mmap_ids, id, r)
		seq_printf(m, "%u\t%u\t%d\t%#llx\t%llu\t%u\t%d\t%d\n",
			   r->owner, READ_ONCE(r->handle), r->pid,
			   r->alloc.offset, r->alloc.size, kref_read(&r->ref),
			   atomic_read(&r->vmas), atomic_read(&r->dmabufs));
	xa_unlock(&mdev->mmap_ids);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(regions);

/* The copy engine's last faults, oldest first. */
static int faults_show(struct seq_file *m, void *unused)
{
	struct md_device *mdev = m->private;
	struct md_fault_entry *log;
	u64 n, first, i;

	log = kmalloc_array(MD_FAULT_LOG, sizeof(*log), GFP_KERNEL);
	if (!log)
		return -ENOMEM;
	spin_lock(&mdev->fault_lock);
	memcpy(log, mdev->faults, sizeof(mdev->faults));
	n = mdev->nr_faults;
	spin_unlock(&mdev->fault_lock);

	seq_printf(m, "# %llu faults in all, the last %u kept\n", n, MD_FAULT_LOG);
	seq_puts(m, "time_ns\tdomain\tva\taccess\treason\n");
	first = n > MD_FAULT_LOG ? n - MD_FAULT_LOG : 0;
	for (i = first; i < n; i++) {
		struct md_fault_entry *f = &log[i % MD_FAULT_LOG];

		seq_printf(m, "%llu\t%u\t%#llx\t%s\t%s\n", f->time_ns, f->domain,
			   f->va, f->access & MD_MMU_WRITE ? "write" : "read",
			   md_mmu_fault_name(f->reason));
	}
	kfree(log);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(faults);

/* One domain's device page table: debugfs "mmu/<id>". */
static int mmu_show(struct seq_file *m, void *unused)
{
	struct md_domain *dom = m->private;

	seq_printf(m, "# domain %u\n", dom->id);
	md_mmu_show(&dom->mmu, m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mmu);

/*
 * Called once the domain has its id, and when its file closes; debugfs
 * removal waits for readers, so a dump never outlives the domain's file.
 */
void md_debugfs_domain_add(struct md_domain *dom)
{
	char name[16];

	snprintf(name, sizeof(name), "%u", dom->id);
	dom->mmu_debugfs = debugfs_create_file(name, 0400,
					       dom->dev->mmu_debugfs, dom,
					       &mmu_fops);
}

void md_debugfs_domain_remove(struct md_domain *dom)
{
	debugfs_remove(dom->mmu_debugfs);
	dom->mmu_debugfs = NULL;
}

void md_debugfs_init(struct md_device *mdev)
{
	/* debugfs failures are not fatal: the device works without it. */
	mdev->debugfs = debugfs_create_dir(METADEF_DEVICE_NAME, NULL);
	debugfs_create_file("info", 0400, mdev->debugfs, mdev, &info_fops);
	debugfs_create_file("domains", 0400, mdev->debugfs, mdev,
			    &domains_fops);
	debugfs_create_file("pool", 0400, mdev->debugfs, mdev, &pool_fops);
	debugfs_create_file("buddy", 0400, mdev->debugfs, mdev, &buddy_fops);
	debugfs_create_file("regions", 0400, mdev->debugfs, mdev,
			    &regions_fops);
	debugfs_create_file("faults", 0400, mdev->debugfs, mdev, &faults_fops);
	debugfs_create_file("users", 0400, mdev->debugfs, mdev, &users_fops);
	mdev->mmu_debugfs = debugfs_create_dir("mmu", mdev->debugfs);
}

void md_debugfs_exit(struct md_device *mdev)
{
	debugfs_remove_recursive(mdev->debugfs);
	mdev->debugfs = NULL;
}
