// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests: ONNX import (md_graph_from_onnx()). Models are built
 * here with the protobuf-c structs (onnx_build.h), packed, imported, and
 * the graph's sizes, lifetimes and in-place decisions checked; shapes the
 * model does not give are inferred; errors name the tensor and the op.
 *
 * Each test builds its model on the fixture's builder and states only
 * what differs: LOAD() and REFUSED() import it, PLAN() plans the graph,
 * and the teardown frees whatever there is.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <metadef/graph.h>
#include <metadef/onnx.h>
#include <metadef/plan.h>

#include "kselftest_harness.h"
#include "onnx_build.h"

/* Import @b into a new graph *@g. */
static int import(struct mb *b, const struct md_onnx_opts *o,
		  struct md_graph **g, struct md_onnx_stats *st,
		  struct md_error *e)
{
	size_t len;
	uint8_t *d = mb_pack(b, &len);
	int ret = md_graph_new(g);

	if (ret)
		return ret;
	return md_graph_from_onnx(*g, d, len, o, st, e);
}

static uint64_t size_of(struct md_graph *g, const char *name)
{
	int t = md_graph_find(g, name);

	return t < 0 ? UINT64_MAX : md_graph_tensor_size(g, t);
}

/* x (@dtype, @dims) -> @op -> y, a graph output without a shape. */
static void mb_unary(struct mb *b, int dtype, const char *dims,
		     const char *op)
{
	mb_input(b, "x", dtype, dims);
	mb_node(b, op, "x", "y");
	mb_output(b, "y", dtype, NULL);
}

/*
 * A test's model (b, built by the test), its last import (g, with st and
 * e) and that graph's plan (gp, once planned).
 */
FIXTURE(onnx)
{
	struct mb *b;
	struct md_graph *g;
	struct md_onnx_stats st;
	struct md_error e;
	struct md_graph_plan gp;
	bool planned;
};

/* Free the graph and its plan, if there are. */
static void unload(FIXTURE_DATA(onnx) *f)
{
	if (f->planned)
		md_graph_plan_free(&f->gp);
	f->planned = false;
	md_graph_free(f->g);
	f->g = NULL;
}

/* Import the model as it is now, in place of the last import. */
static int load(FIXTURE_DATA(onnx) *f, const struct md_onnx_opts *o)
{
	unload(f);
	return import(f->b, o, &f->g, &f->st, &f->e);
}

static int plan(FIXTURE_DATA(onnx) *f)
{
	int ret;

	if (f->planned)
		md_graph_plan_free(&f->gp);
	ret = md_graph_plan(f->g, NULL, &f->gp);
	f->planned = !ret;
	return ret;
}

/* Start a new model: the last one and its import are freed. */
static struct mb *renew(FIXTURE_DATA(onnx) *f)
{
	unload(f);
	mb_free(f->b);
	f->b = mb_new(17);
	return f->b;
}

FIXTURE_SETUP(onnx)
{
	self->b = mb_new(17);
}

FIXTURE_TEARDOWN(onnx)
{
	unload(self);
	mb_free(self->b);
}

/* Import with options @o (or NULL): it must succeed. */
#define LOAD(o)	ASSERT_EQ(0, load(self, o)) TH_LOG("%s", self->e.msg)
#define PLAN()	ASSERT_EQ(0, plan(self))
/* The last import's error message says @what. */
#define SAYS(what) \
	EXPECT_NE(NULL, strstr(self->e.msg, what)) TH_LOG("%s", self->e.msg)
/* Import with options @o: refused with @err, the message saying @what. */
#define REFUSED(o, err, what) do {					\
		EXPECT_EQ(err, load(self, o)) TH_LOG("%s", self->e.msg); \
		SAYS(what);						\
	} while (0)

/* In the last import: tensor @name's index, its size in bytes. */
#define T(name)		md_graph_find(self->g, name)
#define SIZE(name)	size_of(self->g, name)

/* Relu -> Sigmoid -> Tanh: every activation in one buffer. */
TEST_F(onnx, inplace_chain_takes_one_buffer)
{
	struct md_graph_plan *gp = &self->gp;
	struct md_onnx_stats *st = &self->st;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "1,64");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Sigmoid", "a", "b");
	mb_node(b, "Tanh", "b", "c");
	mb_output(b, "c", MB_F32, "1,64");
	LOAD(NULL);
	EXPECT_EQ(3, st->nodes);
	EXPECT_EQ(4, st->tensors);
	EXPECT_EQ(3, st->inplace);
	EXPECT_EQ(256, st->input_bytes);
	EXPECT_EQ(768, st->activation_bytes);
	EXPECT_EQ(0, st->weight_bytes);
	PLAN();
	EXPECT_EQ(gp->buffer[T("a")], gp->buffer[T("b")]);
	EXPECT_EQ(gp->buffer[T("b")], gp->buffer[T("c")]);
	EXPECT_NE(gp->buffer[T("x")], gp->buffer[T("a")]);
	/* Relu into the graph input: refused; the other two taken. */
	EXPECT_EQ(2, gp->stats.inplace_taken);
	EXPECT_EQ(1, gp->stats.inplace_refused);
	EXPECT_EQ(512, gp->plan.peak);
	/* x resident [0, 3); c an output, alive to the end. */
	EXPECT_EQ(0, gp->lower[T("x")]);
	EXPECT_EQ(3, gp->upper[T("x")]);
	EXPECT_EQ(3, gp->upper[T("c")]);
}

