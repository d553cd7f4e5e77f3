"""The seed's orders at scale: where a left-to-right float32 sum, or a float32 angle, loses to PyTorch's choice.

- Softmax (main.bend lines 1370-1376): each row's exponentials are summed left to right (pexp, line 1334); the
  normwise error of the output grows with the row width. Measured against the float64 oracle for impl's Softmax, the
  same exponentials summed pairwise (impl's tree_sum, main.bend line 2808) and torch.softmax, at widths up to 49152
  (SmolLM2's vocabulary).
- Cross-entropy's loss value (line 2894): the per-row terms are summed left to right in float32 and divided by n
  (impl.kernels.losses.ce_into), so the loss's error grows with the number of rows. Measured against the oracle for
  impl, for impl's own per-row terms summed by tree_sum, and for F.cross_entropy, at n up to 8192.
- RoPE's table (rope_ang, line 2133): inv[c] and pos * inv[c] are each rounded to float32, so the error of cos and
  sin grows linearly with the position. Measured for impl's table, Hugging Face's float32 rotary code (the
  expression of reference.torch_llama.TorchLlama) and impl's precise option (impl.kernels.rope_precise), against
  the float64 angles of oracle.rope, for bases 1e4 and 1e5, at positions up to 8192.

Errors are in units of u = 2^-24 (float32's unit roundoff): normwise max |y - y64| / max |y64| for Softmax, relative
|L - L64| / |L64| for the loss, max over c of |cos - cos64| and |sin - sin64| for RoPE (|cos|, |sin| <= 1, so that is
the normwise error of the rotation). Softmax and cross-entropy draw random logits, so their figures are
distributions over seeds (median and range, seeds listed); the RoPE table has no randomness.

`softmax_study`, `ce_study`, `rope_study` return JSON-able dicts, `study` all three with their verdict; `plot` draws
them (`bendtorch study orders`).
"""

from __future__ import annotations

import math
import pathlib
import time
from typing import Any, Sequence

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.losses import tree_sum_inplace
from bendtorch.impl.kernels.rows import row_max
from bendtorch.reference import trio

F32 = np.float32
U = 2.0 ** -24
F = npt.NDArray[np.float32]
SOFTMAX_WIDTHS = (64, 256, 1024, 4096, 16384, 49152)
CE_ROWS = (1, 4, 16, 64, 256, 1024, 2048, 4096, 8192)
ROPE_BASES = (1e4, 1e5)


def _torch() -> Any:
    from bendtorch.reference.torch_ref import torch_mod
    return torch_mod()


