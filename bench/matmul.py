"""impl.kernels.matmul against PyTorch: accuracy (ulps against the float64 product) and speed
(`bendtorch study matmul [--kb 8 16 32]`).

Per reference shape (standard normal inputs, seed 0): max / median ulps (oracle.ulp.ulp_error) of torch's float32
matmul (2 threads) and of impl's blocked-tree order for each KB, and the largest error relative to the matmul error
scale 2^-24 sum_k |A[i,k] B[k,j]| (which near-cancelling outputs do not dominate); then GFLOP/s, best of a few runs
(the machine may be shared).
"""

from __future__ import annotations

from typing import Any, Sequence

import numba
import numpy as np

from bendtorch.impl.kernels.matmul import KB, mm

REF_SHAPES = [(64, 32, 32), (64, 576, 64), (128, 576, 576), (128, 576, 1536), (128, 1536, 576), (576, 128, 576),
              (128, 576, 49152), (128, 49152, 576)]
SPEED_SHAPES = [(128, 576, 576), (128, 576, 1536), (128, 1536, 576), (576, 128, 576), (128, 576, 49152),
                (128, 49152, 576)]


def run(kb: Sequence[int] = (KB,), accuracy_only: bool = False) -> dict[str, Any]:
    """The errors of torch's matmul and of impl's for each block length in kb, per shape of REF_SHAPES; then (unless
    accuracy_only) the GFLOP/s of impl's and torch's on SPEED_SHAPES."""
    import time

    import torch

    from bendtorch.oracle.ulp import ulp_error

    torch.set_num_threads(2)
    numba.set_num_threads(2)
    rng = np.random.default_rng(0)
    u = 2.0 ** -24
    names = ["torch"] + [f"impl KB={q}" for q in kb]
    accuracy = []
    for m, k, n in REF_SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        exact = a64 @ b64
        scale = u * (np.abs(a64) @ np.abs(b64))
        outs = [(torch.from_numpy(a) @ torch.from_numpy(b)).numpy()] + [mm(a, b, q) for q in kb]
        errors = {}
        for name, o in zip(names, outs):
            e = ulp_error(o, exact)
            r = np.abs(o.astype(np.float64) - exact) / scale
            errors[name] = {"max_ulp": float(e.max()), "median_ulp": float(np.median(e)), "max_scaled": float(r.max())}
        accuracy.append({"shape": [m, k, n], "errors": errors})
    speed = []
    for m, k, n in [] if accuracy_only else SPEED_SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        reps = 20 if k * n < 10 ** 6 else 3
        best = [np.inf, np.inf]
        mm(a, b)
        ta @ tb
        for _ in range(reps):  # best of reps: the machine may be shared
            t0 = time.perf_counter()
            mm(a, b)
            t1 = time.perf_counter()
            ta @ tb
            t2 = time.perf_counter()
            best = [min(best[0], t1 - t0), min(best[1], t2 - t1)]
        speed.append({"shape": [m, k, n], "impl_gflops": 2 * m * k * n / best[0] / 1e9,
                      "torch_gflops": 2 * m * k * n / best[1] / 1e9})
    return {"threads": 2, "kb": list(kb), "libraries": names, "accuracy": accuracy, "speed": speed}


def text(r: dict[str, Any]) -> str:
    """The errors as a table (max / median ulps [max scaled error]), then the GFLOP/s."""
    rows = ["max / median ulps (ulp_error against the float64 product); [max |err| / (2^-24 sum_k |A B|)]",
            "shape | " + " | ".join(r["libraries"])]
    for a in r["accuracy"]:
        m, k, n = a["shape"]
        rows.append(f"({m}x{k})@({k}x{n})" + "".join(
            f" | {e['max_ulp']:.0f} / {e['median_ulp']:.2f} [{e['max_scaled']:.2f}]" for e in a["errors"].values()))
    for sp in r["speed"]:
        m, k, n = sp["shape"]
        rows.append(f"({m}x{k})@({k}x{n}): impl {sp['impl_gflops']:.1f} GFLOP/s, "
                    f"torch {sp['torch_gflops']:.1f} GFLOP/s")
    return "\n".join(rows)
