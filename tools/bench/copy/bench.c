// SPDX-License-Identifier: GPL-2.0
/*
 * md_copy_bench: the isolation cost of metadef's copy engine. The engine
 * (md_mmu_copy(): translate both ranges run by run through a domain's
 * device page table, fail on any fault before a byte moves, then copy
 * joint run by joint run, excluding the table's writers as it does for
 * COPY), against a raw memcpy() of the same bytes, in the same kernel,
 * alternating.
 *
 * The "pool" is a vmalloc() area; a domain's table maps it read-write at
 * the device VA base, as ALLOC maps regions. Workloads, for each size:
 *   contig   source and destination are two regions (each contiguous in
 *            the pool, as every metadef region is): each side is one run;
 *            the peer is one memcpy() of the range
 *   scatter  the table maps every device page to a shuffled pool page, so
 *            every run is one page; the peer copies the same pool pages
 *            page by page from a precomputed list (a DMA engine with a
 *            scatter-gather list and no translation). Not judged: it
 *            shows the cost of translation at its worst.
 *
 * Each repeat times the engine and the peer on the same copies, @inner
 * times each in alternating order, best of each; its ratio is memcpy time
 * / engine time (the engine's share of memcpy's throughput). Reported per size: the median
 * ratio and its spread over the repeats (min, quartiles, max). The goals
 * (issue 17), judged on the median of contig: >= 0.90 at 4 KiB, >= 0.97
 * from 64 KiB up. One "goal" line per size says met or MISSED;
 * tools/bench/copy-bench turns them into a result file and exit status.
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
#include <linux/sort.h>
#include <linux/vmalloc.h>

#include "mmu.h"

#define VA_BASE		(1ULL << 40)
#define COLOR		1

static uint pool_mb = 64;
module_param(pool_mb, uint, 0444);
MODULE_PARM_DESC(pool_mb, "pool size, MiB (two regions of half each)");
static uint reps = 11;
module_param(reps, uint, 0444);
MODULE_PARM_DESC(reps, "repeats per workload and size, 7 to 101 (median and spread)");
static uint inner = 5;
module_param(inner, uint, 0444);
MODULE_PARM_DESC(inner, "timed runs per side in a repeat (its best counts)");
static uint mb_per_run = 4;
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
	for (i = 0; i < n; i++)
		if (md_mmu_copy(mmu, VA_BASE + dst, VA_BASE + src, size,
				pool_memcpy, NULL, &fault))
			pr_err("unexpected fault at %#llx\n", fault.va);
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

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Order statistics of @n sorted values: the median and the quartiles. */
struct spread {
	u64 min, q1, med, q3, max;
};

static struct spread spread_of(u64 *v, unsigned int n)
{
	struct spread s;

