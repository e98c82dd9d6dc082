// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ONNX import (include/metadef/onnx.h): read a ModelProto with the
 * protobuf-c reader generated at build time, name every tensor, order the
 * nodes, size every tensor (the model's shapes, else lib/onnx_shape.c),
 * and emit the usage graph with its resident tensors, lifetimes and
 * in-place hints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metadef/metadef.h>
#include <metadef/onnx.h>

#include "heap.h"
#include "internal.h"
#include "onnx_internal.h"
#include "plan_internal.h"

/* ------------------------------------------------------------ helpers */

const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n,
				    const char *name)
{
	size_t i;

	for (i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

const char *ox_node_name(const Onnx__NodeProto *n, int idx, char *buf,
			 size_t len)
{
	if (n->name && *n->name)
		snprintf(buf, len, "%s", n->name);
	else
		snprintf(buf, len, "#%d", idx);
	return buf;
}

void ox_drop_value(struct ox_tensor *t)
{
	free(t->iv);
	free(t->fv);
	t->iv = NULL;
	t->fv = NULL;
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

int ox_find(const struct ox_ctx *c, const char *name)
{
	size_t i = name_hash(name) & c->mask;

	for (; c->slot[i]; i = (i + 1) & c->mask)
		if (!strcmp(c->t[c->slot[i] - 1].name, name))
			return (int)c->slot[i] - 1;
	return -1;
}

/* A new tensor @name (capacity was reserved): its index, or -EEXIST. */
static int add_tensor(struct ox_ctx *c, const char *name, enum ox_kind kind)
{
	struct ox_tensor *t;
	size_t k;

	if (ox_find(c, name) >= 0)
		return -EEXIST;
	t = &c->t[c->nt];
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->kind = kind;
	t->rank = -1;
	t->producer = -1;
	t->last_use = -1;
	t->gid = -1;
	k = name_hash(name) & c->mask;
	while (c->slot[k])
		k = (k + 1) & c->mask;
	c->slot[k] = (uint32_t)c->nt + 1;
	return (int)c->nt++;
}

/* Bytes of one element as the model stores it; 0: not supported. */
static unsigned int elem_size(int32_t dt)
{
	switch (dt) {
	case OX_UINT8: case OX_INT8: case OX_BOOL:
	case 17: case 18: case 19: case 20:	/* float8 */
		return 1;
	case OX_UINT16: case OX_INT16: case OX_FLOAT16: case OX_BFLOAT16:
		return 2;
	case OX_FLOAT: case OX_INT32: case OX_UINT32:
		return 4;
	case OX_INT64: case OX_UINT64: case OX_DOUBLE: case OX_COMPLEX64:
		return 8;
	case OX_COMPLEX128:
		return 16;
	}
	return 0;
}

/* Bytes of one element in memory: float types as opts->dtype says. */
static unsigned int store_size(const struct ox_ctx *c, int32_t dt)
{
	static const unsigned int sz[] = {
		[MD_ONNX_DTYPE_FP32] = 4, [MD_ONNX_DTYPE_FP16] = 2,
		[MD_ONNX_DTYPE_BF16] = 2,
	};

	if (c->o->dtype != MD_ONNX_DTYPE_MODEL && ox_is_float(dt))
		return sz[c->o->dtype];
	return elem_size(dt);
}

/* "string" or the number of data type @dt, into @buf. */
static const char *dtype_name(int32_t dt, char *buf, size_t len)
{
	if (dt == OX_STRING)
		return "string";
	snprintf(buf, len, "%d", (int)dt);
	return buf;
}

/* Elements of @t (rank and dims known); -1 past 2^63. */
static int64_t t_numel(const struct ox_tensor *t)
{
	uint64_t n = 1;
	int i;

	for (i = 0; i < t->rank; i++)
		if (__builtin_mul_overflow(n, (uint64_t)t->dim[i], &n) ||
		    n > INT64_MAX)
			return -1;
	return (int64_t)n;
}

/* ------------------------------------------------------------ tensors */

/* Can raw_elem() read type @dt? */
static int raw_type(int32_t dt)
{
	switch (dt) {
	case OX_INT8: case OX_INT16: case OX_INT32: case OX_INT64:
	case OX_UINT8: case OX_UINT16: case OX_UINT32: case OX_UINT64:
	case OX_BOOL: case OX_FLOAT: case OX_DOUBLE:
		return 1;
	}
	return 0;
}

/*
 * Little-endian element @k of @p, of type @dt (raw_type()), as an integer
 * (*@i) or a double (*@d). Return: 0, or -1 for a uint64 past 2^63.
 */
static int raw_elem(const uint8_t *p, int32_t dt, size_t k, int64_t *i,
		    double *d)
{
	const uint8_t *q = p + k * elem_size(dt);
	uint64_t u = 0;
	unsigned int b;
	float f;

	for (b = 0; b < elem_size(dt) && b < 8; b++)
		u |= (uint64_t)q[b] << (8 * b);
	switch (dt) {
	case OX_INT8:
		*i = (int8_t)u;
		return 0;
	case OX_INT16:
		*i = (int16_t)u;
		return 0;
	case OX_INT32:
		*i = (int32_t)u;
		return 0;
	case OX_INT64:
		*i = (int64_t)u;
		return 0;
	case OX_UINT8: case OX_UINT16: case OX_UINT32: case OX_BOOL:
		*i = (int64_t)u;
		return 0;
	case OX_UINT64:
		*i = (int64_t)u;
		return u > INT64_MAX ? -1 : 0;
	case OX_FLOAT:
		memcpy(&f, &u, 4);
		*d = f;
		return 0;
	case OX_DOUBLE:
		memcpy(d, &u, 8);
		return 0;
	}
	return -1;
}

/* Read the values of a small integer or float tensor, when it has them. */
static void read_values(struct ox_ctx *c, const Onnx__TensorProto *tp,
			struct ox_tensor *t, size_t n)
{
	int flt = t->dtype == OX_FLOAT || t->dtype == OX_DOUBLE;
	int64_t iv;
	double dv;
	size_t k;

	if (n > OX_FOLD_MAX || n > c->fold_left || !raw_type(t->dtype))
		return;
	if (tp->has_raw_data) {
		/* read below */
	} else if (!(t->dtype == OX_INT64 && tp->n_int64_data == n) &&
		   !(t->dtype == OX_FLOAT && tp->n_float_data == n) &&
		   !(t->dtype == OX_DOUBLE && tp->n_double_data == n) &&
		   !((t->dtype == OX_UINT32 || t->dtype == OX_UINT64) &&
		     tp->n_uint64_data == n) &&
		   !((t->dtype == OX_INT32 || t->dtype == OX_INT16 ||
		      t->dtype == OX_INT8 || t->dtype == OX_UINT8 ||
		      t->dtype == OX_UINT16 || t->dtype == OX_BOOL) &&
		     tp->n_int32_data == n)) {
		return;
	}
	if (flt)
		t->fv = calloc(n + 1, sizeof(double));
	else
		t->iv = calloc(n + 1, sizeof(int64_t));
	if (!t->fv && !t->iv)
		return;
	for (k = 0; k < n; k++) {
		if (tp->has_raw_data) {
			if (raw_elem(tp->raw_data.data, t->dtype, k, &iv, &dv)) {
				ox_drop_value(t);
				return;
			}
		} else if (t->dtype == OX_INT64) {
			iv = tp->int64_data[k];
		} else if (t->dtype == OX_FLOAT) {
			dv = tp->float_data[k];
		} else if (t->dtype == OX_DOUBLE) {
			dv = tp->double_data[k];
		} else if (tp->n_uint64_data) {
			if (tp->uint64_data[k] > INT64_MAX) {
				ox_drop_value(t);
				return;
			}
			iv = (int64_t)tp->uint64_data[k];
		} else {
			iv = tp->int32_data[k];
		}
		if (flt)
			t->fv[k] = dv;
		else
			t->iv[k] = iv;
	}
	c->fold_left -= n;
}

int ox_read_tensor(struct ox_ctx *c, const Onnx__TensorProto *tp,
		   struct ox_tensor *t, const char *what)
{
	int32_t dt = tp->has_data_type ? tp->data_type : OX_UNDEFINED;
	char dtb[16];
	size_t k, vals;
	int64_t n;

	ox_drop_value(t);
	if (tp->n_dims > OX_MAX_RANK)
		return md_parse_fail(c->err, 0, "%s: rank %zu above %d", what,
				     tp->n_dims, OX_MAX_RANK);
	if (!elem_size(dt))
		return md_parse_fail(c->err, 0, "%s: data type %s not supported",
				     what, dtype_name(dt, dtb, sizeof(dtb)));
	for (k = 0; k < tp->n_dims; k++)
		if (tp->dims[k] < 0)
			return md_parse_fail(c->err, 0, "%s: negative dimension %" PRId64,
					     what, tp->dims[k]);
	t->dtype = dt;
	t->rank = (int)tp->n_dims;
	if (tp->n_dims)
		memcpy(t->dim, tp->dims, tp->n_dims * sizeof(*tp->dims));
	n = t_numel(t);
	if (n < 0)
		return md_parse_fail(c->err, 0, "%s: more than 2^63 elements",
				     what);
	if (tp->has_raw_data && (tp->raw_data.len % elem_size(dt) ||
				 tp->raw_data.len / elem_size(dt) != (uint64_t)n))
		return md_parse_fail(c->err, 0, "%s: raw_data holds %zu bytes, its shape %" PRIu64,
				     what, tp->raw_data.len,
				     (uint64_t)n * elem_size(dt));
	vals = tp->n_float_data + tp->n_int32_data + tp->n_int64_data +
	       tp->n_double_data + tp->n_uint64_data;
	if (!tp->has_raw_data && vals && vals != (uint64_t)n)
		return md_parse_fail(c->err, 0, "%s: holds %zu values, its shape %" PRId64,
				     what, vals, n);
	read_values(c, tp, t, (size_t)n);
	return 0;
}

/*
 * The shape of a graph input, output or value_info from its type @tp.
 * With @strict, anything missing is an error naming @what; without, it
 * returns 1 and leaves @t's shape unknown.
 */
static int shape_from_type(struct ox_ctx *c, const Onnx__TypeProto *tp,
			   struct ox_tensor *t, int strict)
{
	const Onnx__TensorShapeProto *sh;
	int64_t dim[OX_MAX_RANK];
	size_t k, j;

	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !tp->tensor_type)
		return strict ? md_parse_fail(c->err, 0, "graph input '%s': not a tensor (sequences, maps, sparse tensors are not supported)",
					      t->name) : 1;
	if (tp->tensor_type->has_elem_type)
		t->dtype = tp->tensor_type->elem_type;
	sh = tp->tensor_type->shape;
	if (!sh)
		return strict ? md_parse_fail(c->err, 0, "graph input '%s': no shape in the model: give it (--input %s=DIMS)",
					      t->name, t->name) : 1;
	if (sh->n_dim > OX_MAX_RANK)
		return md_parse_fail(c->err, 0, "tensor '%s': rank %zu above %d",
				     t->name, sh->n_dim, OX_MAX_RANK);
	for (k = 0; k < sh->n_dim; k++) {
		const Onnx__TensorShapeProto__Dimension *d = sh->dim[k];

		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return md_parse_fail(c->err, 0, "tensor '%s': negative dimension %" PRId64,
						     t->name, d->dim_value);
			dim[k] = d->dim_value;
			continue;
		}
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		    d->dim_param) {
			for (j = 0; j < c->o->ndims; j++)
				if (!strcmp(c->o->dims[j].name, d->dim_param))
					break;
			if (j < c->o->ndims) {
				dim[k] = c->o->dims[j].value;
				continue;
			}
			if (strict)
				return md_parse_fail(c->err, 0, "graph input '%s': symbolic dimension '%s' has no value (--dim %s=N, or --input %s=DIMS)",
						     t->name, d->dim_param,
						     d->dim_param, t->name);
			return 1;
		}
		if (strict)
			return md_parse_fail(c->err, 0, "graph input '%s': dimension %zu has no value (--input %s=DIMS)",
					     t->name, k, t->name);
		return 1;
	}
	t->rank = (int)sh->n_dim;
	memcpy(t->dim, dim, sh->n_dim * sizeof(*dim));
	return 0;
}

