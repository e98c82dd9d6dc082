/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef ONNX import: an ONNX model (ModelProto) turned into a usage
 * graph (struct md_graph, <metadef/graph.h>) whose plan is the memory of
 * one inference run.
 *
 * What becomes what:
 *   - every node is an op of the graph, in a topological order (the file's
 *     when it is one, else Kahn's algorithm; a cycle is an error). Constant
 *     nodes are not ops: their outputs are weights.
 *   - graph inputs, initializers and Constant outputs are resident: alive
 *     for the whole run, never reused (md_graph_input()), unless
 *     MD_ONNX_NO_WEIGHTS leaves them out of the problem altogether (they
 *     live in memory of their own, as in ONNX Runtime's activation arena).
 *   - graph outputs live to the end of the run (md_graph_output()); an
 *     output nobody reads lives one step; empty (absent) optional inputs
 *     and outputs are skipped.
 *   - Shape and Size read only their input's shape, known before the run:
 *     they do not keep that input alive.
 *   - views: the output of Reshape, Flatten, Squeeze, Unsqueeze, Identity
 *     and Dropout (inference: the identity; not its mask) is a view of
 *     input 0 when it has the same bytes, as in ONNX Runtime: it allocates
 *     nothing, shares its input's memory, and that memory lives as long
 *     as either is read (md_graph_op_view()). A view of a graph input or
 *     weight stays in that memory.
 *   - in place: the output of an element-wise op (unary, or binary with
 *     the output of the same shape and element size as that input) and
 *     BatchNormalization may be written into an input of the same bytes;
 *     the graph takes it only when nothing reads that memory after the op
 *     (the input, its views, its base) and it is not a graph input or
 *     output (md_graph_lower()).
 *   - element-wise fusion (MD_ONNX_FUSE, off by default): a group of
 *     element-wise nodes (unary ops, Cast, broadcasting binary and
 *     variadic ops, Where; not the views Identity and Dropout) joined by
 *     intermediates that have one reader, inside the group, are no graph
 *     output and have the group's element count becomes one op, as an
 *     optimizing runtime or an accelerator compiler fuses them into one
 *     kernel (the exporters' GELU Div -> Erf -> Add -> Mul -> Mul, a
 *     bias + activation, the tail of a LayerNorm). Its inputs are the
 *     group's external inputs, each once; its output the last node's;
 *     the intermediates are no tensors of the graph. The op runs at the
 *     last node's step, is named after the first node, and its output may
 *     be written in place into an external input of the same bytes. A
 *     group is a tree grown along single-reader edges in topological
 *     order: nothing outside reads inside it, so it stays acyclic with
 *     the rest of the graph. Shapes are inferred before fusion, as
 *     without it.
 *
 * Sizes are element counts times the element size of the tensor's data
 * type (float 4, float16 and bfloat16 2, double, int64 and uint64 8, ...;
 * strings are refused), all in 64 bits with every product checked. The
 * shapes come from the model (graph inputs and outputs, value_info,
 * initializers' dims) and, where an intermediate shape is missing, from
 * shape inference written here in C, for the common operators of CNNs and
 * transformers, with constant folding of small integer tensors (the
 * Shape -> Gather -> Unsqueeze -> Concat -> Reshape computations exporters
 * write). No Python or ONNX runtime is needed: md_graph_from_onnx() runs
 * wherever libmetadef does. An inferred shape wins over value_info (which
 * may describe other input sizes than the ones asked for); value_info is
 * the fallback for operators without inference here.
 *
 * Tensor names are the model's, with every character other than letters,
 * digits and "_.-/" replaced by '_' (and ".N" appended should two names
 * then clash), as the graph format wants.
 *
 * Errors are -EINVAL with the reason in struct md_error: not a model
 * ("not an ONNX model (protobuf parse failed)"), no graph, a symbolic
 * dimension without a value, a tensor whose size cannot be determined
 * ("tensor 'y' (output 0 of node 'n', op Foo): shape unknown"), control
 * flow (If, Loop, Scan), a cycle, a string tensor, sizes past 2^64. The
 * library never prints and never aborts; hostile files are refused (rank
 * above MD_ONNX_MAX_RANK, negative dimensions, overflowing sizes) and
 * constant folding is bounded.
 */
#ifndef METADEF_ONNX_H
#define METADEF_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/graph.h>
#include <metadef/plan.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Highest tensor rank accepted. */
#define MD_ONNX_MAX_RANK	16

/* A data input's shape, given by the caller ("--input NAME=1x3x224x224"). */
struct md_onnx_input {
	const char *name;	/* a graph input of the model */
	const int64_t *dims;	/* @rank dimensions, each >= 0 */
	size_t rank;
};

/* A symbolic dimension's value ("--dim batch=8"). */
struct md_onnx_dim {
	const char *name;	/* a dim_param of the model */
	int64_t value;		/* >= 0 */
};

/* How float tensors are stored. */
enum md_onnx_dtype {
	MD_ONNX_DTYPE_MODEL = 0,	/* as the model says */
	MD_ONNX_DTYPE_FP32,
	MD_ONNX_DTYPE_FP16,
	MD_ONNX_DTYPE_BF16,
};

/* Leave graph inputs, initializers and constants out of the problem. */
#define MD_ONNX_NO_WEIGHTS	(1u << 0)
/* Fuse element-wise groups into one op each (see above). */
#define MD_ONNX_FUSE		(1u << 1)

struct md_onnx_opts {
	const struct md_onnx_input *inputs;	/* shape overrides */
	size_t ninputs;
	const struct md_onnx_dim *dims;		/* dim_param values */
	size_t ndims;
	/*
	 * Float tensors (float, float16, bfloat16, double), weights and
	 * activations alike, stored as this type; integer and bool
	 * tensors keep theirs.
	 */
	enum md_onnx_dtype dtype;
	unsigned int flags;			/* MD_ONNX_* */
};

struct md_onnx_stats {
	size_t nodes;		/* nodes of the model's graph */
	size_t tensors;		/* tensors added to the md_graph */
	size_t inferred;	/* shapes inferred here (not from the model) */
	size_t inplace;		/* op outputs marked writable in place */
	uint64_t weight_bytes;	/* initializers and Constant outputs */
	uint64_t input_bytes;	/* graph inputs that are not initializers */
	uint64_t activation_bytes;	/* outputs of the other nodes */
	int64_t ir_version;
	int64_t opset;		/* of the default domain, 0: none given */
	size_t views;		/* op outputs that are views of input 0 */
	size_t fused_ops;	/* ops made of fused groups (MD_ONNX_FUSE) */
	size_t fused_nodes;	/* nodes in them, the last ones included */
	size_t fused_tensors;	/* intermediates that are no graph tensors */
};

/**
 * md_graph_from_onnx() - import a serialized ONNX model into a graph.
 * @g:    an empty graph (md_graph_new()); set its device or alignment
 *        before or after, as with md_graph_parse()
 * @data: the ModelProto's bytes
 * @len:  their number
 * @opts: shapes, dims, dtype and flags (may be NULL: the model as it is)
 * @st:   import figures (may be NULL)
 * @err:  the reason of a failure (may be NULL); err->line is always 0
 *
 * On failure @g may hold part of the model: md_graph_free() it.
 * Return: 0, -EINVAL (malformed or unsupported model, bad option; the
 * reason in @err), -EOVERFLOW (a tensor or the sum of them past 2^64
 * bytes) or -ENOMEM.
 */
int md_graph_from_onnx(struct md_graph *g, const void *data, size_t len,
		       const struct md_onnx_opts *opts,
		       struct md_onnx_stats *st, struct md_error *err);

/**
 * md_graph_from_onnx_file() - md_graph_from_onnx() of the file @path
 * ("-": standard input). A file that cannot be read is -errno with the
 * reason in @err.
 */
int md_graph_from_onnx_file(struct md_graph *g, const char *path,
			    const struct md_onnx_opts *opts,
			    struct md_onnx_stats *st, struct md_error *err);

/**
 * md_onnx_parse_dims() - parse a shape such as "1x3x224x224" (dimensions
 * separated by 'x', each a decimal >= 0; "" or "scalar" is rank 0).
 * @s:     the text
 * @dims:  MD_ONNX_MAX_RANK entries
 * @rank:  the number of dimensions read
 * Return: 0, -EINVAL (not a shape) or -ERANGE (a dimension past 2^63-1,
 * or more than MD_ONNX_MAX_RANK of them).
 */
int md_onnx_parse_dims(const char *s, int64_t *dims, size_t *rank);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_ONNX_H */
