// SPDX-License-Identifier: GPL-2.0
/*
 * md_buddy_bench: metadef's buddy allocator (kmod/buddy.c, compiled into
 * this module) against the kernel's drm_buddy on identical workloads, in
 * the same kernel, one after the other.
 *
 * Every operation is a single contiguous, naturally aligned block of
 * 4 KiB << order:
 *   alloc  md_buddy_alloc(size, align 0 = chunk, no flags)
 *          drm_buddy_alloc_blocks(0, pool size, size, min_page_size = size)
 *          (a power-of-two size with min_page_size = size makes drm_buddy
 *          return exactly one block of that order)
 *   free   md_buddy_free() / drm_buddy_free_list() of that one block
 * Both allocators are driven by the same pregenerated pseudo-random
 * schedule (same seed); after each workload their free byte counts must
 * agree, which shows that both did the same work.
 *
 * Workloads (sizes: order uniform in 0..max_order, i.e. 4 KiB..1 MiB):
 *   pairs   allocate a block and free it at once
 *   mixed   random slots out of mixed_slots: an empty slot is filled with
 *           a new block, a live one is freed
 *   ws      working set: ws_blocks live blocks allocated one by one
 *           (ws-fill), then ws_churn times: free a random live block and
 *           allocate a new one in its place (ws-churn)
 * pairs and mixed run on a fresh pool and on one whose lower frag_mb were
 * first filled with 4 KiB blocks of which every other one was freed again
 * (frag50: 50 % of that part free, all of it in isolated 4 KiB holes).
 *
 * Two passes per workload and allocator: a throughput pass timing the whole
 * loop (best of reps runs), and a latency pass timing every operation with
 * ktime_get_ns() (percentiles of the sorted per-op times).
 *
 * Use: echo 1 >/sys/kernel/debug/md_buddy_bench/run (blocks until done),
 * then cat /sys/kernel/debug/md_buddy_bench/results; the table also goes to
 * the kernel log. Or load with run_on_load=1. Parameters are writable in
 * /sys/module/md_buddy_bench/parameters/ between runs.
 */
#define pr_fmt(fmt) "md_buddy_bench: " fmt

#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>

#include <drm/drm_buddy.h>

#include "buddy.h"

#define CHUNK		SZ_4K

static ulong seed = 1;
module_param(seed, ulong, 0644);
MODULE_PARM_DESC(seed, "seed of the pseudo-random schedules");
static uint reps = 3;
module_param(reps, uint, 0644);
MODULE_PARM_DESC(reps, "throughput runs per workload and allocator (best counts)");
static uint max_order = 8;
module_param(max_order, uint, 0644);
MODULE_PARM_DESC(max_order, "largest block: 4 KiB << max_order");
static uint pool_mb = 1024;
module_param(pool_mb, uint, 0644);
MODULE_PARM_DESC(pool_mb, "pool of the pairs and mixed workloads, MiB");
static uint frag_mb = 512;
module_param(frag_mb, uint, 0644);
MODULE_PARM_DESC(frag_mb, "part of that pool fragmented to 50 % for frag50, MiB");
static uint pairs = 5000;
module_param(pairs, uint, 0644);
MODULE_PARM_DESC(pairs, "alloc+free pairs of the pairs workload");
static uint mixed_steps = 10000;
module_param(mixed_steps, uint, 0644);
MODULE_PARM_DESC(mixed_steps, "operations of the mixed workload");
static uint mixed_slots = 256;
module_param(mixed_slots, uint, 0644);
MODULE_PARM_DESC(mixed_slots, "slots of the mixed workload (at most that many live)");
static uint ws_pool_gb = 64;
module_param(ws_pool_gb, uint, 0644);
MODULE_PARM_DESC(ws_pool_gb, "pool of the working-set workload, GiB");
static uint ws_blocks = 100000;
module_param(ws_blocks, uint, 0644);
MODULE_PARM_DESC(ws_blocks, "live blocks of the working-set workload");
static uint ws_churn = 10000;
module_param(ws_churn, uint, 0644);
MODULE_PARM_DESC(ws_churn, "free+alloc replacements in the working set");
static uint workloads = 7;
module_param(workloads, uint, 0644);
MODULE_PARM_DESC(workloads, "mask of workloads to run: 1 pairs, 2 mixed, 4 ws");
static uint pools = 3;
module_param(pools, uint, 0644);
MODULE_PARM_DESC(pools, "mask of pools for pairs and mixed: 1 fresh, 2 frag50");
static uint allocators = 3;
module_param(allocators, uint, 0644);
MODULE_PARM_DESC(allocators, "mask of allocators: 1 metadef, 2 drm_buddy (for profiling)");
static bool run_on_load;
module_param(run_on_load, bool, 0444);
MODULE_PARM_DESC(run_on_load, "run once from module init (results in the log)");

