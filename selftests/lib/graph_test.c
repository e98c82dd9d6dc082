// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: usage graphs (lifetimes, in-place, contiguity,
 * barriers, parsing errors), metadata and per-device alignment, and the
 * three reuse levels.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/graph.h>
#include <metadef/meta.h>
#include <metadef/plan.h>

#include "kselftest_harness.h"

static int parse(struct md_graph **g, const char *s, struct md_error *e)
{
	int ret = md_graph_new(g);

	if (ret)
		return ret;
	return md_graph_parse(*g, s, strlen(s), e);
}

static int tid(struct md_graph *g, const char *name)
{
	return md_graph_find(g, name);
}

/* A test's graph (g, parsed with e) and, once planned, its plan (gp). */
FIXTURE(graph)
{
	struct md_graph *g;
	struct md_error e;
	struct md_graph_plan gp;
	bool planned;
};

/* Free the graph and its plan, if there are. */
static void unload(FIXTURE_DATA(graph) *f)
{
	if (f->planned)
		md_graph_plan_free(&f->gp);
	f->planned = false;
	md_graph_free(f->g);
	f->g = NULL;
}

/* Parse @text into a new graph, in place of the last one. */
static int load(FIXTURE_DATA(graph) *f, const char *text)
{
	unload(f);
	memset(&f->e, 0, sizeof(f->e));
	return parse(&f->g, text, &f->e);
}

static int plan(FIXTURE_DATA(graph) *f)
{
	int ret;

	if (f->planned)
		md_graph_plan_free(&f->gp);
	ret = md_graph_plan(f->g, NULL, &f->gp);
	f->planned = !ret;
	return ret;
}

FIXTURE_SETUP(graph)
{
}

FIXTURE_TEARDOWN(graph)
{
	unload(self);
}

/* Parse @text: it must succeed, else the line and error are said. */
#define LOAD(text) \
	ASSERT_EQ(0, load(self, text)) \
		TH_LOG("%u: %s", self->e.line, self->e.msg)
#define PLAN()		ASSERT_EQ(0, plan(self))
/* In the graph: tensor @name's index. */
#define T(name)		tid(self->g, name)

TEST_F(graph, lifetimes_sequential)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"# a chain\n"
		"input x 100\n"
		"op f x -> a:200\n"	/* step 0 */
		"op g a -> b:300\n"	/* step 1 */
		"op h b x -> c:50 tmp:10\n"	/* step 2 */
		"output c\n";

	LOAD(s);
	ASSERT_EQ(5, md_graph_tensor_count(self->g));
	PLAN();
	/* x: input, whole run [0, 3); a: [0, 2); b: [1, 3); c: output. */
	EXPECT_EQ(0, gp->lower[T("x")]);
	EXPECT_EQ(3, gp->upper[T("x")]);
	EXPECT_EQ(0, gp->lower[T("a")]);
	EXPECT_EQ(2, gp->upper[T("a")]);
	EXPECT_EQ(1, gp->lower[T("b")]);
	EXPECT_EQ(3, gp->upper[T("b")]);
	EXPECT_EQ(2, gp->lower[T("c")]);
	EXPECT_EQ(3, gp->upper[T("c")]);
	EXPECT_EQ(2, gp->lower[T("tmp")]);	/* never read: one step */
	EXPECT_EQ(3, gp->upper[T("tmp")]);
	EXPECT_EQ(660, gp->stats.tensor_bytes);
	EXPECT_EQ(0, md_plan_validate(&gp->problem, gp->plan.offsets, NULL));
	/* Step 1: x + a + b = 600 bytes; step 2: x + b + c + tmp = 460. */
	EXPECT_EQ(600, gp->stats.lower_bound);
	EXPECT_EQ(gp->plan.peak, gp->stats.peak);
	EXPECT_EQ(gp->stats.buffer_bytes - gp->stats.peak,
		  gp->stats.inter_op_saved);
}

