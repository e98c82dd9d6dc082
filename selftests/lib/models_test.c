// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of metadef-models (tools/models/): every ONNX file it writes
 * passes onnx.checker and has the documented node, tensor and parameter
 * counts (models_check.py, run with /usr/bin/python3; those tests skip
 * only when that Python has no onnx package), shape inference with a
 * fixed batch and sequence shapes every node output; the training graphs
 * and the LSTM parse and plan with metadef-plan, with the documented
 * counts; bad arguments get a message and exit status 2. Activation
 * recomputation (--recompute[=K]): the extra ops, tensors and bytes
 * counted here from the layers' structure, the recomputed tensors' sizes
 * and every lifetime read from the graph file, and the planned peak (its
 * plan validated). Runs the binaries the Makefile builds beside this
 * test (build/bin/).
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <metadef/graph.h>
#include <metadef/metadef.h>
#include <metadef/plan.h>

#include "json_mini.h"
#include "kselftest_harness.h"
#include "test_util.h"

#ifndef MODELS_CHECK
#define MODELS_CHECK "selftests/lib/models_check.py"
#endif
#define PYTHON "/usr/bin/python3"

static char models[PATH_MAX], plan[PATH_MAX], dir[PATH_MAX];

static int find_bins(void)
{
	return test_build_path(models, sizeof(models), "bin/metadef-models") ||
	       test_build_path(plan, sizeof(plan), "bin/metadef-plan");
}

/* Run @cmd in dir; its output, final newlines dropped, into @out. */
static int sh(const char *cmd, char *out, size_t len)
{
	char full[PATH_MAX * 3 + 2048];
	size_t n;
	int st;

	snprintf(full, sizeof(full), "cd '%s' && { %s ; } 2>&1", dir, cmd);
	st = test_capture(full, out, len);
	n = strlen(out);
	while (n && out[n - 1] == '\n')
		out[--n] = '\0';
	return st;
}

/* Run metadef-models with @args. */
static int gen(const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX + 1024];

	snprintf(cmd, sizeof(cmd), "'%s' %s", models, args);
	return sh(cmd, out, len);
}

static bool have_onnx(void)
{
	return system(PYTHON " -c 'import onnx' >/dev/null 2>&1") == 0;
}

/* models_check.py on @file with @args: 0 when every check holds. */
static int check(const char *file, const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX * 2 + 1024];

	snprintf(cmd, sizeof(cmd), "%s '%s' %s %s", PYTHON, MODELS_CHECK, file,
		 args);
	return sh(cmd, out, len);
}

static off_t file_size(const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) ? -1 : st.st_size;
}

/* "  NAME   N ..." in metadef-plan's text output. */
static uint64_t plan_field(const char *out, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n  %s ", name);
	p = strstr(out, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

FIXTURE(models) {
	char out[1 << 16];
	struct jv j;
};

FIXTURE_SETUP(models)
{
	memset(&self->j, 0, sizeof(self->j));
	if (find_bins())
		SKIP(return, "build/bin/metadef-models or metadef-plan not built");
	snprintf(dir, sizeof(dir), "/tmp/metadef-models-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
}

FIXTURE_TEARDOWN(models)
{
	char cmd[PATH_MAX + 16];

	jv_free(&self->j);
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			TH_LOG("could not remove %s", dir);
	}
}

#define EXPECT_GEN(rc, args, want) do {					\
	int __rc = gen(args, self->out, sizeof(self->out));		\
									\
	if (__rc != (rc) || !strstr(self->out, want))			\
		TH_LOG("%s: rc %d, got: %s", args, __rc, self->out);	\
	EXPECT_EQ(rc, __rc);						\
	EXPECT_NE(NULL, strstr(self->out, want));			\
} while (0)

/* Generate with --json, parse the summary into self->j. */
#define GEN_JSON(args) do {						\
	jv_free(&self->j);						\
	ASSERT_EQ(0, gen(args " --json 2>/dev/null", self->out,		\
			 sizeof(self->out))) TH_LOG("%s", self->out);	\
	ASSERT_TRUE(json_parse(self->out, &self->j))			\
		TH_LOG("not JSON: %s", self->out);			\
} while (0)

#define CHECK_ONNX(file, args) do {					\
	int __rc = check(file, args, self->out, sizeof(self->out));	\
									\
	TH_LOG("%s", self->out);					\
	EXPECT_EQ(0, __rc);						\
} while (0)

