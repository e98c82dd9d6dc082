// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: dma-buf export. The owner exports a region as a dma-buf; the
 * dma-buf maps the same memory, brackets CPU access, keeps the region
 * alive after FREE and close, honours read-only, and is refused to
 * importers, strangers and read-only descriptors. Where the kernel has
 * vgem (the vm tier), a real DRM driver imports it: that attaches and
 * maps it for DMA (map_dma_buf), and closing the GEM handle unmaps it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdrm/drm.h>
#include <linux/dma-buf.h>
#include <linux/metadef.h>

#include "md_ioctl.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define BUFINFO "/sys/kernel/debug/dma_buf/bufinfo"
#define SIZE (64 * 1024)

static int export(int fd, uint32_t handle, uint32_t flags, int *out)
{
	struct metadef_export e = { .handle = handle, .flags = flags };
	int ret = ioctl(fd, METADEF_IOC_EXPORT_DMABUF, &e) ? -errno : 0;

	*out = e.fd;
	return ret;
}

static uint64_t pool_free(void)
{
	struct metadef_info i;
	int fd = open(DEV, O_RDONLY);

	memset(&i, 0, sizeof(i));
	if (fd < 0 || ioctl(fd, METADEF_IOC_INFO, &i))
		i.pool_free = 0;
	if (fd >= 0)
		close(fd);
	return i.pool_free;
}

/* Open descriptors of this process: a refused export must not leak one. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* The value of "key:" in /proc/self/fdinfo/<fd>, or "" */
static void fdinfo(int fd, const char *key, char *val, size_t len)
{
	char path[64], line[256];
	FILE *f;

	val[0] = 0;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':') {
			snprintf(val, len, "%s", line + strlen(key) + 1);
			val[strcspn(val, "\n")] = 0;
			memmove(val, val + strspn(val, " \t"), strlen(val) + 1);
		}
	fclose(f);
}

static int sync_buf(int fd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) ? -errno : 0;
}

FIXTURE(dmabuf) {
	int fd;
	struct metadef_alloc reg;
	char *p;
};

FIXTURE_SETUP(dmabuf)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, alloc(self->fd, SIZE, &self->reg));
	self->p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		       self->reg.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->p);
	memset(self->p, 0x5a, SIZE);
	strcpy(self->p, "exported bytes");
}

FIXTURE_TEARDOWN(dmabuf)
{
	munmap(self->p, SIZE);
	close(self->fd);
}

TEST_F(dmabuf, export_maps_the_same_memory)
{
	char name[64], size[64];
	int buf;
	char *q;

	ASSERT_EQ(0, export(self->fd, self->reg.handle,
			    METADEF_EXPORT_RDWR | METADEF_EXPORT_CLOEXEC, &buf));
	ASSERT_LE(0, buf);
	EXPECT_EQ(FD_CLOEXEC, fcntl(buf, F_GETFD) & FD_CLOEXEC);
	fdinfo(buf, "exp_name", name, sizeof(name));
	EXPECT_STREQ("metadef", name);
	fdinfo(buf, "size", size, sizeof(size));
	EXPECT_EQ(SIZE, strtoull(size, NULL, 0));

	q = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, sync_buf(buf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	EXPECT_STREQ("exported bytes", q);
	EXPECT_EQ(0x5a, (unsigned char)q[SIZE - 1]);
	/* Writes through either mapping land in the one region. */
	strcpy(q + 4096, "via the dma-buf");
	EXPECT_EQ(0, sync_buf(buf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	EXPECT_STREQ("via the dma-buf", self->p + 4096);
	/* A window at an offset, and nothing beyond the buffer. */
	EXPECT_EQ(0, munmap(q, SIZE));
	q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, buf, 4096);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_STREQ("via the dma-buf", q);
	munmap(q, 4096);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 8192, PROT_READ, MAP_SHARED, buf,
				   SIZE - 4096));
	/* A sync with nonsense flags is the dma-buf core's to refuse. */
	EXPECT_EQ(-EINVAL, sync_buf(buf, 0x100));
	close(buf);
}

