"""The report behind `bendtorch report`: the reference comparisons of reference/ops.py (every layer forward and
backward, every loss, every combinator composition, every optimizer step) run in impl, PyTorch float32 and the float64 oracle, judged by
the same `reference.ops.judge` the tests use, and written as report.json and REPORT.md into --out (default
reports/out/), with paired ulp-error distribution plots (impl vs PyTorch, per op), the machine, the command, the
small-model training run, the optimizer study (100 steps) and the erf sweep's sampled figures.

    bendtorch report [--out DIR] [--quick] [--erf-sample N] [--no-plots] [--only NAME ...]

--quick runs one shape and one seed per op, a 10-step model run, no 100-step optimizer study and a small erf sample
(seconds); the default (a minute or two on 2 cores) runs every case the tests run.

torch, matplotlib and tqdm are imported inside the functions, so `bendtorch --help` stays quick.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

DEFAULT_OUT = Path("reports/out")
SCHEMA_VERSION = 3  # report.json's layout (records/schemas/report.schema.json)


# ---- plots -----------------------------------------------------------------------------------------------------

def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def plot_op(name: str, res: dict[str, Any], path: Path) -> None:
    """One PNG per op: for each output, the distributions of impl's and PyTorch's element-wise ulp errors against
    the oracle (log scale, exact results at the left edge), side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    outs = list(res)
    fig, axes = plt.subplots(1, len(outs), figsize=(4.2 * len(outs), 3.0), squeeze=False)
    for ax, k in zip(axes[0], outs):
        ie, te = res[k]["impl_errs"], res[k]["torch_errs"]
        fin = np.concatenate([ie[np.isfinite(ie)], te[np.isfinite(te)]])
        hi = max(1.0, float(fin.max()) if fin.size else 1.0)
        edges = np.concatenate([[0.0], np.logspace(-3, np.log10(hi) + 0.05, 40)])
        floor = 1e-3
        ax.hist(np.clip(ie, floor, None), bins=edges, histtype="step", lw=1.6, label="impl", color="C0")
        ax.hist(np.clip(te, floor, None), bins=edges, histtype="step", lw=1.2, ls="--", label="PyTorch", color="C3")
        ax.set_xscale("symlog", linthresh=1e-3)
        ax.set_yscale("log")
        ax.set_title(f"{name}: {k} ({ie.size} values)", fontsize=9)
        ax.set_xlabel("ulp error vs oracle (first bin: < 0.001, exact included)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    from bendtorch.records.durable import save_figure
    save_figure(fig, path, dpi=90)


# ---- the erf sweep's sample ------------------------------------------------------------------------------------

def erf_sample(out: Path, n: int) -> dict[str, Any]:
    """The erf function of the exhaustive checker (bendtorch.reports.sweep) in its sample mode, impl's figures and
    the seed's claims (guarded: if it cannot be imported or fails, the report says so)."""
    if n <= 0:
        return {"status": "skipped (--erf-sample 0)"}
    try:
        from bendtorch.reports import sweep
    except Exception as e:  # noqa: BLE001 - reported in REPORT.md
        return {"status": f"bendtorch.reports.sweep not importable: {type(e).__name__}: {e}"}
    try:
        rep = sweep.sample("erf", n, out, command=f"bendtorch sweep erf --sample {n} --out {out} --no-plots")
    except Exception as e:  # noqa: BLE001 - reported in REPORT.md
        return {"status": f"erf sweep sample failed: {type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=3)}
    imp = rep["libraries"]["impl"]
    keep = ("inputs", "finite_inputs", "max_ulp", "max_ulp_at", "correctly_rounded_fraction",
            "within_one_ulp_fraction", "faithful_fraction", "nan_in_nan_out", "odd_symmetric")
    claims = {k: v for k, v in imp.get("claims", {}).items() if k != "source"}
    return {"status": "ok", "json": rep["json"], "mode": rep["mode"], **{k: imp.get(k) for k in keep},
            "seed_claims": claims}


# ---- the run ---------------------------------------------------------------------------------------------------

# ---- the full erf sweep, the training drift, the law table ------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
FULL_SWEEP = ROOT / "reports" / "results" / "atlas" / "erf" / "sweep_full.json"  # `bendtorch sweep erf`'s

# the seed's claims for its erf (main.bend lines 1118-1120), as the checker judges them (records.functions' erf
# record's claims, judged into the impl column's "claims"): the words of the seed and the measured figure
ERF_CLAIMS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "max_ulp_at_most": ("at most 0.93 ulp off", lambda e: f"max {e['max_ulp']:.4f} ulp"),
    "correctly_rounded_fraction": ("the correctly rounded float32 on 97.1% of the inputs",
                                   lambda e: f"{100 * e['correctly_rounded_fraction']:.3f}% of finite inputs"),
    "within_one_ulp_fraction": ("1 ulp from it on the rest",
                                lambda e: f"{100 * e['within_one_ulp_fraction']:.4f}% within one float32 step"),
    "nan_in_nan_out": ("NaN for every NaN", lambda e: f"nan_in_nan_out = {e['nan_in_nan_out']}"),
}


def erf_full(path: Path, out: Path) -> dict[str, Any]:
    """The committed full sweep of the erf entry (reports/results/atlas/erf/sweep_full.json, `bendtorch sweep erf`),
    with the seed's claims confirmed or refuted and the other libraries beside impl."""
    if not path.is_file():
        return {"status": f"no full sweep at {path} (run `bendtorch sweep erf --out {path.parent.parent}`)"}
    e = json.loads(path.read_text())
    imp = e["libraries"]["impl"]
    judged = imp.get("claims", {})
    claims = [{"claim": words, "confirmed": bool(judged[k]["holds"]), "measured": fig(imp)}
              for k, (words, fig) in ERF_CLAIMS.items() if k in judged]
    if len(claims) != len(ERF_CLAIMS):
        return {"status": f"{path}: impl's claims {sorted(judged)} are not the seed's {sorted(ERF_CLAIMS)}"}
    pngs = [path.parent / p for p in e.get("plots", [])]
    runs = e.get("runs") or [{"command": e.get("command"), "seconds": e.get("seconds")}]
    return {"status": "ok", "json": str(path), "runs": runs, "seconds": sum(r.get("seconds") or 0.0 for r in runs),
            "machine": e.get("machine"), "inputs": imp.get("inputs"), "finite_inputs": imp.get("finite_inputs"),
            "max_ulp": imp["max_ulp"], "max_ulp_at": imp.get("max_ulp_at"),
            "correctly_rounded_fraction": imp["correctly_rounded_fraction"],
            "within_one_ulp_fraction": imp["within_one_ulp_fraction"], "hard_cases": e.get("hard_cases", {}),
            "comparisons": {k: v for k, v in e["libraries"].items() if k != "impl"},
            "claims": claims, "plots": [os.path.relpath(p.resolve(), out.resolve()) for p in pngs if p.is_file()]}


def drift_run(out: Path, steps: int, seeds: int, plots: bool) -> dict[str, Any]:
    """The tiny Llama's drift from the float64 oracle over `steps` AdamW steps, impl and PyTorch float32, on seeds
    0..seeds-1: which float32 run ends closer to float64 changes with the seed, so every figure is a distribution
    (median and range over the seeds, listed)."""
    from bendtorch.reference.llama_drift import at_steps, drift_over_seeds, plot
    r = drift_over_seeds(tuple(range(seeds)), steps)
    r["table"] = {str(k): v for k, v in at_steps(r, sorted({1, 10, 25, 50, 75, steps})).items()}
    if plots:
        plot(r, out / "drift.png")
        r["plot"] = "drift.png"
    r.pop("runs")
    return r


def law_table(out: Path) -> dict[str, Any]:
    """The law suites under the ci profile (laws/run.py), in a subprocess so their hypothesis settings stay theirs."""
    import subprocess
    j = out / "laws.json"
    cmd = [sys.executable, "-m", "bendtorch.cli", "laws", "--profile", "ci", "--json", str(j)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if not j.is_file():
        return {"status": f"laws did not run (exit {proc.returncode}): {proc.stderr[-500:]}"}
    rows = json.loads(j.read_text())["rows"]
    # a law that cannot run here, or has no meaning for impl, is reported as such and does not count as a failure
    return {"status": "ok", "command": "bendtorch laws --profile ci", "rows": rows,
            "seconds": time.perf_counter() - t,
            "all_pass": all(r["result"] in ("passed", "not applicable", "not run") for r in rows)}


def committed_sections(out: Path) -> tuple[str, str, str]:
    """The conformance table, the function atlas and the findings, rendered from the committed results
    (reports/results/{conformance,atlas,findings}/) as Markdown; their plots are copied beside REPORT.md."""
    import shutil

    from bendtorch.laws.run import conformance_markdown, load_results
    from bendtorch.reports.findings import findings_markdown
    from bendtorch.reports.sweep import atlas_markdown
    res = ROOT / "reports" / "results"
    sections = []
    renders: tuple[tuple[str, Callable[[Path], str]], ...] = (
        ("conformance", lambda d: conformance_markdown(load_results(d))),
        ("atlas", lambda d: atlas_markdown(d, link_prefix="atlas")),
        ("findings", lambda d: findings_markdown(d, heading="##", link_prefix="findings/")))
    for name, render in renders:
        try:
            sections.append(render(res / name))
        except Exception as e:  # noqa: BLE001  (a missing or old results folder is reported, not fatal)
            sections.append(f"not available: {type(e).__name__}: {e}")
    for name in ("findings", "atlas"):
        for png in (res / name).rglob("*.png"):
            dst = out / name / png.relative_to(res / name)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, dst)
    return sections[0], sections[1], sections[2]


def _fmt(x: float) -> str:
    if x != x:
        return "nan"
    if x == float("inf"):
        return "inf"
    if x == 0:
        return "0"
    if x >= 1000:
        return f"{x:.3g}"
    return f"{x:.3g}" if x < 10 else f"{x:.1f}"


def run_ops(ops: list[Any], quick: bool, plots_dir: Path | None, quiet: bool) -> tuple[list[dict[str, Any]],
                                                                                        list[str]]:
    from tqdm import tqdm

    from bendtorch.reference.compare import run_op
    from bendtorch.reference.ops import judge
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    bar = tqdm(ops, desc="reference ops", unit="op", disable=quiet, file=sys.stderr)
    for op in bar:
        bar.set_postfix_str(op.name)
        try:
            res = run_op(op, quick)
        except Exception as e:  # noqa: BLE001 - an op that cannot run is a failing row, not a crash
            errors.append(f"{op.name}: {type(e).__name__}: {e}")
            rows.append({"op": op.name, "kind": op.kind, "output": "-", "pass": False,
                         "why": [f"{type(e).__name__}: {e}"]})
            continue
        plot = None
        if plots_dir is not None:
            plot = f"plots/{_slug(op.name)}.png"
            try:
                plot_op(op.name, res, plots_dir / f"{_slug(op.name)}.png")
            except Exception as e:  # noqa: BLE001
                errors.append(f"plot {op.name}: {type(e).__name__}: {e}")
                plot = None
        for k in op.outputs:
            r = res[k]
            ok, why = judge(op, k, r)
            rows.append({"op": op.name, "kind": op.kind, "output": k, "pass": ok, "why": why,
                         "cases": r["cases"], "values": r["impl"]["n"],
                         "impl": {a: r["impl"][a] for a in ("max", "p99", "median", "norm")},
                         "torch": {a: r["torch"][a] for a in ("max", "p99", "median", "norm")},
                         "bit_equal_torch": r["bit_equal"], "n_differ_torch": r["n_differ"],
                         "bound_norm": op.bound.get(k), "bound_elem": op.bound_elem.get(k),
                         "bitexact_required": k in op.bitexact, "factor": op.factor, "bound_why": op.why,
                         "plot": plot})
    return rows, errors


def markdown(rep: dict[str, Any]) -> str:
    L: list[str] = []
    L.append("# bendtorch reference report\n")
    L.append(f"Command: `{rep['command']}`  ")
    L.append(f"Mode: {rep['mode']}; {rep['seconds']:.1f} s; written {rep['written']}\n")
    from bendtorch.records.machine import cpu_name, describe
    L.append(f"Measured on: {describe(rep['machine'], ['torch', 'numpy', 'numba'])} (every figure about PyTorch "
             "below is a fact of this machine; impl's are the same on every machine).\n")
    n_ok = sum(r["pass"] for r in rep["rows"])
    L.append(f"**{n_ok} of {len(rep['rows'])} rows pass.** Errors are ulps against the float64 oracle "
             "(oracle/ulp.py): element-wise max / p99 / median over every value of every case; `norm` is the "
             "normwise error max|x - exact| / ulp32(max|exact|) that each op's bound applies to "
             "(reference/ops.py, which also gives each bound's reason). `= torch`: bit for bit equal to PyTorch "
             "(required where marked !).\n")
    L.append("| op | out | pass | impl max | impl p99 | impl median | impl norm | torch max | torch p99 "
             "| torch median | torch norm | bound (norm / elem) | = torch | plot |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rep["rows"]:
        if "impl" not in r:
            L.append(f"| {r['op']} | - | FAIL | | | | | | | | | | | {'; '.join(r['why'])} |")
            continue
        i, t = r["impl"], r["torch"]
        b = f"{_fmt(r['bound_norm']) if r['bound_norm'] is not None else '-'} / " \
            f"{_fmt(r['bound_elem']) if r['bound_elem'] is not None else '-'}"
        eq = ("yes" if r["bit_equal_torch"] else f"no ({r['n_differ_torch']})") + (" !" if r["bitexact_required"]
                                                                                   else "")
        plot = f"[png]({r['plot']})" if r.get("plot") else ""
        L.append(f"| {r['op']} | {r['output']} | {'pass' if r['pass'] else 'FAIL'} | {_fmt(i['max'])} | "
                 f"{_fmt(i['p99'])} | {_fmt(i['median'])} | {_fmt(i['norm'])} | {_fmt(t['max'])} | "
                 f"{_fmt(t['p99'])} | {_fmt(t['median'])} | {_fmt(t['norm'])} | {b} | {eq} | {plot} |")
    fails = [r for r in rep["rows"] if not r["pass"]]
    if fails:
        L.append("\n## Failures\n")
        for r in fails:
            L.append(f"- {r['op']}.{r['output']}: {'; '.join(r['why'])}")
    if rep["errors"]:
        L.append("\n## Errors\n")
        L += [f"- {e}" for e in rep["errors"]]
    mo = rep.get("model")
    L.append("\n## Small model: Linear(12->32), GELUErf, LayerNorm, Linear(32->10), CrossEntropy, AdamW\n")
    if isinstance(mo, dict) and "steps" in mo:
        L.append(f"{mo['steps']} steps, n = 16, from the same initial weights. Oracle loss {mo['oracle_loss_first']:.6f}"
                 f" -> {mo['oracle_loss_last']:.6f}.\n")
        L.append("| library | final loss | max relative loss distance to the oracle | final params: normwise ulp "
                 "| median ulp |")
        L.append("| --- | --- | --- | --- | --- |")
        for lib in ("impl", "torch"):
            L.append(f"| {lib} | {mo[f'{lib}_loss_last']:.7f} | {mo[f'{lib}_loss_rel_max']:.2e} | "
                     f"{mo[f'{lib}_param_norm_ulp']:.2f} | {mo[f'{lib}_param_median_ulp']:.2f} |")
    else:
        L.append(f"not run: {mo}")
    L.append("\n## Optimizers over 100 steps (impl vs torch.optim vs oracle)\n")
    if rep.get("optimizer_study"):
        L.append("See docs/optimizers.md for the causes. `python -m bendtorch.reference.optim_study` prints this table.\n")
        L.append(rep["optimizer_study"])
    else:
        L.append("not run (--quick)")
    L.append("\n## erf sweep (sample mode)\n")
    e = rep["erf"]
    if e.get("status") == "ok":
        L.append(f"{e['mode']}: max {e['max_ulp']} ulp (at {e['max_ulp_at']}), correctly rounded "
                 f"{100 * e['correctly_rounded_fraction']:.3f}%, within one ulp step "
                 f"{100 * e['within_one_ulp_fraction']:.4f}%, NaN in NaN out {e['nan_in_nan_out']}, odd "
                 f"{e['odd_symmetric']}. Full figures: `{e['json']}`.")
        if e.get("seed_claims"):
            L.append("\nThe seed's claims: " + "; ".join(
                f"{k}: {'holds' if v.get('holds', v.get('holds_to_0.1_percent')) else 'does not hold'}"
                for k, v in e["seed_claims"].items()))
    else:
        L.append(f"{e.get('status')}")
    f = rep.get("erf_full", {})
    L.append("\n## erf sweep: all 2^32 float32 inputs\n")
    if f.get("status") == "ok":
        made = ", ".join(f"`{r.get('command')}` ({r.get('seconds') or 0:.0f} s)" for r in f["runs"])
        L.append(f"From `{f['json']}`, made by {made} on "
                 f"{describe(f['machine'], ['torch'])}. "
                 f"{f['inputs']:,} inputs, {f['finite_inputs']:,} finite. Hard cases decided by mpmath: "
                 f"{f['hard_cases'].get('count')} {f['hard_cases'].get('counted_over', '')} (the float64 rounding "
                 f"was wrong on {f['hard_cases'].get('float64_rounding_was_wrong')}).\n")
        L.append("| the seed's claim (main.bend lines 1118-1120) | measured | verdict |")
        L.append("| --- | --- | --- |")
        for c in f["claims"]:
            L.append(f"| {c['claim']} | {c['measured']} | {'confirmed' if c['confirmed'] else 'REFUTED'} |")
        comp = f.get("comparisons") or {}
        if comp:
            L.append("\n| function | max ulp | correctly rounded | within one step | measured on |")
            L.append("| --- | --- | --- | --- | --- |")
            L.append(f"| impl (the seed's erf) | {f['max_ulp']:.7g} | {100 * f['correctly_rounded_fraction']:.3f}% | "
                     f"{100 * f['within_one_ulp_fraction']:.4f}% | any machine (impl's bits) |")
            names = {"torch": "torch.erf", "torch_gelu_erf_aten": "the erf inside PyTorch's GELU (ATen vector path)",
                     "clib": "the C library's erff"}
            for name, c in comp.items():
                name = names.get(name.partition("@")[0], name)
                if isinstance(c, dict) and "max_ulp" in c:
                    L.append(f"| {name} | {c['max_ulp']:.7g} | {100 * c.get('correctly_rounded_fraction', 0):.3f}% | "
                             f"{100 * c.get('within_one_ulp_fraction', 0):.4f}% | {cpu_name(c.get('machine'))} |")
        L.append("")
        L += [f"![{Path(p).stem}]({p})" for p in f["plots"]]
    else:
        L.append(str(f.get("status")))
    d = rep.get("drift")
    L.append("\n## Training drift: tiny Llama, AdamW, impl and PyTorch float32 against the float64 oracle\n")
    if isinstance(d, dict) and "impl" in d:
        L.append(f"`reference.llama_drift.drift_over_seeds(seeds={d['seeds']}, steps={d['steps']})`: batch "
                 f"{d['batch']} x 16 from the shipped corpus, lr {d['lr']:g}, betas {d['betas']}, wd {d['wd']}; after "
                 "each step ||p32 - p64|| / ||p64||, median (min to max) over the seeds.\n")
        L.append("| step | impl | PyTorch | impl / PyTorch |")
        L.append("| ---: | ---: | ---: | ---: |")
        for k, t in d["table"].items():
            a, b, q = t["impl"], t["torch"], t["ratio"]
            L.append(f"| {k} | {a['median']:.3e} ({a['min']:.2e} to {a['max']:.2e}) | {b['median']:.3e} "
                     f"({b['min']:.2e} to {b['max']:.2e}) | {q['median']:.2f} ({q['min']:.2f} to {q['max']:.2f}) |")
        if d.get("plot"):
            L.append(f"\n![drift]({d['plot']})")
    else:
        L.append(f"not run: {d}")
    lw = rep.get("laws")
    L.append("\n## Laws (z3 proofs and hypothesis, ci profile)\n")
    if isinstance(lw, dict) and lw.get("status") == "ok":
        other = {k: sum(r["result"] == k for r in lw["rows"]) for k in ("not applicable", "not run")}
        L.append(f"`{lw['command']}`: {sum(r['result'] == 'passed' for r in lw['rows'])} of {len(lw['rows'])} "
                 f"laws hold" + "".join(f", {v} {k}" for k, v in other.items() if v) +
                 f" ({lw['seconds']:.0f} s).\n")
        L.append("| family | law | holds | known | examples | result | time (s) |")
        L.append("| --- | --- | --- | --- | ---: | --- | ---: |")
        for r in lw["rows"]:
            L.append(f"| {r['family']} | {r['law']} | {r['holds']} | {r.get('known', '')} | {r['examples']} | "
                     f"{r['result']} | {r['seconds']:.2f} |")
    else:
        L.append(f"not run: {lw.get('status') if isinstance(lw, dict) else lw}")
    L.append("\n## Conformance: the laws held against impl, PyTorch and JAX\n")
    L.append(rep.get("conformance") or "not available")
    L.append("\n" + (rep.get("atlas") or "## The float32 function atlas\n\nnot available"))
    L.append("\n# Findings (committed results, reports/results/findings/)\n")
    L.append(rep.get("findings") or "not available")
    return "\n".join(L) + "\n"


def report(out: Path = DEFAULT_OUT, quick: bool = False, erf_sample_n: int | None = None, plots: bool = True,
           only: list[str] | None = None, quiet: bool = False, drift: bool = True, laws: bool = True,
           erf_full_json: Path | None = None, command: str = "bendtorch report") -> dict[str, Any]:
    """Run the comparisons and write out/report.json (SCHEMA_VERSION, records/schemas/report.schema.json) and
    out/REPORT.md. only: op names from reference.ops.OPS (an unknown name is a ValueError, before any work).
    erf_sample_n: the erf sweep's sample size (default 20000, 2000 when quick; 0 skips it). Returns the report."""
    import numpy as np

    from bendtorch.reference.ops import OPS

    if only:
        unknown = [n for n in only if n not in {o.name for o in OPS}]
        if unknown:
            raise ValueError(f"no op named {', '.join(map(repr, unknown))}; the names are: "
                             f"{', '.join(o.name for o in OPS)}")
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    plots_dir = out / "plots" if plots else None
    if plots_dir is not None:
        plots_dir.mkdir(exist_ok=True)
    ops = [o for o in OPS if not only or o.name in only]
    from bendtorch.records.machine import machine
    mach = machine(["torch", "mpmath", "matplotlib"])
    rows, errors = run_ops(ops, quick, plots_dir, quiet)

    model: Any
    try:
        from bendtorch.reference.model import model_run, summary
        model = summary(model_run(steps=10 if quick else 50))
        model = {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in model.items()}
    except Exception as e:  # noqa: BLE001
        model = f"{type(e).__name__}: {e}"
        errors.append(f"model: {model}")
    study_md = ""
    study_json: list[dict[str, Any]] = []
    if not quick and not only:
        try:
            from bendtorch.reference.optim_study import KINDS, study, table
            res = [study(k, s, seed=i) for i, k in enumerate(KINDS) for s in ((7, 13), (48, 64))]
            study_md = table(res)
            study_json = [r.summary() for r in res]
        except Exception as e:  # noqa: BLE001
            errors.append(f"optimizer study: {type(e).__name__}: {e}")
    n_erf = erf_sample_n if erf_sample_n is not None else (2000 if quick else 20000)
    erf = erf_sample(out, n_erf)
    full = erf_full(erf_full_json if erf_full_json is not None else FULL_SWEEP, out)
    drift_res: Any = "skipped (--no-drift)"
    if drift and not only:
        try:
            drift_res = drift_run(out, 20 if quick else 100, 2 if quick else 8, plots_dir is not None)
        except Exception as e:  # noqa: BLE001
            drift_res = f"{type(e).__name__}: {e}"
            errors.append(f"drift: {drift_res}")
    law_res: Any = {"status": "skipped (--no-laws)"}
    if laws and not only:
        law_res = law_table(out)
        if law_res.get("status") != "ok" or not law_res.get("all_pass"):
            errors.append(f"laws: {law_res.get('status')}, all pass: {law_res.get('all_pass')}")

    conformance, atlas, findings = committed_sections(out)
    draft = {"schema_version": SCHEMA_VERSION, "command": command, "mode": "quick" if quick else "full",
           "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": mach,
           "seconds": time.perf_counter() - t0, "rows": rows, "errors": errors, "model": model,
           "optimizer_study": study_md, "optimizer_study_rows": study_json, "erf": erf, "erf_full": full,
           "drift": drift_res, "laws": law_res, "conformance": conformance, "atlas": atlas, "findings": findings,
           "all_pass": bool(rows) and all(r["pass"] for r in rows) and not errors}
    from bendtorch.records.durable import as_json, write_json, write_text
    rep: dict[str, Any] = as_json(draft)  # as written, as the schema sees it
    write_json(out / "report.json", rep)
    write_text(out / "REPORT.md", markdown(rep))
    n_ok = sum(r["pass"] for r in rows)
    print(f"{n_ok} of {len(rows)} rows pass; {len(errors)} errors; {rep['seconds']:.1f} s -> "
          f"{out / 'REPORT.md'}, {out / 'report.json'}")
    return rep
