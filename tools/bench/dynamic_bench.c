// SPDX-License-Identifier: GPL-2.0
/*
 * dynamic_bench: dynamic shapes. A detection-like network (a YOLO-style
 * backbone, FPN/PAN neck, three heads, decode and NMS; fp16 activations)
 * runs on images of varying resolution; every request allocates its
 * tensors and convolution workspaces in model order and frees each after
 * its last use. The same trace is served, in the same run, by:
 *
 *   dynpool          the dynamic pool (include/metadef/dynpool.h), no
 *                    initial reservation: it learns the working set;
 *   dynpool+reserve  the dynamic pool with the planned peak of the largest
 *                    input (--max square) plus 1/8 reserved up front
 *                    ("reserve the largest size once"; the eighth is room
 *                    for what best fit loses to fragmentation online);
 *   region/tensor    naive: one md_region_alloc() per tensor, freed at its
 *                    last use (the same order as the pools get);
 *   region/request   naive: one region per request of the exact size the
 *                    offset planner (md_plan_solve) finds for it, freed
 *                    after the request (planning time included).
 *
 * It prints backend allocations (md_region_alloc() calls, from the
 * device's own counters), re-allocations (those after the first), peak
 * reserved bytes and time per request (allocator calls only), and the
 * ratio against each naive baseline; the goal is >= 85 % fewer backend
 * allocations than each (dynpool's allocations / the baseline's <= 0.15),
 * one row each in build/bench/results/dynamic.tsv (tools/bench/harness.h).
 * Exit status 1 if the goal is missed, 2 when the bench cannot run.
 *
 * usage: dynamic_bench [--requests N] [--seed S] [--min PX] [--max PX]
 *                      [--backend host|kmod]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/device.h>
#include <metadef/dynpool.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>

#include "harness.h"
#include "random.h"

/* ------------------------------------------------------------ the model */

enum kind {
	ACT,		/* ch x H/stride x W/stride x elem bytes */
	DECODE,		/* 85 fp32 per anchor, 3 anchors per cell, 3 scales */
	CAND,		/* per candidate box: 6 fp32 */
	ORDER,		/* per candidate: 8 bytes (score order) */
	KEEP,		/* per candidate: 1 byte */
	FIXED,		/* elem bytes */
};

struct tensor {
	const char *name;
	enum kind kind;
	uint32_t ch, stride, elem;
};

static const struct tensor tensors[] = {
	{ "image_u8",	ACT, 3, 1, 1 },
	{ "image",	ACT, 3, 1, 2 },
	{ "stem",	ACT, 32, 2, 2 },
	{ "c1",		ACT, 64, 4, 2 },
	{ "c2",		ACT, 64, 4, 2 },
	{ "c3",		ACT, 128, 8, 2 },
	{ "c3b",	ACT, 128, 8, 2 },
	{ "c4",		ACT, 256, 16, 2 },
	{ "c4b",	ACT, 256, 16, 2 },
	{ "c5",		ACT, 512, 32, 2 },
	{ "c5b",	ACT, 512, 32, 2 },
	{ "sppf",	ACT, 512, 32, 2 },
	{ "h1",		ACT, 256, 32, 2 },
	{ "up1",	ACT, 256, 16, 2 },
	{ "cat1",	ACT, 512, 16, 2 },
	{ "p4",		ACT, 256, 16, 2 },
	{ "h2",		ACT, 128, 16, 2 },
	{ "up2",	ACT, 128, 8, 2 },
	{ "cat2",	ACT, 256, 8, 2 },
	{ "p3",		ACT, 128, 8, 2 },
	{ "d1",		ACT, 128, 16, 2 },
	{ "cat3",	ACT, 256, 16, 2 },
	{ "n4",		ACT, 256, 16, 2 },
	{ "d2",		ACT, 256, 32, 2 },
	{ "cat4",	ACT, 512, 32, 2 },
	{ "n5",		ACT, 512, 32, 2 },
	{ "head3",	ACT, 255, 8, 2 },
	{ "head4",	ACT, 255, 16, 2 },
	{ "head5",	ACT, 255, 32, 2 },
	{ "decoded",	DECODE, 0, 0, 0 },
	{ "cand",	CAND, 0, 0, 0 },
	{ "order",	ORDER, 0, 0, 0 },
	{ "keep",	KEEP, 0, 0, 0 },
	{ "dets",	FIXED, 0, 0, 300 * 6 * 4 },
};

#define NT	(sizeof(tensors) / sizeof(tensors[0]))

struct op {
	const char *name;
	int in[3], out[2];	/* -1 ends each list */
	uint32_t ws;		/* workspace: ws x the first output, 0: none */
};

