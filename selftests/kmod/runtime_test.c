// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: libmetadef's runtime on the module. The kmod device backend
 * (md_device_open("kmod")) allocates its regions from /dev/metadef in a
 * domain of its own, and an arena executes a plan there: every tensor
 * written through its CPU mapping and checked until it dies. The pool's
 * INFO figures follow each step, and closing the device takes its domain
 * away with whatever it still held. Every test starts and ends with the
 * whole pool free.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <metadef/arena.h>
#include <metadef/device.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>

#include "../lib/test_util.h"
#include "kselftest_harness.h"
#include "../lib/arena_run.h"
#include "md_ioctl.h"

#define SZ_1M (1024 * 1024ULL)
static uint64_t pool_free(int fd)
{
	return info_of(fd).pool_free;
}

/* Is every page of [p, p + len) mapped? */
static int mapped(const void *p, size_t len)
{
	unsigned char vec[64];
	size_t n = (len + 4095) / 4096;

	if (n > sizeof(vec))
		n = sizeof(vec);
	return mincore((void *)p, n * 4096, vec) == 0;
}

static int open_kmod(struct md_device **dev)
{
	struct md_device_config cfg = { .backend = "kmod" };

	return md_device_open(&cfg, dev);
}

FIXTURE(rt) {
	int raw;			/* a domain of our own, to watch INFO */
	struct metadef_info info;
	struct md_device *dev;
};

FIXTURE_SETUP(rt)
{
	self->raw = md_kmod_open(NULL);
	ASSERT_LE(0, self->raw);
	self->info = info_of(self->raw);
	ASSERT_LT(0, self->info.pool_size);
	ASSERT_EQ(self->info.pool_size, self->info.pool_free);
	ASSERT_EQ(0, open_kmod(&self->dev));
}

FIXTURE_TEARDOWN(rt)
{
	md_device_close(self->dev);
	/* Whatever a test left, closing the device gave it all back. */
	EXPECT_EQ(self->info.pool_size, pool_free(self->raw));
	EXPECT_EQ(0, my_domains(self->info.domain_id, NULL));
	close(self->raw);
}

TEST_F(rt, backend_is_kmod)
{
	struct md_device_config cfg = { .backend = NULL };
	struct md_device *dev;

	EXPECT_STREQ("kmod", md_device_backend(self->dev));
	EXPECT_EQ(self->info.page_size, md_device_page_size(self->dev));
	EXPECT_EQ(MD_ALIGN_CPU, md_device_align(self->dev));
	/* The device opened a domain of its own, and says which. */
	ASSERT_EQ(1, my_domains(self->info.domain_id, NULL));
	EXPECT_NE(0, md_device_domain(self->dev));
	EXPECT_NE(self->info.domain_id, md_device_domain(self->dev));

	/* auto picks the module when the node is there. */
	ASSERT_EQ(0, md_device_open(&cfg, &dev));
	EXPECT_STREQ("kmod", md_device_backend(dev));
	EXPECT_EQ(2, my_domains(self->info.domain_id, NULL));
	md_device_close(dev);
	EXPECT_EQ(1, my_domains(self->info.domain_id, NULL));
	/* host stays host even with the module loaded. */
	cfg.backend = "host";
	ASSERT_EQ(0, md_device_open(&cfg, &dev));
	EXPECT_STREQ("host", md_device_backend(dev));
	EXPECT_EQ(1, my_domains(self->info.domain_id, NULL));
	md_device_close(dev);
}