/* a is read again after Sigmoid: Sigmoid may not overwrite it. */
TEST_F(onnx, inplace_refused_when_input_is_read_later)
{
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,8");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Sigmoid", "a", "s");
	mb_node(b, "Add", "s,a", "y");
	mb_output(b, "y", MB_F32, NULL);
	LOAD(NULL);
	PLAN();
	EXPECT_NE(gp->buffer[T("a")], gp->buffer[T("s")]);
	/* Add writes into one of its dying inputs. */
	EXPECT_TRUE(gp->buffer[T("y")] == gp->buffer[T("s")] ||
		    gp->buffer[T("y")] == gp->buffer[T("a")]);
	EXPECT_EQ(1, gp->stats.inplace_taken);
	/* Refused: Relu (into x), Sigmoid (into a). */
	EXPECT_EQ(2, gp->stats.inplace_refused);
	EXPECT_EQ(64, SIZE("y"));
}

/* Shape reads no data: a Shape after Sigmoid does not stop it in place. */
TEST_F(onnx, shape_does_not_keep_its_input)
{
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,8");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Sigmoid", "a", "s");
	mb_node(b, "Shape", "a", "sh");
	mb_node(b, "Reshape", "s,sh", "y");
	mb_output(b, "y", MB_F32, NULL);
	LOAD(NULL);
	PLAN();
	EXPECT_EQ(gp->buffer[T("a")], gp->buffer[T("s")]);
	EXPECT_EQ(gp->buffer[T("a")], gp->buffer[T("y")]);
	EXPECT_EQ(2, gp->upper[T("a")]);	/* dies at Sigmoid (step 1) */
	EXPECT_EQ(1, gp->stats.inplace_taken);	/* Sigmoid */
	EXPECT_EQ(1, gp->stats.views);		/* Reshape */
	EXPECT_EQ(MD_ALIAS_VIEW, gp->kind[T("y")]);
}

/* Broadcast that grows the output: no in place into the small input. */
TEST_F(onnx, inplace_needs_same_bytes)
{
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "1,8");
	mb_input(b, "z", MB_F32, "4,8");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Exp", "z", "c");
	mb_node(b, "Mul", "a,c", "y");
	mb_node(b, "Equal", "y,y", "q");
	mb_output(b, "q", MB_BOOL, NULL);
	LOAD(NULL);
	PLAN();
	EXPECT_EQ(128, SIZE("y"));
	EXPECT_EQ(32, SIZE("q"));
	EXPECT_EQ(gp->buffer[T("y")], gp->buffer[T("c")]);	/* not a */
	EXPECT_NE(gp->buffer[T("q")], gp->buffer[T("y")]);	/* bool */
}

/* Reshape, Flatten, Unsqueeze, Squeeze, Identity: views, one buffer. */
TEST_F(onnx, reshape_chain)
{
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,3,4");
	mb_ival(b, "shape", "6,-1", 0);
	mb_ival(b, "axes", "0", 0);
	mb_node(b, "Relu", "x", "r");
	mb_node(b, "Reshape", "r,shape", "s");
	mb_int(b, mb_node(b, "Flatten", "s", "f"), "axis", 0);
	mb_node(b, "Unsqueeze", "f,axes", "u");
	mb_node(b, "Squeeze", "u,axes", "q");
	mb_node(b, "Identity", "q", "y");
	mb_output(b, "y", MB_F32, NULL);
	LOAD(NULL);
	PLAN();
	EXPECT_EQ(96, SIZE("s"));
	EXPECT_EQ(96, SIZE("f"));
	EXPECT_EQ(96, SIZE("u"));
	EXPECT_EQ(96, SIZE("y"));
	EXPECT_EQ(gp->buffer[T("r")], gp->buffer[T("y")]);
	EXPECT_EQ(gp->buffer[T("r")], gp->buffer[T("u")]);
	EXPECT_EQ(0, gp->stats.inplace_taken);	/* Relu: into input x */
	EXPECT_EQ(5, gp->stats.views);
	EXPECT_EQ(T("r"), md_graph_view_of(self->g, T("s")));
	EXPECT_EQ(T("q"), md_graph_view_of(self->g, T("y")));
	EXPECT_EQ(T("f"), gp->alias[T("u")]);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/*
 * Views as ONNX Runtime has them: a Reshape of a graph input stays in the
 * input's memory; a Reshape read late keeps its input's memory alive, so
 * a Relu on that input may not overwrite it; Dropout's output is a view,
 * its mask is not. Peak and both bounds on this small graph.
 */
TEST_F(onnx, views_keep_their_base)
{
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "4,16");		/* 256 bytes */
	mb_ival(b, "shape", "64", 0);
	mb_node(b, "Reshape", "x,shape", "xr");		/* step 0: view of x */
	mb_node(b, "Sigmoid", "xr", "a");		/* step 1 */
	mb_node(b, "Reshape", "a,shape", "ar");		/* step 2: view of a */
	mb_node(b, "Relu", "a", "r");			/* 3: a read later */
	mb_node(b, "Dropout", "r", "d,mask");		/* 4: d view of r */
	mb_node(b, "Add", "d,ar", "y");			/* 5 */
	mb_output(b, "y", MB_F32, NULL);
	mb_output(b, "mask", MB_BOOL, NULL);
	LOAD(NULL);
	EXPECT_EQ(3, self->st.views);
	EXPECT_EQ(T("x"), md_graph_view_of(self->g, T("xr")));
	EXPECT_EQ(T("r"), md_graph_view_of(self->g, T("d")));
	EXPECT_EQ(-1, md_graph_view_of(self->g, T("mask")));
	PLAN();
	EXPECT_EQ(gp->offset[T("x")], gp->offset[T("xr")]);
	/* Sigmoid into xr (= x, an input): refused; Relu into a: ar reads
	 * a at step 5, refused; Add into d (= r) or ar (= a): taken. */
	EXPECT_NE(gp->buffer[T("a")], gp->buffer[T("r")]);
	EXPECT_EQ(gp->buffer[T("a")], gp->buffer[T("ar")]);
	EXPECT_EQ(6, gp->problem.bufs[gp->buffer[T("a")]].upper);
	EXPECT_EQ(1, gp->stats.inplace_taken);
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("y")]);
	/*
	 * With aliasing, step 4: x (256) + shape (8) + a (256, kept by ar)
	 * + r (256) + mask (64) = 840. Each tensor apart, step 4 or 5:
	 * x + shape + ar + r + d + mask, or ... + d + mask + y: 1096.
	 */
	EXPECT_EQ(840, gp->stats.lower_bound);
	EXPECT_EQ(840, gp->plan.peak);
	EXPECT_EQ(1096, gp->stats.lower_bound_noalias);
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
}

