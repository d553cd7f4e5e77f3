"""The CPU numba compiles for: its features are NUMBA_CPU_FEATURES when set, the host's otherwise (numba's codegen
reads them so, and keys its on-disk cache by them). Speed choices that follow the target (matmul's pass width and
tiles, exp_array's form) read it here, so a cached kernel always matches the choice made at import. No choice made
from it changes a bit."""

from __future__ import annotations

import numba
from llvmlite import binding as llvm  # type: ignore[import-untyped]


def target_features() -> frozenset[str]:
    """numba's target features, each as "+name" or "-name" (LLVM's spelling)."""
    feats: str | None = getattr(numba.config, "CPU_FEATURES", None)  # set at numba's import
    if feats is None:
        feats = llvm.get_host_cpu_features().flatten()
    return frozenset(str(feats).split(","))


def has_avx512f() -> bool:
    """Whether numba's target has AVX-512F: 32 vector registers (zmm0-31), and gathers LLVM will use in a
    vectorised loop (on x86 it uses them with AVX-512, or with AVX2 only where it knows them fast: Intel's)."""
    return "+avx512f" in target_features()