TEST_F(models, usage_and_bad_arguments)
{
	EXPECT_GEN(0, "--help", "usage: metadef-models MODEL");
	EXPECT_NE(NULL, strstr(self->out, "bert-large-train"));
	EXPECT_GEN(2, "", "no model named");
	EXPECT_GEN(2, "vgg16 -o x", "unknown model 'vgg16'");
	EXPECT_GEN(2, "resnet50 -o x --dtype fp8", "--dtype 'fp8': want fp32 or fp16");
	EXPECT_GEN(2, "resnet50 -o x --batch 0", "--batch '0': want an integer");
	EXPECT_GEN(2, "resnet50 -o x --batch 3x", "--batch '3x': want an integer");
	EXPECT_GEN(2, "bert-large -o x --seq 513", "--seq '513': want an integer from 1 to 512");
	EXPECT_GEN(2, "resnet50 -o x --seq 128", "resnet50 takes no --seq");
	EXPECT_GEN(2, "bert-large -o x --grad-reuse", "bert-large takes no --grad-reuse");
	EXPECT_GEN(2, "lstm --image 224", "lstm takes no --image");
	EXPECT_GEN(2, "resnet50 --json", "--json prints the summary on stdout");
	EXPECT_GEN(2, "resnet50 resnet152 -o x", "one model at a time");
	EXPECT_GEN(2, "resnet50 --bogus -o x", "--help");
	EXPECT_GEN(2, "resnet50-train --device tpu", "--device 'tpu'");
	EXPECT_GEN(1, "resnet50 -o no/such/dir/x.onnx", "no/such/dir/x.onnx: No such file");
	EXPECT_GEN(0, "--help", "--recompute[=K]");
	EXPECT_NE(NULL, strstr(self->out, "gradient"));
	EXPECT_GEN(2, "bert-large-train -o x --recompute=0",
		   "--recompute '0': want an integer from 1 to 1000");
	EXPECT_GEN(2, "bert-large-train -o x --recompute=abc",
		   "--recompute 'abc': want an integer from 1 to 1000");
	EXPECT_GEN(2, "resnet50-train -o x --recompute=1001",
		   "--recompute '1001': want an integer");
	EXPECT_GEN(2, "bert-large-train -o x --recompute 2",
		   "'2': not a model (an option's value: --recompute=K");
	EXPECT_GEN(2, "bert-large -o x --recompute", "bert-large takes no --recompute");
	EXPECT_GEN(2, "lstm --recompute=2", "lstm takes no --recompute");
	/* nothing written on a usage error */
	EXPECT_EQ(-1, file_size("x"));
}

/*
 * The documented counts: ResNet-50 175 nodes, 443 tensors (268 graph
 * inputs: the image and 267 weights), 25,557,032 parameters and 53,120
 * BN running statistics; symbolic batch by default.
 */
TEST_F(models, resnet50_onnx)
{
	GEN_JSON("resnet50 -o r50.onnx");
	EXPECT_EQ(175, json_u64(&self->j, "nodes"));
	EXPECT_EQ(443, json_u64(&self->j, "tensors"));
	EXPECT_EQ(268, json_u64(&self->j, "inputs"));
	EXPECT_EQ(25557032, json_u64(&self->j, "parameters"));
	EXPECT_EQ(53120, json_u64(&self->j, "buffers"));
	EXPECT_EQ((25557032 + 53120) * 4ULL, json_u64(&self->j, "parameter_bytes"));
	EXPECT_STREQ("batch", json_str(&self->j, "batch"));
	EXPECT_EQ(file_size("r50.onnx"), (off_t)json_u64(&self->j, "file_bytes"));
	/* weights without data: kilobytes, not 100 MB */
	EXPECT_GT(64 * 1024, file_size("r50.onnx"));
	if (!have_onnx())
		SKIP(return, PYTHON " has no onnx package");
	CHECK_ONNX("r50.onnx", "--nodes 175 --tensors 443 --params 25557032 "
		   "--buffers 53120 --elem float --symbolic");
	ASSERT_EQ(0, gen("resnet50 --batch 4 -o r50b4.onnx", self->out,
			 sizeof(self->out)));
	CHECK_ONNX("r50b4.onnx", "--nodes 175 --tensors 443 --params 25557032 "
		   "--infer --output output=4x1000");
	ASSERT_EQ(0, gen("resnet50 --batch 2 --image 160 --dtype fp16 -o r50h.onnx",
			 self->out, sizeof(self->out)));
	CHECK_ONNX("r50h.onnx", "--params 25557032 --elem float16 --infer "
		   "--output output=2x1000");
}

/* ResNet-152: 515 nodes, 1293 tensors, 60,192,808 parameters. */
TEST_F(models, resnet152_onnx)
{
	GEN_JSON("resnet152 -o r152.onnx");
	EXPECT_EQ(515, json_u64(&self->j, "nodes"));
	EXPECT_EQ(1293, json_u64(&self->j, "tensors"));
	EXPECT_EQ(60192808, json_u64(&self->j, "parameters"));
	EXPECT_EQ(151424, json_u64(&self->j, "buffers"));
	EXPECT_GT(192 * 1024, file_size("r152.onnx"));
	if (!have_onnx())
		SKIP(return, PYTHON " has no onnx package");
	CHECK_ONNX("r152.onnx", "--nodes 515 --tensors 1293 --params 60192808 "
		   "--buffers 151424 --symbolic");
	ASSERT_EQ(0, gen("resnet152 --batch 1 -o r152b1.onnx", self->out,
			 sizeof(self->out)));
	CHECK_ONNX("r152b1.onnx", "--params 60192808 --infer --output output=1x1000");
}

