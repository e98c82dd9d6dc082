// SPDX-License-Identifier: GPL-2.0
/*
 * metadef-models: writes real models for the planner and the ONNX
 * importer: ONNX inference files (ResNet-50, ResNet-152, BERT-large) and
 * training / unrolled graphs in metadef's text format (include/metadef/
 * graph.h): ResNet-50 and BERT-large training steps, an unrolled LSTM.
 *
 * Where the shapes come from
 * --------------------------
 * ResNet (onnx.c, train.c): He, Zhang, Ren, Sun, "Deep Residual Learning
 *   for Image Recognition", 2015, Table 1: conv1 7x7/2 64, max pool 3x3/2,
 *   bottleneck stages conv2_x..conv5_x of [1x1 64, 3x3 64, 1x1 256] ...
 *   [1x1 512, 3x3 512, 1x1 2048], [3, 4, 6, 3] blocks for 50 layers and
 *   [3, 8, 36, 3] for 152, global average pool, 1000-way fc. The layout
 *   is torchvision's (torchvision/models/resnet.py, "ResNet V1.5"): the
 *   stride of a stage's first block on its 3x3 conv, the 1x1 projection
 *   (conv + BatchNorm, "downsample") on the first block of every stage,
 *   convolutions without bias, BatchNorm eps 1e-5, fc 2048 -> 1000 with
 *   bias. Parameters (conv and fc weights, fc bias, BN weight and bias):
 *   ResNet-50 25,557,032, ResNet-152 60,192,808, the figures torchvision
 *   publishes; BN running mean and variance are buffers (53,120 and
 *   151,424 values), declared as graph inputs too but not counted.
 * BERT-large (onnx.c, train.c): Devlin, Chang, Lee, Toutanova, "BERT:
 *   Pre-training of Deep Bidirectional Transformers for Language
 *   Understanding", 2018, section 3: L = 24, H = 1024, A = 16, FFN 4H =
 *   4096, GELU; vocabulary 30,522 WordPiece tokens, 512 positions, 2
 *   segment types (the released uncased_L-24_H-1024_A-16 bert_config.json,
 *   also Hugging Face's BertConfig: layer_norm_eps 1e-12). The layout is
 *   Hugging Face's BertModel (embeddings, encoder.layer.N.attention.self.
 *   query/key/value, attention.output.dense + LayerNorm, intermediate.
 *   dense, output.dense + LayerNorm, pooler.dense + tanh); the extended
 *   attention mask is (1 - mask) * -10000 as in its older releases.
 *   Parameters: embeddings 31,782,912 (30522x1024 + 512x1024 + 2x1024 +
 *   LayerNorm 2x1024), per layer 12,596,224 (4 x (1024x1024 + 1024) +
 *   1024x4096 + 4096 + 4096x1024 + 1024 + 2 LayerNorms x 2048), pooler
 *   1,049,600: 335,141,888 in all.
 * Training graphs (train.c): the forward ops of the same layers, each
 *   keeping what PyTorch's autograd saves for its backward (a conv its
 *   input and weight, BatchNorm its input and per-channel mean/invstd,
 *   ReLU its output, max pool its input and int64 indices, a linear layer
 *   its input and weight, softmax its output, dropout (p = 0.1 in BERT's
 *   training) its byte mask, LayerNorm its input and per-row mean/rstd,
 *   GELU its input), a cross-entropy loss, the backward in reverse order
 *   and Adam (Kingma and Ba, 2014: two fp32 moments per parameter). BERT
 *   is trained as the paper fine-tunes it for classification (section 4:
 *   the pooled output, dropout, a 1024 x 2 classifier).
 * LSTM (lstm.c): Hochreiter and Schmidhuber, 1997, in the usual fused
 *   form (the gates i, f, g, o as one [batch, 4 x hidden] product of the
 *   input and the previous hidden state, as cuDNN and PyTorch's nn.LSTM
 *   lay it out), stacked layers, unrolled over time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metadef/graph.h>

#include "models.h"

static const char *prog = "metadef-models";

/* ---------------------------------------------------------------- memory */

