// SPDX-License-Identifier: GPL-2.0
/*
 * ONNX inference models: ResNet-50/152 and BERT-large, opset 17, IR 8,
 * written with the protobuf-c code the build generates from Debian's
 * onnx.proto. Weights are graph inputs with their shapes and no data
 * (files of kilobytes); the only initializers are small int64 shape
 * constants and float scalars. No value_info: shapes of intermediate
 * tensors are left to the reader's shape inference. Where the shapes
 * come from: models.c.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "models.h"

#define OPSET		17
#define IR_VERSION	8

/* Symbolic dimensions (dim_param) in dims arrays. */
#define DIM_BATCH	(-1)
#define DIM_SEQ		(-2)

struct ob {
	Onnx__GraphProto *g;
	size_t cap_node, cap_in, cap_init, cap_out;
	int elem;		/* float element type of inputs and weights */
	unsigned int elem_size;
	uint64_t params, buffers;
	unsigned long ntensors;
};

/* Append @x to the array *@arr of *@n elements, growing it (cap *@cap). */
static void push(void ***arr, size_t *n, size_t *cap, void *x)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void **a = mm_zalloc(ncap * sizeof(*a));

		if (*n)
			memcpy(a, *arr, *n * sizeof(*a));
		*arr = a;	/* the old array stays in the arena */
		*cap = ncap;
	}
	(*arr)[(*n)++] = x;
}

static Onnx__ValueInfoProto *value_info(const char *name, int elem, int ndims,
					const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = mm_zalloc(sizeof(*vi));
	Onnx__TypeProto *tp = mm_zalloc(sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = mm_zalloc(sizeof(*tt));
	Onnx__TensorShapeProto *sh = mm_zalloc(sizeof(*sh));
	int i;

	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	sh->n_dim = ndims;
	sh->dim = mm_zalloc((ndims + 1) * sizeof(*sh->dim));
	for (i = 0; i < ndims; i++) {
		Onnx__TensorShapeProto__Dimension *d = mm_zalloc(sizeof(*d));

		onnx__tensor_shape_proto__dimension__init(d);
		if (dims[i] >= 0) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = dims[i];
		} else {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = dims[i] == DIM_BATCH ? "batch" : "seq";
		}
		sh->dim[i] = d;
	}
	tt->has_elem_type = 1;
	tt->elem_type = elem;
	tt->shape = sh;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	vi->name = (char *)name;
	vi->type = tp;
	return vi;
}

/* A data input (images, token ids, mask). */
static void ob_input(struct ob *b, const char *name, int elem, int ndims,
		     const int64_t *dims)
{
	push((void ***)&b->g->input, &b->g->n_input, &b->cap_in,
	     value_info(name, elem, ndims, dims));
	b->ntensors++;
}

/*
 * A weight: a graph input of the model's float type with its shape.
 * @buffer: not trained (BatchNormalization's running statistics).
 */
static const char *ob_weight(struct ob *b, const char *name, bool buffer,
			     int ndims, const int64_t *dims)
{
	uint64_t n = 1;
	int i;

	for (i = 0; i < ndims; i++)
		n *= dims[i];
	if (buffer)
		b->buffers += n;
	else
		b->params += n;
	ob_input(b, name, b->elem, ndims, dims);
	return name;
}

static void ob_output(struct ob *b, const char *name, int ndims,
		      const int64_t *dims)
{
	push((void ***)&b->g->output, &b->g->n_output, &b->cap_out,
	     value_info(name, b->elem, ndims, dims));
}

/* An int64 initializer: a 1-D tensor of @n values, or a scalar if @n < 0. */
static const char *ob_i64(struct ob *b, const char *name, int n,
			  const int64_t *v)
{
	Onnx__TensorProto *t = mm_zalloc(sizeof(*t));
	int cnt = n < 0 ? 1 : n;

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	if (n >= 0) {
		t->n_dims = 1;
		t->dims = mm_zalloc(sizeof(*t->dims));
		t->dims[0] = n;
	}
	t->n_int64_data = cnt;
	t->int64_data = mm_zalloc(cnt * sizeof(*v));
	memcpy(t->int64_data, v, cnt * sizeof(*v));
	push((void ***)&b->g->initializer, &b->g->n_initializer, &b->cap_init,
	     t);
	b->ntensors++;
	return name;
}