/* A data input's shape: the caller's override, else the model's type. */
static int input_shape(struct ox_ctx *c, const Onnx__ValueInfoProto *vi,
		       struct ox_tensor *t)
{
	const Onnx__TypeProto *tp = vi->type;
	size_t k;

	for (k = 0; k < c->o->ninputs; k++) {
		const struct md_onnx_input *in = &c->o->inputs[k];

		if (strcmp(in->name, t->name))
			continue;
		t->rank = (int)in->rank;
		memcpy(t->dim, in->dims, in->rank * sizeof(*in->dims));
		t->dtype = OX_FLOAT;
		if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
		    tp->tensor_type && tp->tensor_type->has_elem_type)
			t->dtype = tp->tensor_type->elem_type;
		return 0;
	}
	return shape_from_type(c, tp, t, 1);
}

/* @t's bytes from its shape and type; an error names it (@where). */
static int size_tensor(struct ox_ctx *c, struct ox_tensor *t,
		       const char *where)
{
	int64_t n = t_numel(t);
	unsigned int es = store_size(c, t->dtype);
	char dtb[16];

	if (!es)
		return md_parse_fail(c->err, 0, "tensor '%s'%s: data type %s not supported",
				     t->name, where,
				     dtype_name(t->dtype, dtb, sizeof(dtb)));
	if (n < 0 || __builtin_mul_overflow((uint64_t)n, es, &t->bytes)) {
		md_parse_fail(c->err, 0, "tensor '%s'%s: size past 2^64 bytes",
			      t->name, where);
		return -EOVERFLOW;
	}
	return 0;
}

