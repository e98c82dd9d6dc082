/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * metadef - device-visible memory for accelerator hosts: user ABI.
 *
 * This is the only header shared by the kernel module (kmod/) and the
 * library (lib/). The rules every structure here follows:
 *
 *  - fixed-width types only; pointers and sizes are __u64;
 *  - explicit padding, no implicit holes; every struct is a multiple of 8;
 *  - every pad, reserved field and unknown flag bit must be zero on input,
 *    otherwise the ioctl fails with -EINVAL and changes nothing;
 *  - structs only grow at the end. The size is encoded in the ioctl number,
 *    so the kernel accepts both older (shorter) and newer (longer) callers:
 *    missing input fields read as zero, extra input bytes must be zero,
 *    output is truncated to the caller's size;
 *  - an unknown command fails with -ENOTTY;
 *  - a descriptor opened without write access (O_RDONLY) may only ask
 *    (INFO); every command that changes something fails with -EBADF.
 */
#ifndef _UAPI_LINUX_METADEF_H
#define _UAPI_LINUX_METADEF_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define METADEF_DEVICE_NAME	"metadef"
#define METADEF_ABI_VERSION	1

#define METADEF_IOC_MAGIC	0xDE

/**
 * struct metadef_info - METADEF_IOC_INFO: describe the device and caller
 * @abi_version: out: METADEF_ABI_VERSION of the running module
 * @page_size: out: the CPU page size; also the smallest allocation unit
 * @pool_size: out: bytes of device-visible memory the module manages
 * @pool_free: out: bytes of it not allocated
 * @pool_largest_free: out: the largest allocation that would succeed now
 *                     (the netlink POOL_LARGEST_FREE, debugfs pool
 *                     "largest_free"); @pool_largest is its older name
 * @domain_id: out: id of the caller's memory domain (one per open file)
 * @flags: in: must be zero
 * @backend: out: the pool's adapter ("sysram", ...), NUL-terminated
 * @domain_quota: out: bytes the domain may hold (METADEF_QUOTA_UNLIMITED)
 * @domain_used: out: bytes the domain holds
 * @reserved: in: must be zero; out: zero
 */
struct metadef_info {
	__u32 abi_version;
	__u32 page_size;
	__u64 pool_size;
	__u64 pool_free;
	union {
		__u64 pool_largest_free;
		__u64 pool_largest;
	};
	__u32 domain_id;
	__u32 flags;
	char backend[16];
	__u64 domain_quota;
	__u64 domain_used;
	__u64 reserved[4];
};

#define METADEF_QUOTA_UNLIMITED	(~(__u64)0)

/* metadef_alloc.flags */
#define METADEF_ALLOC_TOPDOWN	(1u << 0)	/* prefer high pool offsets */
#define METADEF_ALLOC_RANGE	(1u << 1)	/* inside [range_start, range_end) */
#define METADEF_ALLOC_FLAGS	(METADEF_ALLOC_TOPDOWN | METADEF_ALLOC_RANGE)

/**
 * struct metadef_alloc - METADEF_IOC_ALLOC: allocate a region
 * @size: in: bytes, > 0; rounded up to whole pages
 * @align: in: 0 (a page) or a power of two
 * @flags: in: METADEF_ALLOC_*
 * @handle: out: the region's handle in the caller's domain
 * @dev_addr: out: where the device sees the region (the bus address);
 *            0 without CAP_SYS_ADMIN, since it may be a physical address
 * @mmap_offset: out: pass to mmap(2) (MAP_SHARED) to map it
 * @alloc_size: out: bytes actually allocated
 * @dev_va: out: its device virtual address in the caller's domain (what
 *          METADEF_IOC_COPY and the device's MMU take)
 * @reserved: in: must be zero; out: zero
 * @range_start: in: with METADEF_ALLOC_RANGE, the lowest pool offset the
 *               region may start at, page-aligned; without it, zero
 * @range_end: in: with METADEF_ALLOC_RANGE, the pool offset the region must
 *             end by (exclusive), page-aligned and above @range_start;
 *             without it, zero
 *
 * Pool offsets are bytes from the start of the pool, 0 to INFO's pool_size;
 * page-aligned means to INFO's page_size. METADEF_ALLOC_RANGE is for a
 * device whose DMA reaches only part of the pool (a 32-bit window, the
 * CPU-visible part of a BAR): the region lies inside [range_start,
 * range_end), as low as it fits there, or as high with TOPDOWN. A range_end
 * past the pool stands for the pool's end; a range_start at or past it is
 * EINVAL, as is a range field that breaks the rules above.
 *
 * The memory is all zeroes. Fails with EINVAL (malformed), ENOMEM (no
 * space, or none inside the range), EDQUOT (the domain's quota would be
 * exceeded) or ENODEV (no pool); nothing is allocated or charged then.
 *
 * The struct grew: METADEF_ALLOC_SIZE_VER0 is its size before the range
 * fields, which a caller built with it never sends (and so reads as zero).
 */
