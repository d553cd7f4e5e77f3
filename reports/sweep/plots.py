"""A sweep's plots: the largest ulp error against |x| per sign, binned over the float32 line, and the ulp-error
histogram, one line per library (a PNG written atomically, records.durable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bendtorch.reports.sweep.kernels import NLIN, NLOG, NXB, XSHIFT


def plots(func: str, suptitle: str, tots: dict[str, dict[str, Any]], out: Path, title: str, kind: str = "full"
          ) -> list[str]:
    """The largest ulp error against |x| per sign (binned over the float32 line) and the ulp-error histogram, one
    line per library; returns the PNG names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lows = np.arange(NXB, dtype=np.int64) << XSHIFT
    with np.errstate(invalid="ignore"):
        xl = lows.astype(np.uint32).view(np.float32).astype(np.float64)
    fig, axes = plt.subplots(1, 3, figsize=(18, 5))
    for j, (lib, tot) in enumerate(tots.items()):
        for s in range(2):
            y = tot["bmax"][s]
            ok = (y >= 0) & np.isfinite(xl) & (xl > 0)
            axes[s].step(xl[ok], np.maximum(y[ok], 1e-3), where="post", label=lib, lw=1.0, color=f"C{j}")
        h = tot["hist"]
        edges = np.concatenate([np.arange(NLIN) / 100.0,
                                np.ldexp(1.0 + (np.arange(NLOG) % 4) / 4.0, 1 + np.arange(NLOG) // 4), [np.inf]])
        xs = edges.copy()
        xs[-1] = 2 * edges[-2]
        nz = h > 0
        axes[2].plot(np.maximum(xs[nz], 1e-3), h[nz], ".-", label=lib, lw=0.8, ms=3, color=f"C{j}")
    for s in range(2):
        axes[s].set_xscale("log")
        axes[s].set_yscale("log")
        axes[s].axhline(0.5, color="grey", ls=":", lw=0.8)
        axes[s].axhline(1.0, color="grey", ls="--", lw=0.8)
        axes[s].set_xlabel("|x|, x > 0" if s == 0 else "|x|, x < 0")
        axes[s].set_ylabel("largest ulp error in the bin (1/32 binade; 0 drawn at 1e-3)")
        axes[s].grid(alpha=0.3)
    axes[2].set_xscale("log")
    axes[2].set_yscale("log")
    axes[2].set_xlabel("ulp error (0.01 bins to 2, then quarter octaves; last bin inf)")
    axes[2].set_ylabel("inputs")
    axes[2].grid(alpha=0.3)
    fig.suptitle(f"{suptitle}: ulp error against the correctly rounded float32 ({title})")
    # one legend for the three panels (the same colours), beside them: "best" places a legend by testing each spot
    # against every line's points, and tight_layout draws the figure once more to measure it (each of the two takes
    # about a second here); fixed margins instead
    fig.legend(*axes[2].get_legend_handles_labels(), loc="center right", fontsize=8)
    fig.subplots_adjust(left=0.04, right=0.925, bottom=0.1, top=0.91, wspace=0.18)
    name = f"{func}_ulp_{kind}.png"
    from bendtorch.records.durable import save_figure
    save_figure(fig, out / name, dpi=100)
    return [name]
