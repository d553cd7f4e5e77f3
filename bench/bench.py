"""The benchmark behind `bendtorch bench`: one training step (forward, cross-entropy, backward, AdamW) of impl's
Llama and of the same Llama in PyTorch (reference/torch_llama.py, float32), timed in the same process: 2 warm-up
steps, then the median of `repeats` (>= 5) steps, for `tiny` (batch 4 x 16) and `smol` (batch 1 x 128, all 30
layers). The measurement is repeated over `rounds` rounds (each timing impl then PyTorch on every model, the models
in turn), and each ratio is reported as the median over the rounds with its range: the ratio of two timings on a
shared machine moves between runs by more than the goals it is meant to show.

Peak memory: the process's resident high-water mark (VmHWM) over each library's training steps (warm-ups and timed
steps), reset once the library's model and optimizer are built and the other library's objects are freed (Linux's
/proc/self/clear_refs "5"): each figure holds the model, its gradients, optimizer state and everything a step
allocates, plus what both share (the interpreter, numpy, numba, torch); the reset comes after the build, so impl's
figure holds no copy of the initial weights kept for PyTorch. Where VmHWM is not available, ru_maxrss (then
cumulative: the second library's figure includes the first's). In one process a figure also holds what the
allocator kept of the other library's frees (see peak_alone), so for smol each round also measures each library's
peak alone, in a fresh process that imports the same and trains ALONE_STEPS steps.

Also measured: the wall time of a new user's first command, `bendtorch train --model tiny --steps 5`, in a fresh
process on a cold numba cache (an empty NUMBA_CACHE_DIR, so every kernel compiles) without and with the cold-start
warm-up process (impl.kernels.warm), and then warm (the same directory again), and likewise of `bendtorch sweep exp
--sample 100000` cold and warm; the full erf sweep's wall time, read from reports/results/atlas/erf/sweep_full.json
when it exists (the sum of the runs that made it, `bendtorch sweep erf`; the sweep is not rerun); with laws=True, the
wall time of `bendtorch laws --profile ci` (a subprocess). The first commands and the laws run before the models'
rounds, on a machine not yet heated by them.
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import resource
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

SCHEMA_VERSION = 2  # the layout of the bench's JSON (records/schemas/bench.schema.json)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_mib() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _time(step: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    for _ in range(2):
        step()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


class _Setup:
    """One model's configuration, batch, hyper-parameters and data, as every measurement here uses them."""

    def __init__(self, name: str, layers: int | None) -> None:
        from bendtorch.impl import llama
        from bendtorch.reference import trio

        changes = {"layers": layers} if (layers is not None and name == "smol") else {}
        self.cfg = llama.config(name, **changes)
        self.b = 4 if name == "tiny" else 1
        self.hp = trio.AdamWHP(lr=1e-3)
        rng = np.random.default_rng(0)
        self.x, self.y = llama.batch_at(rng.integers(0, self.cfg.vocab, size=10 * self.cfg.t), self.b, self.cfg.t,
                                        rng)

    def impl_run(self) -> tuple[Any, Any]:
        """impl's model and its training run from init(0)."""
        from bendtorch import impl
        from bendtorch.impl import llama
        from bendtorch.reference import trio

        model = llama.build(impl, self.cfg, self.b)
        return model, trio.impl_llama_run(model, self.hp.impl_cfg(), model.init(0))

    def torch_run(self, model: Any) -> Any:
        """PyTorch's training run from the same initial weights (impl's model initialised again from the same seed,
        so that impl's peak holds no copy of them kept for PyTorch, nor PyTorch's the impl model); torch.optim's
        default loop, grads zeroed in place."""
        from bendtorch.impl import llama
        from bendtorch.reference import trio

        weights = llama.named(model.names, model.init(0))
        return trio.torch_llama_run(self.cfg, self.b, weights, self.hp, foreach=None, set_to_none=False)


