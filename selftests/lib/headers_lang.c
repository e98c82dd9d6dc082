// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every public header of libmetadef, compiled as strict C11
 * (headers_c11_test) and as C++17 (headers_cxx17_test, this file built by
 * g++): a C++ program, or a C program built with -std=c11 -pedantic-errors,
 * must be able to include them and use the library. The source is one
 * file valid in both languages (no designated initializers, no compound
 * literals); it prints TAP for tools/check. The Makefile builds it twice
 * with -Werror, so a header that stops compiling in either language fails
 * the host tier's build.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <metadef/arena.h>
#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/exact.h>
#include <metadef/graph.h>
#include <metadef/meta.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>
#include <metadef/pool.h>
#include <metadef/reuse.h>

#ifdef __cplusplus
#define LANG "c++17"
#else
#define LANG "c11"
#endif

static int n_tests;

static void report(int ok, const char *name)
{
	printf("%sok %d %s_%s\n", ok ? "" : "not ", ++n_tests, name, LANG);
}

/* The tiered pool through the headers: a tagged block's whole life. */
static int pool_life(struct md_device *dev)
{
	struct md_pool_stats st;
	struct md_pool *pool;
	struct md_buf b;
	int ok;

	if (md_pool_create(dev, NULL, &pool))
		return 0;
	ok = !md_alloc_tagged(pool, 1000, "headers", &b) && b.size >= 1000 &&
	     md_buf_state(pool, &b) == MD_BLOCK_ALLOCATED &&
	     !md_buf_acquire(pool, &b) && md_buf_release(pool, &b) == 1 &&
	     !md_free(pool, &b) && md_free(pool, &b) == -EINVAL;
	md_pool_stats(pool, &st);
	ok = ok && st.total.alloc_count == 1 && st.total.free_count == 1 &&
	     st.violation[MD_POOL_DOUBLE_FREE] == 1;
	md_pool_destroy(pool);
	return ok;
}

/* The reuse protocol's word, private now, through its functions only. */
static int reuse_life(void)
{
	struct md_block_sync s;

	memset(&s, 0, sizeof(s));
	md_block_sync_init(&s);
	return md_block_sync_state(&s) == MD_BLOCK_ALLOCATED &&
	       !md_block_sync_acquire(&s) && md_block_sync_holders(&s) == 1 &&
	       md_block_sync_release(&s) == 1 && !md_block_sync_recycle(&s) &&
	       !md_block_sync_reuse(&s) && md_block_sync_generation(&s) == 1;
}

static int dynpool_life(struct md_device *dev)
{
	struct md_dynpool *dp;
	struct md_dynblock b;
	int ok;

	if (md_dynpool_create(dev, NULL, &dp))
		return 0;
	ok = !md_dynpool_alloc(dp, 4096, &b) &&
	     md_block_sync_state(b.sync) == MD_BLOCK_ALLOCATED &&
	     !md_dynpool_free(dp, &b) && !md_dynpool_check(dp, NULL);
	md_dynpool_destroy(dp);
	return ok;
}

int main(void)
{
	struct md_device_config dc;
	struct md_device *dev = NULL;
	int opened;

	printf("TAP version 13\n1..4\n");
	report(!strcmp(md_version(), MD_VERSION), "headers_compile");
	memset(&dc, 0, sizeof(dc));
	dc.backend = "host";
	opened = !md_device_open(&dc, &dev);
	report(opened && pool_life(dev), "pool_through_the_headers");
	report(reuse_life(), "reuse_through_the_headers");
	report(opened && dynpool_life(dev), "dynpool_through_the_headers");
	if (opened)
		md_device_close(dev);
	return 0;
}