TEST_F(graph, inplace_taken_and_refused)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"input x 64\n"
		"op f x -> a:100\n"
		"op relu a -> b:100=a\n"	/* a dies here: taken */
		"op g b -> c:100=b d:8\n"	/* b is read again below */
		"op h b c x -> y:100=x\n"	/* x is a graph input */
		"output y d\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(1, gp->stats.inplace_taken);
	EXPECT_EQ(2, gp->stats.inplace_refused);
	EXPECT_EQ(100, gp->stats.intra_op_saved);
	EXPECT_EQ(gp->buffer[T("a")], gp->buffer[T("b")]);
	EXPECT_EQ(gp->offset[T("a")], gp->offset[T("b")]);
	EXPECT_NE(gp->buffer[T("b")], gp->buffer[T("c")]);
	EXPECT_NE(gp->buffer[T("x")], gp->buffer[T("y")]);
	EXPECT_EQ(gp->stats.tensor_bytes - 100, gp->stats.buffer_bytes);
	EXPECT_STREQ("a+b", gp->problem.bufs[gp->buffer[T("a")]].id);
	EXPECT_EQ(0, md_plan_validate(&gp->problem, gp->plan.offsets, NULL));
}

TEST_F(graph, contiguous_tensors_are_adjacent)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"align 64\n"
		"input x 10\n"
		"op split x -> q:100 k:100@256 v:30\n"
		"op attn q k v -> o:50\n"
		"contig q k v\n"
		"output o\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(gp->buffer[T("q")], gp->buffer[T("v")]);
	/* q at +0, k at +256 (its own alignment), v at +384. */
	EXPECT_EQ(256, gp->offset[T("k")] - gp->offset[T("q")]);
	EXPECT_EQ(384, gp->offset[T("v")] - gp->offset[T("q")]);
	EXPECT_EQ(0, gp->offset[T("q")] % 256);
	EXPECT_EQ(0, gp->offset[T("o")] % 64);
	EXPECT_EQ(0, md_plan_validate(&gp->problem, gp->plan.offsets, NULL));
}

/* An unrolled loop of @steps LSTM-like steps, with or without barriers. */
static char *lstm(int steps, int parallel, int barriers)
{
	size_t cap = 4096 + steps * 256, n = 0;
	char *s = malloc(cap);
	int i;

	n += snprintf(s + n, cap - n, "mode %s\ninput h0 1K\ninput w 4K\n",
		      parallel ? "parallel" : "sequential");
	for (i = 1; i <= steps; i++) {
		n += snprintf(s + n, cap - n,
			      "op gates%d h%d w -> g%d:4K\n"
			      "op act%d g%d -> a%d:4K\n"
			      "op cell%d a%d -> h%d:1K\n",
			      i, i - 1, i, i, i, i, i, i, i);
		if (barriers && i < steps)
			n += snprintf(s + n, cap - n, "barrier\n");
	}
	snprintf(s + n, cap - n, "output h%d\n", steps);
	return s;
}

static uint64_t plan_peak(const char *text, struct md_graph_plan *out)
{
	struct md_graph *g;
	struct md_graph_plan gp;
	struct md_error e;
	uint64_t peak;

	if (parse(&g, text, &e) || md_graph_plan(g, NULL, &gp))
		return 0;
	peak = gp.plan.peak;
	if (out)
		*out = gp;
	else
		md_graph_plan_free(&gp);
	md_graph_free(g);
	return peak;
}

TEST(barriers_let_loop_steps_share)
{
	char *seq = lstm(8, 0, 0), *seqb = lstm(8, 0, 1);
	char *par = lstm(8, 1, 0), *parb = lstm(8, 1, 1);
	uint64_t p_seq = plan_peak(seq, NULL), p_seqb = plan_peak(seqb, NULL);
	uint64_t p_par = plan_peak(par, NULL), p_parb = plan_peak(parb, NULL);

	ASSERT_NE(0, p_seq);
	ASSERT_NE(0, p_par);
	/* Sequential: a barrier is only a step, nothing changes. */
	EXPECT_EQ(p_seq, p_seqb);
	/* Parallel without barriers: all 8 steps alive at once. */
	EXPECT_EQ(5 * 1024 + 8 * (4096 + 4096 + 1024), p_par);
	/* Parallel with barriers: steps reuse each other's memory. */
	EXPECT_LT(p_parb, p_par / 3);
	EXPECT_GE(p_parb, p_seq);
	free(seq);
	free(seqb);
	free(par);
	free(parb);
}

