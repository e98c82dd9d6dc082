/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmetadef usage graphs: ops with input and output tensors in execution
 * order, turned into a planning problem (struct md_problem) and planned.
 *
 * Text format, one statement per line, '#' starts a comment:
 *
 *   device npu              default alignment: the device's (cpu 64,
 *                           gpu 128, npu 256); "align N" sets it directly
 *   mode parallel           ops between two barriers may run in any order
 *                           or at the same time (default: sequential)
 *   input  x 4096           graph input: alive for the whole run
 *   op conv1 x w -> a:8192  an op: inputs, "->", outputs NAME:SIZE
 *   op relu1 a -> b:8192=a  b may be written into a in place (if a dies
 *                           here and is not an input/output of the graph)
 *   op resh b -> c:8192^b   c is a view of b: the same bytes at the same
 *                           offset, never written by anyone ("c^b": the
 *                           size of b; a view is no larger than its base)
 *   op split b -> c:4K@256 d:4K   "@N": this tensor's own alignment
 *   barrier                 memory barrier: see below
 *   contig c d              c and d must be adjacent in memory, in order
 *   output d                graph output: alive until the end of the run
 *
 * Sizes take K/M/G suffixes (md_parse_size()). Names: letters, digits and
 * "_.-/". Every tensor is produced once (or declared as an input) before
 * it is used.
 *
 * Time: op k runs at step k; a tensor lives from the step of the op that
 * makes it to the step after its last use, [def, last_use + 1). In
 * sequential mode a barrier is a step of its own and changes nothing
 * else. In parallel mode the ops between two barriers (a "stage") may run
 * concurrently, so a tensor is alive for every whole stage it touches:
 * without barriers nothing is reused; with a barrier between the steps of
 * an unrolled loop, each step may reuse the memory of the previous ones.
 *
 * Aliasing. A view (Reshape, Squeeze, ...) shares its base's buffer at
 * the base's offset, always: the buffer then lives as long as any of the
 * tensors in it (the union of their lifetimes), and views of views chain.
 * A view of a graph input stays in the input's memory (it is no copy); a
 * graph output that is a view keeps its base's memory to the end. An
 * in-place request ("=a") is a wish the lowering takes only when nothing
 * reads that memory after the op: the input, every view of it and the
 * base it is a view of die at the op, none is a graph input or output,
 * none is in a contig group, and no other output of the op took it.
 * struct md_graph_plan records, per tensor, what it aliases and how.
 *
 * Reuse levels, each measured (struct md_reuse_stats):
 *   intra-op   an op writes its output into a dying input (in place), or
 *              its output is a view of an input
 *   inter-op   tensors that are never alive together share memory (plan)
 *   inter-model  graphs that never run at the same time share one arena
 *              (md_overlay())
 */
#ifndef METADEF_GRAPH_H
#define METADEF_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include <metadef/meta.h>
#include <metadef/plan.h>

