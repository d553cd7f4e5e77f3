"""Helpers for the error-analysis notebooks (notebooks/0*.py, each paired with its .ipynb). Import it first:

    import nbutil as U

Importing it runs numba's parallel kernels on one thread unless the caller set NUMBA_NUM_THREADS: the notebooks'
arrays are small, and numba's thread pool costs more than it saves on a tiny Llama step (much more on a loaded
machine). impl's kernels give the same bits on any thread count, so the figures do not change. PyTorch runs float32 on
2 threads (reference.torch_ref.torch_mod).

The notebooks take from the library what the library has (training impl, the oracle and PyTorch from the same
weights, drift and distributions over seeds: bendtorch.reference.trio; the Adam c2 study: reference.adam_c2).
What lives here (nothing in impl/ is changed):
- sizes: `size()` reads BENDTORCH_NB_SIZE ("small", the default and CI's, or "full");
- `banner()`, `verdict(v)`: the first and the last lines every notebook prints; `finding(name)`: a measured result
  committed under reports/results/findings/ (the command that made it is inside), `machine_of(result)` the machine
  it was measured on;
- the variants the seed replaced, written as numba kernels in the seed's float32 order so that impl can be set beside
  them: cross-entropy with a running float32 sum of exponentials (`ce_rows_running`), cross-entropy's old pick
  loss - log(max(p[y], 1e-12)) (`ce_rows_oldpick`), and RMSNorm / LayerNorm whose row sums are pairwise (impl's
  tree_sum order) instead of left to right (`rms_fwd_pairwise`, `ln_fwd_pairwise`);
- `normwise_u(x, exact)`: max |x - exact| / max |exact| in units of u = 2^-24.
"""

from __future__ import annotations

import json
import math
import os
import time
from importlib import resources
from typing import Any

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from bendtorch.impl.kernels.losses import tree_sum_inplace  # noqa: E402
from bendtorch.impl.kernels.rows import row_max  # noqa: E402

F32 = np.float32
U = 2.0 ** -24
F = npt.NDArray[np.float32]
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TINY = np.float32(0.000000000001)


def size() -> str:
    """"small" (default; what CI runs) or "full", from the environment variable BENDTORCH_NB_SIZE."""
    s = os.environ.get("BENDTORCH_NB_SIZE", "small").strip().lower()
    if s not in ("small", "full"):
        raise ValueError(f"BENDTORCH_NB_SIZE must be small or full, got {s!r}")
    return s


def banner() -> Any:
    """torch (float32, 2 threads), after printing its version, its threads and the notebook's size."""
    t = torch()
    print("torch", t.__version__, "threads", t.get_num_threads(), "| size:", size())
    return t


def verdict(v: dict[str, Any]) -> None:
    """The verdict, printed, then again as one JSON line (tests/test_notebooks.py reads it)."""
    print(v)
    print("VERDICT_JSON", json.dumps(v))


def finding(name: str) -> dict[str, Any] | None:
    """reports/results/findings/<name>.json (a measured result with the command that made it), or None."""
    p = resources.files("bendtorch.reports").joinpath("results", "findings", name + ".json")
    if not p.is_file():
        return None
    r: dict[str, Any] = json.loads(p.read_text())
    return r


def machine_of(result: dict[str, Any]) -> str:
    """The machine a result was measured on, in one line (records.machine.describe); an older result without a
    machine record gives the library versions it recorded."""
    from bendtorch.records.machine import describe
    if "machine" not in result:
        return ", ".join(f"{k} {v}" for k, v in result.get("versions", {}).items()) or describe(None)
    return describe(result["machine"], ["torch"])


def torch() -> Any:
    """torch, float32, on 2 threads (reference.torch_ref.torch_mod)."""
    from bendtorch.reference.torch_ref import torch_mod
    return torch_mod()