/* No value_info: Conv, pools and Gemm sized by the inference here. */
TEST_F(onnx, infers_conv_pool_gemm)
{
	struct mb *b = self->b;
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "1,3,32,32");
	mb_init(b, "w", MB_F32, "8,3,3,3", NULL);
	mb_init(b, "w2", MB_F32, "8,8,3,3", NULL);
	mb_init(b, "fc", MB_F32, "10,8", NULL);
	n = mb_node(b, "Conv", "x,w", "c");
	mb_ints(b, n, "pads", "1,1,1,1");
	mb_node(b, "BatchNormalization", "c,s,s,s,s", "bn");
	mb_init(b, "s", MB_F32, "8", NULL);
	n = mb_node(b, "MaxPool", "bn", "p");
	mb_ints(b, n, "kernel_shape", "2,2");
	mb_ints(b, n, "strides", "2,2");
	n = mb_node(b, "Conv", "p,w2", "c2");		/* 16 -> 8 */
	mb_string(b, n, "auto_pad", "SAME_UPPER");
	mb_ints(b, n, "strides", "2,2");
	n = mb_node(b, "AveragePool", "c2", "ap");	/* 8 -> 3 with ceil */
	mb_ints(b, n, "kernel_shape", "3,3");
	mb_ints(b, n, "strides", "3,3");
	mb_int(b, n, "ceil_mode", 1);
	n = mb_node(b, "ConvTranspose", "ap,w2", "ct");	/* 3 -> 7 */
	mb_ints(b, n, "strides", "2,2");
	mb_ints(b, n, "pads", "1,1,0,0");
	mb_ints(b, n, "output_padding", "1,1");
	mb_node(b, "GlobalAveragePool", "ct", "gp");
	mb_node(b, "Flatten", "gp", "f");
	n = mb_node(b, "Gemm", "f,fc", "y");
	mb_int(b, n, "transB", 1);
	mb_output(b, "y", MB_F32, NULL);
	LOAD(NULL);
	EXPECT_EQ(8 * 32 * 32 * 4, SIZE("c"));
	EXPECT_EQ(8 * 32 * 32 * 4, SIZE("bn"));
	EXPECT_EQ(8 * 16 * 16 * 4, SIZE("p"));
	EXPECT_EQ(8 * 8 * 8 * 4, SIZE("c2"));
	EXPECT_EQ(8 * 3 * 3 * 4, SIZE("ap"));
	/* 2 * (3 - 1) + output_padding 1 + kernel 3 - pads 1 - 0 = 7 */
	EXPECT_EQ(8 * 7 * 7 * 4, SIZE("ct"));
	EXPECT_EQ(8 * 4, SIZE("gp"));
	EXPECT_EQ(8 * 4, SIZE("f"));
	EXPECT_EQ(10 * 4, SIZE("y"));
	EXPECT_EQ(9, self->st.inferred);
	EXPECT_EQ((8 * 27 + 8 * 72 + 80 + 8) * 4, self->st.weight_bytes);
}

/* The export pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape. */
TEST_F(onnx, infers_shape_computations)
{
	struct md_onnx_dim d = { "batch", 4 };
	struct md_onnx_opts o = { .dims = &d, .ndims = 1 };
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "batch,16,64");
	mb_ival(b, "zero", "0", 1);
	mb_ival(b, "ax0", "0", 0);
	mb_ival(b, "tail", "-1,8", 0);
	mb_ival(b, "two", "2", 1);
	mb_node(b, "Shape", "x", "s");
	mb_int(b, mb_node(b, "Gather", "s,zero", "bs"), "axis", 0);
	mb_node(b, "Unsqueeze", "bs,ax0", "bu");
	mb_int(b, mb_node(b, "Concat", "bu,tail", "shp"), "axis", 0);
	mb_node(b, "Reshape", "x,shp", "y");
	/* Mul/Cast/Slice on int64 shapes, ConstantOfShape, Expand, Range */
	mb_node(b, "Mul", "bs,two", "b2");
	mb_int(b, mb_node(b, "Cast", "b2", "b2c"), "to", MB_I64);
	mb_node(b, "Unsqueeze", "b2c,ax0", "b2u");
	mb_node(b, "ConstantOfShape", "b2u", "zeros");
	mb_node(b, "Slice", "s,ax0,two", "s01");	/* [4, 16] */
	mb_node(b, "Expand", "two,s01", "ex");
	mb_node(b, "Range", "zero,b2c,two", "rg");	/* 0, 2, 4, 6 */
	mb_node(b, "Equal", "s01,s01", "eq");
	mb_node(b, "Where", "eq,s01,s01", "wh");
	mb_node(b, "ConstantOfShape", "wh", "big");	/* [4, 16] floats */
	mb_output(b, "y", MB_F32, NULL);
	mb_output(b, "zeros", MB_F32, NULL);
	mb_output(b, "ex", MB_I64, NULL);
	mb_output(b, "rg", MB_I64, NULL);
	mb_output(b, "big", MB_F32, NULL);
	LOAD(&o);
	EXPECT_EQ(4 * 16 * 64 * 4, SIZE("y"));
	EXPECT_EQ(8 * 4, SIZE("zeros"));
	EXPECT_EQ(4 * 16 * 8, SIZE("ex"));
	EXPECT_EQ(4 * 8, SIZE("rg"));
	EXPECT_EQ(4 * 16 * 4, SIZE("big"));
}

