/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kselftests: the ioctls of /dev/metadef as small functions returning 0 or
 * -errno, shared by the test programs.
 */
#ifndef METADEF_KSFT_MD_IOCTL_H
#define METADEF_KSFT_MD_IOCTL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/metadef.h>

/* INFO of @fd's domain; all zero if the ioctl fails. */
static inline struct metadef_info info_of(int fd)
{
	struct metadef_info info;

	memset(&info, 0, sizeof(info));
	ioctl(fd, METADEF_IOC_INFO, &info);
	return info;
}

static inline uint32_t domain_of(int fd)
{
	return info_of(fd).domain_id;
}

static inline int alloc(int fd, uint64_t size, struct metadef_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	return ioctl(fd, METADEF_IOC_ALLOC, a) ? -errno : 0;
}

/* FREE: drop @fd's handle (a region or an import). */
static inline int release(int fd, uint32_t handle)
{
	struct metadef_free f = { .handle = handle };

	return ioctl(fd, METADEF_IOC_FREE, &f) ? -errno : 0;
}

static inline int copy(int fd, uint64_t dst, uint64_t src, uint64_t size)
{
	struct metadef_copy c = { .src_va = src, .dst_va = dst, .size = size };

	return ioctl(fd, METADEF_IOC_COPY, &c) ? -errno : 0;
}

#endif /* METADEF_KSFT_MD_IOCTL_H */
