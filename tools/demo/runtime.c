// SPDX-License-Identifier: GPL-2.0
/*
 * Demo: libmetadef on /dev/metadef, as a runtime uses it. One device (a
 * memory domain of the module), then:
 *   1. an arena: a small attention block planned with the offset planner
 *      and executed on one region; two tensors copied by the device;
 *   2. the tiered pools: tagged blocks in each tier, a block held by a
 *      user, refused frees, the stats and a JSON snapshot;
 *   3. a leak: a block its owner never freed, found by the cleaner;
 *   4. the dynamic pool on a detection-like run of varying input sizes.
 * Runs inside the demo VM. Every step is checked: the exit status is
 * non-zero when one did not go as described.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/arena.h>
#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>
#include <metadef/pool.h>

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static void heading(int n, const char *title)
{
	printf("\n\033[1m-- %d. %s\033[0m\n", n, title);
}

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("runtime-demo: FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* die() unless @got is @want; @what names the call. */
static void expect(int got, int want, const char *what)
{
	if (got != want)
		die("%s returned %d (%s), expected %d", what, got,
		    got < 0 ? strerror(-got) : "-", want);
}

static const char *mib(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= MiB)
		snprintf(buf, len, "%.2f MiB", (double)bytes / MiB);
	else if (bytes >= KiB)
		snprintf(buf, len, "%.1f KiB", (double)bytes / KiB);
	else
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	return buf;
}

/* ---------------------------------------------------------------- arena */

/* One attention block: buffer, first step alive, first step dead, size. */
static const struct {
	const char *id;
	uint64_t lower, upper, size;
} graph[] = {
	{ "x",       0, 2, 512 * KiB },
	{ "q",       1, 3, 512 * KiB },
	{ "k",       1, 3, 512 * KiB },
	{ "v",       1, 5, 512 * KiB },
	{ "scores",  3, 4, 1 * MiB },
	{ "probs",   4, 5, 1 * MiB },
	{ "attn",    5, 6, 512 * KiB },
	{ "out",     6, 7, 512 * KiB },
};

static void arena_demo(struct md_device *dev)
{
	struct md_problem p;
	struct md_plan plan;
	struct md_plan_ref ref;
	struct md_arena *a;
	struct md_arena_plan *m;
	struct md_arena_info ai;
	struct md_tensor q, k;
	char b1[32], b2[32], b3[32];
	unsigned char *cq, *ck;
	size_t i;

	heading(1, "an arena: a plan executed on one region of the domain");
	md_problem_init(&p);
	for (i = 0; i < sizeof(graph) / sizeof(graph[0]); i++)
		expect(md_problem_add(&p, graph[i].id, graph[i].lower,
				      graph[i].upper, graph[i].size, 4096),
		       0, "md_problem_add");
	expect(md_plan_solve(&p, NULL, &plan), 0, "md_plan_solve");
	printf("planned %zu buffers: %s without reuse, peak %s (lower bound "
	       "%s)\n", p.n, mib(plan.total, b1, sizeof(b1)),
	       mib(plan.peak, b2, sizeof(b2)),
	       mib(plan.lower_bound, b3, sizeof(b3)));
	ref.problem = &p;
	ref.offsets = plan.offsets;
	expect(md_arena_create(dev, &ref, 1, &a), 0, "md_arena_create");
	expect(md_arena_bind(a, &p, plan.offsets, &m), 0, "md_arena_bind");
	expect(md_arena_activate(m), 0, "md_arena_activate");
	md_arena_info(a, &ai);
	printf("arena: one region of %s at device address %#" PRIx64 "\n",
	       mib(ai.size, b1, sizeof(b1)), ai.dev_va);
	printf("  %-8s %6s %10s %10s %18s\n", "tensor", "alive", "offset",
	       "size", "device address");
	for (i = 0; i < md_arena_plan_size(m); i++) {
		struct md_tensor t;

		expect(md_arena_tensor(m, i, &t), 0, "md_arena_tensor");
		printf("  %-8s  %" PRIu64 "..%" PRIu64 " %10" PRIu64
		       " %10s %#18" PRIx64 "\n", t.id, graph[t.index].lower,
		       graph[t.index].upper, t.offset, mib(t.size, b1, sizeof(b1)),
		       t.dev_va);
	}

	/* q and k live at the same time: the device copies one to the other. */
	expect(md_arena_find(m, "q", &q), 0, "md_arena_find(q)");
	expect(md_arena_find(m, "k", &k), 0, "md_arena_find(k)");
	if (!q.cpu || !k.cpu)
		die("the kmod backend gave no CPU mapping");
	cq = q.cpu;
	ck = k.cpu;
	for (i = 0; i < q.size; i++)
		cq[i] = (unsigned char)(i * 7 + 1);
	memset(ck, 0, k.size);
	expect(md_device_copy(dev, k.dev_va, q.dev_va, q.size), 0,
	       "md_device_copy(k <- q)");
	if (memcmp(cq, ck, q.size))
		die("k differs from q after the device's copy");
	printf("md_device_copy(k <- q): %s moved by the module's copy engine, "
	       "read back equal through the CPU mapping\n",
	       mib(q.size, b1, sizeof(b1)));
	expect(md_device_copy(dev, k.dev_va, ai.dev_va + ai.size, 4096),
	       -EFAULT, "md_device_copy past the arena");
	printf("md_device_copy from past the arena's end: refused (EFAULT), "
	       "logged in debugfs faults\n");

	/* A plan that runs cannot be started twice. */
	expect(md_arena_activate(m), -EALREADY, "md_arena_activate again");
	/* The run is over: another plan bound to the arena may run now. */
	expect(md_arena_deactivate(m), 0, "md_arena_deactivate");
	md_arena_destroy(a);
	md_plan_free(&plan);
	md_problem_free(&p);
}