/*
 * BERT-large: 335,141,888 parameters; 905 nodes and 1311 tensors with
 * symbolic batch and seq, 903 and 1309 with a fixed seq (the sequence
 * length is a constant instead of Shape -> Gather).
 */
TEST_F(models, bert_large_onnx)
{
	GEN_JSON("bert-large -o bert.onnx");
	EXPECT_EQ(905, json_u64(&self->j, "nodes"));
	EXPECT_EQ(1311, json_u64(&self->j, "tensors"));
	EXPECT_EQ(335141888, json_u64(&self->j, "parameters"));
	EXPECT_STREQ("seq", json_str(&self->j, "seq"));
	EXPECT_GT(256 * 1024, file_size("bert.onnx"));
	GEN_JSON("bert-large --batch 2 --seq 128 -o bert_2_128.onnx");
	EXPECT_EQ(903, json_u64(&self->j, "nodes"));
	EXPECT_EQ(1309, json_u64(&self->j, "tensors"));
	EXPECT_EQ(128, json_u64(&self->j, "seq"));
	if (!have_onnx())
		SKIP(return, PYTHON " has no onnx package");
	CHECK_ONNX("bert.onnx", "--nodes 905 --tensors 1311 --params 335141888 "
		   "--buffers 0 --elem float --symbolic");
	CHECK_ONNX("bert_2_128.onnx", "--nodes 903 --tensors 1309 "
		   "--params 335141888 --infer "
		   "--output last_hidden_state=2x128x1024 "
		   "--output pooler_output=2x1024");
	ASSERT_EQ(0, gen("bert-large --batch 1 --seq 384 --dtype fp16 -o berth.onnx",
			 self->out, sizeof(self->out)));
	CHECK_ONNX("berth.onnx", "--params 335141888 --elem float16 --infer "
		   "--output last_hidden_state=1x384x1024");
	ASSERT_EQ(0, gen("bert-large --dtype fp16 -o berths.onnx", self->out,
			 sizeof(self->out)));
	CHECK_ONNX("berths.onnx", "--params 335141888 --elem float16 --symbolic");
}

/* Generate @args, plan it; the plan's text in self->out. */
static int gen_plan(const char *args, const char *file, char *out, size_t len)
{
	char cmd[PATH_MAX * 2 + 1024];

	snprintf(cmd, sizeof(cmd), "'%s' %s -o %s 2>/dev/null && '%s' %s",
		 models, args, file, plan, file);
	return sh(cmd, out, len);
}

/*
 * ResNet-50 training, batch 32, fp32: 511 ops, 1317 tensors (591
 * inputs), 10,121,109,000 bytes without reuse; planned. --grad-reuse
 * changes when the updates run, not what exists.
 */
TEST_F(models, resnet50_train_plans)
{
	uint64_t peak, peak_reuse, jpeak, jlb;

	GEN_JSON("resnet50-train -o r50t.graph");
	/* planned by the generator too: the same figures as metadef-plan's */
	jpeak = json_u64(&self->j, "peak");
	jlb = json_u64(&self->j, "lower_bound");
	EXPECT_EQ(511, json_u64(&self->j, "ops"));
	EXPECT_EQ(1317, json_u64(&self->j, "tensors"));
	EXPECT_EQ(591, json_u64(&self->j, "inputs"));
	EXPECT_EQ(25557032, json_u64(&self->j, "parameters"));
	EXPECT_EQ(10121109000ULL, json_u64(&self->j, "tensor_bytes"));
	ASSERT_EQ(0, gen_plan("resnet50-train", "r50t.graph", self->out,
			      sizeof(self->out))) TH_LOG("%s", self->out);
	EXPECT_EQ(1317, plan_field(self->out, "tensors"));
	EXPECT_EQ(10121109000ULL, plan_field(self->out, "no reuse"));
	peak = plan_field(self->out, "peak");
	EXPECT_EQ(jpeak, peak);
	EXPECT_EQ(jlb, plan_field(self->out, "lower bound"));
	TH_LOG("resnet50-train: peak %llu", (unsigned long long)peak);
	ASSERT_EQ(0, gen_plan("resnet50-train --grad-reuse", "r50r.graph",
			      self->out, sizeof(self->out)));
	EXPECT_EQ(1317, plan_field(self->out, "tensors"));
	peak_reuse = plan_field(self->out, "peak");
	EXPECT_GE(peak, peak_reuse);
	/* mixed precision: fp32 masters are inputs too */
	GEN_JSON("resnet50-train --batch 8 --dtype fp16 -o r50h.graph");
	EXPECT_EQ(25557032ULL * 4, json_u64(&self->j, "master_bytes"));
	EXPECT_EQ(25557032ULL * 8, json_u64(&self->j, "optimizer_bytes"));
	EXPECT_EQ(0, gen_plan("resnet50-train --batch 8 --dtype fp16",
			      "r50h.graph", self->out, sizeof(self->out)));
}