/* MatMul, Transpose, Softmax, LayerNorm, Split, TopK, LSTM, Resize... */
TEST_F(onnx, infers_transformer_and_rnn_ops)
{
	struct mb *b = self->b;
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "2,10,32");
	mb_init(b, "wq", MB_F32, "32,64", NULL);
	mb_init(b, "g", MB_F32, "32", NULL);
	mb_ival(b, "sp", "16,48", 0);
	mb_ival(b, "k", "3", 0);
	mb_ival(b, "pads", "0,0,1,0,0,2", 0);
	mb_ival(b, "rep", "1,2,1", 0);
	mb_init(b, "W", MB_F32, "1,64,32", NULL);
	mb_init(b, "R", MB_F32, "1,64,16", NULL);
	mb_init(b, "sc", MB_F32, "4", (const int64_t[]){ 1, 1, 2, 2 });
	mb_input(b, "img", MB_F32, "1,3,5,7");
	mb_node(b, "MatMul", "x,wq", "q");		/* 2,10,64 */
	n = mb_node(b, "Transpose", "q", "qt");		/* 2,64,10 */
	mb_ints(b, n, "perm", "0,2,1");
	mb_node(b, "MatMul", "q,qt", "att");		/* 2,10,10 */
	mb_node(b, "Softmax", "att", "sm");
	mb_node(b, "LayerNormalization", "x,g", "ln");
	n = mb_node(b, "Split", "q,sp", "s0,s1");
	mb_int(b, n, "axis", 2);
	mb_node(b, "TopK", "att,k", "tv,ti");		/* 2,10,3 */
	mb_node(b, "Pad", "x,pads", "pd");		/* 2,10,35 */
	mb_node(b, "Tile", "x,rep", "tl");		/* 2,20,32 */
	n = mb_node(b, "ReduceMean", "x", "rm");	/* 2,10,1 (opset 17) */
	mb_ints(b, n, "axes", "-1");
	n = mb_node(b, "ArgMax", "x", "am");		/* 2,32 int64 */
	mb_int(b, n, "axis", 1);
	mb_int(b, n, "keepdims", 0);
	n = mb_node(b, "LSTM", "x,W,R", "Y,Yh,Yc");	/* seq 2, batch 10 */
	mb_int(b, n, "hidden_size", 16);
	mb_node(b, "Resize", "img,,sc", "up");		/* 1,3,10,14 */
	mb_node(b, "Dropout", "sm", "dr,");
	mb_node(b, "Erf", "dr", "er");
	mb_output(b, "er", MB_F32, NULL);
	mb_output(b, "s0", MB_F32, NULL);
	mb_output(b, "s1", MB_F32, NULL);
	LOAD(NULL);
	EXPECT_EQ(2 * 10 * 64 * 4, SIZE("q"));
	EXPECT_EQ(2 * 64 * 10 * 4, SIZE("qt"));
	EXPECT_EQ(2 * 10 * 10 * 4, SIZE("sm"));
	EXPECT_EQ(2 * 10 * 32 * 4, SIZE("ln"));
	EXPECT_EQ(2 * 10 * 16 * 4, SIZE("s0"));
	EXPECT_EQ(2 * 10 * 48 * 4, SIZE("s1"));
	EXPECT_EQ(2 * 10 * 3 * 4, SIZE("tv"));
	EXPECT_EQ(2 * 10 * 3 * 8, SIZE("ti"));
	EXPECT_EQ(2 * 10 * 35 * 4, SIZE("pd"));
	EXPECT_EQ(2 * 20 * 32 * 4, SIZE("tl"));
	EXPECT_EQ(2 * 10 * 4, SIZE("rm"));
	EXPECT_EQ(2 * 32 * 8, SIZE("am"));
	EXPECT_EQ(2 * 1 * 10 * 16 * 4, SIZE("Y"));
	EXPECT_EQ(1 * 10 * 16 * 4, SIZE("Yh"));
	EXPECT_EQ(1 * 10 * 16 * 4, SIZE("Yc"));
	EXPECT_EQ(3 * 10 * 14 * 4, SIZE("up"));
	EXPECT_EQ(2 * 10 * 10 * 4, SIZE("er"));
}

/* Symbolic dims: an error naming them, then --dim, then --input. */
TEST_F(onnx, symbolic_dims)
{
	struct md_onnx_dim d[] = { { "batch", 8 }, { "seq", 128 } };
	int64_t shape[] = { 3, 5, 16 };
	struct md_onnx_input in = { "x", shape, 3 };
	struct md_onnx_opts o = { .dims = d, .ndims = 1 };
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "batch,seq,16");
	mb_node(b, "Relu", "x", "y");
	mb_output(b, "y", MB_F32, "batch,seq,16");
	REFUSED(NULL, -EINVAL, "'batch'");
	SAYS("--dim batch=N");
	REFUSED(&o, -EINVAL, "'seq'");
	o.ndims = 2;
	LOAD(&o);
	EXPECT_EQ(8 * 128 * 16 * 4, SIZE("y"));
	o.ndims = 0;
	o.inputs = &in;
	o.ninputs = 1;
	LOAD(&o);
	EXPECT_EQ(3 * 5 * 16 * 4, SIZE("y"));
	/* A shape for an input the model does not have. */
	in.name = "nope";
	REFUSED(&o, -EINVAL, "'nope'");
}