def bench_model(name: str, repeats: int, layers: int | None) -> dict[str, Any]:
    su = _Setup(name, layers)
    x, y = su.x, su.y
    out: dict[str, Any] = {"model": name, "batch": su.b, "t": su.cfg.t, "layers": su.cfg.layers, "repeats": repeats}
    last = [0.0]

    # impl
    model, run = su.impl_run()
    out["parameters"] = model.layer.count()

    def step() -> None:
        last[0] = run.step(x, y)

    gc.collect()
    _reset_peak()
    med, ts = _time(step, repeats)
    out["impl"] = {"median_s": med, "times_s": ts, "peak_rss_mib": _peak_mib(), "loss": last[0]}
    del run

    # PyTorch
    run = su.torch_run(model)
    del model
    gc.collect()
    _reset_peak()
    med, ts = _time(step, repeats)
    import torch
    out["torch"] = {"median_s": med, "times_s": ts, "peak_rss_mib": _peak_mib(), "loss": last[0],
                    "threads": torch.get_num_threads()}
    out["ratio_impl_over_torch"] = out["impl"]["median_s"] / out["torch"]["median_s"]
    out["ratio_peak_rss_impl_over_torch"] = out["impl"]["peak_rss_mib"] / out["torch"]["peak_rss_mib"]
    out["tokens_per_step"] = su.b * su.cfg.t
    del run
    return out


# steps a process measuring one library's peak alone trains (the optimizer state is allocated at the first)
ALONE_STEPS = 3


def _alone(lib: str, name: str, layers: int | None, steps: int) -> float:
    """In this process (a fresh one): the peak RSS (MiB) over `steps` training steps of one library, the rest as in
    bench_model (torch imported as there, the peak reset after the build)."""
    import torch  # noqa: F401 - the bench's process holds both libraries: the same shared part in both figures

    su = _Setup(name, layers)
    model, run = su.impl_run()
    if lib == "torch":
        del run
        run = su.torch_run(model)
    del model
    gc.collect()
    _reset_peak()
    for _ in range(steps):
        run.step(su.x, su.y)
    return _peak_mib()


