/* SPDX-License-Identifier: GPL-2.0 */
/*
 * metadef.ko internal interfaces: shared by the files of the module, never
 * by user space (that is include/uapi/linux/metadef.h).
 */
#ifndef _METADEF_H
#define _METADEF_H

#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/rbtree.h>
#include <linux/rwsem.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "buddy.h"
#include "mmu.h"

#include <uapi/linux/metadef.h>

#include "export.h"

struct dentry;
struct inode;
struct md_grant;
struct seq_file;
struct md_pool;
struct platform_device;
struct vfsmount;

/* Device VAs: a region's is this base plus its pool offset, in every table. */
#define MD_DEV_VA_BASE		BIT_ULL(40)

/* The last faults of the copy engine, for debugfs "faults". */
#define MD_FAULT_LOG		64

struct md_fault_entry {
	u64 time_ns;
	u64 va;
	u32 domain;
	u8 access;
	u8 reason;
};

/*
 * mmap offsets: region id << MD_MMAP_SHIFT, so each region owns a 1 TiB
 * window of the device's offset space and offsets stay positive loff_t.
 */
#define MD_MMAP_SHIFT		40
#define MD_MMAP_MAX_ID		((1u << (63 - MD_MMAP_SHIFT)) - 1)

/**
 * struct md_device - the one metadef device of this module
 * @misc: /dev/metadef
 * @pdev: the device a sysram pool is DMA-mapped for
 * @pool_lock: guards @pool, which a PCI device may take away
 * @pool: the memory handed out (NULL until a pcibar device probes)
 * @domains: open domains by id (xa_alloc_cyclic: ids are not reused soon)
 * @next_domain: cursor for xa_alloc_cyclic
 * @mmap_ids: every live region by its mmap id
 * @inode: gives all open files one address_space, so a region's user
 *         mappings can be zapped wherever they are
 * @debugfs: /sys/kernel/debug/metadef/
 * @pool_size: bytes of device-visible memory to manage (module parameter)
 * @default_quota: quota of a new domain (module parameter)
 * @colors: color tags in use by open domains
 * @share_lock: serialises sharing: grants, imports, revocation, and the
 *              domains' lists of grants
 * @grants: grants not taken up yet, by token (an rbtree: O(log n) lookup)
 * @import_seq: the last import id handed out
 * @fault_lock: guards the fault log
 * @faults: the last MD_FAULT_LOG copy-engine faults, a ring
 * @nr_faults: faults ever recorded (the ring's head)
 * @mmu_debugfs: debugfs "mmu/", one page-table dump per domain
 * @users_lock: guards @users and each user's @domains count
 * @users: struct md_user by uid, while the user has a domain
 * @max_user_domains: the most a user without CAP_SYS_ADMIN may hold
 *                    (module parameter; 0: no limit)
 * @max_user_bytes: pool bytes a user without CAP_SYS_ADMIN may hold over
 *                  all of its domains (module parameter; 0: no limit)
 * @max_user_pct: the same as a percentage of the pool, when not 0 (the
 *                parameter was given as "N%"; takes precedence)
 * @max_user_grants: pending grants a user without CAP_SYS_ADMIN may have
 *                   (module parameter; 0: no limit)
 * @max_domain_grants: pending grants one domain may have (module
 *                     parameter; 0: no limit)
 * @low_water: free pool bytes below which the netlink event POOL_LOW is
 *             sent (module parameter; 0: never)
 * @low_water_armed: 1 until the event is sent, 1 again once free memory
 *                   is back at or above @low_water
 */
