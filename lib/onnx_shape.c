// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ONNX shape inference, in C (no Python, no runtime): the output shapes and
 * data types of the common operators of CNNs and transformers, and
 * constant folding of small tensors so that the shape computations
 * exporters write (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Mul,
 * Div, Cast, Slice, Equal, Where, ConstantOfShape, Range on int64) end in
 * known Reshape, Expand and ConstantOfShape targets.
 *
 * Every dimension stays in [0, 2^63); arithmetic on them is done in 128
 * bits and checked. Folding keeps tensors of at most OX_FOLD_MAX elements
 * and at most OX_FOLD_BUDGET elements over the whole model.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "plan_internal.h"

/*
 * Dimension arithmetic is done in __int128: products of two dimensions
 * (each < 2^63) cannot overflow it. Kernel, stride, dilation and pad
 * attributes above OX_ATTR_MAX are refused, so that sums of such products
 * cannot either.
 */
#define OX_ATTR_MAX	((__int128)1 << 40)

/* The node being inferred. */
struct nx {
	struct ox_ctx *c;
	const Onnx__NodeProto *n;
	int idx;
	const int *in;
	size_t nin;
	const int *out;
	size_t nout;
};

static struct ox_tensor *in_t(const struct nx *x, size_t k)
{
	return k < x->nin && x->in[k] >= 0 ? &x->c->t[x->in[k]] : NULL;
}

static struct ox_tensor *out_t(const struct nx *x, size_t k)
{
	return k < x->nout && x->out[k] >= 0 ? &x->c->t[x->out[k]] : NULL;
}

static int __attribute__((format(printf, 2, 3)))
fail(const struct nx *x, const char *fmt, ...)
{
	char name[64], msg[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return md_parse_fail(x->c->err, 0, "node '%s' (op %s): %s",
			     ox_node_name(x->n, x->idx, name, sizeof(name)),
			     x->n->op_type, msg);
}

/* ------------------------------------------------------------ helpers */

static int64_t attr_i(const Onnx__NodeProto *n, const char *name,
		      int64_t def)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	return a && a->has_i ? a->i : def;
}

/* The ints of attribute @name, or NULL (*@cnt 0) when absent. */
static const int64_t *attr_ints(const Onnx__NodeProto *n, const char *name,
				size_t *cnt)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	*cnt = a ? a->n_ints : 0;
	return a && a->n_ints ? a->ints : NULL;
}

/* Is attribute @name the string @v? (@def when it is absent) */
static int attr_is(const Onnx__NodeProto *n, const char *name, const char *v,
		   int def)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);
	size_t l = strlen(v);

	if (!a || !a->has_s)
		return def;
	return a->s.len == l && !memcmp(a->s.data, v, l);
}

static int has_val(const struct ox_tensor *t)
{
	return t && (t->iv || t->fv);
}

static double vd(const struct ox_tensor *t, size_t k)
{
	return t->fv ? t->fv[k] : (double)t->iv[k];
}

/*
 * May @d be cast to int64_t? NaN, the infinities and anything past about
 * 2^63 may not: the cast would be undefined.
 */
static bool fits_i64(double d)
{
	return d >= -9.2e18 && d <= 9.2e18;
}

/* Elements of @t, or -1 past 2^63. */
static int64_t numel(const struct ox_tensor *t)
{
	__int128 n = 1;
	int i;

	for (i = 0; i < t->rank; i++) {
		n *= t->dim[i];
		if (n > INT64_MAX)
			return -1;
	}
	return (int64_t)n;
}

static void set_shape(struct ox_tensor *o, int32_t dt, int rank,
		      const int64_t *dim)
{
	if (!o)
		return;
	o->dtype = dt;
	o->rank = rank;
	if (rank > 0)
		memmove(o->dim, dim, rank * sizeof(*dim));
}

static void copy_shape(struct ox_tensor *o, const struct ox_tensor *i)
{
	if (o && i)
		set_shape(o, i->dtype, i->rank, i->dim);
}

/* Room for @n folded elements of @o (as ints or doubles), or NULL. */
static void *new_val(struct nx *x, struct ox_tensor *o, size_t n, int flt)
{
	void *v;

	if (!o || n > OX_FOLD_MAX || n > x->c->fold_left)
		return NULL;
	ox_drop_value(o);
	v = calloc(n + 1, 8);
	if (!v)
		return NULL;
	x->c->fold_left -= n;
	if (flt)
		o->fv = v;
	else
		o->iv = v;
	return v;
}

/* A folded value for @o of @n elements, each computed by the caller. */
static int val_float(const struct ox_tensor *o)
{
	return ox_is_float(o->dtype);
}

/* Store @d as element @k of @o (as its type wants). */
static void put(struct ox_tensor *o, size_t k, double d, int64_t i, int isf)
{
	if (o->fv)
		o->fv[k] = isf ? d : (double)i;
	else if (isf)
		o->iv[k] = fits_i64(d) ? (int64_t)d : 0;
	else
		o->iv[k] = i;
}

/*
 * The values of a small 1-D (or scalar) integer input @t as int64, into
 * @v (OX_MAX_RANK entries at most when @max says so). Return: the count,
 * or -1 when unknown or longer than @max.
 */
static int ints_of(const struct ox_tensor *t, int64_t *v, size_t max)
{
	int64_t n;
	size_t i;

	if (!has_val(t) || t->rank > 1)
		return -1;
	n = numel(t);
	if (n < 0 || (size_t)n > max)
		return -1;
	for (i = 0; i < (size_t)n; i++) {
		double d = vd(t, i);

		if (t->fv && !fits_i64(d))
			return -1;
		v[i] = t->fv ? (int64_t)d : t->iv[i];
	}
	return (int)n;
}

/* Normalize axis @a of a rank-@r tensor; -1 when out of range. */
static int axis_of(int64_t a, int r)
{
	if (a < 0)
		a += r;
	return a >= 0 && a < r ? (int)a : -1;
}

/* Numpy broadcasting of @k tensors into @rank/@dim. */
static int bcast(struct nx *x, struct ox_tensor *const *ts, size_t k,
		 int *rank, int64_t *dim)
{
	int r = 0, i;
	size_t j;

	for (j = 0; j < k; j++)
		if (ts[j] && ts[j]->rank > r)
			r = ts[j]->rank;
	for (i = 0; i < r; i++)
		dim[i] = 1;
	for (j = 0; j < k; j++) {
		const struct ox_tensor *t = ts[j];

		if (!t)
			continue;
		for (i = 0; i < t->rank; i++) {
			int64_t d = t->dim[t->rank - 1 - i];
			int64_t *o = &dim[r - 1 - i];

			if (d == *o || d == 1)
				continue;
			if (*o == 1) {
				*o = d;
				continue;
			}
			return fail(x, "shapes do not broadcast (%" PRId64
				    " against %" PRId64 ")", d, *o);
		}
	}
	*rank = r;
	return 0;
}

/* Flat index into @t of the output's flat index @i under broadcasting. */
static size_t bidx(const struct ox_tensor *o, const struct ox_tensor *t,
		   size_t i)
{
	size_t off = 0, stride = 1;
	int d;

	for (d = o->rank - 1; d >= 0; d--) {
		int td = d - (o->rank - t->rank);
		size_t c = i % (size_t)o->dim[d];

		i /= (size_t)o->dim[d];
		if (td < 0)
			continue;
		if (t->dim[td] != 1)
			off += c * stride;
		stride *= (size_t)t->dim[td];
	}
	return off;
}

/* ------------------------------------------------------------ element-wise */

static int op_same(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	size_t k;

	if (!a)
		return fail(x, "input 0 missing");
	for (k = 0; k < x->nout; k++)
		copy_shape(out_t(x, k), a);
	return 0;
}

/* Unary element-wise ops that fold, by name. */
static int fold_unary(struct nx *x, struct ox_tensor *a, struct ox_tensor *o)
{
	const char *op = x->n->op_type;
	int64_t n = numel(o), k;
	int isf = val_float(o);

	static const char *const folds[] = {
		"Abs", "Ceil", "Dropout", "Floor", "Identity", "Neg", "Not",
		"Relu", "Round", "Sign", "Sqrt", NULL
	};
	const char *const *f;

	for (f = folds; *f && strcmp(*f, op); f++)
		;
	if (!*f || !has_val(a) || n < 0 || !new_val(x, o, (size_t)n, isf))
		return 0;
	for (k = 0; k < n; k++) {
		double d = vd(a, k);
		int64_t i = a->iv ? a->iv[k] : (int64_t)0;

		if (!strcmp(op, "Neg"))
			d = -d, i = i == INT64_MIN ? i : -i;
		else if (!strcmp(op, "Abs"))
			d = fabs(d), i = i < 0 && i != INT64_MIN ? -i : i;
		else if (!strcmp(op, "Not"))
			d = !d, i = !i;
		else if (!strcmp(op, "Floor"))
			d = floor(d);
		else if (!strcmp(op, "Ceil"))
			d = ceil(d);
		else if (!strcmp(op, "Round"))
			d = nearbyint(d);
		else if (!strcmp(op, "Sqrt"))
			d = sqrt(d);
		else if (!strcmp(op, "Relu"))
			d = d > 0 ? d : 0, i = i > 0 ? i : 0;
		/* Identity, Dropout, Sign...: as they are, Sign below */
		else if (!strcmp(op, "Sign"))
			d = (d > 0) - (d < 0), i = (i > 0) - (i < 0);
		put(o, (size_t)k, d, i, isf || !a->iv);
	}
	return 0;
}

