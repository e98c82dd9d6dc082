/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kselftests: the ioctls of /dev/metadef as small functions returning 0 or
 * -errno, shared by the test programs.
 */
#ifndef METADEF_KSFT_MD_IOCTL_H
#define METADEF_KSFT_MD_IOCTL_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

static inline int share_grant(int fd, uint32_t handle, uint32_t to,
			      uint32_t flags, uint64_t *token)
{
	struct metadef_grant g = { .handle = handle, .domain_id = to,
				   .flags = flags };
	int ret = ioctl(fd, METADEF_IOC_GRANT, &g) ? -errno : 0;

	*token = g.token;
	return ret;
}

static inline int share_import(int fd, uint64_t token,
			       struct metadef_import *im)
{
	memset(im, 0, sizeof(*im));
	im->token = token;
	return ioctl(fd, METADEF_IOC_IMPORT, im) ? -errno : 0;
}

static inline int share_revoke(int fd, uint32_t handle, uint32_t from)
{
	struct metadef_revoke r = { .handle = handle, .domain_id = from };

	return ioctl(fd, METADEF_IOC_REVOKE, &r) ? -errno : 0;
}

/*
 * Does touching *@p (reading, or writing 0x5a if @write) kill a child with
 * SIGBUS? 1 if so, 0 if the access went through, -1 for any other end.
 */
static inline int touch_faults(volatile char *p, int write)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (write)
			p[0] = 0x5a;
		else
			(void)p[0];
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS)
		return 1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

#define MD_DEBUGFS_DOMAINS "/sys/kernel/debug/metadef/domains"

/* One row of debugfs "domains" (the columns kmod/debugfs.c prints). */
struct dom_row {
	unsigned int id;
	int pid;
	long long used;
	int regions;
};

/*
 * The domains of this process other than @except, from debugfs; the last
 * one found in *@row. Returns how many, or -1 without debugfs.
 */
static inline int my_domains(unsigned int except, struct dom_row *row)
{
	char line[256], comm[64], quota[32];
	unsigned int color, uid;
	struct dom_row r;
	int n = 0;
	FILE *f = fopen(MD_DEBUGFS_DOMAINS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u\t%d\t%u\t%63s\t%u\t%31s\t%lld\t%d", &r.id,
			   &r.pid, &uid, comm, &color, quota, &r.used,
			   &r.regions) != 8)
			continue;
		if (r.pid != getpid() || r.id == except)
			continue;
		n++;
		if (row)
			*row = r;
	}
	fclose(f);
	return n;
}

#endif /* METADEF_KSFT_MD_IOCTL_H */
