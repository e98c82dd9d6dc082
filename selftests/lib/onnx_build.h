/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host tests: small ONNX models built in the test with the protobuf-c
 * structs generated from onnx.proto (build/gen/onnx.pb-c.h) and packed
 * with onnx__model_proto__pack(). Every allocation is kept on the
 * builder and freed by mb_free().
 *
 *   struct mb *b = mb_new(17);
 *   mb_input(b, "x", MB_F32, "batch,3,8,8");    numbers or dim_params
 *   mb_init(b, "w", MB_F32, "4,3,3,3", NULL);   values may be NULL
 *   n = mb_node(b, "Conv", "x,w", "y");         "" for an absent one
 *   mb_ints(n, "pads", "1,1,1,1");
 *   mb_output(b, "y", MB_F32, NULL);            NULL: no shape
 *   data = mb_pack(b, &len);
 */
#ifndef METADEF_ONNX_BUILD_H
#define METADEF_ONNX_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

enum {
	MB_F32 = 1, MB_U8 = 2, MB_I8 = 3, MB_I32 = 6, MB_I64 = 7,
	MB_STR = 8, MB_BOOL = 9, MB_F16 = 10, MB_F64 = 11,
};

#define MB_MAX 1024

struct mb {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto os;
	Onnx__OperatorSetIdProto *osp[1];
	Onnx__NodeProto *node[MB_MAX];
	Onnx__ValueInfoProto *in[MB_MAX], *out[MB_MAX], *vi[MB_MAX];
	Onnx__TensorProto *init[MB_MAX];
	void **mem;		/* everything allocated, for mb_free() */
	size_t nmem;
	uint8_t *packed;
};

static inline void *mb_alloc(struct mb *b, size_t n)
{
	void *p = calloc(1, n ? n : 1);
	void **m = realloc(b->mem, (b->nmem + 1) * sizeof(*m));

	if (!p || !m)
		abort();
	b->mem = m;
	b->mem[b->nmem++] = p;
	return p;
}

static inline char *mb_str(struct mb *b, const char *s)
{
	char *d = mb_alloc(b, strlen(s) + 1);

	strcpy(d, s);
	return d;
}

/* Split "a,b,,c" into strings (empty ones kept). */
static inline char **mb_split(struct mb *b, const char *s, size_t *n)
{
	char **v, *c = mb_str(b, s), *p;
	size_t k = 1;

	if (!*s) {
		*n = 0;
		return NULL;
	}
	for (p = c; *p; p++)
		k += *p == ',';
	v = mb_alloc(b, k * sizeof(*v));
	*n = 0;
	for (p = c;;) {
		char *e = strchr(p, ',');

		v[(*n)++] = p;
		if (!e)
			break;
		*e = '\0';
		p = e + 1;
	}
	return v;
}

static inline struct mb *mb_new(int64_t opset)
{
	struct mb *b = calloc(1, sizeof(*b));

	if (!b)
		abort();
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->os);
	b->os.domain = mb_str(b, "");
	b->os.has_version = 1;
	b->os.version = opset;
	b->osp[0] = &b->os;
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->m.n_opset_import = 1;
	b->m.opset_import = b->osp;
	b->m.graph = &b->g;
	b->g.name = mb_str(b, "test");
	b->g.node = b->node;
	b->g.input = b->in;
	b->g.output = b->out;
	b->g.value_info = b->vi;
	b->g.initializer = b->init;
	return b;
}

static inline void mb_free(struct mb *b)
{
	size_t i;

	for (i = 0; i < b->nmem; i++)
		free(b->mem[i]);
	free(b->mem);
	free(b->packed);
	free(b);
}

