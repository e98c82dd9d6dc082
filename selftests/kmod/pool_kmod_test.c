// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: libmetadef's tiered pools on the module. A pool over the kmod
 * device backend takes its regions from /dev/metadef: every tier's blocks
 * written and read back through their CPU mappings, the module's pool
 * figures following the regions; the backend running out (-ENOMEM) and a
 * domain quota (-EDQUOT) reported with the pool's figures, a smaller
 * region taken when a full-size one does not fit, and recovery. Every test
 * ends with the module's pool as free as it started. The debug tier's pool
 * hands out at most 4 MiB in one piece: there the large tier must fail
 * cleanly, and the others take regions that small.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <metadef/device.h>
#include <metadef/metadef.h>
#include <metadef/pool.h>

#include "kselftest_harness.h"
#include "md_ioctl.h"

#define MiB (1024 * 1024ULL)
static uint64_t pool_free(int fd)
{
	return info_of(fd).pool_free;
}

static int set_quota(int fd, uint32_t id, uint64_t quota)
{
	struct metadef_quota q = { .domain_id = id, .quota = quota };

	return ioctl(fd, METADEF_IOC_SET_QUOTA, &q) ? -errno : 0;
}

FIXTURE(kpool) {
	int fd;			/* a domain of its own, for INFO */
	uint64_t free0;
	bool big;		/* the module can give 32 MiB in one piece */
	struct md_device *dev;
	struct md_pool *pool;
};

FIXTURE_SETUP(kpool)
{
	struct md_device_config cfg = { .backend = "kmod", .align = 256 };

	self->fd = md_kmod_open(NULL);
	self->dev = NULL;
	self->pool = NULL;
	if (self->fd < 0)
		SKIP(return, "no /dev/metadef");
	self->free0 = pool_free(self->fd);
	self->big = info_of(self->fd).pool_largest_free >= 32 * MiB;
	ASSERT_EQ(0, md_device_open(&cfg, &self->dev));
	ASSERT_STREQ("kmod", md_device_backend(self->dev));
	ASSERT_EQ(0, md_pool_create(self->dev, NULL, &self->pool));
}

FIXTURE_TEARDOWN(kpool)
{
	md_pool_destroy(self->pool);
	md_device_close(self->dev);
	if (self->fd >= 0) {
		/* Whatever the test did, the module's pool is whole again. */
		EXPECT_EQ(self->free0, pool_free(self->fd));
		close(self->fd);
	}
}

TEST_F(kpool, every_tier_written_and_read_back)
{
	/* The large block first: the module's pool is only 64 MiB. */
	static const uint64_t sizes[] = { 17 * MiB, 100, 5000, 2 * MiB + 1 };
	static const enum md_pool_tier tiers[] = {
		MD_TIER_LARGE, MD_TIER_SLAB, MD_TIER_SLAB, MD_TIER_BUDDY,
	};
	size_t i, k, first = self->big ? 0 : 1;
	struct md_device_stats ds;
	struct md_pool_stats st;
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_buf b[4];

	if (!self->big) {
		/* No region of 17 MiB: refused with the figures, nothing held. */
		ASSERT_EQ(-ENOMEM, md_alloc_ex(self->pool, sizes[0], &opts, &b[0]));
		EXPECT_EQ(0, oom.limit_hit);
		EXPECT_EQ(MD_TIER_LARGE, oom.tier);
		EXPECT_EQ(0, oom.stats.total.region_bytes);
		TH_LOG("%s", oom.message);
	}
	for (i = first; i < 4; i++) {
		ASSERT_EQ(0, md_alloc_tagged(self->pool, sizes[i], "kmod", &b[i]));
		EXPECT_EQ(tiers[i], b[i].tier);
		EXPECT_EQ(0, b[i].dev_va % 256);
		EXPECT_EQ(0, b[i].size % 256);
		ASSERT_NE(NULL, b[i].cpu);
		memset(b[i].cpu, 0x11 * (int)(i + 1), b[i].size);
	}
	for (i = first; i < 4; i++) {
		unsigned char *p = b[i].cpu;

		for (k = 0; k < b[i].size; k += 4093)
			ASSERT_EQ(0x11 * (i + 1), p[k]);
		ASSERT_EQ(0x11 * (i + 1), p[b[i].size - 1]);
	}
	md_pool_stats(self->pool, &st);
	md_device_stats(self->dev, &ds);
	EXPECT_STREQ("kmod", st.backend);
	EXPECT_EQ(ds.bytes_current, st.total.region_bytes);
	/* The module gave exactly the regions the pool holds. */
	EXPECT_EQ(self->free0 - st.total.region_bytes, pool_free(self->fd));
	if (self->big) {
		EXPECT_EQ(8 * MiB, st.tier[MD_TIER_SLAB].region_bytes);
		EXPECT_EQ(17 * MiB, st.tier[MD_TIER_LARGE].region_bytes);
		/* 64 MiB did not fit beside the rest: a smaller buddy region. */
		EXPECT_GE(st.tier[MD_TIER_BUDDY].region_bytes, 16 * MiB);
		EXPECT_LT(st.tier[MD_TIER_BUDDY].region_bytes, 64 * MiB);
	} else {
		/* Regions halved down to what the module has in one piece. */
		EXPECT_LE(st.tier[MD_TIER_SLAB].region_bytes, 4 * MiB);
		EXPECT_LE(st.tier[MD_TIER_BUDDY].region_bytes, 4 * MiB);
	}
	TH_LOG("slab region %llu KiB, buddy region %llu KiB",
	       (unsigned long long)(st.tier[MD_TIER_SLAB].region_bytes >> 10),
	       (unsigned long long)(st.tier[MD_TIER_BUDDY].region_bytes >> 10));

	for (i = first; i < 4; i++)
		ASSERT_EQ(0, md_free(self->pool, &b[i]));
	EXPECT_EQ(0, md_memory_cleaner(self->pool, NULL, NULL));
	EXPECT_EQ(self->free0, pool_free(self->fd));
}

