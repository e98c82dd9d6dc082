// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: the pcibar backend on qemu's ivshmem-plain device, whose BAR 2
 * is a file on the host. Data written through an mmap of a region must
 * reach that file, and data the host (standing in for the device) writes
 * into the file must show through the mapping.
 *
 * The host side is tools/vm/ivshmem-watch: this test prints
 *   METADEF-IVSHMEM <pool offset> <marker>
 * and the watcher, finding <marker> at that offset of the backing file,
 * writes "ACK:<marker>" 256 bytes further on, which this test waits for.
 * Skipped unless the module runs with backend=pcibar.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/metadef.h>

#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define POOL "/sys/kernel/debug/metadef/pool"

static uint64_t pool_field(const char *name)
{
	char line[128], key[64];
	unsigned long long v;
	uint64_t found = UINT64_MAX;
	FILE *f = fopen(POOL, "r");

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lli", key, &v) == 2 && !strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

FIXTURE(bar) {
	int fd;
	struct metadef_info info;
};

FIXTURE_SETUP(bar)
{
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	memset(&self->info, 0, sizeof(self->info));
	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_INFO, &self->info));
}

/*
 * In each test, not in the setup: 6.1's harness runs the test body even
 * after a SKIP in FIXTURE_SETUP.
 */
#define REQUIRE_PCIBAR() do {						\
	if (strcmp(self->info.backend, "pcibar"))			\
		SKIP(return, "backend is %s, not pcibar", self->info.backend); \
} while (0)

FIXTURE_TEARDOWN(bar)
{
	close(self->fd);
}

TEST_F(bar, pool_is_the_bar)
{
	uint64_t bus = pool_field("bus_base");

	REQUIRE_PCIBAR();
	ASSERT_NE(UINT64_MAX, bus);
	/* ivshmem's BAR is the 64 MiB backing file the tier gives it. */
	EXPECT_EQ(64ull << 20, self->info.pool_size);
	EXPECT_EQ(self->info.pool_size, self->info.pool_free);
	EXPECT_EQ(0, bus % self->info.pool_size);	/* BARs are size-aligned */
}

TEST_F(bar, host_file_sees_mmap_writes_and_back)
{
	struct metadef_alloc a = { .size = 1 << 20, .align = 0 };
	struct metadef_free fr = { 0 };
	char marker[64], ack[80];
	volatile char *p;
	uint64_t bus = pool_field("bus_base");
	struct timespec t0, t;
	int seen = 0;

	REQUIRE_PCIBAR();
	ASSERT_NE(UINT64_MAX, bus);
	/* Top-down: not at offset 0, so the offset really is checked. */
	a.flags = METADEF_ALLOC_TOPDOWN;
	ASSERT_EQ(0, ioctl(self->fd, METADEF_IOC_ALLOC, &a));
	EXPECT_LE(bus, a.dev_addr);
	p = mmap(NULL, a.alloc_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, (void *)p);

	srand(time(NULL) ^ getpid());
	snprintf(marker, sizeof(marker), "metadef-ivshmem-%d-%08x", getpid(),
		 (unsigned int)rand());
	snprintf(ack, sizeof(ack), "ACK:%s", marker);
	memcpy((char *)p, marker, strlen(marker) + 1);
	__sync_synchronize();		/* drain the write-combining buffer */
	printf("METADEF-IVSHMEM %llu %s\n",
	       (unsigned long long)(a.dev_addr - bus), marker);
	fflush(stdout);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (!memcmp((const char *)p + 256, ack, strlen(ack) + 1)) {
			seen = 1;
			break;
		}
		usleep(50 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 60);
	EXPECT_TRUE(seen);
	TH_LOG("host acknowledgement %s", seen ? "seen through the mapping" : "never came");

	munmap((void *)p, a.alloc_size);
	fr.handle = a.handle;
	EXPECT_EQ(0, ioctl(self->fd, METADEF_IOC_FREE, &fr));
}

TEST_HARNESS_MAIN