static int op_unary(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int ret = op_same(x);

	if (ret || !o)
		return ret;
	if (!strcmp(x->n->op_type, "Not") || !strcmp(x->n->op_type, "IsNaN") ||
	    !strcmp(x->n->op_type, "IsInf"))
		o->dtype = OX_BOOL;
	if (!strcmp(x->n->op_type, "Dropout") && out_t(x, 1))
		out_t(x, 1)->dtype = OX_BOOL;	/* the mask */
	return fold_unary(x, a, o);
}

static int op_cast(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int64_t to = attr_i(x->n, "to", -1), n, k;

	if (!strcmp(x->n->op_type, "CastLike"))
		to = in_t(x, 1) ? in_t(x, 1)->dtype : -1;
	if (!a || to <= 0 || to > 255)
		return fail(x, "no input or no target type");
	if (!o)
		return 0;
	copy_shape(o, a);
	o->dtype = (int32_t)to;
	n = numel(o);
	if (!has_val(a) || n < 0 || !new_val(x, o, (size_t)n, ox_is_float(o->dtype)))
		return 0;
	for (k = 0; k < n; k++) {
		double d = vd(a, k);

		if (o->fv)
			o->fv[k] = d;
		else if (to == OX_BOOL)
			o->iv[k] = d != 0;
		else if (a->iv)
			o->iv[k] = a->iv[k];
		else if (fits_i64(d))
			o->iv[k] = (int64_t)d;	/* truncation, as C casts */
		else
			ox_drop_value(o);
		if (!has_val(o))
			break;
	}
	return 0;
}

static int is_cmp(const char *op)
{
	return !strcmp(op, "Equal") || !strcmp(op, "Less") ||
	       !strcmp(op, "Greater") || !strcmp(op, "LessOrEqual") ||
	       !strcmp(op, "GreaterOrEqual") || !strcmp(op, "And") ||
	       !strcmp(op, "Or") || !strcmp(op, "Xor");
}

static int fold_binary(struct nx *x, struct ox_tensor *a, struct ox_tensor *b,
		       struct ox_tensor *o)
{
	const char *op = x->n->op_type;
	int64_t n = numel(o), k;
	int isf = val_float(o) || a->fv || b->fv;

	if (!has_val(a) || !has_val(b) || n < 0 ||
	    !new_val(x, o, (size_t)n, val_float(o)))
		return 0;
	for (k = 0; k < n; k++) {
		size_t ia = bidx(o, a, k), ib = bidx(o, b, k);
		double p = vd(a, ia), q = vd(b, ib), d = 0;
		int64_t i = a->iv ? a->iv[ia] : 0, j = b->iv ? b->iv[ib] : 0;
		int64_t r = 0;

		if (!strcmp(op, "Add")) {
			d = p + q;
			if (!isf && __builtin_add_overflow(i, j, &r))
				goto nofold;
		} else if (!strcmp(op, "Sub")) {
			d = p - q;
			if (!isf && __builtin_sub_overflow(i, j, &r))
				goto nofold;
		} else if (!strcmp(op, "Mul")) {
			d = p * q;
			if (!isf && __builtin_mul_overflow(i, j, &r))
				goto nofold;
		} else if (!strcmp(op, "Div")) {
			if (!isf && (!j || (i == INT64_MIN && j == -1)))
				goto nofold;
			d = p / q;
			r = isf ? 0 : i / j;
		} else if (!strcmp(op, "Mod")) {
			if (isf || !j || (i == INT64_MIN && j == -1))
				goto nofold;
			r = i % j;
			if (!attr_i(x->n, "fmod", 0) && r && ((r < 0) != (j < 0)))
				r += j;
		} else if (!strcmp(op, "Max")) {
			d = p > q ? p : q;
			r = i > j ? i : j;
		} else if (!strcmp(op, "Min")) {
			d = p < q ? p : q;
			r = i < j ? i : j;
		} else if (!strcmp(op, "Equal")) {
			r = isf ? p == q : i == j;
		} else if (!strcmp(op, "Less")) {
			r = isf ? p < q : i < j;
		} else if (!strcmp(op, "Greater")) {
			r = isf ? p > q : i > j;
		} else if (!strcmp(op, "LessOrEqual")) {
			r = isf ? p <= q : i <= j;
		} else if (!strcmp(op, "GreaterOrEqual")) {
			r = isf ? p >= q : i >= j;
		} else if (!strcmp(op, "And")) {
			r = i && j;
		} else if (!strcmp(op, "Or")) {
			r = i || j;
		} else if (!strcmp(op, "Xor")) {
			r = !i != !j;
		} else {
			goto nofold;
		}
		if (is_cmp(op))
			d = (double)r;
		put(o, (size_t)k, d, r, isf && !is_cmp(op));
	}
	return 0;
nofold:
	ox_drop_value(o);
	return 0;
}

/* Add, Sub, Mul, Div, Pow, Mod, comparisons, and variadic Max/Min/Sum/Mean. */
static int op_bcast(struct nx *x)
{
	struct ox_tensor *ts[64], *o = out_t(x, 0);
	int64_t dim[OX_MAX_RANK];
	int rank, ret;
	size_t k;

	if (!x->nin || x->nin > 64 || !in_t(x, 0))
		return fail(x, "bad number of inputs");
	for (k = 0; k < x->nin; k++)
		ts[k] = in_t(x, k);
	ret = bcast(x, ts, x->nin, &rank, dim);
	if (ret || !o)
		return ret;
	set_shape(o, is_cmp(x->n->op_type) ? OX_BOOL : ts[0]->dtype, rank, dim);
	if (x->nin == 2 && ts[1])
		return fold_binary(x, ts[0], ts[1], o);
	return 0;
}

static int op_where(struct nx *x)
{
	struct ox_tensor *ts[3] = { in_t(x, 0), in_t(x, 1), in_t(x, 2) };
	struct ox_tensor *o = out_t(x, 0);
	int64_t dim[OX_MAX_RANK], n, k;
	int rank, ret;

	if (!ts[0] || !ts[1] || !ts[2])
		return fail(x, "needs 3 inputs");
	ret = bcast(x, ts, 3, &rank, dim);
	if (ret || !o)
		return ret;
	set_shape(o, ts[1]->dtype, rank, dim);
	n = numel(o);
	if (!has_val(ts[0]) || !has_val(ts[1]) || !has_val(ts[2]) || n < 0 ||
	    !new_val(x, o, (size_t)n, val_float(o)))
		return 0;
	for (k = 0; k < n; k++) {
		struct ox_tensor *s = vd(ts[0], bidx(o, ts[0], k)) ? ts[1] : ts[2];
		size_t i = bidx(o, s, k);

		put(o, (size_t)k, vd(s, i), s->iv ? s->iv[i] : 0, !s->iv);
	}
	return 0;
}

/* ------------------------------------------------------------ linear algebra */

static int op_matmul(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *b = in_t(x, 1), *o = out_t(x, 0);
	struct ox_tensor ba, bb;
	int64_t dim[OX_MAX_RANK];
	int rank, ret, r = 0, i;

	if (!a || !b || a->rank < 1 || b->rank < 1)
		return fail(x, "needs two inputs of rank >= 1");
	if (a->dim[a->rank - 1] != b->dim[b->rank > 1 ? b->rank - 2 : 0])
		return fail(x, "inner dimensions differ (%" PRId64 " and %" PRId64 ")",
			    a->dim[a->rank - 1],
			    b->dim[b->rank > 1 ? b->rank - 2 : 0]);
	/* Batch dimensions broadcast. */
	ba.rank = a->rank > 2 ? a->rank - 2 : 0;
	memcpy(ba.dim, a->dim, ba.rank * sizeof(int64_t));
	bb.rank = b->rank > 2 ? b->rank - 2 : 0;
	memcpy(bb.dim, b->dim, bb.rank * sizeof(int64_t));
	ret = bcast(x, (struct ox_tensor *[]){ &ba, &bb }, 2, &rank, dim);
	if (ret || !o)
		return ret;
	r = rank;
	if (a->rank > 1)
		dim[r++] = a->dim[a->rank - 2];
	if (b->rank > 1)
		dim[r++] = b->dim[b->rank - 1];
	if (r > OX_MAX_RANK)
		return fail(x, "rank above %d", OX_MAX_RANK);
	i = strcmp(x->n->op_type, "MatMulInteger") ? a->dtype : OX_INT32;
	if (!strcmp(x->n->op_type, "QLinearMatMul"))
		i = in_t(x, 7) ? in_t(x, 7)->dtype : OX_UINT8;
	set_shape(o, i, r, dim);
	return 0;
}