def normwise_u(x: Any, exact: Any) -> float:
    """max |x - exact| / max |exact|, in units of u = 2^-24 (float32's unit roundoff)."""
    x64 = np.asarray(x, dtype=np.float64)
    e64 = np.asarray(exact, dtype=np.float64)
    return float(np.max(np.abs(x64 - e64)) / np.max(np.abs(e64)) / U)


class Timer:
    """with Timer() as t: ...; t.s is the elapsed seconds."""

    def __enter__(self) -> "Timer":
        self.t0 = time.perf_counter()
        self.s = 0.0
        return self

    def __exit__(self, *a: Any) -> None:
        self.s = time.perf_counter() - self.t0


# ---------------------------------------------------------------------------------------------------------------
# sums
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def squares_running(x: F) -> np.float32:
    """sum of x[k]*x[k], left to right from +0.0 (ssq's order, main.bend line 1562)."""
    s = _ZERO
    for k in range(x.size):
        s = s + x[k] * x[k]
    return s


# ---------------------------------------------------------------------------------------------------------------
# cross-entropy variants, one term per row: term = loss of the row (what the seed subtracts, negated)
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def ce_rows_running(z: F, lab: npt.NDArray[np.int64]) -> F:
    """Each row's loss (z[y] - m) - log(s) negated, with s the running float32 sum of exp(z[j] - m) from +0.0
    (pexp's order, main.bend line 1334): the sum cross-entropy used before tree_sum (line 2811)."""
    n, c = z.shape
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        m = row_max(z, i)
        s = _ZERO
        for j in range(c):
            s = s + math.exp(z[i, j] - m)
        out[i] = -((z[i, lab[i]] - m) - math.log(s))
    return out


@numba.njit(cache=True)
def _row_exps(z: F, i: int, e: F) -> np.float32:
    """e[j] = exp(z[i, j] - m) for the row's max m (pmax0, pexp: main.bend lines 1326, 1334); m comes back."""
    m = row_max(z, i)
    for j in range(z.shape[1]):
        e[j] = math.exp(z[i, j] - m)
    return m


@numba.njit(cache=True)
def ce_rows_tree(z: F, lab: npt.NDArray[np.int64]) -> F:
    """The same with s = tree_sum of the exponentials: impl's CrossEntropy row term (main.bend line 2849)."""
    n, c = z.shape
    out = np.empty(n, dtype=np.float32)
    e = np.empty(c, dtype=np.float32)
    for i in range(n):
        m = _row_exps(z, i, e)
        s = tree_sum_inplace(e, c)
        out[i] = -((z[i, lab[i]] - m) - math.log(s))
    return out


@numba.njit(cache=True)
def ce_rows_oldpick(z: F, lab: npt.NDArray[np.int64]) -> F:
    """The old pick (main.bend line 2848): each row's loss -log(max(p[y], 1e-12)), p[y] = exp(z[y] - m) / s with s
    the tree sum, F32.max(a, b) = b if a < b else a."""
    n, c = z.shape
    out = np.empty(n, dtype=np.float32)
    e = np.empty(c, dtype=np.float32)
    for i in range(n):
        _row_exps(z, i, e)
        py = e[lab[i]]
        s = tree_sum_inplace(e, c)
        p = py / s
        p = _TINY if p < _TINY else p
        out[i] = -math.log(p)
    return out


def ce_rows_oracle(z: Any, lab: Any) -> npt.NDArray[np.float64]:
    """Each row's loss from the oracle's CrossEntropy (float64, exact to a few float64 ulps), one row at a time."""
    from bendtorch import oracle
    z64 = np.asarray(z, dtype=np.float64)
    n, c = z64.shape
    loss = oracle.CrossEntropy(1, c)
    return np.array([float(loss(z64[i:i + 1], np.asarray(lab[i:i + 1], np.int64)).loss) for i in range(n)])