struct bad_graph {
	const char *text;
	unsigned int line;
	const char *msg;
};

TEST_F(graph, graph_parse_rejects_bad_input)
{
	static const struct bad_graph cases[] = {
		{ "", 0, "empty input: no statements" },
		{ "# nothing\n\n", 0, "empty input" },
		{ "mode parallel\n", 1, "no tensors" },
		{ "input x 4\ninput \xff 4\n", 2,
		  "not valid UTF-8: byte 0xff at column 7" },
		{ "input x 4\x1b\n", 1, "control character 0x1b at column 10" },
		{ "input x 4\rop f x -> y:4\n", 1, "carriage return inside a line" },
		{ "frobnicate x\n", 1, "unknown statement 'frobnicate'" },
		{ "input x 10\nop f y -> a:1\n", 2, "unknown tensor 'y'" },
		{ "input x 10\nop f x a:1\n", 2, "missing '->'" },
		{ "input x 10\nop f x -> a\n", 2, "needs a size" },
		{ "input x 10\nop f x -> a:-4\n", 2, "negative size" },
		{ "input x 10\nop f x -> a:4Q\n", 2, "bad size '4Q'" },
		{ "input x 10\nop f x -> a:4@48\n", 2, "not a power of two" },
		{ "input x 10\nop f x -> x:4\n", 2, "already defined" },
		{ "input x 10\ninput x 10\n", 2, "already defined" },
		{ "input x 10\ninput y 1\nop f x -> a:4=y\n", 3,
		  "in place needs an input" },
		{ "input x 10\n\n\noutput z\n", 4, "unknown tensor 'z'" },
		{ "input x 10\ninput y 1\ncontig x y\ncontig y x\n", 4,
		  "one contig group" },
		{ "input x 10\nmode fast\n", 2, "mode sequential|parallel" },
		{ "input x 10\ndevice tpu\n", 2, "device cpu|gpu|npu" },
		{ "input x 10\nbarrier now\n", 2, "no arguments" },
		{ "input bad:name 10\n", 1, "bad tensor name" },
		{ "input x 99999999999999999999\n", 1, "does not fit" },
		/* Sizes that only wrap when added up. */
		{ "input x 8E\ninput y 8E\nop f x y -> a:1K\ncontig x y\n",
		  4, "contig group starting with 'x': its tensors and their alignment padding need more than 2^64-1 bytes" },
		{ "input x 1\ninput y 18446744073709551615\ncontig x y\n", 3,
		  "contig group starting with 'x'" },
		{ "input x 8E\nop f x -> a:8E\n", 2,
		  "with tensor 'a' the tensors and their alignment padding need more than 2^64-1 bytes" },
		{ "input x 18446744073709551615\nalign 256\n", 1,
		  "with tensor 'x'" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct md_error *e = &self->e;

		/* load() clears e: a line left from the last case fails. */
		EXPECT_EQ(-EINVAL, load(self, cases[i].text));
		EXPECT_EQ(cases[i].line, e->line);
		if (!strstr(e->msg, cases[i].msg))
			TH_LOG("case %zu: '%s' lacks '%s'", i, e->msg,
			       cases[i].msg);
		EXPECT_NE(NULL, strstr(e->msg, cases[i].msg));
	}
}

TEST_F(graph, device_alignment)
{
	struct md_align_cfg cfg;
	struct md_graph_plan *gp = &self->gp;
	size_t i;

	md_align_cfg_default(&cfg);
	EXPECT_EQ(64, md_align_for(&cfg, MD_DEV_CPU, 0));
	EXPECT_EQ(128, md_align_for(&cfg, MD_DEV_GPU, 0));
	EXPECT_EQ(256, md_align_for(&cfg, MD_DEV_NPU, 0));
	EXPECT_EQ(32, md_align_for(&cfg, MD_DEV_NPU, 32));	/* per tensor */
	EXPECT_EQ(0, md_align_cfg_set(&cfg, MD_DEV_NPU, 4096));
	EXPECT_EQ(4096, md_align_for(&cfg, MD_DEV_NPU, 0));
	EXPECT_EQ(-EINVAL, md_align_cfg_set(&cfg, MD_DEV_NPU, 96));
	EXPECT_EQ(-EINVAL, md_align_cfg_set(&cfg, MD_DEV_COUNT, 64));
	EXPECT_STREQ("npu", md_device_name(MD_DEV_NPU));

	ASSERT_EQ(0, load(self, "device npu\ninput x 3\n"
			  "op f x -> a:5 b:7@16 c:9\noutput a b c\n"));
	PLAN();
	for (i = 0; i < gp->ntensors; i++) {
		uint64_t want = i == (size_t)T("b") ? 16 : 256;

		EXPECT_EQ(0, gp->offset[i] % want);
	}
}

TEST(meta_intervals_and_compat)
{
	struct md_meta a, b;
	uint64_t s, e;

	ASSERT_EQ(0, md_meta_init(&a, 1, 100, 64));
	EXPECT_EQ(128, a.aligned_size);
	EXPECT_EQ(100, a.base_size);
	EXPECT_EQ(-EINVAL, md_meta_init(&b, 2, 100, 48));
	EXPECT_EQ(-EOVERFLOW, md_meta_init(&b, 2, UINT64_MAX, 64));
	ASSERT_EQ(0, md_meta_init(&b, 2, 10, 0));
	EXPECT_EQ(10, b.aligned_size);
	EXPECT_EQ(-ENOENT, md_meta_lifetime(&a, &s, &e));
	ASSERT_EQ(0, md_meta_add_interval(&a, 5, 8, 0));
	ASSERT_EQ(0, md_meta_add_interval(&a, 0, 3, 0));
	ASSERT_EQ(0, md_meta_add_interval(&a, 8, 12, 1));
	EXPECT_EQ(-EINVAL, md_meta_add_interval(&a, 4, 4, 0));
	ASSERT_EQ(0, md_meta_lifetime(&a, &s, &e));
	EXPECT_EQ(0, s);
	EXPECT_EQ(8, e);
	EXPECT_EQ(0, a.iv[0].op_start);		/* kept sorted */
	/* b used in [3, 5): between a's uses: may share. */
	ASSERT_EQ(0, md_meta_add_interval(&b, 3, 5, 0));
	EXPECT_EQ(1, md_meta_can_share(&a, &b));
	/* Overlapping a's allow_overlap phase only: still fine. */
	ASSERT_EQ(0, md_meta_add_interval(&b, 9, 11, 0));
	EXPECT_EQ(1, md_meta_can_share(&a, &b));
	/* No compatibility flag in common: never. */
	a.compat = 1;
	b.compat = 2;
	EXPECT_EQ(0, md_meta_can_share(&a, &b));
	b.compat = 3;
	EXPECT_EQ(1, md_meta_can_share(&a, &b));
	ASSERT_EQ(0, md_meta_add_interval(&b, 7, 9, 0));
	EXPECT_EQ(0, md_meta_can_share(&a, &b));
	md_meta_free(&a);
	md_meta_free(&b);
}

/* Intra-op, inter-op and inter-model reuse, measured. */
TEST(reuse_levels)
{
	char *m1 = lstm(6, 0, 0), *m2 = lstm(3, 0, 0);
	struct md_graph_plan a, b;
	struct md_overlay_stats st;
	uint64_t peaks[2], base[2];

	ASSERT_NE(0, plan_peak(m1, &a));
	ASSERT_NE(0, plan_peak(m2, &b));
	EXPECT_GT(a.stats.inter_op_saved, 0);
	EXPECT_EQ(a.stats.buffer_bytes, a.stats.inter_op_saved + a.plan.peak);
	peaks[0] = a.plan.peak;
	peaks[1] = b.plan.peak;
	ASSERT_EQ(0, md_overlay(peaks, 2, base, &st));
	EXPECT_EQ(0, base[1]);
	EXPECT_EQ(peaks[0] > peaks[1] ? peaks[0] : peaks[1], st.arena);
	EXPECT_EQ(peaks[0] + peaks[1], st.sum_peaks);
	EXPECT_EQ(st.sum_peaks - st.arena, st.saved);
	md_graph_plan_free(&a);
	md_graph_plan_free(&b);
	free(m1);
	free(m2);
}

TEST(build_by_hand)
{
	struct md_graph *g;
	struct md_graph_plan gp;
	const char *names[2] = { "a", "b" };
	uint64_t sizes[2] = { 10, 20 };
	int inplace[2] = { -1, 0 };
	int x, a, in[1];

	ASSERT_EQ(0, md_graph_new(&g));
	x = md_graph_input(g, "x", 20, 0);
	ASSERT_EQ(0, x);
	in[0] = x;
	EXPECT_EQ(-EINVAL, md_graph_op(g, "f", in, 1, names, sizes, NULL,
				       (int[]){ -1, 5 }, 2));
	a = md_graph_op(g, "f", in, 1, names, sizes, NULL, NULL, 2);
	ASSERT_EQ(1, a);
	EXPECT_EQ(-EEXIST, md_graph_input(g, "a", 1, 0));
	EXPECT_EQ(-EINVAL, md_graph_input(g, "z", 1, 3));
	in[0] = a + 1;
	names[0] = "c";
	names[1] = "d";
	inplace[1] = a + 1;
	ASSERT_EQ(3, md_graph_op(g, "g", in, 1, names, sizes, NULL,
				 inplace, 2));
	EXPECT_EQ(0, md_graph_barrier(g));
	EXPECT_EQ(0, md_graph_output(g, 4));
	EXPECT_EQ(-ENOENT, md_graph_output(g, 9));
	EXPECT_STREQ("d", md_graph_tensor_name(g, 4));
	EXPECT_EQ(20, md_graph_tensor_size(g, 4));
	EXPECT_EQ(1, md_graph_tensor_align(g, 4));
	EXPECT_EQ(0, md_graph_tensor_size(g, 9));
	EXPECT_EQ(0, md_graph_tensor_align(g, -1));
	ASSERT_EQ(0, md_graph_plan(g, NULL, &gp));
	EXPECT_EQ(1, gp.stats.inplace_taken);
	EXPECT_EQ(gp.offset[2], gp.offset[4]);
	md_graph_plan_free(&gp);
	ASSERT_EQ(0, md_graph_set_device(g, MD_DEV_NPU, NULL));
	EXPECT_EQ(256, md_graph_tensor_align(g, 4));
	md_graph_free(g);
}

/* A UTF-8 byte order mark before the first statement is skipped. */
TEST_F(graph, graph_bom_is_skipped)
{
	ASSERT_EQ(0, load(self, "\xef\xbb\xbfinput x 4\nop f x -> y:4\n"));
	EXPECT_EQ(2, md_graph_tensor_count(self->g));
	ASSERT_EQ(0, load(self, "\xef\xbb\xbf# comment\ninput x 4\n"));
}

/* Built by hand, a group past 2^64 is refused by the lowering itself. */
TEST(lowering_refuses_what_wraps)
{
	struct md_graph *g;
	struct md_graph_plan gp;
	int ids[2];

	ASSERT_EQ(0, md_graph_new(&g));
	ids[0] = md_graph_input(g, "x", 1ull << 63, 0);
	ids[1] = md_graph_input(g, "y", 1ull << 63, 0);
	ASSERT_EQ(0, md_graph_contig(g, ids, 2));
	EXPECT_EQ(-EOVERFLOW, md_graph_lower(g, &gp));
	EXPECT_EQ(-EOVERFLOW, md_graph_plan(g, NULL, &gp));
	md_graph_free(g);
	/* Apart, the tensors' no-reuse total wraps: refused too. */
	ASSERT_EQ(0, md_graph_new(&g));
	md_graph_input(g, "x", 1ull << 63, 0);
	md_graph_input(g, "y", 1ull << 63, 0);
	EXPECT_EQ(-EOVERFLOW, md_graph_lower(g, &gp));
	md_graph_free(g);
}

/* A reshape chain: one buffer whose lifetime the views extend. */
TEST_F(graph, view_chain_shares_one_buffer)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"input x 64\n"
		"op f x -> a:1000\n"		/* step 0 */
		"op resh a -> b:1000^a\n"	/* step 1 */
		"op sq b -> c^b\n"		/* step 2: size of b */
		"op g c -> d:500\n"		/* step 3: c read last */
		"output d\n";
	int a, b, c;

	LOAD(s);
	a = T("a");
	b = T("b");
	c = T("c");
	EXPECT_EQ(a, md_graph_view_of(self->g, b));
	EXPECT_EQ(b, md_graph_view_of(self->g, c));
	EXPECT_EQ(-1, md_graph_view_of(self->g, a));
	EXPECT_EQ(1000, md_graph_tensor_size(self->g, c));
	PLAN();
	EXPECT_EQ(gp->buffer[a], gp->buffer[b]);
	EXPECT_EQ(gp->buffer[a], gp->buffer[c]);
	EXPECT_EQ(gp->offset[a], gp->offset[c]);
	/* a's own lifetime ends at step 1; its buffer lives to step 3. */
	EXPECT_EQ(2, gp->upper[a]);
	EXPECT_EQ(0, gp->problem.bufs[gp->buffer[a]].lower);
	EXPECT_EQ(4, gp->problem.bufs[gp->buffer[a]].upper);
	EXPECT_EQ(MD_ALIAS_VIEW, gp->kind[b]);
	EXPECT_EQ(a, gp->alias[b]);
	EXPECT_EQ(MD_ALIAS_VIEW, gp->kind[c]);
	EXPECT_EQ(b, gp->alias[c]);
	EXPECT_EQ(MD_ALIAS_NONE, gp->kind[a]);
	EXPECT_EQ(2, gp->stats.views);
	EXPECT_EQ(3, gp->problem.n);	/* x, a+b+c, d */
	/* Step 3: x + c + d = 1564 with views; x + d + c = 1564 without:
	 * the no-alias bound peaks at step 1 or 2, x + two of a, b, c. */
	EXPECT_EQ(1564, gp->stats.lower_bound);
	EXPECT_EQ(2064, gp->stats.lower_bound_noalias);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/* An element-wise chain in place: one buffer, recorded in the plan. */
TEST_F(graph, inplace_chain_recorded)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"input x 64\n"
		"op f x -> a:100\n"
		"op relu a -> b:100=a\n"
		"op neg b -> c:100=b\n"
		"op g c -> d:8\n"
		"output d\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(2, gp->stats.inplace_taken);
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("b")]);
	EXPECT_EQ(T("a"), gp->alias[T("b")]);
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("c")]);
	EXPECT_EQ(gp->offset[T("a")], gp->offset[T("c")]);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/*
 * In place is refused when the memory is read later: through a view of
 * the input (a branch), through the base of a view, or when two outputs
 * of one op ask for the same memory.
 */
