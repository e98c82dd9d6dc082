// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: memory domains' quotas. ALLOC beyond the quota fails with
 * EDQUOT and changes nothing; memory stays charged while mapped; only
 * CAP_SYS_ADMIN sets quotas, for its own or another open domain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"

static int set_quota(int fd, uint32_t id, uint64_t quota)
{
	struct metadef_quota q = { .domain_id = id, .quota = quota };

	return ioctl(fd, METADEF_IOC_SET_QUOTA, &q) ? -errno : 0;
}

FIXTURE(dom) {
	int fd;
	struct metadef_info info;
};

FIXTURE_SETUP(dom)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->info = info_of(self->fd);
}

FIXTURE_TEARDOWN(dom)
{
	close(self->fd);
}

TEST_F(dom, default_is_unlimited_and_unused)
{
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, self->info.domain_quota);
	EXPECT_EQ(0, self->info.domain_used);
}

TEST_F(dom, alloc_beyond_quota_edquot_nothing_changes)
{
	struct metadef_alloc a, b, refused;
	struct metadef_info before, after;

	ASSERT_EQ(0, set_quota(self->fd, 0, 1 << 20));
	EXPECT_EQ(1 << 20, info_of(self->fd).domain_quota);

	ASSERT_EQ(0, alloc(self->fd, 600 << 10, &a));
	EXPECT_EQ(600 << 10, info_of(self->fd).domain_used);
	before = info_of(self->fd);
	EXPECT_EQ(-EDQUOT, alloc(self->fd, 600 << 10, &refused));
	after = info_of(self->fd);
	EXPECT_EQ(before.domain_used, after.domain_used);
	EXPECT_EQ(before.pool_free, after.pool_free);
	/* Exactly up to the quota still fits; one page more does not. */
	EXPECT_EQ(-EDQUOT, alloc(self->fd, (424 << 10) + 4096, &refused));
	ASSERT_EQ(0, alloc(self->fd, 424 << 10, &b));
	EXPECT_EQ(1 << 20, info_of(self->fd).domain_used);
	/* Sizes are charged as allocated: whole pages. */
	EXPECT_EQ(-EDQUOT, alloc(self->fd, 1, &refused));
	EXPECT_EQ(0, refused.handle);

	EXPECT_EQ(0, release(self->fd, a.handle));
	EXPECT_EQ(424 << 10, info_of(self->fd).domain_used);
	EXPECT_EQ(0, release(self->fd, b.handle));
	EXPECT_EQ(0, info_of(self->fd).domain_used);
}

TEST_F(dom, mapped_memory_stays_charged)
{
	struct metadef_alloc a;
	void *p;

	ASSERT_EQ(0, set_quota(self->fd, 0, 64 << 10));
	ASSERT_EQ(0, alloc(self->fd, 64 << 10, &a));
	p = mmap(NULL, 64 << 10, PROT_READ, MAP_SHARED, self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, release(self->fd, a.handle));
	/* The handle is gone but the mapping still holds the memory. */
	EXPECT_EQ(64 << 10, info_of(self->fd).domain_used);
	EXPECT_EQ(-EDQUOT, alloc(self->fd, 4096, &a));
	ASSERT_EQ(0, munmap(p, 64 << 10));
	EXPECT_EQ(0, info_of(self->fd).domain_used);
	ASSERT_EQ(0, alloc(self->fd, 4096, &a));
	EXPECT_EQ(0, release(self->fd, a.handle));
}

TEST_F(dom, quota_below_usage_takes_nothing_away)
{
	struct metadef_alloc a, b;

	ASSERT_EQ(0, alloc(self->fd, 256 << 10, &a));
	ASSERT_EQ(0, set_quota(self->fd, 0, 128 << 10));
	EXPECT_EQ(256 << 10, info_of(self->fd).domain_used);
	EXPECT_EQ(-EDQUOT, alloc(self->fd, 4096, &b));
	EXPECT_EQ(0, release(self->fd, a.handle));
	ASSERT_EQ(0, alloc(self->fd, 128 << 10, &b));
	EXPECT_EQ(0, release(self->fd, b.handle));
	ASSERT_EQ(0, set_quota(self->fd, 0, METADEF_QUOTA_UNLIMITED));
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
}

TEST_F(dom, quota_of_another_domain_by_id)
{
	struct metadef_alloc a;
	int other = open(DEV, O_RDWR);
	uint32_t other_id;

	ASSERT_LE(0, other);
	other_id = info_of(other).domain_id;
	ASSERT_EQ(0, set_quota(self->fd, other_id, 8192));
	EXPECT_EQ(8192, info_of(other).domain_quota);
	/* Only that domain is limited. */
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
	EXPECT_EQ(-EDQUOT, alloc(other, 3 * 4096, &a));
	close(other);
	/* A closed domain is gone. */
	EXPECT_EQ(-ENOENT, set_quota(self->fd, other_id, 8192));
	EXPECT_EQ(-ENOENT, set_quota(self->fd, 0x7fffffff, 8192));
}

