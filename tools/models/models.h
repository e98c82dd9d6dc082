/* SPDX-License-Identifier: GPL-2.0 */
/*
 * metadef-models: generators of real models' graphs (see models.c for
 * where every shape comes from).
 */
#ifndef METADEF_MODELS_H
#define METADEF_MODELS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum mm_dtype { MM_FP32, MM_FP16 };

/* What the command line asked for. */
struct mm_opts {
	const char *model;
	long batch;		/* 0: symbolic "batch" (ONNX); training default */
	long seq;		/* 0: symbolic "seq" (ONNX) */
	long image;		/* ResNet input height = width */
	enum mm_dtype dtype;
	bool grad_reuse;	/* per-layer optimizer update */
	long recompute;		/* 0, or keep every K-th layer's input */
	long steps, layers, hidden;	/* LSTM */
	const char *device;	/* graph format: cpu, gpu, npu */
};

/* What was generated: the --json summary. */
struct mm_summary {
	const char *format;	/* "onnx" or "graph" */
	unsigned long nodes;	/* ONNX nodes, or graph ops */
	unsigned long tensors;	/* distinct tensor names */
	unsigned long inputs;	/* graph inputs (ONNX: data + weights) */
	unsigned long initializers;
	unsigned long barriers;
	uint64_t params;	/* trainable parameters (elements) */
	uint64_t buffers;	/* non-trainable weights (BN running stats) */
	uint64_t param_bytes;	/* params + buffers, in the model's dtype */
	/* graph format: bytes by kind, and their sum (no reuse at all) */
	uint64_t tensor_bytes;
	uint64_t weight_bytes;	/* model weights (and BN statistics) */
	uint64_t master_bytes;	/* fp32 master copies (mixed precision) */
	uint64_t optim_bytes;	/* Adam m and v */
	uint64_t data_bytes;	/* the batch: images, ids, labels */
	uint64_t act_bytes;	/* forward outputs */
	uint64_t act_grad_bytes;	/* gradients of activations */
	uint64_t weight_grad_bytes;	/* gradients of weights */
	uint64_t other_bytes;	/* optimizer status words */
	/* --recompute: what the backward runs again */
	unsigned long recompute_ops, recompute_tensors, checkpoints;
	uint64_t recompute_bytes;
	/* graph format, planned here with libmetadef's defaults */
	uint64_t lower_bound;	/* most bytes alive at once */
	uint64_t peak;		/* the plan's arena */
};

/* A growing buffer of bytes (the graph-format text, a packed model). */
struct mm_out {
	char *buf;
	size_t len, cap;
};

void mm_printf(struct mm_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void *mm_zalloc(size_t n);
char *mm_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mm_free_all(void);
const char *mm_dtype_name(enum mm_dtype d);

/* Each returns 0, or a negative errno with a message on stderr. */
int mm_resnet_onnx(const struct mm_opts *o, int depth, struct mm_out *out,
		   struct mm_summary *s);
int mm_bert_onnx(const struct mm_opts *o, struct mm_out *out,
		 struct mm_summary *s);
int mm_resnet_train(const struct mm_opts *o, struct mm_out *out,
		    struct mm_summary *s);
int mm_bert_train(const struct mm_opts *o, struct mm_out *out,
		  struct mm_summary *s);
int mm_lstm(const struct mm_opts *o, struct mm_out *out,
	    struct mm_summary *s);

#endif /* METADEF_MODELS_H */