/* ---------------------------------------------------------------- pools */

static void pool_demo(struct md_device *dev)
{
	struct md_pool_config cfg = {
		.slab_region = 1 * MiB,
		.buddy_region = 16 * MiB,
	};
	static const struct {
		const char *tag;
		uint64_t size;
	} want[] = {
		{ "tokenizer", 100 },
		{ "activations", 300 * KiB },
		{ "activations", 300 * KiB },
		{ "kv-cache", 3 * MiB },
		{ "weights", 20 * MiB },
	};
	enum { N = sizeof(want) / sizeof(want[0]) };
	struct md_cleaner_report rep;
	struct md_buf buf[N];
	struct md_pool *pool;
	char b1[32], b2[32];
	long held;
	int i;

	heading(2,
		"tiered pools: slab < 1 MiB, buddy 1-16 MiB, large > 16 MiB");
	expect(md_pool_create(dev, &cfg, &pool), 0, "md_pool_create");
	for (i = 0; i < N; i++) {
		expect(md_alloc_tagged(pool, want[i].size, want[i].tag,
				       &buf[i]), 0, "md_alloc_tagged");
		printf("md_alloc(%s, \"%s\"): %s tier, a %s block at %#" PRIx64
		       "\n", mib(want[i].size, b1, sizeof(b1)), want[i].tag,
		       md_pool_tier_name(buf[i].tier),
		       mib(buf[i].size, b2, sizeof(b2)), buf[i].dev_va);
	}
	if (buf[0].tier != MD_TIER_SLAB || buf[3].tier != MD_TIER_BUDDY ||
	    buf[4].tier != MD_TIER_LARGE)
		die("a block landed in the wrong tier");

	/* A stream starts using the KV cache; its owner frees too early. */
	expect(md_buf_acquire(pool, &buf[3]), 0, "md_buf_acquire(kv-cache)");
	printf("a user acquires kv-cache: %s\n",
	       md_block_state_name(md_buf_state(pool, &buf[3])));
	expect(md_free(pool, &buf[3]), -EBUSY, "md_free(kv-cache) while held");
	printf("md_free(kv-cache) while held: refused (EBUSY)\n");
	expect(md_buf_release(pool, &buf[3]), 1, "md_buf_release(kv-cache)");
	printf("the user releases it: %s\n",
	       md_block_state_name(md_buf_state(pool, &buf[3])));
	expect(md_free(pool, &buf[3]), 0, "md_free(kv-cache)");
	expect(md_free(pool, &buf[3]), -EINVAL, "md_free(kv-cache) again");
	printf("md_free(kv-cache): recycled; the same free again: refused "
	       "(EINVAL, a double free)\n");
	expect(md_free(pool, &buf[2]), 0, "md_free(activations)");

	printf("\nmd_pool_summary(): md_pool_stats() for people\n");
	expect(md_pool_summary(pool, stdout, 0), 0, "md_pool_summary");

	printf("\nmd_snapshot(): every live block as JSON\n");
	fflush(stdout);
	expect(md_snapshot(pool, stdout), 0, "md_snapshot");
	printf("\n");

	heading(3, "a leak: md_memory_cleaner() names what is still held");
	/* The owner frees everything but the tokenizer's block. */
	expect(md_free(pool, &buf[1]), 0, "md_free");
	expect(md_free(pool, &buf[4]), 0, "md_free");
	fflush(stdout);
	held = md_memory_cleaner(pool, stdout, &rep);
	fflush(stdout);
	if (held != 1 || rep.held_blocks != 1)
		die("the cleaner found %ld blocks held, expected the 1 leaked",
		    held);
	printf("cleaner: %" PRIu64 " regions (%s) back to the device, %"
	       PRIu64 " block still held\n", rep.regions_released,
	       mib(rep.region_bytes_released, b1, sizeof(b1)),
	       rep.held_blocks);
	expect(md_free(pool, &buf[0]), 0, "md_free(tokenizer)");
	expect(md_memory_cleaner(pool, NULL, NULL), 0, "md_memory_cleaner");
	printf("after the owner frees it: nothing held\n");
	md_pool_destroy(pool);
}