static const struct op ops[] = {
	{ "normalize",	{ 0, -1 },	{ 1, -1 },	0 },
	{ "stem",	{ 1, -1 },	{ 2, -1 },	2 },
	{ "conv1",	{ 2, -1 },	{ 3, -1 },	2 },
	{ "csp1",	{ 3, -1 },	{ 4, -1 },	1 },
	{ "conv2",	{ 4, -1 },	{ 5, -1 },	2 },
	{ "csp2",	{ 5, -1 },	{ 6, -1 },	1 },
	{ "conv3",	{ 6, -1 },	{ 7, -1 },	2 },
	{ "csp3",	{ 7, -1 },	{ 8, -1 },	1 },
	{ "conv4",	{ 8, -1 },	{ 9, -1 },	2 },
	{ "csp4",	{ 9, -1 },	{ 10, -1 },	1 },
	{ "sppf",	{ 10, -1 },	{ 11, -1 },	3 },
	{ "lat5",	{ 11, -1 },	{ 12, -1 },	0 },
	{ "up5",	{ 12, -1 },	{ 13, -1 },	0 },
	{ "cat45",	{ 13, 8, -1 },	{ 14, -1 },	0 },
	{ "csp45",	{ 14, -1 },	{ 15, -1 },	1 },
	{ "lat4",	{ 15, -1 },	{ 16, -1 },	0 },
	{ "up4",	{ 16, -1 },	{ 17, -1 },	0 },
	{ "cat34",	{ 17, 6, -1 },	{ 18, -1 },	0 },
	{ "csp34",	{ 18, -1 },	{ 19, -1 },	1 },
	{ "down3",	{ 19, -1 },	{ 20, -1 },	2 },
	{ "cat3n",	{ 20, 16, -1 },	{ 21, -1 },	0 },
	{ "csp3n",	{ 21, -1 },	{ 22, -1 },	1 },
	{ "down4",	{ 22, -1 },	{ 23, -1 },	2 },
	{ "cat4n",	{ 23, 12, -1 },	{ 24, -1 },	0 },
	{ "csp4n",	{ 24, -1 },	{ 25, -1 },	1 },
	{ "head3",	{ 19, -1 },	{ 26, -1 },	0 },
	{ "head4",	{ 22, -1 },	{ 27, -1 },	0 },
	{ "head5",	{ 25, -1 },	{ 28, -1 },	0 },
	{ "decode",	{ 26, 27, 28 },	{ 29, -1 },	0 },
	{ "filter",	{ 29, -1 },	{ 30, -1 },	0 },
	{ "sort",	{ 30, -1 },	{ 31, -1 },	0 },
	{ "nms",	{ 30, 31, -1 },	{ 32, 33 },	0 },
};

#define NOPS	(sizeof(ops) / sizeof(ops[0]))
#define NSLOTS	(NT + NOPS)	/* tensors, then one workspace per op */

struct request {
	uint32_t h, w;		/* input resolution */
	uint32_t cand;		/* boxes past the score threshold */
};

static uint64_t tensor_bytes(const struct tensor *t, const struct request *r)
{
	uint64_t cells = (uint64_t)r->h * r->w;

	switch (t->kind) {
	case ACT:
		return cells / ((uint64_t)t->stride * t->stride) * t->ch *
		       t->elem;
	case DECODE:
		return 3 * (cells / 64 + cells / 256 + cells / 1024) * 85 * 4;
	case CAND:
		return (uint64_t)r->cand * 6 * 4;
	case ORDER:
		return (uint64_t)r->cand * 8;
	case KEEP:
		return r->cand;
	case FIXED:
		return t->elem;
	}
	return 0;
}

/* One allocation (size > 0) or free (size == 0) of a slot. */
struct event {
	uint32_t slot;
	uint64_t size;
};

#define MAX_EVENTS	(2 * NSLOTS)

struct trace {
	struct request req;
	struct event ev[MAX_EVENTS];
	size_t n;
	uint64_t live_peak;	/* bytes alive at once, unaligned */
	uint64_t total;		/* all allocations */
};

/* The request's allocations and frees in model order. */
static void build_events(struct trace *t)
{
	int last[NT];
	uint64_t live = 0, size[NSLOTS] = { 0 };
	size_t i, k;

	for (i = 0; i < NT; i++)
		last[i] = -1;
	for (i = 0; i < NOPS; i++)
		for (k = 0; k < 3 && ops[i].in[k] >= 0; k++)
			last[ops[i].in[k]] = (int)i;

	t->n = 0;
	t->live_peak = 0;
	t->total = 0;
#define ALLOC(s, bytes) do {						\
		size[s] = (bytes);					\
		t->ev[t->n++] = (struct event){ (s), size[s] };		\
		live += size[s];					\
		t->total += size[s];					\
		if (live > t->live_peak)				\
			t->live_peak = live;				\
	} while (0)