/* IEEE half from float, round to nearest even (normal range only). */
static uint16_t to_half(float f)
{
	uint32_t x, sign, mant;
	int exp;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	exp = (int)((x >> 23) & 0xff) - 127 + 15;
	mant = x & 0x7fffff;
	if ((x & 0x7fffffff) == 0)
		return sign;
	if (exp <= 0 || exp >= 31)	/* not needed by these models */
		return sign | (exp <= 0 ? 0 : 0x7c00);
	mant += 0xfff + ((mant >> 13) & 1);
	if (mant & 0x800000) {
		mant = 0;
		exp++;
	}
	return sign | (exp << 10) | (mant >> 13);
}

/* A float scalar initializer of the model's float type. */
static const char *ob_scalar(struct ob *b, const char *name, float v)
{
	Onnx__TensorProto *t = mm_zalloc(sizeof(*t));
	uint8_t *raw = mm_zalloc(4);

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = b->elem;
	if (b->elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16) {
		uint16_t h = to_half(v);

		raw[0] = h & 0xff;
		raw[1] = h >> 8;
		t->raw_data.len = 2;
	} else {
		memcpy(raw, &v, 4);	/* x86: little endian, as ONNX */
		t->raw_data.len = 4;
	}
	t->has_raw_data = 1;
	t->raw_data.data = raw;
	push((void ***)&b->g->initializer, &b->g->n_initializer, &b->cap_init,
	     t);
	b->ntensors++;
	return name;
}

/*
 * A node: @in is NULL-terminated; one output, named @out. Returns the
 * node for attributes.
 */
static Onnx__NodeProto *ob_node(struct ob *b, const char *op,
				const char *name, const char *const *in,
				const char *out)
{
	Onnx__NodeProto *n = mm_zalloc(sizeof(*n));
	size_t k = 0;

	onnx__node_proto__init(n);
	while (in[k])
		k++;
	n->n_input = k;
	n->input = mm_zalloc((k + 1) * sizeof(*n->input));
	memcpy(n->input, in, k * sizeof(*n->input));
	n->n_output = 1;
	n->output = mm_zalloc(sizeof(*n->output));
	n->output[0] = (char *)out;
	n->name = (char *)name;
	n->op_type = (char *)op;
	push((void ***)&b->g->node, &b->g->n_node, &b->cap_node, n);
	b->ntensors++;
	return n;
}

#define IN(...)	((const char *const []){ __VA_ARGS__, NULL })

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name,
				  Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = mm_zalloc(sizeof(*a));
	Onnx__AttributeProto **arr = mm_zalloc((n->n_attribute + 1) *
					       sizeof(*arr));

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = type;
	if (n->n_attribute)
		memcpy(arr, n->attribute, n->n_attribute * sizeof(*arr));
	arr[n->n_attribute++] = a;
	n->attribute = arr;
	return a;
}