TEST_F(dmabuf, dmabuf_keeps_the_region_after_free_and_close)
{
	uint64_t before = pool_free();
	int buf, fd2;
	char *q;

	ASSERT_EQ(0, export(self->fd, self->reg.handle, METADEF_EXPORT_RDWR,
			    &buf));
	q = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, release(self->fd, self->reg.handle));
	munmap(self->p, SIZE);
	self->p = MAP_FAILED;
	/* Close the domain: the dma-buf's region lives on. */
	fd2 = dup(buf);
	close(self->fd);
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	EXPECT_EQ(before, pool_free());
	EXPECT_STREQ("exported bytes", q);
	close(buf);
	EXPECT_EQ(before, pool_free());		/* the dup and the mapping */
	close(fd2);
	EXPECT_EQ(before, pool_free());		/* the mapping still */
	EXPECT_STREQ("exported bytes", q);
	munmap(q, SIZE);
	EXPECT_EQ(before + SIZE, pool_free());	/* the last holder is gone */
	self->p = mmap(NULL, SIZE, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

TEST_F(dmabuf, read_only_export)
{
	int buf;
	char *q;

	ASSERT_EQ(0, export(self->fd, self->reg.handle, 0, &buf));
	EXPECT_EQ(0, fcntl(buf, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDONLY, fcntl(buf, F_GETFL) & O_ACCMODE);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
				   MAP_SHARED, buf, 0));
	EXPECT_EQ(EACCES, errno);
	q = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_STREQ("exported bytes", q);
	/* ...and it cannot be made writable afterwards. */
	EXPECT_NE(0, mprotect(q, SIZE, PROT_READ | PROT_WRITE));
	munmap(q, SIZE);
	close(buf);
}

TEST_F(dmabuf, bad_requests_change_nothing)
{
	struct metadef_export e;
	int before = count_fds();
	int buf;

	EXPECT_EQ(-ENOENT, export(self->fd, 0, 0, &buf));
	EXPECT_EQ(-ENOENT, export(self->fd, self->reg.handle + 1000, 0, &buf));
	EXPECT_EQ(-EINVAL, export(self->fd, self->reg.handle, 1u << 7, &buf));
	memset(&e, 0, sizeof(e));
	e.handle = self->reg.handle;
	e.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_EXPORT_DMABUF, &e));
	EXPECT_EQ(EINVAL, errno);
	memset(&e, 0, sizeof(e));
	e.handle = self->reg.handle;
	e.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_EXPORT_DMABUF, &e));
	EXPECT_EQ(EINVAL, errno);
	/* An answer that cannot be written back: no descriptor appears. */
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_EXPORT_DMABUF, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(before, count_fds());
}

/* Only the owner exports: strangers, importers, read-only descriptors. */
TEST_F(dmabuf, only_the_owner_exports)
{
	struct metadef_import im;
	struct metadef_grant g;
	int other, ro, buf = -1, wins = 0, tries = 0;
	uint32_t h;

	other = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, other);
	/* Another domain guessing handles: they do not exist for it. */
	for (h = 0; h < 64; h++, tries++)
		if (!export(other, h, METADEF_EXPORT_RDWR, &buf)) {
			wins++;
			close(buf);
		}
	/* An importer, even a read-write one, cannot pass it on. */
	memset(&g, 0, sizeof(g));
	g.handle = self->reg.handle;
	g.domain_id = domain_of(other);
	g.flags = METADEF_SHARE_READ | METADEF_SHARE_WRITE;
	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_GRANT, &g));
	memset(&im, 0, sizeof(im));
	im.token = g.token;
	ASSERT_EQ(0, ioctl(other, METADEF_IOC_IMPORT, &im));
	tries++;
	if (export(other, im.handle, METADEF_EXPORT_RDWR, &buf) != -EPERM)
		wins++;
	/* A read-only descriptor of the owner's domain cannot either. */
	ro = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	tries++;
	if (export(ro, self->reg.handle, 0, &buf) != -EBADF)
		wins++;
	TH_LOG("%d export attempts by non-owners, %d succeeded", tries, wins);
	EXPECT_EQ(0, wins);
	close(ro);
	close(other);
}