TEST_F(rt, region_through_the_module)
{
	uint64_t size = SZ_1M + 1, full = self->info.pool_size;
	struct md_device_stats st;
	struct md_region r, r2;
	struct dom_row row;
	unsigned char *p;
	uint64_t i;

	ASSERT_EQ(0, md_region_alloc(self->dev, size, 0, &r));
	EXPECT_EQ(SZ_1M + self->info.page_size, r.size);
	EXPECT_NE(0, r.handle);
	EXPECT_NE(0, r.dev_va);
	EXPECT_EQ(0, r.dev_va % self->info.page_size);
	ASSERT_NE(NULL, r.cpu);
	/* The domain pays for it; the pool has that much less. */
	EXPECT_EQ(full - r.size, pool_free(self->raw));
	ASSERT_EQ(1, my_domains(self->info.domain_id, &row));
	EXPECT_EQ((long long)r.size, row.used);
	EXPECT_EQ(1, row.regions);

	p = r.cpu;
	for (i = 0; i < r.size; i++)
		ASSERT_EQ(0, p[i]);	/* scrubbed */
	for (i = 0; i < r.size; i++)
		p[i] = (unsigned char)(i * 13 + 5);
	for (i = 0; i < r.size; i++)
		ASSERT_EQ((unsigned char)(i * 13 + 5), p[i]);

	/* Aligned in the device's address space. */
	ASSERT_EQ(0, md_region_alloc(self->dev, 4096, 2 * SZ_1M, &r2));
	EXPECT_EQ(0, r2.dev_va % (2 * SZ_1M));
	EXPECT_EQ(full - r.size - 4096, pool_free(self->raw));
	md_device_stats(self->dev, &st);
	EXPECT_EQ(2, st.region_allocs);
	EXPECT_EQ(r.size + 4096, st.bytes_current);

	ASSERT_EQ(0, md_region_free(self->dev, &r));
	EXPECT_FALSE(mapped(r.cpu, r.size));
	EXPECT_EQ(full - 4096, pool_free(self->raw));
	EXPECT_EQ(-EINVAL, md_region_free(self->dev, &r));
	ASSERT_EQ(0, md_region_free(self->dev, &r2));
	EXPECT_EQ(full, pool_free(self->raw));
	ASSERT_EQ(1, my_domains(self->info.domain_id, &row));
	EXPECT_EQ(0, row.used);
	EXPECT_EQ(0, row.regions);
	md_device_stats(self->dev, &st);
	EXPECT_EQ(2, st.region_frees);
	EXPECT_EQ(0, st.bytes_current);
}