struct metadef_alloc {
	__u64 size;
	__u64 align;
	__u32 flags;
	__u32 handle;
	__u64 dev_addr;
	__u64 mmap_offset;
	__u64 alloc_size;
	__u64 dev_va;
	__u64 reserved[2];
	__u64 range_start;
	__u64 range_end;
};

#define METADEF_ALLOC_SIZE_VER0	72	/* up to reserved[] */

/**
 * struct metadef_free - METADEF_IOC_FREE: drop a region's handle
 * @handle: in: from METADEF_IOC_ALLOC in this domain
 * @flags: in: must be zero
 * @reserved: in: must be zero
 *
 * The memory goes back to the pool (scrubbed) once no mapping uses it.
 * The owner's FREE also cancels the region's grants nobody took up yet
 * (their tokens import nothing); imports already made keep their access.
 * ENOENT for a handle this domain does not have.
 */
struct metadef_free {
	__u32 handle;
	__u32 flags;
	__u64 reserved[2];
};

/**
 * struct metadef_quota - METADEF_IOC_SET_QUOTA: limit a domain (CAP_SYS_ADMIN)
 * @domain_id: in: the domain, 0 for the caller's own
 * @flags: in: must be zero
 * @quota: in: bytes, or METADEF_QUOTA_UNLIMITED
 * @reserved: in: must be zero
 *
 * EPERM without CAP_SYS_ADMIN, ENOENT for a domain that is not open. A
 * quota below current usage takes nothing away; new allocations fail.
 */
struct metadef_quota {
	__u32 domain_id;
	__u32 flags;
	__u64 quota;
	__u64 reserved[2];
};

/**
 * struct metadef_copy - METADEF_IOC_COPY: the copy engine (the device's DMA)
 * @src_va: in: device VA to read from, in the caller's domain
 * @dst_va: in: device VA to write to, in the caller's domain
 * @size: in: bytes, > 0
 * @flags: in: must be zero
 * @pad: in: must be zero
 * @reserved: in: must be zero
 *
 * Every page is translated through the caller's device page table before
 * a byte moves: an unmapped page, a missing permission or a page of the
 * wrong color fails the whole copy with EFAULT, nothing copied, and the
 * fault is logged (debugfs "faults"). Overlapping ranges: undefined data,
 * like memcpy.
 */
struct metadef_copy {
	__u64 src_va;
	__u64 dst_va;
	__u64 size;
	__u32 flags;
	__u32 pad;
	__u64 reserved[2];
};

/* metadef_grant.flags: what the importer may do */
#define METADEF_SHARE_READ	(1u << 0)
#define METADEF_SHARE_WRITE	(1u << 1)
#define METADEF_SHARE_FLAGS	(METADEF_SHARE_READ | METADEF_SHARE_WRITE)

/**
 * struct metadef_grant - METADEF_IOC_GRANT: let one other domain import
 * @handle: in: a region this domain allocated (imports cannot be re-granted:
 *          EPERM)
 * @domain_id: in: the only domain that may import it (not the caller's)
 * @flags: in: METADEF_SHARE_READ, optionally with METADEF_SHARE_WRITE
 * @pad: in: must be zero
 * @token: out: pass to METADEF_IOC_IMPORT in @domain_id; single use
 * @reserved: in: must be zero
 *
 * EFAULT when the token cannot be written back; no grant is left then.
 */
struct metadef_grant {
	__u32 handle;
	__u32 domain_id;
	__u32 flags;
	__u32 pad;
	__u64 token;
	__u64 reserved[2];
};

