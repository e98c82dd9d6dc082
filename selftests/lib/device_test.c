// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: devices (lib/device.c) on the host backend. Allocation,
 * alignment, size rounding, every bad argument, double and forged frees,
 * device-side copies (md_device_copy()), the counters, closing with live
 * regions, and which backend "auto" and "kmod" pick when the device node
 * is missing. The kmod backend itself is
 * tested in the VM (selftests/kmod/runtime_test.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <metadef/device.h>

#include "test_util.h"
#include "kselftest_harness.h"

#define SZ_1M (1024 * 1024ULL)
#define MISSING "/nonexistent/metadef-device-test"

/* Is every page of [p, p + len) mapped? mincore() says ENOMEM if not. */
static int mapped(const void *p, size_t len)
{
	size_t page = sysconf(_SC_PAGESIZE);
	unsigned char vec[64];
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
	size_t n = (len + page - 1) / page;

	if (n > sizeof(vec))
		n = sizeof(vec);
	return mincore((void *)a, n * page, vec) == 0;
}

TEST(open_host)
{
	struct md_device *dev;
	struct md_device_stats st;

	ASSERT_EQ(0, md_device_open(&(struct md_device_config){
		.backend = "host" }, &dev));
	ASSERT_NE(NULL, dev);
	EXPECT_STREQ("host", md_device_backend(dev));
	EXPECT_EQ(MD_ALIGN_CPU, md_device_align(dev));
	EXPECT_EQ((uint64_t)sysconf(_SC_PAGESIZE), md_device_page_size(dev));
	EXPECT_EQ(0, md_device_domain(dev));	/* the host has no domains */
	md_device_stats(dev, &st);
	EXPECT_EQ(0, st.region_allocs);
	EXPECT_EQ(0, st.region_frees);
	EXPECT_EQ(0, st.region_failures);
	EXPECT_EQ(0, st.bytes_current);
	EXPECT_EQ(0, st.bytes_peak);
	md_device_close(dev);

	dev = host_dev(MD_ALIGN_NPU);
	ASSERT_NE(NULL, dev);
	EXPECT_EQ(MD_ALIGN_NPU, md_device_align(dev));
	md_device_close(dev);
	md_device_close(NULL);
}

TEST(open_bad_config)
{
	struct md_device *dev = (struct md_device *)&dev;

	EXPECT_EQ(-EINVAL, md_device_open(&(struct md_device_config){
		.backend = "cuda" }, &dev));
	EXPECT_EQ(NULL, dev);
	dev = (struct md_device *)&dev;
	EXPECT_EQ(-EINVAL, md_device_open(&(struct md_device_config){
		.backend = "" }, &dev));
	EXPECT_EQ(NULL, dev);
	EXPECT_EQ(-EINVAL, md_device_open(&(struct md_device_config){
		.backend = "host", .align = 96 }, &dev));
	EXPECT_EQ(NULL, dev);
	EXPECT_EQ(-EINVAL, md_device_open(&(struct md_device_config){
		.backend = "host", .align = 3 }, &dev));
	EXPECT_EQ(-EINVAL, md_device_open(&(struct md_device_config){
		.backend = "host", .align = (1ULL << 63) + 1 }, &dev));
	/* The largest power of two is fine. */
	EXPECT_EQ(0, md_device_open(&(struct md_device_config){
		.backend = "host", .align = 1ULL << 63 }, &dev));
	md_device_close(dev);
}

TEST(auto_falls_back_to_host)
{
	struct md_device_config cfg = { .backend = "auto", .path = MISSING };
	struct md_device *dev = NULL;

	ASSERT_EQ(0, md_device_open(&cfg, &dev));
	EXPECT_STREQ("host", md_device_backend(dev));
	md_device_close(dev);

	cfg.backend = NULL;	/* NULL means auto */
	ASSERT_EQ(0, md_device_open(&cfg, &dev));
	EXPECT_STREQ("host", md_device_backend(dev));
	md_device_close(dev);
}

TEST(kmod_needs_the_node)
{
	struct md_device_config cfg = { .backend = "kmod", .path = MISSING };
	struct md_device *dev = (struct md_device *)&dev;

	EXPECT_EQ(-ENOENT, md_device_open(&cfg, &dev));
	EXPECT_EQ(NULL, dev);
	/* A node that opens but is not metadef's: its INFO ioctl fails. */
	cfg.path = "/dev/null";
	EXPECT_EQ(-ENOTTY, md_device_open(&cfg, &dev));
	EXPECT_EQ(NULL, dev);
}

TEST(alloc_write_free)
{
	struct md_device *dev = host_dev(0);
	uint64_t page = sysconf(_SC_PAGESIZE);
	struct md_region r;
	unsigned char *p;
	size_t i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_region_alloc(dev, 3 * page, 0, &r));
	EXPECT_EQ(3 * page, r.size);
	EXPECT_EQ(0, r.handle);
	EXPECT_EQ(0, r.pad);
	ASSERT_NE(NULL, r.cpu);
	/* On the host the device address is the CPU address. */
	EXPECT_EQ((uintptr_t)r.cpu, r.dev_va);
	EXPECT_EQ(0, r.dev_va % page);
	p = r.cpu;
	for (i = 0; i < r.size; i++)
		ASSERT_EQ(0, p[i]);	/* new memory is zero */
	for (i = 0; i < r.size; i++)
		p[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < r.size; i++)
		ASSERT_EQ((unsigned char)(i * 7 + 1), p[i]);
	ASSERT_TRUE(mapped(r.cpu, r.size));
	ASSERT_EQ(0, md_region_free(dev, &r));
	/* Given back to the system, not kept. */
	EXPECT_FALSE(mapped(r.cpu, r.size));
	md_device_close(dev);
}