/* fp16 halves every float tensor; int64 ones keep their size. */
TEST_F(onnx, dtype_override)
{
	struct md_onnx_opts o = { .dtype = MD_ONNX_DTYPE_FP16 };
	struct md_onnx_stats s32;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "4,100");
	mb_init(b, "w", MB_F32, "100,50", NULL);
	mb_node(b, "MatMul", "x,w", "y");
	mb_node(b, "Shape", "y", "s");
	mb_output(b, "y", MB_F32, NULL);
	mb_output(b, "s", MB_I64, NULL);
	LOAD(NULL);
	s32 = self->st;
	EXPECT_EQ(800, SIZE("y"));
	EXPECT_EQ(16, SIZE("s"));
	LOAD(&o);
	EXPECT_EQ(400, SIZE("y"));
	EXPECT_EQ(16, SIZE("s"));
	EXPECT_EQ(s32.weight_bytes / 2, self->st.weight_bytes);
	EXPECT_EQ(s32.input_bytes / 2, self->st.input_bytes);
	EXPECT_EQ(s32.activation_bytes - 400, self->st.activation_bytes);
	o.dtype = MD_ONNX_DTYPE_BF16;
	LOAD(&o);
	EXPECT_EQ(400, SIZE("y"));
}

/* Weights and inputs resident by default, gone with NO_WEIGHTS. */
TEST_F(onnx, weights_resident_or_excluded)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_NO_WEIGHTS };
	struct md_graph_plan *gp = &self->gp;
	struct md_onnx_stats *st = &self->st;
	struct mb *b = self->b;
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "1,16");
	mb_init(b, "w", MB_F32, "16,16", NULL);
	n = mb_node(b, "Constant", "", "c");
	mb_tensor_attr(b, n, "value", mb_tensor(b, "cv", MB_F32, "16", NULL));
	mb_node(b, "MatMul", "x,w", "a");
	mb_node(b, "Add", "a,c", "y");
	mb_node(b, "Relu", "y", "unused");
	mb_output(b, "y", MB_F32, NULL);
	LOAD(NULL);
	EXPECT_EQ(6, md_graph_tensor_count(self->g));
	EXPECT_EQ(1024 + 64, st->weight_bytes);
	PLAN();
	/* Three ops: w and c alive across all, unused lives one step. */
	EXPECT_EQ(0, gp->lower[T("w")]);
	EXPECT_EQ(3, gp->upper[T("w")]);
	EXPECT_EQ(0, gp->lower[T("c")]);
	EXPECT_EQ(3, gp->upper[T("c")]);
	EXPECT_EQ(2, gp->lower[T("unused")]);
	EXPECT_EQ(3, gp->upper[T("unused")]);
	EXPECT_EQ(3, gp->upper[T("y")]);
	LOAD(&o);
	EXPECT_EQ(3, md_graph_tensor_count(self->g));
	EXPECT_EQ(-ENOENT, T("w"));
	EXPECT_EQ(-ENOENT, T("x"));
	EXPECT_EQ(-ENOENT, T("c"));
	EXPECT_EQ(1024 + 64, st->weight_bytes);	/* still reported */
	EXPECT_EQ(64, st->input_bytes);
	PLAN();
	/* Relu's input y is a graph output: in place refused. */
	EXPECT_EQ(1, gp->stats.inplace_taken);
}

/* Data type sizes; strings refused. */
TEST_F(onnx, dtype_sizes)
{
	static const struct { int dt; uint64_t size; } c[] = {
		{ MB_F32, 4 }, { MB_U8, 1 }, { MB_I8, 1 }, { MB_I32, 4 },
		{ MB_I64, 8 }, { MB_BOOL, 1 }, { MB_F16, 2 }, { MB_F64, 8 },
		{ 16, 2 }, { 12, 4 }, { 13, 8 }, { 5, 2 },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		mb_unary(renew(self), c[i].dt, "3,5", "Identity");
		LOAD(NULL);
		EXPECT_EQ(15 * c[i].size, SIZE("y")) TH_LOG("type %d", c[i].dt);
	}
	mb_unary(renew(self), MB_STR, "3", "Identity");
	REFUSED(NULL, -EINVAL, "string");
}

/* Nodes out of order are sorted; a cycle is an error. */
TEST_F(onnx, order_and_cycle)
{
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "4");
	mb_node(b, "Relu", "a", "b");
	mb_node(b, "Relu", "x", "a");
	mb_output(b, "b", MB_F32, NULL);
	LOAD(NULL);
	PLAN();
	EXPECT_EQ(0, gp->lower[T("a")]);
	EXPECT_EQ(1, gp->lower[T("b")]);

	b = renew(self);
	mb_input(b, "x", MB_F32, "4");
	mb_node(b, "Add", "x,b", "a");
	mb_node(b, "Relu", "a", "b");
	mb_output(b, "b", MB_F32, NULL);
	REFUSED(NULL, -EINVAL, "cycle");
}

/* Garbage, truncated and empty input. */
TEST_F(onnx, malformed_bytes)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 0x12 };
	struct mb *b = self->b;
	struct md_graph *g;
	struct md_error e;
	size_t len, cut;
	uint8_t *d;
	int ret;

	ASSERT_EQ(0, md_graph_new(&g));
	EXPECT_EQ(-EINVAL, md_graph_from_onnx(g, junk, sizeof(junk), NULL,
					      NULL, &e));
	EXPECT_STREQ("not an ONNX model (protobuf parse failed)", e.msg);
	EXPECT_EQ(-EINVAL, md_graph_from_onnx(g, "", 0, NULL, NULL, &e));
	EXPECT_NE(NULL, strstr(e.msg, "no graph")) TH_LOG("%s", e.msg);
	md_graph_free(g);

	mb_input(b, "x", MB_F32, "1,3,8,8");
	mb_init(b, "w", MB_F32, "4,3,3,3", NULL);
	mb_node(b, "Conv", "x,w", "y");
	mb_output(b, "y", MB_F32, NULL);
	d = mb_pack(b, &len);
	/*
	 * A cut between two fields is a smaller valid message (protobuf
	 * cannot tell): such a model imports or is refused for what it
	 * misses; a cut inside a field fails the parse.
	 */
	for (cut = 0; cut < len; cut++) {
		ASSERT_EQ(0, md_graph_new(&g));
		ret = md_graph_from_onnx(g, d, cut, NULL, NULL, &e);
		EXPECT_TRUE(ret == 0 || ret == -EINVAL)
			TH_LOG("cut at %zu of %zu: %d", cut, len, ret);
		if (ret)
			EXPECT_NE(0, e.msg[0]);
		md_graph_free(g);
	}
	ASSERT_EQ(0, md_graph_new(&g));
	EXPECT_EQ(-EINVAL, md_graph_from_onnx(g, d, len - 1, NULL, NULL, &e));
	EXPECT_STREQ("not an ONNX model (protobuf parse failed)", e.msg);
	md_graph_free(g);
}