/* @size blocks until the module runs out; then one freed and taken again. */
static void exhaust(struct __test_metadata *_metadata, struct md_pool *pool,
		    uint64_t size, enum md_pool_tier tier)
{
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_buf *b = calloc(128, sizeof(*b)), c;
	int n, err = 0;

	ASSERT_NE(NULL, b);
	for (n = 0; n < 128; n++) {
		err = md_alloc_ex(pool, size, &opts, &b[n]);
		if (err)
			break;
		memset(b[n].cpu, n, 4096);
	}
	ASSERT_EQ(-ENOMEM, err);
	ASSERT_GE(n, 1);
	EXPECT_EQ(-ENOMEM, oom.error);
	EXPECT_EQ(tier, oom.tier);
	EXPECT_EQ(0, oom.limit_hit);
	EXPECT_EQ(n * b[0].size, oom.stats.total.current_bytes);
	EXPECT_GE(oom.stats.total.region_bytes, n * b[0].size);
	EXPECT_NE(NULL, strstr(oom.message, "kmod backend"));
	TH_LOG("%d blocks; %s", n, oom.message);

	/* A freed block is taken again without asking the module. */
	ASSERT_EQ(0, md_free(pool, &b[0]));
	ASSERT_EQ(0, md_alloc(pool, size, &c));
	EXPECT_EQ(b[0].dev_va, c.dev_va);
	b[0] = c;
	while (n--)
		ASSERT_EQ(0, md_free(pool, &b[n]));
	EXPECT_EQ(0, md_memory_cleaner(pool, NULL, NULL));
	free(b);
}

TEST_F(kpool, backend_out_of_memory_buddy)
{
	exhaust(_metadata, self->pool, 2 * MiB, MD_TIER_BUDDY);
}

TEST_F(kpool, backend_out_of_memory_large)
{
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_buf b;

	if (self->big) {
		exhaust(_metadata, self->pool, 20 * MiB, MD_TIER_LARGE);
		return;
	}
	/* No 20 MiB in one piece at all: refused at once, nothing held. */
	ASSERT_EQ(-ENOMEM, md_alloc_ex(self->pool, 20 * MiB, &opts, &b));
	EXPECT_EQ(MD_TIER_LARGE, oom.tier);
	EXPECT_EQ(0, oom.limit_hit);
	EXPECT_EQ(0, oom.stats.total.region_bytes);
	EXPECT_EQ(1, oom.stats.tier[MD_TIER_LARGE].oom_count);
	/* The other tiers are unaffected. */
	ASSERT_EQ(0, md_alloc(self->pool, 3 * MiB, &b));
	ASSERT_EQ(0, md_free(self->pool, &b));
	EXPECT_EQ(0, md_memory_cleaner(self->pool, NULL, NULL));
}

TEST_F(kpool, domain_quota_edquot_and_recovery)
{
	uint32_t me = domain_of(self->fd);
	struct dom_row pool_dom = { 0 };
	struct md_oom_info oom;
	struct md_alloc_opts opts = { .oom = &oom };
	struct md_pool_stats st;
	struct md_buf s, b, c;
	int n = my_domains(me, &pool_dom);

	if (n < 0)
		SKIP(return, "no debugfs view of the domains");
	/* The pool's device is the one other domain of this process. */
	ASSERT_EQ(1, n);
	ASSERT_EQ(0, set_quota(self->fd, pool_dom.id, 6 * MiB));

	/* 8 MiB exceeds the quota: the slab tier takes 4 MiB. */
	ASSERT_EQ(0, md_alloc(self->pool, 100, &s));
	/* 64 .. 4 MiB exceed what is left: the buddy tier takes 2 MiB. */
	ASSERT_EQ(0, md_alloc(self->pool, MiB, &b));
	md_pool_stats(self->pool, &st);
	EXPECT_EQ(4 * MiB, st.tier[MD_TIER_SLAB].region_bytes);
	EXPECT_EQ(2 * MiB, st.tier[MD_TIER_BUDDY].region_bytes);
	EXPECT_EQ(6 * MiB, st.total.region_bytes);

	ASSERT_EQ(-EDQUOT, md_alloc_ex(self->pool, 2 * MiB, &opts, &c));
	EXPECT_EQ(-EDQUOT, oom.error);
	EXPECT_EQ(MD_TIER_BUDDY, oom.tier);
	EXPECT_EQ(0, oom.limit_hit);
	EXPECT_EQ(6 * MiB, oom.stats.total.region_bytes);
	EXPECT_NE(NULL, strstr(oom.message, "kmod backend"));
	TH_LOG("%s", oom.message);

	/* The slab's block freed: the retry gives its region back; it fits. */
	ASSERT_EQ(0, md_free(self->pool, &s));
	ASSERT_EQ(0, md_alloc(self->pool, 2 * MiB, &c));
	md_pool_stats(self->pool, &st);
	EXPECT_EQ(0, st.tier[MD_TIER_SLAB].region_bytes);
	ASSERT_EQ(0, md_free(self->pool, &b));
	ASSERT_EQ(0, md_free(self->pool, &c));
	EXPECT_EQ(0, md_memory_cleaner(self->pool, NULL, NULL));
	ASSERT_EQ(0, set_quota(self->fd, pool_dom.id, METADEF_QUOTA_UNLIMITED));
}

TEST_HARNESS_MAIN
