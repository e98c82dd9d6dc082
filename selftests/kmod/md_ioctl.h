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
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "random.h"

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

#define MD_NOBODY 65534

/*
 * Become nobody, a member of /dev/metadef's group (as a user the udev rule
 * lets in: tools/udev/60-metadef.rules) and of no other, unless @outsider:
 * then of no group at all. Root's supplementary groups are dropped either
 * way. 0 or -1.
 */
static inline int become_nobody(int outsider)
{
	struct stat st;
	gid_t g;

	if (stat("/dev/" METADEF_DEVICE_NAME, &st))
		return -1;
	g = st.st_gid;
	if (outsider || !g ? setgroups(0, NULL) : setgroups(1, &g))
		return -1;
	if (setresgid(MD_NOBODY, MD_NOBODY, MD_NOBODY) ||
	    setresuid(MD_NOBODY, MD_NOBODY, MD_NOBODY))
		return -1;
	return 0;
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

#define MD_DEBUGFS_DIR "/sys/kernel/debug/metadef/"

/* Rows of a debugfs table below its header line; -1 without the file. */
static inline int md_debugfs_rows(const char *name)
{
	char path[128], line[512];
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), MD_DEBUGFS_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n < 0 ? 0 : n;
}

/* What is left in the module: the pool's bytes, regions and domains. */
struct md_leftovers {
	long long pool_size;	/* -1: no "pool" file */
	long long pool_free;
	int regions;		/* rows of "regions", -1: no file */
	int domains;		/* rows of "domains", -1: no file */
};

static inline struct md_leftovers md_leftovers(void)
{
	struct md_leftovers l = { -1, -1, -1, -1 };
	char line[256];
	long long v;
	FILE *f = fopen(MD_DEBUGFS_DIR "pool", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "size\t%lld", &v) == 1)
				l.pool_size = v;
			else if (sscanf(line, "free\t%lld", &v) == 1)
				l.pool_free = v;
		}
		fclose(f);
	}
	l.regions = md_debugfs_rows("regions");
	l.domains = md_debugfs_rows("domains");
	return l;
}

/*
 * Leaks: regions and domains left, plus pool bytes not free; -1 when
 * debugfs cannot tell. Waits up to @ms for late releases (a dying
 * process's files are closed before its parent reaps it, but allow for
 * deferred work) and returns what it last saw in *@l.
 */
static inline long long md_leaks(int ms, struct md_leftovers *l)
{
	long long leaks = -1;

	for (int waited = 0;; waited += 50) {
		*l = md_leftovers();
		if (l->pool_size < 0 || l->pool_free < 0 || l->regions < 0 ||
		    l->domains < 0)
			return -1;
		leaks = l->regions + l->domains + (l->pool_size - l->pool_free);
		if (!leaks || waited >= ms)
			return leaks;
		usleep(50 * 1000);
	}
}

/*
 * splitmix64: the selftests' seedable generator (one state per thread or
 * process; a seed of 0 is fine).
 */
static inline uint64_t md_rand(uint64_t *s)
{
	return md_splitmix64(s);
}

/* A seed from the environment (decimal or 0x hex), or @dflt. */
static inline uint64_t md_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end)
		return dflt;
	return x;
}

#endif /* METADEF_KSFT_MD_IOCTL_H */
