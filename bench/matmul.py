"""impl.kernels.matmul against PyTorch: accuracy (ulps against the float64 product) and speed.

    .venv/bin/python -m bendtorch.bench.matmul [--kb 8,16,32]

Prints, per reference shape (standard normal inputs, seed 0), max / median ulps (oracle.ulp.ulp_error) of torch's
float32 matmul (2 threads) and of impl's blocked-tree order for each KB, and in brackets the largest error relative
to the matmul error scale 2^-24 sum_k |A[i,k] B[k,j]| (which near-cancelling outputs do not dominate); then GFLOP/s,
best of a few runs (the machine is shared).
"""

from __future__ import annotations

import sys

import numba
import numpy as np

from bendtorch.impl.kernels.matmul import KB, mm

REF_SHAPES = [(64, 32, 32), (64, 576, 64), (128, 576, 576), (128, 576, 1536), (128, 1536, 576), (576, 128, 576),
              (128, 576, 49152), (128, 49152, 576)]


def _measure(argv: list[str]) -> None:
    import time

    import torch

    from bendtorch.oracle.ulp import ulp_error

    kbs = [KB]
    if "--kb" in argv:
        kbs = [int(v) for v in argv[argv.index("--kb") + 1].split(",")]
    torch.set_num_threads(2)
    numba.set_num_threads(2)
    rng = np.random.default_rng(0)
    u = 2.0 ** -24
    print("max / median ulps (ulp_error against the float64 product); [max |err| / (2^-24 sum_k |A B|)]")
    print("shape | torch | " + " | ".join(f"impl KB={q}" for q in kbs))
    for m, k, n in REF_SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        exact = a64 @ b64
        scale = u * (np.abs(a64) @ np.abs(b64))
        outs = [(torch.from_numpy(a) @ torch.from_numpy(b)).numpy()] + [mm(a, b, q) for q in kbs]
        row = f"({m}x{k})@({k}x{n})"
        for o in outs:
            e = ulp_error(o, exact)
            r = np.abs(o.astype(np.float64) - exact) / scale
            row += f" | {e.max():.0f} / {np.median(e):.2f} [{r.max():.2f}]"
        print(row, flush=True)
    for m, k, n in [(128, 576, 576), (128, 576, 1536), (128, 1536, 576), (576, 128, 576), (128, 576, 49152),
                    (128, 49152, 576)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        reps = 20 if k * n < 10 ** 6 else 3
        best = [np.inf, np.inf]
        mm(a, b)
        ta @ tb
        for _ in range(reps):  # best of reps: the machine is shared
            t0 = time.perf_counter()
            mm(a, b)
            t1 = time.perf_counter()
            ta @ tb
            t2 = time.perf_counter()
            best = [min(best[0], t1 - t0), min(best[1], t2 - t1)]
        print(f"({m}x{k})@({k}x{n}): impl {2 * m * k * n / best[0] / 1e9:.1f} GFLOP/s, "
              f"torch {2 * m * k * n / best[1] / 1e9:.1f} GFLOP/s", flush=True)


if __name__ == "__main__":
    _measure(sys.argv[1:])
