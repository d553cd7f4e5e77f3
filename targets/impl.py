"""The conformance target `impl`: the laws' operations on bendtorch.impl's layers (the seed's float32 semantics).

impl keeps a matrix of n rows of features (n = b*t for attention, a query head's hd columns side by side); this
adapter moves the laws' (b, heads, t, hd) arrays in and out of that layout. Cross-entropy's per-row terms are not
applicable: impl's CrossEntropy returns the mean over the rows only (the seed's loss, main.bend line 2894)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Iterator, Sequence

import numba
import numpy as np

import bendtorch.impl as L
from bendtorch.impl.checkpoint import train_restore, train_save
from bendtorch.impl.kernels.erf import erf as impl_erf
from bendtorch.impl.layers.rows import LN
from bendtorch.impl.llama import LlamaCfg, build, named
from bendtorch.impl.optim import CMomentum, CSGD, adam, adamw, opt_at, opt_mat, state_new
from bendtorch.impl.packed import bf16_of_f32
from bendtorch.impl.train import train_new, train_step
from bendtorch.records.targets import TargetRecord
from bendtorch.targets.base import F32, NotApplicable, NotRun, Opt, Target, as_f32, thread_count


# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("impl", "bendtorch.targets.impl:make",
                      "bendtorch.impl's layers: the seed's float32 semantics",
                      libraries=("numba", "numpy"), own=True, rank=0)


def _cfg(opt: Opt) -> Any:
    if opt.name == "sgd":
        if opt.wd:
            raise NotApplicable("impl sgd: the seed's SGD has no weight decay")
        return CSGD(F32(opt.lr))
    if opt.name == "momentum":
        if opt.wd:
            raise NotApplicable("impl momentum: the seed's momentum SGD has no weight decay")
        return CMomentum(F32(opt.lr), F32(opt.mu))
    if opt.name == "adam":
        return adam(lr=opt.lr, b1=opt.b1, b2=opt.b2, eps=opt.eps, wd=opt.wd)
    if opt.name == "adamw":
        return adamw(lr=opt.lr, b1=opt.b1, b2=opt.b2, eps=opt.eps, wd=opt.wd)
    raise ValueError(f"unknown optimizer {opt.name!r}")


def _to_rows(a: Any) -> Any:
    """(b, heads, t, hd) -> (b*t, heads*hd): head j's hd columns at j*hd (impl's head_cols)."""
    b, h, t, hd = a.shape
    return as_f32(np.transpose(a, (0, 2, 1, 3)).reshape(b * t, h * hd))


def _from_rows(a: Any, b: int, h: int, t: int, hd: int) -> Any:
    return as_f32(np.transpose(a.reshape(b, t, h, hd), (0, 2, 1, 3)))


class Impl(Target):
    name = "impl"

    def versions(self) -> dict[str, str]:
        return {"numba": numba.__version__, "numpy": np.__version__}

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        n, i = x.shape
        o = w.shape[0]
        if b is None:
            return L.LinearNB(n, i, o).fwd(as_f32(w), as_f32(x)).y
        return L.Linear(n, i, o).fwd(L.Lin(as_f32(w), as_f32(b).reshape(1, o)), as_f32(x)).y

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        n, d = x.shape
        return L.RMSNorm(n, d, eps).fwd(as_f32(w).reshape(1, d), as_f32(x)).y

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        n, d = x.shape
        return L.LayerNorm(n, d, eps).fwd(LN(as_f32(w).reshape(1, d), as_f32(b).reshape(1, d)), as_f32(x)).y

    def softmax(self, x: Any) -> Any:
        return L.Softmax(*x.shape).fwd(None, as_f32(x)).y

    def log_softmax(self, x: Any) -> Any:
        return L.LogSoftmax(*x.shape).fwd(None, as_f32(x)).y

    def ce_rows(self, z: Any, labels: Any) -> Any:
        raise NotApplicable("impl cross-entropy: the seed's CrossEntropy returns only the mean over the rows "
                            "(main.bend line 2894), no per-row term")

    def _attn(self, q: Any, k: Any, sc: float) -> tuple[Any, int, int, int, int, int]:
        b, h, t, hd = q.shape
        kv = k.shape[1]
        return L.Attention(b * t, h * hd, kv * hd, b, t, kv, h // kv, hd, F32(sc)), b, h, t, hd, kv

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        lay, b, h, t, hd, kv = self._attn(q, k, sc)
        y = lay.fwd(None, (_to_rows(q), (_to_rows(k), _to_rows(v)))).y
        return _from_rows(y, b, h, t, hd)

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        lay, b, h, t, hd, kv = self._attn(q, k, sc)
        f = lay.fwd(None, (_to_rows(q), (_to_rows(k), _to_rows(v))))
        dq, (dk, dv) = lay.bwd(None, f.s, _to_rows(do), None).dx
        return _from_rows(dq, b, h, t, hd), _from_rows(dk, b, kv, t, hd), _from_rows(dv, b, kv, t, hd)

    def dropout(self, x: Any, p: float) -> Any:
        n, c = x.shape
        return L.Dropout(n, c, p, 0).fwd(L.DropP(0), as_f32(x)).y

    def bf16_bits(self, x: Any) -> Any:
        a = as_f32(x)
        return bf16_of_f32(a).astype(np.uint16).reshape(a.shape)

    def erf(self, x: Any) -> Any:
        a = as_f32(x)
        return impl_erf(a.reshape(-1)).reshape(a.shape)

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        b, t = tokens.shape
        m = build(L, cfg, b)
        return m.layer.fwd(m.init(seed), np.asarray(tokens, np.int64).reshape(-1)).y.reshape(b, t, cfg.vocab)

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        b = batches[0][0].shape[0]
        m = build(L, cfg, b)
        oc = _cfg(opt)
        tr = train_new(m.layer, oc, m.init(seed))
        losses = []
        for s, (x, y) in enumerate(batches):
            if s == save_at:
                with tempfile.TemporaryDirectory() as tmp:
                    path = os.path.join(tmp, "ck.bin")
                    train_save(m.layer, path, tr)
                    tr = train_restore(m.layer, train_new(m.layer, oc, m.layer.zeros()), path)
            tr = train_step(m.layer, m.loss, oc, tr, np.asarray(x, np.int64).reshape(-1),
                            np.asarray(y, np.int64).reshape(-1))
            losses.append(tr.loss)
        return {k: as_f32(v) for k, v in named(m.names, tr.p).items()}, np.array(losses, F32)

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        oc = _cfg(opt)
        ps = [as_f32(p) for p in params]
        sts = [state_new(oc, lambda p=p: np.zeros_like(p)) for p in ps]
        q1 = q2 = F32(0.0)
        c1, c2 = getattr(oc, "c1", F32(0.0)), getattr(oc, "c2", F32(0.0))
        for gs in grads:
            q1 = F32(q1 + F32(c1 * F32(F32(1.0) - q1)))
            q2 = F32(q2 + F32(c2 * F32(F32(1.0) - q2)))
            op = opt_at(oc, q1, q2)
            for j, g in enumerate(gs):
                r = opt_mat(op, ps[j], as_f32(g), sts[j])
                ps[j], sts[j] = r.p, r.st
        return ps

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        """numba's kernels on k threads; NotRun where numba has fewer (NUMBA_NUM_THREADS fixes the most at start):
        a law comparing 1 and 2 threads that ran both on one would compare nothing."""
        most = int(getattr(numba.config, "NUMBA_NUM_THREADS"))
        if k > most:
            raise NotRun(f"impl threads: numba has {most} thread{'s' if most > 1 else ''} (NUMBA_NUM_THREADS), not "
                         f"{k}")
        with thread_count(numba.get_num_threads, numba.set_num_threads, k):
            yield


def make(device: str = "cpu") -> Target:
    return Impl(device)