enum { A_MD, A_DRM, NR_ALLOC };
static const char *const alloc_name[NR_ALLOC] = { "metadef", "drm_buddy" };

enum { OP_ALLOC, OP_FREE, NR_OP };
static const char *const op_name[NR_OP] = { "alloc", "free" };

enum {
	C_PAIRS_FRESH, C_PAIRS_FRAG, C_MIXED_FRESH, C_MIXED_FRAG,
	C_WS_FILL, C_WS_CHURN, NR_CASE
};
static const char *const wl_name[NR_CASE] = {
	"pairs  fresh", "pairs  frag50", "mixed  fresh", "mixed  frag50",
	"ws-fill", "ws-churn",
};

struct lat {
	u64 n, mean, p50, p99, p999;
};

struct result {
	u64 ops;		/* successful operations of one throughput run */
	u64 ns;			/* best throughput run */
	u64 fails;		/* allocations that found no space */
	u64 avail;		/* free bytes after the workload */
	struct lat lat[NR_OP];
};

static struct result res[NR_CASE][NR_ALLOC];

/* ------------------------------------------------ the two allocators */

struct ba {
	int kind;
	u64 size;
	struct md_buddy *md;
	struct drm_buddy drm;
	struct md_buddy_alloc *mds;	/* slots of metadef */
	struct list_head *drms;		/* slots of drm_buddy: block lists */
	u32 nslots;
};

static __always_inline bool ba_live(struct ba *ba, u32 i)
{
	if (ba->kind == A_MD)
		return ba->mds[i].live;
	return !list_empty(&ba->drms[i]);
}

static __always_inline u64 ba_offset(struct ba *ba, u32 i)
{
	if (ba->kind == A_MD)
		return ba->mds[i].offset;
	return drm_buddy_block_offset(list_first_entry(&ba->drms[i],
						       struct drm_buddy_block,
						       link));
}

static __always_inline int ba_alloc(struct ba *ba, u32 i, unsigned int order)
{
	u64 size = (u64)CHUNK << order;

	if (ba->kind == A_MD)
		return md_buddy_alloc(ba->md, &ba->mds[i], size, 0, 0, 0, 0,
				      GFP_KERNEL);
	return drm_buddy_alloc_blocks(&ba->drm, 0, ba->size, size, size,
				      &ba->drms[i], 0);
}

/* One chunk at @offset (to fragment a pool): a window with one place. */
static int ba_alloc_at(struct ba *ba, u32 i, u64 offset)
{
	if (ba->kind == A_MD)
		return md_buddy_alloc(ba->md, &ba->mds[i], CHUNK, 0, offset,
				      offset + CHUNK, MD_BUDDY_RANGE, GFP_KERNEL);
	return drm_buddy_alloc_blocks(&ba->drm, offset, offset + CHUNK, CHUNK,
				      CHUNK, &ba->drms[i], 0);
}

static __always_inline void ba_free(struct ba *ba, u32 i)
{
	if (ba->kind == A_MD)
		md_buddy_free(ba->md, &ba->mds[i]);
	else
		drm_buddy_free_list(&ba->drm, &ba->drms[i]);
}

static u64 ba_avail(struct ba *ba)
{
	return ba->kind == A_MD ? ba->md->avail : ba->drm.avail;
}

static int ba_init(struct ba *ba, u64 size)
{
	ba->size = size;
	if (ba->kind == A_MD)
		return md_buddy_init(ba->md, size, CHUNK);
	return drm_buddy_init(&ba->drm, size, CHUNK);
}