static void attr_i(Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(n, name,
				       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

static void attr_f(Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(n, name,
				       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

static void attr_ints(Onnx__NodeProto *n, const char *name, int cnt,
		      const int64_t *v)
{
	Onnx__AttributeProto *a = attr(n, name,
				       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->n_ints = cnt;
	a->ints = mm_zalloc(cnt * sizeof(*v));
	memcpy(a->ints, v, cnt * sizeof(*v));
}

#define INTS(...)	((const int64_t []){ __VA_ARGS__ })
#define NINTS(...)	((int)(sizeof(INTS(__VA_ARGS__)) / sizeof(int64_t)))
#define ATTR_INTS(n, name, ...)	attr_ints(n, name, NINTS(__VA_ARGS__), INTS(__VA_ARGS__))

static void ob_init(struct ob *b, const struct mm_opts *o, const char *name)
{
	memset(b, 0, sizeof(*b));
	b->g = mm_zalloc(sizeof(*b->g));
	onnx__graph_proto__init(b->g);
	b->g->name = (char *)name;
	if (o->dtype == MM_FP16) {
		b->elem = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
		b->elem_size = 2;
	} else {
		b->elem = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
		b->elem_size = 4;
	}
}

/* Wrap the graph in a model, pack it into @out, fill the counts. */
static int ob_finish(struct ob *b, struct mm_out *out, struct mm_summary *s)
{
	Onnx__ModelProto *m = mm_zalloc(sizeof(*m));
	Onnx__OperatorSetIdProto *ops = mm_zalloc(sizeof(*ops));
	size_t len;

	onnx__model_proto__init(m);
	onnx__operator_set_id_proto__init(ops);
	ops->domain = "";
	ops->has_version = 1;
	ops->version = OPSET;
	m->has_ir_version = 1;
	m->ir_version = IR_VERSION;
	m->n_opset_import = 1;
	m->opset_import = mm_zalloc(sizeof(*m->opset_import));
	m->opset_import[0] = ops;
	m->producer_name = "metadef-models";
	m->producer_version = MD_VERSION;
	m->graph = b->g;

	len = onnx__model_proto__get_packed_size(m);
	out->buf = mm_zalloc(len ? len : 1);
	out->len = onnx__model_proto__pack(m, (uint8_t *)out->buf);
	if (out->len != len) {
		fprintf(stderr, "metadef-models: protobuf-c packed %zu bytes of %zu\n",
			out->len, len);
		return -EIO;
	}
	s->format = "onnx";
	s->nodes = b->g->n_node;
	s->tensors = b->ntensors;
	s->inputs = b->g->n_input;
	s->initializers = b->g->n_initializer;
	s->params = b->params;
	s->buffers = b->buffers;
	s->param_bytes = (b->params + b->buffers) * b->elem_size;
	return 0;
}

/* ---------------------------------------------------------------- ResNet */

/* Conv (no bias) + BatchNormalization [+ Relu]; returns the output. */
static const char *conv_bn(struct ob *b, const char *conv, const char *bn,
			   const char *relu, const char *x, long cin,
			   long cout, int k, int stride)
{
	const char *w, *y, *z;
	Onnx__NodeProto *n;
	int pad = k / 2;

	w = ob_weight(b, mm_fmt("%s.weight", conv), false, 4,
		      INTS(cout, cin, k, k));
	y = mm_fmt("%s.output", conv);
	n = ob_node(b, "Conv", conv, IN(x, w), y);
	ATTR_INTS(n, "kernel_shape", k, k);
	ATTR_INTS(n, "strides", stride, stride);
	ATTR_INTS(n, "pads", pad, pad, pad, pad);
	ATTR_INTS(n, "dilations", 1, 1);
	attr_i(n, "group", 1);

	z = mm_fmt("%s.output", bn);
	n = ob_node(b, "BatchNormalization", bn,
		    IN(y, ob_weight(b, mm_fmt("%s.weight", bn), false, 1, INTS(cout)),
		       ob_weight(b, mm_fmt("%s.bias", bn), false, 1, INTS(cout)),
		       ob_weight(b, mm_fmt("%s.running_mean", bn), true, 1, INTS(cout)),
		       ob_weight(b, mm_fmt("%s.running_var", bn), true, 1, INTS(cout))),
		    z);
	attr_f(n, "epsilon", 1e-5f);
	attr_f(n, "momentum", 0.9f);
	if (!relu)
		return z;
	y = mm_fmt("%s.output", relu);
	ob_node(b, "Relu", relu, IN(z), y);
	return y;
}

/* torchvision's Bottleneck: 1x1, 3x3 (stride here: v1.5), 1x1 x4. */
static const char *bottleneck(struct ob *b, const char *p, const char *x,
			      long cin, long planes, int stride)
{
	const char *y, *id = x, *sum, *out;

	y = conv_bn(b, mm_fmt("%s.conv1", p), mm_fmt("%s.bn1", p),
		    mm_fmt("%s.relu1", p), x, cin, planes, 1, 1);
	y = conv_bn(b, mm_fmt("%s.conv2", p), mm_fmt("%s.bn2", p),
		    mm_fmt("%s.relu2", p), y, planes, planes, 3, stride);
	y = conv_bn(b, mm_fmt("%s.conv3", p), mm_fmt("%s.bn3", p), NULL,
		    y, planes, planes * 4, 1, 1);
	if (stride != 1 || cin != planes * 4)
		id = conv_bn(b, mm_fmt("%s.downsample.0", p),
			     mm_fmt("%s.downsample.1", p), NULL, x, cin,
			     planes * 4, 1, stride);
	sum = mm_fmt("%s.add.output", p);
	ob_node(b, "Add", mm_fmt("%s.add", p), IN(y, id), sum);
	out = mm_fmt("%s.relu3.output", p);
	ob_node(b, "Relu", mm_fmt("%s.relu3", p), IN(sum), out);
	return out;
}

int mm_resnet_onnx(const struct mm_opts *o, int depth, struct mm_out *out,
		   struct mm_summary *s)
{
	static const int blocks50[4] = { 3, 4, 6, 3 };
	static const int blocks152[4] = { 3, 8, 36, 3 };
	const int *blocks = depth == 50 ? blocks50 : blocks152;
	int64_t bdim = o->batch ? o->batch : DIM_BATCH;
	long cin = 64, planes;
	const char *x;
	Onnx__NodeProto *n;
	struct ob b;
	int l, i;

	ob_init(&b, o, mm_fmt("resnet%d", depth));
	ob_input(&b, "input", b.elem, 4, INTS(bdim, 3, o->image, o->image));
	x = conv_bn(&b, "conv1", "bn1", "relu", "input", 3, 64, 7, 2);
	n = ob_node(&b, "MaxPool", "maxpool", IN(x), "maxpool.output");
	ATTR_INTS(n, "kernel_shape", 3, 3);
	ATTR_INTS(n, "strides", 2, 2);
	ATTR_INTS(n, "pads", 1, 1, 1, 1);
	x = "maxpool.output";
	for (l = 0; l < 4; l++) {
		planes = 64L << l;
		for (i = 0; i < blocks[l]; i++) {
			x = bottleneck(&b, mm_fmt("layer%d.%d", l + 1, i), x, cin,
				       planes, i == 0 && l > 0 ? 2 : 1);
			cin = planes * 4;
		}
	}
	ob_node(&b, "GlobalAveragePool", "avgpool", IN(x), "avgpool.output");
	n = ob_node(&b, "Flatten", "flatten", IN("avgpool.output"),
		    "flatten.output");
	attr_i(n, "axis", 1);
	n = ob_node(&b, "Gemm", "fc",
		    IN("flatten.output",
		       ob_weight(&b, "fc.weight", false, 2, INTS(1000, 2048)),
		       ob_weight(&b, "fc.bias", false, 1, INTS(1000))),
		    "output");
	attr_f(n, "alpha", 1.0f);
	attr_f(n, "beta", 1.0f);
	attr_i(n, "transB", 1);
	ob_output(&b, "output", 2, INTS(bdim, 1000));
	return ob_finish(&b, out, s);
}

/* ---------------------------------------------------------------- BERT */

#define BERT_LAYERS	24
#define BERT_HIDDEN	1024
#define BERT_HEADS	16
#define BERT_HEAD_DIM	(BERT_HIDDEN / BERT_HEADS)
#define BERT_FFN	4096
#define BERT_VOCAB	30522
#define BERT_POS	512
#define BERT_TYPES	2
#define BERT_LN_EPS	1e-12f

/* x @ W + b, W stored [in, out] as exporters do for MatMul. */
static const char *linear(struct ob *b, const char *p, const char *x,
			  long in, long outf)
{
	const char *w, *bias, *y = mm_fmt("%s.matmul", p);

	w = ob_weight(b, mm_fmt("%s.weight", p), false, 2, INTS(in, outf));
	bias = ob_weight(b, mm_fmt("%s.bias", p), false, 1, INTS(outf));
	ob_node(b, "MatMul", mm_fmt("%s/MatMul", p), IN(x, w), y);
	ob_node(b, "Add", mm_fmt("%s/Add", p), IN(y, bias),
		mm_fmt("%s.output", p));
	return mm_fmt("%s.output", p);
}

static const char *layer_norm(struct ob *b, const char *p, const char *x)
{
	const char *y = mm_fmt("%s.output", p);
	Onnx__NodeProto *n;

	n = ob_node(b, "LayerNormalization", p,
		    IN(x, ob_weight(b, mm_fmt("%s.weight", p), false, 1,
				    INTS(BERT_HIDDEN)),
		       ob_weight(b, mm_fmt("%s.bias", p), false, 1,
				 INTS(BERT_HIDDEN))), y);
	attr_i(n, "axis", -1);
	attr_f(n, "epsilon", BERT_LN_EPS);
	return y;
}

/* Reshape with a constant shape (0: keep that dimension) and Transpose. */
static const char *heads(struct ob *b, const char *p, const char *x,
			 const char *perm_name, const int64_t *perm)
{
	const char *r = mm_fmt("%s.heads", p), *t = mm_fmt("%s.transposed", p);
	Onnx__NodeProto *n;

	ob_node(b, "Reshape", mm_fmt("%s/Reshape", p), IN(x, "const.heads_shape"),
		r);
	n = ob_node(b, "Transpose", mm_fmt("%s/%s", p, perm_name), IN(r), t);
	attr_ints(n, "perm", 4, perm);
	return t;
}

static const char *bert_layer(struct ob *b, int l, const char *h,
			      const char *mask)
{
	const char *p = mm_fmt("encoder.layer.%d", l);
	const char *a = mm_fmt("%s.attention.self", p);
	const char *q, *k, *v, *s, *y, *sh, *g;
	Onnx__NodeProto *n;

	q = linear(b, mm_fmt("%s.query", a), h, BERT_HIDDEN, BERT_HIDDEN);
	k = linear(b, mm_fmt("%s.key", a), h, BERT_HIDDEN, BERT_HIDDEN);
	v = linear(b, mm_fmt("%s.value", a), h, BERT_HIDDEN, BERT_HIDDEN);
	q = heads(b, mm_fmt("%s.query", a), q, "Transpose", INTS(0, 2, 1, 3));
	k = heads(b, mm_fmt("%s.key", a), k, "Transpose", INTS(0, 2, 3, 1));
	v = heads(b, mm_fmt("%s.value", a), v, "Transpose", INTS(0, 2, 1, 3));

	/* [b, heads, seq, seq] */
	s = mm_fmt("%s.scores", a);
	ob_node(b, "MatMul", mm_fmt("%s/MatMul_qk", a), IN(q, k), s);
	ob_node(b, "Div", mm_fmt("%s/Div", a), IN(s, "const.sqrt_head_dim"),
		mm_fmt("%s.scaled", a));
	ob_node(b, "Add", mm_fmt("%s/Add_mask", a),
		IN(mm_fmt("%s.scaled", a), mask), mm_fmt("%s.masked", a));
	n = ob_node(b, "Softmax", mm_fmt("%s/Softmax", a),
		    IN(mm_fmt("%s.masked", a)), mm_fmt("%s.probs", a));
	attr_i(n, "axis", -1);
	ob_node(b, "MatMul", mm_fmt("%s/MatMul_v", a),
		IN(mm_fmt("%s.probs", a), v), mm_fmt("%s.context", a));
	n = ob_node(b, "Transpose", mm_fmt("%s/Transpose_context", a),
		    IN(mm_fmt("%s.context", a)), mm_fmt("%s.context_t", a));
	ATTR_INTS(n, "perm", 0, 2, 1, 3);

	/*
	 * Back to [b, seq, hidden] as exporters write it: the shape from
	 * Shape -> Gather(0, 1) -> Concat with the hidden size.
	 */
	sh = mm_fmt("%s.context_shape", a);
	ob_node(b, "Shape", mm_fmt("%s/Shape", a), IN(mm_fmt("%s.context_t", a)),
		sh);
	n = ob_node(b, "Gather", mm_fmt("%s/Gather_shape", a),
		    IN(sh, "const.indices_0_1"), mm_fmt("%s.batch_seq", a));
	attr_i(n, "axis", 0);
	n = ob_node(b, "Concat", mm_fmt("%s/Concat_shape", a),
		    IN(mm_fmt("%s.batch_seq", a), "const.hidden"),
		    mm_fmt("%s.merged_shape", a));
	attr_i(n, "axis", 0);
	ob_node(b, "Reshape", mm_fmt("%s/Reshape_context", a),
		IN(mm_fmt("%s.context_t", a), mm_fmt("%s.merged_shape", a)),
		mm_fmt("%s.merged", a));

	y = linear(b, mm_fmt("%s.attention.output.dense", p),
		   mm_fmt("%s.merged", a), BERT_HIDDEN, BERT_HIDDEN);
	ob_node(b, "Add", mm_fmt("%s.attention.output/Add_residual", p),
		IN(y, h), mm_fmt("%s.attention.output.residual", p));
	h = layer_norm(b, mm_fmt("%s.attention.output.LayerNorm", p),
		       mm_fmt("%s.attention.output.residual", p));

	/* FFN with GELU, erf form: x * 0.5 * (1 + erf(x / sqrt(2))) */
	y = linear(b, mm_fmt("%s.intermediate.dense", p), h, BERT_HIDDEN,
		   BERT_FFN);
	g = mm_fmt("%s.intermediate.gelu", p);
	ob_node(b, "Div", mm_fmt("%s/Div", g), IN(y, "const.sqrt2"),
		mm_fmt("%s.div", g));
	ob_node(b, "Erf", mm_fmt("%s/Erf", g), IN(mm_fmt("%s.div", g)),
		mm_fmt("%s.erf", g));
	ob_node(b, "Add", mm_fmt("%s/Add", g),
		IN(mm_fmt("%s.erf", g), "const.one"), mm_fmt("%s.add", g));
	ob_node(b, "Mul", mm_fmt("%s/Mul", g), IN(y, mm_fmt("%s.add", g)),
		mm_fmt("%s.mul", g));
	ob_node(b, "Mul", mm_fmt("%s/Mul_half", g),
		IN(mm_fmt("%s.mul", g), "const.half"), mm_fmt("%s.output", g));
	y = linear(b, mm_fmt("%s.output.dense", p), mm_fmt("%s.output", g),
		   BERT_FFN, BERT_HIDDEN);
	ob_node(b, "Add", mm_fmt("%s.output/Add_residual", p), IN(y, h),
		mm_fmt("%s.output.residual", p));
	return layer_norm(b, mm_fmt("%s.output.LayerNorm", p),
			  mm_fmt("%s.output.residual", p));
}

int mm_bert_onnx(const struct mm_opts *o, struct mm_out *out,
		 struct mm_summary *s)
{
	int64_t bdim = o->batch ? o->batch : DIM_BATCH;
	int64_t sdim = o->seq ? o->seq : DIM_SEQ;
	const char *h, *mask, *seq_len;
	Onnx__NodeProto *n;
	struct ob b;
	int l;

	ob_init(&b, o, "bert-large");
	ob_input(&b, "input_ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2,
		 INTS(bdim, sdim));
	ob_input(&b, "token_type_ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2,
		 INTS(bdim, sdim));
	ob_input(&b, "attention_mask", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2,
		 INTS(bdim, sdim));

	/* constants */
	ob_i64(&b, "const.heads_shape", 4, INTS(0, 0, BERT_HEADS, BERT_HEAD_DIM));
	ob_i64(&b, "const.indices_0_1", 2, INTS(0, 1));
	ob_i64(&b, "const.hidden", 1, INTS(BERT_HIDDEN));
	ob_i64(&b, "const.zero_1d", 1, INTS(0));
	if (!o->seq)
		ob_i64(&b, "const.one_1d", 1, INTS(1));
	ob_i64(&b, "const.mask_axes", 2, INTS(1, 2));
	ob_i64(&b, "const.zero", -1, INTS(0));
	ob_scalar(&b, "const.sqrt_head_dim", sqrtf(BERT_HEAD_DIM));
	ob_scalar(&b, "const.sqrt2", sqrtf(2.0f));
	ob_scalar(&b, "const.one", 1.0f);
	ob_scalar(&b, "const.half", 0.5f);
	ob_scalar(&b, "const.mask_min", -10000.0f);

	/*
	 * Embeddings: word + position + token type, LayerNorm. The position
	 * ids are 0..seq-1: the first seq rows of the table, sliced with
	 * seq taken from the ids' shape.
	 */
	n = ob_node(&b, "Gather", "embeddings.word_embeddings",
		    IN(ob_weight(&b, "embeddings.word_embeddings.weight", false, 2,
				 INTS(BERT_VOCAB, BERT_HIDDEN)), "input_ids"),
		    "embeddings.word_embeddings.output");
	attr_i(n, "axis", 0);
	n = ob_node(&b, "Gather", "embeddings.token_type_embeddings",
		    IN(ob_weight(&b, "embeddings.token_type_embeddings.weight",
				 false, 2, INTS(BERT_TYPES, BERT_HIDDEN)),
		       "token_type_ids"),
		    "embeddings.token_type_embeddings.output");
	attr_i(n, "axis", 0);
	if (o->seq) {
		/* a fixed length: folded to a constant, as a static export */
		seq_len = ob_i64(&b, "const.seq_len", 1, INTS(o->seq));
	} else {
		ob_node(&b, "Shape", "embeddings/Shape", IN("input_ids"),
			"embeddings.ids_shape");
		n = ob_node(&b, "Gather", "embeddings/Gather_seq",
			    IN("embeddings.ids_shape", "const.one_1d"),
			    "embeddings.seq_len");
		attr_i(n, "axis", 0);
		seq_len = "embeddings.seq_len";
	}
	ob_node(&b, "Slice", "embeddings.position_embeddings",
		IN(ob_weight(&b, "embeddings.position_embeddings.weight", false, 2,
			     INTS(BERT_POS, BERT_HIDDEN)),
		   "const.zero_1d", seq_len, "const.zero_1d"),
		"embeddings.position_embeddings.output");
	ob_node(&b, "Add", "embeddings/Add_type",
		IN("embeddings.word_embeddings.output",
		   "embeddings.token_type_embeddings.output"),
		"embeddings.sum_type");
	ob_node(&b, "Add", "embeddings/Add_position",
		IN("embeddings.sum_type", "embeddings.position_embeddings.output"),
		"embeddings.sum");
	h = layer_norm(&b, "embeddings.LayerNorm", "embeddings.sum");

	/* extended mask: (1 - mask) * -10000, [batch, 1, 1, seq] */
	ob_node(&b, "Unsqueeze", "mask/Unsqueeze",
		IN("attention_mask", "const.mask_axes"), "mask.unsqueezed");
	n = ob_node(&b, "Cast", "mask/Cast", IN("mask.unsqueezed"), "mask.float");
	attr_i(n, "to", b.elem);
	ob_node(&b, "Sub", "mask/Sub", IN("const.one", "mask.float"),
		"mask.inverted");
	ob_node(&b, "Mul", "mask/Mul", IN("mask.inverted", "const.mask_min"),
		"mask.extended");
	mask = "mask.extended";

	for (l = 0; l < BERT_LAYERS; l++)
		h = bert_layer(&b, l, h, mask);
	ob_node(&b, "Identity", "last_hidden_state", IN(h), "last_hidden_state");

	/* pooler: tanh(dense(hidden state of the first token)) */
	n = ob_node(&b, "Gather", "pooler/Gather_first", IN(h, "const.zero"),
		    "pooler.first_token");
	attr_i(n, "axis", 1);
	h = linear(&b, "pooler.dense", "pooler.first_token", BERT_HIDDEN,
		   BERT_HIDDEN);
	ob_node(&b, "Tanh", "pooler/Tanh", IN(h), "pooler_output");

	ob_output(&b, "last_hidden_state", 3, INTS(bdim, sdim, BERT_HIDDEN));
	ob_output(&b, "pooler_output", 2, INTS(bdim, BERT_HIDDEN));
	return ob_finish(&b, out, s);
}