/* Faults the module logged in all (debugfs "faults"), -1 without it. */
static long long faults_logged(void)
{
	long long n = -1;
	FILE *f = fopen("/sys/kernel/debug/metadef/faults", "r");

	if (!f)
		return -1;
	if (fscanf(f, "# %lld faults", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/*
 * md_device_copy() on the kmod backend: the module's copy engine moves the
 * bytes through the domain's device page table; what the table does not
 * map is refused whole and logged as a fault.
 */
TEST_F(rt, device_copy_through_the_engine)
{
	struct md_region a, b;
	unsigned char *pa, *pb, before[2 * 4096];
	long long faults;
	uint64_t i;

	ASSERT_EQ(0, md_region_alloc(self->dev, 4 * 4096, 0, &a));
	ASSERT_EQ(0, md_region_alloc(self->dev, 2 * 4096, 0, &b));
	pa = a.cpu;
	pb = b.cpu;
	for (i = 0; i < a.size; i++)
		pa[i] = (unsigned char)(i * 31 + 7);

	ASSERT_EQ(0, md_device_copy(self->dev, b.dev_va + 3, a.dev_va + 4000,
				    6000));
	for (i = 0; i < 6000; i++)
		ASSERT_EQ(pa[4000 + i], pb[3 + i]);
	EXPECT_EQ(0, pb[2]);
	EXPECT_EQ(0, pb[6003]);

	memcpy(before, pb, sizeof(before));
	faults = faults_logged();
	EXPECT_EQ(-EINVAL, md_device_copy(self->dev, b.dev_va, a.dev_va, 0));
	/* An address no region of this domain maps: refused, logged. */
	EXPECT_EQ(-EFAULT, md_device_copy(self->dev, b.dev_va, 4096, 64));
	ASSERT_EQ(0, md_region_free(self->dev, &a));
	EXPECT_EQ(-EFAULT, md_device_copy(self->dev, b.dev_va, a.dev_va, 64));
	EXPECT_EQ(0, memcmp(before, pb, sizeof(before)));
	if (faults >= 0)
		EXPECT_EQ(faults + 2, faults_logged());
	ASSERT_EQ(0, md_region_free(self->dev, &b));
}

TEST_F(rt, pool_exhaustion_and_quota)
{
	uint64_t full = self->info.pool_size;
	struct metadef_quota q = { 0 };
	struct md_device_stats st;
	struct md_region r;
	struct dom_row row;

	/* More than the pool: the module says no, nothing is left over. */
	EXPECT_EQ(-ENOMEM, md_region_alloc(self->dev, full + 4096, 0, &r));
	EXPECT_EQ(full, pool_free(self->raw));
	md_device_stats(self->dev, &st);
	EXPECT_EQ(1, st.region_failures);
	EXPECT_EQ(0, st.bytes_current);

	/* The device's domain under a quota (we are root in the VM). */
	ASSERT_EQ(1, my_domains(self->info.domain_id, &row));
	q.domain_id = row.id;
	q.quota = SZ_1M;
	ASSERT_EQ(0, ioctl(self->raw, METADEF_IOC_SET_QUOTA, &q));
	ASSERT_EQ(0, md_region_alloc(self->dev, SZ_1M, 0, &r));
	EXPECT_EQ(-EDQUOT, md_region_alloc(self->dev, 4096, 0, &r));
	md_device_stats(self->dev, &st);
	EXPECT_EQ(2, st.region_failures);
	EXPECT_EQ(SZ_1M, st.bytes_current);
	EXPECT_EQ(full - SZ_1M, pool_free(self->raw));
	/* Left allocated: closing the device in the teardown frees it. */
}

/* ---------------------------------------------------------- arenas */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	return xorshift64(&rng_state);
}

static void random_problem(struct md_problem *p, size_t n, uint64_t maxsize)
{
	static const uint64_t aligns[] = { 1, 64, 256, 4096 };
	char name[32];
	size_t i;

	md_problem_init(p);
	for (i = 0; i < n; i++) {
		uint64_t lo = rnd() % 40, life = 1 + rnd() % 10;

		snprintf(name, sizeof(name), "t%zu", i);
		md_problem_add(p, name, lo, lo + life, 1 + rnd() % maxsize,
			       aligns[rnd() % 4]);
	}
}

TEST_F(rt, arena_runs_a_plan)
{
	uint64_t full = self->info.pool_size;
	struct md_arena_info info;
	struct md_plan_ref ref;
	struct md_arena_plan *m;
	struct md_arena *a;
	struct md_problem p;
	struct md_plan plan;
	struct md_tensor t;
	struct dom_row row;
	size_t i;

	random_problem(&p, 150, 64 * 1024);
	ASSERT_EQ(0, md_plan_solve(&p, NULL, &plan));
	ref = (struct md_plan_ref){ &p, plan.offsets };
	ASSERT_EQ(0, md_arena_create(self->dev, &ref, 1, &a));
	md_arena_info(a, &info);
	TH_LOG("150 tensors, %llu bytes without reuse, arena %llu",
	       (unsigned long long)md_problem_total(&p),
	       (unsigned long long)info.size);
	EXPECT_EQ(plan.peak, info.peak);
	EXPECT_LE(plan.peak, info.size);
	EXPECT_GT(plan.peak + self->info.page_size, info.size);
	ASSERT_NE(NULL, info.cpu);
	EXPECT_EQ(0, info.dev_va % 4096);
	/* One region in the module for all of them. */
	EXPECT_EQ(full - info.size, pool_free(self->raw));
	ASSERT_EQ(1, my_domains(self->info.domain_id, &row));
	EXPECT_EQ(1, row.regions);

	ASSERT_EQ(0, md_arena_bind(a, &p, plan.offsets, &m));
	for (i = 0; i < p.n; i++) {
		ASSERT_EQ(0, md_arena_tensor(m, i, &t));
		EXPECT_EQ(info.dev_va + plan.offsets[i], t.dev_va);
		EXPECT_EQ(0, t.dev_va % p.bufs[i].align);
	}
	ASSERT_EQ(0, md_arena_activate(m));
	EXPECT_EQ(150, run_plan(_metadata, &p, m, 1));
	ASSERT_EQ(0, md_arena_deactivate(m));

	ASSERT_EQ(0, md_arena_find(m, "t7", &t));
	EXPECT_EQ(7, t.index);

	md_arena_destroy(a);
	EXPECT_EQ(full, pool_free(self->raw));
	md_plan_free(&plan);
	md_problem_free(&p);
}

TEST_F(rt, two_models_one_arena)
{
	uint64_t full = self->info.pool_size;
	struct md_problem p[2];
	struct md_plan plan[2];
	struct md_plan_ref ref[2];
	struct md_arena_plan *m[2];
	struct md_arena_info info;
	struct md_arena *a;
	int k, round;

	for (k = 0; k < 2; k++) {
		random_problem(&p[k], k ? 120 : 60, k ? 128 * 1024 : 32 * 1024);
		ASSERT_EQ(0, md_plan_solve(&p[k], NULL, &plan[k]));
		ref[k] = (struct md_plan_ref){ &p[k], plan[k].offsets };
	}
	ASSERT_EQ(0, md_arena_create(self->dev, ref, 2, &a));
	md_arena_info(a, &info);
	EXPECT_EQ(plan[0].peak > plan[1].peak ? plan[0].peak : plan[1].peak,
		  info.peak);
	/* One region of the larger peak, not the sum. */
	EXPECT_EQ(full - info.size, pool_free(self->raw));
	for (k = 0; k < 2; k++)
		ASSERT_EQ(0, md_arena_bind(a, &p[k], plan[k].offsets, &m[k]));

	for (round = 0; round < 4; round++) {
		k = round % 2;
		ASSERT_EQ(0, md_arena_activate(m[k]));
		EXPECT_EQ(-EBUSY, md_arena_activate(m[!k]));
		EXPECT_EQ((long)p[k].n, run_plan(_metadata, &p[k], m[k],
						 round));
		ASSERT_EQ(0, md_arena_deactivate(m[k]));
	}
	md_arena_info(a, &info);
	EXPECT_EQ(4, info.activations);
	EXPECT_EQ(4, info.busy);

	/* An arena that is too small for a plan refuses it. */
	md_arena_destroy(a);
	ASSERT_EQ(0, md_arena_create(self->dev, &ref[0], 1, &a));
	md_arena_info(a, &info);
	ASSERT_LT(info.size, plan[1].peak);
	EXPECT_EQ(-ENOSPC, md_arena_bind(a, &p[1], plan[1].offsets, &m[1]));
	md_arena_destroy(a);
	EXPECT_EQ(full, pool_free(self->raw));
	for (k = 0; k < 2; k++) {
		md_plan_free(&plan[k]);
		md_problem_free(&p[k]);
	}
}

TEST_F(rt, close_takes_the_domain_away)
{
	uint64_t full = self->info.pool_size, held = 0;
	struct md_device *dev;
	struct md_region r[6];
	struct dom_row row;
	int i;

	ASSERT_EQ(0, open_kmod(&dev));
	ASSERT_EQ(2, my_domains(self->info.domain_id, NULL));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, md_region_alloc(dev, (i + 1) * 256 * 1024, 0,
					     &r[i]));
		memset(r[i].cpu, 0xc3, r[i].size);
		held += r[i].size;
	}
	EXPECT_EQ(full - held, pool_free(self->raw));
	/* The newest of our domains is the new device's. */
	ASSERT_EQ(2, my_domains(self->info.domain_id, &row));
	EXPECT_EQ(6, row.regions);
	EXPECT_EQ((long long)held, row.used);

	md_device_close(dev);
	/* Its domain is gone, and everything it held is back in the pool. */
	EXPECT_EQ(1, my_domains(self->info.domain_id, NULL));
	EXPECT_EQ(full, pool_free(self->raw));
	for (i = 0; i < 6; i++)
		EXPECT_FALSE(mapped(r[i].cpu, r[i].size)) TH_LOG("region %d", i);
}

TEST_HARNESS_MAIN
