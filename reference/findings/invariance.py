"""Batch and thread invariance, measured directly: which operations give row i the same bits in every batch size, and
from which batch size PyTorch's CPU kernels change their bits.

The conformance laws (laws/test_targets.py, "batch_invariance") state the property and test it on drawn cases; this
study sweeps it through the same conformance targets (bendtorch.targets: impl's layers and torch.nn.functional,
numpy float32 in and out): for each operation and each batch size B = 1..max_batch, the first B rows of a fixed
pool are computed together and each row's bits compared with the bits that row gives alone (B = 1). For attention
the batch is B sequences and the row a whole sequence. Then the same operation on the full batch with the library on 1 and on 2 threads (impl:
numba's threads, so run with NUMBA_NUM_THREADS >= 2; PyTorch: torch.set_num_threads).

    NUMBA_NUM_THREADS=2 bendtorch study invariance
"""

from __future__ import annotations

import pathlib
import time
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from bendtorch.records.targets import RECORDS
from bendtorch.targets import NotApplicable, make_target

F32 = np.float32
Op = Callable[[Any, Any], Any]   # (library, batch) -> output whose first axis is the batch


def library(name: str) -> Any:
    """The conformance target `name` (bendtorch.targets: impl's layers, torch.nn.functional, ...), PyTorch on 2
    threads with float32 defaults as every reference comparison runs it (reference.torch_ref.torch_mod)."""
    if name == "torch":
        from bendtorch.reference.torch_ref import torch_mod
        torch_mod()
    return make_target(name)


# every built-in target, by name, made when called
LIBRARIES: dict[str, Callable[[], Any]] = {name: partial(library, name) for name in RECORDS}


def _pool(seed: int, shape: tuple[int, ...], scale: float = 1.0) -> Any:
    return (F32(scale) * np.random.default_rng(seed).standard_normal(shape, dtype=F32)).astype(F32)


def operations(width: int = 576, out: int = 256, classes: int = 4096) -> dict[str, tuple[Op, tuple[int, ...]]]:
    """name -> (f(target, batch), the shape of one pooled item). Widths: SmolLM2's model width 576 for the linear
    maps and norms, 4096 classes for the row-wise softmax family, attention over sequences of 16 positions with
    4 query heads reading 2 key/value heads of 16 numbers (scale 1/4)."""
    w, b = _pool(101, (out, width), 0.05), _pool(102, (out,))
    g, bb = (F32(1.0) + _pool(103, (width,), 0.1)).astype(F32), _pool(104, (width,), 0.1)
    h, kv, t, hd = 4, 2, 16, 16

    def labels(x: Any) -> Any:
        # a row's label follows the row (a hash of its bits), so it is the same alone and in any batch
        return (x.view(np.uint32).astype(np.int64).sum(axis=1) % classes).astype(np.int64)

    def attn(tg: Any, x: Any) -> Any:
        q, k, v = x[:, :h], x[:, h:h + kv], x[:, h + kv:]
        return tg.attention(np.ascontiguousarray(q), np.ascontiguousarray(k), np.ascontiguousarray(v), 0.25)

    return {
        "linear (x·Wᵀ + b)": (lambda tg, x: tg.linear(x, w, b), (width,)),
        "matmul (x·Wᵀ)": (lambda tg, x: tg.linear(x, w, None), (width,)),
        "rms_norm": (lambda tg, x: tg.rms_norm(x, g, 1e-5), (width,)),
        "layer_norm": (lambda tg, x: tg.layer_norm(x, g, bb, 1e-5), (width,)),
        "softmax": (lambda tg, x: tg.softmax(x), (classes,)),
        "log_softmax": (lambda tg, x: tg.log_softmax(x), (classes,)),
        "cross-entropy rows": (lambda tg, x: tg.ce_rows(x, labels(x)), (classes,)),
        "attention (per sequence)": (attn, (h + 2 * kv, t, hd)),
    }


def _bits(a: Any) -> Any:
    return np.ascontiguousarray(a, dtype=F32).view(np.uint32)


