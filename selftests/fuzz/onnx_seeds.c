// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Writes the onnx_fuzz seeds (selftests/fuzz/seeds/onnx/, FILE.onnx): small
 * models built with the protobuf-c structs, as the host tests build them.
 * Weights have dims and no data. make fuzz-lib-build builds it, and
 * selftests/fuzz/run checks that it still writes the committed seeds
 * byte for byte. To write the seeds again after changing a model here:
 *
 *   make build/fuzz/onnx_seeds && build/fuzz/onnx_seeds selftests/fuzz/seeds/onnx
 */
#include <stdio.h>

#include "onnx_build.h"

static int save(struct mb *b, const char *dir, const char *name)
{
	char path[4096];
	int ret;

	snprintf(path, sizeof(path), "%s/%s.onnx", dir, name);
	ret = mb_save(b, path);
	mb_free(b);
	if (ret)
		perror(path);
	return ret;
}

/* Conv, BN, Relu, MaxPool, a residual Add, GlobalAveragePool, Gemm. */
static int cnn(const char *dir)
{
	struct mb *b = mb_new(17);
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "N,3,16,16");
	mb_init(b, "w", MB_F32, "8,3,3,3", NULL);
	mb_init(b, "w2", MB_F32, "8,8,3,3", NULL);
	mb_init(b, "s", MB_F32, "8", NULL);
	mb_init(b, "fc", MB_F32, "10,8", NULL);
	n = mb_node(b, "Conv", "x,w,s", "c");
	mb_ints(b, n, "pads", "1,1,1,1");
	mb_ints(b, n, "strides", "2,2");
	mb_node(b, "BatchNormalization", "c,s,s,s,s", "bn");
	mb_node(b, "Relu", "bn", "r");
	n = mb_node(b, "MaxPool", "r", "p");
	mb_ints(b, n, "kernel_shape", "3,3");
	mb_ints(b, n, "strides", "2,2");
	mb_ints(b, n, "pads", "1,1,1,1");
	mb_int(b, n, "ceil_mode", 1);
	n = mb_node(b, "Conv", "p,w2", "c2");
	mb_string(b, n, "auto_pad", "SAME_UPPER");
	mb_node(b, "Add", "c2,p", "a");
	mb_node(b, "Relu", "a", "ra");
	mb_node(b, "GlobalAveragePool", "ra", "g");
	mb_node(b, "Flatten", "g", "f");
	n = mb_node(b, "Gemm", "f,fc", "y");
	mb_int(b, n, "transB", 1);
	mb_output(b, "y", MB_F32, NULL);
	return save(b, dir, "cnn");
}

/* The export's shape computation and an attention block. */
static int attention(const char *dir)
{
	struct mb *b = mb_new(17);
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "batch,seq,32");
	mb_init(b, "wq", MB_F32, "32,32", NULL);
	mb_init(b, "g", MB_F32, "32", NULL);
	mb_ival(b, "zero", "0", 1);
	mb_ival(b, "one", "1", 1);
	mb_ival(b, "ax0", "0", 0);
	mb_ival(b, "tail", "4,8", 0);
	mb_node(b, "MatMul", "x,wq", "q");
	mb_node(b, "Shape", "q", "s");
	mb_node(b, "Gather", "s,zero", "b");
	mb_node(b, "Gather", "s,one", "l");
	mb_node(b, "Unsqueeze", "b,ax0", "bu");
	mb_node(b, "Unsqueeze", "l,ax0", "lu");
	n = mb_node(b, "Concat", "bu,lu,tail", "shp");
	mb_int(b, n, "axis", 0);
	mb_node(b, "Reshape", "q,shp", "q4");
	n = mb_node(b, "Transpose", "q4", "qt");
	mb_ints(b, n, "perm", "0,2,1,3");
	n = mb_node(b, "Transpose", "q4", "kt");
	mb_ints(b, n, "perm", "0,2,3,1");
	mb_node(b, "MatMul", "qt,kt", "att");
	mb_node(b, "Softmax", "att", "sm");
	mb_node(b, "MatMul", "sm,qt", "ctx");
	mb_node(b, "LayerNormalization", "x,g", "ln");
	mb_node(b, "Gelu", "ln", "ge");
	mb_output(b, "ctx", MB_F32, NULL);
	mb_output(b, "ge", MB_F32, NULL);
	return save(b, dir, "attention");
}