/* Every allocation of a run, freed at once at the end. */
static void **arena;
static size_t narena, carena;

void *mm_zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (p && narena == carena) {
		size_t c = carena ? carena * 2 : 1024;
		void **a = realloc(arena, c * sizeof(*a));

		if (!a) {
			free(p);
			p = NULL;
		} else {
			arena = a;
			carena = c;
		}
	}
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	arena[narena++] = p;
	return p;
}

void mm_free_all(void)
{
	while (narena)
		free(arena[--narena]);
	free(arena);
	arena = NULL;
	carena = 0;
}

char *mm_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = mm_zalloc(n + 1);
	va_start(ap, fmt);
	vsnprintf(s, n + 1, fmt, ap);
	va_end(ap);
	return s;
}

void mm_printf(struct mm_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->buf ? o->buf + o->len : NULL,
		      o->buf ? o->cap - o->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (!o->buf || o->len + n + 1 > o->cap) {
		size_t c = o->cap ? o->cap : 1 << 16;
		char *b;

		while (c < o->len + n + 1)
			c *= 2;
		b = realloc(o->buf, c);
		if (!b) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(1);
		}
		o->buf = b;
		o->cap = c;
		va_start(ap, fmt);
		vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
	}
	o->len += n;
}

const char *mm_dtype_name(enum mm_dtype d)
{
	return d == MM_FP16 ? "fp16" : "fp32";
}

/*
 * Parse the graph just written and plan it as metadef-plan does by
 * default: its lower bound and peak for the summary, and a check that
 * the text is a valid graph.
 */
static int plan_graph(const struct mm_out *out, struct mm_summary *s)
{
	struct md_plan_opts opts = { .strategy = MD_STRAT_ALL };
	struct md_graph_plan gp;
	struct md_error err = { 0 };
	struct md_graph *g;
	int ret;

	ret = md_graph_new(&g);
	if (ret)
		return ret;
	ret = md_graph_parse(g, out->buf, out->len, &err);
	if (ret) {
		fprintf(stderr, "%s: internal error: the graph does not parse: line %u: %s\n",
			prog, err.line, err.msg);
		md_graph_free(g);
		return ret;
	}
	memset(&gp, 0, sizeof(gp));
	ret = md_graph_plan(g, &opts, &gp);
	if (ret) {
		fprintf(stderr, "%s: planning failed: %s\n", prog, strerror(-ret));
	} else {
		s->lower_bound = gp.stats.lower_bound;
		s->peak = gp.stats.peak;
	}
	md_graph_plan_free(&gp);
	md_graph_free(g);
	return ret;
}

/* ---------------------------------------------------------------- models */

struct model {
	const char *name;
	const char *what;
	bool onnx;
	int arg;
	const char *opts;	/* options it takes (usage check) */
};

