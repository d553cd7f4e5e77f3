# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11. Batch and thread invariance, shown: which operations give row i the same bits in every batch size
#
# **The claim under test** (the design's "Deterministic" rule and the seed's fixed orders: each row's sums run in one
# order whatever else is in the batch, main.bend lines 1291-1293): every impl operation gives row i the same bits
# whether it is computed alone or among 1..63 other rows, and on 1 or 2 threads; PyTorch's CPU kernels do not promise
# this, and its matrix product changes its bits with the batch size.
#
# **What is measured** (`bendtorch.reference.findings.invariance`, through the conformance targets of laws/targets so
# the operations are exactly the ones the conformance laws hold): for each operation and each batch size B, the
# first B rows of a fixed pool computed together, each row's bits against its bits alone and against its bits in
# the largest batch. Then the largest batch on 1 and on 2 threads (for impl only meaningful when numba has 2 threads:
# nbutil sets NUMBA_NUM_THREADS=1, so this notebook's own thread check is trivial for impl; the committed full run
# was made with NUMBA_NUM_THREADS=2).
#
# **Outcome measured at the small size: the claim reproduces.** Every impl operation keeps its bits for every batch
# size; PyTorch's linear map and matrix product change bits from B = 2 (a lone row goes through a matrix-vector
# kernel, a batch through the matrix-matrix one), its row-wise operations do not. See the verdict cell.

# %%
import nbutil as U  # first: numba on 1 thread (the same bits on any count)

import os
import pathlib
import tempfile

import matplotlib.pyplot as plt

from bendtorch.reference.findings import invariance as I

T = U.banner()  # PyTorch float32 on 2 threads (reference.torch_ref.torch_mod)

# %%
FULL = os.environ.get("BENDTORCH_NB_SIZE") == "full"   # or set FULL = True
MAX_BATCH = 64 if FULL else 12

# %%
with U.Timer() as tm:
    res = I.study(MAX_BATCH)
print(f"batch sizes 1..{MAX_BATCH}, numba threads {res['numba_threads']}, in {tm.s:.1f} s")
summ = I.summary(res)
for name, ops in summ.items():
    for op, v in ops.items():
        print(f"{name:>6} {op:<26} {v}")

# %%
with tempfile.TemporaryDirectory() as d:
    p = pathlib.Path(d) / "inv.png"
    I.plot(res, p)
    img = plt.imread(p)
plt.figure(figsize=(14, 4)); plt.imshow(img); plt.axis("off"); plt.show()

# %%
full = U.finding("invariance")
if full is not None:
    print("committed full run:", full["command"], "| numba threads", full["numba_threads"],
          "|", U.machine_of(full))
    for name, ops in full["summary"].items():
        for op, v in ops.items():
            print(f"{name:>6} {op:<26} {v}")

# %%
impl_ops = {k: v for k, v in res["targets"]["impl"].items() if isinstance(v, dict) and "rows_changed" in v}
torch_lin = res["targets"]["torch"]["matmul (x·Wᵀ)"]
VERDICT = {
    "claim": "every impl operation gives row i the same bits in every batch size and on 1 or 2 threads; PyTorch's CPU "
             "matrix product changes its bits with the batch size",
    "reproduces": bool(all(v["first_batch_with_a_change"] is None for v in impl_ops.values())
                       and torch_lin["first_batch_with_a_change"] is not None),
    "figure": float(torch_lin["first_batch_with_a_change"] or 0),
    "figure_is": "the first batch size at which a row of PyTorch's x·Wᵀ differs from its bits alone",
    "impl_ops_invariant": sorted(impl_ops),
    "max_batch": MAX_BATCH,
    "committed_full_run_threads_same": None if full is None else {
        t: all(v.get("threads_1_vs_2") is True for v in ops.values() if "threads_1_vs_2" in v)
        for t, ops in full["summary"].items()},
}

# %%
U.verdict(VERDICT)