def normwise_u(y: Any, exact: Any) -> float:
    """max |y - exact| / max |exact| in units of u."""
    y64, e64 = np.asarray(y, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    return float(np.max(np.abs(y64 - e64)) / np.max(np.abs(e64)) / U)


# ---- Softmax ---------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def softmax_pairwise(x: F) -> F:
    """impl's Softmax expressions (m = row max, e = exp(x - m), y = e / s) with s the tree_sum of the row's
    exponentials instead of their left-to-right sum."""
    n, c = x.shape
    y = np.empty((n, c), dtype=np.float32)
    e = np.empty(c, dtype=np.float32)
    for i in range(n):
        m = row_max(x, i)
        for j in range(c):
            y[i, j] = math.exp(x[i, j] - m)
            e[j] = y[i, j]
        s = tree_sum_inplace(e, c)
        for j in range(c):
            y[i, j] = y[i, j] / s
    return y


def softmax_errors(c: int, rows: int, seed: int, scale: float = 1.0) -> dict[str, list[float]]:
    """Each row's normwise error (u) at width c for impl, pairwise and PyTorch; logits scale * N(0, 1)."""
    from bendtorch import impl, oracle
    t = _torch()
    rng = np.random.default_rng(seed)
    x = (F32(scale) * rng.standard_normal((rows, c), dtype=F32)).astype(F32)
    yo = oracle.Softmax(rows, c).fwd(None, x.astype(np.float64)).y
    with t.no_grad():
        yt = t.softmax(t.from_numpy(x), dim=1).numpy()
    ys = {"impl": impl.Softmax(rows, c).fwd(None, x).y, "pairwise": softmax_pairwise(x), "torch": yt}
    return {k: [normwise_u(y[i], yo[i]) for i in range(rows)] for k, y in ys.items()}


def softmax_study(widths: Sequence[int] = SOFTMAX_WIDTHS, seeds: Sequence[int] = tuple(range(8)), rows: int = 8,
                  scale: float = 1.0) -> dict[str, Any]:
    """Per width and method: each seed's worst row (max over `rows` rows), as a distribution over the seeds."""
    out: dict[str, Any] = {"widths": list(widths), "seeds": list(seeds), "rows": rows, "scale": scale,
                           "figure": "max over rows of the normwise error (u), distribution over seeds"}
    res: dict[str, dict[str, Any]] = {"impl": {}, "pairwise": {}, "torch": {}}
    for c in widths:
        per = {s: softmax_errors(c, rows, s, scale) for s in seeds}
        for k in res:
            res[k][str(c)] = trio.distribution({s: max(per[s][k]) for s in seeds})
    out["methods"] = res
    return out


# ---- cross-entropy's loss value ---------------------------------------------------------------------------------

def ce_errors(n: int, c: int, seed: int, scale: float = 1.0) -> dict[str, float]:
    """The loss value's relative error (u) for n rows of c classes: impl's CrossEntropy (terms summed left to right),
    impl's own per-row terms summed by tree_sum, and F.cross_entropy (mean); logits scale * N(0, 1)."""
    from bendtorch import impl, oracle
    t = _torch()
    rng = np.random.default_rng(seed)
    z = (F32(scale) * rng.standard_normal((n, c), dtype=F32)).astype(F32)
    lab = rng.integers(0, c, n).astype(np.int64)
    lo = float(oracle.CrossEntropy(n, c)(z.astype(np.float64), lab).loss)
    li = float(impl.CrossEntropy(n, c)(z, lab).loss)
    one = impl.CrossEntropy(1, c)
    terms = np.array([one(z[i:i + 1].copy(), lab[i:i + 1]).loss for i in range(n)], dtype=F32)
    lp = float(F32(tree_sum_inplace(terms, n) / F32(n)))
    with t.no_grad():
        lt = float(t.nn.functional.cross_entropy(t.from_numpy(z), t.from_numpy(lab)))
    return {k: abs(v - lo) / abs(lo) / U for k, v in (("impl", li), ("pairwise mean", lp), ("torch", lt))}


def ce_study(ns: Sequence[int] = CE_ROWS, c: int = 256, seeds: Sequence[int] = tuple(range(8)),
             scale: float = 1.0) -> dict[str, Any]:
    """Per n and method: the loss value's relative error (u), as a distribution over the seeds."""
    per = {(n, s): ce_errors(n, c, s, scale) for n in ns for s in seeds}
    methods = ("impl", "pairwise mean", "torch")
    return {"ns": list(ns), "classes": c, "seeds": list(seeds), "scale": scale,
            "figure": "relative error of the loss value (u), distribution over seeds",
            "methods": {k: {str(n): trio.distribution({s: per[(n, s)][k] for s in seeds}) for n in ns}
                        for k in methods}}


# ---- RoPE's table -------------------------------------------------------------------------------------------------

def hf_rope_table(t: int, half: int, base: float) -> tuple[F, F]:
    """Hugging Face's float32 rotary table, as reference.torch_llama.TorchLlama computes it: inv_freq = 1 / (base **
    (arange(0, 2 half, 2) / (2 half))), freqs = outer(positions, inv_freq), then cos and sin (t x half)."""
    torch = _torch()
    inv = 1.0 / (torch.tensor(base, dtype=torch.float32) **
                 (torch.arange(0, 2 * half, 2, dtype=torch.int64).to(torch.float32) / (2 * half)))
    fr = torch.outer(torch.arange(t, dtype=torch.int64).to(torch.float32), inv)
    return fr.cos().numpy(), fr.sin().numpy()


def rope_errors(t: int, half: int, base: float) -> dict[str, Any]:
    """Per position, the max over c of the cos and sin errors (u) of impl's table, Hugging Face's and impl's precise
    option, against cos and sin of oracle.rope's float64 angles; and whether impl's and Hugging Face's tables have
    the same bits."""
    from bendtorch.impl.kernels.rope import rope_table
    from bendtorch.impl.kernels.rope_precise import rope_table_precise
    from bendtorch.oracle.rope import rope_angles
    a = rope_angles(t, half, float(str(F32(base))))
    co, si = np.cos(a), np.sin(a)
    tables = {"impl": rope_table(t, half, F32(base)), "hf": hf_rope_table(t, half, base),
              "precise": rope_table_precise(t, half, F32(base))}
    out: dict[str, Any] = {"impl_equals_hf_bits": bool(all(np.array_equal(a.view(np.uint32), b.view(np.uint32))
                                                          for a, b in zip(tables["impl"], tables["hf"])))}
    for k, (cs, sn) in tables.items():
        err = np.maximum(np.abs(cs - co), np.abs(sn - si)).max(axis=1) / U
        out[k] = [float(v) for v in err]
    return out


def rope_study(t: int = 8192, half: int = 32, bases: Sequence[float] = ROPE_BASES, block: int = 8
               ) -> dict[str, Any]:
    """rope_errors per base, kept as the max over each block of `block` positions (position 0, exact for every
    table, is left out of the first block's plot only), with the maxima over the last quarter of the positions."""
    per = {f"{b:g}": rope_errors(t, half, b) for b in bases}
    meth = ("impl", "hf", "precise")
    tail = {b: {k: max(r[k][3 * t // 4:]) for k in meth} for b, r in per.items()}
    blocks = {b: {k: [max(r[k][i:i + block]) for i in range(0, t, block)] for k in meth} for b, r in per.items()}
    return {"positions": t, "half": half, "head_dim": 2 * half, "bases": [f"{b:g}" for b in bases],
            "figure": f"max over c of |cos - cos64| and |sin - sin64| (u), max over each block of {block} "
                      "positions; no randomness",
            "block": block, "block_max": blocks, "max_last_quarter": tail,
            "at_last_position": {b: {k: r[k][-1] for k in meth} for b, r in per.items()},
            "at_powers_of_two": {b: {k: {str(p): r[k][p] for p in (2 ** j for j in range(14)) if p < t}
                                     for k in meth} for b, r in per.items()},
            "impl_equals_hf_bits": {b: r["impl_equals_hf_bits"] for b, r in per.items()}}


# ---- all three -------------------------------------------------------------------------------------------------

def study(small: bool = False) -> dict[str, Any]:
    """The three studies at full size (widths to 49152, n to 8192, positions to 8192) or, small, at a size a notebook
    runs in seconds; with their verdict."""
    t0 = time.perf_counter()
    res: dict[str, Any]
    if not small:
        res = {"softmax": softmax_study(), "ce": ce_study(), "rope": rope_study()}
    else:
        res = {"softmax": softmax_study((64, 1024, 8192), seeds=(0, 1, 2), rows=4),
               "ce": ce_study((1, 64, 512, 2048), c=64, seeds=(0, 1, 2)),
               "rope": rope_study(t=2048, half=16)}
    res["seconds"] = time.perf_counter() - t0
    res["study"] = "orders"
    res["verdict"] = verdict(res)
    return res


def verdict(res: dict[str, Any]) -> dict[str, Any]:
    """At the widest row, the largest n and the last position: impl's median error against PyTorch's, and the
    precise RoPE option's largest error."""
    sm, ce, rp = res["softmax"], res["ce"], res["rope"]
    w, n = str(sm["widths"][-1]), str(ce["ns"][-1])
    return {"softmax_width": int(w), "softmax_impl_median_u": sm["methods"]["impl"][w]["median"],
            "softmax_pairwise_median_u": sm["methods"]["pairwise"][w]["median"],
            "softmax_torch_median_u": sm["methods"]["torch"][w]["median"],
            "ce_rows": int(n), "ce_impl_median_u": ce["methods"]["impl"][n]["median"],
            "ce_pairwise_mean_median_u": ce["methods"]["pairwise mean"][n]["median"],
            "ce_torch_median_u": ce["methods"]["torch"][n]["median"],
            "rope_positions": rp["positions"], "rope_max_last_quarter_u": rp["max_last_quarter"]}


FLOOR = 1e-2  # errors below 0.01 u (a loss computed exactly) are drawn at the floor of the log scale


def _band(ax: Any, xs: Sequence[int], rows: dict[str, Any], label: str, color: str) -> None:
    def get(x: int, k: str) -> float:
        return max(float(rows[str(x)][k]), FLOOR)
    ax.plot(xs, [get(x, "median") for x in xs], "o-", color=color, label=label, ms=3)
    ax.fill_between(xs, [get(x, "min") for x in xs], [get(x, "max") for x in xs], color=color, alpha=0.2)


def plot(res: dict[str, Any], path: pathlib.Path) -> None:
    """Softmax error vs width, the loss's error vs n (median line, range band over seeds), RoPE's error vs
    position per base (every position, the three tables)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sm, ce, rp = res["softmax"], res["ce"], res["rope"]
    nb = len(rp["bases"])
    fig, axes = plt.subplots(1, 2 + nb, figsize=(5 * (2 + nb), 4.2))
    labels = {"impl": "impl (left to right, the seed)", "pairwise": "pairwise (tree_sum)", "torch": "PyTorch",
              "pairwise mean": "impl's terms, tree_sum mean", "hf": "Hugging Face float32",
              "precise": "impl precise=True (float32 pairs)"}
    for i, k in enumerate(sm["methods"]):
        _band(axes[0], sm["widths"], sm["methods"][k], labels[k], f"C{i}")
    axes[0].set_title(f"Softmax, N(0, {sm['scale']:g}) logits, worst of {sm['rows']} rows; seeds "
                      f"{sm['seeds'][0]}-{sm['seeds'][-1]}", fontsize=8)
    axes[0].set_xlabel("row width")
    axes[0].set_ylabel("normwise error (u)")
    for i, k in enumerate(ce["methods"]):
        _band(axes[1], ce["ns"], ce["methods"][k], labels[k], f"C{i}")
    axes[1].set_title(f"cross-entropy loss value, {ce['classes']} classes; seeds {ce['seeds'][0]}-"
                      f"{ce['seeds'][-1]}", fontsize=8)
    axes[1].set_xlabel("rows n")
    axes[1].set_ylabel("relative error (u)")
    for ax in axes[:2]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(bottom=FLOOR)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    for ax, b in zip(axes[2:], rp["bases"]):
        start = np.arange(0, rp["positions"], rp["block"]) + rp["block"] - 1   # each block's last position
        for i, k in enumerate(("impl", "hf", "precise")):
            ax.plot(start, rp["block_max"][b][k], lw=0.8 + (k == "impl"), alpha=0.7,
                    ls="--" if k == "hf" else "-", color=f"C{i}", label=labels[k])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"RoPE table, base {b}, head dim {rp['head_dim']}", fontsize=8)
        ax.set_xlabel("position")
        ax.set_ylabel(f"cos, sin error (u), max over c and {rp['block']} positions")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    from bendtorch.records.durable import save_figure
    save_figure(fig, path, dpi=110)