struct live {
	u64 offset;
	u32 slot;
};

static struct live *drain_buf;

static int live_cmp(const void *a, const void *b)
{
	const struct live *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * Free every live slot in ascending offset order (untimed): drm_buddy's
 * sorted free-list insertion then stays short, so tearing down does not
 * dominate the run time. Then check that all of the pool came back.
 */
static int ba_fini(struct ba *ba)
{
	u32 i, n = 0;
	int ret = 0;

	for (i = 0; i < ba->nslots; i++)
		if (ba_live(ba, i))
			drain_buf[n++] = (struct live){ ba_offset(ba, i), i };
	sort(drain_buf, n, sizeof(*drain_buf), live_cmp, NULL);
	for (i = 0; i < n; i++) {
		ba_free(ba, drain_buf[i].slot);
		if (!(i & 1023))
			cond_resched();
	}
	if (ba_avail(ba) != ba->size) {
		pr_err("%s: %llu of %llu bytes free after draining\n",
		       alloc_name[ba->kind], ba_avail(ba), ba->size);
		ret = -EUCLEAN;
	}
	if (ba->kind == A_MD) {
		if (md_buddy_check(ba->md))
			ret = -EUCLEAN;
		md_buddy_fini(ba->md);
	} else {
		drm_buddy_fini(&ba->drm);
	}
	return ret;
}

/*
 * Fill [0, bytes) with single chunks, then free every other one, highest
 * first (drm_buddy then inserts each hole at the head of its sorted list).
 * Uses slots [0, bytes / CHUNK).
 */
static int ba_fragment(struct ba *ba, u64 bytes)
{
	u32 n = bytes / CHUNK, i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = ba_alloc_at(ba, i, (u64)i * CHUNK);
		if (ret)
			return ret;
		if (!(i & 1023))
			cond_resched();
	}
	for (i = n; i-- > 0;)
		if (i & 1)
			ba_free(ba, i);
	return 0;
}

/* ----------------------------------------------------------- schedules */

struct sched {
	u32 n;
	u8 *order;
	u32 *slot;
};

static u64 rng_state;