/* An op without inference here and without value_info names the tensor. */
TEST_F(onnx, unknown_op_is_an_error)
{
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,2");
	mb_node(b, "FooBar", "x", "y");
	mb_node(b, "Relu", "y", "z");
	mb_output(b, "z", MB_F32, NULL);
	REFUSED(NULL, -EINVAL,
		"tensor 'y' (output 0 of node 'n0', op FooBar): shape unknown");
	/* value_info sizes it. */
	mb_value_info(b, "y", MB_F32, "7,3");
	LOAD(NULL);
	EXPECT_EQ(84, SIZE("z"));

	/* Control flow, and a Reshape whose target is not constant. */
	b = renew(self);
	mb_input(b, "x", MB_F32, "2,2");
	mb_input(b, "sh", MB_I64, "2");
	mb_node(b, "Reshape", "x,sh", "y");
	mb_output(b, "y", MB_F32, NULL);
	REFUSED(NULL, -EINVAL,
		"tensor 'y' (output 0 of node 'n0', op Reshape)");
	b = renew(self);
	mb_input(b, "c", MB_BOOL, "");
	mb_node(b, "If", "c", "y");
	mb_output(b, "y", MB_F32, "2");
	REFUSED(NULL, -EINVAL, "op If");
	SAYS("control flow");
}

/* Hostile shapes: negative, too many dims, sizes past 2^64. */
TEST_F(onnx, hostile_shapes)
{
	static const struct {
		const char *dims;	/* of the input x */
		int err;
		const char *what;	/* in the error message */
	} c[] = {
		{ "2,-3", -EINVAL, "negative" },
		{ "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", -EINVAL, "rank" },
		{ "4294967296,4294967296", -EOVERFLOW, "2^64" },
	};
	struct mb *b;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		mb_unary(renew(self), MB_F32, c[i].dims, "Relu");
		REFUSED(NULL, c[i].err, c[i].what);
	}

	b = renew(self);
	mb_input(b, "x", MB_F32, "2,2");
	mb_init(b, "w", MB_F32, "2,-2", NULL);
	mb_node(b, "Add", "x,w", "y");
	mb_output(b, "y", MB_F32, NULL);
	REFUSED(NULL, -EINVAL, "initializer 'w'");

	b = renew(self);		/* a tensor defined twice */
	mb_unary(b, MB_F32, "2,2", "Relu");
	mb_node(b, "Relu", "x", "y");
	REFUSED(NULL, -EINVAL, "defined twice");
}

/* Names the graph format refuses are rewritten, uniquely. */
TEST_F(onnx, names_are_made_valid)
{
	struct mb *b = self->b;

	mb_input(b, "in:0", MB_F32, "2");
	mb_node(b, "Relu", "in:0", "a b");
	mb_node(b, "Relu", "a b", "a_b");
	mb_node(b, "Split", "a_b", "s:0,s:1,s_0");	/* clash in one node */
	mb_output(b, "a_b", MB_F32, NULL);
	mb_output(b, "s_0", MB_F32, NULL);
	LOAD(NULL);
	EXPECT_EQ(8, SIZE("in_0"));
	EXPECT_EQ(8, SIZE("a_b"));
	EXPECT_EQ(8, SIZE("a_b.1"));
	EXPECT_NE(-ENOENT, T("s_0"));
	EXPECT_NE(-ENOENT, T("s_1"));
	EXPECT_NE(-ENOENT, T("s_0.1"));
}

/* The file convenience: a model read back; a missing file says why. */
TEST_F(onnx, from_file)
{
	char path[] = "/tmp/metadef-onnx-test.XXXXXX";
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	close(fd);
	mb_unary(self->b, MB_F32, "3", "Relu");
	ASSERT_EQ(0, mb_save(self->b, path));
	ASSERT_EQ(0, md_graph_new(&self->g));
	EXPECT_EQ(0, md_graph_from_onnx_file(self->g, path, NULL, &self->st,
					     &self->e))
		TH_LOG("%s", self->e.msg);
	EXPECT_EQ(12, SIZE("y"));
	EXPECT_EQ(1, self->st.nodes);
	unload(self);
	unlink(path);
	ASSERT_EQ(0, md_graph_new(&self->g));
	EXPECT_EQ(-ENOENT, md_graph_from_onnx_file(self->g, path, NULL, NULL,
						   &self->e));
	SAYS("No such file");
}

