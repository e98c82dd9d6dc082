// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Thin, errno-returning wrappers around /dev/metadef's ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <metadef/metadef.h>

#include "internal.h"

MD_API int md_kmod_open(const char *path)
{
	int fd = open(path ? path : MD_DEFAULT_DEVICE, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

MD_API int md_kmod_info(int fd, struct metadef_info *info)
{
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, METADEF_IOC_INFO, info) < 0)
		return -errno;
	return 0;
}