/*
 * BERT-large fine-tuning, batch 8, seq 512, fp32: 1300 ops, 3047
 * tensors, 46,741,104,456 bytes without reuse, 335,143,938 parameters
 * (the model's and the 1024 x 2 classifier's 2,050). With batch 1 and
 * seq 128 the weight gradients (1.34 GB) dominate: updating each weight
 * as soon as its gradient is complete lowers the peak by most of them.
 */
TEST_F(models, bert_large_train_plans)
{
	uint64_t lb, peak, peak_reuse;

	GEN_JSON("bert-large-train -o bt.graph");
	EXPECT_EQ(1300, json_u64(&self->j, "ops"));
	EXPECT_EQ(3047, json_u64(&self->j, "tensors"));
	EXPECT_EQ(335143938, json_u64(&self->j, "parameters"));
	EXPECT_EQ(46741104456ULL, json_u64(&self->j, "tensor_bytes"));
	ASSERT_EQ(0, gen_plan("bert-large-train", "bt.graph", self->out,
			      sizeof(self->out))) TH_LOG("%s", self->out);
	EXPECT_EQ(3047, plan_field(self->out, "tensors"));
	lb = plan_field(self->out, "lower bound");
	/*
	 * activations + gradients at the peak: 10-20 GB on top of the
	 * weights and Adam's moments (4 GB)
	 */
	EXPECT_LT(14ULL << 30, lb);
	EXPECT_GT(24ULL << 30, lb);
	TH_LOG("bert-large-train: lower bound %llu, peak %llu",
	       (unsigned long long)lb,
	       (unsigned long long)plan_field(self->out, "peak"));

	ASSERT_EQ(0, gen_plan("bert-large-train --batch 1 --seq 128", "b1.graph",
			      self->out, sizeof(self->out)));
	peak = plan_field(self->out, "peak");
	ASSERT_EQ(0, gen_plan("bert-large-train --batch 1 --seq 128 --grad-reuse",
			      "b1r.graph", self->out, sizeof(self->out)));
	peak_reuse = plan_field(self->out, "peak");
	TH_LOG("batch 1, seq 128: peak %llu, with --grad-reuse %llu",
	       (unsigned long long)peak, (unsigned long long)peak_reuse);
	EXPECT_LT(peak_reuse + (512ULL << 20), peak);

	GEN_JSON("bert-large-train --batch 2 --seq 128 --dtype fp16 -o bth.graph");
	EXPECT_EQ(3440, json_u64(&self->j, "tensors"));
	EXPECT_EQ(335143938ULL * 4, json_u64(&self->j, "master_bytes"));
	EXPECT_EQ(0, gen_plan("bert-large-train --batch 2 --seq 128 --dtype fp16",
			      "bth.graph", self->out, sizeof(self->out)));
}

/*
 * LSTM: steps - 1 barriers in parallel mode; 32 steps x 2 layers of 1024:
 * 352 ops, 555 tensors, 16,785,408 parameters.
 */
TEST_F(models, lstm_barriers)
{
	GEN_JSON("lstm -o lstm.graph");
	EXPECT_EQ(31, json_u64(&self->j, "barriers"));
	EXPECT_EQ(352, json_u64(&self->j, "ops"));
	EXPECT_EQ(555, json_u64(&self->j, "tensors"));
	EXPECT_EQ(16785408, json_u64(&self->j, "parameters"));
	EXPECT_EQ(0, sh("grep -c '^barrier$' lstm.graph", self->out,
			sizeof(self->out)));
	EXPECT_EQ(31, atoi(self->out));
	EXPECT_EQ(0, sh("grep -cx 'mode parallel' lstm.graph", self->out,
			sizeof(self->out)));
	ASSERT_EQ(0, gen_plan("lstm", "lstm.graph", self->out,
			      sizeof(self->out))) TH_LOG("%s", self->out);
	EXPECT_EQ(555, plan_field(self->out, "tensors"));
	/* the barriers let step t reuse the memory of the steps before */
	EXPECT_GT(plan_field(self->out, "no reuse") / 2,
		  plan_field(self->out, "peak"));

	GEN_JSON("lstm --steps 5 --layers 3 --hidden 256 --batch 16 --dtype fp16 "
		 "-o small.graph");
	EXPECT_EQ(4, json_u64(&self->j, "barriers"));
	EXPECT_EQ(5 + 5 * 3 * 5, json_u64(&self->j, "ops"));
	EXPECT_EQ(0, sh("grep -c '^barrier$' small.graph", self->out,
			sizeof(self->out)));
	EXPECT_EQ(4, atoi(self->out));
	ASSERT_EQ(0, gen_plan("lstm --steps 5 --layers 3 --hidden 256 --batch 16 "
			      "--dtype fp16", "small.graph", self->out,
			      sizeof(self->out))) TH_LOG("%s", self->out);
	EXPECT_EQ(1 + 3 * 5 + 5 + 8 * 15, plan_field(self->out, "tensors"));
}