static const struct model models[] = {
	{ "resnet50", "ResNet-50 v1.5 inference, ONNX opset 17", true, 50,
	  "batch image dtype" },
	{ "resnet152", "ResNet-152 v1.5 inference, ONNX opset 17", true, 152,
	  "batch image dtype" },
	{ "bert-large", "BERT-large (24 x 1024, 16 heads) inference, ONNX opset 17",
	  true, 0, "batch seq dtype" },
	{ "resnet50-train", "ResNet-50 training step with Adam, graph format",
	  false, 0, "batch image dtype grad-reuse recompute device" },
	{ "bert-large-train", "BERT-large fine-tuning step with Adam, graph format",
	  false, 1, "batch seq dtype grad-reuse recompute device" },
	{ "lstm", "stacked LSTM unrolled over time (mode parallel), graph format",
	  false, 2, "batch steps layers hidden dtype device" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: %s MODEL [options]\n"
		"\n"
		"Write a real model: an ONNX file (opset 17, IR version 8; weights\n"
		"are graph inputs with their shapes and no data) or a graph in\n"
		"metadef's text format (include/metadef/graph.h; sizes in bytes).\n"
		"\n"
		"models:\n", prog);
	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		fprintf(f, "  %-18s %s\n", models[i].name, models[i].what);
	fprintf(f,
		"\n"
		"options:\n"
		"  -o, --output FILE   write the model to FILE (default: stdout)\n"
		"  --json              print a JSON summary on stdout (counts,\n"
		"                      parameters, bytes); needs -o\n"
		"  --batch N           batch size (ONNX default: symbolic \"batch\";\n"
		"                      training default 32 for ResNet, 8 for BERT,\n"
		"                      LSTM 64)\n"
		"  --seq N             BERT sequence length (ONNX default: symbolic\n"
		"                      \"seq\"; training default 512)\n"
		"  --image N           ResNet input height and width (default 224)\n"
		"  --dtype fp32|fp16   float type of inputs, weights, activations\n"
		"                      (training fp16: mixed precision with fp32\n"
		"                      master weights and Adam moments)\n"
		"  --grad-reuse        training: each weight's Adam update runs as\n"
		"                      soon as its gradient is complete (default:\n"
		"                      one optimizer step after the whole backward)\n"
		"  --recompute[=K]     training: activation recomputation (gradient\n"
		"                      checkpointing): only the input of every K\n"
		"                      layers (BERT: encoder layers; ResNet:\n"
		"                      bottleneck blocks; K from 1 to 1000, default\n"
		"                      1) is kept for the backward, which re-runs\n"
		"                      their forward just before their backward\n"
		"                      (one more forward pass of them)\n"
		"  --steps N           LSTM time steps (default 32)\n"
		"  --layers N          LSTM layers (default 2)\n"
		"  --hidden N          LSTM hidden size = input size (default 1024)\n"
		"  --device cpu|gpu|npu  graph format: the device line (default gpu)\n"
		"  -h, --help          this text\n"
		"\n"
		"exit status: 0 ok, 1 failure (writing), 2 bad usage\n");
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(%s --help lists the models and options)\n", prog);
	return 2;
}

static int number(const char *opt, const char *s, long max, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	if (errno || end == s || *end || *v < 1 || *v > max)
		return bad("--%s '%s': want an integer from 1 to %ld", opt, s,
			   max);
	return 0;
}

static bool takes(const struct model *m, const char *opt)
{
	const char *p = strstr(m->opts, opt);
	size_t n = strlen(opt);

	return p && (p[n] == ' ' || !p[n]) && (p == m->opts || p[-1] == ' ');
}

/* Graph inputs: alive for the whole run. */
static uint64_t resident(const struct mm_summary *s)
{
	return s->weight_bytes + s->master_bytes + s->optim_bytes +
	       s->data_bytes;
}

