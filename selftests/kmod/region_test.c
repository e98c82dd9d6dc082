// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: regions. ALLOC/FREE/mmap round trips, scrubbing, lifetime
 * through FREE-while-mapped, fork, partial munmap, mremap and process
 * death, every invalid input, and pool exhaustion with recovery. Every test
 * ends by checking that the pool is whole again.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define SZ_1M (1024 * 1024UL)

static int md_alloc(int fd, uint64_t size, uint64_t align, uint32_t flags,
		    struct metadef_alloc *out)
{
	memset(out, 0, sizeof(*out));
	out->size = size;
	out->align = align;
	out->flags = flags;
	return ioctl(fd, METADEF_IOC_ALLOC, out) ? -errno : 0;
}

/* An allocation inside [start, end) of the pool. */
static int md_alloc_range(int fd, uint64_t size, uint32_t flags,
			  uint64_t start, uint64_t end, struct metadef_alloc *out)
{
	memset(out, 0, sizeof(*out));
	out->size = size;
	out->flags = flags;
	out->range_start = start;
	out->range_end = end;
	return ioctl(fd, METADEF_IOC_ALLOC, out) ? -errno : 0;
}

static int md_free(int fd, uint32_t handle)
{
	struct metadef_free f = { .handle = handle };

	return ioctl(fd, METADEF_IOC_FREE, &f) ? -errno : 0;
}

static struct metadef_info md_info(int fd)
{
	struct metadef_info info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, METADEF_IOC_INFO, &info))
		info.pool_size = 0;
	return info;
}

static void *md_map(int fd, const struct metadef_alloc *a, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    a->mmap_offset);
}

/* Lines of debugfs "regions" (minus the header) naming @pid. */
static int regions_of(pid_t pid)
{
	char line[256];
	int n = 0, d, h, p;
	FILE *f = fopen("/sys/kernel/debug/metadef/regions", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d\t%d\t%d", &d, &h, &p) == 3 && p == pid)
			n++;
	fclose(f);
	return n;
}

/* The pool offset of @pid's region @handle, from debugfs "regions". */
static uint64_t region_offset(pid_t pid, uint32_t handle)
{
	char line[256];
	unsigned long long off;
	unsigned int h;
	int d, p;
	uint64_t ret = UINT64_MAX;
	FILE *f = fopen("/sys/kernel/debug/metadef/regions", "r");

	if (!f)
		return ret;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d\t%u\t%d\t%llx", &d, &h, &p, &off) == 4 &&
		    p == pid && h == handle)
			ret = off;
	fclose(f);
	return ret;
}

/* debugfs "pool" says the pool is one physically contiguous range. */
static int pool_contiguous(void)
{
	char line[128];
	int yes = 0;
	FILE *f = fopen("/sys/kernel/debug/metadef/pool", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "contiguous\tyes\n") ||
		    !strncmp(line, "bus_base", 8))	/* a BAR is contiguous */
			yes = 1;
	fclose(f);
	return yes;
}

static int all_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

FIXTURE(region) {
	int fd;
	struct metadef_info info;
};

FIXTURE_SETUP(region)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->info = md_info(self->fd);
	ASSERT_LT(0, self->info.pool_size);
	ASSERT_STRNE("none", self->info.backend);
	/* Every test starts, and must end, with the whole pool free. */
	ASSERT_EQ(self->info.pool_size, self->info.pool_free);
}

FIXTURE_TEARDOWN(region)
{
	close(self->fd);
}

/*
 * The pool is whole again: nothing leaked, everything coalesced back into
 * blocks as large as at the start (the whole pool, or with the sysram
 * block fallback the largest block).
 */
#define EXPECT_POOL_WHOLE(fd) do {					\
	struct metadef_info __i = md_info(fd);				\
	EXPECT_EQ(__i.pool_size, __i.pool_free);			\
	EXPECT_EQ(self->info.pool_largest_free, __i.pool_largest_free);		\
} while (0)

