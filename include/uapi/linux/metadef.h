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
 *  - an unknown command fails with -ENOTTY.
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
 * @domain_id: out: id of the caller's memory domain (one per open file)
 * @flags: in: must be zero
 * @reserved: in: must be zero; out: zero
 */
struct metadef_info {
	__u32 abi_version;
	__u32 page_size;
	__u64 pool_size;
	__u32 domain_id;
	__u32 flags;
	__u64 reserved[4];
};

#define METADEF_IOC_INFO	_IOWR(METADEF_IOC_MAGIC, 0x00, struct metadef_info)

#endif /* _UAPI_LINUX_METADEF_H */