#define FREE(s) do {							\
		t->ev[t->n++] = (struct event){ (s), 0 };		\
		live -= size[s];					\
	} while (0)

	ALLOC(0, tensor_bytes(&tensors[0], &t->req));	/* the upload */
	for (i = 0; i < NOPS; i++) {
		const struct op *o = &ops[i];

		for (k = 0; k < 2 && o->out[k] >= 0; k++)
			ALLOC(o->out[k], tensor_bytes(&tensors[o->out[k]],
						      &t->req));
		if (o->ws) {
			ALLOC(NT + i, size[o->out[0]] * o->ws);
			FREE(NT + i);
		}
		for (k = 0; k < 3 && o->in[k] >= 0; k++)
			if (last[o->in[k]] == (int)i)
				FREE(o->in[k]);
	}
	for (i = 0; i < NT; i++)
		if (last[i] < 0 && i)		/* outputs nobody reads */
			FREE(i);
#undef ALLOC
#undef FREE
}

/* ------------------------------------------------------------ the trace */

static uint64_t rng;

static uint64_t rnd(void)
{
	return md_xorshift64(&rng);
}

/*
 * Camera-like inputs: the long side a multiple of 32 in [min, max], the
 * aspect ratio one of a few (1:1, 4:3, 16:9, 3:4, 9:16), the short side
 * rounded to 32; the number of candidate boxes from a few hundred up to
 * about a quarter of the anchors.
 */
static void make_request(struct request *r, uint32_t min, uint32_t max)
{
	static const uint32_t ar[][2] = {
		{ 1, 1 }, { 4, 3 }, { 16, 9 }, { 3, 4 }, { 9, 16 },
	};
	uint32_t steps = (max - min) / 32 + 1;
	uint32_t lng = min + (uint32_t)(rnd() % steps) * 32, shrt;
	const uint32_t *a = ar[rnd() % 5];
	uint64_t anchors;

	shrt = (lng * (a[0] < a[1] ? a[0] : a[1]) /
		(a[0] > a[1] ? a[0] : a[1]) + 16) / 32 * 32;
	if (shrt < 64)
		shrt = 64;
	if (a[0] >= a[1]) {
		r->w = lng;
		r->h = shrt;
	} else {
		r->w = shrt;
		r->h = lng;
	}
	anchors = 3ull * r->h * r->w * 21 / 1024;
	r->cand = 100 + (uint32_t)(rnd() % (anchors / 4 + 1));
}

/* ------------------------------------------------------------ allocators */

enum which { DYN, DYN_RESERVE, PER_TENSOR, PER_REQUEST, NWHICH };

static const char *const names[NWHICH] = {
	[DYN] = "dynpool (no reservation)",
	[DYN_RESERVE] = "dynpool+reserve (largest plan+1/8)",
	[PER_TENSOR] = "naive: region per tensor",
	[PER_REQUEST] = "naive: planned region per request",
};

struct result {
	uint64_t allocs, reallocs, peak_reserved, failures;
	double us_mean;			/* per request */
	struct bench_stats us;		/* per request */
	struct md_dynpool_stats dyn;
};

/* The planned peak of one request: its tensors at their lifetimes. */
static int plan_peak(const struct trace *t, uint64_t align, uint64_t *peak)
{
	uint64_t lower[NSLOTS];
	struct md_plan_opts o = { MD_STRAT_SIZE_BEST, 0, 0, 0 };
	struct md_problem p;
	struct md_plan plan;
	size_t i;
	int err = 0;

	md_problem_init(&p);
	for (i = 0; i < t->n && !err; i++) {
		const struct event *e = &t->ev[i];

		if (e->size)
			lower[e->slot] = i;
		else
			err = md_problem_add(&p, NULL, lower[e->slot], i,
					     t->ev[lower[e->slot]].size, align);
	}
	if (!err)
		err = md_plan_solve(&p, &o, &plan);
	if (!err) {
		*peak = plan.peak;
		md_plan_free(&plan);
	}
	md_problem_free(&p);
	return err;
}

static int run(enum which w, const struct md_device_config *dc,
	       const struct trace *tr, size_t nreq, uint64_t reserve,
	       struct result *res)
{
	struct md_dynblock blk[NSLOTS];
	struct md_region reg[NSLOTS];
	struct md_dynpool_config pc = { 0 };
	struct md_dynpool *pool = NULL;
	struct md_device_stats ds;
	struct md_device *dev;
	double t0, elapsed = 0, *us;
	size_t r, i;
	int err;