static int op_gemm(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *b = in_t(x, 1);
	int64_t dim[2], ka, kb;
	int ta = !!attr_i(x->n, "transA", 0), tb = !!attr_i(x->n, "transB", 0);

	if (!a || !b || a->rank != 2 || b->rank != 2)
		return fail(x, "needs two inputs of rank 2");
	dim[0] = a->dim[ta ? 1 : 0];
	ka = a->dim[ta ? 0 : 1];
	kb = b->dim[tb ? 1 : 0];
	dim[1] = b->dim[tb ? 0 : 1];
	if (ka != kb)
		return fail(x, "inner dimensions differ (%" PRId64 " and %" PRId64 ")",
			    ka, kb);
	set_shape(out_t(x, 0), a->dtype, 2, dim);
	return 0;
}

/* ------------------------------------------------------------ conv, pool */

enum { CP_CONV, CP_TRANSPOSE, CP_POOL };

static int op_convpool(struct nx *x, int kind)
{
	struct ox_tensor *a = in_t(x, 0), *w = in_t(x, 1);
	const int64_t *ks, *st, *dl, *pd, *op, *os;
	size_t nks, nst, ndl, npd, nop, nos;
	int64_t dim[OX_MAX_RANK];
	int sp, i, same, valid, ceil_mode = !!attr_i(x->n, "ceil_mode", 0);
	int64_t group = attr_i(x->n, "group", 1);

	if (!a || a->rank < 3)
		return fail(x, "input 0 needs rank >= 3 (N, C, spatial...)");
	sp = a->rank - 2;
	if (kind != CP_POOL && (!w || w->rank != a->rank))
		return fail(x, "weights of rank %d needed", a->rank);
	ks = attr_ints(x->n, "kernel_shape", &nks);
	st = attr_ints(x->n, "strides", &nst);
	dl = attr_ints(x->n, "dilations", &ndl);
	pd = attr_ints(x->n, "pads", &npd);
	op = attr_ints(x->n, "output_padding", &nop);
	os = attr_ints(x->n, "output_shape", &nos);
	if (!ks && kind == CP_POOL)
		return fail(x, "no kernel_shape");
	if ((ks && nks != (size_t)sp) || (st && nst != (size_t)sp) ||
	    (dl && ndl != (size_t)sp) || (pd && npd != 2 * (size_t)sp) ||
	    (op && nop != (size_t)sp) || (os && nos != (size_t)sp &&
					  nos != (size_t)a->rank))
		return fail(x, "kernel_shape, strides, dilations, pads or output_padding of the wrong length");
	if (group < 1)
		return fail(x, "group %" PRId64, group);
	same = attr_is(x->n, "auto_pad", "SAME_UPPER", 0) ||
	       attr_is(x->n, "auto_pad", "SAME_LOWER", 0);
	valid = attr_is(x->n, "auto_pad", "VALID", 0);
	dim[0] = a->dim[0];
	if (kind == CP_CONV)
		dim[1] = w->dim[0];
	else if (kind == CP_TRANSPOSE)
		dim[1] = (int64_t)((__int128)w->dim[1] * group > INT64_MAX ? -1 :
				   w->dim[1] * group);
	else
		dim[1] = a->dim[1];
	if (dim[1] < 0)
		return fail(x, "channels past 2^63");
	for (i = 0; i < sp; i++) {
		__int128 in = a->dim[2 + i], k = ks ? ks[i] : w->dim[2 + i];
		__int128 s = st ? st[i] : 1, d = dl ? dl[i] : 1, ek, out;
		__int128 pb = pd && !same && !valid ? pd[i] : 0;
		__int128 pe = pd && !same && !valid ? pd[sp + i] : 0;
		__int128 opad = op ? op[i] : 0;

		/* Bounded so that the 128-bit sums below cannot overflow. */
		if (k < 1 || s < 1 || d < 1 || pb < 0 || pe < 0 || opad < 0 ||
		    k > OX_ATTR_MAX || s > OX_ATTR_MAX || d > OX_ATTR_MAX ||
		    pb > OX_ATTR_MAX || pe > OX_ATTR_MAX || opad > OX_ATTR_MAX)
			return fail(x, "kernel, stride, dilation, pad or output_padding out of range on axis %d",
				    2 + i);
		ek = (k - 1) * d + 1;
		if (kind == CP_TRANSPOSE) {
			if (os)
				out = os[nos == (size_t)sp ? i : 2 + i];
			else if (same)
				out = in * s;
			else
				out = s * (in - 1) + opad + ek - pb - pe;
		} else if (same) {
			out = (in + s - 1) / s;
		} else {
			__int128 eff = in + pb + pe - ek;

			if (eff < 0)
				return fail(x, "kernel (%" PRId64 ") larger than the padded input (%" PRId64 ") on axis %d",
					    (int64_t)ek, (int64_t)(in + pb + pe),
					    2 + i);
			if (ceil_mode && kind == CP_POOL) {
				out = (eff + s - 1) / s + 1;
				/* The last window must start inside. */
				if ((out - 1) * s >= in + pb)
					out--;
			} else {
				out = eff / s + 1;
			}
		}
		if (out < 0 || out > INT64_MAX)
			return fail(x, "output size out of range on axis %d", 2 + i);
		dim[2 + i] = (int64_t)out;
	}
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	set_shape(out_t(x, 1), OX_INT64, a->rank, dim);	/* MaxPool indices */
	return 0;
}

static int op_conv(struct nx *x)
{
	return op_convpool(x, CP_CONV);
}

static int op_convt(struct nx *x)
{
	return op_convpool(x, CP_TRANSPOSE);
}

static int op_pool(struct nx *x)
{
	return op_convpool(x, CP_POOL);
}

static int op_global_pool(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t dim[OX_MAX_RANK];
	int i;

	if (!a || a->rank < 2)
		return fail(x, "input 0 needs rank >= 2");
	for (i = 0; i < a->rank; i++)
		dim[i] = i < 2 ? a->dim[i] : 1;
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	return 0;
}

/* ------------------------------------------------------------ normalization */

static int op_layernorm(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t dim[OX_MAX_RANK];
	int ax, i;

	if (!a)
		return fail(x, "input 0 missing");
	ax = axis_of(attr_i(x->n, "axis", -1), a->rank);
	if (ax < 0)
		return fail(x, "axis out of range");
	copy_shape(out_t(x, 0), a);
	for (i = 0; i < a->rank; i++)
		dim[i] = i < ax ? a->dim[i] : 1;
	set_shape(out_t(x, 1), OX_FLOAT, a->rank, dim);
	set_shape(out_t(x, 2), OX_FLOAT, a->rank, dim);
	return 0;
}

static int op_batchnorm(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *m = in_t(x, 3);
	size_t k;

	if (!a)
		return fail(x, "input 0 missing");
	copy_shape(out_t(x, 0), a);
	/* Training mode: running mean and var (and saved ones, opset < 14). */
	for (k = 1; k < x->nout; k++)
		if (m)
			copy_shape(out_t(x, k), m);
	return 0;
}

/* ------------------------------------------------------------ shape ops */

static int op_shape(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int64_t s = attr_i(x->n, "start", 0), e = attr_i(x->n, "end", INT64_MAX);
	int64_t len, *v, k;

	if (!a)
		return fail(x, "input 0 missing");
	if (s < 0)
		s = s + a->rank < 0 ? 0 : s + a->rank;
	if (e < 0)
		e = e + a->rank < 0 ? 0 : e + a->rank;
	s = s > a->rank ? a->rank : s;
	e = e > a->rank ? a->rank : e;
	len = e > s ? e - s : 0;
	set_shape(o, OX_INT64, 1, &len);
	v = new_val(x, o, (size_t)len, 0);
	for (k = 0; v && k < len; k++)
		v[k] = a->dim[s + k];
	return 0;
}

static int op_size(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int64_t *v;

	if (!a || numel(a) < 0)
		return fail(x, "input 0 missing or too large");
	set_shape(o, OX_INT64, 0, NULL);
	v = new_val(x, o, 1, 0);
	if (v)
		v[0] = numel(a);
	return 0;
}

/* Output @o gets @a's values unchanged (a reshape of them). */
static void same_values(struct nx *x, const struct ox_tensor *a,
			struct ox_tensor *o)
{
	int64_t n;
	void *v;

	if (!o || !has_val(a))
		return;		/* an absent output, or nothing to fold */
	n = numel(o);
	if (n < 0 || n != numel(a))
		return;
	v = new_val(x, o, (size_t)n, !!a->fv);
	if (v)
		memcpy(v, a->fv ? (void *)a->fv : (void *)a->iv, n * 8);
}