/* Slice, Split, Pad, Resize, Expand, ConstantOfShape, Range, TopK, LSTM. */
static int misc(const char *dir)
{
	struct mb *b = mb_new(13);
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F32, "2,6,8");
	mb_input(b, "img", MB_F32, "1,3,4,4");
	mb_ival(b, "st", "1", 0);
	mb_ival(b, "en", "5", 0);
	mb_ival(b, "ax", "1", 0);
	mb_ival(b, "pads", "0,1,0,0,1,0", 0);
	mb_ival(b, "k", "2", 0);
	mb_ival(b, "shape", "3,2,6,8", 0);
	mb_ival(b, "lim", "10", 1);
	mb_ival(b, "zero", "0", 1);
	mb_ival(b, "two", "2", 1);
	mb_init(b, "sc", MB_F32, "4", (const int64_t[]){ 1, 1, 2, 2 });
	mb_init(b, "W", MB_F32, "1,16,8", NULL);
	mb_init(b, "R", MB_F32, "1,16,4", NULL);
	mb_node(b, "Slice", "x,st,en,ax", "sl");
	n = mb_node(b, "Split", "x", "p0,p1");
	mb_int(b, n, "axis", 2);
	mb_node(b, "Pad", "x,pads", "pd");
	mb_node(b, "Resize", "img,,sc", "up");
	mb_node(b, "Expand", "x,shape", "ex");
	mb_node(b, "Range", "zero,lim,two", "rg");
	mb_node(b, "Shape", "rg", "rs");
	mb_node(b, "ConstantOfShape", "rs", "zs");
	mb_node(b, "TopK", "x,k", "tv,ti");
	n = mb_node(b, "LSTM", "x,W,R", "Y,Yh,");
	mb_int(b, n, "hidden_size", 4);
	n = mb_node(b, "ReduceSum", "ex", "rsum");
	mb_int(b, n, "keepdims", 0);
	mb_node(b, "Where", "ti,tv,tv", "wh");
	mb_output(b, "sl", MB_F32, NULL);
	mb_output(b, "p1", MB_F32, NULL);
	mb_output(b, "pd", MB_F32, NULL);
	mb_output(b, "up", MB_F32, NULL);
	mb_output(b, "zs", MB_F32, NULL);
	mb_output(b, "Y", MB_F32, NULL);
	mb_output(b, "rsum", MB_F32, NULL);
	mb_output(b, "wh", MB_F32, NULL);
	return save(b, dir, "misc");
}

/* An unknown op sized by value_info; Constant; Cast; Dropout. */
static int value_info(const char *dir)
{
	struct mb *b = mb_new(17);
	Onnx__NodeProto *n;

	mb_input(b, "x", MB_F16, "4,4");
	n = mb_node(b, "Constant", "", "c");
	mb_tensor_attr(b, n, "value",
		       mb_tensor(b, "cv", MB_I64, "2", (const int64_t[]){ 2, 8 }));
	mb_node(b, "Reshape", "x,c", "r");
	mb_node(b, "Custom", "r", "u");
	mb_value_info(b, "u", MB_F16, "2,8");
	n = mb_node(b, "Cast", "u", "f");
	mb_int(b, n, "to", MB_F32);
	mb_node(b, "Dropout", "f", "d,m");
	mb_output(b, "d", MB_F32, NULL);
	mb_output(b, "m", MB_BOOL, NULL);
	return save(b, dir, "value_info");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	return cnn(argv[1]) || attention(argv[1]) || misc(argv[1]) ||
	       value_info(argv[1]);
}