TEST(parse_dims)
{
	int64_t d[MD_ONNX_MAX_RANK];
	size_t r;

	ASSERT_EQ(0, md_onnx_parse_dims("1x3x224x224", d, &r));
	EXPECT_EQ(4, r);
	EXPECT_EQ(224, d[3]);
	ASSERT_EQ(0, md_onnx_parse_dims("", d, &r));
	EXPECT_EQ(0, r);
	EXPECT_EQ(-EINVAL, md_onnx_parse_dims("1x", d, &r));
	EXPECT_EQ(-EINVAL, md_onnx_parse_dims("x1", d, &r));
	EXPECT_EQ(-EINVAL, md_onnx_parse_dims("1,2", d, &r));
	EXPECT_EQ(-EINVAL, md_onnx_parse_dims("-1", d, &r));
	EXPECT_EQ(-ERANGE, md_onnx_parse_dims("9223372036854775808", d, &r));
	EXPECT_EQ(0, md_onnx_parse_dims("9223372036854775807", d, &r));
	EXPECT_EQ(-ERANGE, md_onnx_parse_dims("1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1",
					      d, &r));
}

/*
 * The exporters' GELU, x = in + bias read by Div and by the first Mul,
 * then a MatMul: Div -> Erf -> Add -> Mul -> Mul.
 */
static void gelu_model(struct mb *b)
{
	mb_input(b, "in", MB_F32, "4,64");
	mb_init(b, "bias", MB_F32, "64", NULL);
	mb_init(b, "sqrt2", MB_F32, "", NULL);
	mb_init(b, "one", MB_F32, "", NULL);
	mb_init(b, "half", MB_F32, "", NULL);
	mb_init(b, "w", MB_F32, "64,16", NULL);
	mb_node(b, "Add", "in,bias", "x");
	mb_node(b, "Div", "x,sqrt2", "d");
	mb_node(b, "Erf", "d", "e");
	mb_node(b, "Add", "e,one", "a");
	mb_node(b, "Mul", "x,a", "m");
	mb_node(b, "Mul", "m,half", "y");
	mb_node(b, "MatMul", "y,w", "z");
	mb_output(b, "z", MB_F32, NULL);
}

/* The GELU chain becomes one op; its output takes x's memory. */
TEST_F(onnx, fuse_gelu_chain)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_NO_WEIGHTS };
	struct md_graph_plan *gp = &self->gp;
	struct md_onnx_stats *st = &self->st;

	gelu_model(self->b);
	LOAD(&o);
	EXPECT_EQ(0, st->fused_ops);
	PLAN();
	/* Before: x and d (or the chain's buffer) alive together. */
	EXPECT_EQ(2048, gp->plan.peak);
	EXPECT_EQ(gp->stats.lower_bound, gp->plan.peak);
	o.flags |= MD_ONNX_FUSE;
	LOAD(&o);
	EXPECT_EQ(7, st->nodes);
	EXPECT_EQ(1, st->fused_ops);
	EXPECT_EQ(5, st->fused_nodes);
	EXPECT_EQ(4, st->fused_tensors);
	EXPECT_EQ(3, st->tensors);	/* x, y, z */
	EXPECT_EQ(3, md_graph_tensor_count(self->g));
	EXPECT_GT(0, T("d"));
	EXPECT_GT(0, T("e"));
	EXPECT_GT(0, T("a"));
	EXPECT_GT(0, T("m"));
	EXPECT_EQ(1024, SIZE("y"));
	PLAN();
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
	/* y written into x: x dies at the fused op. */
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("y")]);
	EXPECT_EQ(T("x"), gp->alias[T("y")]);
	EXPECT_EQ(gp->offset[T("x")], gp->offset[T("y")]);
	/* x [0, 2), y [1, 3): the op is the chain's last node's step. */
	EXPECT_EQ(2, gp->upper[T("x")]);
	EXPECT_EQ(1280, gp->plan.peak);
}

/* Fusion off: the graph of the import without the flag, every tensor. */
TEST_F(onnx, fuse_off_keeps_the_graph)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_NO_WEIGHTS };
	const char *names[] = { "x", "d", "e", "a", "m", "y", "z" };
	struct md_graph_plan *gp = &self->gp;
	struct md_onnx_stats *st = &self->st;
	size_t i;

	gelu_model(self->b);
	LOAD(&o);
	EXPECT_EQ(7, st->tensors);
	EXPECT_EQ(0, st->fused_ops);
	EXPECT_EQ(0, st->fused_nodes);
	EXPECT_EQ(0, st->fused_tensors);
	EXPECT_EQ(5, st->inplace);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		EXPECT_EQ((int)i, T(names[i]));
	PLAN();
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
	EXPECT_EQ(5, gp->upper[T("x")]);	/* read by the first Mul */
	EXPECT_EQ(2048, gp->plan.peak);
}

/* An intermediate that is a graph output ends a group. */
TEST_F(onnx, fuse_stops_at_graph_output)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_FUSE };
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,8");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Sigmoid", "a", "s");
	mb_node(b, "Tanh", "s", "c");
	mb_node(b, "Neg", "c", "n");
	mb_output(b, "s", MB_F32, NULL);
	mb_output(b, "n", MB_F32, NULL);
	LOAD(&o);
	EXPECT_EQ(2, self->st.fused_ops);	/* Relu+Sigmoid, Tanh+Neg */
	EXPECT_EQ(4, self->st.fused_nodes);
	EXPECT_GT(0, T("a"));
	EXPECT_GT(0, T("c"));
	EXPECT_LE(0, T("s"));
	EXPECT_LE(0, T("n"));
	PLAN();
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
	/* s is an output: n may not take its memory. */
	EXPECT_NE(gp->buffer[T("s")], gp->buffer[T("n")]);
}

/* a is read by Softmax too: Sigmoid's group starts after a. */
TEST_F(onnx, fuse_not_across_outside_reader)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_FUSE };
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,8");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Sigmoid", "a", "s");
	mb_node(b, "Softmax", "a", "t");
	mb_node(b, "Add", "s,t", "y");
	mb_output(b, "y", MB_F32, NULL);
	LOAD(&o);
	EXPECT_EQ(1, self->st.fused_ops);	/* Sigmoid+Add */
	EXPECT_EQ(2, self->st.fused_nodes);
	EXPECT_LE(0, T("a"));
	EXPECT_GT(0, T("s"));
	EXPECT_LE(0, T("t"));
	EXPECT_EQ(4, md_graph_tensor_count(self->g));	/* x, a, t, y */
	PLAN();
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
	/* The fused op (step 2, after Softmax) reads a. */
	EXPECT_EQ(3, gp->upper[T("a")]);
	EXPECT_EQ(3, gp->upper[T("t")]);
}