static int op_reshape(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int64_t sh[OX_MAX_RANK], known = 1;
	int n, i, neg = -1, allowzero = !!attr_i(x->n, "allowzero", 0);
	__int128 p = 1;

	if (!a)
		return fail(x, "input 0 missing");
	if (in_t(x, 1)) {
		n = ints_of(in_t(x, 1), sh, OX_MAX_RANK);
	} else {
		const int64_t *s;
		size_t ns;

		s = attr_ints(x->n, "shape", &ns);	/* opset < 5 */
		n = ns <= OX_MAX_RANK ? (int)ns : -1;
		if (s && n > 0)
			memcpy(sh, s, ns * sizeof(*s));
	}
	if (n < 0)
		return 0;	/* target unknown: the caller reports it */
	for (i = 0; i < n; i++) {
		if (sh[i] == 0 && !allowzero) {
			if (i >= a->rank)
				return fail(x, "0 in shape at %d beyond the input's rank", i);
			sh[i] = a->dim[i];
		}
		if (sh[i] == -1) {
			if (neg >= 0)
				return fail(x, "two -1 in shape");
			neg = i;
			continue;
		}
		if (sh[i] < 0)
			return fail(x, "negative dimension %" PRId64 " in shape", sh[i]);
		p *= sh[i];
		if (p > INT64_MAX)
			return fail(x, "shape past 2^63 elements");
	}
	known = (int64_t)p;
	if (numel(a) < 0)
		return fail(x, "input past 2^63 elements");
	if (neg >= 0) {
		if (!known || numel(a) % known)
			return fail(x, "cannot infer -1: %" PRId64 " elements into %" PRId64 "s",
				    numel(a), known);
		sh[neg] = numel(a) / known;
	} else if (known != numel(a)) {
		return fail(x, "%" PRId64 " elements reshaped into %" PRId64,
			    numel(a), known);
	}
	set_shape(o, a->dtype, n, sh);
	same_values(x, a, o);
	return 0;
}

static int op_flatten(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t ax = attr_i(x->n, "axis", 1), dim[2];
	__int128 p = 1;
	int i;

	if (!a)
		return fail(x, "input 0 missing");
	if (ax < 0)
		ax += a->rank;
	if (ax < 0 || ax > a->rank)
		return fail(x, "axis out of range");
	if (numel(a) < 0)
		return fail(x, "input past 2^63 elements");
	for (i = 0; i < ax && p <= INT64_MAX; i++)
		p *= a->dim[i];
	if (p > INT64_MAX)	/* a 0 after it: no elements at all */
		p = 0;
	dim[0] = (int64_t)p;
	dim[1] = p ? numel(a) / (int64_t)p : 0;
	if (!p) {	/* zero outer: the inner product */
		__int128 q = 1;

		for (i = (int)ax; i < a->rank && q <= INT64_MAX; i++)
			q *= a->dim[i];
		dim[1] = q > INT64_MAX ? 0 : (int64_t)q;
	}
	set_shape(out_t(x, 0), a->dtype, 2, dim);
	same_values(x, a, out_t(x, 0));
	return 0;
}

/* Axes from attribute "axes" or input @k: count, or -1 unknown, -2 none. */
static int axes_of(struct nx *x, size_t k, int64_t *ax)
{
	const int64_t *a;
	size_t n;

	a = attr_ints(x->n, "axes", &n);
	if (a) {
		if (n > OX_MAX_RANK)
			return -1;
		memcpy(ax, a, n * sizeof(*a));
		return (int)n;
	}
	if (!in_t(x, k))
		return -2;
	if (in_t(x, k)->rank == 1 && !in_t(x, k)->dim[0])
		return -2;
	return ints_of(in_t(x, k), ax, OX_MAX_RANK);
}

static int op_squeeze(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t ax[OX_MAX_RANK], dim[OX_MAX_RANK];
	int n = axes_of(x, 1, ax), i, j, r = 0, drop[OX_MAX_RANK] = { 0 };

	if (!a)
		return fail(x, "input 0 missing");
	if (n == -1)
		return 0;
	for (i = 0; i < n; i++) {
		j = axis_of(ax[i], a->rank);
		if (j < 0 || a->dim[j] != 1)
			return fail(x, "axis %" PRId64 " is not a dimension of size 1", ax[i]);
		drop[j] = 1;
	}
	for (i = 0; i < a->rank; i++)
		if (!(n == -2 ? a->dim[i] == 1 : drop[i]))
			dim[r++] = a->dim[i];
	set_shape(out_t(x, 0), a->dtype, r, dim);
	same_values(x, a, out_t(x, 0));
	return 0;
}

static int op_unsqueeze(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t ax[OX_MAX_RANK], dim[OX_MAX_RANK];
	int n = axes_of(x, 1, ax), i, j, r, ins[OX_MAX_RANK] = { 0 };

	if (!a)
		return fail(x, "input 0 missing");
	if (n == -1)
		return 0;
	if (n < 0)
		return fail(x, "no axes");
	r = a->rank + n;
	if (r > OX_MAX_RANK)
		return fail(x, "rank above %d", OX_MAX_RANK);
	for (i = 0; i < n; i++) {
		j = axis_of(ax[i], r);
		if (j < 0 || ins[j])
			return fail(x, "axis %" PRId64 " out of range or repeated", ax[i]);
		ins[j] = 1;
	}
	for (i = 0, j = 0; i < r; i++)
		dim[i] = ins[i] ? 1 : a->dim[j++];
	set_shape(out_t(x, 0), a->dtype, r, dim);
	same_values(x, a, out_t(x, 0));
	return 0;
}

static int op_transpose(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t dim[OX_MAX_RANK];
	int i, seen[OX_MAX_RANK] = { 0 };
	size_t np;
	const int64_t *p = attr_ints(x->n, "perm", &np);

	if (!a)
		return fail(x, "input 0 missing");
	if (p && np != (size_t)a->rank)
		return fail(x, "perm of %zu axes for rank %d", np, a->rank);
	for (i = 0; i < a->rank; i++) {
		int64_t s = p ? p[i] : a->rank - 1 - i;

		if (s < 0 || s >= a->rank || seen[s])
			return fail(x, "perm is not a permutation");
		seen[s] = 1;
		dim[i] = a->dim[s];
	}
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	return 0;
}

static int op_concat(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0), *t;
	int64_t dim[OX_MAX_RANK], n, outer = 1, inner = 1, k, j, e;
	int ax, i, vals = 1;
	__int128 sum = 0;
	size_t m, pos = 0;

	if (!a)
		return fail(x, "input 0 missing");
	ax = axis_of(attr_i(x->n, "axis", 0), a->rank);
	if (ax < 0)
		return fail(x, "axis out of range");
	memcpy(dim, a->dim, a->rank * sizeof(*dim));
	for (m = 0; m < x->nin; m++) {
		t = in_t(x, m);
		if (!t)
			continue;
		if (t->rank != a->rank)
			return fail(x, "inputs of rank %d and %d", a->rank, t->rank);
		for (i = 0; i < a->rank; i++)
			if (i != ax && t->dim[i] != a->dim[i])
				return fail(x, "inputs differ on axis %d", i);
		sum += t->dim[ax];
		vals &= has_val(t);
	}
	if (sum > INT64_MAX)
		return fail(x, "axis past 2^63");
	dim[ax] = (int64_t)sum;
	set_shape(o, a->dtype, a->rank, dim);
	n = o ? numel(o) : -1;
	if (!vals || n <= 0 || !new_val(x, o, (size_t)n, val_float(o)))
		return 0;
	for (i = 0; i < ax; i++)
		outer *= dim[i];
	for (i = ax + 1; i < a->rank; i++)
		inner *= dim[i];
	for (k = 0; k < outer; k++) {
		for (m = 0; m < x->nin; m++) {
			t = in_t(x, m);
			if (!t)
				continue;
			e = t->dim[ax] * inner;
			for (j = 0; j < e; j++, pos++)
				put(o, pos, vd(t, k * e + j),
				    t->iv ? t->iv[k * e + j] : 0, !t->iv);
		}
	}
	return 0;
}

static int op_split(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t sp[64], dim[OX_MAX_RANK], d;
	int ax, n = -1;
	size_t k, ns;
	const int64_t *s;
	__int128 sum = 0;

	if (!a)
		return fail(x, "input 0 missing");
	if (x->nout > 64)
		return fail(x, "more than 64 outputs");
	ax = axis_of(attr_i(x->n, "axis", 0), a->rank);
	if (ax < 0)
		return fail(x, "axis out of range");
	d = a->dim[ax];
	s = attr_ints(x->n, "split", &ns);
	if (s && ns == x->nout) {
		memcpy(sp, s, ns * sizeof(*s));
		n = (int)ns;
	} else if (in_t(x, 1)) {
		n = ints_of(in_t(x, 1), sp, 64);
		if (n < 0)
			return 0;
	}
	if (n < 0) {
		/* Equal parts, the last one smaller (Split-18). */
		__int128 per = x->nout ? ((__int128)d + (__int128)x->nout - 1) /
			   (__int128)x->nout : 0;

		for (k = 0; k < x->nout; k++) {
			__int128 left = (__int128)d - (__int128)k * per;

			sp[k] = (int64_t)(left < 0 ? 0 : left < per ? left : per);
		}
		n = (int)x->nout;
	}
	if ((size_t)n != x->nout)
		return fail(x, "%d split sizes for %zu outputs", n, x->nout);
	for (k = 0; k < x->nout; k++) {
		if (sp[k] < 0)
			return fail(x, "negative split size");
		sum += sp[k];
		memcpy(dim, a->dim, a->rank * sizeof(*dim));
		dim[ax] = sp[k];
		set_shape(out_t(x, k), a->dtype, a->rank, dim);
	}
	if (sum != d)
		return fail(x, "split sizes add up to %" PRId64 ", not %" PRId64,
			    (int64_t)sum, d);
	return 0;
}