	sort(v, n, sizeof(*v), cmp_u64, NULL);
	s.min = v[0];
	s.q1 = v[(n - 1) / 4];
	s.med = n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.q3 = v[n - 1 - (n - 1) / 4];
	s.max = v[n - 1];
	return s;
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
static const char *const size_names[] = { "4KiB", "64KiB", "1MiB", "16MiB" };

/* The goal at @size, in thousandths of memcpy's throughput. */
static u64 goal_of(u64 size)
{
	return size < SZ_64K ? 900 : 970;
}

static u64 *t_engine, *t_raw, *ratio;	/* reps each */
static unsigned int goals_met, goals_missed;

/* @x thousandths as "i.fff", in @buf. */
static const char *r3(char buf[24], u64 x)
{
	snprintf(buf, 24, "%llu.%03llu", x / 1000, x % 1000);
	return buf;
}

/* One side's best of @inner timed runs and the other's, alternating. */
static void time_pair(struct md_mmu *mmu, bool scatter, u64 dst, u64 src,
		      u64 size, u64 n, bool raw_first, u64 *te, u64 *tr)
{
	unsigned int k;
	bool raw = raw_first;

	*te = U64_MAX;
	*tr = U64_MAX;
	for (k = 0; k < 2 * inner; k++, raw = !raw) {
		if (raw)
			*tr = min(*tr, run_raw(scatter, dst, src, size, n));
		else
			*te = min(*te, run_engine(mmu, dst, src, size, n));
	}
}

static int workload(bool scatter)
{
	const char *name = scatter ? "scatter" : "contig";
	struct md_mmu mmu;
	unsigned int s, r;
	char b[5][24];
	int ret;

	ret = md_mmu_init(&mmu, COLOR);
	if (ret)
		return ret;
	ret = map_pool(&mmu, scatter);
	if (ret)
		goto out;
	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		u64 size = sizes[s], n, bytes, goal = goal_of(size);
		/*
		 * Not exactly half the pool apart: qemu's software TLB is
		 * direct-mapped, and pages a power of two apart would evict
		 * each other on every access, on both sides alike.
		 */
		u64 src = 0, dst = pool_size / 2 + 5 * PAGE_SIZE;
		struct spread q, te, tr;
		bool met;

		if (size > pool_size / 2 - 5 * PAGE_SIZE) {
			emit("%-8s %6s skipped: pool_mb too small", name,
			     size_names[s]);
			if (!scatter)
				goals_missed++;
			continue;
		}
		n = max_t(u64, 1, div64_u64((u64)mb_per_run << 20, size));
		bytes = n * size;
		for (r = 0; r < reps; r++) {
			/*
			 * Best of @inner each, alternating, so neither always
			 * runs warm or cold, and a preempted vCPU (the host
			 * is shared) spoils no repeat on its own.
			 */
			time_pair(&mmu, scatter, dst, src, size, n, r & 1,
				  &t_engine[r], &t_raw[r]);
			ratio[r] = t_engine[r] ?
				div64_u64(t_raw[r] * 1000, t_engine[r]) : 0;
		}
		q = spread_of(ratio, reps);
		te = spread_of(t_engine, reps);
		tr = spread_of(t_raw, reps);
		emit("%-8s %6s %6llu %8llu %8llu  %s  %s-%s  %s-%s", name,
		     size_names[s], n, mbps(bytes, te.med), mbps(bytes, tr.med),
		     r3(b[0], q.med), r3(b[1], q.q1), r3(b[2], q.q3),
		     r3(b[3], q.min), r3(b[4], q.max));
		if (scatter)
			continue;
		met = q.med >= goal;
		if (met)
			goals_met++;
		else
			goals_missed++;
		/* Parsed by tools/bench/copy-bench: keep the fields. */
		emit("goal %s_%s median %s min %s max %s reps %u >= %s %s",
		     name, size_names[s], r3(b[0], q.med), r3(b[1], q.min),
		     r3(b[2], q.max), reps, r3(b[3], goal),
		     met ? "met" : "MISSED");
	}
out:
	md_mmu_unmap(&mmu, VA_BASE, pool_size);
	md_mmu_fini(&mmu);
	return ret;
}

static int bench_run(void)
{
	u64 pages, i;
	int ret;

	if (!inner)
		inner = 1;
	if (reps < 7 || reps > 101) {
		pr_err("reps=%u: 7 to 101 repeats, for a median and a spread\n",
		       reps);
		return -EINVAL;
	}
	pool_size = (u64)pool_mb << 20;
	pages = pool_size >> PAGE_SHIFT;
	pool = vmalloc(pool_size);
	perm = kvmalloc_array(pages, sizeof(*perm), GFP_KERNEL);
	t_engine = kcalloc(reps, sizeof(u64), GFP_KERNEL);
	t_raw = kcalloc(reps, sizeof(u64), GFP_KERNEL);
	ratio = kcalloc(reps, sizeof(u64), GFP_KERNEL);
	if (!pool || !perm || !t_engine || !t_raw || !ratio) {
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
	emit("pool %u MiB (vmalloc), %u MiB per timed run, %u repeats",
	     pool_mb, mb_per_run, reps);
	emit("a repeat: best of %u timed runs of each side, alternating", inner);
	emit("ratio: memcpy time / engine time of a repeat; median, IQR, min-max");
	emit("%-8s %6s %6s %8s %8s  %5s  %11s  %11s", "workload", "size",
	     "copies", "eng MB/s", "mcp MB/s", "ratio", "IQR", "min-max");
	ret = workload(false);
	if (!ret)
		ret = workload(true);
	if (!ret)
		emit("Goal: contig engine/memcpy median >= 0.900 at 4 KiB, >= 0.970 from 64 KiB up: %u met, %u missed: %s",
		     goals_met, goals_missed,
		     goals_missed ? "NOT MET" : "MET");
out:
	kfree(ratio);
	kfree(t_raw);
	kfree(t_engine);
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
