// SPDX-License-Identifier: GPL-2.0
/*
 * md_copy_bench: the isolation cost of metadef's copy engine. The engine
 * (md_mmu_copy(): translate every page of both ranges through a domain's
 * device page table, fail on any fault before a byte moves, then copy run
 * by run) against a raw memcpy() of the same bytes, in the same kernel,
 * alternating, best of @reps each.
 *
 * The "pool" is a vmalloc() area; a domain's table maps it read-write at
 * the device VA base, as ALLOC maps regions. Workloads, for each size:
 *   contig   source and destination are two regions (each contiguous in
 *            the pool, as every metadef region is): the engine's runs are
 *            whole chunks; the peer is one memcpy() of the range
 *   scatter  the table maps every device page to a shuffled pool page, so
 *            every run is one page; the peer copies the same pool pages
 *            page by page from a precomputed list (a DMA engine with a
 *            scatter-gather list and no translation). Not the goal: it
 *            shows the cost of translation at its worst.
 * The goal (issue 4): contig engine/raw >= 0.97 at every size.
 *
 * Results: /sys/kernel/debug/md_copy_bench/results (and the kernel log);
 * the benchmark runs when the module loads.
 */
#define pr_fmt(fmt) "md_copy_bench: " fmt

#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "mmu.h"

#define VA_BASE		(1ULL << 40)
#define COLOR		1

static uint pool_mb = 64;
module_param(pool_mb, uint, 0444);
MODULE_PARM_DESC(pool_mb, "pool size, MiB (two regions of half each)");
static uint reps = 21;
module_param(reps, uint, 0444);
MODULE_PARM_DESC(reps, "timed runs per workload and side (best counts)");
static uint mb_per_run = 16;
module_param(mb_per_run, uint, 0444);
MODULE_PARM_DESC(mb_per_run, "bytes copied per timed run, MiB");

static u8 *pool;
static u64 pool_size;
static u32 *perm;		/* scatter: device page i -> pool page perm[i] */

static char *out_buf;
static size_t out_len, out_cap;

static __printf(1, 2) void emit(const char *fmt, ...)
{
	va_list args;
	char line[256];

	va_start(args, fmt);
	vscnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	pr_info("%s\n", line);
	out_len += scnprintf(out_buf + out_len, out_cap - out_len, "%s\n", line);
}

/*
 * Both sides move bytes with this one function, the kernel's memcpy():
 * inlined, GCC may turn a memcpy() into "rep movsb", which qemu's TCG runs
 * an order of magnitude slower than the kernel's own memcpy().
 */
static noinline void pool_memcpy(void *ctx, u64 dst, u64 src, u64 len)
{
	memcpy(pool + dst, pool + src, len);
}

/* One timed run of the engine: @n copies of @size bytes. */
static u64 run_engine(struct md_mmu *mmu, u64 dst, u64 src, u64 size, u64 n)
{
	struct md_mmu_fault_info fault;
	u64 t0, i;

	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		down_read(&mmu->lock);
		if (md_mmu_copy(mmu, VA_BASE + dst, VA_BASE + src, size,
				pool_memcpy, NULL, &fault))
			pr_err("unexpected fault at %#llx\n", fault.va);
		up_read(&mmu->lock);
	}
	return ktime_get_ns() - t0;
}

/* The peer: the same bytes, no table. */
static u64 run_raw(bool scatter, u64 dst, u64 src, u64 size, u64 n)
{
	u64 t0, i, done;

	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		if (!scatter) {
			pool_memcpy(NULL, dst, src, size);
			cond_resched();
			continue;
		}
		for (done = 0; done < size; done += PAGE_SIZE)
			pool_memcpy(NULL,
				    (u64)perm[(dst + done) >> PAGE_SHIFT] << PAGE_SHIFT,
				    (u64)perm[(src + done) >> PAGE_SHIFT] << PAGE_SHIFT,
				    min_t(u64, PAGE_SIZE, size - done));
		cond_resched();
	}
	return ktime_get_ns() - t0;
}

/* MB/s (10^6 bytes) of @bytes in @ns. */
static u64 mbps(u64 bytes, u64 ns)
{
	return ns ? div64_u64(bytes * 1000, ns) : 0;
}

static int map_pool(struct md_mmu *mmu, bool scatter)
{
	u64 pages = pool_size >> PAGE_SHIFT, i;
	int ret;

	if (!scatter)
		return md_mmu_map(mmu, VA_BASE, 0, pool_size,
				  MD_MMU_READ | MD_MMU_WRITE, COLOR);
	for (i = 0; i < pages; i++) {
		ret = md_mmu_map(mmu, VA_BASE + (i << PAGE_SHIFT),
				 (u64)perm[i] << PAGE_SHIFT, PAGE_SIZE,
				 MD_MMU_READ | MD_MMU_WRITE, COLOR);
		if (ret)
			return ret;
	}
	return 0;
}