/* ------------------------------------------------ activation recomputation */

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * One BERT-large encoder layer as train.c writes it (Hugging Face's
 * BertLayer): its forward ops and how many tensors each makes. Dropout
 * makes its output and a byte mask, LayerNorm its output and the row
 * statistics; the mask op (+ extended mask) and ReLU-like ops are in
 * place but still outputs of their own.
 */
static const int bert_layer_outs[] = {
	1, 1, 1,	/* query, key, value */
	1, 1, 1, 2,	/* scores, mask, softmax, dropout */
	1,		/* context */
	1, 2, 1, 2,	/* attention.output: dense, dropout, residual, LN */
	1, 1,		/* intermediate: dense, gelu */
	1, 2, 1, 2,	/* output: dense, dropout, residual, LN */
};
#define BERT_LAYERS	24

static unsigned long bert_layer_tensors(void)
{
	unsigned long n = 0;
	size_t i;

	for (i = 0; i < ARRAY_LEN(bert_layer_outs); i++)
		n += bert_layer_outs[i];
	return n;
}

/*
 * The bytes one BERT-large layer makes at @b x @s, fp32: twelve
 * [rows, 1024] float tensors (q, k, v, context, two dense outputs, two
 * dropout outputs, two residuals, two LayerNorm outputs), two byte
 * masks of that shape, four [b, 16, s, s] floats (scores, masked,
 * softmax, dropout) and their byte mask, two [rows, 4096] floats (the
 * intermediate dense and GELU), two LayerNorm statistics (mean and rstd
 * per row, fp32).
 */
static uint64_t bert_layer_bytes(uint64_t b, uint64_t s)
{
	uint64_t rows = b * s, n = rows * 1024, attn = b * 16 * s * s;

	return 12 * n * 4 + 2 * n + 4 * attn * 4 + attn +
	       2 * rows * 4096 * 4 + 2 * rows * 2 * 4;
}

TEST_F(models, recompute_counts)
{
	unsigned long ops, tensors, per_ops = ARRAY_LEN(bert_layer_outs);
	unsigned long per_t = bert_layer_tensors();
	static const long ks[] = { 1, 5, 24, 100 };
	static const int blocks[4] = { 3, 4, 6, 3 };
	unsigned long r_ops = 0, r_t = 0;
	uint64_t bytes;
	char args[256];
	size_t i;

	EXPECT_EQ(18, per_ops);
	EXPECT_EQ(23, per_t);
	GEN_JSON("bert-large-train --batch 2 --seq 32 -o p.graph");
	ops = json_u64(&self->j, "ops");
	tensors = json_u64(&self->j, "tensors");
	bytes = json_u64(&self->j, "tensor_bytes");
	EXPECT_EQ(0, json_u64(&self->j, "recompute"));
	EXPECT_EQ(0, json_u64(&self->j, "recompute_ops"));
	for (i = 0; i < ARRAY_LEN(ks); i++) {
		long k = ks[i];

		snprintf(args, sizeof(args),
			 "bert-large-train --batch 2 --seq 32 --recompute=%ld -o r.graph --json 2>/dev/null",
			 k);
		jv_free(&self->j);
		ASSERT_EQ(0, gen(args, self->out, sizeof(self->out)));
		ASSERT_TRUE(json_parse(self->out, &self->j));
		/* each layer re-run once, whatever K */
		EXPECT_EQ(ops + BERT_LAYERS * per_ops, json_u64(&self->j, "ops"));
		EXPECT_EQ(tensors + BERT_LAYERS * per_t,
			  json_u64(&self->j, "tensors"));
		EXPECT_EQ(BERT_LAYERS * per_ops,
			  json_u64(&self->j, "recompute_ops"));
		EXPECT_EQ(BERT_LAYERS * per_t,
			  json_u64(&self->j, "recompute_tensors"));
		EXPECT_EQ(BERT_LAYERS * bert_layer_bytes(2, 32),
			  json_u64(&self->j, "recompute_bytes"));
		EXPECT_EQ(bytes + BERT_LAYERS * bert_layer_bytes(2, 32),
			  json_u64(&self->j, "tensor_bytes"));
		EXPECT_EQ((BERT_LAYERS + k - 1) / k,
			  json_u64(&self->j, "checkpoints"));
		EXPECT_EQ(k, json_u64(&self->j, "recompute"));
	}
	/* --recompute alone is K = 1; --grad-reuse changes no count */
	GEN_JSON("bert-large-train --batch 2 --seq 32 --recompute --grad-reuse -o r.graph");
	EXPECT_EQ(BERT_LAYERS, json_u64(&self->j, "checkpoints"));
	EXPECT_EQ(ops + BERT_LAYERS * per_ops, json_u64(&self->j, "ops"));
	EXPECT_STREQ("grad-reuse", json_str(&self->j, "policy"));

	/*
	 * ResNet-50's bottleneck: conv-BN-ReLU twice (3 ops, 4 tensors
	 * each: BN's output and statistics), conv-BN (2, 3), the add and
	 * ReLU (1, 1 each); the first block of a stage has a conv-BN
	 * projection besides (2, 3).
	 */
	for (i = 0; i < 4; i++) {
		r_ops += blocks[i] * (3 + 3 + 2 + 1 + 1) + 2;
		r_t += blocks[i] * (4 + 4 + 3 + 1 + 1) + 3;
	}
	GEN_JSON("resnet50-train --batch 2 --image 64 -o p.graph");
	ops = json_u64(&self->j, "ops");
	tensors = json_u64(&self->j, "tensors");
	GEN_JSON("resnet50-train --batch 2 --image 64 --recompute=3 -o r.graph");
	EXPECT_EQ(ops + r_ops, json_u64(&self->j, "ops"));
	EXPECT_EQ(tensors + r_t, json_u64(&self->j, "tensors"));
	EXPECT_EQ(r_ops, json_u64(&self->j, "recompute_ops"));
	EXPECT_EQ((16 + 2) / 3, json_u64(&self->j, "checkpoints"));
}

