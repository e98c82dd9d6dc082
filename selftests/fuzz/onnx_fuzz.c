// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: md_graph_from_onnx() (lib/onnx.c, lib/onnx_shape.c) on
 * arbitrary bytes, with import options picked by the input's hash
 * (symbolic dims, a float storage type, weights in or out).
 *
 * The importer returns 0, -EINVAL with a reason, or -EOVERFLOW; never
 * prints, never aborts. A model it accepts has every tensor found by its
 * name and figures that add up; if small it is planned and the plan must
 * pass the independent all-pairs check (fuzz.h).
 */
#include <errno.h>

#include <metadef/graph.h>
#include <metadef/onnx.h>

#include "fuzz.h"

#define MAX_TENSORS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct md_onnx_dim dims[] = {
		{ "batch", 2 }, { "N", 1 }, { "seq", 8 }, { "sequence", 16 },
		{ "batch_size", 3 }, { "height", 32 }, { "width", 32 },
	};
	uint64_t h = fuzz_hash(data, size);
	struct md_onnx_opts o = {
		.dims = dims,
		.ndims = h & 1 ? sizeof(dims) / sizeof(dims[0]) : 0,
		.dtype = (enum md_onnx_dtype)((h >> 1) % 4),
		.flags = (h >> 3) & 1 ? MD_ONNX_NO_WEIGHTS : 0,
	};
	struct md_onnx_stats st;
	struct md_graph_plan gp;
	struct md_graph *g;
	struct md_error err;
	size_t i, n;
	int ret;

	if (md_graph_new(&g))
		return 0;
	memset(&err, 0x5a, sizeof(err));
	ret = md_graph_from_onnx(g, data, size, &o, &st, &err);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -EOVERFLOW ||
		   ret == -ENOMEM, "import returned %d", ret);
	FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)), "message not terminated");
	FUZZ_CHECK(err.line == 0, "line %u", err.line);
	if (ret) {
		FUZZ_CHECK(ret == -ENOMEM || err.msg[0], "no reason given for %d", ret);
		goto out;
	}
	FUZZ_CHECK(!err.msg[0], "a message on success: %s", err.msg);
	n = md_graph_tensor_count(g);
	FUZZ_CHECK(n == st.tensors, "%zu tensors, stats say %zu", n, st.tensors);
	FUZZ_CHECK(st.inferred <= n && st.inplace <= n, "figures past the tensors");
	for (i = 0; i < n; i++)
		FUZZ_CHECK(md_graph_find(g, md_graph_tensor_name(g, (int)i)) == (int)i,
			   "tensor %zu ('%s') not found by its name", i,
			   md_graph_tensor_name(g, (int)i));
	if (n > MAX_TENSORS)
		goto out;
	ret = md_graph_plan(g, NULL, &gp);
	FUZZ_CHECK(ret == 0 || ret == -EOVERFLOW, "md_graph_plan returned %d", ret);
	if (ret)
		goto out;
	FUZZ_CHECK(!md_plan_validate(&gp.problem, gp.plan.offsets, NULL),
		   "plan does not validate");
	fuzz_check_plan(&gp.problem, gp.plan.offsets, "onnx plan");
	md_graph_plan_free(&gp);
out:
	md_graph_free(g);
	return 0;
}