TEST(size_rounded_to_pages)
{
	struct md_device *dev = host_dev(0);
	uint64_t page = sysconf(_SC_PAGESIZE);
	static const struct {
		uint64_t ask, want;	/* in bytes; want in pages */
	} t[] = {
		{ 1, 1 }, { 63, 1 }, { 4095, 1 }, { 4096, 1 }, { 4097, 2 },
		{ 3 * 4096 - 1, 3 }, { 3 * 4096, 3 }, { SZ_1M + 1, 257 },
	};
	struct md_region r;
	size_t i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(4096, page);	/* the table is in 4 KiB pages */
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ASSERT_EQ(0, md_region_alloc(dev, t[i].ask, 0, &r));
		EXPECT_EQ(t[i].want * page, r.size) TH_LOG("size %llu",
			(unsigned long long)t[i].ask);
		memset(r.cpu, 0xa5, r.size);	/* all of it is usable */
		ASSERT_EQ(0, md_region_free(dev, &r));
	}
	md_device_close(dev);
}

TEST(alignment_honoured)
{
	static const uint64_t aligns[] = {
		1, 64, 4096, 8192, 64 * 1024, SZ_1M, 2 * SZ_1M, 16 * SZ_1M,
	};
	struct md_device *dev = host_dev(MD_ALIGN_GPU);
	struct md_region r[8];
	int round;
	size_t i;

	ASSERT_NE(NULL, dev);
	/* A few times each: mmap alone gives 2 MiB alignment only by luck. */
	for (round = 0; round < 4; round++) {
		for (i = 0; i < 8; i++) {
			ASSERT_EQ(0, md_region_alloc(dev, 5000 + i, aligns[i],
						     &r[i]));
			EXPECT_EQ(0, r[i].dev_va % aligns[i]);
			EXPECT_EQ(0, r[i].dev_va % 4096);
			EXPECT_EQ(8192, r[i].size);
			memset(r[i].cpu, (int)i, r[i].size);
		}
		for (i = 0; i < 8; i++) {
			unsigned char *p = r[i].cpu;

			/* No two regions share a byte. */
			EXPECT_EQ((unsigned char)i, p[0]);
			EXPECT_EQ((unsigned char)i, p[r[i].size - 1]);
			ASSERT_EQ(0, md_region_free(dev, &r[i]));
		}
	}
	md_device_close(dev);
}