/* A graph file read back: every tensor's size, maker, first and last line. */
struct gt {
	char *name;
	char *op;		/* the op that makes it; NULL: an input */
	uint64_t size;
	int def, last;		/* line numbers */
};

struct gfile {
	char *text;
	struct gt *t;
	size_t n, cap;
	size_t *hash, hcap;	/* index + 1, open addressing */
	int backward;		/* the "# backward" line */
	int *rc_line;		/* per layer: its "# recompute" comment */
	int nrc;
};

static size_t gf_slot(const struct gfile *f, const char *name)
{
	size_t h = 5381;
	const char *p;

	for (p = name; *p; p++)
		h = h * 33 + (unsigned char)*p;
	h &= f->hcap - 1;
	while (f->hash[h] && strcmp(f->t[f->hash[h] - 1].name, name))
		h = (h + 1) & (f->hcap - 1);
	return h;
}

static struct gt *gf_find(const struct gfile *f, const char *name)
{
	size_t h = gf_slot(f, name);

	return f->hash[h] ? &f->t[f->hash[h] - 1] : NULL;
}

/* A new tensor; NULL when the name is taken (a malformed file). */
static struct gt *gf_add(struct gfile *f, char *name)
{
	size_t h;

	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 1024;
		f->t = realloc(f->t, f->cap * sizeof(*f->t));
	}
	if (!f->t)
		return NULL;
	h = gf_slot(f, name);
	if (f->hash[h])
		return NULL;
	f->hash[h] = f->n + 1;
	memset(&f->t[f->n], 0, sizeof(f->t[0]));
	f->t[f->n].name = name;
	return &f->t[f->n++];
}

/*
 * Read @file (in dir). Records the "# backward" line and, for BERT, the
 * line of each layer's "# recompute encoder.layer.L..." comment (the
 * first layer of a segment). 0, or -1 on anything malformed.
 */