static int op_slice(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int64_t st[OX_MAX_RANK], en[OX_MAX_RANK], ax[OX_MAX_RANK];
	int64_t sp[OX_MAX_RANK], start[OX_MAX_RANK], step[OX_MAX_RANK];
	int64_t dim[OX_MAX_RANK], n;
	int ns, ne, na, nsp, i, k;

	if (!a)
		return fail(x, "input 0 missing");
	if (x->nin >= 3) {
		ns = ints_of(in_t(x, 1), st, OX_MAX_RANK);
		ne = ints_of(in_t(x, 2), en, OX_MAX_RANK);
		na = in_t(x, 3) ? ints_of(in_t(x, 3), ax, OX_MAX_RANK) : -2;
		nsp = in_t(x, 4) ? ints_of(in_t(x, 4), sp, OX_MAX_RANK) : -2;
		if (ns < 0 || ne < 0 || na == -1 || nsp == -1)
			return 0;
	} else {	/* opset < 10: attributes */
		const int64_t *p;
		size_t c;

		p = attr_ints(x->n, "starts", &c);
		ns = p && c <= OX_MAX_RANK ? (int)c : -1;
		if (ns > 0)
			memcpy(st, p, c * 8);
		p = attr_ints(x->n, "ends", &c);
		ne = p && c <= OX_MAX_RANK ? (int)c : -1;
		if (ne > 0)
			memcpy(en, p, c * 8);
		p = attr_ints(x->n, "axes", &c);
		na = p && c <= OX_MAX_RANK ? (int)c : -2;
		if (na > 0)
			memcpy(ax, p, c * 8);
		nsp = -2;
		if (ns < 0 || ne < 0)
			return fail(x, "no starts or ends");
	}
	if (ns != ne || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
		return fail(x, "starts, ends, axes and steps differ in length");
	for (i = 0; i < a->rank; i++) {
		start[i] = 0;
		step[i] = 1;
		dim[i] = a->dim[i];
	}
	for (k = 0; k < ns; k++) {
		__int128 s = st[k], e = en[k], D, len;
		int64_t p = nsp >= 0 ? sp[k] : 1;

		i = axis_of(na >= 0 ? ax[k] : k, a->rank);
		if (i < 0 || !p)
			return fail(x, "axis out of range or step 0");
		D = a->dim[i];
		if (s < 0)
			s += D;
		if (e < 0)
			e += D;
		if (p > 0) {
			s = s < 0 ? 0 : s > D ? D : s;
			e = e < 0 ? 0 : e > D ? D : e;
			len = e > s ? (e - s + p - 1) / p : 0;
		} else {
			s = s < 0 ? 0 : s > D - 1 ? D - 1 : s;
			e = e < -1 ? -1 : e > D - 1 ? D - 1 : e;
			len = s > e ? (s - e + (-(__int128)p) - 1) / -(__int128)p : 0;
		}
		start[i] = (int64_t)s;
		step[i] = p;
		dim[i] = (int64_t)len;
	}
	set_shape(o, a->dtype, a->rank, dim);
	n = o ? numel(o) : -1;
	if (!has_val(a) || n < 0 || !new_val(x, o, (size_t)n, val_float(o)))
		return 0;
	for (k = 0; k < n; k++) {
		int64_t rem = k, off = 0, stride = 1;

		for (i = a->rank - 1; i >= 0; i--) {
			int64_t c = rem % dim[i];

			rem /= dim[i];
			off += (start[i] + c * step[i]) * stride;
			stride *= a->dim[i];
		}
		put(o, (size_t)k, vd(a, off), a->iv ? a->iv[off] : 0, !a->iv);
	}
	return 0;
}

static int op_gather(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *id = in_t(x, 1), *o = out_t(x, 0);
	int64_t dim[OX_MAX_RANK], outer = 1, inner = 1, n, k, j, m, D;
	int ax, i, r = 0;

	if (!a || !id)
		return fail(x, "needs data and indices");
	ax = axis_of(attr_i(x->n, "axis", 0), a->rank);
	if (ax < 0)
		return fail(x, "axis out of range");
	if (a->rank - 1 + id->rank > OX_MAX_RANK)
		return fail(x, "rank above %d", OX_MAX_RANK);
	for (i = 0; i < ax; i++)
		dim[r++] = a->dim[i];
	for (i = 0; i < id->rank; i++)
		dim[r++] = id->dim[i];
	for (i = ax + 1; i < a->rank; i++)
		dim[r++] = a->dim[i];
	set_shape(o, a->dtype, r, dim);
	n = o ? numel(o) : -1;
	m = numel(id);
	if (!has_val(a) || !has_val(id) || n <= 0 || m < 0 ||
	    !new_val(x, o, (size_t)n, val_float(o)))
		return 0;
	D = a->dim[ax];
	for (i = 0; i < ax; i++)
		outer *= a->dim[i];
	for (i = ax + 1; i < a->rank; i++)
		inner *= a->dim[i];
	for (k = 0; k < outer; k++) {
		for (j = 0; j < m; j++) {
			int64_t q, e;

			if (id->iv) {
				q = id->iv[j];
			} else if (fits_i64(id->fv[j])) {
				q = (int64_t)id->fv[j];
			} else {
				ox_drop_value(o);
				return fail(x, "index %g out of range", id->fv[j]);
			}
			if (q < 0)
				q += D;
			if (q < 0 || q >= D) {
				ox_drop_value(o);
				return fail(x, "index %" PRId64 " out of range", q);
			}
			for (e = 0; e < inner; e++) {
				size_t from = (size_t)((k * D + q) * inner + e);
				size_t to = (size_t)((k * m + j) * inner + e);

				put(o, to, vd(a, from), a->iv ? a->iv[from] : 0,
				    !a->iv);
			}
		}
	}
	return 0;
}

static int op_gather_elements(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *id = in_t(x, 1);

	if (!a || !id)
		return fail(x, "needs data and indices");
	set_shape(out_t(x, 0), a->dtype, id->rank, id->dim);
	return 0;
}

static int op_gather_nd(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *id = in_t(x, 1);
	int64_t dim[OX_MAX_RANK], b = attr_i(x->n, "batch_dims", 0), last;
	int r = 0, i;

	if (!a || !id || id->rank < 1)
		return fail(x, "needs data and indices");
	last = id->dim[id->rank - 1];
	if (b < 0 || b + last > a->rank)
		return fail(x, "indices reach past the data's rank");
	for (i = 0; i < id->rank - 1; i++)
		dim[r++] = id->dim[i];
	for (i = (int)(b + last); i < a->rank && r < OX_MAX_RANK; i++)
		dim[r++] = a->dim[i];
	set_shape(out_t(x, 0), a->dtype, r, dim);
	return 0;
}

/* ReduceX and ArgMax/ArgMin. */
static int op_reduce(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int64_t ax[OX_MAX_RANK], dim[OX_MAX_RANK];
	int keep = !!attr_i(x->n, "keepdims", 1), n, i, r = 0;
	int red[OX_MAX_RANK] = { 0 };
	int arg = !strncmp(x->n->op_type, "Arg", 3);

	if (!a)
		return fail(x, "input 0 missing");
	if (arg) {
		ax[0] = attr_i(x->n, "axis", 0);
		n = 1;
	} else {
		n = axes_of(x, 1, ax);
	}
	if (n == -1)
		return 0;
	if (n == -2 && attr_i(x->n, "noop_with_empty_axes", 0)) {
		copy_shape(o, a);
		same_values(x, a, o);
		return 0;
	}
	for (i = 0; i < n; i++) {
		int j = axis_of(ax[i], a->rank);

		if (j < 0)
			return fail(x, "axis %" PRId64 " out of range", ax[i]);
		red[j] = 1;
	}
	for (i = 0; i < a->rank; i++) {
		if (n == -2 || red[i]) {
			if (keep)
				dim[r++] = 1;
		} else {
			dim[r++] = a->dim[i];
		}
	}
	set_shape(o, arg ? OX_INT64 : a->dtype, r, dim);
	/* The product or sum of a shape vector (numel computations). */
	if (!arg && a->rank <= 1 && a->iv && o && numel(o) == 1) {
		int64_t acc = 0, k, m = numel(a), *v;
		int prod = !strcmp(x->n->op_type, "ReduceProd");
		int sum = !strcmp(x->n->op_type, "ReduceSum");

		if (!prod && !sum)
			return 0;
		acc = prod;
		for (k = 0; k < m; k++)
			if (prod ? __builtin_mul_overflow(acc, a->iv[k], &acc) :
			    __builtin_add_overflow(acc, a->iv[k], &acc))
				return 0;
		v = new_val(x, o, 1, 0);
		if (v)
			v[0] = acc;
	}
	return 0;
}

static int op_pad(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t p[2 * OX_MAX_RANK], ax[OX_MAX_RANK], dim[OX_MAX_RANK];
	int np, na, i, k;

	if (!a)
		return fail(x, "input 0 missing");
	if (in_t(x, 1)) {
		np = ints_of(in_t(x, 1), p, 2 * OX_MAX_RANK);
	} else {
		size_t c;
		const int64_t *v = attr_ints(x->n, "pads", &c);

		np = v && c <= 2 * OX_MAX_RANK ? (int)c : -1;
		if (np > 0)
			memcpy(p, v, c * 8);
	}
	if (np < 0)
		return 0;
	na = in_t(x, 3) ? ints_of(in_t(x, 3), ax, OX_MAX_RANK) : -2;
	if (na == -1)
		return 0;
	if (na == -2) {
		na = a->rank;
		for (i = 0; i < na; i++)
			ax[i] = i;
	}
	if (np != 2 * na)
		return fail(x, "%d pads for %d axes", np, na);
	memcpy(dim, a->dim, a->rank * sizeof(*dim));
	for (k = 0; k < na; k++) {
		__int128 d;

		i = axis_of(ax[k], a->rank);
		if (i < 0)
			return fail(x, "axis out of range");
		d = (__int128)dim[i] + p[k] + p[na + k];
		if (d < 0 || d > INT64_MAX)
			return fail(x, "padded size out of range on axis %d", i);
		dim[i] = (int64_t)d;
	}
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	return 0;
}

static int op_resize(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *sc, *sz;
	int64_t dim[OX_MAX_RANK], ax[OX_MAX_RANK], v[OX_MAX_RANK];
	int i, k, na, up = !strcmp(x->n->op_type, "Upsample");
	size_t c;
	const int64_t *pa;
	const Onnx__AttributeProto *fs;

	if (!a)
		return fail(x, "input 0 missing");
	pa = attr_ints(x->n, "axes", &c);
	na = pa && c <= OX_MAX_RANK ? (int)c : a->rank;
	for (i = 0; i < na; i++)
		ax[i] = pa ? pa[i] : i;
	memcpy(dim, a->dim, a->rank * sizeof(*dim));
	sc = in_t(x, up || x->nin == 2 ? 1 : 2);
	sz = up ? NULL : in_t(x, 3);
	fs = ox_attr(x->n, "scales");	/* Upsample-7, Resize-10 none */
	if (sz && numel(sz) > 0) {
		if (ints_of(sz, v, OX_MAX_RANK) != na)
			return 0;
		for (k = 0; k < na; k++) {
			i = axis_of(ax[k], a->rank);
			if (i < 0 || v[k] < 0)
				return fail(x, "bad axes or sizes");
			dim[i] = v[k];
		}
	} else if ((sc && has_val(sc) && numel(sc) == na) ||
		   (up && !sc && fs && fs->n_floats == (size_t)na)) {
		for (k = 0; k < na; k++) {
			double s = sc ? vd(sc, k) : fs->floats[k];
			double d;

			i = axis_of(ax[k], a->rank);
			d = floor((double)a->dim[i >= 0 ? i : 0] * s);
			if (i < 0 || !(d >= 0 && d < 9.2e18))
				return fail(x, "bad axes or scales");
			dim[i] = (int64_t)d;
		}
	} else {
		return 0;
	}
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	return 0;
}

static int op_expand(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0), sh;
	int64_t v[OX_MAX_RANK], dim[OX_MAX_RANK], n, k;
	int nv = ints_of(in_t(x, 1), v, OX_MAX_RANK), rank, ret;

	if (!a)
		return fail(x, "input 0 missing");
	if (nv < 0)
		return 0;
	sh.rank = nv;
	for (k = 0; k < nv; k++) {
		if (v[k] < 0)
			return fail(x, "negative dimension in shape");
		sh.dim[k] = v[k];
	}
	ret = bcast(x, (struct ox_tensor *[]){ a, &sh }, 2, &rank, dim);
	if (ret || !o)
		return ret;
	set_shape(o, a->dtype, rank, dim);
	n = numel(o);
	if (!has_val(a) || n < 0 || !new_val(x, o, (size_t)n, val_float(o)))
		return 0;
	for (k = 0; k < n; k++) {
		size_t i = bidx(o, a, k);

		put(o, (size_t)k, vd(a, i), a->iv ? a->iv[i] : 0, !a->iv);
	}
	return 0;
}