/* The slack mapped to reach an alignment is given back, not leaked. */
TEST(alignment_slack_returned)
{
	struct md_device *dev = host_dev(0);
	uint64_t before, after;
	struct md_region r;
	int i;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, md_region_alloc(dev, 4096, 16 * SZ_1M, &r));
	ASSERT_EQ(0, md_region_free(dev, &r));
	before = vm_bytes();
	ASSERT_LT(0, before);
	/*
	 * Each region maps 16 MiB + 4 KiB to find an aligned page: kept, the
	 * slack would add 16 MiB a region (the margin is for stdio's heap).
	 */
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, md_region_alloc(dev, 4096, 16 * SZ_1M, &r));
		ASSERT_GT(before + SZ_1M, vm_bytes());
		ASSERT_EQ(0, md_region_free(dev, &r));
	}
	after = vm_bytes();
	EXPECT_GT(before + SZ_1M, after);
	md_device_close(dev);
}

TEST(bad_arguments)
{
	struct md_device *dev = host_dev(0);
	struct md_region r = { .size = 77 };

	ASSERT_NE(NULL, dev);
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, 0, 0, &r));
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, 4096, 3, &r));
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, 4096, 4096 + 1, &r));
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, 4096, 3 * 4096, &r));
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, UINT64_MAX, 0, &r));
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, UINT64_MAX - 4094, 0, &r));
	/* Nothing written on failure. */
	EXPECT_EQ(77, r.size);
	/* Too large for the address space: the backend says so. */
	EXPECT_EQ(-ENOMEM, md_region_alloc(dev, 1ULL << 62, 0, &r));
	EXPECT_EQ(-ENOMEM, md_region_alloc(dev, 4096, 1ULL << 63, &r));
	EXPECT_EQ(77, r.size);
	md_device_close(dev);
}

TEST(double_and_forged_free)
{
	struct md_device *dev = host_dev(0), *other = host_dev(0);
	struct md_region r, f;
	struct md_device_stats st;

	ASSERT_NE(NULL, dev);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, md_region_alloc(dev, 2 * 4096, 0, &r));

	/* Forgeries of a live region: each field wrong in turn. */
	f = r;
	f.size = 4096;
	EXPECT_EQ(-EINVAL, md_region_free(dev, &f));
	f = r;
	f.dev_va += 4096;
	EXPECT_EQ(-EINVAL, md_region_free(dev, &f));
	f = r;
	f.cpu = (char *)f.cpu + 4096;
	EXPECT_EQ(-EINVAL, md_region_free(dev, &f));
	f = r;
	f.handle = 1;
	EXPECT_EQ(-EINVAL, md_region_free(dev, &f));
	f = r;
	f.pad = 1;
	EXPECT_EQ(-EINVAL, md_region_free(dev, &f));
	memset(&f, 0, sizeof(f));
	EXPECT_EQ(-EINVAL, md_region_free(dev, &f));
	/* Another device's region. */
	EXPECT_EQ(-EINVAL, md_region_free(other, &r));

	/* None of that touched it. */
	ASSERT_TRUE(mapped(r.cpu, r.size));
	md_device_stats(dev, &st);
	EXPECT_EQ(0, st.region_frees);
	EXPECT_EQ(r.size, st.bytes_current);

	ASSERT_EQ(0, md_region_free(dev, &r));
	EXPECT_EQ(-EINVAL, md_region_free(dev, &r));
	md_device_stats(dev, &st);
	EXPECT_EQ(1, st.region_frees);
	EXPECT_EQ(0, st.bytes_current);
	md_device_close(other);
	md_device_close(dev);
}

/* Fill @n bytes at @p with a pattern of @seed. */
static void fill(unsigned char *p, uint64_t n, unsigned int seed)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