struct md_device {
	struct miscdevice misc;
	struct platform_device *pdev;
	struct mutex pool_lock;		/* guards @pool */
	struct md_pool *pool;
	struct xarray domains;
	u32 next_domain;
	struct xarray mmap_ids;
	struct inode *inode;
	struct dentry *debugfs;
	u64 pool_size;
	u64 default_quota;
	struct ida colors;
	struct mutex share_lock;	/* sharing, see share.c */
	struct rb_root grants;
	atomic64_t import_seq;
	spinlock_t fault_lock;		/* guards the fault log */
	struct md_fault_entry faults[MD_FAULT_LOG];
	u64 nr_faults;
	struct dentry *mmu_debugfs;
	struct mutex users_lock;	/* guards @users */
	struct xarray users;
	unsigned int max_user_domains;
	u64 max_user_bytes;
	unsigned int max_user_pct;
	unsigned int max_user_grants;
	unsigned int max_domain_grants;
	u64 low_water;
	atomic_t low_water_armed;
};

/**
 * struct md_user - what one user holds over all of its domains
 * @uid: the user
 * @domains: its domains still alive (open, or closed with memory still
 *           mapped); the entry goes with the last (under users_lock)
 * @bytes: pool bytes charged to its domains
 * @grants: pending grants of its domains
 */
struct md_user {
	kuid_t uid;
	unsigned int domains;
	atomic64_t bytes;
	atomic_t grants;
};

/**
 * struct md_domain - a memory domain (tenant): one open file description
 * @ref: the file, and every region charged to the domain
 * @dev: the device it was opened on
 * @id: domain id reported by METADEF_IOC_INFO, unique while open
 * @pid: thread group that opened it (for debugfs)
 * @comm: command name of the opener (for debugfs)
 * @handles: the regions this domain holds, by handle
 * @quota: bytes it may hold at once (METADEF_QUOTA_UNLIMITED: no limit)
 * @used: bytes charged to it: its regions whose memory is not back yet
 * @nr_regions: how many those are
 * @color: its color tag, unique among open domains
 * @pool: the pool its device page table points into (set by its first
 *        allocation, holds a reference)
 * @mmu: its device page table
 * @nr_faults: copy-engine faults it caused
 * @nr_imports: live imports it holds (not revoked, not dropped)
 * @uid: the user who opened it
 * @user: that user's accounting (holds a count in it)
 * @privileged: opened with CAP_SYS_ADMIN: not bound by the per-user limits
 * @grants_out: its grants not taken up yet (md_grant.owner_link; under
 *              mdev->share_lock)
 * @grants_in: grants to it not taken up yet (md_grant.target_link)
 * @nr_grants: how many @grants_out holds
 * @share_closed: the file closed: no grant to or from it any more (under
 *                mdev->share_lock)
 * @mmu_debugfs: its debugfs "mmu/<id>"
 */
struct md_domain {
	struct kref ref;
	struct md_device *dev;
	u32 id;
	pid_t pid;
	char comm[TASK_COMM_LEN];
	struct xarray handles;
	u64 quota;
	atomic64_t used;
	atomic_t nr_regions;
	u16 color;
	struct md_pool *pool;
	struct md_mmu mmu;
	atomic_t nr_faults;
	atomic_t nr_imports;
	kuid_t uid;
	struct md_user *user;
	bool privileged;
	struct list_head grants_out;
	struct list_head grants_in;
	unsigned int nr_grants;
	bool share_closed;
	struct dentry *mmu_debugfs;
};

/**
 * struct md_region - one allocation from the pool
 * @ref: the handle, each VMA, ...: freed back to the pool at zero
 * @mdev: the device
 * @pool: the pool it came from (holds a pool reference)
 * @alloc: where in the pool
 * @size: bytes asked for
 * @mmap_id: index in @mdev->mmap_ids; the mmap offset derives from it
 * @dom: the domain it is charged to (holds a reference)
 * @dev_va: where the device sees it through its owner's table
 * @va_mapped: it is in the owner's table (from ALLOC until the handle goes)
 * @owner: id of the domain that allocated it
 * @handle: its handle in @owner, 0 once freed (for debugfs)
 * @pid: thread group that allocated it
 * @vmas: user mappings of it
 * @dmabufs: dma-bufs exported from it that are still alive
 * @imports_lock: guards @imports. CPU faults of importers hold it for
 *                reading from their access check until the page is in
 *                place; whoever takes an import away holds it for writing
 *                and zaps the CPU mappings after: no fault slips between.
 * @imports: other domains' imports of it
 */