/* xorshift64*: small, fast, reproducible from the seed. */
static u64 rng_next(void)
{
	u64 x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static u32 rng_below(u32 n)
{
	return mul_u64_u32_shr(rng_next() >> 32, n, 32);
}

static void rng_seed(u64 s, u64 stream)
{
	rng_state = (s ^ (stream * 0x9E3779B97F4A7C15ULL)) | 1;
	rng_next();
}

static void sched_free(struct sched *s)
{
	vfree(s->order);
	vfree(s->slot);
	s->order = NULL;
	s->slot = NULL;
}

static int sched_make(struct sched *s, u32 n, u32 slots, u64 stream)
{
	u32 i;

	s->n = n;
	s->order = vmalloc(max(n, 1u));
	s->slot = slots ? vmalloc(array_size(max(n, 1u), sizeof(u32))) : NULL;
	if (!s->order || (slots && !s->slot)) {
		sched_free(s);
		return -ENOMEM;
	}
	rng_seed(seed, stream);
	for (i = 0; i < n; i++) {
		s->order[i] = rng_below(max_order + 1);
		if (slots)
			s->slot[i] = rng_below(slots);
	}
	return 0;
}

/* --------------------------------------------------------------- runs */

struct rec {
	u32 *lat[NR_OP];
	u32 n[NR_OP];
	u64 ops, fails;
};

static __always_inline void rec_op(struct rec *r, int op, bool timed,
				   u64 t0)
{
	r->ops++;
	if (timed)
		r->lat[op][r->n[op]++] = min_t(u64, ktime_get_ns() - t0, U32_MAX);
}

static __always_inline u64 now_if(bool timed)
{
	return timed ? ktime_get_ns() : 0;
}

static __always_inline int do_alloc(struct ba *ba, struct rec *r, u32 i,
				    unsigned int order, bool timed)
{
	u64 t0 = now_if(timed);
	int ret = ba_alloc(ba, i, order);

	if (!ret) {
		rec_op(r, OP_ALLOC, timed, t0);
		return 0;
	}
	if (ret != -ENOSPC)
		return ret;
	r->fails++;
	return 0;
}

static __always_inline void do_free(struct ba *ba, struct rec *r, u32 i,
				    bool timed)
{
	u64 t0 = now_if(timed);

	ba_free(ba, i);
	rec_op(r, OP_FREE, timed, t0);
}

static __always_inline int loop_pairs(struct ba *ba, struct rec *r,
				      const struct sched *s, u32 base,
				      bool timed)
{
	u32 k;
	int ret;

	for (k = 0; k < s->n; k++) {
		ret = do_alloc(ba, r, base, s->order[k], timed);
		if (ret)
			return ret;
		if (ba_live(ba, base))
			do_free(ba, r, base, timed);
		if (!(k & 255))
			cond_resched();
	}
	return 0;
}

static __always_inline int loop_mixed(struct ba *ba, struct rec *r,
				      const struct sched *s, u32 base,
				      bool timed)
{
	u32 k;
	int ret;

	for (k = 0; k < s->n; k++) {
		u32 i = base + s->slot[k];

		if (ba_live(ba, i)) {
			do_free(ba, r, i, timed);
		} else {
			ret = do_alloc(ba, r, i, s->order[k], timed);
			if (ret)
				return ret;
		}
		if (!(k & 255))
			cond_resched();
	}
	return 0;
}

static __always_inline int loop_fill(struct ba *ba, struct rec *r,
				     const struct sched *s, u32 base,
				     bool timed)
{
	u32 k;
	int ret;

	for (k = 0; k < s->n; k++) {
		ret = do_alloc(ba, r, base + k, s->order[k], timed);
		if (ret)
			return ret;
		if (!(k & 255))
			cond_resched();
	}
	return 0;
}

static __always_inline int loop_churn(struct ba *ba, struct rec *r,
				      const struct sched *s, u32 base,
				      bool timed)
{
	u32 k;
	int ret;

	for (k = 0; k < s->n; k++) {
		u32 i = base + s->slot[k];

		if (ba_live(ba, i))
			do_free(ba, r, i, timed);
		ret = do_alloc(ba, r, i, s->order[k], timed);
		if (ret)
			return ret;
		if (!(k & 255))
			cond_resched();
	}
	return 0;
}

enum { L_PAIRS, L_MIXED, L_FILL, L_CHURN };

/* Timed and untimed copies of each loop, so the untimed one has no timer. */
static noinline int run_loop(int loop, struct ba *ba, struct rec *r,
			     const struct sched *s, u32 base, bool timed)
{
	switch (loop) {
	case L_PAIRS:
		return timed ? loop_pairs(ba, r, s, base, true) :
			       loop_pairs(ba, r, s, base, false);
	case L_MIXED:
		return timed ? loop_mixed(ba, r, s, base, true) :
			       loop_mixed(ba, r, s, base, false);
	case L_FILL:
		return timed ? loop_fill(ba, r, s, base, true) :
			       loop_fill(ba, r, s, base, false);
	default:
		return timed ? loop_churn(ba, r, s, base, true) :
			       loop_churn(ba, r, s, base, false);
	}
}

static int u32_cmp(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static void lat_summarise(struct lat *l, u32 *v, u32 n)
{
	u64 sum = 0;
	u32 i;

	memset(l, 0, sizeof(*l));
	if (!n)
		return;
	sort(v, n, sizeof(*v), u32_cmp, NULL);
	for (i = 0; i < n; i++)
		sum += v[i];
	l->n = n;
	l->mean = div_u64(sum, n);
	l->p50 = v[div_u64((u64)(n - 1) * 500, 1000)];
	l->p99 = v[div_u64((u64)(n - 1) * 990, 1000)];
	l->p999 = v[div_u64((u64)(n - 1) * 999, 1000)];
}

/* Scratch for per-op latencies, big enough for the largest phase. */
static u32 *lat_buf[NR_OP];
static u32 lat_cap;

static void rec_reset(struct rec *r, bool timed)
{
	int op;

	memset(r, 0, sizeof(*r));
	for (op = 0; op < NR_OP; op++)
		r->lat[op] = timed ? lat_buf[op] : NULL;
}

/* Store what one phase measured into res[c][kind]. */
static void rec_store(struct rec *r, int c, int kind, bool timed, u64 ns,
		      u64 avail)
{
	struct result *x = &res[c][kind];
	int op;

	if (timed) {
		for (op = 0; op < NR_OP; op++)
			lat_summarise(&x->lat[op], r->lat[op], r->n[op]);
		return;
	}
	if (!x->ns || ns < x->ns)
		x->ns = ns;
	x->ops = r->ops;
	x->fails = r->fails;
	x->avail = avail;
}

/*
 * One run of a pairs or mixed workload: set the pool up (fresh or frag50),
 * run, store into case @c, tear down.
 */
static int run_simple(struct ba *ba, int c, int loop, const struct sched *s,
		      bool frag, bool timed)
{
	u32 base = ((u64)frag_mb << 20) / CHUNK;
	struct rec r;
	u64 t0, t1;
	int ret, ret2;

	ret = ba_init(ba, (u64)pool_mb << 20);
	if (ret)
		return ret;
	if (frag)
		ret = ba_fragment(ba, (u64)frag_mb << 20);
	if (!ret) {
		rec_reset(&r, timed);
		t0 = ktime_get_ns();
		ret = run_loop(loop, ba, &r, s, base, timed);
		t1 = ktime_get_ns();
		if (!ret)
			rec_store(&r, c, ba->kind, timed, t1 - t0,
				  ba_avail(ba));
	}
	ret2 = ba_fini(ba);
	return ret ?: ret2;
}

static int run_ws(struct ba *ba, const struct sched *fill,
		  const struct sched *churn, bool timed)
{
	struct rec r;
	u64 t0, t1;
	int ret, ret2;

	ret = ba_init(ba, (u64)ws_pool_gb << 30);
	if (ret)
		return ret;
	rec_reset(&r, timed);
	t0 = ktime_get_ns();
	ret = run_loop(L_FILL, ba, &r, fill, 0, timed);
	t1 = ktime_get_ns();
	if (ret)
		goto out;
	rec_store(&r, C_WS_FILL, ba->kind, timed, t1 - t0, ba_avail(ba));

	rec_reset(&r, timed);
	t0 = ktime_get_ns();
	ret = run_loop(L_CHURN, ba, &r, churn, 0, timed);
	t1 = ktime_get_ns();
	if (!ret)
		rec_store(&r, C_WS_CHURN, ba->kind, timed, t1 - t0,
			  ba_avail(ba));
out:
	ret2 = ba_fini(ba);
	return ret ?: ret2;
}

/* ------------------------------------------------------------- output */

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
	if (out_buf)
		out_len += scnprintf(out_buf + out_len, out_cap - out_len,
				     "%s\n", line);
}

/* a / b with two decimals, into @buf. */
static const char *ratio(char *buf, size_t n, u64 a, u64 b)
{
	u64 r;

	if (!b) {
		strscpy(buf, "-", n);
		return buf;
	}
	r = div64_u64(a * 100 + b / 2, b);
	scnprintf(buf, n, "%llu.%02llu", r / 100, r % 100);
	return buf;
}

static u64 ops_per_sec(const struct result *x)
{
	return x->ns ? div64_u64(x->ops * NSEC_PER_SEC, x->ns) : 0;
}

static u64 timer_overhead(void)
{
	static u32 d[2001];
	u32 i;

	for (i = 0; i < ARRAY_SIZE(d); i++) {
		u64 t0 = ktime_get_ns();

		d[i] = ktime_get_ns() - t0;
	}
	sort(d, ARRAY_SIZE(d), sizeof(d[0]), u32_cmp, NULL);
	return d[ARRAY_SIZE(d) / 2];
}

static void report(u64 overhead, u64 elapsed)
{
	static const int frag_pairs[][2] = {
		{ C_PAIRS_FRESH, C_PAIRS_FRAG }, { C_MIXED_FRESH, C_MIXED_FRAG },
	};
	static const char *const verdict[] = { "NOT met", "met" };
	static const char blank[] = "";
	u32 holes = ((u64)frag_mb << 20) / CHUNK / 2;
	char r1[24], r2[24], r3[24], r4[24], r5[24];
	u64 min_ratio = U64_MAX;
	bool equal = true, frag_ok = true;
	int c, a, op, i;

	emit("metadef buddy (kmod/buddy.c) vs drm_buddy, Linux %s, same VM, one after the other",
	     init_utsname()->release);
	emit("seed %lu; chunk 4 KiB; sizes 4 KiB << order, order uniform in 0..%u; timer read %llu ns (included in latencies)",
	     seed, max_order, overhead);
	emit("alloc = md_buddy_alloc(size, align chunk) | drm_buddy_alloc_blocks(0, pool, size, min_page_size = size): one contiguous block");
	emit("free  = md_buddy_free() | drm_buddy_free_list() of that block");
	emit("pairs : %u x (alloc, free at once), %u MiB pool", pairs, pool_mb);
	emit("mixed : %u ops on %u random slots: empty slot -> alloc, live slot -> free, %u MiB pool",
	     mixed_steps, mixed_slots, pool_mb);
	emit("frag50: before the workload the pool's lower %u MiB is filled with 4 KiB blocks and every other one freed (%u isolated 4 KiB holes)",
	     frag_mb, holes);
	emit("ws    : fill = %u allocs (10^5-block working set) in a %u GiB pool; churn = %u x (free a random live block, alloc a new one)",
	     ws_blocks, ws_pool_gb, ws_churn);
	emit("%s", "");

	emit("Throughput (alloc+free ops per second, best of %u runs; ratio > 1: metadef faster)",
	     reps);
	emit("%-14s %8s %12s %12s %8s  %s", "workload", "ops", "metadef/s",
	     "drm_buddy/s", "md/drm", "goal >= 2x");
	for (c = 0; c < NR_CASE; c++) {
		struct result *m = &res[c][A_MD], *d = &res[c][A_DRM];
		u64 mo = ops_per_sec(m), dr = ops_per_sec(d);
		u64 q = dr ? div64_u64(mo * 100, dr) : 0;

		if (!mo || !dr)
			continue;
		min_ratio = min(min_ratio, q);
		emit("%-14s %8llu %12llu %12llu %8s  %s", wl_name[c], m->ops,
		     mo, dr, ratio(r1, sizeof(r1), mo, dr),
		     verdict[q >= 200]);
		if (m->avail != d->avail || m->ops != d->ops) {
			equal = false;
			emit("  !! work differs: metadef %llu ops, %llu bytes free; drm_buddy %llu ops, %llu bytes free",
			     m->ops, m->avail, d->ops, d->avail);
		}
		if (m->fails || d->fails)
			emit("  (allocations without space: metadef %llu, drm_buddy %llu)",
			     m->fails, d->fails);
	}
	emit("%s", "");

	emit("Fragmentation (frag50 / fresh throughput; goal: metadef >= 1.00 = no slowdown, 0.95 tolerated as noise)");
	emit("%-10s %8s %8s", "allocator", "pairs", "mixed");
	for (a = 0; a < NR_ALLOC; a++) {
		u64 q[2];

		for (i = 0; i < 2; i++)
			q[i] = ops_per_sec(&res[frag_pairs[i][0]][a]);
		emit("%-10s %8s %8s", alloc_name[a],
		     ratio(r1, sizeof(r1), ops_per_sec(&res[frag_pairs[0][1]][a]), q[0]),
		     ratio(r2, sizeof(r2), ops_per_sec(&res[frag_pairs[1][1]][a]), q[1]));
		/* Within 5 %: the run-to-run noise of TCG timings here. */
		if (a == A_MD)
			for (i = 0; i < 2; i++)
				if (ops_per_sec(&res[frag_pairs[i][1]][a]) * 100 <
				    q[i] * 95)
					frag_ok = false;
	}
	emit("%s", "");

	emit("Latency per operation, ns (md/drm < 1: metadef faster)");
	emit("%-14s %-5s %-9s %8s %8s %8s %8s %8s", "workload", "op",
	     "allocator", "n", "mean", "p50", "p99", "p99.9");
	for (c = 0; c < NR_CASE; c++) {
		for (op = 0; op < NR_OP; op++) {
			struct lat *m = &res[c][A_MD].lat[op];
			struct lat *d = &res[c][A_DRM].lat[op];

			if (!m->n && !d->n)
				continue;
			for (a = 0; a < NR_ALLOC; a++) {
				struct lat *l = &res[c][a].lat[op];

				emit("%-14s %-5s %-9s %8llu %8llu %8llu %8llu %8llu",
				     a ? blank : wl_name[c], a ? blank : op_name[op],
				     alloc_name[a], l->n, l->mean, l->p50,
				     l->p99, l->p999);
			}
			emit("%-14s %-5s %-9s %8s %8s %8s %8s %8s", "", "",
			     "md/drm", "",
			     ratio(r1, sizeof(r1), m->mean, d->mean),
			     ratio(r2, sizeof(r2), m->p50, d->p50),
			     ratio(r3, sizeof(r3), m->p99, d->p99),
			     ratio(r4, sizeof(r4), m->p999, d->p999));
		}
	}
	emit("%s", "");
	if (min_ratio == U64_MAX)
		min_ratio = 0;
	emit("Goals: throughput >= 2x drm_buddy on every workload: %s (lowest md/drm %s)",
	     min_ratio >= 200 ? "MET" : "NOT MET",
	     ratio(r5, sizeof(r5), min_ratio, 100));
	emit("       no slowdown at 50 %% fragmentation (metadef frag50/fresh >= 0.95): %s",
	     frag_ok ? "MET" : "NOT MET");
	emit("       equivalent work (same op counts and free bytes after each workload): %s",
	     equal ? "yes" : "NO");
	emit("bench time %llu ms", div_u64(elapsed, NSEC_PER_MSEC));
}

/* ---------------------------------------------------------------- run */

static struct ba bas[NR_ALLOC];

static void ba_release(void)
{
	int a;

	for (a = 0; a < NR_ALLOC; a++) {
		kfree(bas[a].md);
		vfree(bas[a].mds);
		vfree(bas[a].drms);
		memset(&bas[a], 0, sizeof(bas[a]));
	}
	vfree(drain_buf);
	drain_buf = NULL;
	for (a = 0; a < NR_OP; a++) {
		vfree(lat_buf[a]);
		lat_buf[a] = NULL;
	}
}

static int ba_prepare(u32 nslots)
{
	u32 i;
	int a;

	for (a = 0; a < NR_ALLOC; a++) {
		struct ba *ba = &bas[a];

		ba->kind = a;
		ba->nslots = nslots;
		if (a == A_MD) {
			ba->md = kzalloc(sizeof(*ba->md), GFP_KERNEL);
			ba->mds = vzalloc(array_size(nslots, sizeof(*ba->mds)));
			if (!ba->md || !ba->mds)
				return -ENOMEM;
		} else {
			ba->drms = vmalloc(array_size(nslots, sizeof(*ba->drms)));
			if (!ba->drms)
				return -ENOMEM;
			for (i = 0; i < nslots; i++)
				INIT_LIST_HEAD(&ba->drms[i]);
		}
	}
	drain_buf = vmalloc(array_size(nslots, sizeof(*drain_buf)));
	if (!drain_buf)
		return -ENOMEM;
	lat_cap = max3(pairs, mixed_steps, max(ws_blocks, ws_churn));
	for (a = 0; a < NR_OP; a++) {
		lat_buf[a] = vmalloc(array_size(lat_cap, sizeof(u32)));
		if (!lat_buf[a])
			return -ENOMEM;
	}
	return 0;
}

static int bench_params_ok(void)
{
	if (max_order > 20 || !reps || !pool_mb || frag_mb >= pool_mb ||
	    ((u64)pool_mb << 20) - ((u64)frag_mb << 20) < ((u64)CHUNK << max_order) ||
	    !mixed_slots || !ws_blocks || !ws_pool_gb || ws_pool_gb > 1024 ||
	    pairs > 10000000 || mixed_steps > 10000000 ||
	    ws_blocks > 10000000 || ws_churn > 10000000) {
		pr_err("parameters out of range\n");
		return -EINVAL;
	}
	return 0;
}

static int bench_run(void)
{
	static const struct {
		int c, loop;
		bool frag;
	} simple[] = {
		{ C_PAIRS_FRESH, L_PAIRS, false }, { C_PAIRS_FRAG, L_PAIRS, true },
		{ C_MIXED_FRESH, L_MIXED, false }, { C_MIXED_FRAG, L_MIXED, true },
	};
	struct sched s_pairs = {}, s_mixed = {}, s_fill = {}, s_churn = {};
	u32 frag_slots = ((u64)frag_mb << 20) / CHUNK;
	u64 start = ktime_get_ns(), overhead;
	int ret, a, w;
	uint rep;

	ret = bench_params_ok();
	if (ret)
		return ret;
	memset(res, 0, sizeof(res));
	out_len = 0;
	if (out_buf)
		out_buf[0] = '\0';

	ret = ba_prepare(max(frag_slots + mixed_slots, ws_blocks));
	if (ret)
		goto out;
	ret = sched_make(&s_pairs, pairs, 0, 1) ?:
	      sched_make(&s_mixed, mixed_steps, mixed_slots, 2) ?:
	      sched_make(&s_fill, ws_blocks, 0, 3) ?:
	      sched_make(&s_churn, ws_churn, ws_blocks, 4);
	if (ret)
		goto out;
	overhead = timer_overhead();

	/*
	 * Rounds: reps throughput runs, then one timed run. Every round runs
	 * every workload on both allocators, so that slow phases of a loaded
	 * host hit all of them alike.
	 */
	for (rep = 0; rep <= reps; rep++) {
		pr_info("round %u of %u\n", rep + 1, reps + 1);
		for (w = 0; w < ARRAY_SIZE(simple); w++) {
			const struct sched *s = simple[w].loop == L_PAIRS ?
						&s_pairs : &s_mixed;

			if (!(workloads & (simple[w].loop == L_PAIRS ? 1 : 2)) ||
			    !(pools & (simple[w].frag ? 2 : 1)))
				continue;
			for (a = 0; a < NR_ALLOC; a++) {
				if (!(allocators & BIT(a)))
					continue;
				ret = run_simple(&bas[a], simple[w].c,
						 simple[w].loop, s,
						 simple[w].frag, rep == reps);
				if (ret)
					goto fail;
			}
		}
		for (a = 0; a < NR_ALLOC && (workloads & 4); a++) {
			if (!(allocators & BIT(a)))
				continue;
			ret = run_ws(&bas[a], &s_fill, &s_churn, rep == reps);
			if (ret)
				goto fail;
		}
	}
	report(overhead, ktime_get_ns() - start);
	goto out;
fail:
	pr_err("%s failed: %d\n", alloc_name[a], ret);
out:
	sched_free(&s_pairs);
	sched_free(&s_mixed);
	sched_free(&s_fill);
	sched_free(&s_churn);
	ba_release();
	return ret;
}

/* ------------------------------------------------------------ debugfs */

static DEFINE_MUTEX(bench_lock);
static struct dentry *bench_dir;

static ssize_t run_write(struct file *file, const char __user *ubuf,
			 size_t count, loff_t *ppos)
{
	int ret;

	mutex_lock(&bench_lock);
	ret = bench_run();
	mutex_unlock(&bench_lock);
	return ret ?: count;
}

static ssize_t results_read(struct file *file, char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&bench_lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, out_buf, out_len);
	mutex_unlock(&bench_lock);
	return ret;
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.write = run_write,
	.llseek = noop_llseek,
};

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = default_llseek,
};

static int __init bench_init(void)
{
	out_cap = SZ_64K;
	out_buf = kzalloc(out_cap, GFP_KERNEL);
	if (!out_buf)
		return -ENOMEM;
	bench_dir = debugfs_create_dir("md_buddy_bench", NULL);
	debugfs_create_file("run", 0200, bench_dir, NULL, &run_fops);
	debugfs_create_file("results", 0400, bench_dir, NULL, &results_fops);
	if (run_on_load) {
		mutex_lock(&bench_lock);
		bench_run();
		mutex_unlock(&bench_lock);
	}
	return 0;
}

static void __exit bench_exit(void)
{
	debugfs_remove_recursive(bench_dir);
	kfree(out_buf);
}

module_init(bench_init);
module_exit(bench_exit);

MODULE_DESCRIPTION("metadef buddy allocator vs drm_buddy benchmark");
MODULE_LICENSE("GPL");