TEST(device_copy)
{
	struct md_device *dev = host_dev(0), *other = host_dev(0);
	struct md_region a, b, o;
	unsigned char *pa, *pb, before[3 * 4096];
	uint64_t i;

	ASSERT_NE(NULL, dev);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, md_region_alloc(dev, 4 * 4096, 0, &a));
	ASSERT_EQ(0, md_region_alloc(dev, 3 * 4096, 0, &b));
	ASSERT_EQ(0, md_region_alloc(other, 4096, 0, &o));
	pa = a.cpu;
	pb = b.cpu;
	fill(pa, a.size, 7);

	/* Across regions, at unaligned offsets. */
	ASSERT_EQ(0, md_device_copy(dev, b.dev_va + 5, a.dev_va + 4000, 9000));
	for (i = 0; i < 9000; i++)
		ASSERT_EQ(pa[4000 + i], pb[5 + i]);
	EXPECT_EQ(0, pb[4]);
	EXPECT_EQ(0, pb[9005]);
	/* Inside one region, ranges overlapping: defined here (memmove). */
	ASSERT_EQ(0, md_device_copy(dev, a.dev_va + 1, a.dev_va, 4096));
	for (i = 0; i < 4096; i++)
		ASSERT_EQ((unsigned char)(i * 31 + 7), pa[1 + i]);

	/* Refused, and nothing copied. */
	memcpy(before, pb, sizeof(before));
	EXPECT_EQ(-EINVAL, md_device_copy(dev, b.dev_va, a.dev_va, 0));
	EXPECT_EQ(-EINVAL, md_device_copy(dev, b.dev_va, UINT64_MAX - 10, 64));
	EXPECT_EQ(-EINVAL, md_device_copy(dev, UINT64_MAX - 10, a.dev_va, 64));
	/* One byte past the end of the source, then of the destination. */
	EXPECT_EQ(-EFAULT, md_device_copy(dev, b.dev_va, a.dev_va + 1,
					  a.size));
	EXPECT_EQ(-EFAULT, md_device_copy(dev, b.dev_va + 1, a.dev_va,
					  b.size));
	/* Addresses of no region, and another device's region. */
	EXPECT_EQ(-EFAULT, md_device_copy(dev, b.dev_va, 4096, 64));
	EXPECT_EQ(-EFAULT, md_device_copy(dev, b.dev_va, o.dev_va, 64));
	EXPECT_EQ(-EFAULT, md_device_copy(dev, o.dev_va, a.dev_va, 64));
	EXPECT_EQ(0, memcmp(before, pb, sizeof(before)));

	/* A region freed is no longer reachable. */
	ASSERT_EQ(0, md_region_free(dev, &a));
	EXPECT_EQ(-EFAULT, md_device_copy(dev, b.dev_va, a.dev_va, 64));
	EXPECT_EQ(0, memcmp(before, pb, sizeof(before)));
	md_device_close(other);
	md_device_close(dev);
}