struct md_region {
	struct kref ref;
	struct md_device *mdev;
	struct md_pool *pool;
	struct md_buddy_alloc alloc;
	u64 size;
	u32 mmap_id;
	struct md_domain *dom;
	u64 dev_va;
	bool va_mapped;
	u32 owner;
	u32 handle;
	pid_t pid;
	atomic_t vmas;
	atomic_t dmabufs;
	struct rw_semaphore imports_lock;
	struct list_head imports;
	u64 trace_t0;	/* while its ALLOC is in flight: md_trace_clock() */
};

/**
 * struct md_import - another domain's access to a region, from a grant;
 * in the importer's handle table as a pointer tagged MD_HANDLE_IMPORT
 * @r: the region (holds a reference); NULL once revoked
 * @dom: the importer
 * @perm: MD_MMU_READ, maybe MD_MMU_WRITE
 * @id: unique among all imports ever made: a CPU mapping made through
 *      this import works only while this very import lives
 * @link: in @r->imports
 * @grant: until the IMPORT's answer reached the caller, the grant it took
 *         up (given back if it cannot be told)
 * @owner: the owner's domain id and @owner_handle its handle, for the
 *         tracepoint fired when the IMPORT's answer is out (or not)
 */
struct md_import {
	struct md_region *r;
	struct md_domain *dom;
	u32 perm;
	u64 id;
	struct list_head link;
	struct md_grant *grant;
	u32 owner;
	u32 owner_handle;
};

#define MD_HANDLE_IMPORT	1	/* xa_pointer_tag() of an import */

/* Tracepoint latencies: a start time only while the event is enabled. */
static inline u64 md_trace_clock(bool enabled)
{
	return enabled ? ktime_get_ns() : 0;
}

/* Nanoseconds since @t0 from md_trace_clock(); 0 if it was not taken. */
static inline u64 md_trace_since(u64 t0)
{
	return t0 ? ktime_get_ns() - t0 : 0;
}

/* MD_MMU_* permission bits as the uAPI's (and the tracepoints') 1 and 2. */
static inline u32 md_access_flags(u32 perm)
{
	return (perm & MD_MMU_READ ? METADEF_SHARE_READ : 0) |
	       (perm & MD_MMU_WRITE ? METADEF_SHARE_WRITE : 0);
}

/* share.c */
int md_grant(struct md_domain *dom, struct metadef_grant *arg, void **priv);
void md_grant_commit(struct md_domain *dom, struct metadef_grant *arg,
		     void *priv);
void md_grant_undo(struct md_domain *dom, struct metadef_grant *arg,
		   void *priv);
int md_import(struct md_domain *dom, struct metadef_import *arg,
	      void **priv);
void md_import_commit(struct md_domain *dom, struct metadef_import *arg,
		      void *priv);
void md_import_undo(struct md_domain *dom, struct metadef_import *arg,
		    void *priv);
int md_revoke(struct md_domain *dom, struct metadef_revoke *arg);
u64 md_unimport(struct md_import *imp, u64 *dev_va);
void md_share_domain_close(struct md_domain *dom);
void md_share_region_freed(struct md_region *r);
struct md_import *md_region_import_of(struct md_domain *dom,
				      struct md_region *r);

/* user.c */
struct md_user *md_user_get(struct md_device *mdev, kuid_t uid,
			    bool privileged);
void md_user_put(struct md_device *mdev, struct md_user *user);
u64 md_user_byte_limit(struct md_device *mdev, u64 pool_size);
void md_users_show(struct md_device *mdev, struct seq_file *m);