#ifdef __cplusplus
extern "C" {
#endif

struct md_graph;

#define MD_T_INPUT	(1u << 0)	/* graph input: alive from step 0 */
#define MD_T_OUTPUT	(1u << 1)	/* graph output: alive to the end */

int md_graph_new(struct md_graph **g);
void md_graph_free(struct md_graph *g);

/*
 * md_graph_parse() - add the statements of @text (format above) to @g.
 * @err (may be NULL) gets the line and reason of a failure.
 * Return: 0, -EINVAL (malformed) or -ENOMEM.
 */
int md_graph_parse(struct md_graph *g, const char *text, size_t len,
		   struct md_error *err);

/* Building by hand: tensor ids are returned (>= 0) or a negative errno. */
int md_graph_set_device(struct md_graph *g, enum md_device_kind dev,
			const struct md_align_cfg *cfg);
int md_graph_input(struct md_graph *g, const char *name, uint64_t size,
		   uint64_t align);
/*
 * md_graph_op() - an op reading tensors @in and producing @nout new tensors
 * named @out_names with @out_sizes (and @out_align, may be NULL: default).
 * @inplace (may be NULL) gives, per output, the input tensor id it may be
 * written into, or -1. Returns the id of the first output tensor; the
 * others follow in order.
 */
int md_graph_op(struct md_graph *g, const char *name, const int *in,
		size_t nin, const char *const *out_names,
		const uint64_t *out_sizes, const uint64_t *out_align,
		const int *inplace, size_t nout);
/*
 * md_graph_op_view() - md_graph_op() with @view (may be NULL) giving, per
 * output, the input tensor id it is a view of, or -1. An output is either
 * a view or (maybe) in place, not both; a view is no larger than its base
 * and takes its base's alignment (its own is not used). -EINVAL when a
 * view's base is not an input of the op, is larger than its base, or the
 * output also has an in-place request.
 */
int md_graph_op_view(struct md_graph *g, const char *name, const int *in,
		     size_t nin, const char *const *out_names,
		     const uint64_t *out_sizes, const uint64_t *out_align,
		     const int *inplace, const int *view, size_t nout);
int md_graph_barrier(struct md_graph *g);
int md_graph_output(struct md_graph *g, int tensor);
int md_graph_contig(struct md_graph *g, const int *tensors, size_t n);
/* Parallel (1) or sequential (0) scheduling, see above. */
int md_graph_set_parallel(struct md_graph *g, int parallel);

size_t md_graph_tensor_count(const struct md_graph *g);
const char *md_graph_tensor_name(const struct md_graph *g, int tensor);
/* Its size in bytes, and its alignment (its own or the graph's); 0 if none. */
uint64_t md_graph_tensor_size(const struct md_graph *g, int tensor);
uint64_t md_graph_tensor_align(const struct md_graph *g, int tensor);
/* Tensor id by name, or -ENOENT. */
int md_graph_find(const struct md_graph *g, const char *name);
/* The tensor @tensor is a view of, -1 if none (or -ENOENT). */
int md_graph_view_of(const struct md_graph *g, int tensor);

struct md_reuse_stats {
	uint64_t tensor_bytes;	/* sum of tensor sizes: no reuse at all */
	uint64_t buffer_bytes;	/* sum of buffer sizes after in-place */
	uint64_t intra_op_saved;	/* tensor_bytes - buffer_bytes */
	uint64_t peak;		/* arena of the plan */
	uint64_t inter_op_saved;	/* buffer_bytes - peak */
	uint64_t lower_bound;	/* of the planned buffers: with aliasing */
	unsigned int inplace_taken;	/* in-place requests honoured */
	unsigned int inplace_refused;	/* input still needed later, ... */
	unsigned int views;		/* tensors that are views */
	/*
	 * Max bytes alive at once with every tensor in a buffer of its own
	 * (a contig group is one): the bound without views or in place.
	 */
	uint64_t lower_bound_noalias;
};

/* How a tensor shares memory with another (struct md_graph_plan.kind). */
enum md_alias_kind {
	MD_ALIAS_NONE,		/* memory of its own (or a contig group) */
	MD_ALIAS_VIEW,		/* a view of alias[t] */
	MD_ALIAS_INPLACE,	/* written into alias[t] in place */
};

/* A graph's buffers, its plan, and where every tensor landed. */
struct md_graph_plan {
	struct md_problem problem;	/* one buffer per memory block */
	struct md_plan plan;
	size_t ntensors;
	uint32_t *buffer;		/* tensor -> buffer index */
	uint64_t *offset;		/* tensor -> absolute offset */
	uint64_t *lower, *upper;	/* tensor lifetimes */
	struct md_reuse_stats stats;
	int *alias;			/* tensor -> tensor it aliases, -1 */
	uint8_t *kind;			/* tensor -> enum md_alias_kind */
};

/*
 * md_graph_lower() - lifetimes and buffers only (gp->plan left empty):
 * the problem an exact solver or md_plan_solve() works on.
 */
int md_graph_lower(const struct md_graph *g, struct md_graph_plan *gp);

/*
 * md_graph_lower() + md_plan_solve(@opts) + tensor offsets + stats. When
 * an in-place merge took an output larger than its input (the buffer then
 * holds the larger size for the input's whole life), the graph is also
 * planned without such merges, and the plan with the lower peak is kept.
 */
int md_graph_plan(const struct md_graph *g, const struct md_plan_opts *opts,
		  struct md_graph_plan *gp);
void md_graph_plan_free(struct md_graph_plan *gp);

/*
 * md_graph_plan_validate() - check @gp's tensor offsets (gp->offset and
 * gp->plan.peak) against @g, per tensor, not per buffer: lifetimes are
 * computed from @g again; a view must sit at its base's offset; no two
 * tensors alive at the same time overlap in memory unless they share
 * memory legally: a view with its base (transitively), or an in-place
 * output with its source when @g allows it there (the source, its views
 * and its base die at that op, none is a graph input/output, no other
 * output of that op took that memory first), at the source's offset.
 * On failure *@c (may be NULL) names the tensor(s), as tensor ids in
 * c->a and c->b (b is (size_t)-1 for a single misplaced tensor).
 * Return: 0, -EEXIST (overlap), -EINVAL (misplaced view, outside the
 * arena, misaligned) or -ENOMEM.
 */
int md_graph_plan_validate(const struct md_graph *g,
			   const struct md_graph_plan *gp,
			   struct md_conflict *c);

/*
 * md_overlay() - inter-model reuse: @n models whose runs never overlap in
 * time share one arena. Each model keeps its own plan and starts at offset
 * 0 of the arena (written to @base, may be NULL). The arena is the largest
 * peak; @saved is what separate arenas would have cost on top of it.
 */
struct md_overlay_stats {
	uint64_t sum_peaks;	/* one arena per model */
	uint64_t arena;		/* shared */
	uint64_t saved;
};

int md_overlay(const uint64_t *peaks, size_t n, uint64_t *base,
	       struct md_overlay_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* METADEF_GRAPH_H */