/**
 * struct metadef_import - METADEF_IOC_IMPORT: take up a grant
 * @token: in: from METADEF_IOC_GRANT, naming this domain
 * @flags: in: must be zero
 * @handle: out: the import's handle here (FREE drops the import only)
 * @dev_va: out: where this domain's device page table maps it
 * @mmap_offset: out: for mmap(2); PROT_WRITE only with METADEF_SHARE_WRITE
 * @size: out: bytes
 * @reserved: in: must be zero
 *
 * ENOENT for a token that is unknown, used, meant for another domain, or
 * cancelled (REVOKE, the owner's FREE, either side's close); EEXIST when
 * this domain holds a live import of the region already (the grant stays
 * pending).
 */
struct metadef_import {
	__u64 token;
	__u32 flags;
	__u32 handle;
	__u64 dev_va;
	__u64 mmap_offset;
	__u64 size;
	__u64 reserved[2];
};

/**
 * struct metadef_revoke - METADEF_IOC_REVOKE: take shared access back
 * @handle: in: the owner's handle of the region
 * @domain_id: in: the importer, or 0 for every importer and pending grant
 * @flags: in: must be zero
 * @pad: in: must be zero
 * @reserved: in: must be zero
 *
 * The importers' device mappings go at once and their CPU mappings are
 * zapped: a later touch gets SIGBUS, a COPY EFAULT.
 */
struct metadef_revoke {
	__u32 handle;
	__u32 domain_id;
	__u32 flags;
	__u32 pad;
	__u64 reserved[2];
};

/* metadef_export.flags */
#define METADEF_EXPORT_CLOEXEC	(1u << 0)	/* the new fd is close-on-exec */
#define METADEF_EXPORT_RDWR	(1u << 1)	/* writable: mmap PROT_WRITE, device writes */
#define METADEF_EXPORT_FLAGS	(METADEF_EXPORT_CLOEXEC | METADEF_EXPORT_RDWR)

/**
 * struct metadef_export - METADEF_IOC_EXPORT_DMABUF: a dma-buf of a region
 * @handle: in: the owner's handle of the region (imports cannot be exported)
 * @flags: in: METADEF_EXPORT_*; without RDWR the dma-buf is read-only
 * @fd: out: the dma-buf's file descriptor
 * @pad: in: must be zero
 * @reserved: in: must be zero
 *
 * The dma-buf holds the region: its memory stays allocated (and charged to
 * the owner) until the last dma-buf reference, attachment and mapping are
 * gone, even after FREE or close(2) of the domain. EPERM for an import.
 */
struct metadef_export {
	__u32 handle;
	__u32 flags;
	__s32 fd;
	__u32 pad;
	__u64 reserved[2];
};

#define METADEF_IOC_INFO	_IOWR(METADEF_IOC_MAGIC, 0x00, struct metadef_info)
#define METADEF_IOC_ALLOC	_IOWR(METADEF_IOC_MAGIC, 0x01, struct metadef_alloc)
#define METADEF_IOC_FREE	_IOW(METADEF_IOC_MAGIC, 0x02, struct metadef_free)
#define METADEF_IOC_SET_QUOTA	_IOW(METADEF_IOC_MAGIC, 0x03, struct metadef_quota)
#define METADEF_IOC_COPY	_IOW(METADEF_IOC_MAGIC, 0x04, struct metadef_copy)
#define METADEF_IOC_GRANT	_IOWR(METADEF_IOC_MAGIC, 0x05, struct metadef_grant)
#define METADEF_IOC_IMPORT	_IOWR(METADEF_IOC_MAGIC, 0x06, struct metadef_import)
#define METADEF_IOC_REVOKE	_IOW(METADEF_IOC_MAGIC, 0x07, struct metadef_revoke)
#define METADEF_IOC_EXPORT_DMABUF _IOWR(METADEF_IOC_MAGIC, 0x08, struct metadef_export)