static int op_tile(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t v[OX_MAX_RANK], dim[OX_MAX_RANK];
	int n = ints_of(in_t(x, 1), v, OX_MAX_RANK), i;

	if (!a)
		return fail(x, "input 0 missing");
	if (n < 0)
		return 0;
	if (n != a->rank)
		return fail(x, "%d repeats for rank %d", n, a->rank);
	for (i = 0; i < n; i++) {
		__int128 d = (__int128)a->dim[i] * v[i];

		if (v[i] < 0 || d > INT64_MAX)
			return fail(x, "repeats out of range");
		dim[i] = (int64_t)d;
	}
	set_shape(out_t(x, 0), a->dtype, n, dim);
	return 0;
}

static int op_constant_of_shape(struct nx *x)
{
	struct ox_tensor *o = out_t(x, 0), val;
	const Onnx__AttributeProto *va = ox_attr(x->n, "value");
	int64_t v[OX_MAX_RANK], n, k;
	int nv = ints_of(in_t(x, 0), v, OX_MAX_RANK), ret;
	double fill = 0;
	int64_t ifill = 0;

	if (!in_t(x, 0))
		return fail(x, "input 0 missing");
	if (nv < 0 || !o)
		return 0;
	for (k = 0; k < nv; k++)
		if (v[k] < 0)
			return fail(x, "negative dimension in shape");
	memset(&val, 0, sizeof(val));
	val.dtype = OX_FLOAT;
	if (va && va->t) {
		char what[96], name[48];

		snprintf(what, sizeof(what), "node '%s' (op ConstantOfShape): value",
			 ox_node_name(x->n, x->idx, name, sizeof(name)));
		ret = ox_read_tensor(x->c, va->t, &val, what);
		if (ret)
			return ret;
		if (has_val(&val) && numel(&val) == 1) {
			fill = vd(&val, 0);
			ifill = val.iv ? val.iv[0] : (int64_t)0;
		}
	}
	set_shape(o, val.dtype, nv, v);
	n = numel(o);
	if (n >= 0 && (!va || has_val(&val)) &&
	    new_val(x, o, (size_t)n, val_float(o)))
		for (k = 0; k < n; k++)
			put(o, (size_t)k, fill, ifill, !val.iv);
	ox_drop_value(&val);
	if (n < 0)
		return fail(x, "shape past 2^63 elements");
	return 0;
}

static int op_range(struct nx *x)
{
	struct ox_tensor *s = in_t(x, 0), *l = in_t(x, 1), *d = in_t(x, 2);
	struct ox_tensor *o = out_t(x, 0);
	int64_t n, k;
	double cnt;

	if (!s || !l || !d)
		return fail(x, "needs start, limit and delta");
	if (!has_val(s) || !has_val(l) || !has_val(d))
		return 0;
	if (numel(s) != 1 || numel(l) != 1 || numel(d) != 1 || !vd(d, 0))
		return fail(x, "start, limit and delta must be scalars, delta not 0");
	if (s->iv && l->iv && d->iv) {
		__int128 c = ((__int128)l->iv[0] - s->iv[0] + d->iv[0] +
			  (d->iv[0] > 0 ? -1 : 1)) / d->iv[0];

		cnt = c < 0 ? 0 : (double)c;
	} else {
		cnt = ceil((vd(l, 0) - vd(s, 0)) / vd(d, 0));
	}
	if (!(cnt >= 0))
		cnt = 0;
	if (cnt > 9.2e18)
		return fail(x, "range past 2^63 elements");
	n = (int64_t)cnt;
	set_shape(o, s->dtype, 1, &n);
	if (o && new_val(x, o, (size_t)n, val_float(o)))
		for (k = 0; k < n; k++)
			put(o, (size_t)k, vd(s, 0) + (double)k * vd(d, 0),
			    s->iv && d->iv ? s->iv[0] + k * d->iv[0] : 0,
			    !(s->iv && d->iv));
	return 0;
}