static void json(FILE *f, const struct mm_opts *o, const struct model *m,
		 const struct mm_summary *s, size_t file_bytes)
{
	fprintf(f, "{\"model\": \"%s\", \"format\": \"%s\", \"dtype\": \"%s\"",
		m->name, s->format, mm_dtype_name(o->dtype));
	if (takes(m, "batch")) {
		if (o->batch)
			fprintf(f, ", \"batch\": %ld", o->batch);
		else
			fprintf(f, ", \"batch\": \"batch\"");
	}
	if (takes(m, "seq")) {
		if (o->seq)
			fprintf(f, ", \"seq\": %ld", o->seq);
		else
			fprintf(f, ", \"seq\": \"seq\"");
	}
	if (takes(m, "image"))
		fprintf(f, ", \"image\": %ld", o->image);
	if (!m->onnx && m->arg != 2)
		fprintf(f, ", \"policy\": \"%s\", \"recompute\": %ld, \"checkpoints\": %lu, \"recompute_ops\": %lu, \"recompute_tensors\": %lu, \"recompute_bytes\": %llu",
			o->grad_reuse ? "grad-reuse" : "step-at-end",
			o->recompute, s->checkpoints, s->recompute_ops,
			s->recompute_tensors,
			(unsigned long long)s->recompute_bytes);
	if (m->arg == 2 && !m->onnx)
		fprintf(f, ", \"steps\": %ld, \"layers\": %ld, \"hidden\": %ld",
			o->steps, o->layers, o->hidden);
	fprintf(f, ", \"%s\": %lu, \"tensors\": %lu, \"inputs\": %lu",
		m->onnx ? "nodes" : "ops", s->nodes, s->tensors, s->inputs);
	if (m->onnx)
		fprintf(f, ", \"initializers\": %lu, \"opset\": 17, \"ir_version\": 8",
			s->initializers);
	else
		fprintf(f, ", \"barriers\": %lu", s->barriers);
	fprintf(f, ", \"parameters\": %llu, \"buffers\": %llu, \"parameter_bytes\": %llu",
		(unsigned long long)s->params, (unsigned long long)s->buffers,
		(unsigned long long)s->param_bytes);
	if (!m->onnx)
		fprintf(f,
			", \"lower_bound\": %llu, \"peak\": %llu, \"resident_bytes\": %llu",
			(unsigned long long)s->lower_bound,
			(unsigned long long)s->peak,
			(unsigned long long)resident(s));
	if (!m->onnx)
		fprintf(f,
			", \"tensor_bytes\": %llu, \"weight_bytes\": %llu, \"master_bytes\": %llu, \"optimizer_bytes\": %llu, \"data_bytes\": %llu, \"activation_bytes\": %llu, \"activation_grad_bytes\": %llu, \"weight_grad_bytes\": %llu",
			(unsigned long long)s->tensor_bytes,
			(unsigned long long)s->weight_bytes,
			(unsigned long long)s->master_bytes,
			(unsigned long long)s->optim_bytes,
			(unsigned long long)s->data_bytes,
			(unsigned long long)s->act_bytes,
			(unsigned long long)s->act_grad_bytes,
			(unsigned long long)s->weight_grad_bytes);
	fprintf(f, ", \"file_bytes\": %zu}\n", file_bytes);
}