TEST_F(graph, inplace_refused_when_read_later)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"input x 64\n"
		"op f x -> a:100\n"
		"op resh a -> v:100^a\n"	/* a dies here, v lives on */
		"op relu a -> b:100=a\n"	/* a dies here... */
		"op g v b -> c:8\n"		/* ...but v is a and is read */
		"op h x -> p:100\n"
		"op resh2 p -> q^p\n"
		"op relu2 q -> r:100=q\n"	/* q dies, its base p not */
		"op k p r -> s:8\n"
		"output c s\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(0, gp->stats.inplace_taken);
	EXPECT_EQ(2, gp->stats.inplace_refused);
	EXPECT_EQ(MD_ALIAS_NONE, gp->kind[T("b")]);
	EXPECT_EQ(-1, gp->alias[T("b")]);
	EXPECT_NE(gp->buffer[T("a")], gp->buffer[T("b")]);
	EXPECT_NE(gp->buffer[T("p")], gp->buffer[T("r")]);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));

	/* Two outputs of one op into a and its view: the first only. */
	LOAD("input x 8\nop f x -> a:100\n"
	     "op r a -> v^a\n"
	     "op two a v -> b:100=a c:100=v\n"
	     "output b c\n");
	PLAN();
	EXPECT_EQ(1, gp->stats.inplace_taken);
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("b")]);
	EXPECT_EQ(MD_ALIAS_NONE, gp->kind[T("c")]);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/*
 * Graph inputs: never written in place; a view of one stays in the
 * input's memory (no copy), and the input's buffer is all there is.
 * A graph output that is a view keeps its base to the end.
 */
