"""The report behind `bendtorch report`: the reference comparisons of reference/ops.py (every layer forward and
backward, every loss, every combinator composition, every optimizer step) run in impl, PyTorch float32 and the
float64 oracle, judged by the same `reference.ops.judge` the tests use, with paired ulp-error distribution plots
(impl vs PyTorch, per op), the machine, the command, the small-model training run, the optimizer study (100 steps),
the erf sweep's sampled figures, the training drift and the law table; then the committed results (the conformance
table, the function atlas, the findings), each figure about another library with the machine it was measured on,
and the cheap machine-dependent facts measured again here beside them: PyTorch's batch-size groups (the invariance
study) and the conformance table's torch column (`bendtorch laws --target torch`, ci profile), saying where this
machine and the committed figures differ. impl's figures are facts of every machine.

    bendtorch report [--out DIR] [--quick] [--erf-sample N] [--no-plots] [--only NAME ...] [--no-live]

Written into OUT (default records.paths.output_dir("report")): report.json (SCHEMA_VERSION,
records/schemas/report.schema.json), REPORT.md, and every file REPORT.md links (plots, the committed results'
plots, the law runs' JSON), so the folder can be moved or shared. --quick runs one shape and one seed per op, a
10-step model run, no 100-step optimizer study and a small erf sample; the default (a few minutes on 2 cores) runs
every case the tests run.

torch, matplotlib and tqdm are imported inside the functions, so `bendtorch --help` stays quick.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

SCHEMA_VERSION = 5  # report.json's layout (records/schemas/report.schema.json)

ROOT = Path(__file__).resolve().parent.parent  # the checkout, or the installed package's folder
RESULTS = ROOT / "reports" / "results"  # the committed results
FULL_SWEEP = RESULTS / "atlas" / "erf" / "sweep_full.json"  # `bendtorch sweep erf`'s
# every name the report writes in its folder (refused up front where one is a symbolic link)
OUTPUTS = ("REPORT.md", "report.json", "laws.json", "laws_torch.json", "plots", "drift.png", "erf", "erf_full",
           "ATLAS.md", "atlas", "findings")


def one_line(text: str) -> str:
    """text with every run of white space (newlines included) as one space: an error is one line."""
    return " ".join(str(text).split())


def shown(path: Path) -> str:
    """A path as REPORT.md names it: a committed result by its place in the project (reports/results/...), never a
    path of the machine that wrote the report; anything else as given."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def copy_beside(src: Path, out: Path, rel: str) -> str:
    """src copied to out/rel (through the durable writer: atomic, never through a link); returns rel, the link."""
    from bendtorch.records.durable import write_bytes

    dst = out / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(dst, src.read_bytes())
    return rel


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


# ---- the erf sweep: its sample here, its committed full run ------------------------------------------------------

def erf_sample(out: Path, n: int, shown_out: str) -> dict[str, Any]:
    """The erf entry of the sweep in its sample mode, impl's figures and the seed's claims (guarded: if it cannot be
    imported or fails, the report says so)."""
    if n <= 0:
        return {"status": "skipped (--erf-sample 0)"}
    try:
        from bendtorch.reports import sweep
    except Exception as e:  # noqa: BLE001 - reported in REPORT.md
        return {"status": f"the sweep is not importable: {type(e).__name__}: {e}"}
    try:
        rep = sweep.sample("erf", n, out, command=f"bendtorch sweep erf --sample {n} --out {shown_out} --no-plots")
    except Exception as e:  # noqa: BLE001 - reported in REPORT.md
        return {"status": f"erf sweep sample failed: {type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=3)}
    imp = rep["libraries"]["impl"]
    keep = ("inputs", "finite_inputs", "max_ulp", "max_ulp_at", "correctly_rounded_fraction",
            "within_one_ulp_fraction", "faithful_fraction", "nan_in_nan_out", "odd_symmetric")
    claims = {k: v for k, v in imp.get("claims", {}).items() if k != "source"}
    return {"status": "ok", "json": os.path.relpath(rep["json"], out), "mode": rep["mode"],
            **{k: imp.get(k) for k in keep}, "seed_claims": claims}


# the seed's claims for its erf (main.bend lines 1118-1120), as the sweep's erf entry checks them (judged into the
# impl library's "claims"): the words of the seed and the measured figure
ERF_CLAIMS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "max_ulp_at_most": ("at most 0.93 ulp off", lambda e: f"max {e['max_ulp']:.4f} ulp"),
    "correctly_rounded_fraction": ("the correctly rounded float32 on 97.1% of the inputs",
                                   lambda e: f"{100 * e['correctly_rounded_fraction']:.3f}% of finite inputs"),
    "within_one_ulp_fraction": ("1 ulp from it on the rest",
                                lambda e: f"{100 * e['within_one_ulp_fraction']:.4f}% within one float32 step"),
    "nan_in_nan_out": ("NaN for every NaN", lambda e: f"nan_in_nan_out = {e['nan_in_nan_out']}"),
}