def ce_rows_torch(z: Any, lab: Any) -> F:
    """Each row's loss from torch.nn.functional.cross_entropy(reduction="none"), float32, 2 threads."""
    t = torch()
    with t.no_grad():
        r = t.nn.functional.cross_entropy(t.from_numpy(np.ascontiguousarray(z, F32)),
                                          t.from_numpy(np.asarray(lab, np.int64)), reduction="none")
    return np.asarray(r.numpy(), F32)


def ce_rows_impl(z: Any, lab: Any) -> F:
    """Each row's loss from impl's CrossEntropy layer (1 row at a time, so the mean over 1 row is the row's term)."""
    from bendtorch import impl
    z32 = np.ascontiguousarray(z, F32)
    n, c = z32.shape
    loss = impl.CrossEntropy(1, c)
    return np.array([loss(z32[i:i + 1].copy(), np.asarray(lab[i:i + 1], np.int64)).loss for i in range(n)], F32)


# ---------------------------------------------------------------------------------------------------------------
# RMSNorm and LayerNorm with pairwise row sums (the same expressions as impl.kernels.rows, another order)
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def rms_fwd_pairwise(x: F, g: F, eps: np.float32) -> F:
    """RMSNorm's forward (main.bend line 1589) with the row's sum of squares taken by tree_sum instead of left to
    right: r = 1 / sqrt(s / d + eps); y = g * (x * r)."""
    n, d = x.shape
    df = np.float32(d)
    y = np.empty((n, d), dtype=np.float32)
    q = np.empty(d, dtype=np.float32)
    for i in range(n):
        for j in range(d):
            q[j] = x[i, j] * x[i, j]
        s = tree_sum_inplace(q, d)
        r = _ONE / math.sqrt(s / df + eps)
        for j in range(d):
            y[i, j] = g[0, j] * (x[i, j] * r)
    return y


@numba.njit(cache=True)
def ln_fwd_pairwise(x: F, g: F, b: F, eps: np.float32) -> F:
    """LayerNorm's forward (main.bend line 1728) with the row's sum and its sum of centred squares taken by tree_sum
    instead of left to right: mu = sum / d; v = sum (x - mu)^2; r = 1 / sqrt(v / d + eps);
    y = ((x - mu) * r) * g + b."""
    n, d = x.shape
    df = np.float32(d)
    y = np.empty((n, d), dtype=np.float32)
    q = np.empty(d, dtype=np.float32)
    for i in range(n):
        for j in range(d):
            q[j] = x[i, j]
        mu = tree_sum_inplace(q, d) / df
        for j in range(d):
            q[j] = (x[i, j] - mu) * (x[i, j] - mu)
        v = tree_sum_inplace(q, d)
        r = _ONE / math.sqrt(v / df + eps)
        for j in range(d):
            y[i, j] = ((x[i, j] - mu) * r) * g[0, j] + b[0, j]
    return y


def norm_errors(kind: str, d: int, rows: int, seed: int, scale: float = 1.0, offset: float = 0.0
                ) -> dict[str, npt.NDArray[np.float64]]:
    """Per-row normwise errors (units of u) of a norm's output at width d against the oracle's (float64):
    impl (left to right), pairwise (tree_sum) and PyTorch float32. kind is "rms" (RMSNorm, PyTorch's
    F.rms_norm) or "ln" (LayerNorm, F.layer_norm). x ~ offset + scale N(0, 1); gain ~ 1 + 0.1 N(0, 1), bias
    0.1 N(0, 1)."""
    from bendtorch import impl
    from bendtorch import oracle
    t = torch()
    rng = np.random.default_rng(seed)
    x = (F32(offset) + F32(scale) * rng.standard_normal((rows, d), dtype=F32)).astype(F32)
    g = (F32(1.0) + F32(0.1) * rng.standard_normal((1, d), dtype=F32)).astype(F32)
    b = (F32(0.1) * rng.standard_normal((1, d), dtype=F32)).astype(F32)
    eps = F32(1e-5)
    if kind == "rms":
        yi = impl.RMSNorm(rows, d).fwd(g, x).y
        yo = oracle.RMSNorm(rows, d).fwd(g.astype(np.float64), x.astype(np.float64)).y
        yp = rms_fwd_pairwise(x, g, eps)
        with t.no_grad():
            yt = t.nn.functional.rms_norm(t.from_numpy(x), (d,), t.from_numpy(g.reshape(-1)), eps=1e-5).numpy()
    elif kind == "ln":
        yi = impl.LayerNorm(rows, d).fwd(impl.LN(g, b), x).y
        yo = oracle.LayerNorm(rows, d).fwd(oracle.LN(g.astype(np.float64), b.astype(np.float64)),
                                           x.astype(np.float64)).y
        yp = ln_fwd_pairwise(x, g, b, eps)
        with t.no_grad():
            yt = t.nn.functional.layer_norm(t.from_numpy(x), (d,), t.from_numpy(g.reshape(-1)),
                                            t.from_numpy(b.reshape(-1)), eps=1e-5).numpy()
    else:
        raise ValueError(kind)
    out = {}
    for name, y in (("impl", yi), ("pairwise", yp), ("torch", yt)):
        out[name] = np.array([normwise_u(y[i], yo[i]) for i in range(rows)])
    return out


