// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the ioctl dispatcher's table lookup and the INFO command's
 * validation, exercised through the symbols metadef.ko exports for tests.
 */
#include <kunit/test.h>
#include <linux/sizes.h>
#include <linux/module.h>

#include "metadef.h"

static void lookup_info(struct kunit *test)
{
	const struct md_ioctl_desc *d = md_ioctl_lookup(METADEF_IOC_INFO);

	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_EXPECT_STREQ(test, d->name, "INFO");
	KUNIT_EXPECT_EQ(test, d->cmd, METADEF_IOC_INFO);
}

/* A read-write command of ours with number @nr and argument size @size. */
#define RW_CMD(nr, size) \
	_IOC(_IOC_READ | _IOC_WRITE, METADEF_IOC_MAGIC, (nr), (size))

static void lookup_wrong_type_nr_dir(struct kunit *test)
{
	/* Another driver's magic with our number. */
	KUNIT_EXPECT_NULL(test,
			  md_ioctl_lookup(_IOWR('x', 0x00, struct metadef_info)));
	/* Our magic, a number nobody defined. */
	KUNIT_EXPECT_NULL(test,
			  md_ioctl_lookup(_IOWR(METADEF_IOC_MAGIC, 0x7f, struct metadef_info)));
	/* Right number, wrong direction. */
	KUNIT_EXPECT_NULL(test,
			  md_ioctl_lookup(_IOR(METADEF_IOC_MAGIC, 0x00, struct metadef_info)));
	KUNIT_EXPECT_NULL(test, md_ioctl_lookup(_IO(METADEF_IOC_MAGIC, 0x00)));
}

static void lookup_sizes(struct kunit *test)
{
	unsigned int base = sizeof(struct metadef_info);

	/* Shorter than the first version: not a metadef caller. */
	KUNIT_EXPECT_NULL(test, md_ioctl_lookup(RW_CMD(0x00, base - 8)));
	/* A newer caller with a longer struct is dispatched. */
	KUNIT_EXPECT_NOT_NULL(test, md_ioctl_lookup(RW_CMD(0x00, base + 64)));
	/* But not one larger than the dispatcher can buffer. */
	KUNIT_EXPECT_NULL(test, md_ioctl_lookup(RW_CMD(0x00, 4096)));
}

static void info_check_reserved(struct kunit *test)
{
	struct metadef_info info = {};
	size_t i;

	KUNIT_EXPECT_EQ(test, md_info_check(&info), 0);

	info.flags = 1;
	KUNIT_EXPECT_EQ(test, md_info_check(&info), -EINVAL);
	info.flags = 0;

	for (i = 0; i < ARRAY_SIZE(info.reserved); i++) {
		info.reserved[i] = 1ULL << 63;
		KUNIT_EXPECT_EQ(test, md_info_check(&info), -EINVAL);
		info.reserved[i] = 0;
	}
}

static void info_fill(struct kunit *test)
{
	/* A device with no pool yet; it and a domain too big for the stack. */
	struct md_device *mdev = kunit_kzalloc(test, sizeof(*mdev), GFP_KERNEL);
	struct md_domain *dom = kunit_kzalloc(test, sizeof(*dom), GFP_KERNEL);
	struct metadef_info info;

	KUNIT_ASSERT_NOT_NULL(test, mdev);
	KUNIT_ASSERT_NOT_NULL(test, dom);
	mdev->pool_size = SZ_16M;
	mutex_init(&mdev->pool_lock);
	dom->id = 42;
	dom->dev = mdev;
	memset(&info, 0xa5, sizeof(info));
	md_info_fill(dom, &info);
	KUNIT_EXPECT_EQ(test, info.abi_version, METADEF_ABI_VERSION);
	KUNIT_EXPECT_EQ(test, info.page_size, (u32)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, info.pool_size, 0ull);
	KUNIT_EXPECT_EQ(test, info.pool_free, 0ull);
	KUNIT_EXPECT_STREQ(test, info.backend, "none");
	KUNIT_EXPECT_EQ(test, info.domain_id, 42u);
	KUNIT_EXPECT_EQ(test, info.flags, 0u);
	/* Output reserved fields are zero, not stale input. */
	KUNIT_EXPECT_EQ(test, md_info_check(&info), 0);
}

static void alloc_check(struct kunit *test)
{
	struct metadef_alloc a = { .size = 1 };

	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), 0);
	a.align = SZ_2M;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), 0);
	a.align = 3 * SZ_4K;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.align = 0;
	a.flags = METADEF_ALLOC_TOPDOWN;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), 0);
	a.flags = 1u << 31;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.flags = 0;
	a.reserved[1] = 1;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.reserved[1] = 0;
	a.size = 0;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
}

static void alloc_check_range(struct kunit *test)
{
	struct metadef_alloc a = { .size = 1, .flags = METADEF_ALLOC_RANGE };

	a.range_end = SZ_1M;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), 0);
	a.flags |= METADEF_ALLOC_TOPDOWN;
	a.range_start = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), 0);
	/* Page-aligned both ends, or refused. */
	a.range_start = 1;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.range_start = PAGE_SIZE;
	a.range_end = SZ_1M + 1;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	/* Empty or reversed. */
	a.range_end = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.range_end = 0;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.range_start = 0;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	/* Without the flag the fields must be zero. */
	a.flags = 0;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), 0);
	a.range_end = SZ_1M;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
	a.range_end = 0;
	a.range_start = PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, md_alloc_check(&a), -EINVAL);
}

/* ALLOC grew the range fields: callers built before them are still served. */
static void lookup_alloc_sizes(struct kunit *test)
{
	unsigned int v0 = METADEF_ALLOC_SIZE_VER0;

	KUNIT_EXPECT_EQ(test, v0,
			(unsigned int)offsetofend(struct metadef_alloc, reserved));
	KUNIT_EXPECT_NOT_NULL(test, md_ioctl_lookup(RW_CMD(0x01, v0)));
	KUNIT_EXPECT_NOT_NULL(test, md_ioctl_lookup(METADEF_IOC_ALLOC));
	KUNIT_EXPECT_NULL(test, md_ioctl_lookup(RW_CMD(0x01, v0 - 8)));
}

static struct kunit_case md_ioctl_cases[] = {
	KUNIT_CASE(lookup_info),
	KUNIT_CASE(lookup_wrong_type_nr_dir),
	KUNIT_CASE(lookup_sizes),
	KUNIT_CASE(info_check_reserved),
	KUNIT_CASE(info_fill),
	KUNIT_CASE(alloc_check),
	KUNIT_CASE(alloc_check_range),
	KUNIT_CASE(lookup_alloc_sizes),
	{}
};

static struct kunit_suite md_ioctl_suite = {
	.name = "metadef_ioctl",
	.test_cases = md_ioctl_cases,
};

kunit_test_suite(md_ioctl_suite);

MODULE_IMPORT_NS(MD_NS(EXPORTED_FOR_KUNIT_TESTING));
MODULE_DESCRIPTION("KUnit suites for metadef.ko");
MODULE_LICENSE("GPL");