def erf_full(path: Path, out: Path) -> dict[str, Any]:
    """The full sweep of the erf entry (default the committed reports/results/atlas/erf/sweep_full.json, `bendtorch
    sweep erf`), with the seed's claims confirmed or refuted and the other libraries beside impl; its plots are
    copied to out/erf_full/."""
    if not path.is_file():
        return {"status": f"no full sweep at {shown(path)} (run `bendtorch sweep erf`)"}
    e = json.loads(path.read_text())
    imp = e["libraries"]["impl"]
    judged = imp.get("claims", {})
    claims = [{"claim": words, "confirmed": bool(judged[k]["holds"]), "measured": fig(imp)}
              for k, (words, fig) in ERF_CLAIMS.items() if k in judged]
    if len(claims) != len(ERF_CLAIMS):
        return {"status": f"{shown(path)}: impl's claims {sorted(judged)} are not the seed's {sorted(ERF_CLAIMS)}"}
    plots = [copy_beside(path.parent / p, out, f"erf_full/{Path(p).name}") for p in e.get("plots", [])
             if (path.parent / p).is_file()]
    runs = e.get("runs") or [{"command": e.get("command"), "seconds": e.get("seconds")}]
    return {"status": "ok", "json": shown(path), "runs": runs, "seconds": sum(r.get("seconds") or 0.0 for r in runs),
            "machine": e.get("machine"), "inputs": imp.get("inputs"), "finite_inputs": imp.get("finite_inputs"),
            "max_ulp": imp["max_ulp"], "max_ulp_at": imp.get("max_ulp_at"),
            "correctly_rounded_fraction": imp["correctly_rounded_fraction"],
            "within_one_ulp_fraction": imp["within_one_ulp_fraction"], "hard_cases": e.get("hard_cases", {}),
            "comparisons": {k: v for k, v in e["libraries"].items() if k != "impl"},
            "claims": claims, "plots": plots}


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


# ---- the laws: impl's suites, and the torch target's conformance column measured here ----------------------------