static const u64 sizes[] = { SZ_4K, SZ_64K, SZ_1M, SZ_16M };

/* Returns the lowest engine/raw ratio, in hundredths. */
static int workload(bool scatter, u64 *worst)
{
	const char *name = scatter ? "scatter" : "contig";
	struct md_mmu mmu;
	unsigned int s, r;
	int ret;

	ret = md_mmu_init(&mmu, COLOR);
	if (ret)
		return ret;
	ret = map_pool(&mmu, scatter);
	if (ret)
		goto out;
	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		u64 size = sizes[s], n, best_e = U64_MAX, best_r = U64_MAX;
		/*
		 * Not exactly half the pool apart: qemu's software TLB is
		 * direct-mapped, and pages a power of two apart would evict
		 * each other on every access, on both sides alike.
		 */
		u64 src = 0, dst = pool_size / 2 + 5 * PAGE_SIZE, bytes, me, mr, q;

		if (size > pool_size / 2 - 5 * PAGE_SIZE)
			continue;
		n = max_t(u64, 1, div64_u64((u64)mb_per_run << 20, size));
		bytes = n * size;
		/* Alternate the two, so neither always runs warm or cold. */
		for (r = 0; r < reps; r++) {
			if (r & 1) {
				best_r = min(best_r, run_raw(scatter, dst, src, size, n));
				best_e = min(best_e, run_engine(&mmu, dst, src, size, n));
			} else {
				best_e = min(best_e, run_engine(&mmu, dst, src, size, n));
				best_r = min(best_r, run_raw(scatter, dst, src, size, n));
			}
		}
		me = mbps(bytes, best_e);
		mr = mbps(bytes, best_r);
		q = mr ? div64_u64(me * 1000, mr) : 0;
		emit("%-8s %9llu %8llu %12llu %12llu %6llu.%03llu", name, size, n,
		     me, mr, q / 1000, q % 1000);
		if (!scatter)
			*worst = min(*worst, q);
	}
out:
	md_mmu_unmap(&mmu, VA_BASE, pool_size);
	md_mmu_fini(&mmu);
	return ret;
}

static int bench_run(void)
{
	u64 pages, i, worst = U64_MAX;
	int ret;

	pool_size = (u64)pool_mb << 20;
	pages = pool_size >> PAGE_SHIFT;
	pool = vmalloc(pool_size);
	perm = kvmalloc_array(pages, sizeof(*perm), GFP_KERNEL);
	if (!pool || !perm) {
		ret = -ENOMEM;
		goto out;
	}
	memset(pool, 0x5a, pool_size);
	/* A seeded Fisher-Yates shuffle of the pool's pages. */
	for (i = 0; i < pages; i++)
		perm[i] = i;
	for (i = pages - 1; i > 0; i--) {
		u32 j = (u32)div64_u64((i + 1) * (u64)(u32)(i * 2654435761u), 1ULL << 32);

		swap(perm[i], perm[j]);
	}

	emit("md_copy_bench: metadef copy engine (soft-MMU) vs raw memcpy of the same bytes");
	emit("pool %u MiB (vmalloc), %u MiB per timed run, best of %u runs each, alternating",
	     pool_mb, mb_per_run, reps);
	emit("%-8s %9s %8s %12s %12s %10s", "workload", "size", "copies",
	     "engine MB/s", "memcpy MB/s", "ratio");
	ret = workload(false, &worst);
	if (!ret)
		ret = workload(true, &worst);
	if (!ret)
		emit("Goal: contig engine/memcpy >= 0.970 at every size: lowest %llu.%03llu: %s",
		     worst / 1000, worst % 1000, worst >= 970 ? "MET" : "NOT MET");
out:
	kvfree(perm);
	vfree(pool);
	return ret;
}

static struct dentry *bench_dir;

static ssize_t results_read(struct file *file, char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	return simple_read_from_buffer(ubuf, count, ppos, out_buf, out_len);
}

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = default_llseek,
};

static int __init bench_init(void)
{
	int ret;

	out_cap = SZ_16K;
	out_buf = kzalloc(out_cap, GFP_KERNEL);
	if (!out_buf)
		return -ENOMEM;
	ret = bench_run();
	if (ret) {
		kfree(out_buf);
		return ret;
	}
	bench_dir = debugfs_create_dir("md_copy_bench", NULL);
	debugfs_create_file("results", 0400, bench_dir, NULL, &results_fops);
	return 0;
}

static void __exit bench_exit(void)
{
	debugfs_remove_recursive(bench_dir);
	kfree(out_buf);
}

module_init(bench_init);
module_exit(bench_exit);

MODULE_DESCRIPTION("metadef copy engine vs memcpy benchmark");
MODULE_LICENSE("GPL");