TEST_F(graph, views_of_inputs_and_outputs)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"input x 256\n"
		"op resh x -> xv^x\n"
		"op relu xv -> y:256=xv\n"	/* xv is x: refused */
		"op f y -> z:64\n"
		"op flat z -> out:64^z\n"
		"op g y -> w:8\n"
		"output out w\n";
	int x, xv, z;

	LOAD(s);
	PLAN();
	x = T("x");
	xv = T("xv");
	z = T("z");
	EXPECT_EQ(gp->buffer[x], gp->buffer[xv]);
	EXPECT_EQ(gp->offset[x], gp->offset[xv]);
	EXPECT_EQ(0, gp->stats.inplace_taken);
	EXPECT_EQ(1, gp->stats.inplace_refused);
	EXPECT_NE(gp->buffer[x], gp->buffer[T("y")]);
	/* z's memory lives to the end as the output out. */
	EXPECT_EQ(gp->buffer[z], gp->buffer[T("out")]);
	EXPECT_EQ(5, gp->problem.bufs[gp->buffer[z]].upper);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/* A plan that aliases wrongly, made by hand, is rejected per tensor. */
TEST_F(graph, validator_rejects_wrong_alias)
{
	struct md_graph_plan *gp = &self->gp;
	struct md_conflict c;
	const char *s =
		"input x 64\n"
		"op f x -> a:100\n"
		"op relu a -> b:100=a\n"	/* a is read below: refused */
		"op g a b -> c:100\n"
		"op resh c -> v^c\n"
		"op h v -> d:8\n"
		"output d\n";
	int a, b, v, c_;

	LOAD(s);
	PLAN();
	ASSERT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
	a = T("a");
	b = T("b");
	c_ = T("c");
	v = T("v");
	/* b onto a as if in place: a is still read by g. */
	gp->offset[b] = gp->offset[a];
	EXPECT_EQ(-EEXIST, md_graph_plan_validate(self->g, gp, &c));
	EXPECT_TRUE((c.a == (size_t)a && c.b == (size_t)b) ||
		    (c.a == (size_t)b && c.b == (size_t)a));

	/* A view moved away from its base. */
	PLAN();
	gp->offset[v] = gp->offset[c_] + 64;
	EXPECT_EQ(-EINVAL, md_graph_plan_validate(self->g, gp, &c));
	EXPECT_EQ((size_t)v, c.a);
	EXPECT_EQ((size_t)-1, c.b);

	/* Outside the arena. */
	PLAN();
	gp->offset[T("d")] = gp->stats.peak;
	EXPECT_EQ(-EINVAL, md_graph_plan_validate(self->g, gp, NULL));
}