/* ---------------------------------------------------------- dynamic pool */

static void dynpool_demo(struct md_device *dev)
{
	/* Input sizes of a detector: feature maps scale with h x w. */
	static const unsigned int hw[][2] = {
		{ 320, 320 }, { 640, 480 }, { 416, 416 }, { 800, 608 },
		{ 512, 512 }, { 640, 640 }, { 320, 240 }, { 736, 544 },
	};
	struct md_dynpool_config cfg = { .grow_min = 4 * MiB };
	struct md_dynpool_stats st;
	struct md_dynpool *dp;
	struct md_dynblock blk[3];
	uint64_t reqs = 0;
	char b1[32], b2[32];
	const char *why;
	int round, i, j;

	heading(4, "the dynamic pool: varying input sizes, one reservation");
	expect(md_dynpool_create(dev, &cfg, &dp), 0, "md_dynpool_create");
	for (round = 0; round < 25; round++) {
		for (i = 0; i < 8; i++) {
			uint64_t px = (uint64_t)hw[i][0] * hw[i][1];

			/* Three feature maps per request, 4 bytes a pixel. */
			for (j = 0; j < 3; j++) {
				expect(md_dynpool_alloc(dp, px * 4 >> (2 * j),
							&blk[j]),
				       0, "md_dynpool_alloc");
				reqs++;
			}
			for (j = 2; j >= 0; j--)
				expect(md_dynpool_free(dp, &blk[j]), 0,
				       "md_dynpool_free");
		}
	}
	md_dynpool_stats(dp, &st);
	expect(md_dynpool_check(dp, &why), 0, "md_dynpool_check");
	printf("%" PRIu64 " requests of 8 input sizes: %" PRIu64
	       " regions from the backend (%" PRIu64 " re-allocations), "
	       "peak reserved %s, peak in use %s\n", reqs, st.region_allocs,
	       st.backend_reallocs, mib(st.reserved_peak, b1, sizeof(b1)),
	       mib(st.bytes_peak, b2, sizeof(b2)));
	printf("allocating per request would have asked the backend %" PRIu64
	       " times: %.1f %% fewer\n", reqs,
	       100.0 * (1.0 - (double)st.region_allocs / (double)reqs));
	if (st.region_allocs >= reqs / 10)
		die("the dynamic pool asked the backend %" PRIu64 " times",
		    st.region_allocs);
	md_dynpool_destroy(dp);
}

int main(void)
{
	struct md_device_config dc = {
		.backend = "kmod",
		.align = MD_ALIGN_NPU,
	};
	struct md_device_stats ds;
	struct md_device *dev;
	struct metadef_info before, after;
	int fd, err;

	fd = md_kmod_open(NULL);
	if (fd < 0)
		die("cannot open /dev/metadef: %s", strerror(-fd));
	expect(md_kmod_info(fd, &before), 0, "INFO");
	err = md_device_open(&dc, &dev);
	if (err)
		die("md_device_open(kmod): %s", strerror(-err));
	printf("md_device_open(): backend %s, page %" PRIu64 ", block "
	       "alignment %" PRIu64 " (an NPU's)\n", md_device_backend(dev),
	       md_device_page_size(dev), md_device_align(dev));

	arena_demo(dev);
	pool_demo(dev);
	dynpool_demo(dev);

	md_device_stats(dev, &ds);
	if (ds.bytes_current)
		die("%" PRIu64 " bytes of regions still live",
		    ds.bytes_current);
	md_device_close(dev);
	expect(md_kmod_info(fd, &after), 0, "INFO");
	printf("\ndevice closed: %" PRIu64 " regions asked of the module in "
	       "all, all given back; pool free %" PRIu64 " of %" PRIu64
	       " bytes\n", ds.region_allocs, (uint64_t)after.pool_free,
	       (uint64_t)after.pool_size);
	if (after.pool_free != before.pool_free)
		die("the module's pool is not as before: %" PRIu64 " free, "
		    "%" PRIu64 " before", (uint64_t)after.pool_free,
		    (uint64_t)before.pool_free);
	close(fd);
	return 0;
}