/*
 * Generic netlink family METADEF_GENL_NAME: the module's state for
 * operators (libnl-genl-3; metadefctl). Every request is validated
 * strictly against one policy: unknown attributes, wrong types and the
 * attributes only the module reports are refused (-EINVAL) with an extack
 * message naming the attribute. Integers are native-endian; every u64 is
 * 64-bit aligned (METADEF_A_PAD).
 *
 * Commands (do: one answer; dump: NLM_F_DUMP, one message per object,
 * as many messages as it takes):
 *
 *  POOL_GET	do: POOL_* (ABI_VERSION, PAGE_SIZE, the pool) and a
 *		POOL_ORDERS nest of ORDER nests (ORDER_*: free blocks of
 *		each order of the buddy allocator). -ENODEV without a pool.
 *  DOMAIN_GET	dump: DOMAIN_* for every open domain.
 *  REGION_GET	dump (CAP_SYS_ADMIN): REGION_* for every live region.
 *  QUOTA_SET	do (CAP_SYS_ADMIN): DOMAIN_ID and DOMAIN_QUOTA required;
 *		-ENOENT for a domain that is not open.
 *  LIMITS_GET	do: LIMIT_* in force.
 *  LIMITS_SET	do (CAP_SYS_ADMIN): any LIMIT_* but the effective byte
 *		limit; LIMIT_USER_BYTES and LIMIT_USER_PCT exclude each other.
 *
 * Events, multicast to group METADEF_GENL_MCGRP_EVENTS (CAP_SYS_ADMIN to
 * join), each its own command:
 *
 *  EVENT_ALLOC_REFUSED	an ALLOC found no room: EVENT_SIZE (asked),
 *			DOMAIN_ID, POOL_FREE, POOL_LARGEST_FREE,
 *			POOL_FRAGMENTATION at that moment
 *  EVENT_QUOTA_REACHED	an ALLOC went past a quota: EVENT_SIZE, DOMAIN_ID,
 *			DOMAIN_UID, EVENT_SCOPE, EVENT_LIMIT, EVENT_USED
 *  EVENT_MMU_FAULT	the copy engine faulted: DOMAIN_ID, FAULT_VA,
 *			FAULT_ACCESS, FAULT_REASON
 *  EVENT_DOMAIN_LEAK	a domain closed while its memory was still mapped
 *			or shared: DOMAIN_ID, DOMAIN_PID, DOMAIN_UID,
 *			DOMAIN_COMM, DOMAIN_USED, DOMAIN_REGIONS
 *  EVENT_POOL_LOW	free pool memory fell below the low_water module
 *			parameter: POOL_SIZE, POOL_FREE, LIMIT_LOW_WATER
 */
#define METADEF_GENL_NAME		"metadef"
#define METADEF_GENL_VERSION		1
#define METADEF_GENL_MCGRP_EVENTS	"events"

enum metadef_genl_cmd {
	METADEF_CMD_UNSPEC,
	METADEF_CMD_POOL_GET,
	METADEF_CMD_DOMAIN_GET,
	METADEF_CMD_REGION_GET,
	METADEF_CMD_QUOTA_SET,
	METADEF_CMD_LIMITS_GET,
	METADEF_CMD_LIMITS_SET,
	METADEF_CMD_EVENT_ALLOC_REFUSED,
	METADEF_CMD_EVENT_QUOTA_REACHED,
	METADEF_CMD_EVENT_MMU_FAULT,
	METADEF_CMD_EVENT_DOMAIN_LEAK,
	METADEF_CMD_EVENT_POOL_LOW,

	__METADEF_CMD_MAX,
	METADEF_CMD_MAX = __METADEF_CMD_MAX - 1
};

/* METADEF_A_FAULT_ACCESS */
#define METADEF_ACCESS_READ	1
#define METADEF_ACCESS_WRITE	2

/* METADEF_A_FAULT_REASON */
enum metadef_fault_reason {
	METADEF_FAULT_UNMAPPED = 1,	/* no page at that VA */
	METADEF_FAULT_PERM,		/* the page lacks that access */
	METADEF_FAULT_COLOR,		/* the page belongs to another domain */
};

/* METADEF_A_EVENT_SCOPE: which limit an ALLOC went past */
enum metadef_quota_scope {
	METADEF_SCOPE_DOMAIN = 1,	/* the domain's quota */
	METADEF_SCOPE_USER,		/* its user's max_user_bytes */
};

/* Parts per million: POOL_FRAGMENTATION = 1 - largest_free / free. */
#define METADEF_PPM		1000000