/* x -> a, x -> b, a + b: one op reading p once, written into it. */
TEST_F(onnx, fuse_diamond)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_FUSE };
	struct md_graph_plan *gp = &self->gp;
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,8");
	mb_node(b, "Relu", "x", "p");
	mb_node(b, "Sigmoid", "p", "a");
	mb_node(b, "Tanh", "p", "b");
	mb_node(b, "Add", "a,b", "y");
	mb_node(b, "Softmax", "y", "z");
	mb_output(b, "z", MB_F32, NULL);
	LOAD(&o);
	EXPECT_EQ(1, self->st.fused_ops);
	EXPECT_EQ(3, self->st.fused_nodes);
	EXPECT_EQ(2, self->st.fused_tensors);
	EXPECT_GT(0, T("a"));
	EXPECT_GT(0, T("b"));
	EXPECT_EQ(4, md_graph_tensor_count(self->g));	/* x, p, y, z */
	PLAN();
	EXPECT_EQ(0, md_graph_plan_validate(self->g, gp, NULL));
	EXPECT_EQ(MD_ALIAS_INPLACE, gp->kind[T("y")]);
	EXPECT_EQ(T("p"), gp->alias[T("y")]);
	EXPECT_EQ(2, gp->upper[T("p")]);
}

/* A group keeps its element count: a reduced branch is not fused in. */
TEST_F(onnx, fuse_keeps_the_element_count)
{
	struct md_onnx_opts o = { .flags = MD_ONNX_FUSE };
	struct mb *b = self->b;

	mb_input(b, "x", MB_F32, "2,8");
	mb_input(b, "v", MB_F32, "2,1");
	mb_node(b, "Sqrt", "v", "r");
	mb_node(b, "Div", "x,r", "q");
	mb_int(b, mb_node(b, "Cast", "q", "h"), "to", MB_F16);
	mb_int(b, mb_node(b, "Cast", "h", "f"), "to", MB_F32);
	mb_output(b, "f", MB_F32, NULL);
	LOAD(&o);
	EXPECT_EQ(1, self->st.fused_ops);	/* Div, Cast, Cast */
	EXPECT_EQ(3, self->st.fused_nodes);
	EXPECT_LE(0, T("r"));
	EXPECT_GT(0, T("h"));
	EXPECT_EQ(64, SIZE("f"));
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/*
 * A ResNet-152-sized model (50 bottleneck blocks: 3 Conv + 3 BN + 3 Relu
 * + Add, about 500 nodes) with symbolic batch and no value_info: imported
 * in milliseconds.
 */
TEST_F(onnx, resnet_sized_import_is_fast)
{
	struct md_onnx_dim d = { "N", 8 };
	struct md_onnx_opts o = { .dims = &d, .ndims = 1 };
	struct mb *b = self->b;
	char prev[32] = "x", nm[16][32], w[32];
	double t0, ms;
	int i, k;

	mb_input(b, "x", MB_F32, "N,256,56,56");
	mb_init(b, "bn64", MB_F32, "64", NULL);
	mb_init(b, "bn256", MB_F32, "256", NULL);
	for (i = 0; i < 50; i++) {
		static const char *const ws[] = { "64,256,1,1", "64,64,3,3",
						  "256,64,1,1" };

		for (k = 0; k < 3; k++) {
			Onnx__NodeProto *n;
			const char *bn = k == 2 ? "bn256" : "bn64";
			char ins[128];

			snprintf(w, sizeof(w), "w%d_%d", i, k);
			mb_init(b, w, MB_F32, ws[k], NULL);
			snprintf(nm[0], 32, "c%d_%d", i, k);
			snprintf(ins, sizeof(ins), "%s,%s", k ? nm[3] : prev, w);
			n = mb_node(b, "Conv", ins, nm[0]);
			if (k == 1)
				mb_ints(b, n, "pads", "1,1,1,1");
			snprintf(nm[1], 32, "b%d_%d", i, k);
			snprintf(ins, sizeof(ins), "%s,%s,%s,%s,%s", nm[0], bn,
				 bn, bn, bn);
			mb_node(b, "BatchNormalization", ins, nm[1]);
			if (k == 2)
				break;
			snprintf(nm[3], 32, "r%d_%d", i, k);
			mb_node(b, "Relu", nm[1], nm[3]);
		}
		snprintf(nm[2], 32, "a%d", i);
		snprintf(w, sizeof(w), "%s,%s", nm[1], prev);
		mb_node(b, "Add", w, nm[2]);
		snprintf(prev, sizeof(prev), "o%d", i);
		mb_node(b, "Relu", nm[2], prev);
	}
	mb_output(b, prev, MB_F32, NULL);
	t0 = now_ms();
	LOAD(&o);
	ms = now_ms() - t0;
	TH_LOG("%zu nodes imported in %.2f ms", self->st.nodes, ms);
	EXPECT_EQ(500, self->st.nodes);
	EXPECT_EQ(500, self->st.inferred);
	EXPECT_LT(ms, 250.0);
	EXPECT_EQ(8ull * 256 * 56 * 56 * 4, SIZE(prev));
	PLAN();
	/* BN, Relu, Add, Relu in place: 8 of 10 ops per block. */
	EXPECT_GE(self->gp.stats.inplace_taken, 350);
}

TEST_HARNESS_MAIN