TEST(stats_arithmetic)
{
	struct md_device *dev = host_dev(0);
	struct md_device_stats st;
	struct md_region r[5];
	uint64_t sizes[5] = { 1, 4096, 10000, SZ_1M, 3 };
	uint64_t want[5] = { 4096, 4096, 12288, SZ_1M, 4096 };
	uint64_t cur = 0, peak = 0;
	int i;

	ASSERT_NE(NULL, dev);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, md_region_alloc(dev, sizes[i], 0, &r[i]));
		cur += want[i];
		peak = cur > peak ? cur : peak;
		md_device_stats(dev, &st);
		EXPECT_EQ(i + 1, st.region_allocs);
		EXPECT_EQ(cur, st.bytes_current);
		EXPECT_EQ(peak, st.bytes_peak);
	}
	/* Free two, allocate one smaller: the peak stays. */
	ASSERT_EQ(0, md_region_free(dev, &r[3]));
	ASSERT_EQ(0, md_region_free(dev, &r[2]));
	cur -= want[3] + want[2];
	ASSERT_EQ(0, md_region_alloc(dev, 8192, 0, &r[2]));
	cur += 8192;
	/* Failures are counted and change nothing else. */
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, 0, 0, &r[3]));
	EXPECT_EQ(-EINVAL, md_region_alloc(dev, 1, 5, &r[3]));
	EXPECT_EQ(-ENOMEM, md_region_alloc(dev, 1ULL << 62, 0, &r[3]));
	EXPECT_EQ(-EINVAL, md_region_free(dev, &r[3]));
	md_device_stats(dev, &st);
	EXPECT_EQ(6, st.region_allocs);
	EXPECT_EQ(2, st.region_frees);
	EXPECT_EQ(3, st.region_failures);
	EXPECT_EQ(cur, st.bytes_current);
	EXPECT_EQ(4096 + 4096 + 12288 + SZ_1M + 4096, st.bytes_peak);
	EXPECT_EQ(peak, st.bytes_peak);
	EXPECT_EQ(4096 * 3 + 8192, cur);

	ASSERT_EQ(0, md_region_free(dev, &r[0]));
	ASSERT_EQ(0, md_region_free(dev, &r[1]));
	ASSERT_EQ(0, md_region_free(dev, &r[2]));
	ASSERT_EQ(0, md_region_free(dev, &r[4]));
	md_device_stats(dev, &st);
	EXPECT_EQ(6, st.region_frees);
	EXPECT_EQ(0, st.bytes_current);
	md_device_close(dev);
}

TEST(close_frees_live_regions)
{
	struct md_device *dev = host_dev(0);
	struct md_region r[16];
	uint64_t before;
	int i;

	ASSERT_NE(NULL, dev);
	before = vm_bytes();
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(0, md_region_alloc(dev, (i + 1) * 65536,
					     i % 2 ? SZ_1M : 0, &r[i]));
		memset(r[i].cpu, i, r[i].size);
	}
	ASSERT_EQ(0, md_region_free(dev, &r[5]));
	md_device_close(dev);
	for (i = 0; i < 16; i++)
		EXPECT_FALSE(mapped(r[i].cpu, r[i].size)) TH_LOG("region %d", i);
	/* 8.5 MiB of regions and up to 8 MiB of slack: all gone. */
	EXPECT_GT(before + SZ_1M, vm_bytes());
}

/* Threads allocating and freeing on one device: the counters add up. */
struct churn {
	struct md_device *dev;
	int iters;
	int errors;
};

static void *churn_thread(void *p)
{
	struct churn *c = p;
	struct md_region r[4];
	int i, k;

	for (i = 0; i < c->iters; i++) {
		for (k = 0; k < 4; k++) {
			if (md_region_alloc(c->dev, 4096 * (k + 1),
					    k == 3 ? 65536 : 0, &r[k])) {
				c->errors++;
				return NULL;
			}
			*(volatile int *)r[k].cpu = i;
		}
		for (k = 0; k < 4; k++)
			if (md_region_free(c->dev, &r[k]))
				c->errors++;
	}
	return NULL;
}

TEST(threads)
{
	struct md_device *dev = host_dev(0);
	struct churn c[4];
	pthread_t th[4];
	struct md_device_stats st;
	int t;

	ASSERT_NE(NULL, dev);
	for (t = 0; t < 4; t++) {
		c[t] = (struct churn){ dev, 500, 0 };
		ASSERT_EQ(0, pthread_create(&th[t], NULL, churn_thread, &c[t]));
	}
	for (t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		EXPECT_EQ(0, c[t].errors);
	}
	md_device_stats(dev, &st);
	EXPECT_EQ(4 * 500 * 4, st.region_allocs);
	EXPECT_EQ(4 * 500 * 4, st.region_frees);
	EXPECT_EQ(0, st.region_failures);
	EXPECT_EQ(0, st.bytes_current);
	/* At least one thread's four regions, at most all threads' at once. */
	EXPECT_LE(4096 * (1 + 2 + 3 + 4), st.bytes_peak);
	EXPECT_GE(4 * 4096 * (1 + 2 + 3 + 4), st.bytes_peak);
	md_device_close(dev);
}

TEST_HARNESS_MAIN