def peak_alone(lib: str, name: str, layers: int | None, steps: int = ALONE_STEPS) -> float:
    """The peak RSS (MiB) of `steps` training steps of one library in a fresh process (_alone). In the bench's own
    process a library's figure also holds what the allocator kept of the other library's frees: glibc raises its
    mmap threshold as big blocks are freed, so after one library's round the other's arrays come from the heap (smol
    on an AMD EPYC, family 25, model 17: impl 2,719 MiB in the first round and 3,051 in the next two). Fixing the
    threshold instead (mallopt) made every big array a fresh mapping and the smol step 1.6 -> 2.8 s."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "bendtorch.bench.bench", "alone", lib, name, str(layers or 0),
                        str(steps)], capture_output=True, text=True, check=True)
    return float(r.stdout.split()[-1])


_ROOT = pathlib.Path(__file__).resolve().parent.parent

# a fresh process: imports, one tiny training step; prints the seconds from the build's start to the step's end
# the first command the cold-start goal names, as a user runs it
FIRST_COMMAND = ["train", "--model", "tiny", "--steps", "5", "--no-bar"]


def _elsewhere(d: str) -> dict[str, Any]:
    """subprocess.run's keywords for a child process of the bench: its working directory a scratch folder d (not the
    caller's, not the installed package's, so nothing it leaves lands there), hypothesis's database in the cache
    folder (records.paths)."""
    from bendtorch.records.paths import cache_dir

    return {"cwd": d, "env": dict(os.environ, HYPOTHESIS_STORAGE_DIRECTORY=str(cache_dir("hypothesis").resolve()))}


def _fresh(args: list[str], kw: dict[str, Any], check: bool = True) -> tuple[float, Any]:
    """`bendtorch ARGS` in a fresh process (subprocess.run's keywords kw, from _elsewhere): its wall time in seconds
    and its completed process (output captured; a failure raises when `check`)."""
    import subprocess

    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "bendtorch", *args], capture_output=True, text=True, check=check, **kw)
    return time.perf_counter() - t0, r


def first_step_times() -> dict[str, Any]:
    """Wall time of a fresh `bendtorch train --model tiny --steps 5` (FIRST_COMMAND): on an empty numba cache
    (NUMBA_CACHE_DIR, so every kernel compiles) with the cold-start warm-up off (BENDTORCH_WARM=0: one process
    compiles everything), on another empty cache as a user gets it (impl.kernels.warm's second process compiling
    beside the command), then warm (that cache again). The user's own cache is neither read nor deleted, so other
    processes using it are not disturbed."""
    import tempfile

    out: dict[str, Any] = {"command": ["bendtorch", *FIRST_COMMAND]}
    with tempfile.TemporaryDirectory(prefix="bench-numba-cache-") as d:
        kw = _elsewhere(d)
        for kind, cache, switch in (("cold_cache_no_warmup", "a", "0"), ("cold_cache", "b", "1"),
                                    ("warm_cache", "b", "1")):
            kw["env"].update(NUMBA_CACHE_DIR=os.path.join(d, cache), BENDTORCH_WARM=switch)
            out[f"{kind}_process_s"] = _fresh([*FIRST_COMMAND, "--out", os.path.join(d, kind)], kw)[0]
    return out


# the sampled sweep the cold-start goal names, as a user runs it (every library that provides exp, the plot drawn)
SAMPLE_SWEEP = ["sweep", "exp", "--sample", "100000", "--quiet"]


def sample_sweep_times() -> dict[str, Any]:
    """Wall time of a fresh `bendtorch sweep exp --sample 100000` (SAMPLE_SWEEP) in a scratch folder: on an empty
    numba cache (NUMBA_CACHE_DIR: its kernels compile), then warm (that cache again, a new output folder)."""
    import tempfile

    out: dict[str, Any] = {"command": ["bendtorch", *SAMPLE_SWEEP]}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as d:
        kw = _elsewhere(d)
        kw["env"].update(NUMBA_CACHE_DIR=os.path.join(d, "cache"))
        for kind in ("cold_cache", "warm_cache"):
            out[f"{kind}_process_s"] = _fresh([*SAMPLE_SWEEP, "--out", os.path.join(d, kind)], kw)[0]
    return out


def erf_sweep_time() -> dict[str, Any] | None:
    """The full erf sweep's wall time, from its saved result (not rerun): the sum of the runs that made it (a run
    may add libraries to the file, or merge the chunks earlier runs left), each listed."""
    f = _ROOT / "reports" / "results" / "atlas" / "erf" / "sweep_full.json"
    if not f.exists():
        return None
    d = json.loads(f.read_text())
    runs = d.get("runs") or [{"command": d.get("command"), "seconds": d.get("seconds")}]
    return {"file": str(f.relative_to(_ROOT)), "mode": d.get("mode"),
            "inputs": next(iter(d["libraries"].values()))["inputs"], "libraries": list(d["libraries"]),
            "seconds": sum(r.get("seconds") or 0.0 for r in runs), "runs": runs}


def laws_ci_time() -> dict[str, Any]:
    """Wall time of a first `bendtorch laws --profile ci` in a subprocess (in a scratch folder): on an empty numba
    cache, as a new user runs it (with the cold-start warm-up process), then again on that cache (warm)."""
    import tempfile

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-laws-") as d:
        kw = _elsewhere(d)
        kw["env"].update(NUMBA_CACHE_DIR=os.path.join(d, "cache"), BENDTORCH_WARM="1")
        for key in ("seconds", "warm_cache_seconds"):
            out[key], r = _fresh(["laws", "--profile", "ci"], kw, check=False)
            out["returncode"] = max(out.get("returncode", 0), r.returncode)
            out["tail"] = r.stdout.strip().splitlines()[-3:]
    return out


# The speed goals, as ratios of impl's figure to PyTorch's measured in the same run (median over the rounds) and
# wall times of the first commands a new user runs
GOALS = {"tiny": 0.5, "smol": 0.8, "smol_rss": 0.85, "first_step_cold_s": 8.0, "laws_ci_s": 45.0, "erf_sweep_s": 180.0,
         "sample_sweep_cold_s": 10.0}


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The speed goals (GOALS): each goal, the figure measured in this run, and whether it is met."""
    rows: list[dict[str, Any]] = []

    def row(work: str, goal: str, value: float, limit: float, ok: bool = True) -> None:
        rows.append({"work": work, "goal": goal, "value": value, "met": ok and value <= limit})
    for r in res["results"]:
        spread = f" (median of {len(r.get('rounds', [r]))} rounds)"
        if r["model"] == "tiny":
            row("tiny step" + spread, f"impl/torch time <= {GOALS['tiny']}", r["ratio_impl_over_torch"],
                GOALS["tiny"])
        elif r["model"] == "smol":
            row(f"smol step ({r['layers']} layers)" + spread, f"impl/torch time <= {GOALS['smol']}",
                r["ratio_impl_over_torch"], GOALS["smol"])
            row(f"smol peak RSS ({r['layers']} layers)", f"impl/torch peak RSS <= {GOALS['smol_rss']}",
                r["ratio_peak_rss_impl_over_torch"], GOALS["smol_rss"])
            if "ratio_peak_rss_alone" in r:
                row(f"smol peak RSS, alone ({r['layers']} layers)", f"impl/torch peak RSS <= {GOALS['smol_rss']}",
                    r["ratio_peak_rss_alone"], GOALS["smol_rss"])
    if res.get("first_step_fresh_process"):
        row("first train --model tiny --steps 5, cold cache", f"wall <= {GOALS['first_step_cold_s']} s",
            res["first_step_fresh_process"]["cold_cache_process_s"], GOALS["first_step_cold_s"])
    if res.get("sample_sweep"):
        row("first sweep exp --sample 100000, cold cache", f"wall <= {GOALS['sample_sweep_cold_s']} s",
            res["sample_sweep"]["cold_cache_process_s"], GOALS["sample_sweep_cold_s"])
    if res.get("erf_sweep") and res["erf_sweep"].get("seconds") is not None:
        row("full erf sweep (saved run)", f"wall <= {GOALS['erf_sweep_s']} s", res["erf_sweep"]["seconds"],
            GOALS["erf_sweep_s"])
    if res.get("laws_ci"):
        row("first laws --profile ci, cold cache", f"wall <= {GOALS['laws_ci_s']} s", res["laws_ci"]["seconds"], GOALS["laws_ci_s"],
            res["laws_ci"]["returncode"] == 0)
    return rows


def pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One model's result over its rounds: the median round's figures (by time ratio), every round, and the
    median and range of both ratios (the ratio of two timings on a shared machine moves between rounds)."""
    ratios = [r["ratio_impl_over_torch"] for r in rounds]
    rss = [r["ratio_peak_rss_impl_over_torch"] for r in rounds]
    mid = sorted(rounds, key=lambda r: r["ratio_impl_over_torch"])[(len(rounds) - 1) // 2]
    alone = [r["ratio_peak_rss_alone"] for r in rounds if "ratio_peak_rss_alone" in r]
    return {**mid, "ratio_impl_over_torch": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)],
            "ratio_peak_rss_impl_over_torch": statistics.median(rss), "ratio_peak_rss_range": [min(rss), max(rss)],
            **({"ratio_peak_rss_alone": statistics.median(alone),
                "ratio_peak_rss_alone_range": [min(alone), max(alone)]} if alone else {}),
            "rounds": [{k: r[k] for k in ("ratio_impl_over_torch", "ratio_peak_rss_impl_over_torch",
                                          "ratio_peak_rss_alone", "peak_alone_mib") if k in r}
                       | {"impl_median_s": r["impl"]["median_s"], "torch_median_s": r["torch"]["median_s"]}
                       for r in rounds]}


def bench(models: tuple[str, ...] = ("tiny", "smol"), repeats: int | None = None, layers: int | None = None,
          threads: int | None = None, json_path: pathlib.Path | None = None, laws: bool = False,
          startup: bool = True, state_bytes: bool = False, rounds: int = 3) -> dict[str, Any]:
    """Time and measure what the module's docstring says; print the table; write json_path (atomically) if given.
    repeats >= 5 and threads >= 1 when given (ValueError otherwise)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if repeats is not None and repeats < 5:
        raise ValueError(f"repeats must be >= 5, got {repeats}")
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    import numba
    import torch

    if threads is not None:
        numba.set_num_threads(min(threads, int(getattr(numba.config, "NUMBA_NUM_THREADS"))))
        torch.set_num_threads(threads)
    from bendtorch.records.machine import machine
    res: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "machine": machine(["torch"]),
        "load_average_at_start": list(os.getloadavg()),
        "peak_rss_kind": "VmHWM per library" if _reset_peak() else "ru_maxrss (cumulative)",
        "results": []}
    # the cold starts first, as a newcomer's first commands meet them: after the rounds' minutes of vector work the
    # same commands took longer (on an Intel Xeon, family 6, model 167: the first train 8.2 s and the sample sweep
    # 12.6 s, against 7.8 s and 8.9-9.6 s on the rested machine minutes later)
    if startup:
        fs = res["first_step_fresh_process"] = first_step_times()
        print(f"{' '.join(fs['command'])}: cold cache {fs['cold_cache_process_s']:.1f} s (without the warm-up "
              f"process {fs['cold_cache_no_warmup_process_s']:.1f} s), warm cache {fs['warm_cache_process_s']:.1f} s",
              flush=True)
        ss = res["sample_sweep"] = sample_sweep_times()
        print(f"{' '.join(ss['command'])}: cold cache {ss['cold_cache_process_s']:.1f} s, warm cache "
              f"{ss['warm_cache_process_s']:.1f} s", flush=True)
    if laws:
        lc = res["laws_ci"] = laws_ci_time()
        print(f"bendtorch laws --profile ci: cold cache {lc['seconds']:.0f} s, warm {lc['warm_cache_seconds']:.0f} s "
              f"(exit {lc['returncode']})", flush=True)
    print(f"{'model':6} {'impl s/step':>12} {'torch s/step':>13} {'ratio':>7} {'impl MiB':>9} {'torch MiB':>10}")
    per: dict[str, list[dict[str, Any]]] = {name: [] for name in models}
    for k in range(rounds):  # the models in turn, each round measuring impl then PyTorch
        for name in models:
            reps = repeats if repeats is not None else (25 if name == "tiny" else 5)
            r = bench_model(name, reps, layers)
            if name == "smol":  # the memory goal's model: each library's peak also in a process of its own
                alone = r["peak_alone_mib"] = {lib: peak_alone(lib, name, layers) for lib in ("impl", "torch")}
                r["ratio_peak_rss_alone"] = alone["impl"] / alone["torch"]
            per[name].append(r)
            print(f"{name:6} {r['impl']['median_s']:12.4f} {r['torch']['median_s']:13.4f} "
                  f"{r['ratio_impl_over_torch']:7.2f} {r['impl']['peak_rss_mib']:9.0f} "
                  f"{r['torch']['peak_rss_mib']:10.0f}  round {k + 1}/{rounds}", flush=True)
            if "peak_alone_mib" in r:
                print(f"{'':6} {'':12} {'':13} {r['ratio_peak_rss_alone']:7.2f} {r['peak_alone_mib']['impl']:9.0f} "
                      f"{r['peak_alone_mib']['torch']:10.0f}  (peak RSS, each library alone)", flush=True)
    for name in models:
        r = pooled(per[name])
        res["results"].append(r)
        lo, hi = r["ratio_range"]
        print(f"{name}: impl/torch time median {r['ratio_impl_over_torch']:.2f} (range {lo:.2f}-{hi:.2f} over "
              f"{rounds} rounds), peak RSS {r['ratio_peak_rss_impl_over_torch']:.2f}", flush=True)
    print(f"(median of the timed steps (tiny 25, smol 5 unless --repeats) after 2 warm-ups: forward, cross-entropy, backward, AdamW; "
          f"peak RSS: {res['peak_rss_kind']})")
    res["erf_sweep"] = erf_sweep_time()
    if res["erf_sweep"] is not None:
        print(f"full erf sweep (saved run, {res['erf_sweep']['file']}): {res['erf_sweep']['seconds']:.0f} s")
    if state_bytes:
        from bendtorch.bench.state_bytes import measure
        sb = measure("smol", layers)
        res["optimizer_state_bytes"] = sb
        print(f"optimizer state after one smol step: F32 AdamW {sb['adamw_f32']:,} bytes, packed BF16 m "
              f"{sb['adamw_bf16_m']:,} ({sb['bf16_m_over_f32']:.3f}x), packed BF16 m and v {sb['adamw_bf16_mv']:,} "
              f"({sb['bf16_mv_over_f32']:.3f}x)", flush=True)
    res["load_average_at_end"] = list(os.getloadavg())
    res["goals"] = goals(res)
    for g in res["goals"]:
        print(f"  {g['work']:28} {g['goal']:28} {g['value']:9.3f}  {'met' if g['met'] else 'NOT met'}")
    if json_path is not None:
        from bendtorch.records.durable import write_json
        write_json(json_path, res)
        print(f"wrote {json_path}")
    return res


if __name__ == "__main__":  # python -m bendtorch.bench.bench alone LIB MODEL LAYERS STEPS (what peak_alone runs)
    if len(sys.argv) != 6 or sys.argv[1] != "alone" or sys.argv[2] not in ("impl", "torch"):
        sys.exit("usage: python -m bendtorch.bench.bench alone impl|torch MODEL LAYERS(0: the model's) STEPS")
    print(f"{_alone(sys.argv[2], sys.argv[3], int(sys.argv[4]) or None, int(sys.argv[5])):.3f}")