/* A tensor type with @dims ("1,3,n": numbers or dim_params; NULL: none). */
static inline Onnx__TypeProto *mb_type(struct mb *b, int dtype,
				       const char *dims)
{
	Onnx__TypeProto *tp = mb_alloc(b, sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = mb_alloc(b, sizeof(*tt));
	size_t n, i;
	char **d;

	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	tt->has_elem_type = 1;
	tt->elem_type = dtype;
	if (!dims)
		return tp;
	tt->shape = mb_alloc(b, sizeof(*tt->shape));
	onnx__tensor_shape_proto__init(tt->shape);
	d = mb_split(b, dims, &n);
	tt->shape->n_dim = n;
	tt->shape->dim = mb_alloc(b, n * sizeof(*tt->shape->dim));
	for (i = 0; i < n; i++) {
		Onnx__TensorShapeProto__Dimension *x = mb_alloc(b, sizeof(*x));

		onnx__tensor_shape_proto__dimension__init(x);
		if ((d[i][0] >= '0' && d[i][0] <= '9') || d[i][0] == '-') {
			x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			x->dim_value = strtoll(d[i], NULL, 10);
		} else if (d[i][0] != '?') {
			x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			x->dim_param = d[i];
		}
		tt->shape->dim[i] = x;
	}
	return tp;
}

static inline Onnx__ValueInfoProto *mb_vi(struct mb *b, const char *name,
					  int dtype, const char *dims)
{
	Onnx__ValueInfoProto *v = mb_alloc(b, sizeof(*v));

	onnx__value_info_proto__init(v);
	v->name = mb_str(b, name);
	v->type = mb_type(b, dtype, dims);
	return v;
}

static inline void mb_input(struct mb *b, const char *name, int dtype,
			    const char *dims)
{
	b->in[b->g.n_input++] = mb_vi(b, name, dtype, dims);
}

static inline void mb_output(struct mb *b, const char *name, int dtype,
			     const char *dims)
{
	b->out[b->g.n_output++] = mb_vi(b, name, dtype, dims);
}

static inline void mb_value_info(struct mb *b, const char *name, int dtype,
				 const char *dims)
{
	b->vi[b->g.n_value_info++] = mb_vi(b, name, dtype, dims);
}

/* A TensorProto; @vals (int64, as many as the dims say) may be NULL. */
static inline Onnx__TensorProto *mb_tensor(struct mb *b, const char *name,
					   int dtype, const char *dims,
					   const int64_t *vals)
{
	Onnx__TensorProto *t = mb_alloc(b, sizeof(*t));
	size_t n = 0, i, cnt = 1;
	char **d;

	onnx__tensor_proto__init(t);
	t->name = mb_str(b, name);
	t->has_data_type = 1;
	t->data_type = dtype;
	d = mb_split(b, dims, &n);
	t->n_dims = n;
	t->dims = mb_alloc(b, n * sizeof(*t->dims));
	for (i = 0; i < n; i++) {
		t->dims[i] = strtoll(d[i], NULL, 10);
		cnt *= (size_t)t->dims[i];
	}
	if (vals && dtype == MB_I64) {
		t->n_int64_data = cnt;
		t->int64_data = mb_alloc(b, cnt * sizeof(int64_t));
		memcpy(t->int64_data, vals, cnt * sizeof(int64_t));
	} else if (vals && dtype == MB_F32) {
		t->n_float_data = cnt;
		t->float_data = mb_alloc(b, cnt * sizeof(float));
		for (i = 0; i < cnt; i++)
			t->float_data[i] = (float)vals[i];
	}
	return t;
}

static inline void mb_init(struct mb *b, const char *name, int dtype,
			   const char *dims, const int64_t *vals)
{
	b->init[b->g.n_initializer++] = mb_tensor(b, name, dtype, dims, vals);
}

/* An int64 initializer from a list: mb_ival(b, "shape", "2,-1"). */
static inline void mb_ival(struct mb *b, const char *name, const char *list,
			   int scalar)
{
	int64_t v[64];
	size_t n, i;
	char **s = mb_split(b, list, &n);
	char dims[24];

	for (i = 0; i < n && i < 64; i++)
		v[i] = strtoll(s[i], NULL, 10);
	snprintf(dims, sizeof(dims), "%zu", n);
	mb_init(b, name, MB_I64, scalar ? "" : dims, v);
}

static inline Onnx__NodeProto *mb_node(struct mb *b, const char *op,
				       const char *ins, const char *outs)
{
	Onnx__NodeProto *n = mb_alloc(b, sizeof(*n));
	char name[32];

	onnx__node_proto__init(n);
	n->op_type = mb_str(b, op);
	snprintf(name, sizeof(name), "n%zu", b->g.n_node);
	n->name = mb_str(b, name);
	n->input = mb_split(b, ins, &n->n_input);
	n->output = mb_split(b, outs, &n->n_output);
	n->attribute = mb_alloc(b, 16 * sizeof(*n->attribute));
	b->node[b->g.n_node++] = n;
	return n;
}

static inline Onnx__AttributeProto *mb_attr(struct mb *b, Onnx__NodeProto *n,
					    const char *name, int type)
{
	Onnx__AttributeProto *a = mb_alloc(b, sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = mb_str(b, name);
	a->has_type = 1;
	a->type = type;
	n->attribute[n->n_attribute++] = a;
	return a;
}

static inline void mb_int(struct mb *b, Onnx__NodeProto *n, const char *name,
			  int64_t v)
{
	Onnx__AttributeProto *a = mb_attr(b, n, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

static inline void mb_ints(struct mb *b, Onnx__NodeProto *n, const char *name,
			   const char *list)
{
	Onnx__AttributeProto *a = mb_attr(b, n, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	char **s = mb_split(b, list, &a->n_ints);
	size_t i;

	a->ints = mb_alloc(b, a->n_ints * sizeof(*a->ints));
	for (i = 0; i < a->n_ints; i++)
		a->ints[i] = strtoll(s[i], NULL, 10);
}

static inline void mb_string(struct mb *b, Onnx__NodeProto *n,
			     const char *name, const char *v)
{
	Onnx__AttributeProto *a = mb_attr(b, n, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);

	a->has_s = 1;
	a->s.data = (uint8_t *)mb_str(b, v);
	a->s.len = strlen(v);
}

static inline void mb_tensor_attr(struct mb *b, Onnx__NodeProto *n,
				  const char *name, Onnx__TensorProto *t)
{
	Onnx__AttributeProto *a = mb_attr(b, n, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);

	a->t = t;
}

/* The model's bytes (kept by @b). */
static inline uint8_t *mb_pack(struct mb *b, size_t *len)
{
	free(b->packed);
	*len = onnx__model_proto__get_packed_size(&b->m);
	b->packed = malloc(*len + 1);
	if (!b->packed)
		abort();
	onnx__model_proto__pack(&b->m, b->packed);
	return b->packed;
}

/* Write the model to @path: 0 or -1. */
static inline int mb_save(struct mb *b, const char *path)
{
	size_t len;
	uint8_t *d = mb_pack(b, &len);
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(d, 1, len, f) == len;
	return fclose(f) || !ok ? -1 : 0;
}

#endif /* METADEF_ONNX_BUILD_H */
