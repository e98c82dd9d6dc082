/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ONNX import internals, shared by lib/onnx.c (reading the model, order,
 * lifetimes, the graph) and lib/onnx_shape.c (shape inference and
 * constant folding). Not installed.
 */
#ifndef METADEF_ONNX_INTERNAL_H
#define METADEF_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/onnx.h>

#include "onnx.pb-c.h"

#define OX_MAX_RANK	MD_ONNX_MAX_RANK
/* Constant folding: tensors of at most this many elements ... */
#define OX_FOLD_MAX	4096
/* ... and at most this many elements folded over the whole model. */
#define OX_FOLD_BUDGET	(1u << 22)

/* ONNX TensorProto.DataType values used by name. */
enum {
	OX_UNDEFINED = 0, OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3,
	OX_UINT16 = 4, OX_INT16 = 5, OX_INT32 = 6, OX_INT64 = 7,
	OX_STRING = 8, OX_BOOL = 9, OX_FLOAT16 = 10, OX_DOUBLE = 11,
	OX_UINT32 = 12, OX_UINT64 = 13, OX_COMPLEX64 = 14,
	OX_COMPLEX128 = 15, OX_BFLOAT16 = 16,
};

/* Where a tensor comes from. */
enum ox_kind { OX_K_NODE, OX_K_INPUT, OX_K_INIT, OX_K_CONST };

struct ox_tensor {
	const char *name;	/* the model's (in the unpacked message) */
	enum ox_kind kind;
	int32_t dtype;		/* ONNX data type, 0: not known yet */
	int rank;		/* -1: shape not known yet */
	int64_t dim[OX_MAX_RANK];
	/*
	 * Its elements when known and small (constant folding): as
	 * integers, or as doubles for float types; NULL: unknown.
	 */
	int64_t *iv;
	double *fv;
	int producer;		/* node index, -1: none */
	int out_idx;		/* which output of the producer */
	int last_use;		/* position in the order of its last reader */
	int gid;		/* md_graph tensor id, -1: not in the graph */
	int inferred;		/* shape from ox_infer(), not the model */
	uint64_t bytes;
	const Onnx__ValueInfoProto *vi;	/* value_info / output type */
};

struct ox_ctx {
	const Onnx__GraphProto *g;
	const struct md_onnx_opts *o;
	struct md_error *err;
	struct ox_tensor *t;
	size_t nt, tcap;
	uint32_t *slot;		/* name hash: tensor index + 1, 0: empty */
	size_t mask;
	size_t fold_left;	/* OX_FOLD_BUDGET minus what was folded */
	int64_t opset;
};

/* Tensor index of @name, or -1. */
int ox_find(const struct ox_ctx *c, const char *name);

/* Attributes of @n by name (NULL: none). */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n,
				    const char *name);

/* Node @n's name for messages ("#index" when it has none). */
const char *ox_node_name(const Onnx__NodeProto *n, int idx, char *buf,
			 size_t len);

/*
 * ox_read_tensor() - dtype, shape and (small) value of the TensorProto
 * @tp (an initializer, a Constant's value) into @t. Return: 0 or -EINVAL
 * (reason in c->err, naming @what).
 */
int ox_read_tensor(struct ox_ctx *c, const Onnx__TensorProto *tp,
		   struct ox_tensor *t, const char *what);

/*
 * ox_infer() - shape inference of node @idx: sets dtype, rank, dims (and
 * value when it folds) of its outputs @out (tensor indices, -1 for an
 * absent optional one) from its inputs @in (-1 for absent). An output it
 * cannot size is left at rank -1 for the caller to report.
 * Return: 0, -EINVAL (a bad attribute or input; reason in c->err) or
 * -ENOMEM.
 */
int ox_infer(struct ox_ctx *c, const Onnx__NodeProto *n, int idx,
	     const int *in, size_t nin, const int *out, size_t nout);

/*
 * Does node @n's output 0 alias an element-wise or same-bytes op of its
 * input? Returns the input positions that may be written in place, as a
 * bit mask (bit k: input k), 0 for none. The caller checks the bytes.
 */
unsigned int ox_inplace_inputs(const Onnx__NodeProto *n, size_t nin);

/*
 * Is node @n element-wise (MD_ONNX_FUSE may fuse it): a unary op, Cast,
 * a broadcasting binary or variadic op, Where; not Identity or Dropout.
 */
int ox_elementwise(const Onnx__NodeProto *n);

/* Is there shape inference here for node @n's operator? */
int ox_op_known(const Onnx__NodeProto *n);

/* Float types: float, float16, double, bfloat16 and the float8 ones. */
static inline int ox_is_float(int32_t dt)
{
	return dt == OX_FLOAT || dt == OX_FLOAT16 || dt == OX_DOUBLE ||
	       dt == OX_BFLOAT16 || (dt >= 17 && dt <= 20);
}

/* Free @t's folded value. */
void ox_drop_value(struct ox_tensor *t);

#endif /* METADEF_ONNX_INTERNAL_H */