/*
 * Shape and Size read only their input's shape, which is known before
 * the run: they do not keep the input's memory alive.
 */
static int meta_only(const Onnx__NodeProto *n)
{
	return (!n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx")) &&
	       (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
}

/* ------------------------------------------------------------ order */

/* Kahn's algorithm on a min-heap of node indices keeps the file's order. */
static bool node_less(const void *a, const void *b, void *arg)
{
	(void)arg;
	return *(const int *)a < *(const int *)b;
}

/*
 * A topological order of the nodes into @order (the file's when it is
 * one); a cycle is an error naming a node on it.
 */
static int topo_order(struct ox_ctx *c, int *order)
{
	const Onnx__GraphProto *g = c->g;
	size_t nn = g->n_node, i, k, done = 0, nref = 0;
	struct md_heap hp;
	int *indeg, *heap, *first, *cons, *fill;
	int ret = -ENOMEM;

	for (i = 0; i < nn; i++)
		nref += g->node[i]->n_input;
	indeg = calloc(nn + 1, sizeof(*indeg));
	heap = calloc(nn + 1, sizeof(*heap));
	first = calloc(nn + 2, sizeof(*first));
	fill = calloc(nn + 1, sizeof(*fill));
	cons = calloc(nref + 1, sizeof(*cons));
	if (!indeg || !heap || !first || !fill || !cons)
		goto out;
	/* Consumers of each producing node, as a CSR list. */
	for (i = 0; i < nn; i++) {
		const Onnx__NodeProto *n = g->node[i];

		for (k = 0; k < n->n_input; k++) {
			int t;

			if (!*n->input[k])
				continue;
			t = ox_find(c, n->input[k]);
			if (t >= 0 && c->t[t].producer >= 0) {
				first[c->t[t].producer + 1]++;
				indeg[i]++;
			}
		}
	}
	for (i = 0; i < nn; i++)
		first[i + 1] += first[i];
	for (i = 0; i < nn; i++) {
		const Onnx__NodeProto *n = g->node[i];

		for (k = 0; k < n->n_input; k++) {
			int t, p;

			if (!*n->input[k])
				continue;
			t = ox_find(c, n->input[k]);
			if (t < 0 || c->t[t].producer < 0)
				continue;
			p = c->t[t].producer;
			cons[first[p] + fill[p]++] = (int)i;
		}
	}
	md_heap_init(&hp, heap, sizeof(*heap), node_less, NULL);
	for (i = 0; i < nn; i++) {
		int v = (int)i;

		if (!indeg[i])
			md_heap_push(&hp, &v);
	}
	while (hp.n) {
		int v;

		md_heap_pop(&hp, &v);
		order[done++] = v;
		for (k = (size_t)first[v]; k < (size_t)first[v + 1]; k++)
			if (!--indeg[cons[k]])
				md_heap_push(&hp, &cons[k]);
	}
	ret = 0;
	if (done < nn) {
		char name[64];

		for (i = 0; i < nn && !indeg[i]; i++)
			;
		ret = md_parse_fail(c->err, 0, "the graph has a cycle (node '%s', op %s, is on or after one)",
				    ox_node_name(g->node[i], (int)i, name,
						 sizeof(name)),
				    g->node[i]->op_type ? g->node[i]->op_type :
				    "?");
	}
out:
	free(indeg);
	free(heap);
	free(first);
	free(fill);
	free(cons);
	return ret;
}

/* ------------------------------------------------------------ the graph */

/*
 * The graph's name for @name: "_" for what the graph format refuses, and
 * ".N" appended while it clashes with a tensor of @g or one of the @nalso
 * names in @also (the node's outputs named so far).
 */
static char *graph_name(struct md_graph *g, const char *name,
			char *const *also, size_t nalso)
{
	size_t l = strlen(name), i;
	char *s = malloc(l + 24);
	unsigned int n = 0;

	if (!s)
		return NULL;
	for (i = 0; i < l; i++) {
		char ch = name[i];

		s[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		       (ch >= '0' && ch <= '9') || strchr("_.-/", ch) ? ch : '_';
	}
	s[l] = '\0';
	for (;;) {
		for (i = 0; i < nalso && strcmp(also[i], s); i++)
			;
		if (i == nalso && md_graph_find(g, s) < 0)
			return s;
		snprintf(s + l, 24, ".%u", ++n);
	}
}

static int add_resident(struct md_graph *g, struct ox_tensor *t)
{
	char *s = graph_name(g, t->name, NULL, 0);
	int id;

	if (!s)
		return -ENOMEM;
	id = md_graph_input(g, s, t->bytes, 0);
	free(s);
	if (id < 0)
		return id;
	t->gid = id;
	return 0;
}

/*
 * The input node @n's output 0 (@o) may be written into: one of the
 * inputs its operator allows, of the same bytes, in the graph; best one
 * that dies at this node (position @pos) and is no graph input/output.
 */
static int pick_inplace(const struct ox_ctx *c, const Onnx__NodeProto *n,
			const int *in, const struct ox_tensor *o, int pos,
			const uint8_t *is_out)
{
	unsigned int mask = ox_inplace_inputs(n, n->n_input);
	int best = -1;
	size_t k;

	for (k = 0; k < n->n_input && k < 32; k++) {
		const struct ox_tensor *t;

		if (!(mask & (1u << k)) || in[k] < 0)
			continue;
		t = &c->t[in[k]];
		if (t->gid < 0 || t->bytes != o->bytes)
			continue;
		if (t->last_use == pos && t->kind == OX_K_NODE &&
		    !is_out[in[k]])
			return t->gid;
		if (best < 0)
			best = t->gid;
	}
	return best;
}

/*
 * Output 0 of @n is a view of its input 0 (the same bytes, another shape:
 * no copy in an inference runtime): the graph id of that input, or -1.
 * Dropout in inference is the identity; its optional mask is not a view.
 */
static int pick_view(const struct ox_ctx *c, const Onnx__NodeProto *n,
		     const int *in, const struct ox_tensor *o)
{
	static const char *const views[] = {
		"Dropout", "Flatten", "Identity", "Reshape", "Squeeze",
		"Unsqueeze",
	};
	const struct ox_tensor *t;
	size_t k;

	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
		return -1;
	for (k = 0; k < sizeof(views) / sizeof(views[0]); k++)
		if (!strcmp(n->op_type, views[k]))
			break;
	if (k == sizeof(views) / sizeof(views[0]) || !n->n_input ||
	    in[0] < 0)
		return -1;
	t = &c->t[in[0]];
	if (t->gid < 0 || t->bytes != o->bytes)
		return -1;
	return t->gid;
}

/* May node @n join a fused group: element-wise, one output. */
static int fusable(const struct ox_ctx *c, const Onnx__NodeProto *n)
{
	return n->n_output == 1 && *n->output[0] && ox_elementwise(n) &&
	       ox_find(c, n->output[0]) >= 0;
}

/*
 * Element-wise fusion (MD_ONNX_FUSE): root[i] is the position in @order
 * of the last node of the group the node at position i belongs to (i
 * itself when it is the last one or in no group). A node joins the group
 * of the producer of one of its inputs when both are fusable and that
 * input has this one reader (one input slot of one node), is no graph
 * output and has the element count of the node's output. Every group is
 * then a tree whose only output leaves from its last node: nothing
 * outside reads inside it, so no path leaves it and comes back. Last uses
 * move to the group's step.
 */
static int fuse_groups(struct ox_ctx *c, const int *order,
		       const uint8_t *is_out, int *root)
{
	const Onnx__GraphProto *gp = c->g;
	size_t nn = gp->n_node, i, k;
	int *readers = calloc(c->nt + 1, sizeof(*readers));
	int *pos = calloc(nn + 1, sizeof(*pos));

	if (!readers || !pos) {
		free(readers);
		free(pos);
		return -ENOMEM;
	}
	for (i = 0; i < nn; i++) {
		const Onnx__NodeProto *n = gp->node[order[i]];

		pos[order[i]] = (int)i;
		root[i] = (int)i;
		for (k = 0; k < n->n_input; k++) {
			int t = *n->input[k] ? ox_find(c, n->input[k]) : -1;

			if (t >= 0)
				readers[t]++;
		}
	}
	for (i = 0; i < nn; i++) {
		const Onnx__NodeProto *n = gp->node[order[i]];
		int64_t numel;

		if (!fusable(c, n))
			continue;
		numel = t_numel(&c->t[ox_find(c, n->output[0])]);
		for (k = 0; k < n->n_input; k++) {
			int t = *n->input[k] ? ox_find(c, n->input[k]) : -1;
			const struct ox_tensor *x;

			if (t < 0)
				continue;
			x = &c->t[t];
			if (x->kind != OX_K_NODE || x->producer < 0 ||
			    readers[t] != 1 || is_out[t] ||
			    t_numel(x) != numel || numel < 0 ||
			    !fusable(c, gp->node[x->producer]))
				continue;
			/* Its producer is the last node of its group. */
			root[pos[x->producer]] = (int)i;
		}
	}
	/* Resolve: a root is always later than its members. */
	for (i = nn; i-- > 0;)
		root[i] = root[root[i]];
	for (i = 0; i < nn; i++) {
		const Onnx__NodeProto *n = gp->node[order[i]];

		if (root[i] == (int)i || meta_only(n))
			continue;
		for (k = 0; k < n->n_input; k++) {
			int t = *n->input[k] ? ox_find(c, n->input[k]) : -1;

			if (t >= 0 && c->t[t].last_use < root[i])
				c->t[t].last_use = root[i];
		}
	}
	free(readers);
	free(pos);
	return 0;
}

/*
 * The fused op ending at position @pos: the external inputs of its
 * @nm members (positions @mem) into @fx (tensor indices, each once:
 * @seen[t] is pos + 1 once t is in), their number returned; *@ip the
 * graph id its output @o may be written into, as pick_inplace() chooses.
 */
static size_t fused_inputs(const struct ox_ctx *c, const int *order,
			   const int *mem, size_t nm, const struct ox_tensor *o,
			   int pos, const uint8_t *is_out, int *fx, int *seen,
			   int *ip)
{
	size_t m, k, nx = 0;
	int dying = 0;

	*ip = -1;
	for (m = 0; m < nm; m++) {
		const Onnx__NodeProto *n = c->g->node[order[mem[m]]];

		for (k = 0; k < n->n_input; k++) {
			int t = *n->input[k] ? ox_find(c, n->input[k]) : -1;
			const struct ox_tensor *x;

			/* Intermediates and left-out weights: no gid. */
			if (t < 0 || c->t[t].gid < 0 || seen[t] == pos + 1)
				continue;
			seen[t] = pos + 1;
			fx[nx++] = t;
			x = &c->t[t];
			if (x->bytes != o->bytes || dying)
				continue;
			if (x->last_use == pos && x->kind == OX_K_NODE &&
			    !is_out[t]) {
				*ip = x->gid;
				dying = 1;
			} else if (*ip < 0) {
				*ip = x->gid;
			}
		}
	}
	return nx;
}

/*
 * The op of the fused group whose last node is at position @pos (members
 * from head[pos] along @next): external inputs, the last node's output,
 * the first node's name. @mem, @fx, @seen and @gin: scratch.
 */
static int add_fused(struct ox_ctx *c, struct md_graph *g, const int *order,
		     size_t pos, const int *head, const int *next, int *mem,
		     int *fx, int *seen, int *gin, const uint8_t *is_out,
		     struct md_onnx_stats *st)
{
	const Onnx__NodeProto *last = c->g->node[order[pos]];
	const Onnx__NodeProto *first = c->g->node[order[head[pos]]];
	struct ox_tensor *o = &c->t[ox_find(c, last->output[0])];
	size_t nm = 0, nx, k;
	int j, ip, id;
	uint64_t size = o->bytes;
	char *name;

	for (j = head[pos]; j >= 0; j = next[j])
		mem[nm++] = j;
	nx = fused_inputs(c, order, mem, nm, o, (int)pos, is_out, fx, seen,
			  &ip);
	for (k = 0; k < nx; k++)
		gin[k] = c->t[fx[k]].gid;
	name = graph_name(g, o->name, NULL, 0);
	if (!name)
		return -ENOMEM;
	id = md_graph_op_view(g, first->name, gin, nx,
			      (const char *const *)&name, &size, NULL, &ip,
			      NULL, 1);
	free(name);
	if (id < 0)
		return id;
	o->gid = id;
	st->inplace += ip >= 0;
	st->tensors++;
	st->fused_ops++;
	st->fused_nodes += nm;
	st->fused_tensors += nm - 1;
	return 0;
}

static int build(struct ox_ctx *c, struct md_graph *g, const int *order,
		 struct md_onnx_stats *st)
{
	const Onnx__GraphProto *gp = c->g;
	int no_w = !!(c->o->flags & MD_ONNX_NO_WEIGHTS);
	int fuse = !!(c->o->flags & MD_ONNX_FUSE);
	size_t i, k, maxio = 1, allin = 1, nn = gp->n_node;
	int *in = NULL, *inp = NULL, *view = NULL, ret = -ENOMEM;
	int *root = NULL, *head = NULL, *tail = NULL, *next = NULL;
	int *mem = NULL, *fx = NULL, *seen = NULL;
	uint64_t *sizes = NULL;
	char **names = NULL;
	uint8_t *is_out = NULL;
	enum ox_kind kinds[] = { OX_K_INPUT, OX_K_INIT, OX_K_CONST };

	for (i = 0; i < nn; i++) {
		if (gp->node[i]->n_input > maxio)
			maxio = gp->node[i]->n_input;
		if (gp->node[i]->n_output > maxio)
			maxio = gp->node[i]->n_output;
		allin += gp->node[i]->n_input;
	}
	in = calloc(maxio, sizeof(*in));
	inp = calloc(fuse ? allin : maxio, sizeof(*inp));
	view = calloc(maxio, sizeof(*view));
	sizes = calloc(maxio, sizeof(*sizes));
	names = calloc(maxio, sizeof(*names));
	is_out = calloc(c->nt + 1, 1);
	if (!in || !inp || !view || !sizes || !names || !is_out)
		goto out;
	for (i = 0; i < gp->n_output; i++) {
		int t = ox_find(c, gp->output[i]->name);

		if (t >= 0)
			is_out[t] = 1;
	}
	if (fuse) {
		root = calloc(nn + 1, sizeof(*root));
		head = calloc(nn + 1, sizeof(*head));
		tail = calloc(nn + 1, sizeof(*tail));
		next = calloc(nn + 1, sizeof(*next));
		mem = calloc(nn + 1, sizeof(*mem));
		fx = calloc(allin, sizeof(*fx));
		seen = calloc(c->nt + 1, sizeof(*seen));
		if (!root || !head || !tail || !next || !mem || !fx || !seen)
			goto out;
		ret = fuse_groups(c, order, is_out, root);
		if (ret)
			goto out;
		ret = -ENOMEM;
		/* Each group's members in order, by its last node. */
		for (i = 0; i < nn; i++)
			head[i] = -1;
		for (i = 0; i < nn; i++) {
			int r = root[i];

			next[i] = -1;
			if (head[r] < 0)
				head[r] = (int)i;
			else
				next[tail[r]] = (int)i;
			tail[r] = (int)i;
		}
	}
	/* Resident: graph inputs, then initializers, then constants. */
	for (k = 0; !no_w && k < 3; k++) {
		for (i = 0; i < c->nt; i++) {
			if (c->t[i].kind != kinds[k])
				continue;
			ret = add_resident(g, &c->t[i]);
			if (ret)
				goto out;
			st->tensors++;
		}
	}
	for (i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *n = gp->node[order[i]];
		size_t nin = 0, nout = 0;
		int first, ip = -1, vw = -1;

		if (!strcmp(n->op_type, "Constant") &&
		    (!n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx")))
			continue;
		if (fuse && root[i] != (int)i)
			continue;	/* in the fused op of a later node */
		if (fuse && head[i] != (int)i) {
			ret = add_fused(c, g, order, i, head, next, mem, fx,
					seen, inp, is_out, st);
			if (ret)
				goto out;
			ret = -ENOMEM;
			continue;
		}
		for (k = 0; k < n->n_input; k++) {
			int t = *n->input[k] ? ox_find(c, n->input[k]) : -1;

			in[k] = t;
			if (t >= 0 && c->t[t].gid >= 0 && !meta_only(n))
				inp[nin++] = c->t[t].gid;
		}
		for (k = 0; k < n->n_output; k++) {
			struct ox_tensor *t;

			if (!*n->output[k])
				continue;
			t = &c->t[ox_find(c, n->output[k])];
			if (nout == 0 && k == 0)
				vw = pick_view(c, n, in, t);
			if (nout == 0 && k == 0 && vw < 0)
				ip = pick_inplace(c, n, in, t, (int)i, is_out);
			names[nout] = graph_name(g, t->name, names, nout);
			if (!names[nout])
				goto out;
			sizes[nout++] = t->bytes;
		}
		for (k = 1; k < nout; k++) {
			in[k] = -1;
			view[k] = -1;
		}
		in[0] = ip;
		view[0] = vw;
		first = md_graph_op_view(g, n->name, inp, nin,
					 (const char *const *)names, sizes,
					 NULL, in, view, nout);
		for (k = 0; k < nout; k++) {
			free(names[k]);
			names[k] = NULL;
		}
		if (first < 0) {
			ret = first;
			goto out;
		}
		st->inplace += ip >= 0 && nout;
		st->views += vw >= 0 && nout;
		st->tensors += nout;
		for (k = 0, nout = 0; k < n->n_output; k++)
			if (*n->output[k])
				c->t[ox_find(c, n->output[k])].gid =
					first + (int)nout++;
	}
	for (i = 0; i < gp->n_output; i++) {
		int t = ox_find(c, gp->output[i]->name);

		if (c->t[t].gid >= 0)
			md_graph_output(g, c->t[t].gid);
	}
	ret = 0;
out:
	for (i = 0; names && i < maxio; i++)
		free(names[i]);
	free(names);
	free(in);
	free(inp);
	free(view);
	free(sizes);
	free(is_out);
	free(root);
	free(head);
	free(tail);
	free(next);
	free(mem);
	free(fx);
	free(seen);
	return ret;
}

/* ------------------------------------------------------------ import */

static int check_opts(const struct md_onnx_opts *o, struct md_error *err)
{
	size_t i, k;

	if ((unsigned int)o->dtype > MD_ONNX_DTYPE_BF16 ||
	    (o->flags & ~(MD_ONNX_NO_WEIGHTS | MD_ONNX_FUSE)) ||
	    (o->ninputs && !o->inputs) ||
	    (o->ndims && !o->dims))
		return md_parse_fail(err, 0, "bad import options");
	for (i = 0; i < o->ninputs; i++) {
		const struct md_onnx_input *in = &o->inputs[i];

		if (!in->name || in->rank > OX_MAX_RANK ||
		    (in->rank && !in->dims))
			return md_parse_fail(err, 0, "input shape %zu: no name, or rank above %d",
					     i, OX_MAX_RANK);
		for (k = 0; k < in->rank; k++)
			if (in->dims[k] < 0)
				return md_parse_fail(err, 0, "input '%s': negative dimension",
						     in->name);
	}
	for (i = 0; i < o->ndims; i++)
		if (!o->dims[i].name || o->dims[i].value < 0)
			return md_parse_fail(err, 0, "dimension %zu: no name, or a negative value",
					     i);
	return 0;
}

/* Register every tensor: initializers, inputs, node outputs. */
static int collect(struct ox_ctx *c)
{
	const Onnx__GraphProto *g = c->g;
	size_t i, k, cap = g->n_initializer + g->n_input;
	char what[200], name[64];
	int id, ret;

	for (i = 0; i < g->n_node; i++) {
		if (!g->node[i]->op_type)
			return md_parse_fail(c->err, 0, "node '%s' has no op_type",
					     ox_node_name(g->node[i], (int)i,
							  name, sizeof(name)));
		cap += g->node[i]->n_output;
	}
	if (g->n_sparse_initializer)
		return md_parse_fail(c->err, 0, "sparse initializers are not supported");
	if (cap >= INT32_MAX / 4)
		return md_parse_fail(c->err, 0, "too many tensors");
	c->t = calloc(cap + 1, sizeof(*c->t));
	for (c->mask = 15; c->mask < 2 * cap; c->mask = 2 * c->mask + 1)
		;
	c->slot = calloc(c->mask + 1, sizeof(*c->slot));
	if (!c->t || !c->slot)
		return -ENOMEM;
	for (i = 0; i < g->n_initializer; i++) {
		const Onnx__TensorProto *tp = g->initializer[i];

		if (!tp->name || !*tp->name)
			return md_parse_fail(c->err, 0, "initializer %zu has no name",
					     i);
		id = add_tensor(c, tp->name, OX_K_INIT);
		if (id < 0)
			return md_parse_fail(c->err, 0, "initializer '%s' defined twice",
					     tp->name);
		snprintf(what, sizeof(what), "initializer '%s'", tp->name);
		ret = ox_read_tensor(c, tp, &c->t[id], what);
		if (!ret)
			ret = size_tensor(c, &c->t[id], " (initializer)");
		if (ret)
			return ret;
	}
	/* Every shape given must be for a graph input (no initializer). */
	for (i = 0; i < c->o->ninputs; i++) {
		const char *name = c->o->inputs[i].name;

		for (k = 0; k < g->n_input; k++)
			if (g->input[k]->name && !strcmp(g->input[k]->name, name))
				break;
		if (k == g->n_input || ox_find(c, name) >= 0)
			return md_parse_fail(c->err, 0, "input shape given for '%s', which is not a graph input of the model",
					     name);
	}
	for (i = 0; i < g->n_input; i++) {
		const Onnx__ValueInfoProto *vi = g->input[i];

		if (!vi->name || !*vi->name)
			return md_parse_fail(c->err, 0, "graph input %zu has no name",
					     i);
		id = ox_find(c, vi->name);
		if (id >= 0 && c->t[id].kind == OX_K_INIT)
			continue;	/* an initializer's default: a weight */
		id = add_tensor(c, vi->name, OX_K_INPUT);
		if (id < 0)
			return md_parse_fail(c->err, 0, "graph input '%s' declared twice",
					     vi->name);
		ret = input_shape(c, vi, &c->t[id]);
		if (!ret)
			ret = size_tensor(c, &c->t[id], " (graph input)");
		if (ret)
			return ret;
	}
	for (i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *n = g->node[i];
		int cst = !strcmp(n->op_type, "Constant") &&
			  (!n->domain || !*n->domain ||
			   !strcmp(n->domain, "ai.onnx"));

		for (k = 0; k < n->n_output; k++) {
			if (!*n->output[k])
				continue;
			id = add_tensor(c, n->output[k],
					cst ? OX_K_CONST : OX_K_NODE);
			if (id < 0)
				return md_parse_fail(c->err, 0, "tensor '%s' (output %zu of node '%s', op %s) is defined twice",
						     n->output[k], k,
						     ox_node_name(n, (int)i, name, sizeof(name)),
						     n->op_type);
			c->t[id].producer = (int)i;
			c->t[id].out_idx = (int)k;
		}
	}
	for (i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *n = g->node[i];

		for (k = 0; k < n->n_input; k++) {
			if (*n->input[k] && ox_find(c, n->input[k]) < 0)
				return md_parse_fail(c->err, 0, "tensor '%s' (input %zu of node '%s', op %s) is no graph input, initializer or node output",
						     n->input[k], k,
						     ox_node_name(n, (int)i, name, sizeof(name)),
						     n->op_type);
		}
	}
	/* value_info, then the outputs' types: fallbacks for the shapes. */
	for (i = 0; i < g->n_value_info; i++) {
		id = g->value_info[i]->name ? ox_find(c, g->value_info[i]->name) : -1;
		if (id >= 0)
			c->t[id].vi = g->value_info[i];
	}
	for (i = 0; i < g->n_output; i++) {
		id = g->output[i]->name ? ox_find(c, g->output[i]->name) : -1;
		if (id < 0)
			return md_parse_fail(c->err, 0, "graph output '%s' is not made by any node, nor an input",
					     g->output[i]->name ? g->output[i]->name : "");
		if (!c->t[id].vi)
			c->t[id].vi = g->output[i];
	}
	return 0;
}

/* Sizes of every node's outputs, in @order; last uses. */
static int infer_all(struct ox_ctx *c, const int *order)
{
	const Onnx__GraphProto *g = c->g;
	size_t i, k, maxio = 1;
	int *in, *out, ret = 0;
	char name[64], where[160];

	for (i = 0; i < g->n_node; i++) {
		if (g->node[i]->n_input > maxio)
			maxio = g->node[i]->n_input;
		if (g->node[i]->n_output > maxio)
			maxio = g->node[i]->n_output;
	}
	in = calloc(maxio, sizeof(*in));
	out = calloc(maxio, sizeof(*out));
	if (!in || !out) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < g->n_node && !ret; i++) {
		const Onnx__NodeProto *n = g->node[order[i]];

		for (k = 0; k < n->n_input; k++) {
			in[k] = *n->input[k] ? ox_find(c, n->input[k]) : -1;
			if (in[k] >= 0 && !meta_only(n))
				c->t[in[k]].last_use = (int)i;
		}
		for (k = 0; k < n->n_output; k++)
			out[k] = *n->output[k] ? ox_find(c, n->output[k]) : -1;
		ret = ox_infer(c, n, order[i], in, n->n_input, out,
			       n->n_output);
		for (k = 0; k < n->n_output && !ret; k++) {
			struct ox_tensor *t;

			if (out[k] < 0)
				continue;
			t = &c->t[out[k]];
			snprintf(where, sizeof(where), " (output %zu of node '%s', op %s)",
				 k, ox_node_name(n, order[i], name, sizeof(name)),
				 n->op_type);
			if (t->rank >= 0 && t->dtype) {
				t->inferred = 1;
			} else if (!t->vi ||
				   shape_from_type(c, t->vi->type, t, 0) ||
				   t->rank < 0 || !t->dtype) {
				ret = md_parse_fail(c->err, 0, "tensor '%s'%s: shape unknown (%s)",
						    t->name, where,
						    ox_op_known(n) ?
						    "it depends on values known only at run time" :
						    "no shape inference for this op here, no value_info");
				break;
			}
			ret = size_tensor(c, t, where);
		}
	}
out:
	free(in);
	free(out);
	return ret;
}

MD_API int md_graph_from_onnx(struct md_graph *g, const void *data,
			      size_t len, const struct md_onnx_opts *opts,
			      struct md_onnx_stats *st,
			      struct md_error *err)
{
	static const struct md_onnx_opts none;
	struct md_onnx_stats own;
	Onnx__ModelProto *m;
	struct ox_ctx c;
	int *order = NULL, ret;
	uint64_t sum = 0;
	size_t i;

	if (err) {
		err->line = 0;
		err->msg[0] = '\0';
	}
	if (!st)
		st = &own;
	memset(st, 0, sizeof(*st));
	if (!opts)
		opts = &none;
	if (!g || (!data && len))
		return md_parse_fail(err, 0, "no graph or no data");
	ret = check_opts(opts, err);
	if (ret)
		return ret;
	m = onnx__model_proto__unpack(NULL, len, data);
	if (!m)
		return md_parse_fail(err, 0, "not an ONNX model (protobuf parse failed)");
	memset(&c, 0, sizeof(c));
	c.o = opts;
	c.err = err;
	c.fold_left = OX_FOLD_BUDGET;
	c.g = m->graph;
	st->ir_version = m->has_ir_version ? m->ir_version : 0;
	for (i = 0; i < m->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *os = m->opset_import[i];

		if ((!os->domain || !*os->domain ||
		     !strcmp(os->domain, "ai.onnx")) && os->has_version)
			st->opset = c.opset = os->version;
	}
	if (!c.g) {
		ret = md_parse_fail(err, 0, "the model has no graph (not an ONNX model, or an empty one)");
		goto out;
	}
	st->nodes = c.g->n_node;
	if (c.g->n_node >= INT32_MAX / 4) {
		ret = md_parse_fail(err, 0, "too many nodes");
		goto out;
	}
	ret = collect(&c);
	if (ret)
		goto out;
	order = calloc(c.g->n_node + 1, sizeof(*order));
	if (!order) {
		ret = -ENOMEM;
		goto out;
	}
	ret = topo_order(&c, order);
	if (!ret)
		ret = infer_all(&c, order);
	if (ret)
		goto out;
	for (i = 0; i < c.nt; i++) {
		const struct ox_tensor *t = &c.t[i];
		uint64_t *to = t->kind == OX_K_NODE ? &st->activation_bytes :
			       t->kind == OX_K_INPUT ? &st->input_bytes :
			       &st->weight_bytes;

		st->inferred += t->inferred && t->kind == OX_K_NODE;
		if (__builtin_add_overflow(*to, t->bytes, to) ||
		    __builtin_add_overflow(sum, t->bytes, &sum)) {
			ret = -EOVERFLOW;
			md_parse_fail(err, 0, "the tensors need more than 2^64-1 bytes together");
			goto out;
		}
	}
	ret = build(&c, g, order, st);
	if (ret == -EINVAL)
		md_parse_fail(err, 0, "the graph refused a tensor (internal error)");
out:
	for (i = 0; i < c.nt; i++)
		ox_drop_value(&c.t[i]);
	free(c.t);
	free(c.slot);
	free(order);
	onnx__model_proto__free_unpacked(m, NULL);
	return ret;
}

MD_API int md_graph_from_onnx_file(struct md_graph *g, const char *path,
				   const struct md_onnx_opts *opts,
				   struct md_onnx_stats *st,
				   struct md_error *err)
{
	size_t len;
	char *data = md_read_file(path, &len);
	int ret;

	if (!data) {
		ret = -errno;
		if (err) {
			err->line = 0;
			snprintf(err->msg, sizeof(err->msg), "%s: %s", path,
				 strerror(errno));
		}
		return ret ? ret : -EIO;
	}
	ret = md_graph_from_onnx(g, data, len, opts, st, err);
	free(data);
	return ret;
}

MD_API int md_onnx_parse_dims(const char *s, int64_t *dims, size_t *rank)
{
	size_t r = 0;

	*rank = 0;
	if (!*s || !strcmp(s, "scalar"))
		return 0;
	for (;;) {
		uint64_t v = 0;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++)
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v) ||
			    v > INT64_MAX)
				return -ERANGE;
		if (r == MD_ONNX_MAX_RANK)
			return -ERANGE;
		dims[r++] = (int64_t)v;
		if (!*s)
			break;
		if (*s++ != 'x')
			return -EINVAL;
	}
	*rank = r;
	return 0;
}