static int gf_read(struct gfile *f, const char *file)
{
	char path[PATH_MAX + 64], *line, *save = NULL, *tok, *save2;
	size_t len;
	int no = 0;

	memset(f, 0, sizeof(*f));
	f->backward = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f->text = md_read_file(path, &len);
	if (!f->text)
		return -1;
	for (line = f->text; *line; line++)
		f->hcap += *line == '\n';
	f->hcap = 4 * f->hcap + 16;
	while (f->hcap & (f->hcap - 1))
		f->hcap++;
	f->hash = calloc(f->hcap, sizeof(size_t));
	f->rc_line = calloc(BERT_LAYERS, sizeof(int));
	if (!f->hash || !f->rc_line)
		return -1;
	for (line = strtok_r(f->text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		bool outs = false;
		char *op;
		int l;

		no++;
		if (!strcmp(line, "# backward"))
			f->backward = no;
		if (sscanf(line, "# recompute encoder.layer.%d.", &l) == 1 &&
		    l >= 0 && l < BERT_LAYERS)
			f->rc_line[l] = no;
		if (!strncmp(line, "input ", 6)) {
			struct gt *t;

			strtok_r(line, " ", &save2);
			t = gf_add(f, strtok_r(NULL, " ", &save2));
			tok = strtok_r(NULL, " ", &save2);
			if (!t || !tok)
				return -1;
			t->size = strtoull(tok, NULL, 10);
			t->def = t->last = no;
			continue;
		}
		if (strncmp(line, "op ", 3))
			continue;
		strtok_r(line, " ", &save2);
		op = strtok_r(NULL, " ", &save2);
		while ((tok = strtok_r(NULL, " ", &save2))) {
			struct gt *t;
			char *c;

			if (!strcmp(tok, "->")) {
				outs = true;
				continue;
			}
			if (!outs) {
				t = gf_find(f, tok);
				if (!t)
					return -1;
				t->last = no;
				continue;
			}
			c = strchr(tok, ':');
			if (!c)
				return -1;
			*c = '\0';
			t = gf_add(f, tok);
			if (!t)
				return -1;
			t->size = strtoull(c + 1, NULL, 10);
			t->op = op;
			t->def = t->last = no;
			/* in place: the input's memory, used here */
			c = strchr(c + 1, '=');
			if (c && gf_find(f, c + 1))
				gf_find(f, c + 1)->last = no;
		}
	}
	return f->backward > 0 ? 0 : -1;
}

static void gf_free(struct gfile *f)
{
	free(f->text);
	free(f->t);
	free(f->hash);
	free(f->rc_line);
}

/* The encoder layer a forward op belongs to, or -1. */
static int layer_of(const char *op)
{
	int l;

	if (!op || strncmp(op, "encoder.layer.", 14))
		return -1;
	l = atoi(op + 14);
	return l >= 0 && l < BERT_LAYERS ? l : -1;
}

/*
 * With --recompute=K, checked from the file's lines alone: every tensor
 * a layer's forward makes dies before the backward starts, but the
 * checkpoints (the output of each segment's last layer, the next
 * segment's input), which live into it; every "recompute.NAME" is made in
 * the backward, after its segment's "# recompute" comment, with NAME's
 * size, and dies before the previous segment's recomputation starts.
 * Returns how many tensors break that (0 when all hold); *nrc: the
 * recomputed tensors seen.
 */
static int check_lifetimes(struct _test_data_models *self,
			   struct __test_metadata *_metadata,
			   const struct gfile *f, long k, size_t *nrc)
{
	char ck[64];
	int bad = 0;
	size_t i;

	*nrc = 0;
	for (i = 0; i < f->n; i++) {
		const struct gt *t = &f->t[i];
		int l, seg;

		if (t->op && !strncmp(t->name, "recompute.", 10)) {
			const struct gt *o = gf_find(f, t->name + 10);

			(*nrc)++;
			l = layer_of(o ? o->op : NULL);
			seg = l < 0 ? 0 : l / k;
			if (!o || o->size != t->size || l < 0 ||
			    t->def < f->rc_line[seg * k] ||
			    t->def < f->backward ||
			    (seg > 0 && t->last >= f->rc_line[(seg - 1) * k])) {
				if (bad++ < 5)
					TH_LOG("recomputed %s: lines %d..%d, size %llu",
					       t->name, t->def, t->last,
					       (unsigned long long)t->size);
			}
			continue;
		}
		l = layer_of(t->op);
		if (l < 0 || t->def > f->backward)
			continue;
		/* a checkpoint: the last layer of a segment's output */
		snprintf(ck, sizeof(ck), "encoder.layer.%d.output.LayerNorm.out",
			 l);
		if (k && (l + 1) % k == 0 && l + 1 < BERT_LAYERS &&
		    !strcmp(t->name, ck)) {
			if (t->last < f->backward && bad++ < 5)
				TH_LOG("checkpoint %s dies in the forward",
				       t->name);
			continue;
		}
		if (t->last > f->backward && bad++ < 5)
			TH_LOG("%s (layer %d) lives to line %d, backward at %d",
			       t->name, l, t->last, f->backward);
	}
	(void)self;
	return bad;
}

TEST_F(models, recompute_lifetimes)
{
	static const long ks[] = { 1, 2, 5 };
	struct gfile f;
	char args[256];
	size_t i, nrc;
	int bad;

	/* without recomputation the saved activations outlive the forward */
	ASSERT_EQ(0, gen("bert-large-train --batch 1 --seq 16 -o p.graph",
			 self->out, sizeof(self->out)));
	ASSERT_EQ(0, gf_read(&f, "p.graph"));
	bad = check_lifetimes(self, _metadata, &f, 0, &nrc);
	EXPECT_EQ(0, nrc);
	EXPECT_LT(BERT_LAYERS * 10, bad);
	gf_free(&f);
	for (i = 0; i < ARRAY_LEN(ks); i++) {
		snprintf(args, sizeof(args),
			 "bert-large-train --batch 1 --seq 16 --grad-reuse --recompute=%ld -o r.graph",
			 ks[i]);
		ASSERT_EQ(0, gen(args, self->out, sizeof(self->out)));
		ASSERT_EQ(0, gf_read(&f, "r.graph")) TH_LOG("%s", args);
		bad = check_lifetimes(self, _metadata, &f, ks[i], &nrc);
		EXPECT_EQ(0, bad) TH_LOG("%s", args);
		EXPECT_EQ(BERT_LAYERS * bert_layer_tensors(), nrc);
		gf_free(&f);
	}
}

/* Plan @file in this process; 0 when the plan validates. */
static int plan_validated(const char *file, uint64_t *peak, uint64_t *lb)
{
	char path[PATH_MAX + 64], *text;
	struct md_graph_plan gp;
	struct md_conflict c;
	struct md_graph *g;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	text = md_read_file(path, &len);
	if (!text)
		return -1;
	err = md_graph_new(&g);
	if (!err)
		err = md_graph_parse(g, text, len, NULL);
	free(text);
	memset(&gp, 0, sizeof(gp));
	if (!err)
		err = md_graph_plan(g, NULL, &gp);
	if (!err)
		err = md_graph_plan_validate(g, &gp, &c);
	if (!err)
		err = md_plan_validate(&gp.problem, gp.plan.offsets, &c);
	*peak = gp.plan.peak;
	*lb = gp.plan.lower_bound;
	md_graph_plan_free(&gp);
	md_graph_free(g);
	return err;
}

/*
 * Small configurations where the saved activations make the peak: with
 * recomputation the planned peak is strictly lower, and its plan is
 * valid (no two tensors alive together overlap).
 */
TEST_F(models, recompute_lowers_the_peak)
{
	static const char *const cfgs[] = {
		"bert-large-train --batch 4 --seq 256",
		"bert-large-train --batch 2 --seq 128 --grad-reuse",
		"resnet50-train --batch 8 --image 96",
	};
	uint64_t peak, lb, peak_rc, lb_rc;
	char args[256];
	size_t i;

	for (i = 0; i < ARRAY_LEN(cfgs); i++) {
		snprintf(args, sizeof(args), "%s -o p.graph", cfgs[i]);
		ASSERT_EQ(0, gen(args, self->out, sizeof(self->out)));
		snprintf(args, sizeof(args), "%s --recompute -o r.graph",
			 cfgs[i]);
		ASSERT_EQ(0, gen(args, self->out, sizeof(self->out)));
		ASSERT_EQ(0, plan_validated("p.graph", &peak, &lb));
		ASSERT_EQ(0, plan_validated("r.graph", &peak_rc, &lb_rc));
		TH_LOG("%s: peak %llu, with --recompute %llu", cfgs[i],
		       (unsigned long long)peak, (unsigned long long)peak_rc);
		EXPECT_LT(peak_rc, peak);
		EXPECT_LT(lb_rc, lb);
		EXPECT_LE(lb_rc, peak_rc);
	}
}

/*
 * Under valgrind, any leak or memory error fails: every model (small
 * sizes), and the error paths.
 */
TEST_F(models, no_leaks_under_valgrind)
{
	static const char *const runs[] = {
		"resnet50 -o a.onnx", "resnet152 --batch 1 --dtype fp16 -o a.onnx",
		"bert-large --json -o a.onnx",
		"resnet50-train --batch 2 --image 64 --json -o a.graph",
		"bert-large-train --batch 1 --seq 16 --dtype fp16 --grad-reuse -o a.graph",
		"lstm --steps 3 -o a.graph", "vgg16 -o a", "resnet50 -o no/such/a",
		"--help",
		"bert-large-train --batch 1 --seq 16 --grad-reuse --recompute=5 -o a.graph",
		"resnet50-train --batch 2 --image 64 --recompute --json -o a.graph",
		"resnet50-train --recompute=0 -o a.graph",
	};
	static const int rcs[] = { 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 2 };
	const char *vg = "valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99";
	char cmd[PATH_MAX + 1024];
	size_t i;

	if (system("valgrind --version >/dev/null 2>&1"))
		SKIP(return, "valgrind not installed (tools/deps.sh host)");
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s '%s' %s >/dev/null", vg, models,
			 runs[i]);
		EXPECT_EQ(rcs[i], sh(cmd, self->out, sizeof(self->out)))
			TH_LOG("%s: %s", runs[i], self->out);
	}
}

TEST_HARNESS_MAIN