int main(int argc, char **argv)
{
	enum { O_JSON = 256, O_BATCH, O_SEQ, O_IMAGE, O_DTYPE, O_REUSE,
	       O_RECOMPUTE, O_STEPS, O_LAYERS, O_HIDDEN, O_DEVICE };
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, O_JSON },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "seq", required_argument, NULL, O_SEQ },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "dtype", required_argument, NULL, O_DTYPE },
		{ "grad-reuse", no_argument, NULL, O_REUSE },
		{ "recompute", optional_argument, NULL, O_RECOMPUTE },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "layers", required_argument, NULL, O_LAYERS },
		{ "hidden", required_argument, NULL, O_HIDDEN },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mm_opts o = { .image = 224, .device = "gpu" };
	const char *given[16], *path = NULL;
	struct mm_summary s = { 0 };
	struct mm_out out = { 0 };
	const struct model *m = NULL;
	bool want_json = false;
	size_t ngiven = 0, i;
	int c, ret;
	FILE *f;

	while ((c = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		if (c >= O_BATCH && ngiven < 16)
			given[ngiven++] = lopts[c - O_JSON + 1].name;
		switch (c) {
		case 'o':
			path = optarg;
			break;
		case O_JSON:
			want_json = true;
			break;
		case O_BATCH:
			if (number("batch", optarg, 1L << 20, &o.batch))
				return 2;
			break;
		case O_SEQ:
			if (number("seq", optarg, 512, &o.seq))
				return 2;
			break;
		case O_IMAGE:
			if (number("image", optarg, 4096, &o.image))
				return 2;
			if (o.image < 32)
				return bad("--image %ld: want at least 32 (five stride-2 stages)",
					   o.image);
			break;
		case O_DTYPE:
			if (!strcmp(optarg, "fp32"))
				o.dtype = MM_FP32;
			else if (!strcmp(optarg, "fp16"))
				o.dtype = MM_FP16;
			else
				return bad("--dtype '%s': want fp32 or fp16", optarg);
			break;
		case O_REUSE:
			o.grad_reuse = true;
			break;
		case O_RECOMPUTE:
			o.recompute = 1;
			if (optarg && number("recompute", optarg, 1000,
					     &o.recompute))
				return 2;
			break;
		case O_STEPS:
			if (number("steps", optarg, 100000, &o.steps))
				return 2;
			break;
		case O_LAYERS:
			if (number("layers", optarg, 1000, &o.layers))
				return 2;
			break;
		case O_HIDDEN:
			if (number("hidden", optarg, 1L << 16, &o.hidden))
				return 2;
			break;
		case O_DEVICE:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "gpu") &&
			    strcmp(optarg, "npu"))
				return bad("--device '%s': want cpu, gpu or npu", optarg);
			o.device = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return bad("bad option");
		}
	}
	if (optind >= argc)
		return bad("no model named");
	if (optind + 1 < argc && argv[optind + 1][0] >= '0' &&
	    argv[optind + 1][0] <= '9')
		return bad("'%s': not a model (an option's value: --recompute=K takes it after '=')",
			   argv[optind + 1]);
	if (optind + 1 < argc)
		return bad("one model at a time ('%s' and '%s')", argv[optind],
			   argv[optind + 1]);
	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(argv[optind], models[i].name))
			m = &models[i];
	if (!m)
		return bad("unknown model '%s'", argv[optind]);
	for (i = 0; i < ngiven; i++)
		if (!takes(m, given[i]))
			return bad("%s takes no --%s", m->name, given[i]);
	if (want_json && !path)
		return bad("--json prints the summary on stdout: write the model with -o FILE");
	if (m->onnx && !path && isatty(STDOUT_FILENO))
		return bad("an ONNX model is binary: write it with -o FILE");
	o.model = m->name;
	if (!m->onnx) {
		if (!o.batch)
			o.batch = m->arg == 0 ? 32 : m->arg == 1 ? 8 : 64;
		if (!o.seq)
			o.seq = 512;
		if (!o.steps)
			o.steps = 32;
		if (!o.layers)
			o.layers = 2;
		if (!o.hidden)
			o.hidden = 1024;
	}

	if (m->onnx && m->arg)
		ret = mm_resnet_onnx(&o, m->arg, &out, &s);
	else if (m->onnx)
		ret = mm_bert_onnx(&o, &out, &s);
	else if (m->arg == 0)
		ret = mm_resnet_train(&o, &out, &s);
	else if (m->arg == 1)
		ret = mm_bert_train(&o, &out, &s);
	else
		ret = mm_lstm(&o, &out, &s);
	if (!ret && !m->onnx)
		ret = plan_graph(&out, &s);
	if (ret)
		goto fail;

	f = path ? fopen(path, "wb") : stdout;
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		goto fail;
	}
	if (fwrite(out.buf, 1, out.len, f) != out.len ||
	    (path ? fclose(f) : fflush(f)) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path ? path : "stdout",
			strerror(errno));
		if (path)
			unlink(path);
		goto fail;
	}
	if (want_json)
		json(stdout, &o, m, &s, out.len);
	else if (m->onnx)
		fprintf(stderr, "%s: %s: %lu nodes, %lu tensors, %llu parameters, %zu bytes\n",
			prog, m->name, s.nodes, s.tensors,
			(unsigned long long)s.params, out.len);
	else
		fprintf(stderr, "%s: %s: %lu ops, %lu tensors, %llu parameters, %zu bytes; no reuse %llu, lower bound %llu (%llu beyond the inputs), planned peak %llu%s\n",
			prog, m->name, s.nodes, s.tensors,
			(unsigned long long)s.params, out.len,
			(unsigned long long)s.tensor_bytes,
			(unsigned long long)s.lower_bound,
			(unsigned long long)(s.lower_bound - resident(&s)),
			(unsigned long long)s.peak,
			o.recompute ?
			mm_fmt("; recomputed in the backward: %lu ops, %lu tensors, %llu bytes (%lu checkpoints)",
			       s.recompute_ops, s.recompute_tensors,
			       (unsigned long long)s.recompute_bytes,
			       s.checkpoints) : "");
	if (!m->onnx)
		free(out.buf);
	mm_free_all();
	return 0;
fail:
	if (!m->onnx)
		free(out.buf);
	mm_free_all();
	return 1;
}
