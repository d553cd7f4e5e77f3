"""AdamW with packed BF16 moments (CAdamWBF16, main.bend lines 297-301): the tiny Llama's drift from float64 with
float32 moments, BF16 m, BF16 m and v, beside PyTorch's float32 AdamW, over seeds (reference/trio.py drift_study).

    python -m bendtorch.reference.bf16_drift --seeds 8 --out reports/results/findings/bf16_drift
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any, Callable, Sequence

from bendtorch.records.machine import impl_digest
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bendtorch.reference.bf16_drift", description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=8, help="seeds 0 .. N-1 (default 8)")
    p.add_argument("--steps", type=int, default=100, help="AdamW steps (default 100)")
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate (default 1e-3)")
    p.add_argument("--out", type=pathlib.Path, required=True, help="writes OUT.json and OUT.png")
    a = p.parse_args(argv)
    if a.seeds < 1 or a.steps < 1:
        print("bf16_drift: error: --seeds and --steps must be >= 1", file=sys.stderr)
        return 2
    fp = impl_digest()  # impl's source when the run starts
    r = study(range(a.seeds), a.steps, a.lr, progress=lambda s: print(s, file=sys.stderr, flush=True))
    r["command"] = "python -m bendtorch.reference.bf16_drift " + " ".join(argv if argv is not None else sys.argv[1:])
    r["impl_fingerprint"] = fp
    trio.write_study(r, a.out, figure)
    for k in r["variants"]:
        print(f"{k}: final drift {trio.fmt_distribution(r['final'][k])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