static int op_topk(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t dim[OX_MAX_RANK], k;
	int ax;

	if (!a)
		return fail(x, "input 0 missing");
	if (in_t(x, 1)) {
		if (ints_of(in_t(x, 1), &k, 1) != 1)
			return 0;
	} else {
		k = attr_i(x->n, "k", -1);
	}
	ax = axis_of(attr_i(x->n, "axis", -1), a->rank);
	if (ax < 0 || k < 0 || k > a->dim[ax])
		return fail(x, "axis or k out of range");
	memcpy(dim, a->dim, a->rank * sizeof(*dim));
	dim[ax] = k;
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	set_shape(out_t(x, 1), OX_INT64, a->rank, dim);
	return 0;
}

static int op_constant(struct nx *x)
{
	struct ox_tensor *o = out_t(x, 0);
	const Onnx__AttributeProto *a;
	int64_t n, k;

	if (!o)
		return 0;
	a = ox_attr(x->n, "value");
	if (a && a->t) {
		char what[96], name[48];

		snprintf(what, sizeof(what), "node '%s' (op Constant): value",
			 ox_node_name(x->n, x->idx, name, sizeof(name)));
		return ox_read_tensor(x->c, a->t, o, what);
	}
	a = ox_attr(x->n, "value_int");
	if (a && a->has_i) {
		set_shape(o, OX_INT64, 0, NULL);
		if (new_val(x, o, 1, 0))
			o->iv[0] = a->i;
		return 0;
	}
	a = ox_attr(x->n, "value_float");
	if (a && a->has_f) {
		set_shape(o, OX_FLOAT, 0, NULL);
		if (new_val(x, o, 1, 1))
			o->fv[0] = a->f;
		return 0;
	}
	a = ox_attr(x->n, "value_ints");
	if (a) {
		n = (int64_t)a->n_ints;
		set_shape(o, OX_INT64, 1, &n);
		if (new_val(x, o, a->n_ints, 0))
			memcpy(o->iv, a->ints, a->n_ints * 8);
		return 0;
	}
	a = ox_attr(x->n, "value_floats");
	if (a) {
		n = (int64_t)a->n_floats;
		set_shape(o, OX_FLOAT, 1, &n);
		if (new_val(x, o, a->n_floats, 1))
			for (k = 0; k < n; k++)
				o->fv[k] = a->floats[k];
		return 0;
	}
	return fail(x, "no value, value_int(s) or value_float(s) (strings and sparse values are not supported)");
}

/* LSTM, GRU, RNN: Y, Y_h (and Y_c). */
static int op_rnn(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t h = attr_i(x->n, "hidden_size", -1), nd, dim[4];
	int layout = !!attr_i(x->n, "layout", 0);
	int64_t seq, batch;

	if (!a || a->rank != 3)
		return fail(x, "input 0 needs rank 3");
	if (h < 0 && in_t(x, 2) && in_t(x, 2)->rank == 3)
		h = in_t(x, 2)->dim[2];	/* R: [dirs, gates*h, h] */
	if (h < 0)
		return fail(x, "no hidden_size");
	nd = attr_is(x->n, "direction", "bidirectional", 0) ? 2 : 1;
	seq = a->dim[layout ? 1 : 0];
	batch = a->dim[layout ? 0 : 1];
	/* layout 0: Y [seq, dirs, batch, h]; layout 1: [batch, seq, dirs, h] */
	dim[0] = layout ? batch : seq;
	dim[1] = layout ? seq : nd;
	dim[2] = layout ? nd : batch;
	dim[3] = h;
	set_shape(out_t(x, 0), a->dtype, 4, dim);
	/* Y_h, Y_c: [dirs, batch, h] or [batch, dirs, h] */
	dim[0] = layout ? batch : nd;
	dim[1] = layout ? nd : batch;
	dim[2] = h;
	set_shape(out_t(x, 1), a->dtype, 3, dim);
	set_shape(out_t(x, 2), a->dtype, 3, dim);
	return 0;
}

static int op_depth_space(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0);
	int64_t b = attr_i(x->n, "blocksize", 0), dim[4];
	int d2s = !strcmp(x->n->op_type, "DepthToSpace");

	if (!a || a->rank != 4 || b < 1 || b > (1 << 20))
		return fail(x, "needs rank 4 and a blocksize");
	dim[0] = a->dim[0];
	if (d2s) {
		if (a->dim[1] % (b * b) || a->dim[2] > INT64_MAX / b ||
		    a->dim[3] > INT64_MAX / b)
			return fail(x, "channels not a multiple of blocksize^2");
		dim[1] = a->dim[1] / (b * b);
		dim[2] = a->dim[2] * b;
		dim[3] = a->dim[3] * b;
	} else {
		if (a->dim[2] % b || a->dim[3] % b ||
		    a->dim[1] > INT64_MAX / (b * b))
			return fail(x, "height or width not a multiple of blocksize");
		dim[1] = a->dim[1] * b * b;
		dim[2] = a->dim[2] / b;
		dim[3] = a->dim[3] / b;
	}
	set_shape(out_t(x, 0), a->dtype, 4, dim);
	return 0;
}

static int op_onehot(struct nx *x)
{
	struct ox_tensor *id = in_t(x, 0), *v = in_t(x, 2);
	int64_t depth, dim[OX_MAX_RANK];
	int ax, i, j;

	if (!id || !in_t(x, 1) || !v)
		return fail(x, "needs indices, depth and values");
	if (!has_val(in_t(x, 1)) || numel(in_t(x, 1)) != 1)
		return 0;
	if (!(vd(in_t(x, 1), 0) >= 0 && vd(in_t(x, 1), 0) < 9.2e18))
		return fail(x, "depth out of range");
	depth = (int64_t)vd(in_t(x, 1), 0);
	if (id->rank + 1 > OX_MAX_RANK)
		return fail(x, "depth or rank out of range");
	ax = axis_of(attr_i(x->n, "axis", -1), id->rank + 1);
	if (ax < 0)
		return fail(x, "axis out of range");
	for (i = 0, j = 0; i <= id->rank; i++)
		dim[i] = i == ax ? depth : id->dim[j++];
	set_shape(out_t(x, 0), v->dtype, id->rank + 1, dim);
	return 0;
}

static int op_grid_sample(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *gr = in_t(x, 1);
	int64_t dim[OX_MAX_RANK];
	int i;

	if (!a || !gr || a->rank < 3 || gr->rank != a->rank)
		return fail(x, "needs X and a grid of its rank");
	dim[0] = a->dim[0];
	dim[1] = a->dim[1];
	for (i = 2; i < a->rank; i++)
		dim[i] = gr->dim[i - 1];
	set_shape(out_t(x, 0), a->dtype, a->rank, dim);
	return 0;
}

static int op_roi_align(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *r = in_t(x, 1);
	int64_t dim[4];

	if (!a || !r || a->rank != 4 || r->rank != 2)
		return fail(x, "needs X of rank 4 and rois of rank 2");
	dim[0] = r->dim[0];
	dim[1] = a->dim[1];
	dim[2] = attr_i(x->n, "output_height", 1);
	dim[3] = attr_i(x->n, "output_width", 1);
	if (dim[2] < 0 || dim[3] < 0)
		return fail(x, "negative output size");
	set_shape(out_t(x, 0), a->dtype, 4, dim);
	return 0;
}

static int op_quant(struct nx *x)
{
	struct ox_tensor *a = in_t(x, 0), *o = out_t(x, 0);
	int q = !strcmp(x->n->op_type, "QuantizeLinear");

	if (!a)
		return fail(x, "input 0 missing");
	copy_shape(o, a);
	if (o)
		o->dtype = q ? (in_t(x, 2) ? in_t(x, 2)->dtype : OX_UINT8) :
			   (in_t(x, 1) ? in_t(x, 1)->dtype : OX_FLOAT);
	return 0;
}

/* EyeLike, RandomNormalLike, RandomUniformLike: shape of input 0. */
static int op_like(struct nx *x)
{
	int ret = op_same(x);

	if (!ret && out_t(x, 0) && ox_attr(x->n, "dtype"))
		out_t(x, 0)->dtype = (int32_t)attr_i(x->n, "dtype", OX_FLOAT);
	return ret;
}

static int op_random(struct nx *x)
{
	size_t n;
	const int64_t *s = attr_ints(x->n, "shape", &n);
	size_t i;

	if (!s || n > OX_MAX_RANK)
		return fail(x, "no shape");
	for (i = 0; i < n; i++)
		if (s[i] < 0)
			return fail(x, "negative dimension");
	set_shape(out_t(x, 0), (int32_t)attr_i(x->n, "dtype", OX_FLOAT),
		  (int)n, s);
	return 0;
}

static int op_control_flow(struct nx *x)
{
	return fail(x, "control flow (subgraphs) is not supported");
}

/* ------------------------------------------------------------ the table */

/* In place: input 0 (IP0) or any input of the same bytes (IPN). */
#define IP0	1u
#define IPN	2u

struct op_desc {
	const char *name;
	int (*fn)(struct nx *x);
	unsigned int flags;
};