/*
 * An output larger than its dying input: in place would hold the larger
 * size for the input's whole life, over z here. The planner tries
 * without such merges too and keeps the better plan. Where the merge
 * costs nothing, it stays.
 */
TEST_F(graph, inplace_that_raises_the_peak_is_dropped)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"input x 8\n"
		"op f x -> a:100 z:1000\n"	/* step 0 */
		"op g z -> w:8\n"		/* step 1: z dies */
		"op h a -> b:1000=a\n"		/* step 2: a dies, b larger */
		"op k b w -> c:8\n"
		"output c\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(MD_ALIAS_NONE, gp->kind[T("b")]);
	EXPECT_EQ(0, gp->stats.inplace_taken);
	EXPECT_EQ(1, gp->stats.inplace_refused);
	/* x + a + z + w at step 1; merged it would be x + 1000 + z. */
	EXPECT_EQ(1116, gp->stats.lower_bound);
	EXPECT_EQ(1116, gp->plan.peak);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));

	/* Nothing else alive beside a: the merge is free and taken. */
	LOAD("input x 8\nop f x -> a:100\n"
	     "op h a -> b:1000=a\nop k b -> c:8\noutput c\n");
	PLAN();
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("b")]);
	EXPECT_EQ(1, gp->stats.inplace_taken);
}