enum metadef_genl_attr {
	METADEF_A_UNSPEC,
	METADEF_A_PAD,
	METADEF_A_ABI_VERSION,		/* u32 */
	METADEF_A_PAGE_SIZE,		/* u32 */
	METADEF_A_POOL_BACKEND,		/* string */
	METADEF_A_POOL_SIZE,		/* u64 */
	METADEF_A_POOL_FREE,		/* u64 */
	METADEF_A_POOL_LARGEST_FREE,	/* u64 */
	METADEF_A_POOL_FRAGMENTATION,	/* u32, ppm; 0 when nothing is free */
	METADEF_A_POOL_ORDERS,		/* nest of METADEF_A_ORDER */
	METADEF_A_ORDER,		/* nest: ORDER_INDEX, ORDER_BLOCK_SIZE,
					 * ORDER_FREE_BLOCKS
					 */
	METADEF_A_ORDER_INDEX,		/* u32 */
	METADEF_A_ORDER_BLOCK_SIZE,	/* u64 */
	METADEF_A_ORDER_FREE_BLOCKS,	/* u64 */
	METADEF_A_DOMAIN_ID,		/* u32: in for QUOTA_SET */
	METADEF_A_DOMAIN_UID,		/* u32 */
	METADEF_A_DOMAIN_PID,		/* u32 */
	METADEF_A_DOMAIN_COMM,		/* string */
	METADEF_A_DOMAIN_COLOR,		/* u32 */
	METADEF_A_DOMAIN_QUOTA,		/* u64, METADEF_QUOTA_UNLIMITED: none;
					 * in for QUOTA_SET
					 */
	METADEF_A_DOMAIN_USED,		/* u64 */
	METADEF_A_DOMAIN_REGIONS,	/* u32 */
	METADEF_A_DOMAIN_IMPORTS,	/* u32 */
	METADEF_A_DOMAIN_GRANTS,	/* u32 */
	METADEF_A_DOMAIN_FAULTS,	/* u32 */
	METADEF_A_REGION_DOMAIN,	/* u32: the owner's domain id */
	METADEF_A_REGION_HANDLE,	/* u32: 0 once the handle is freed */
	METADEF_A_REGION_PID,		/* u32 */
	METADEF_A_REGION_OFFSET,	/* u64: pool offset */
	METADEF_A_REGION_SIZE,		/* u64: bytes allocated */
	METADEF_A_REGION_REFS,		/* u32 */
	METADEF_A_REGION_MAPPED,	/* u32: CPU mappings (VMAs) */
	METADEF_A_REGION_DMABUFS,	/* u32 */
	METADEF_A_LIMIT_DEFAULT_QUOTA,	/* u64, METADEF_QUOTA_UNLIMITED: none */
	METADEF_A_LIMIT_USER_DOMAINS,	/* u32, 0: none */
	METADEF_A_LIMIT_USER_BYTES,	/* u64, 0: none (as set) */
	METADEF_A_LIMIT_USER_PCT,	/* u32, 1-100 % of the pool, 0: bytes */
	METADEF_A_LIMIT_USER_BYTES_EFFECTIVE, /* u64, out only */
	METADEF_A_LIMIT_USER_GRANTS,	/* u32, 0: none */
	METADEF_A_LIMIT_DOMAIN_GRANTS,	/* u32, 0: none */
	METADEF_A_LIMIT_LOW_WATER,	/* u64, 0: no EVENT_POOL_LOW */
	METADEF_A_EVENT_SIZE,		/* u64: bytes asked for */
	METADEF_A_EVENT_SCOPE,		/* u32: enum metadef_quota_scope */
	METADEF_A_EVENT_LIMIT,		/* u64: the limit passed */
	METADEF_A_EVENT_USED,		/* u64: usage against it before */
	METADEF_A_FAULT_VA,		/* u64: device VA */
	METADEF_A_FAULT_ACCESS,		/* u32: METADEF_ACCESS_* */
	METADEF_A_FAULT_REASON,		/* u32: enum metadef_fault_reason */

	__METADEF_A_MAX,
	METADEF_A_MAX = __METADEF_A_MAX - 1
};

#endif /* _UAPI_LINUX_METADEF_H */