# ---------------------------------------------------------------------------------------------------------------
# erf
# ---------------------------------------------------------------------------------------------------------------

def erf_full_results() -> dict[str, Any] | None:
    """The full erf sweep's report (reports/results/atlas/erf/sweep_full.json, `bendtorch sweep erf`), when it has
    been run, else None."""
    p = resources.files("bendtorch.reports").joinpath("results", "atlas", "erf", "sweep_full.json")
    if not p.is_file():
        return None
    rep: dict[str, Any] = json.loads(p.read_text())
    return rep if str(rep.get("mode", "")).startswith("full") else None


def erf_patterns(n: int, seed: int) -> npt.NDArray[np.uint32]:
    """n positive float32 bit patterns drawn uniformly at random from [0, 2^31) (an unbiased sample of the float32
    line's patterns: the sweep's evenly spaced sample keeps the low mantissa bits fixed, which biases the fraction of
    correctly rounded results), plus every special value of reports.sweep, padded to a multiple of 32 (torch's
    whole-vector loops)."""
    from bendtorch.reports import sweep as S
    rng = np.random.default_rng(seed)
    allb = np.unique(np.concatenate([rng.integers(0, 1 << 31, n, dtype=np.int64).astype(np.uint32),
                                     S.special_patterns()]))
    while allb.size % 32:
        extra = rng.integers(0, 1 << 31, (-allb.size) % 32, dtype=np.int64).astype(np.uint32)
        allb = np.unique(np.concatenate([allb, extra]))
    return allb


ERF_LIBS = ("impl", "torch", "torch_gelu_erf_aten")  # the erf entry's libraries the notebook sets side by side


def erf_sample_results(n: int, seed: int = 0) -> dict[str, Any]:
    """The erf entry's figures (reports.sweep.sweep_patterns and build_report: impl, torch.erf and PyTorch GELU's
    internal erf against the correctly rounded erf) on `erf_patterns(n, seed)` and their negatives, in this process;
    the accumulators are kept under "_tot" for plotting."""
    import torch

    from bendtorch.reports import sweep as S
    threads = numba.get_num_threads(), torch.get_num_threads()
    t0 = time.perf_counter()
    try:
        tot = S.sweep_patterns("erf", list(ERF_LIBS), erf_patterns(n, seed), workers=1, progress=False)
    finally:  # the sweep's worker runs numba and torch on one thread each
        numba.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])
    n_in = 2 * int(tot["impl"]["n_patterns"][0])
    rep: dict[str, Any] = S.build_report("erf", tot, f"random sample ({n_in} inputs)",
                                         f"nbutil.erf_sample_results({n}, {seed})", 1)
    rep["seconds"] = time.perf_counter() - t0
    rep["_tot"] = tot
    return rep