/* A view of a contig member sits at that member's place in the group. */
TEST_F(graph, view_of_a_contig_member)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"align 64\n"
		"input x 8\n"
		"op split x -> i:100 f:100\n"
		"contig i f\n"
		"op resh f -> fv^f\n"
		"op relu fv -> y:100=fv\n"	/* f is in a group: refused */
		"op g i y -> z:8\n"
		"output z\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(gp->offset[T("i")] + 128, gp->offset[T("f")]);
	EXPECT_EQ(gp->offset[T("f")], gp->offset[T("fv")]);
	EXPECT_EQ(gp->buffer[T("i")], gp->buffer[T("fv")]);
	EXPECT_EQ(0, gp->stats.inplace_taken);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/* Parallel mode: in place and views across whole stages check out. */
TEST_F(graph, validator_accepts_parallel_plans)
{
	struct md_graph_plan *gp = &self->gp;
	const char *s =
		"mode parallel\n"
		"input x 64\n"
		"op f x -> a:100\n"
		"op relu a -> b:100=a\n"
		"op resh b -> c^b\n"
		"barrier\n"
		"op g c -> d:100=c\n"
		"op h d -> o:8\n"
		"output o\n";

	LOAD(s);
	PLAN();
	EXPECT_EQ(2, gp->stats.inplace_taken);
	EXPECT_EQ(gp->offset[T("a")], gp->offset[T("d")]);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

TEST_F(graph, view_syntax_errors)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "input x 8\nop f x -> v^y\n", "unknown tensor 'y'" },
		{ "input x 8\nop f x -> v:16^x\n", "larger than its base" },
		{ "input x 8\ninput y 8\nop f x -> v^y\n",
		  "needs an input of this op" },
		{ "input x 8\nop f x -> v:8=x^x\n", "not written in place" },
		{ "input x 8\nop f x -> v^x\ncontig x v\n",
		  "contig group" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, load(self, bad[i].text));
		EXPECT_NE(NULL, strstr(self->e.msg, bad[i].msg))
			TH_LOG("%s -> %s", bad[i].text, self->e.msg);
	}
}

TEST(view_by_hand)
{
	struct md_graph *g;
	const char *names[] = { "v" };
	uint64_t sizes[] = { 32 }, big[] = { 64 };
	int x, v, view[1], inplace[1] = { -1 };

	ASSERT_EQ(0, md_graph_new(&g));
	x = md_graph_input(g, "x", 32, 0);
	ASSERT_LE(0, x);
	view[0] = x;
	EXPECT_EQ(-EINVAL, md_graph_op_view(g, "f", &x, 1, names, big, NULL,
					    NULL, view, 1));
	inplace[0] = x;
	EXPECT_EQ(-EINVAL, md_graph_op_view(g, "f", &x, 1, names, sizes, NULL,
					    inplace, view, 1));
	v = md_graph_op_view(g, "f", &x, 1, names, sizes, NULL, NULL, view, 1);
	ASSERT_LE(0, v);
	EXPECT_EQ(x, md_graph_view_of(g, v));
	md_graph_free(g);
}

TEST_HARNESS_MAIN