TEST_F(region, alloc_map_write_read_free)
{
	struct metadef_alloc a;
	struct metadef_info i;
	uint32_t *p;

	ASSERT_EQ(0, md_alloc(self->fd, SZ_1M + 100, 0, 0, &a));
	EXPECT_NE(0, a.handle);
	EXPECT_EQ(SZ_1M + 4096, a.alloc_size);
	EXPECT_NE(0, a.mmap_offset);
	EXPECT_EQ(0, a.mmap_offset % 4096);
	i = md_info(self->fd);
	EXPECT_EQ(self->info.pool_size - a.alloc_size, i.pool_free);

	p = md_map(self->fd, &a, a.alloc_size);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(all_zero((void *)p, a.alloc_size));
	for (size_t k = 0; k < a.alloc_size / 4; k++)
		p[k] = (uint32_t)(k * 2654435761u);
	ASSERT_EQ(0, munmap(p, a.alloc_size));

	/* A second mapping sees what the first wrote. */
	p = md_map(self->fd, &a, a.alloc_size);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t k = 0; k < a.alloc_size / 4; k++)
		if (p[k] != (uint32_t)(k * 2654435761u)) {
			EXPECT_EQ((uint32_t)(k * 2654435761u), p[k]);
			break;
		}
	ASSERT_EQ(0, munmap(p, a.alloc_size));
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, dev_addr_and_alignment)
{
	struct metadef_alloc a, b;

	ASSERT_EQ(0, md_alloc(self->fd, 4096, 2 * SZ_1M, 0, &a));
	ASSERT_EQ(0, md_alloc(self->fd, 4096, 0, METADEF_ALLOC_TOPDOWN, &b));
	EXPECT_NE(a.handle, b.handle);
	EXPECT_NE(a.mmap_offset, b.mmap_offset);
	EXPECT_NE(a.dev_addr, b.dev_addr);
	/* 2M-aligned pool offsets stay aligned on the device side. */
	EXPECT_EQ(0, a.dev_addr % (2 * SZ_1M));
	/* Top-down in one contiguous range: the last page of the pool. */
	if (pool_contiguous())
		EXPECT_EQ(b.dev_addr, a.dev_addr + self->info.pool_size - 4096);
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_EQ(0, md_free(self->fd, b.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

/*
 * RANGE: the region lies inside the window, in one free block of the pool:
 * bottom-up at the window's start and top-down at its end while the pool is
 * empty, in the piece that holds it once the window is fragmented; a window
 * past the pool stops at the pool's end.
 */
TEST_F(region, alloc_in_range)
{
	const uint64_t p = 4096, size = self->info.pool_size;
	uint64_t lo = (size / 2) & ~(16 * p - 1), hi = lo + 16 * p;
	struct metadef_alloc a, b, c;

	ASSERT_EQ(0, md_alloc_range(self->fd, 3 * p, METADEF_ALLOC_RANGE,
				    lo, hi, &a));
	EXPECT_EQ(3 * p, a.alloc_size);
	EXPECT_EQ(lo, region_offset(getpid(), a.handle));
	ASSERT_EQ(0, md_alloc_range(self->fd, 3 * p,
				    METADEF_ALLOC_RANGE | METADEF_ALLOC_TOPDOWN,
				    lo, hi, &b));
	EXPECT_EQ(hi - 3 * p, region_offset(getpid(), b.handle));
	/*
	 * Ten pages are free between them, but in pieces of four at most:
	 * five need a block of eight, so they do not fit; four do.
	 */
	EXPECT_EQ(-ENOMEM, md_alloc_range(self->fd, 5 * p, METADEF_ALLOC_RANGE,
					  lo, hi, &c));
	ASSERT_EQ(0, md_alloc_range(self->fd, 4 * p, METADEF_ALLOC_RANGE,
				    lo, hi, &c));
	EXPECT_EQ(lo + 4 * p, region_offset(getpid(), c.handle));
	EXPECT_EQ(0, md_free(self->fd, c.handle));
	/* Past the end of the pool: the pool's end. */
	ASSERT_EQ(0, md_alloc_range(self->fd, p,
				    METADEF_ALLOC_RANGE | METADEF_ALLOC_TOPDOWN,
				    size - p, size + SZ_1M, &c));
	EXPECT_EQ(size - p, region_offset(getpid(), c.handle));
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_EQ(0, md_free(self->fd, b.handle));
	EXPECT_EQ(0, md_free(self->fd, c.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, invalid_range_requests)
{
	uint64_t size = self->info.pool_size;
	const uint32_t r = METADEF_ALLOC_RANGE;
	struct metadef_alloc a;

	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, r, 0, 0, &a));
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, r, SZ_1M, SZ_1M, &a));
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, r, SZ_1M, 4096, &a));
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, r, 1, SZ_1M, &a));
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, r, 0, SZ_1M - 1, &a));
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, r, size, size + SZ_1M,
					  &a));
	/* Without the flag, the fields must be zero. */
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, 0, 0, SZ_1M, &a));
	EXPECT_EQ(-EINVAL, md_alloc_range(self->fd, 4096, 0, 4096, 0, &a));
	/* Well-formed, but the window is smaller than the size. */
	EXPECT_EQ(-ENOMEM, md_alloc_range(self->fd, 2 * 4096, r, 0, 4096, &a));
	EXPECT_POOL_WHOLE(self->fd);
	EXPECT_EQ(0, regions_of(getpid()));
}