/* domain.c */
struct md_domain *md_domain_create(struct md_device *mdev);
void md_domain_close(struct md_domain *dom);
void md_domain_put(struct md_domain *dom);
struct md_domain *md_domain_get_by_id(struct md_device *mdev, u32 id);
int md_domain_bind_pool(struct md_domain *dom, struct md_pool *pool);
int md_domain_charge(struct md_domain *dom, u64 bytes, u64 pool_size);
void md_domain_uncharge(struct md_domain *dom, u64 bytes);
int md_domain_set_quota(struct md_domain *dom, u32 id, u64 quota);

/* region.c */
int md_region_create(struct md_domain *dom, struct metadef_alloc *arg,
		     void **priv);
void md_region_create_commit(struct md_domain *dom,
			     struct metadef_alloc *arg, void *priv);
void md_region_create_undo(struct md_domain *dom, struct metadef_alloc *arg,
			   void *priv);
int md_region_free_handle(struct md_domain *dom, u32 handle);
void md_region_release_domain(struct md_domain *dom);
struct md_region *md_region_get_owned(struct md_domain *dom, u32 handle,
				      int *err);
struct md_region *md_region_lookup_mmap(struct md_domain *dom,
					unsigned long pgoff);
u64 md_region_mmap_offset(const struct md_region *r);
void md_region_put(struct md_region *r);

/* copy.c */
int md_copy(struct md_domain *dom, struct metadef_copy *arg);
void md_fault_record(struct md_domain *dom, u64 va, unsigned int access,
		     enum md_mmu_fault reason);

/* mmap.c */
int md_mmap(struct file *file, struct vm_area_struct *vma);
int md_mmap_region(struct md_region *r, struct vm_area_struct *vma,
		   struct file *mapping);

/* dmabuf.c */
int md_dmabuf_export(struct md_domain *dom, struct metadef_export *arg,
		     void **priv);
void md_dmabuf_export_undo(struct metadef_export *arg, void *priv);
void md_dmabuf_export_commit(struct metadef_export *arg, void *priv);

/* ioctl.c */

/**
 * struct md_ioctl_desc - one entry of the ioctl table
 * @cmd: the command as defined in the uAPI header (current size)
 * @name: for logs and debugfs
 * @min_size: smallest argument size ever shipped (the first version)
 * @handler: does the work on a kernel copy of the argument; may leave state
 *           for @undo or @commit in *priv
 * @undo: takes back what a successful @handler did when its result cannot
 *        be copied back to the caller (no partial success)
 * @commit: makes visible what must not be seen before the result reached
 *          the caller (a new file descriptor); cannot fail
 * @write: changes something: refused (-EBADF) on a read-only descriptor
 */
struct md_ioctl_desc {
	unsigned int cmd;
	const char *name;
	unsigned int min_size;
	int (*handler)(struct md_domain *dom, void *arg, void **priv);
	void (*undo)(struct md_domain *dom, void *arg, void *priv);
	void (*commit)(struct md_domain *dom, void *arg, void *priv);
	bool write;
};

const struct md_ioctl_desc *md_ioctl_lookup(unsigned int cmd);
int md_info_check(const struct metadef_info *info);
int md_alloc_check(const struct metadef_alloc *arg);
void md_info_fill(struct md_domain *dom, struct metadef_info *info);
long md_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* main.c */
struct file *md_mapping_file(void);

/* genl.c */
int md_genl_init(struct md_device *mdev);
void md_genl_exit(void);
void md_genl_alloc_refused(struct md_domain *dom, struct md_pool *pool,
			   u64 size);
void md_genl_quota_reached(struct md_domain *dom, u64 size, u32 scope,
			   u64 limit, u64 used);
void md_genl_mmu_fault(struct md_domain *dom, u64 va, unsigned int access,
		       enum md_mmu_fault reason);
void md_genl_domain_leak(struct md_domain *dom);
void md_genl_pool_check(struct md_device *mdev, struct md_pool *pool,
			bool freed);

/* debugfs.c */
void md_debugfs_init(struct md_device *mdev);
void md_debugfs_exit(struct md_device *mdev);
void md_debugfs_domain_add(struct md_domain *dom);
void md_debugfs_domain_remove(struct md_domain *dom);

#endif /* _METADEF_H */
