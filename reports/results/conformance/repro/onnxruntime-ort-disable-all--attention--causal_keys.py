"""onnxruntime (ORT_DISABLE_ALL) against the conformance law attention/causal_keys (bit for bit (any later keys, inf
and NaN included)): outputs at positions 0..0 after the later keys became inf.

Found by bendtorch's conformance laws on AMD EPYC (family 26, model 2), 2 cores: 4 of 8 elements differ; first at
(0, 0, 0, 0): 7fc00000 against 3e419736. Run with python; it prints how many elements differ and the first, as bit
patterns (got against want).
"""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def run(nodes, feeds, inits=None):
    """The one output y of a graph of the nodes at opset 24, on the CPU provider with ORT_DISABLE_ALL, one thread."""
    g = helper.make_graph(nodes, "op", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                                        for k, v in feeds.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)]),
                                          strict_mode=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(["y"], feeds)[0]


def attention(q, k, v, sc):
    return run([helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1, scale=float(sc))],
               {"q": q, "k": k, "v": v})


q = f32("""
    3e00bf6c be07467f 3f23f2bd 3dd6d5df bf0921a1 3eb922fd 3fa6e979 3f7273e6
    bf3427fe bfa1f955 bf1f8eea 3d29456e c014cd4e be600aec bf9f7a03 bf3b75e0
    bf0b548f bea1f218 3ed2c13d 3f857114 be039e97 3faee846 bf2a4a33 3eb3f921
""", (1, 2, 3, 4))
k = f32("""
    3eb0f069 3f525591 3ea92f0c bfa6cddb 3f67c567 3ee48b35 bf0975c4 3f14c428
    3ebaa93c 3e969889 3ce8d5c3 3f0bf562
""", (1, 1, 3, 4))
v = f32("""
    3e419736 bf05d2d8 bed37d11 c01c4100 3fe65cd0 3f927407 bea69dd2 3f461830
    3e8ffad8 bf0dc755 3f7a41dc be9f0145
""", (1, 1, 3, 4))
k2 = f32("""
    3eb0f069 3f525591 3ea92f0c bfa6cddb 7f800000 7f800000 7f800000 7f800000
    7f800000 7f800000 7f800000 7f800000
""", (1, 1, 3, 4))
scale = 1.0
i = 0

got = attention(q, k2, v, scale)[:, :, :i + 1]
want = attention(q, k, v, scale)[:, :, :i + 1]

g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
bad = g.view(np.uint32) != w.view(np.uint32)
bad &= ~(np.isnan(g) & np.isnan(w))  # a NaN matches any NaN
idx = np.argwhere(bad)
print(f"{int(bad.sum())} of {bad.size} elements differ", end="")
if idx.size:
    k = tuple(int(a) for a in idx[0])
    print(f"; first at {k}: {g[k].view(np.uint32):08x} ({float(g[k])!r}) against "
          f"{w[k].view(np.uint32):08x} ({float(w[k])!r})")
else:
    print()