TEST_F(dom, set_quota_rejects_bad_input)
{
	struct metadef_quota q = { .quota = 4096 };

	q.flags = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_SET_QUOTA, &q));
	EXPECT_EQ(EINVAL, errno);
	q.flags = 0;
	q.reserved[0] = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_SET_QUOTA, &q));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(METADEF_QUOTA_UNLIMITED, info_of(self->fd).domain_quota);
}

TEST_F(dom, set_quota_needs_cap_sys_admin)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		/* Become nobody: no capabilities left. */
		if (become_nobody(0))
			_exit(10);
		fd = open(DEV, O_RDWR);
		if (fd < 0)
			_exit(11);
		if (set_quota(fd, 0, 1 << 30) != -EPERM)
			_exit(12);
		/* An unprivileged domain still allocates under its quota... */
		if (info_of(fd).domain_quota != METADEF_QUOTA_UNLIMITED)
			_exit(13);
		{
			struct metadef_alloc a;

			if (alloc(fd, 4096, &a))
				_exit(14);
			/* ...but is not told physical addresses. */
			if (a.dev_addr != 0 || a.dev_va == 0)
				_exit(15);
			if (release(fd, a.handle))
				_exit(16);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

#define MAX_USER "/sys/module/metadef/parameters/max_user_domains"

static int write_param(const char *path, unsigned int v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%u\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static unsigned int read_param(const char *path)
{
	unsigned int v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * Colors are few: a user without CAP_SYS_ADMIN holds at most
 * max_user_domains domains; the next open fails with EMFILE and takes
 * nothing, closing one makes room, and root is not limited.
 */
TEST(domains_per_user_are_limited)
{
	unsigned int saved = read_param(MAX_USER);
	int status, up[2], down[2], rootfd;
	pid_t pid;
	char c;

	ASSERT_NE(0, saved);
	ASSERT_EQ(0, write_param(MAX_USER, 4));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fds[5], i, extra;

		if (become_nobody(0))
			_exit(10);
		for (i = 0; i < 4; i++)
			if ((fds[i] = open(DEV, O_RDWR)) < 0)
				_exit(11);
		fds[4] = open(DEV, O_RDWR);
		if (fds[4] >= 0 || errno != EMFILE)
			_exit(12);
		/* Root opens while nobody is at the limit. */
		if (write(up[1], "x", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(13);
		close(fds[0]);
		extra = open(DEV, O_RDWR);
		if (extra < 0)
			_exit(14);
		if (open(DEV, O_RDWR) >= 0 || errno != EMFILE)
			_exit(15);
		_exit(0);
	}
	/* The child is at its limit; a root open still works. */
	ASSERT_EQ(1, read(up[0], &c, 1));
	rootfd = open(DEV, O_RDWR);
	EXPECT_LE(0, rootfd);
	close(rootfd);
	ASSERT_EQ(1, write(down[1], "y", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, write_param(MAX_USER, saved));
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Lines of debugfs mmu/<id> that start with @va, and their perm column. */
static int mmu_lines(uint32_t id, uint64_t va, uint64_t end, char *perm)
{
	char path[64], line[256], p[8];
	unsigned long long s, e, off, pages;
	unsigned int color;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/metadef/mmu/%u", id);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx %llx %llu %7s %u", &s, &e, &off,
			   &pages, p, &color) == 6 && s == va && e == end) {
			strcpy(perm, p);
			n++;
		}
	fclose(f);
	return n;
}

TEST_F(dom, mmu_dump_shows_the_device_page_table)
{
	struct metadef_import im;
	struct metadef_grant g;
	struct metadef_alloc a;
	char perm[8] = "";
	int other = open(DEV, O_RDWR | O_CLOEXEC);
	uint32_t oid;

	ASSERT_LE(0, other);
	oid = info_of(other).domain_id;
	ASSERT_EQ(0, alloc(self->fd, 3 * 4096, &a));
	EXPECT_EQ(1, mmu_lines(self->info.domain_id, a.dev_va, a.dev_va + 3 * 4096,
			       perm));
	EXPECT_STREQ("rw", perm);
	/* A read-only import shows in the importer's table, read-only. */
	memset(&g, 0, sizeof(g));
	g.handle = a.handle;
	g.domain_id = oid;
	g.flags = METADEF_SHARE_READ;
	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_GRANT, &g));
	memset(&im, 0, sizeof(im));
	im.token = g.token;
	ASSERT_EQ(0, ioctl(other, METADEF_IOC_IMPORT, &im));
	EXPECT_EQ(1, mmu_lines(oid, a.dev_va, a.dev_va + 3 * 4096, perm));
	EXPECT_STREQ("r-", perm);
	/* FREE takes it out of the owner's table; close removes the file. */
	ASSERT_EQ(0, release(self->fd, a.handle));
	EXPECT_EQ(0, mmu_lines(self->info.domain_id, a.dev_va,
			       a.dev_va + 3 * 4096, perm));
	close(other);
	EXPECT_EQ(-1, mmu_lines(oid, a.dev_va, a.dev_va + 3 * 4096, perm));
}

TEST_HARNESS_MAIN