def law_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many rows have each result (laws.run.counts), and how many rows in all."""
    from bendtorch.laws.run import counts

    return {**counts(rows), "total": len(rows)}


def law_run(out: Path, target: str = "impl", select: str | None = None) -> dict[str, Any]:
    """`bendtorch laws --profile ci` against the target (impl: every suite; another target: the conformance laws),
    in a subprocess so that its hypothesis settings stay its own, writing out/laws.json (out/laws_TARGET.json). The
    subprocess runs in out (an absolute path) with hypothesis's database in the cache folder, so nothing lands in
    the current directory or the installed package. impl: every law must pass (a failure is an error); another
    target: a failing law is a finding, only an erring one is an error. select: only the laws matching this pytest
    -k expression."""
    from bendtorch.records.paths import cache_dir

    name = "laws.json" if target == "impl" else f"laws_{target}.json"
    j = out / name
    if j.is_file():
        j.unlink()  # an earlier run's rows must not stand in for this run's
    # the target always named: $BENDTORCH_TARGET must not turn impl's table into another library's
    args = ["laws", "--profile", "ci", "--target", target, *([] if select is None else ["-k", select]),
            "--json", name]
    env = dict(os.environ, HYPOTHESIS_STORAGE_DIRECTORY=str(cache_dir("hypothesis").resolve()))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bendtorch", *args], cwd=out, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - t
    command = " ".join(["bendtorch", *args])
    if not j.is_file():
        tail = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        return {"status": f"wrote no rows (exit {proc.returncode}): {one_line(tail)[:300]}",
                "command": command}
    from bendtorch.laws.run import SUITES

    doc = json.loads(j.read_text())
    rows = doc["rows"]
    bad = ("failed", "error") if target == "impl" else ("error",)
    return {"status": "ok", "command": command, "json": name, "exit": proc.returncode, "rows": rows,
            "machine": doc.get("machine"), "targets": doc.get("targets", []), "seconds": seconds,
            "counts": law_counts(rows), "suites": {s: law_counts([r for r in rows if r.get("suite") == s])
                                                   for s in SUITES if any(r.get("suite") == s for r in rows)},
            "all_pass": bool(rows) and proc.returncode == 0 and not any(r["result"] in bad for r in rows)}


def law_errors(res: dict[str, Any]) -> list[str]:
    """law_run's result as the report's errors: none, or one line saying what did not run or what failed."""
    if res["status"] != "ok":
        return [one_line(f"{res.get('command', 'bendtorch laws')}: {res['status']}")]
    if res["all_pass"]:
        return []
    c = res["counts"]
    return [f"{res['command']}: {c['failed']} failed, {c['error']} erred of {c['total']} laws (exit {res['exit']}; "
            f"rows in {res['json']})"]


def _relabel(doc: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """A conformance document with the target label `old` written `new` in its rows and its target list."""
    return {**doc, "rows": [{**r, "target": new} if r.get("target") == old else r for r in doc["rows"]],
            "targets": [{**t, "target": new} if t.get("target") == old else t for t in doc.get("targets", [])]}


def conformance(live: dict[str, Any] | None, here: dict[str, Any],
                out: Path | None = None) -> tuple[str, dict[str, Any]]:
    """The conformance table from the committed documents (reports/results/conformance/), the torch column measured
    here beside the committed one when `live` (law_run's result for torch) has rows; and the comparison of the two
    columns: the laws whose results differ and whether the machines are the same."""
    from bendtorch.laws.repro import sidecars
    from bendtorch.laws.run import conformance_markdown, load_results
    from bendtorch.records.machine import compare_note, describe

    docs = load_results(RESULTS / "conformance")
    # the failures' reproductions with the data files they load, copied beside the report (with out) so its links
    # stay inside its folder and each script runs there
    repro = RESULTS / "conformance" / "repro"
    scripts, link = {p.name for p in repro.glob("*.py")}, shown(repro) + "/"
    if out is not None:
        link = "conformance/repro/"
        for name in sorted(scripts):
            for data in sidecars(repro, name):
                copy_beside(data, out, link + data.name)
            copy_beside(repro / name, out, link + name)
    if not live or live.get("status") != "ok":
        return conformance_markdown(docs, scripts, link), {"status": "not measured here: " + str((live or {}).get("status"))}
    mine = {"profile": "ci", "seconds": round(live["seconds"], 1), "machine": live["machine"],
            "targets": live["targets"], "rows": live["rows"]}
    old = next((d for d in docs if any(r.get("target") == "torch" for r in d["rows"])), None)
    at = docs.index(old) + 1 if old is not None else len(docs)
    docs = [_relabel(d, "torch", "torch (committed)") for d in docs]
    docs.insert(at, _relabel(mine, "torch", "torch (here)"))
    ours = {(r["family"], r["law"]): r["result"] for r in live["rows"] if r.get("suite") == "conformance"}
    theirs = {(r["family"], r["law"]): r["result"] for r in (old or {"rows": []})["rows"]
              if r.get("target") == "torch" and r.get("suite") == "conformance"}
    differ = [f"{f}/{n}: committed {theirs[(f, n)]}, here {res}" for (f, n), res in ours.items()
              if (f, n) in theirs and theirs[(f, n)] != res]
    note = compare_note((old or {}).get("machine"), here, "torch") if old is not None else "no committed column"
    return conformance_markdown(docs, scripts, link), {
        "status": "ok", "committed_on": describe((old or {}).get("machine"), ["torch"]),
        "here": describe(here, ["torch"]), "same_machine": note is None, "machine_note": note, "differ": differ}


def committed_sections(out: Path, live_conformance: dict[str, Any] | None, live_invariance: dict[str, Any] | None,
                       here: dict[str, Any]) -> dict[str, Any]:
    """The conformance table, the function atlas and the findings, rendered from the committed results
    (reports/results/{conformance,atlas,findings}/) as Markdown, with the live measurements beside them; the
    committed plots are copied beside REPORT.md (out/atlas/, out/findings/)."""
    from bendtorch.records.machine import describe
    from bendtorch.reports.findings import findings_markdown
    from bendtorch.reports.sweep import atlas_markdown

    got: dict[str, Any] = {"conformance_compared": {"status": "not rendered"}}

    def conf(d: Path) -> str:
        md, got["conformance_compared"] = conformance(live_conformance, here, out)
        return md

    renders: tuple[tuple[str, Callable[[Path], str]], ...] = (
        ("conformance", conf),
        ("atlas", lambda d: atlas_markdown(d, link_prefix="atlas")),
        ("findings", lambda d: findings_markdown(d, heading="##", link_prefix="findings/", live=live_invariance,
                                                 here=describe(here, ["torch"]))))
    for name, render in renders:
        try:
            got[name] = render(RESULTS / name)
        except Exception as e:  # noqa: BLE001  (a missing or old results folder is reported, not fatal)
            got[name] = f"not available: {type(e).__name__}: {e}"
    for name in ("findings", "atlas"):
        for png in sorted((RESULTS / name).rglob("*.png")):
            copy_beside(png, out, f"{name}/{png.relative_to(RESULTS / name).as_posix()}")
    return got


def live_invariance(errors: list[str]) -> dict[str, Any]:
    """The invariance study measured here (reports.findings.live_invariance), with impl's result checked against
    the committed study's: impl's bits are the same on every machine, so a difference is an error."""
    from bendtorch.reports.findings import RESULTS as FINDINGS
    from bendtorch.reports.findings import invariance_differences
    from bendtorch.reports.findings import live_invariance as measure

    try:
        res = measure()
    except Exception as e:  # noqa: BLE001 - reported in REPORT.md and as an error
        errors.append(one_line(f"live batch-size groups: {type(e).__name__}: {e}"))
        return {"status": f"failed: {type(e).__name__}: {e}"}
    try:
        committed = json.loads((FINDINGS / "invariance.json").read_text())
    except (OSError, ValueError):
        committed = {}
    impl_diff = [d for d in invariance_differences(res, committed) if d.startswith("impl ")]
    for d in impl_diff:
        errors.append(one_line(f"impl's batch invariance differs from the committed study: {d}"))
    return {"status": "ok", **res, "impl_differs": impl_diff}


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


def accuracy_run(targets: list[Any] | None, quick: bool, only: list[str] | None, command: str,
                 skip_not_run: bool = False) -> dict[str, Any]:
    """The op-accuracy matrix (reports.accuracy) of the columns `targets` (reports.accuracy.columns; None: impl
    and torch), over the measured ops (those named in `only` when given), the report's mode deciding the cases."""
    from bendtorch.reports import accuracy as A

    t0 = time.perf_counter()
    cols = targets if targets is not None else A.columns(list(A.DEFAULT))
    ops = [o for o in A.measured_ops() if not only or o.name in only]
    done, not_run = A.measure(cols, quick, ops, skip_not_run)
    return A.document(done, not_run, quick, command, time.perf_counter() - t0)


def report(out: Path, quick: bool = False, erf_sample_n: int | None = None, plots: bool = True,
           only: list[str] | None = None, quiet: bool = False, drift: bool = True, laws: bool = True,
           erf_full_json: Path | None = None, command: str = "bendtorch report", live: bool = True,
           shown_out: Path | None = None, targets: list[Any] | None = None,
           skip_not_run: bool = False) -> dict[str, Any]:
    """Run the comparisons and write out/report.json (SCHEMA_VERSION, records/schemas/report.schema.json),
    out/REPORT.md and every file it links into out (made absolute here: the laws' subprocess runs elsewhere).
    only: op names from reference.ops.OPS (an unknown name is a ValueError, before any work; only also skips the
    model-wide sections). erf_sample_n: the erf sweep's sample size (default 20000, 2000 when quick; 0 skips it).
    live: measure PyTorch's batch-size groups and its conformance column here. shown_out: the folder as the user
    named it, for the commands written into the report. targets: the op-accuracy matrix's columns
    (reports.accuracy.columns; None: impl and torch), skip_not_run: leave out those that cannot be made here.
    Returns the report; rep["errors"] holds one line per error."""
    import numpy as np

    from bendtorch.reference.ops import OPS

    if only:
        unknown = [n for n in only if n not in {o.name for o in OPS}]
        if unknown:
            raise ValueError(f"no op named {', '.join(map(repr, unknown))}; the names are: "
                             f"{', '.join(o.name for o in OPS)}")
    t0 = time.perf_counter()
    shown_as = str(shown_out if shown_out is not None else out)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    plots_dir = out / "plots" if plots else None
    if plots_dir is not None:
        plots_dir.mkdir(exist_ok=True)
    ops = [o for o in OPS if not only or o.name in only]
    from bendtorch.records.machine import machine
    mach = machine(["torch", "mpmath", "matplotlib"])
    rows, errors = run_ops(ops, quick, plots_dir, quiet)
    errors = [one_line(e) for e in errors]
    acc: dict[str, Any]
    try:
        acc = accuracy_run(targets, quick, only, command, skip_not_run)
        errors += [one_line(e) for e in acc["impl_failures"] + acc["errors"]]
    except Exception as e:  # noqa: BLE001 - reported in REPORT.md and as an error
        acc = {"status": f"failed: {type(e).__name__}: {e}"}
        errors.append(one_line(f"op accuracy by target: {acc['status']}"))

    model: Any
    try:
        from bendtorch.reference.model import model_run, summary
        model = summary(model_run(steps=10 if quick else 50))
        model = {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in model.items()}
    except Exception as e:  # noqa: BLE001
        model = f"{type(e).__name__}: {e}"
        errors.append(one_line(f"model: {model}"))
    study_md = ""
    study_json: list[dict[str, Any]] = []
    if not quick and not only:
        try:
            from bendtorch.reference.optim_study import KINDS, study, table
            res = [study(k, s, seed=i) for i, k in enumerate(KINDS) for s in ((7, 13), (48, 64))]
            study_md = table(res)
            study_json = [r.summary() for r in res]
        except Exception as e:  # noqa: BLE001
            errors.append(one_line(f"optimizer study: {type(e).__name__}: {e}"))
    n_erf = erf_sample_n if erf_sample_n is not None else (2000 if quick else 20000)
    erf = erf_sample(out, n_erf, shown_as)
    if erf["status"] != "ok" and n_erf > 0:
        errors.append(one_line(f"erf sample: {erf['status']}"))
    full = erf_full(erf_full_json if erf_full_json is not None else FULL_SWEEP, out)
    drift_res: Any = "skipped (--no-drift)" if not drift else "skipped (--only)"
    if drift and not only:
        try:
            drift_res = drift_run(out, 20 if quick else 100, 2 if quick else 8, plots_dir is not None)
        except Exception as e:  # noqa: BLE001
            drift_res = f"{type(e).__name__}: {e}"
            errors.append(one_line(f"drift: {drift_res}"))
    law_res: dict[str, Any] = {"status": "skipped (--no-laws)" if not laws else "skipped (--only)"}
    if laws and not only:
        law_res = law_run(out)
        errors += law_errors(law_res)
    live_res: dict[str, Any] = {"status": "skipped (--no-live)" if not live else "skipped (--only)"}
    if live and not only:
        torch_laws = law_run(out, "torch")
        errors += law_errors(torch_laws)
        live_res = {"status": "ok", "conformance_torch": torch_laws, "invariance": live_invariance(errors)}
    sections = committed_sections(out, live_res.get("conformance_torch"), live_res.get("invariance"), mach)
    if live_res["status"] == "ok":
        live_res["conformance_compared"] = sections["conformance_compared"]
    draft = {"schema_version": SCHEMA_VERSION, "command": command, "mode": "quick" if quick else "full",
             "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": mach,
             "seconds": time.perf_counter() - t0, "rows": rows, "errors": errors, "model": model,
             "optimizer_study": study_md, "optimizer_study_rows": study_json, "erf": erf, "erf_full": full,
             "drift": drift_res, "laws": law_res, "live": live_res, "conformance": sections["conformance"],
             "atlas": sections["atlas"], "findings": sections["findings"], "accuracy": acc,
             "all_pass": bool(rows) and all(r["pass"] for r in rows) and not errors}
    from bendtorch.records.durable import as_json, write_json, write_text
    from bendtorch.reports.report_markdown import headline, markdown
    rep: dict[str, Any] = as_json(draft)  # as written, as the schema sees it
    write_json(out / "report.json", rep)
    write_text(out / "REPORT.md", markdown(rep))
    print(f"{headline(rep)}; {rep['seconds']:.1f} s -> {Path(shown_as) / 'REPORT.md'}, "
          f"{Path(shown_as) / 'report.json'}")
    return rep
