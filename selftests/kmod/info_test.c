// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: /dev/metadef exists and METADEF_IOC_INFO follows the uAPI
 * rules (sane values, reserved fields checked, unknown commands refused,
 * older and newer struct sizes accepted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define DEBUGFS "/sys/kernel/debug/metadef"

TEST(device_node_exists)
{
	struct stat st;

	ASSERT_EQ(0, stat(DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(10, major(st.st_rdev));	/* a misc device */
}

TEST(debugfs_directory)
{
	struct stat st;

	ASSERT_EQ(0, stat(DEBUGFS, &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(0, stat(DEBUGFS "/info", &st));
	EXPECT_EQ(0400, st.st_mode & 0777);
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST_F(dev, info_sane)
{
	struct metadef_info info = {};

	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_INFO, &info));
	EXPECT_EQ(METADEF_ABI_VERSION, info.abi_version);
	EXPECT_EQ((unsigned int)sysconf(_SC_PAGESIZE), info.page_size);
	EXPECT_LT(0, info.pool_size);
	EXPECT_EQ(0, info.pool_size % info.page_size);
	EXPECT_LT(0, info.domain_id);
	EXPECT_EQ(0, info.flags);
	for (size_t i = 0; i < sizeof(info.reserved) / sizeof(info.reserved[0]); i++)
		EXPECT_EQ(0, info.reserved[i]);
}

TEST_F(dev, domain_per_open_file)
{
	struct metadef_info a = {}, b = {}, a2 = {};
	int fd2, fd3;

	fd2 = open(DEV, O_RDWR);
	ASSERT_LE(0, fd2);
	fd3 = dup(self->fd);
	ASSERT_LE(0, fd3);

	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_INFO, &a));
	ASSERT_EQ(0, ioctl(fd2, METADEF_IOC_INFO, &b));
	ASSERT_EQ(0, ioctl(fd3, METADEF_IOC_INFO, &a2));
	EXPECT_NE(a.domain_id, b.domain_id);	/* another open: another domain */
	EXPECT_EQ(a.domain_id, a2.domain_id);	/* a dup: the same domain */
	close(fd2);
	close(fd3);
}

TEST_F(dev, domain_listed_in_debugfs)
{
	struct metadef_info info = {};
	char line[256], want[32];
	int found = 0;
	FILE *f;

	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_INFO, &info));
	snprintf(want, sizeof(want), "%u\t%d\t", info.domain_id, getpid());
	f = fopen(DEBUGFS "/domains", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)))
			found = 1;
	fclose(f);
	EXPECT_TRUE(found);
}

TEST_F(dev, unknown_command_enotty)
{
	struct metadef_info info = {};

	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(METADEF_IOC_MAGIC, 0x7f,
					     struct metadef_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	/* Another driver's magic number. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR('T', 0x00, struct metadef_info),
			    &info));
	EXPECT_EQ(ENOTTY, errno);
	/* Right number, wrong direction. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(METADEF_IOC_MAGIC, 0x00,
					    struct metadef_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	/* Shorter than any version of the struct ever was. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE,
					    METADEF_IOC_MAGIC, 0x00, 8), &info));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(dev, reserved_fields_einval)
{
	struct metadef_info info;

	for (size_t i = 0; i < sizeof(info.reserved) / sizeof(info.reserved[0]); i++) {
		memset(&info, 0, sizeof(info));
		info.reserved[i] = 1;
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_INFO, &info));
		EXPECT_EQ(EINVAL, errno);
		/* Nothing was written back on failure. */
		EXPECT_EQ(0, info.abi_version);
	}
	memset(&info, 0, sizeof(info));
	info.flags = 0x80000000u;
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, newer_caller_struct)
{
	/* A caller built against a future, longer struct. */
	struct {
		struct metadef_info info;
		__u64 future[4];
	} big;
	unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, METADEF_IOC_MAGIC,
				 0x00, sizeof(big));

	memset(&big, 0, sizeof(big));
	big.future[3] = 0xdead;		/* must be zero: refused */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, cmd, &big));
	EXPECT_EQ(EINVAL, errno);

	memset(&big, 0xff, sizeof(big));
	memset(&big.info, 0, sizeof(big.info));
	memset(big.future, 0, sizeof(big.future));
	ASSERT_EQ(0, ioctl(self->fd, cmd, &big));
	EXPECT_EQ(METADEF_ABI_VERSION, big.info.abi_version);
	/* The part the kernel does not know is zeroed on the way out. */
	EXPECT_EQ(0, big.future[0]);
	EXPECT_EQ(0, big.future[3]);
}

TEST_F(dev, bad_pointer_efault)
{
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, METADEF_IOC_INFO, (void *)16));
	EXPECT_EQ(EFAULT, errno);
}

TEST_HARNESS_MAIN