/* Sorted by name (strcmp) for bsearch. */
static const struct op_desc ops[] = {
	{ "Abs", op_unary, IP0 },
	{ "Acos", op_unary, IP0 },
	{ "Acosh", op_unary, IP0 },
	{ "Add", op_bcast, IPN },
	{ "And", op_bcast, IPN },
	{ "ArgMax", op_reduce, 0 },
	{ "ArgMin", op_reduce, 0 },
	{ "Asin", op_unary, IP0 },
	{ "Asinh", op_unary, IP0 },
	{ "Atan", op_unary, IP0 },
	{ "Atanh", op_unary, IP0 },
	{ "AveragePool", op_pool, 0 },
	{ "BatchNormalization", op_batchnorm, IP0 },
	{ "BitShift", op_bcast, IPN },
	{ "Cast", op_cast, IP0 },
	{ "CastLike", op_cast, IP0 },
	{ "Ceil", op_unary, IP0 },
	{ "Celu", op_unary, IP0 },
	{ "Clip", op_unary, IP0 },
	{ "Concat", op_concat, 0 },
	{ "Constant", op_constant, 0 },
	{ "ConstantOfShape", op_constant_of_shape, 0 },
	{ "Conv", op_conv, 0 },
	{ "ConvTranspose", op_convt, 0 },
	{ "Cos", op_unary, IP0 },
	{ "Cosh", op_unary, IP0 },
	{ "CumSum", op_same, 0 },
	{ "DepthToSpace", op_depth_space, 0 },
	{ "DequantizeLinear", op_quant, 0 },
	{ "Div", op_bcast, IPN },
	{ "Dropout", op_unary, IP0 },
	{ "Elu", op_unary, IP0 },
	{ "Equal", op_bcast, IPN },
	{ "Erf", op_unary, IP0 },
	{ "Exp", op_unary, IP0 },
	{ "Expand", op_expand, 0 },
	{ "EyeLike", op_like, 0 },
	{ "Flatten", op_flatten, IP0 },
	{ "Floor", op_unary, IP0 },
	{ "GRU", op_rnn, 0 },
	{ "Gather", op_gather, 0 },
	{ "GatherElements", op_gather_elements, 0 },
	{ "GatherND", op_gather_nd, 0 },
	{ "Gelu", op_unary, IP0 },
	{ "Gemm", op_gemm, 0 },
	{ "GlobalAveragePool", op_global_pool, 0 },
	{ "GlobalLpPool", op_global_pool, 0 },
	{ "GlobalMaxPool", op_global_pool, 0 },
	{ "Greater", op_bcast, IPN },
	{ "GreaterOrEqual", op_bcast, IPN },
	{ "GridSample", op_grid_sample, 0 },
	{ "GroupNormalization", op_same, 0 },
	{ "HardSigmoid", op_unary, IP0 },
	{ "HardSwish", op_unary, IP0 },
	{ "Hardmax", op_same, 0 },
	{ "Identity", op_unary, IP0 },
	{ "If", op_control_flow, 0 },
	{ "InstanceNormalization", op_same, 0 },
	{ "IsInf", op_unary, IP0 },
	{ "IsNaN", op_unary, IP0 },
	{ "LRN", op_same, 0 },
	{ "LSTM", op_rnn, 0 },
	{ "LayerNormalization", op_layernorm, 0 },
	{ "LeakyRelu", op_unary, IP0 },
	{ "Less", op_bcast, IPN },
	{ "LessOrEqual", op_bcast, IPN },
	{ "Log", op_unary, IP0 },
	{ "LogSoftmax", op_same, 0 },
	{ "Loop", op_control_flow, 0 },
	{ "LpNormalization", op_same, 0 },
	{ "LpPool", op_pool, 0 },
	{ "MatMul", op_matmul, 0 },
	{ "MatMulInteger", op_matmul, 0 },
	{ "Max", op_bcast, IPN },
	{ "MaxPool", op_pool, 0 },
	{ "Mean", op_bcast, IPN },
	{ "MeanVarianceNormalization", op_same, 0 },
	{ "Min", op_bcast, IPN },
	{ "Mish", op_unary, IP0 },
	{ "Mod", op_bcast, IPN },
	{ "Mul", op_bcast, IPN },
	{ "Neg", op_unary, IP0 },
	{ "Not", op_unary, IP0 },
	{ "OneHot", op_onehot, 0 },
	{ "Or", op_bcast, IPN },
	{ "PRelu", op_bcast, IP0 },
	{ "Pad", op_pad, 0 },
	{ "Pow", op_bcast, IPN },
	{ "QLinearMatMul", op_matmul, 0 },
	{ "QuantizeLinear", op_quant, 0 },
	{ "RNN", op_rnn, 0 },
	{ "RandomNormal", op_random, 0 },
	{ "RandomNormalLike", op_like, 0 },
	{ "RandomUniform", op_random, 0 },
	{ "RandomUniformLike", op_like, 0 },
	{ "Range", op_range, 0 },
	{ "Reciprocal", op_unary, IP0 },
	{ "ReduceL1", op_reduce, 0 },
	{ "ReduceL2", op_reduce, 0 },
	{ "ReduceLogSum", op_reduce, 0 },
	{ "ReduceLogSumExp", op_reduce, 0 },
	{ "ReduceMax", op_reduce, 0 },
	{ "ReduceMean", op_reduce, 0 },
	{ "ReduceMin", op_reduce, 0 },
	{ "ReduceProd", op_reduce, 0 },
	{ "ReduceSum", op_reduce, 0 },
	{ "ReduceSumSquare", op_reduce, 0 },
	{ "Relu", op_unary, IP0 },
	{ "Reshape", op_reshape, IP0 },
	{ "Resize", op_resize, 0 },
	{ "RoiAlign", op_roi_align, 0 },
	{ "Round", op_unary, IP0 },
	{ "Scan", op_control_flow, 0 },
	{ "Scatter", op_same, 0 },
	{ "ScatterElements", op_same, 0 },
	{ "ScatterND", op_same, 0 },
	{ "Selu", op_unary, IP0 },
	{ "Shape", op_shape, 0 },
	{ "Shrink", op_unary, IP0 },
	{ "Sigmoid", op_unary, IP0 },
	{ "Sign", op_unary, IP0 },
	{ "Sin", op_unary, IP0 },
	{ "Sinh", op_unary, IP0 },
	{ "Size", op_size, 0 },
	{ "Slice", op_slice, 0 },
	{ "Softmax", op_same, 0 },
	{ "Softplus", op_unary, IP0 },
	{ "Softsign", op_unary, IP0 },
	{ "SpaceToDepth", op_depth_space, 0 },
	{ "Split", op_split, 0 },
	{ "Sqrt", op_unary, IP0 },
	{ "Squeeze", op_squeeze, IP0 },
	{ "Sub", op_bcast, IPN },
	{ "Sum", op_bcast, IPN },
	{ "Tan", op_unary, IP0 },
	{ "Tanh", op_unary, IP0 },
	{ "ThresholdedRelu", op_unary, IP0 },
	{ "Tile", op_tile, 0 },
	{ "TopK", op_topk, 0 },
	{ "Transpose", op_transpose, 0 },
	{ "Trilu", op_same, 0 },
	{ "Unsqueeze", op_unsqueeze, IP0 },
	{ "Upsample", op_resize, 0 },
	{ "Where", op_where, IPN },
	{ "Xor", op_bcast, IPN },
};

static int cmp_op(const void *k, const void *e)
{
	return strcmp(k, ((const struct op_desc *)e)->name);
}

/* The ONNX operator @n runs, or NULL (another domain, or not known here). */
static const struct op_desc *find_op(const Onnx__NodeProto *n)
{
	if (!n->op_type)
		return NULL;
	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
		return NULL;
	return bsearch(n->op_type, ops, sizeof(ops) / sizeof(ops[0]),
		       sizeof(ops[0]), cmp_op);
}

int ox_op_known(const Onnx__NodeProto *n)
{
	return find_op(n) != NULL;
}

unsigned int ox_inplace_inputs(const Onnx__NodeProto *n, size_t nin)
{
	const struct op_desc *d = find_op(n);

	if (!d || !nin)
		return 0;
	if (d->flags & IP0)
		return 1;
	if (d->flags & IPN)
		return nin >= 32 ? ~0u : (1u << nin) - 1;
	return 0;
}

int ox_elementwise(const Onnx__NodeProto *n)
{
	const struct op_desc *d = find_op(n);

	if (!d || !strcmp(d->name, "Dropout") || !strcmp(d->name, "Identity"))
		return 0;
	return d->fn == op_unary || d->fn == op_cast || d->fn == op_bcast ||
	       d->fn == op_where;
}

int ox_infer(struct ox_ctx *c, const Onnx__NodeProto *n, int idx,
	     const int *in, size_t nin, const int *out, size_t nout)
{
	struct nx x = { c, n, idx, in, nin, out, nout };
	const struct op_desc *d = find_op(n);
	size_t k;

	for (k = 0; k < n->n_attribute; k++) {
		const Onnx__AttributeProto *a = n->attribute[k];

		if (a->g || a->n_graphs)
			return op_control_flow(&x);
	}
	if (!d)
		return 0;
	return d->fn(&x);
}
