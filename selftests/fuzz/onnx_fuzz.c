// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: md_graph_from_onnx() (lib/onnx.c, lib/onnx_shape.c) on
 * arbitrary bytes, with import options picked by the input's hash
 * (symbolic dims, a float storage type, weights in or out).
 *
 * An input starting with the byte 0xB0 is not a model but a recipe for
 * one (build_model()): small random graphs of the operators the shape
 * inference knows, with random inputs, attributes and int64 constants,
 * packed with the test's builder (selftests/lib/onnx_build.h). Mutating
 * protobuf bytes rarely gets that deep into the inference.
 *
 * The importer returns 0, -EINVAL with a reason, or -EOVERFLOW; never
 * prints, never aborts. A model it accepts has every tensor found by its
 * name and figures that add up; if small it is planned and the plan must
 * pass the independent all-pairs check (fuzz.h).
 */
#include <errno.h>

#include <metadef/graph.h>
#include <metadef/onnx.h>

#include "fuzz.h"
#include "onnx_build.h"

/* The recipe's bytes, read one at a time (0 past the end). */
struct rd {
	const uint8_t *p;
	size_t n;
};

static unsigned int rb(struct rd *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

/* A small list of small integers, some negative: "3,-1,0". */
static void ilist(struct rd *r, char *buf, size_t len, unsigned int max)
{
	unsigned int n = rb(r) % (max + 1), i;
	size_t at = 0;

	buf[0] = '\0';
	for (i = 0; i < n && at + 8 < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? "," : "",
				       (int)(rb(r) % 12) - 3);
}

static struct mb *build_model(struct rd *r)
{
	static const char *const ops[] = {
		"Relu", "Add", "Mul", "Sub", "Div", "Equal", "Where", "MatMul",
		"Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool",
		"GlobalAveragePool", "BatchNormalization", "LayerNormalization",
		"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose",
		"Concat", "Split", "Slice", "Gather", "GatherND", "Softmax",
		"ReduceMean", "ReduceSum", "ReduceProd", "ArgMax", "Cast",
		"Identity", "Dropout", "Pad", "Resize", "Upsample", "Expand",
		"Tile", "Shape", "Size", "ConstantOfShape", "Range", "TopK",
		"LSTM", "GRU", "OneHot", "DepthToSpace", "SpaceToDepth", "Neg",
		"Abs", "Floor", "Not", "Max", "Min", "Sum", "Mod", "Sign",
		"CumSum", "GridSample", "RoiAlign", "QuantizeLinear",
		"DequantizeLinear", "Constant", "If", "Custom",
	};
	static const char *const attrs[] = {
		"axis", "axes", "perm", "pads", "strides", "kernel_shape",
		"dilations", "keepdims", "to", "group", "transA", "transB",
		"split", "starts", "ends", "hidden_size", "blocksize",
		"ceil_mode", "allowzero", "output_padding", "k", "batch_dims",
		"noop_with_empty_axes", "start", "end", "layout", "fmod",
	};
	struct mb *b = mb_new(7 + rb(r) % 12);
	char names[40][8], list[64], ins[64], outs[32];
	unsigned int nt = 0, i, k, nn;

	/* Inputs: up to 3, rank 0-4, dims 0-9 or the symbolic "batch". */
	for (i = 0, nn = 1 + rb(r) % 3; i < nn; i++) {
		unsigned int rank = rb(r) % 5, t = rb(r) % 4;
		size_t at = 0;

		list[0] = '\0';
		for (k = 0; k < rank; k++) {
			unsigned int d = rb(r) % 11;

			if (d == 10)
				at += (size_t)snprintf(list + at, sizeof(list) - at,
						       "%sbatch", k ? "," : "");
			else
				at += (size_t)snprintf(list + at, sizeof(list) - at,
						       "%s%u", k ? "," : "", d);
		}
		snprintf(names[nt], 8, "i%u", i);
		mb_input(b, names[nt++], t == 0 ? MB_I64 : t == 1 ? MB_BOOL :
			 MB_F32, list);
	}
	/* int64 constants: shapes, axes, indices. */
	for (i = 0, nn = rb(r) % 4; i < nn; i++) {
		int64_t v[8];
		unsigned int n = rb(r) % 5;

		for (k = 0; k < n; k++)
			v[k] = (int)(rb(r) % 12) - 3;
		snprintf(names[nt], 8, "c%u", i);
		snprintf(list, sizeof(list), "%u", n);
		mb_init(b, names[nt++], MB_I64, rb(r) & 1 || n != 1 ? list : "",
			v);
	}
	for (i = 0, nn = 1 + rb(r) % 12; i < nn && nt < 36; i++) {
		const char *op = ops[rb(r) % (sizeof(ops) / sizeof(ops[0]))];
		unsigned int nin = rb(r) % 4, nout = 1 + rb(r) % 2, na;
		Onnx__NodeProto *n;
		size_t at = 0;

		ins[0] = '\0';
		for (k = 0; k < nin; k++) {
			unsigned int pick = rb(r);

			at += (size_t)snprintf(ins + at, sizeof(ins) - at, "%s%s",
					       k ? "," : "", pick == 255 ? "" :
					       names[pick % nt]);
		}
		snprintf(names[nt], 8, "t%u", nt);
		if (nout == 2 && rb(r) & 1)
			snprintf(outs, sizeof(outs), "%s,", names[nt]);
		else if (nout == 2)
			snprintf(outs, sizeof(outs), "%s,u%u", names[nt], nt);
		else
			snprintf(outs, sizeof(outs), "%s", names[nt]);
		n = mb_node(b, op, ins, outs);
		nt++;
		for (k = 0, na = rb(r) % 4; k < na; k++) {
			const char *a = attrs[rb(r) % (sizeof(attrs) / sizeof(attrs[0]))];

			if (rb(r) & 1) {
				mb_int(b, n, a, (int)(rb(r) % 12) - 3);
			} else {
				ilist(r, list, sizeof(list), 6);
				mb_ints(b, n, a, list);
			}
		}
		if (!strcmp(op, "Constant"))
			mb_tensor_attr(b, n, "value", mb_tensor(b, "v", MB_I64, "2",
				       (const int64_t[]){ rb(r) % 5, rb(r) % 5 }));
		if (!strcmp(op, "Conv") && rb(r) & 1)
			mb_string(b, n, "auto_pad", rb(r) & 1 ? "SAME_UPPER" :
				  "VALID");
	}
	mb_output(b, names[nt - 1], MB_F32, NULL);
	return b;
}

#define MAX_TENSORS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct md_onnx_dim dims[] = {
		{ "batch", 2 }, { "N", 1 }, { "seq", 8 }, { "sequence", 16 },
		{ "batch_size", 3 }, { "height", 32 }, { "width", 32 },
	};
	uint64_t h = fuzz_hash(data, size);
	struct md_onnx_opts o = {
		.dims = dims,
		.ndims = h & 1 ? sizeof(dims) / sizeof(dims[0]) : 0,
		.dtype = (enum md_onnx_dtype)((h >> 1) % 4),
		.flags = ((h >> 3) & 1 ? MD_ONNX_NO_WEIGHTS : 0) |
			 ((h >> 4) & 1 ? MD_ONNX_FUSE : 0),
	};
	struct md_onnx_stats st;
	struct md_graph_plan gp;
	struct md_graph *g;
	struct md_error err;
	size_t i, n;
	int ret;

	struct mb *b = NULL;

	if (size && data[0] == 0xB0) {
		struct rd r = { data + 1, size - 1 };

		b = build_model(&r);
		data = mb_pack(b, &size);
	}
	if (md_graph_new(&g)) {
		if (b)
			mb_free(b);
		return 0;
	}
	memset(&err, 0x5a, sizeof(err));
	ret = md_graph_from_onnx(g, data, size, &o, &st, &err);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -EOVERFLOW ||
		   ret == -ENOMEM, "import returned %d", ret);
	FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)), "message not terminated");
	FUZZ_CHECK(err.line == 0, "line %u", err.line);
	if (ret) {
		FUZZ_CHECK(ret == -ENOMEM || err.msg[0], "no reason given for %d", ret);
		goto out;
	}
	FUZZ_CHECK(!err.msg[0], "a message on success: %s", err.msg);
	n = md_graph_tensor_count(g);
	FUZZ_CHECK(n == st.tensors, "%zu tensors, stats say %zu", n, st.tensors);
	/* Shapes are inferred before fusion: the fused-away tensors too. */
	FUZZ_CHECK(st.inferred <= n + st.fused_tensors && st.inplace <= n,
		   "figures past the tensors");
	FUZZ_CHECK(st.fused_nodes == st.fused_ops + st.fused_tensors &&
		   st.fused_nodes <= st.nodes &&
		   (o.flags & MD_ONNX_FUSE || !st.fused_nodes),
		   "fused %zu ops of %zu nodes, %zu tensors", st.fused_ops,
		   st.fused_nodes, st.fused_tensors);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(md_graph_find(g, md_graph_tensor_name(g, (int)i)) == (int)i,
			   "tensor %zu ('%s') not found by its name", i,
			   md_graph_tensor_name(g, (int)i));
	if (n > MAX_TENSORS)
		goto out;
	ret = md_graph_plan(g, NULL, &gp);
	FUZZ_CHECK(ret == 0 || ret == -EOVERFLOW, "md_graph_plan returned %d", ret);
	if (ret)
		goto out;
	FUZZ_CHECK(!md_plan_validate(&gp.problem, gp.plan.offsets, NULL),
		   "plan does not validate");
	FUZZ_CHECK(!md_graph_plan_validate(g, &gp, NULL),
		   "tensor offsets do not validate");
	fuzz_check_plan(&gp.problem, gp.plan.offsets, "onnx plan");
	md_graph_plan_free(&gp);
out:
	md_graph_free(g);
	if (b)
		mb_free(b);
	return 0;
}
