// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the copy engine through the soft-MMU. Copies inside a domain
 * work at any byte alignment; any page that is unmapped, freed, or another
 * domain's faults the whole copy (EFAULT, nothing copied) and is logged.
 * Every attack is counted and must never succeed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"

struct buf {
	struct metadef_alloc a;
	unsigned char *p;
};

static int get(int fd, size_t size, struct buf *b)
{
	memset(b, 0, sizeof(*b));
	b->a.size = size;
	if (ioctl(fd, METADEF_IOC_ALLOC, &b->a))
		return -errno;
	b->p = mmap(NULL, b->a.alloc_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, b->a.mmap_offset);
	return b->p == MAP_FAILED ? -errno : 0;
}

static void put(int fd, struct buf *b)
{
	struct metadef_free f = { .handle = b->a.handle };

	munmap(b->p, b->a.alloc_size);
	ioctl(fd, METADEF_IOC_FREE, &f);
}

static unsigned int faults_of(uint32_t domain)
{
	char line[256];
	unsigned int id, n = 0;
	FILE *f = fopen("/sys/kernel/debug/metadef/faults", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u\t%u\t", &id) == 1 && id == domain)
			n++;
	fclose(f);
	return n;
}

FIXTURE(cp) {
	int fd;
	struct buf x, y;
};

FIXTURE_SETUP(cp)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, get(self->fd, 64 * 1024, &self->x));
	ASSERT_EQ(0, get(self->fd, 64 * 1024, &self->y));
	for (int i = 0; i < 64 * 1024; i++)
		self->x.p[i] = (unsigned char)(i * 7 + 1);
}

FIXTURE_TEARDOWN(cp)
{
	put(self->fd, &self->x);
	put(self->fd, &self->y);
	close(self->fd);
}

TEST_F(cp, dev_va_given_per_region)
{
	EXPECT_NE(0, self->x.a.dev_va);
	EXPECT_NE(self->x.a.dev_va, self->y.a.dev_va);
	EXPECT_EQ(0, self->x.a.dev_va % 4096);
}

TEST_F(cp, copy_within_domain_any_alignment)
{
	ASSERT_EQ(0, copy(self->fd, self->y.a.dev_va, self->x.a.dev_va, 64 * 1024));
	EXPECT_EQ(0, memcmp(self->x.p, self->y.p, 64 * 1024));

	memset(self->y.p, 0, 64 * 1024);
	/* Odd offsets and a length that crosses pages unevenly. */
	ASSERT_EQ(0, copy(self->fd, self->y.a.dev_va + 4093,
			  self->x.a.dev_va + 17, 3 * 4096 + 5));
	EXPECT_EQ(0, memcmp(self->x.p + 17, self->y.p + 4093, 3 * 4096 + 5));
	EXPECT_EQ(0, self->y.p[4092]);
	EXPECT_EQ(0, self->y.p[4093 + 3 * 4096 + 5]);
}

TEST_F(cp, fault_copies_nothing_and_is_logged)
{
	uint32_t me = domain_of(self->fd);
	unsigned int before = faults_of(me);
	struct metadef_alloc last = { .size = 4096,
				      .flags = METADEF_ALLOC_TOPDOWN };
	struct metadef_free f = { 0 };

	/* The pool's last page: the device VA after it maps nothing. */
	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_ALLOC, &last));
	memset(self->y.p, 0xee, 64 * 1024);
	/* The source runs one page past the end: nothing may move. */
	EXPECT_EQ(-EFAULT, copy(self->fd, self->y.a.dev_va, last.dev_va, 8192));
	f.handle = last.handle;
	EXPECT_EQ(0, ioctl(self->fd, METADEF_IOC_FREE, &f));
	for (int i = 0; i < 64 * 1024; i++)
		if (self->y.p[i] != 0xee) {
			EXPECT_EQ(0xee, self->y.p[i]);
			break;
		}
	/* A destination that is not mapped at all. */
	EXPECT_EQ(-EFAULT, copy(self->fd, 0, self->x.a.dev_va, 16));
	EXPECT_EQ(-EFAULT, copy(self->fd, UINT64_MAX - 15, self->x.a.dev_va, 8));
	EXPECT_EQ(before + 3, faults_of(me));
}

TEST_F(cp, invalid_requests)
{
	struct metadef_copy c = { .src_va = self->x.a.dev_va,
				  .dst_va = self->y.a.dev_va, .size = 16 };

	EXPECT_EQ(-EINVAL, copy(self->fd, self->y.a.dev_va, self->x.a.dev_va, 0));
	EXPECT_EQ(-EINVAL, copy(self->fd, self->y.a.dev_va, UINT64_MAX - 3, 16));
	c.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_COPY, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 0;
	c.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_COPY, &c));
	EXPECT_EQ(EINVAL, errno);
	c.pad = 0;
	c.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_COPY, &c));
	EXPECT_EQ(EINVAL, errno);
}

/* Another tenant's memory: reading, writing, guessing. */
TEST_F(cp, other_domain_is_unreachable)
{
	int other = open(DEV, O_RDWR);
	struct buf secret;
	int attempts = 0, successes = 0;
	uint32_t them;
	unsigned int before;

	ASSERT_LE(0, other);
	them = domain_of(other);
	ASSERT_EQ(0, get(other, 8192, &secret));
	memcpy(secret.p, "the other tenant's secret", 26);
	before = faults_of(domain_of(self->fd));

	/* Read their memory into ours, write ours over theirs. */
	attempts++;
	successes += !copy(self->fd, self->y.a.dev_va, secret.a.dev_va, 26);
	attempts++;
	successes += !copy(self->fd, secret.a.dev_va, self->x.a.dev_va, 26);
	/* Every page and some odd bytes of theirs, both directions. */
	for (uint64_t d = 0; d < secret.a.alloc_size; d += 4096 - 1) {
		attempts += 2;
		successes += !copy(self->fd, self->y.a.dev_va,
				   secret.a.dev_va + d, 1);
		successes += !copy(self->fd, secret.a.dev_va + d,
				   self->x.a.dev_va, 1);
	}
	/* Their mmap offset (their handles: region_test). */
	attempts++;
	successes += mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
			  secret.a.mmap_offset) != MAP_FAILED;

	TH_LOG("%d attacks on another domain, %d succeeded", attempts, successes);
	EXPECT_EQ(0, successes);
	EXPECT_STREQ("the other tenant's secret", (char *)secret.p);
	/* Our own copies of x and y are intact. */
	EXPECT_EQ(1, self->x.p[0]);
	/* Every refused copy is in the log, as ours, none as theirs. */
	EXPECT_LE(before + 2, faults_of(domain_of(self->fd)));
	EXPECT_EQ(0, faults_of(them));
	put(other, &secret);
	close(other);
}

TEST_F(cp, freed_region_is_unmapped_for_the_device)
{
	struct metadef_free f = { .handle = self->y.a.handle };

	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_FREE, &f));
	/* Still mapped for the CPU, but the device's view is gone. */
	self->y.p[0] = 42;
	EXPECT_EQ(-EFAULT, copy(self->fd, self->y.a.dev_va, self->x.a.dev_va, 16));
	EXPECT_EQ(-EFAULT, copy(self->fd, self->x.a.dev_va, self->y.a.dev_va, 16));
	EXPECT_EQ(42, self->y.p[0]);
	EXPECT_EQ(1, self->x.p[0]);
	/* The teardown frees y again: ENOENT there is fine. */
}

TEST_HARNESS_MAIN
