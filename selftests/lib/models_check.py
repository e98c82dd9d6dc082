#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Checks one ONNX file metadef-models wrote, with the onnx package (run by
# models_test with /usr/bin/python3): onnx.checker.check_model, opset 17
# and IR version 8, no value_info, weights as graph inputs without data,
# and the counts given as options. With --infer (fixed batch and seq):
# onnx.shape_inference gives every node output a shape of known
# dimensions. Prints one line of what it found; exits 1 with the reason on
# the first mismatch, 3 if the onnx package is missing.
#
#   models_check.py FILE [--nodes N] [--tensors N] [--params N]
#       [--buffers N] [--elem float|float16] [--symbolic] [--infer]
#       [--output NAME=D1xD2...]...

import argparse
import sys

try:
    import onnx
    from onnx import shape_inference, TensorProto
except ImportError:
    print("onnx is not installed for", sys.executable)
    sys.exit(3)

DATA = {"input", "input_ids", "token_type_ids", "attention_mask"}


def fail(why):
    print("FAIL:", why)
    sys.exit(1)


def dims(vi):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in vi.type.tensor_type.shape.dim]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    for k in ("nodes", "tensors", "params", "buffers"):
        ap.add_argument("--" + k, type=int)
    ap.add_argument("--elem", choices=("float", "float16"))
    ap.add_argument("--symbolic", action="store_true")
    ap.add_argument("--infer", action="store_true")
    ap.add_argument("--output", action="append", default=[])
    a = ap.parse_args()

    m = onnx.load(a.file)
    onnx.checker.check_model(m, full_check=True)
    g = m.graph
    if m.ir_version != 8:
        fail("ir_version %d" % m.ir_version)
    if [(o.domain, o.version) for o in m.opset_import] != [("", 17)]:
        fail("opset %s" % m.opset_import)
    if len(g.value_info):
        fail("%d value_info entries" % len(g.value_info))
    for t in g.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if n > 8:
            fail("initializer %s holds %d values" % (t.name, n))

    names = [i.name for i in g.input] + [t.name for t in g.initializer]
    names += [o for n in g.node for o in n.output]
    if len(set(names)) != len(names):
        fail("a tensor name is defined twice")
    params = buffers = 0
    want_elem = {"float": TensorProto.FLOAT,
                 "float16": TensorProto.FLOAT16}.get(a.elem)
    for i in g.input:
        if i.name in DATA:
            sym = [d for d in dims(i) if isinstance(d, str)]
            if a.symbolic and not sym:
                fail("input %s has no symbolic dimension" % i.name)
            continue
        n = 1
        for d in dims(i):
            if not isinstance(d, int) or d <= 0:
                fail("weight %s has dimension %r" % (i.name, d))
            n *= d
        if want_elem is not None and i.type.tensor_type.elem_type != want_elem:
            fail("weight %s is of type %d" % (i.name,
                                              i.type.tensor_type.elem_type))
        if i.name.endswith(".running_mean") or i.name.endswith(".running_var"):
            buffers += n
        else:
            params += n
    found = {"nodes": len(g.node), "tensors": len(names), "params": params,
             "buffers": buffers}
    for k, v in found.items():
        want = getattr(a, k)
        if want is not None and want != v:
            fail("%s: %d, documented %d" % (k, v, want))
    line = "%s: %d nodes, %d tensors, %d parameters, %d buffers" % (
        a.file.split("/")[-1], len(g.node), len(names), params, buffers)

    if a.infer:
        # data_prop: the Shape -> Gather -> Concat shapes of the reshapes
        m2 = shape_inference.infer_shapes(m, check_type=True,
                                          strict_mode=True, data_prop=True)
        known = {v.name: v for v in list(m2.graph.value_info) +
                 list(m2.graph.output)}
        shaped = 0
        for n in m2.graph.node:
            for o in n.output:
                v = known.get(o)
                if v is None or not v.type.tensor_type.HasField("shape"):
                    fail("no shape inferred for %s (%s)" % (o, n.op_type))
                if any(not isinstance(d, int) or d <= 0 for d in dims(v)):
                    fail("%s (%s) has shape %s" % (o, n.op_type, dims(v)))
                if want_elem is not None and n.op_type not in (
                        "Shape", "Gather", "Concat", "Unsqueeze") and \
                        v.type.tensor_type.elem_type != want_elem:
                    fail("%s (%s) is of type %d" % (
                        o, n.op_type, v.type.tensor_type.elem_type))
                shaped += 1
        outs = []
        for o in m2.graph.output:
            shape = "x".join(str(d) for d in dims(known[o.name]))
            outs.append("%s %s" % (o.name, shape))
        for w in a.output:
            if w.replace("=", " ") not in outs:
                fail("output %s, got %s" % (w, outs))
        line += "; shapes inferred for all %d node outputs; %s" % (
            shaped, ", ".join(outs))
    print(line)


main()