/* A read-only descriptor may ask (INFO) but change nothing. */
TEST(read_only_descriptor_only_asks)
{
	struct metadef_info i;
	struct metadef_alloc a;
	struct metadef_copy c;
	int fd = open(DEV, O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, fd);
	memset(&i, 0, sizeof(i));
	EXPECT_EQ(0, ioctl(fd, METADEF_IOC_INFO, &i));
	EXPECT_EQ(-EBADF, alloc(fd, 4096, &a));
	EXPECT_EQ(-EBADF, release(fd, 1));
	memset(&c, 0, sizeof(c));
	c.size = 1;
	EXPECT_EQ(-1, ioctl(fd, METADEF_IOC_COPY, &c));
	EXPECT_EQ(EBADF, errno);
	close(fd);
}

/* The vgem DRM driver, if the kernel has it: a real importer. */
static int open_vgem(void)
{
	char name[32], path[32];
	struct drm_version v;
	int i, fd;

	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/* Lines of the dma-buf core's bufinfo that name an attached vgem device. */
static int vgem_attachments(void)
{
	char line[256];
	FILE *f = fopen(BUFINFO, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "vgem"))
			n++;
	fclose(f);
	return n;
}

TEST_F(dmabuf, drm_driver_imports_and_maps)
{
	struct drm_prime_handle ph;
	struct drm_gem_close gc;
	int vgem, buf, ro;

	vgem = open_vgem();
	if (vgem < 0)
		SKIP(return, "no vgem in this kernel: no DRM importer to test with");
	ASSERT_EQ(0, vgem_attachments());
	ASSERT_EQ(0, export(self->fd, self->reg.handle, METADEF_EXPORT_RDWR,
			    &buf));
	/* The import attaches vgem's device and maps the buffer for DMA. */
	memset(&ph, 0, sizeof(ph));
	ph.fd = buf;
	ASSERT_EQ(0, ioctl(vgem, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	EXPECT_NE(0, ph.handle);
	EXPECT_EQ(1, vgem_attachments());
	/* The memory stays ours to use meanwhile. */
	EXPECT_STREQ("exported bytes", self->p);
	EXPECT_EQ(0, sync_buf(buf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0, sync_buf(buf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	/* Closing the GEM handle unmaps and detaches. */
	memset(&gc, 0, sizeof(gc));
	gc.handle = ph.handle;
	EXPECT_EQ(0, ioctl(vgem, DRM_IOCTL_GEM_CLOSE, &gc));
	EXPECT_EQ(0, vgem_attachments());
	close(buf);

	/*
	 * A read-only dma-buf is not mapped for a device to write. Up to 6.12
	 * vgem maps at import, so the import itself fails; 7.x attaches at
	 * import and maps only when the GEM object is used, which nothing here
	 * does: the import then succeeds and must leave only an attachment.
	 */
	ASSERT_EQ(0, export(self->fd, self->reg.handle, 0, &ro));
	memset(&ph, 0, sizeof(ph));
	ph.fd = ro;
	errno = 0;
	if (ioctl(vgem, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph)) {
		EXPECT_EQ(EACCES, errno);
	} else {
		TH_LOG("this kernel's vgem maps lazily: import attached only");
		EXPECT_EQ(1, vgem_attachments());
		memset(&gc, 0, sizeof(gc));
		gc.handle = ph.handle;
		EXPECT_EQ(0, ioctl(vgem, DRM_IOCTL_GEM_CLOSE, &gc));
	}
	EXPECT_EQ(0, vgem_attachments());
	close(ro);
	close(vgem);
}

TEST_HARNESS_MAIN