	us = calloc(nreq, sizeof(*us));
	if (!us)
		return -ENOMEM;
	err = md_device_open(dc, &dev);
	if (err) {
		free(us);
		return err;
	}
	if (w == DYN_RESERVE)
		pc.initial = reserve;
	if (w == DYN || w == DYN_RESERVE) {
		err = md_dynpool_create(dev, &pc, &pool);
		if (err)
			goto out;
	}
	memset(res, 0, sizeof(*res));
	for (r = 0; r < nreq && !err; r++) {
		const struct trace *t = &tr[r];
		struct md_region whole;
		uint64_t peak;

		t0 = bench_now();
		switch (w) {
		case DYN:
		case DYN_RESERVE:
			for (i = 0; i < t->n && !err; i++) {
				const struct event *e = &t->ev[i];

				if (e->size)
					err = md_dynpool_alloc(pool, e->size,
							       &blk[e->slot]);
				else
					err = md_dynpool_free(pool,
							      &blk[e->slot]);
			}
			break;
		case PER_TENSOR:
			for (i = 0; i < t->n && !err; i++) {
				const struct event *e = &t->ev[i];

				if (e->size)
					err = md_region_alloc(dev, e->size,
							      md_device_align(dev),
							      &reg[e->slot]);
				else
					err = md_region_free(dev, &reg[e->slot]);
			}
			break;
		case PER_REQUEST:
			/* Offsets come from the plan: no call per tensor. */
			err = plan_peak(t, md_device_align(dev), &peak);
			if (!err)
				err = md_region_alloc(dev, peak,
						      md_device_align(dev),
						      &whole);
			if (!err)
				err = md_region_free(dev, &whole);
			break;
		default:
			err = -EINVAL;
		}
		us[r] = (bench_now() - t0) * 1e6;
		elapsed += us[r];
	}
	if (pool) {
		md_dynpool_stats(pool, &res->dyn);
		if (!err && res->dyn.blocks_in_use)
			err = -EFAULT;		/* the trace leaked: a bug */
	}
	md_dynpool_destroy(pool);
	md_device_stats(dev, &ds);
	res->allocs = ds.region_allocs;
	res->reallocs = ds.region_allocs ? ds.region_allocs - 1 : 0;
	res->peak_reserved = ds.bytes_peak;
	res->failures = ds.region_failures;
	res->us_mean = elapsed / (double)nreq;
	bench_summarize(us, nreq, &res->us);
out:
	md_device_close(dev);
	free(us);
	return err;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f, "usage: dynamic_bench [--requests N] [--seed S] [--min PX] "
		"[--max PX] [--backend host|kmod]\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "requests", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "min", required_argument, NULL, 'a' },
		{ "max", required_argument, NULL, 'b' },
		{ "backend", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct md_device_config dc = { .backend = "host", .align = MD_ALIGN_NPU };
	unsigned long nreq = 500, lo = 320, hi = 1280;
	uint64_t seed = 20240607, reserve = 0, minpeak = UINT64_MAX, maxpeak = 0;
	uint64_t events = 0, planned;
	struct result res[NWHICH];
	struct bench h;
	size_t nws = 0;
	struct trace *tr;
	char a[32], b[32];
	size_t r;
	int c, w, err;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			nreq = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			lo = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			hi = strtoul(optarg, NULL, 0);
			break;
		case 'B':
			dc.backend = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !nreq || lo < 64 || hi < lo || hi > 8192 ||
	    lo % 32 || hi % 32) {
		usage(stderr);
		fprintf(stderr, "dynamic_bench: --min/--max: multiples of 32 in "
			"[64, 8192]; --requests > 0\n");
		return 2;
	}
	if (bench_open(&h, "dynamic", NULL))
		return 2;

	for (r = 0; r < NOPS; r++)
		nws += !!ops[r].ws;
	tr = calloc(nreq, sizeof(*tr));
	if (!tr)
		return 2;
	rng = seed ? seed : 1;
	for (r = 0; r < nreq; r++) {
		make_request(&tr[r].req, (uint32_t)lo, (uint32_t)hi);
		build_events(&tr[r]);
		events += tr[r].n;
		if (tr[r].live_peak < minpeak)
			minpeak = tr[r].live_peak;
		if (tr[r].live_peak > maxpeak)
			maxpeak = tr[r].live_peak;
	}
	/* "Reserve the largest size once": the largest request's plan. */
	{
		struct trace big = { .req = { (uint32_t)hi, (uint32_t)hi, 0 } };
		uint64_t anchors = 3ull * hi * hi * 21 / 1024;

		big.req.cand = 100 + (uint32_t)(anchors / 4);
		build_events(&big);
		err = plan_peak(&big, dc.align, &reserve);
		if (err) {
			fprintf(stderr, "dynamic_bench: plan: %s\n",
				strerror(-err));
			return 2;
		}
		planned = reserve;
		reserve += reserve / 8;
	}

