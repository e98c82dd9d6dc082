// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_bench: alloc+free latency of libmetadef's tiered pools (with and
 * without thread caches) and of its dynamic pool against glibc malloc,
 * jemalloc and mimalloc, on the same size traces, measured in the same
 * run.
 *
 * usage: alloc_bench [-q] [--trace NAME]... [--no-peer P]   (-q: shorter
 *        runs; --trace: only the named traces, in the order of the table
 *        below; --no-peer: act as if jemalloc or mimalloc were missing)
 *
 * Exit status (tools/bench/harness.h): 0 when every goal of issue 17
 * (printed at the end, each a ratio to a peer measured in the same run or
 * an absolute figure, and written to build/bench/results/alloc.tsv) is
 * met; 1 when one is not; 3 when none is missed but a peer a goal needs
 * (jemalloc, mimalloc: tools/deps.sh bench) is missing: that goal is NOT
 * JUDGED and its line says why; 2 usage or setup errors.
 *
 * Traces (seeded, identical for every allocator): request sizes drawn
 * log-uniform from a range; a window of live blocks; each step frees the
 * block in a pseudo-random slot and allocates the next request into it,
 * so every step is one free and one alloc with a realistic working set.
 *
 *   small  64 B .. 64 KiB      256 live   the slab tier (the trace)
 *   tiny   64 B .. 4 KiB       256 live   the slab tier where jemalloc's
 *                                         thread cache serves everything
 *   large  512 B .. 16 MiB      64 live   slab and buddy tiers
 *   buddy  1 MiB .. 16 MiB      64 live   the buddy tier alone
 *   huge   16 MiB .. 256 MiB     4 live   the large tier
 *
 * Timing, so that it is fair to every allocator:
 *   - mean: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time spent
 *     waiting for a core on a busy host is not counted) around whole
 *     passes of the trace (no per-op timer at all), divided by the number
 *     of steps; several rounds, the
 *     allocators interleaved round by round, the median round reported
 *     (the host may be busy);
 *   - percentiles: a separate pass with lfence;rdtsc;lfence around each
 *     alloc and each free; a block's latency is its alloc plus its free,
 *     minus twice the timer's own cost (the median of 10^6 empty timings,
 *     printed), converted with the TSC frequency calibrated against
 *     CLOCK_MONOTONIC. The mean of this pass is not used: the timer
 *     costs more than it measures and a rare preemption dominates it.
 *
 * jemalloc and mimalloc are dlopen()ed (RTLD_LOCAL, jemalloc with
 * RTLD_DEEPBIND: Debian's exports malloc itself), so their symbols never
 * replace glibc's; they are called through the pointers dlsym() gives,
 * as a program calls them through the PLT. libmetadef is linked statically.
 * jemalloc's thread-local data needs static TLS a dlopen()ed library does
 * not get by default: the program re-executes itself once with
 * GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536.
 * The pool runs on the host backend (the kernel module is not needed; its
 * regions would only change where the memory comes from, not the pool's
 * own work) with alignment 64.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/pool.h>

#include "harness.h"
#include "random.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

enum alloc_id { A_MD, A_MD_NOTC, A_DYN, A_GLIBC, A_JE, A_MI, A_COUNT };

static const char *const names[A_COUNT] = {
	[A_MD] = "md pool",
	[A_MD_NOTC] = "md pool, no tcache",
	[A_DYN] = "md dynamic pool",
	[A_GLIBC] = "glibc malloc",
	[A_JE] = "jemalloc",
	[A_MI] = "mimalloc",
};

struct peer {
	void *(*malloc)(size_t);
	void (*free)(void *);
	bool ok;
	char why[200];
};

static struct peer peers[A_COUNT];
static struct md_device *dev;
static struct md_pool *pools[A_COUNT];
static struct md_dynpool *dyn;

union slot {
	struct md_buf b;
	struct md_dynblock d;
	void *p;
};

struct trace {
	const char *name, *range;
	uint64_t lo, hi;
	int window;
	long steps, timed_steps;
	int rounds;
	uint64_t *size;		/* steps + window */
	uint32_t *slot;
};

/* What one allocator did on one trace. */
struct result {
	double mean[16];	/* per round, ns per alloc+free */
	double mean_med;
	struct bench_stats rounds;	/* of mean[] */
	double pct[4];		/* p50, p99, p99.9, max: ns */
};

static double ns_per_tick;
static double tick_overhead;	/* ticks */

static double now(void)
{
	return bench_now() * 1e9;
}

/*
 * The calling thread's CPU time, ns: a pass's mean leaves out the time the
 * thread waited for a core (the bench machine is shared; a wall clock
 * charged whichever allocator was running when the host got busy).
 */
static double cpu_now(void)
{
	return bench_thread_cpu() * 1e9;
}

static inline uint64_t tick(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

static void die(const char *what)
{
	fprintf(stderr, "alloc_bench: %s failed\n", what);
	exit(2);
}

static uint64_t rng;

static uint64_t xs(void)
{
	return md_xorshift64(&rng);
}

static void trace_make(struct trace *t)
{
	double llo = log2((double)t->lo), lhi = log2((double)t->hi);
	long n = t->steps + t->window, i;

	rng = 0x853c49e6748fea9bull ^ t->lo ^ (t->hi << 7);
	t->size = malloc(n * sizeof(*t->size));
	t->slot = malloc(n * sizeof(*t->slot));
	if (!t->size || !t->slot)
		die("malloc");
	for (i = 0; i < n; i++) {
		double u = (double)(xs() >> 11) / (double)(1ull << 53);
		uint64_t s = (uint64_t)exp2(llo + u * (lhi - llo));

		t->size[i] = s < t->lo ? t->lo : s > t->hi ? t->hi : s;
		t->slot[i] = (uint32_t)(xs() % t->window);
	}
}

/* ------------------------------------------------------------ the loops */

static void fill(int a, struct trace *t, union slot *w)
{
	int k;

	for (k = 0; k < t->window; k++) {
		if (a == A_MD || a == A_MD_NOTC) {
			if (md_alloc(pools[a], t->size[k], &w[k].b))
				die("md_alloc");
		} else if (a == A_DYN) {
			if (md_dynpool_alloc(dyn, t->size[k], &w[k].d))
				die("md_dynpool_alloc");
		} else {
			w[k].p = peers[a].malloc(t->size[k]);
			if (!w[k].p)
				die(names[a]);
		}
	}
}

static void drain(int a, struct trace *t, union slot *w)
{
	int k;

	for (k = 0; k < t->window; k++) {
		if (a == A_MD || a == A_MD_NOTC) {
			if (md_free(pools[a], &w[k].b))
				die("md_free");
		} else if (a == A_DYN) {
			if (md_dynpool_free(dyn, &w[k].d))
				die("md_dynpool_free");
		} else {
			peers[a].free(w[k].p);
		}
	}
}

/* Steps [from, to) of @t; returns ns per step. No timer inside. */
static double batch(int a, struct trace *t, union slot *w, long from,
		    long to)
{
	const uint64_t *size = t->size + t->window;
	const uint32_t *slot = t->slot;
	double t0 = cpu_now();
	long i;

	if (a == A_MD || a == A_MD_NOTC) {
		struct md_pool *pool = pools[a];

		for (i = from; i < to; i++) {
			union slot *s = &w[slot[i]];

			if (md_free(pool, &s->b) ||
			    md_alloc(pool, size[i], &s->b))
				die("md pool");
		}
	} else if (a == A_DYN) {
		for (i = from; i < to; i++) {
			union slot *s = &w[slot[i]];

			if (md_dynpool_free(dyn, &s->d) ||
			    md_dynpool_alloc(dyn, size[i], &s->d))
				die("md dynamic pool");
		}
	} else if (a == A_GLIBC) {
		for (i = from; i < to; i++) {
			union slot *s = &w[slot[i]];

			free(s->p);
			s->p = malloc(size[i]);
			if (!s->p)
				die("malloc");
		}
	} else {
		void *(*m)(size_t) = peers[a].malloc;
		void (*f)(void *) = peers[a].free;

		for (i = from; i < to; i++) {
			union slot *s = &w[slot[i]];

			f(s->p);
			s->p = m(size[i]);
			if (!s->p)
				die(names[a]);
		}
	}
	return (cpu_now() - t0) / (double)(to - from);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static inline uint32_t since(uint64_t t0, uint64_t t1)
{
	double d = (double)(t1 - t0) - tick_overhead;

	return d > 0 ? (uint32_t)(d + 0.5) : 0;
}

/* Per-op timing: every block's alloc + free. */
static void timed(int a, struct trace *t, union slot *w, struct result *r)
{
	static const double q[3] = { 0.50, 0.99, 0.999 };
	const uint64_t *size = t->size + t->window;
	long n = t->timed_steps, i;
	uint32_t *acyc = calloc(t->window, sizeof(*acyc));
	uint32_t *samples = malloc(n * sizeof(*samples));
	int j;

	if (!acyc || !samples)
		die("malloc");
	for (i = 0; i < n; i++) {
		union slot *s = &w[t->slot[i]];
		int k = (int)t->slot[i];
		uint64_t t0, t1, t2, t3;

		if (a == A_MD || a == A_MD_NOTC) {
			t0 = tick();
			if (md_free(pools[a], &s->b))
				die("md_free");
			t1 = tick();
			t2 = tick();
			if (md_alloc(pools[a], size[i], &s->b))
				die("md_alloc");
			t3 = tick();
		} else if (a == A_DYN) {
			t0 = tick();
			if (md_dynpool_free(dyn, &s->d))
				die("md_dynpool_free");
			t1 = tick();
			t2 = tick();
			if (md_dynpool_alloc(dyn, size[i], &s->d))
				die("md_dynpool_alloc");
			t3 = tick();
		} else {
			t0 = tick();
			peers[a].free(s->p);
			t1 = tick();
			t2 = tick();
			s->p = peers[a].malloc(size[i]);
			t3 = tick();
			if (!s->p)
				die(names[a]);
		}
		/* The block that went: its alloc, then its free. */
		samples[i] = acyc[k] + since(t0, t1);
		acyc[k] = since(t2, t3);
	}
	qsort(samples, n, sizeof(*samples), cmp_u32);
	for (j = 0; j < 3; j++)
		r->pct[j] = samples[(long)(q[j] * (n - 1))] * ns_per_tick;
	r->pct[3] = samples[n - 1] * ns_per_tick;
	free(samples);
	free(acyc);
}

static void run_trace(struct trace *t, struct result *res, bool *use)
{
	union slot *w = calloc(t->window, sizeof(*w));
	long warm = t->steps / 10;
	int a, r;

	if (!w)
		die("calloc");
	trace_make(t);
	for (r = 0; r < t->rounds; r++) {
		for (a = 0; a < A_COUNT; a++) {
			if (!use[a])
				continue;
			fill(a, t, w);
			batch(a, t, w, 0, warm);
			res[a].mean[r] = batch(a, t, w, 0, t->steps);
			drain(a, t, w);
		}
	}
	for (a = 0; a < A_COUNT; a++) {
		if (!use[a])
			continue;
		if (bench_summarize(res[a].mean, t->rounds, &res[a].rounds))
			die("bench_summarize");
		res[a].mean_med = res[a].rounds.median;
		fill(a, t, w);
		batch(a, t, w, 0, warm);
		timed(a, t, w, &res[a]);
		drain(a, t, w);
	}
	free(w);
	free(t->size);
	free(t->slot);
}

/* ------------------------------------------------------------ setup */

static void load_peer(int a, const char *lib, const char *m, const char *f,
		      int flags)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | flags);

	if (!h) {
		snprintf(peers[a].why, sizeof(peers[a].why), "%s", dlerror());
		return;
	}
	peers[a].malloc = (void *(*)(size_t))dlsym(h, m);
	peers[a].free = (void (*)(void *))dlsym(h, f);
	if (!peers[a].malloc || !peers[a].free) {
		snprintf(peers[a].why, sizeof(peers[a].why),
			 "%s: no %s/%s", lib, m, f);
		return;
	}
	peers[a].ok = true;
}

static void calibrate(void)
{
	uint32_t *d = malloc(1000000 * sizeof(*d));
	double t0, t1;
	uint64_t c0, c1;
	long i;

	if (!d)
		die("malloc");
	t0 = now();
	c0 = tick();
	while (now() - t0 < 200e6)
		;
	c1 = tick();
	t1 = now();
	ns_per_tick = (t1 - t0) / (double)(c1 - c0);
	for (i = 0; i < 1000000; i++) {
		uint64_t a = tick();

		d[i] = (uint32_t)(tick() - a);
	}
	qsort(d, 1000000, sizeof(*d), cmp_u32);
	tick_overhead = d[500000];
	free(d);
}

static void print_trace(const struct trace *t, const struct result *res,
			const bool *use)
{
	double je = use[A_JE] ? res[A_JE].mean_med : 0;
	double mi = use[A_MI] ? res[A_MI].mean_med : 0;
	int a;

	printf("\ntrace %s: %s, log-uniform, %d live blocks, %ld alloc+free "
	       "pairs x %d rounds (mean), %ld timed pairs (percentiles)\n",
	       t->name, t->range, t->window, t->steps, t->rounds,
	       t->timed_steps);
	printf("  %-20s %9s %9s %9s %9s %9s %9s %9s %9s\n", "allocator",
	       "mean ns", "min rnd", "IQR", "p50 ns", "p99 ns", "p99.9 ns",
	       "mean/je", "mean/mi");
	for (a = 0; a < A_COUNT; a++) {
		const struct result *r = &res[a];

		if (!use[a])
			continue;
		printf("  %-20s %9.1f %9.1f %9.1f %9.0f %9.0f %9.0f", names[a],
		       r->mean_med, r->rounds.min, r->rounds.iqr, r->pct[0],
		       r->pct[1], r->pct[2]);
		if (je > 0)
			printf(" %8.2fx", r->mean_med / je);
		else
			printf(" %9s", "-");
		if (mi > 0)
			printf(" %8.2fx", r->mean_med / mi);
		else
			printf(" %9s", "-");
		printf("\n");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------ handoff */

/*
 * What the owner's plain free costs other threads (lib/runtime.md, "The
 * owner's free"): another thread acquires each of TOUCH_BLOCKS blocks
 * this thread allocated (its first write: it takes the block from its
 * owner, a membarrier), then releases each (a compare-exchange only), in
 * a default pool and in an MD_POOL_SHARED_BLOCKS one (no owners: both
 * compare-exchanges). Printed, not a goal.
 */
#define TOUCH_BLOCKS 4096

struct touch {
	struct md_pool *pool;
	struct md_buf *bufs;
	double ns[2];
	int errors;
};

static void *touch_fn(void *arg)
{
	struct touch *t = arg;
	int pass, i;

	for (pass = 0; pass < 2; pass++) {
		double t0 = bench_now();

		for (i = 0; i < TOUCH_BLOCKS; i++)
			if (pass)
				t->errors += md_buf_release(t->pool,
							    &t->bufs[i]) != 1;
			else
				t->errors += md_buf_acquire(t->pool,
							    &t->bufs[i]) != 0;
		t->ns[pass] = (bench_now() - t0) * 1e9 / TOUCH_BLOCKS;
	}
	return NULL;
}

static int handoff(struct md_device *d)
{
	static const char *const what[2] = { "default (owners)",
					      "MD_POOL_SHARED_BLOCKS" };
	struct md_buf *bufs = calloc(TOUCH_BLOCKS, sizeof(*bufs));
	int k, i, err = 0;

	if (!bufs)
		return -ENOMEM;
	printf("\nanother thread's acquire, then release, of %d blocks this "
	       "thread allocated\n(ns each; the acquire is the first write: "
	       "not a goal):\n", TOUCH_BLOCKS);
	printf("  %-24s %12s %12s\n", "pool", "acquire", "release");
	for (k = 0; k < 2 && !err; k++) {
		struct md_pool_config cfg = {
			.flags = k ? MD_POOL_SHARED_BLOCKS : 0 };
		struct touch t = { .bufs = bufs };
		pthread_t th;

		err = md_pool_create(d, &cfg, &t.pool);
		for (i = 0; !err && i < TOUCH_BLOCKS; i++)
			err = md_alloc(t.pool, 256, &bufs[i]);
		if (!err)
			err = -pthread_create(&th, NULL, touch_fn, &t);
		if (!err) {
			pthread_join(th, NULL);
			printf("  %-24s %12.0f %12.0f%s\n", what[k], t.ns[0],
			       t.ns[1], t.errors ? "  (errors!)" : "");
			if (t.errors)
				err = -EIO;
		}
		for (i = 0; t.pool && i < TOUCH_BLOCKS; i++)
			if (bufs[i].block)
				md_free(t.pool, &bufs[i]);
		if (t.pool)
			md_pool_destroy(t.pool);
		memset(bufs, 0, TOUCH_BLOCKS * sizeof(*bufs));
	}
	free(bufs);
	return err;
}

/* ------------------------------------------------------------ goals */

enum { T_SMALL, T_TINY };	/* indexes in main()'s table */

static struct bench harness;
static bool quick_run;		/* -q: said in each goal's case */

/*
 * One goal: @value (a ratio to @need's mean, or an absolute figure when
 * @need is -1) @op @limit. A goal whose peer is missing is NOT JUDGED,
 * with the reason.
 */
static void goal(const char *kase, const char *metric, double value,
		 enum bench_op op, double limit, int need, const bool *use)
{
	char why[300], k[96];

	snprintf(k, sizeof(k), "%s%s", kase, quick_run ? " (-q)" : "");
	kase = k;
	if (need >= 0 && !use[need]) {
		snprintf(why, sizeof(why), "%s is missing (%s; tools/deps.sh "
			 "bench installs it)", names[need], peers[need].why);
		bench_not_judged(&harness, "alloc", kase, metric, names[need],
				 op, limit, why);
		return;
	}
	bench_goal(&harness, "alloc", kase, metric,
		   need >= 0 ? names[need] : "-", value, op, limit);
}

/*
 * The goals of issue 17, on the same run's figures. A goal whose trace did
 * not run (--trace) is said to be skipped; one whose peer is missing is
 * not judged and fails the run: a goal line is never dropped silently.
 */
static void goals(struct result (*res)[A_COUNT], const bool *use,
		  const bool *ran)
{
	const struct result *sm = res[T_SMALL], *ti = res[T_TINY];
	bool small = !ran || ran[T_SMALL], tiny = !ran || ran[T_TINY];

	printf("\ngoals (issue 17), means of the same run:\n");
	if (tiny) {
		goal("tiny 64 B-4 KiB", "md pool mean / peer's",
		     ti[A_MD].mean_med / ti[A_JE].mean_med, BENCH_LE, 1.0,
		     A_JE, use);
		goal("tiny 64 B-4 KiB", "md pool mean / peer's",
		     ti[A_MD].mean_med / ti[A_MI].mean_med, BENCH_LE, 1.5,
		     A_MI, use);
		goal("tiny 64 B-4 KiB", "md dynamic pool, ns per pair",
		     ti[A_DYN].mean_med, BENCH_LE, 120, -1, use);
	} else {
		printf("  tiny: skipped (trace not run)\n");
	}
	if (small) {
		goal("small 64 B-64 KiB", "md pool mean / peer's",
		     sm[A_MD].mean_med / sm[A_JE].mean_med, BENCH_LE, 0.88,
		     A_JE, use);
		goal("small 64 B-64 KiB", "md pool p99.9, ns per pair",
		     sm[A_MD].pct[2], BENCH_LT, 1000, -1, use);
		goal("small 64 B-64 KiB", "md dynamic pool, ns per pair",
		     sm[A_DYN].mean_med, BENCH_LE, 120, -1, use);
	} else {
		printf("  small: skipped (trace not run)\n");
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: alloc_bench [-q] [--trace NAME]... [--no-peer P]\n"
		"alloc+free latency of libmetadef's pools against glibc "
		"malloc, jemalloc and\nmimalloc, on the same size traces in "
		"the same run (make bench-alloc).\n"
		"  -q            shorter runs (a tenth of the steps, "
		"3 rounds)\n"
		"  --trace NAME  only this trace (repeatable): small, tiny, "
		"large, buddy, huge\n"
		"  --no-peer P   act as if P (jemalloc, mimalloc) were not "
		"installed\n"
		"  -h, --help    this text\n"
		"exit status: 0 every goal met (issue 17, printed at the "
		"end), 1 a goal not\nmet, 2 usage or setup error, 3 jemalloc "
		"or mimalloc missing (a goal needs them)\n"
		"results: $BENCH_RESULTS/alloc.tsv (default "
		"build/bench/results)\n");
}

int main(int argc, char **argv)
{
	bool quick = false, pick = false, no_peer[A_COUNT] = { false };
	int hf;
	struct md_device_config dc = { .backend = "host", .align = 64 };
	struct md_pool_config notc = { .flags = MD_POOL_NO_TCACHE };
	struct trace traces[] = {
		{ .name = "small", .range = "64 B .. 64 KiB", .lo = 64,
		  .hi = 64 * KiB, .window = 256, .steps = 2000000,
		  .timed_steps = 1000000, .rounds = 5 },
		{ .name = "tiny", .range = "64 B .. 4 KiB", .lo = 64,
		  .hi = 4 * KiB, .window = 256, .steps = 2000000,
		  .timed_steps = 1000000, .rounds = 5 },
		{ .name = "large", .range = "512 B .. 16 MiB", .lo = 512,
		  .hi = 16 * MiB, .window = 64, .steps = 400000,
		  .timed_steps = 400000, .rounds = 5 },
		{ .name = "buddy", .range = "1 MiB .. 16 MiB", .lo = MiB,
		  .hi = 16 * MiB, .window = 64, .steps = 200000,
		  .timed_steps = 200000, .rounds = 5 },
		{ .name = "huge", .range = "16 MiB .. 256 MiB",
		  .lo = 16 * MiB + 1, .hi = 256 * MiB, .window = 4,
		  .steps = 4000, .timed_steps = 4000, .rounds = 3 },
	};
	enum { NT = sizeof(traces) / sizeof(traces[0]) };
	bool want[NT] = { false };
	static struct result res[NT][A_COUNT];
	bool use[A_COUNT];
	size_t i;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-q")) {
			quick = true;
		} else if (!strcmp(argv[a], "-h") ||
			   !strcmp(argv[a], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[a], "--no-peer")) {
			if (++a == argc || (strcmp(argv[a], "jemalloc") &&
					    strcmp(argv[a], "mimalloc"))) {
				fprintf(stderr, "alloc_bench: --no-peer needs "
					"jemalloc or mimalloc\n");
				return 2;
			}
			no_peer[argv[a][0] == 'j' ? A_JE : A_MI] = true;
		} else if (!strcmp(argv[a], "--trace")) {
			if (++a == argc) {
				fprintf(stderr, "alloc_bench: --trace needs a "
					"name (small, tiny, large, buddy, "
					"huge)\n");
				return 2;
			}
			for (i = 0; i < NT; i++)
				if (!strcmp(argv[a], traces[i].name))
					break;
			if (i == NT) {
				fprintf(stderr, "alloc_bench: no trace '%s' "
					"(small, tiny, large, buddy, huge)\n",
					argv[a]);
				return 2;
			}
			want[i] = pick = true;
		} else {
			fprintf(stderr, "alloc_bench: unknown argument '%s'\n",
				argv[a]);
			usage(stderr);
			return 2;
		}
	}

	/* Room for jemalloc's initial-exec TLS in a dlopen()ed library. */
	if (!getenv("GLIBC_TUNABLES")) {
		setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=65536",
		       1);
		execv("/proc/self/exe", argv);
	}
	quick_run = quick;
	if (quick)
		for (i = 0; i < NT; i++) {
			traces[i].steps /= 10;
			traces[i].timed_steps /= 10;
			traces[i].rounds = 3;
		}
	peers[A_GLIBC] = (struct peer){ malloc, free, true, "" };
	load_peer(A_JE, "libjemalloc.so.2", "malloc", "free", RTLD_DEEPBIND);
	load_peer(A_MI, "libmimalloc.so.2", "mi_malloc", "mi_free", 0);
	for (a = A_JE; a <= A_MI; a++)
		if (no_peer[a]) {
			peers[a].ok = false;
			snprintf(peers[a].why, sizeof(peers[a].why),
				 "left out by --no-peer");
		}
	if (md_device_open(&dc, &dev) ||
	    md_pool_create(dev, NULL, &pools[A_MD]) ||
	    md_pool_create(dev, &notc, &pools[A_MD_NOTC]) ||
	    md_dynpool_create(dev, NULL, &dyn))
		die("md pool setup");
	for (a = 0; a < A_COUNT; a++)
		use[a] = a == A_MD || a == A_MD_NOTC || a == A_DYN ||
			 peers[a].ok;

	if (bench_open(&harness, "alloc", NULL))
		return 2;
	calibrate();
	printf("alloc_bench: alloc+free latency, one thread, each allocator on "
	       "the same traces in the same run\n");
	printf("  md pool: libmetadef tiered pool on the %s backend, alignment "
	       "%" PRIu64 "; 'no tcache': the same without per-thread caches\n",
	       md_device_backend(dev), md_pool_align(pools[A_MD]));
	printf("  md dynamic pool: one growing reservation, best fit from "
	       "size bins and a red-black tree, coalescing (dynpool.h), "
	       "one mutex\n");
	for (a = A_JE; a <= A_MI; a++)
		if (!peers[a].ok)
			printf("  %s: not measured (%s; tools/deps.sh bench "
			       "installs it)\n", names[a], peers[a].why);
	printf("  mean: the thread's CPU time around whole passes, no per-op timer; "
	       "the median of the rounds (allocators interleaved per round)\n");
	printf("  percentiles: lfence;rdtsc;lfence around each alloc and "
	       "free, a block's alloc + free; timer overhead %.1f ns per "
	       "timing (median of 10^6, subtracted); TSC %.3f GHz\n",
	       tick_overhead * ns_per_tick, 1.0 / ns_per_tick);

	for (i = 0; i < NT; i++) {
		if (pick && !want[i])
			continue;
		run_trace(&traces[i], res[i], use);
		print_trace(&traces[i], res[i], use);
	}

	hf = handoff(dev);
	if (hf)
		fprintf(stderr, "alloc_bench: the handoff measurement "
			"failed: %s\n", strerror(-hf));
	goals(res, use, pick ? want : NULL);
	md_dynpool_destroy(dyn);
	md_pool_destroy(pools[A_MD]);
	md_pool_destroy(pools[A_MD_NOTC]);
	md_device_close(dev);
	if (hf)
		return 2;
	return bench_exit(&harness);
}
