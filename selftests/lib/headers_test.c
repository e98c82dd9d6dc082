// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every public header of libmetadef in one translation unit: a program
 * that uses the planner and the runtime together must compile (tag clashes
 * such as an enum and a struct of one name fail the build, and with it the
 * host tier), and the version the headers describe is the library's.
 */
#include <string.h>

#include <metadef/arena.h>
#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/exact.h>
#include <metadef/graph.h>
#include <metadef/meta.h>
#include <metadef/metadef.h>
#include <metadef/onnx.h>
#include <metadef/plan.h>
#include <metadef/pool.h>
#include <metadef/reuse.h>

#include "kselftest_harness.h"

TEST(headers_compile_together)
{
	enum md_device_kind kind;
	struct md_device *dev = NULL;

	ASSERT_EQ(0, md_device_parse("npu", &kind));
	EXPECT_STREQ("npu", md_device_name(kind));
	ASSERT_EQ(0, md_device_open(&(struct md_device_config){
				    .backend = "host" }, &dev));
	EXPECT_STREQ("host", md_device_backend(dev));
	md_device_close(dev);
	EXPECT_STREQ(MD_VERSION, md_version());
}

TEST_HARNESS_MAIN