	printf("dynamic_bench: detection-like trace, %lu requests (seed %" PRIu64
	       "), inputs %lu..%lu px, fp16, block alignment %" PRIu64
	       ", backend %s\n", nreq, seed, lo, hi, (uint64_t)dc.align,
	       dc.backend);
	printf("  per request: %zu tensors + %zu workspaces; %.1f allocations; "
	       "live peak %s .. %s\n",
	       NT, nws, (double)events / 2 / nreq,
	       bench_bytes(minpeak, a, sizeof(a)), bench_bytes(maxpeak, b, sizeof(b)));
	printf("  dynpool+reserve reserves %s up front (planned peak %s at "
	       "%lux%lu, + 1/8)\n\n", bench_bytes(reserve, a, sizeof(a)),
	       bench_bytes(planned, b, sizeof(b)), hi, hi);

	for (w = 0; w < NWHICH; w++) {
		err = run(w, &dc, tr, nreq, reserve, &res[w]);
		if (err) {
			fprintf(stderr, "dynamic_bench: %s: %s\n", names[w],
				strerror(-err));
			return 2;
		}
	}

	printf("%-34s %14s %10s %14s %29s\n", "allocator", "backend allocs",
	       "re-allocs", "peak reserved", "us/request mean  p50    IQR");
	for (w = 0; w < NWHICH; w++)
		printf("%-34s %14" PRIu64 " %10" PRIu64 " %14s %16.1f %6.1f %6.1f\n",
		       names[w], res[w].allocs, res[w].reallocs,
		       bench_bytes(res[w].peak_reserved, a, sizeof(a)),
		       res[w].us_mean, res[w].us.median, res[w].us.iqr);
	for (w = DYN; w <= DYN_RESERVE; w++)
		printf("\n%s: %" PRIu64 " blocks served, peak in use %s, "
		       "%" PRIu64 " regions; at the end %" PRIu64 " free "
		       "blocks, fragmentation %.3f", names[w],
		       res[w].dyn.requests,
		       bench_bytes(res[w].dyn.bytes_peak, a, sizeof(a)),
		       res[w].dyn.regions, res[w].dyn.free_blocks,
		       res[w].dyn.fragmentation);
	printf("\n");

	printf("\nbackend allocations against the naive baselines (fewer is better):\n");
	for (w = DYN; w <= DYN_RESERVE; w++) {
		printf("  %-34s vs region per tensor:  %5" PRIu64 " / %-6" PRIu64
		       " = %.5f (%.3f %% fewer)\n", names[w], res[w].allocs,
		       res[PER_TENSOR].allocs,
		       (double)res[w].allocs / res[PER_TENSOR].allocs,
		       100.0 - 100.0 * res[w].allocs / res[PER_TENSOR].allocs);
		printf("  %-34s vs region per request: %5" PRIu64 " / %-6" PRIu64
		       " = %.5f (%.3f %% fewer)\n", names[w], res[w].allocs,
		       res[PER_REQUEST].allocs,
		       (double)res[w].allocs / res[PER_REQUEST].allocs,
		       100.0 - 100.0 * res[w].allocs / res[PER_REQUEST].allocs);
	}
	printf("peak reserved against the planned region per request: "
	       "dynpool %.2fx, dynpool+reserve %.2fx\n",
	       (double)res[DYN].peak_reserved / res[PER_REQUEST].peak_reserved,
	       (double)res[DYN_RESERVE].peak_reserved /
	       res[PER_REQUEST].peak_reserved);
	/* The goal: >= 85 % fewer, i.e. at most 0.15 of each baseline's. */
	printf("\n");
	bench_goal(&h, "dynamic", "detection trace, no reservation",
		   "dynpool backend allocs / peer's", names[PER_TENSOR],
		   (double)res[DYN].allocs / (double)res[PER_TENSOR].allocs,
		   BENCH_LE, 0.15);
	bench_goal(&h, "dynamic", "detection trace, no reservation",
		   "dynpool backend allocs / peer's", names[PER_REQUEST],
		   (double)res[DYN].allocs / (double)res[PER_REQUEST].allocs,
		   BENCH_LE, 0.15);
	free(tr);
	return bench_exit(&h);
}
