"""AdamW with packed BF16 moments (CAdamWBF16, main.bend lines 297-301): the tiny Llama's drift from float64 with
float32 moments, BF16 m, BF16 m and v, beside PyTorch's float32 AdamW, over seeds (reference/trio.py drift_study).

    bendtorch study bf16_drift --seeds 8 --out reports/results/findings
"""

from __future__ import annotations

import pathlib
from typing import Any, Callable, Sequence

from bendtorch.reference import trio


def _bf16(v16: bool) -> Callable[[trio.LlamaSetup, trio.AdamWHP], trio.Run]:
    def make(s: trio.LlamaSetup, hp: trio.AdamWHP) -> trio.Run:
        from bendtorch.impl.optim import CAdamWBF16
        a = hp.impl_cfg()
        return trio.impl_llama_run(s.impl, CAdamWBF16(a.lr, a.b1, a.b2, a.eps, a.wd, a.c1, a.c2, v16), s.p0)
    return make


VARIANTS: dict[str, Callable[[trio.LlamaSetup, trio.AdamWHP], trio.Run]] = {
    "F32 moments": lambda s, hp: trio.impl_llama_run(s.impl, hp.impl_cfg(), s.p0),
    "BF16 m": _bf16(False),
    "BF16 m and v": _bf16(True),
    "PyTorch float32": lambda s, hp: trio.torch_llama_run(s.cfg, s.b, s.weights, hp),
}


def study(seeds: Sequence[int], steps: int = 100, lr: float = 1e-3,
          progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """drift_study over VARIANTS (batches from the weights' seed), with each variant's final drift / F32's."""
    r = trio.drift_study(VARIANTS, seeds, steps, lr, progress=progress)
    r["ratio_to_f32"] = {k: trio.distribution({s: r["curves"][str(s)][k][-1] / r["curves"][str(s)]["F32 moments"][-1]
                                               for s in seeds}) for k in VARIANTS}
    r["ordered_on_every_seed"] = all(c["F32 moments"][-1] < c["BF16 m"][-1] < c["BF16 m and v"][-1]
                                     for c in r["curves"].values())
    return r


def figure(r: dict[str, Any]) -> Any:
    """Every seed's drift curve per variant (one colour per variant), the median's final value in the legend."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for i, k in enumerate(r["variants"]):
        for j, c in enumerate(r["curves"].values()):
            ax.plot(range(1, len(c[k]) + 1), c[k], ":" if k.startswith("PyTorch") else "-", color=f"C{i}",
                    alpha=0.5, lw=1, label=f"{k} (final median {r['final'][k]['median']:.2e})" if j == 0 else None)
    ax.set_yscale("log")
    ax.set_xlabel("AdamW step")
    ax.set_ylabel("||p - p64|| / ||p64||")
    ax.set_title(f"tiny Llama, lr {r['lr']:g}: drift from float64, seeds {', '.join(map(str, r['seeds']))}",
                 fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot(r: dict[str, Any], path: pathlib.Path) -> None:
    """`figure(r)` written to path (PNG), without a display."""
    trio.save_figure(figure, r, path)


def run(seeds: int = 8, steps: int = 100, lr: float = 1e-3,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """`study` on seeds 0 .. seeds-1."""
    return study(range(seeds), steps, lr, progress=progress)


def text(r: dict[str, Any]) -> str:
    """Each variant's final drift over the seeds."""
    return "\n".join(f"{k}: final drift {trio.fmt_distribution(r['final'][k])}" for k in r["variants"])