def sweep(target: Any, f: Op, item: tuple[int, ...], max_batch: int, seed: int = 0) -> dict[str, Any]:
    """Rows (items) whose bits in a batch of B differ from their bits alone, and from their bits in the largest
    batch, for B = 1..max_batch; and, at B = max_batch, whether 1 and 2 threads give the same bits."""
    pool = _pool(seed, (max_batch, *item))
    alone = [_bits(f(target, pool[i:i + 1].copy())) for i in range(max_batch)]
    largest = _bits(f(target, pool.copy()))
    changed: list[int] = []
    changed_vs_largest: list[int] = []
    for bsz in range(1, max_batch + 1):
        y = _bits(f(target, pool[:bsz].copy()))
        changed.append(sum(int(not np.array_equal(y[i:i + 1], alone[i])) for i in range(bsz)))
        changed_vs_largest.append(sum(int(not np.array_equal(y[i:i + 1], largest[i:i + 1])) for i in range(bsz)))
    first = next((bsz for bsz, c in zip(range(1, max_batch + 1), changed) if c), None)
    thr: bool | str
    try:
        with target.threads(1):
            y1 = _bits(f(target, pool.copy()))
        with target.threads(2):
            y2 = _bits(f(target, pool.copy()))
        thr = bool(np.array_equal(y1, y2))
    except Exception as e:  # noqa: BLE001 - a target without thread control says why
        thr = f"not run: {e}"
    return {"rows_changed": changed, "rows_differing_from_the_largest_batch": changed_vs_largest,
            "first_batch_with_a_change": first,
            "batch_invariant_to": max_batch if first is None else first - 1, "threads_1_vs_2_same_bits": thr}


def study(max_batch: int = 64, targets: Sequence[str] = ("impl", "torch"), seed: int = 0) -> dict[str, Any]:
    """Every operation on every library: the sweep, or the reason it does not apply."""
    import numba
    t0 = time.perf_counter()
    out: dict[str, Any] = {"study": "invariance", "max_batch": max_batch, "seed": seed,
                           "numba_threads": int(getattr(numba.config, "NUMBA_NUM_THREADS")), "targets": {}}
    for name in targets:
        tg = LIBRARIES[name]()
        res: dict[str, Any] = {}
        for op, (f, item) in operations().items():
            try:
                res[op] = sweep(tg, f, item, max_batch, seed)
            except NotApplicable as e:
                res[op] = {"not_applicable": str(e)}
        out["targets"][name] = res
    out["seconds"] = time.perf_counter() - t0
    return out


def summary(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per target and operation: "invariant to B=64" / "bits change from B=k" / not applicable, and the threads."""
    s: dict[str, dict[str, Any]] = {}
    for name, r in res["targets"].items():
        s[name] = {}
        for op, v in r.items():
            if not isinstance(v, dict):
                continue
            if "first_batch_with_a_change" in v:
                fb = v["first_batch_with_a_change"]
                vl = v["rows_differing_from_the_largest_batch"]
                among = [b + 1 for b, c in enumerate(vl) if c]
                s[name][op] = {"batch": f"same bits for B = 1..{res['max_batch']}" if fb is None
                               else f"bits change from B = {fb}",
                               "batch sizes whose bits differ from B = max": among if len(among) <= 8
                               else f"{len(among)} of {len(vl)} (first {among[0]})",
                               "threads_1_vs_2": v["threads_1_vs_2_same_bits"]}
            else:
                s[name][op] = v
    return s


def plot(res: dict[str, Any], path: pathlib.Path) -> None:
    """Per target, a map of operation x batch size: the fraction of rows whose bits differ from their bits alone."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tg = [k for k, v in res["targets"].items() if "not_run" not in v]
    fig, axes = plt.subplots(1, len(tg), figsize=(7 * len(tg), 4), squeeze=False)
    for ax, name in zip(axes[0], tg):
        ops = [k for k, v in res["targets"][name].items() if isinstance(v, dict) and "rows_changed" in v]
        m = np.array([[c / (i + 1) for i, c in enumerate(res["targets"][name][k]["rows_changed"])] for k in ops])
        im = ax.imshow(m, aspect="auto", cmap="Reds", vmin=0, vmax=1, extent=(0.5, res["max_batch"] + 0.5,
                                                                               len(ops) - 0.5, -0.5))
        ax.set_yticks(range(len(ops)))
        ax.set_yticklabels(ops, fontsize=8)
        ax.set_xlabel("batch size B")
        ax.set_title(f"{name}: fraction of rows whose bits differ from alone", fontsize=9)
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    from bendtorch.records.durable import save_figure
    save_figure(fig, path, dpi=110)


def run(max_batch: int = 64) -> dict[str, Any]:
    """`study` on impl and PyTorch with its `summary`."""
    res = study(max_batch)
    res["summary"] = summary(res)
    return res