/*
 * A caller built before the range fields sends the first 72 bytes only:
 * served, and whatever lies past them is not read.
 */
TEST_F(region, alloc_from_old_caller)
{
	const unsigned long old = _IOC(_IOC_READ | _IOC_WRITE,
				       METADEF_IOC_MAGIC, 0x01,
				       METADEF_ALLOC_SIZE_VER0);
	struct metadef_alloc a;

	memset(&a, 0, sizeof(a));
	a.size = 4096;
	a.range_start = 1;	/* invalid, were it read */
	a.range_end = 1;
	ASSERT_EQ(0, ioctl(self->fd, old, &a));
	EXPECT_EQ(4096, a.alloc_size);
	EXPECT_NE(0, a.handle);
	EXPECT_EQ(1, a.range_start);	/* nor written */
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

/* Another process's data never shows in a new allocation. */
TEST_F(region, new_allocation_is_zeroed)
{
	struct metadef_alloc a;
	uint64_t child_addr = 0;
	int pipefd[2];
	pid_t pid;
	unsigned char *p;
	int status;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(DEV, O_RDWR);
		struct metadef_alloc c;
		unsigned char *q;

		if (fd < 0 || md_alloc(fd, 4 * SZ_1M, 0, 0, &c))
			_exit(1);
		q = md_map(fd, &c, c.alloc_size);
		if (q == MAP_FAILED)
			_exit(2);
		memset(q, 0xa5, c.alloc_size);
		munmap(q, c.alloc_size);
		if (md_free(fd, c.handle))
			_exit(3);
		if (write(pipefd[1], &c.dev_addr, sizeof(c.dev_addr)) != 8)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(8, read(pipefd[0], &child_addr, 8));
	close(pipefd[0]);
	close(pipefd[1]);

	ASSERT_EQ(0, md_alloc(self->fd, 4 * SZ_1M, 0, 0, &a));
	/* The very same memory the child filled... */
	EXPECT_EQ(child_addr, a.dev_addr);
	p = md_map(self->fd, &a, a.alloc_size);
	ASSERT_NE(MAP_FAILED, p);
	/* ...reads back as zeroes. */
	EXPECT_TRUE(all_zero(p, a.alloc_size));
	munmap(p, a.alloc_size);
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, free_while_mapped)
{
	struct metadef_alloc a;
	struct metadef_info i;
	char *p;

	ASSERT_EQ(0, md_alloc(self->fd, SZ_1M, 0, 0, &a));
	p = md_map(self->fd, &a, SZ_1M);
	ASSERT_NE(MAP_FAILED, p);
	strcpy(p, "still here");
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	/* The handle is gone... */
	EXPECT_EQ(-ENOENT, md_free(self->fd, a.handle));
	/* ...the memory is not: the mapping keeps it. */
	EXPECT_STREQ("still here", p);
	p[SZ_1M - 1] = 1;
	i = md_info(self->fd);
	EXPECT_EQ(self->info.pool_size - SZ_1M, i.pool_free);
	EXPECT_EQ(1, regions_of(getpid()));
	/* A new mapping of it is refused: no handle, no map. */
	EXPECT_EQ(MAP_FAILED, md_map(self->fd, &a, SZ_1M));
	ASSERT_EQ(0, munmap(p, SZ_1M));
	EXPECT_EQ(0, regions_of(getpid()));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, fork_and_munmap_in_both)
{
	struct metadef_alloc a;
	volatile int *p;
	pid_t pid;
	int status;

	ASSERT_EQ(0, md_alloc(self->fd, 64 * 1024, 0, 0, &a));
	p = md_map(self->fd, &a, 64 * 1024);
	ASSERT_NE(MAP_FAILED, (void *)p);
	p[0] = 1;
	EXPECT_EQ(0, md_free(self->fd, a.handle));	/* only VMAs hold it now */

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (p[0] != 1)
			_exit(1);
		p[1] = 42;			/* shared: the parent sees it */
		_exit(munmap((void *)p, 64 * 1024) ? 2 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(42, p[1]);
	EXPECT_EQ(1, regions_of(getpid()));
	ASSERT_EQ(0, munmap((void *)p, 64 * 1024));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, partial_munmap)
{
	struct metadef_alloc a;
	char *p;

	ASSERT_EQ(0, md_alloc(self->fd, 4 * 4096, 0, 0, &a));
	p = md_map(self->fd, &a, 4 * 4096);
	ASSERT_NE(MAP_FAILED, p);
	for (int k = 0; k < 4; k++)
		p[k * 4096] = 'a' + k;
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	/* Split the VMA in three; the two outer pieces keep the region. */
	ASSERT_EQ(0, munmap(p + 4096, 2 * 4096));
	EXPECT_EQ('a', p[0]);
	EXPECT_EQ('d', p[3 * 4096]);
	ASSERT_EQ(0, munmap(p, 4096));
	EXPECT_EQ('d', p[3 * 4096]);
	EXPECT_EQ(1, regions_of(getpid()));
	ASSERT_EQ(0, munmap(p + 3 * 4096, 4096));
	EXPECT_EQ(0, regions_of(getpid()));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, map_part_of_region)
{
	struct metadef_alloc a;
	char *p, *q;

	ASSERT_EQ(0, md_alloc(self->fd, 4 * 4096, 0, 0, &a));
	p = md_map(self->fd, &a, 4 * 4096);
	ASSERT_NE(MAP_FAILED, p);
	p[2 * 4096] = 'x';
	/* Offset and length inside the region are fine. */
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		 a.mmap_offset + 2 * 4096);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ('x', q[0]);
	munmap(q, 4096);
	/* Past its end is not. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * 4096, PROT_READ, MAP_SHARED,
				   self->fd, a.mmap_offset + 3 * 4096));
	munmap(p, 4 * 4096);
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, mremap_move_keeps_region_no_grow)
{
	struct metadef_alloc a;
	char *p, *q, *target;

	ASSERT_EQ(0, md_alloc(self->fd, 2 * 4096, 0, 0, &a));
	p = md_map(self->fd, &a, 2 * 4096);
	ASSERT_NE(MAP_FAILED, p);
	strcpy(p, "moved");
	EXPECT_EQ(0, md_free(self->fd, a.handle));

	/* Growing a device mapping is refused... */
	errno = 0;
	EXPECT_EQ(MAP_FAILED, mremap(p, 2 * 4096, 4 * 4096, 0));
	/* ...moving it works and keeps the data and the region alive. */
	target = mmap(NULL, 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	ASSERT_NE(MAP_FAILED, target);
	q = mremap(p, 2 * 4096, 2 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
		   target);
	ASSERT_EQ(target, q);
	EXPECT_STREQ("moved", q);
	EXPECT_EQ(1, regions_of(getpid()));
	ASSERT_EQ(0, munmap(q, 2 * 4096));
	EXPECT_EQ(0, regions_of(getpid()));
	EXPECT_POOL_WHOLE(self->fd);
}

/* A process killed with live regions and mappings gives everything back. */
TEST_F(region, killed_process_leaves_pool_free)
{
	int ready[2], status;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(DEV, O_RDWR);
		struct metadef_alloc a;

		for (int k = 0; k < 8; k++) {
			if (fd < 0 || md_alloc(fd, (k + 1) * 65536, 0, 0, &a))
				_exit(1);
			if (k % 2 && md_map(fd, &a, a.alloc_size) == MAP_FAILED)
				_exit(2);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(8, regions_of(pid));
	EXPECT_GT(self->info.pool_size, md_info(self->fd).pool_free);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, regions_of(pid));
	EXPECT_POOL_WHOLE(self->fd);
	close(ready[0]);
	close(ready[1]);
}

TEST_F(region, invalid_alloc_requests)
{
	struct metadef_alloc a;

	EXPECT_EQ(-EINVAL, md_alloc(self->fd, 0, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, md_alloc(self->fd, UINT64_MAX, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, md_alloc(self->fd, self->info.pool_size + 1, 0, 0, &a));
	EXPECT_EQ(-EINVAL, md_alloc(self->fd, 4096, 3 * 4096, 0, &a));
	EXPECT_EQ(-EINVAL, md_alloc(self->fd, 4096, 1ULL << 63 | 1, 0, &a));
	EXPECT_EQ(-ENOMEM, md_alloc(self->fd, 4096, 1ULL << 62, 0, &a));
	EXPECT_EQ(-EINVAL, md_alloc(self->fd, 4096, 0, 1u << 5, &a));
	EXPECT_EQ(-EINVAL, md_alloc(self->fd, 4096, 0, ~0u, &a));
	for (int k = 0; k < 2; k++) {
		memset(&a, 0, sizeof(a));
		a.size = 4096;
		a.reserved[k] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_ALLOC, &a));
		EXPECT_EQ(EINVAL, errno);
	}
	/* A bad pointer: EFAULT, nothing allocated. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_ALLOC, (void *)8));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_POOL_WHOLE(self->fd);
	EXPECT_EQ(0, regions_of(getpid()));
}

/*
 * An argument that is readable but not writable: the allocation succeeds
 * inside, the answer cannot be written back, so it is taken back (no
 * partial success): the pool and the domain's usage are as before.
 */
TEST_F(region, alloc_answer_not_writable_allocates_nothing)
{
	struct metadef_alloc *ro;

	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->size = 4096;
	ASSERT_EQ(0, mprotect(ro, 4096, PROT_READ));
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_ALLOC, ro));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, md_info(self->fd).domain_used);
	EXPECT_EQ(0, regions_of(getpid()));
	munmap(ro, 4096);
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, invalid_free_requests)
{
	struct metadef_alloc a;
	struct metadef_free f;
	int other;

	EXPECT_EQ(-ENOENT, md_free(self->fd, 0));
	EXPECT_EQ(-ENOENT, md_free(self->fd, 12345));
	EXPECT_EQ(-ENOENT, md_free(self->fd, ~0u));

	ASSERT_EQ(0, md_alloc(self->fd, 4096, 0, 0, &a));
	memset(&f, 0, sizeof(f));
	f.handle = a.handle;
	f.flags = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_FREE, &f));
	EXPECT_EQ(EINVAL, errno);
	f.flags = 0;
	f.reserved[1] = 7;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_FREE, &f));
	EXPECT_EQ(EINVAL, errno);

	/* Another domain: the handle does not exist there, mapping neither. */
	other = open(DEV, O_RDWR);
	ASSERT_LE(0, other);
	EXPECT_EQ(-ENOENT, md_free(other, a.handle));
	EXPECT_EQ(MAP_FAILED, md_map(other, &a, 4096));
	close(other);

	/* Still ours, freed once; the stale handle is then unknown. */
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	EXPECT_EQ(-ENOENT, md_free(self->fd, a.handle));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, invalid_mmap_requests)
{
	struct metadef_alloc a;

	ASSERT_EQ(0, md_alloc(self->fd, 2 * 4096, 0, 0, &a));
	/* Private (copy-on-write) mappings of device memory. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, self->fd, a.mmap_offset));
	/* Offsets no region has. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
				   a.mmap_offset + (1ULL << 40)));
	/* Longer than the region. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED,
				   self->fd, a.mmap_offset));
	EXPECT_EQ(0, md_free(self->fd, a.handle));
	/* A freed region's offset. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
				   a.mmap_offset));
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_F(region, exhaustion_then_recovery)
{
	size_t n = self->info.pool_size / SZ_1M, got = 0;
	struct metadef_alloc *a = calloc(n + 1, sizeof(*a));
	struct metadef_alloc extra;

	ASSERT_NE(NULL, a);
	for (size_t k = 0; k <= n; k++) {
		int ret = md_alloc(self->fd, SZ_1M, 0, 0, &a[k]);

		if (ret) {
			EXPECT_EQ(-ENOMEM, ret);
			break;
		}
		got++;
	}
	EXPECT_EQ(n, got);
	EXPECT_EQ(0, md_info(self->fd).pool_free);
	EXPECT_EQ(-ENOMEM, md_alloc(self->fd, 4096, 0, 0, &extra));
	/* Free one in the middle: exactly that much fits again. */
	EXPECT_EQ(0, md_free(self->fd, a[n / 2].handle));
	EXPECT_EQ(-ENOMEM, md_alloc(self->fd, SZ_1M + 4096, 0, 0, &extra));
	ASSERT_EQ(0, md_alloc(self->fd, SZ_1M, 0, 0, &extra));
	EXPECT_EQ(a[n / 2].dev_addr, extra.dev_addr);
	EXPECT_EQ(0, md_free(self->fd, extra.handle));
	for (size_t k = 0; k < got; k++)
		if (k != n / 2)
			EXPECT_EQ(0, md_free(self->fd, a[k].handle));
	free(a);
	EXPECT_POOL_WHOLE(self->fd);
}

TEST_HARNESS_MAIN
