"""The law runner behind `bendtorch laws`: run the law suites under a hypothesis profile and print a table of
family, law, examples tried, result and time (the JSON holds the same rows)."""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any

import pytest

LAWS_DIR = pathlib.Path(__file__).resolve().parent
CONFORMANCE = "test_targets"  # the module of the laws every target is held to
SCHEMA_VERSION = 1  # the layout of `bendtorch laws --json`'s document (records/schemas/laws.schema.json)


def _is_assertion(e: BaseException) -> bool:
    """A law that does not hold raises an AssertionError (hypothesis may group several): anything else is an error
    in the law or the adapter."""
    if isinstance(e, BaseExceptionGroup):
        return all(_is_assertion(x) for x in e.exceptions)
    return isinstance(e, AssertionError)


class _Collector:
    """A pytest plugin recording each law's outcome ("passed", "failed", "error", "not applicable", "not run"),
    the reason of a skip, the failure's message and the wall time."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        out = yield
        rep = out.get_result()
        if call.excinfo is not None and rep.failed:
            rep.law_kind = "failed" if call.when == "call" and _is_assertion(call.excinfo.value) else "error"
            rep.law_message = call.excinfo.exconly().splitlines()[0][:500]

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            key = report.nodeid.split("[")[0]
            row = self.rows.setdefault(key, {"outcome": "passed", "seconds": 0.0})
            row["seconds"] += report.duration
            if report.skipped:
                reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
                reason = reason.removeprefix("Skipped: ")
                row["outcome"] = "not applicable" if reason.startswith("not applicable") else "not run"
                row["reason"] = reason.split(": ", 1)[1] if reason.startswith(("not applicable:", "not run:")) \
                    else reason
            elif report.failed:
                row["outcome"] = getattr(report, "law_kind", "error")
                row["message"] = getattr(report, "law_message", "")


def run_laws(profile: str, select: str | None = None, quiet: bool = True, target: str = "impl",
             device: str = "cpu", tf32: bool = False) -> list[dict[str, Any]]:
    """Run the laws under the profile against a target; one row per law. impl runs every suite of laws/ (the seed's
    own laws and the conformance laws); another target runs the conformance laws (test_targets.py) alone. Each row:
    family, law, holds, known, examples, result ("passed", "failed", "error", "not applicable", "not run"),
    seconds, target, suite ("impl" or "conformance"), and where there is one the reason of a skip, the failure's
    message and the smallest counterexample hypothesis found."""
    from bendtorch.laws.registry import COUNTEREXAMPLES, EXAMPLES, LAWS, strength_text
    from bendtorch.laws.targets import describe, load_label

    label = load_label(target, device, tf32)
    why = describe(target, device, tf32).get("not_run")
    if why is not None:  # the target cannot run here: every conformance law says so, without starting pytest
        import importlib
        importlib.import_module(f"bendtorch.laws.{CONFORMANCE}")
        return [{"family": i.family, "law": i.name, "holds": i.holds, "examples": 0, "known": "", "result": "not run",
                 "seconds": 0.0, "target": label, "suite": "conformance", "reason": why}
                for k, i in sorted(LAWS.items(), key=lambda kv: (kv[1].family, kv[1].name))
                if k.split("::")[0].endswith(CONFORMANCE)]
    os.environ["BENDTORCH_LAWS_PROFILE"] = profile
    EXAMPLES.clear()
    COUNTEREXAMPLES.clear()
    col = _Collector()
    where = str(LAWS_DIR) if target == "impl" else str(LAWS_DIR / f"{CONFORMANCE}.py")
    args = [where, "-p", "no:cacheprovider", "--profile", profile, "--target", target, "--device", device,
            "--tf32", "on" if tf32 else "off"]
    if quiet:
        args.append("-q")
    if select:
        args += ["-k", select]
    pytest.main(args, plugins=[col])
    rows = []
    for key, info in sorted(LAWS.items(), key=lambda kv: (kv[1].family, kv[1].name)):
        mod, fn = key.split("::")
        node = f"{pathlib.Path(*mod.split('.')).as_posix()}.py::{fn}"
        hit = next((r for k, r in col.rows.items() if k.endswith(node)), None)
        if hit is None:
            continue
        row = {"family": info.family, "law": info.name, "holds": info.holds, "examples": EXAMPLES[key],
               "known": strength_text(info, EXAMPLES[key]), "result": hit["outcome"],
               "seconds": round(hit["seconds"], 3), "target": label,
               "suite": "conformance" if mod.endswith(CONFORMANCE) else "impl"}
        for extra in ("reason", "message"):
            if extra in hit:
                row[extra] = hit[extra]
        if hit["outcome"] == "failed" and key in COUNTEREXAMPLES:
            row["counterexample"] = COUNTEREXAMPLES[key]
        rows.append(row)
    return rows


def _inputs(ce: dict[str, Any]) -> str:
    """The counterexample's inputs in brief: arrays by shape, scalars by value."""
    out = []
    for k, v in ce.get("inputs", {}).items():
        if isinstance(v, dict) and "shape" in v:
            out.append(f"{k} {'x'.join(map(str, v['shape'])) or 'scalar'}")
        elif isinstance(v, dict) and "value" in v:
            out.append(f"{k} {v['value']!r}")
        elif isinstance(v, list) and all(isinstance(a, dict) and "shape" in a for a in v):
            out.append(f"{k} [{', '.join('x'.join(map(str, a['shape'])) for a in v)}]")
        elif not isinstance(v, (dict, list)):
            out.append(f"{k} {v}")
    return ", ".join(out)


def _note(r: dict[str, Any]) -> str:
    """A row's reason (not applicable, not run), or its failure in one line: what differs, the first two bit
    patterns and the inputs in brief."""
    if "reason" in r:
        return str(r["reason"])
    ce = r.get("counterexample")
    if ce:
        first = ce.get("first")
        bits = (f"; first difference at {first.get('index')}: {first.get('got_bits')} ({first.get('got')!r}) "
                f"against {first.get('want_bits')} ({first.get('want')!r})") if first else ""
        return f"{ce.get('what', '')}{bits}; inputs: {_inputs(ce)}"
    return str(r.get("message", ""))


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| family | law | holds | known | examples | result | time (s) | note |\n"
            "| --- | --- | --- | --- | ---: | --- | ---: | --- |\n")
    return head + "".join(f"| {r['family']} | {r['law']} | {str(r['holds']).replace('|', '/')} | "
                          f"{r.get('known', '')} | {r['examples']} | "
                          f"{r['result']} | "
                          f"{r['seconds']:.2f} | {_note(r).replace('|', '/')} |\n" for r in rows)


def exit_code(rows: list[dict[str, Any]], target: str) -> int:
    """impl: 1 when a law fails or errs (or none ran). Another target: a failing law is a finding, reported with
    its counterexample, so 1 only when a law errs (a bug in the law or the adapter) or none ran."""
    if not rows:
        return 1
    bad = ("failed", "error") if target == "impl" else ("error",)
    return 1 if any(r["result"] in bad for r in rows) else 0


def run_and_print(profile: str, select: str | None = None, json_path: pathlib.Path | None = None,
                  target: str = "impl", device: str = "cpu") -> int:
    """Run the laws under the profile against the target, print the table and a summary line, and write the rows
    to json_path if given (atomically), with the target's versions and the machine. On "cuda" PyTorch runs twice,
    TF32 off then on (without a GPU both say "not run: no GPU"). Returns exit_code's answer."""
    from bendtorch.laws.targets import describe

    t0 = time.time()
    runs = [False, True] if device == "cuda" else [False]
    rows: list[dict[str, Any]] = []
    for tf32 in runs:
        rows += run_laws(profile, select, target=target, device=device, tf32=tf32)
    seconds = time.time() - t0
    print(table(rows))
    counts = {k: sum(r["result"] == k for r in rows) for k in ("passed", "failed", "error", "not applicable",
                                                                "not run")}
    print(", ".join(f"{v} {k}" for k, v in counts.items() if v or k in ("passed", "failed")) +
          f" ({seconds:.1f} s, profile {profile}, target {target}" + (f" {device}" if device != "cpu" else "") + ")")
    if json_path is not None:
        from bendtorch.records.durable import write_json
        from bendtorch.records.machine import PROBES, machine
        doc = {"schema_version": SCHEMA_VERSION, "profile": profile, "target": target, "device": device,
               "seconds": round(seconds, 1), "targets": [describe(target, device, tf32) for tf32 in runs],
               "machine": machine([target] if target in PROBES else []), "rows": rows}
        write_json(json_path, doc)
    return exit_code(rows, target)


# ---------------------------------------------------------------------------------------------------------------
# the conformance table: law x target
# ---------------------------------------------------------------------------------------------------------------

CELL = {"passed": "holds", "failed": "**fails**", "error": "error", "not applicable": "n/a", "not run": "not run"}


def conformance_markdown(results: list[dict[str, Any]]) -> str:
    """The conformance table for REPORT.md from the JSON documents `bendtorch laws --target T --json FILE` wrote (one
    per target and device): a row per conformance law, a column per target (holds / fails / n/a / not run), then
    the targets' versions and machine, every failure's smallest counterexample, and every reason a law was not
    applicable or not run."""
    from bendtorch.records.machine import describe as describe_machine
    labels: list[str] = []
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    laws: list[tuple[str, str]] = []
    for doc in results:
        for r in doc["rows"]:
            if r.get("suite") != "conformance":
                continue
            lw = (r["family"], r["law"])
            if lw not in laws:
                laws.append(lw)
            if r["target"] not in labels:
                labels.append(r["target"])
            cells[(f"{lw[0]}/{lw[1]}", r["target"])] = r
    out = ["| family | law | " + " | ".join(labels) + " |", "| --- | --- |" + " --- |" * len(labels)]
    for fam, name in laws:
        row = [CELL.get(cells[(f"{fam}/{name}", t)]["result"], "?") if (f"{fam}/{name}", t) in cells else "-"
               for t in labels]
        out.append(f"| {fam} | {name} | " + " | ".join(row) + " |")
    out.append("")
    for doc in results:
        for d in doc.get("targets", []):
            vers = ", ".join(f"{k} {v}" for k, v in d.get("versions", {}).items())
            why = f" not run: {d['not_run']}" if "not_run" in d else ""
            out.append(f"- {d['target']}: {vers}{why} (profile {doc.get('profile')}, {doc.get('seconds')} s; "
                       f"measured on {describe_machine(doc.get('machine'))})")
    fails = [(k, r) for k, r in cells.items() if r["result"] in ("failed", "error")]
    if fails:
        out += ["", "Smallest counterexamples found (inputs' bits and the seed that regenerates them are in the "
                "JSON):", ""]
        for (which, t), r in fails:
            out.append(f"- {t} `{which}`: {_note(r)}")
    skips = [(k, r) for k, r in cells.items() if r["result"] in ("not applicable", "not run")]
    whole = {t for t in labels if len({(r["result"], r.get("reason")) for (_, u), r in cells.items() if u == t}) == 1
             and all(r["result"] == "not run" for (_, u), r in cells.items() if u == t)}
    if skips:
        out += ["", "Not applicable or not run:", ""]
        for t in sorted(whole, key=labels.index):
            out.append(f"- {t}: every law not run: {next(r.get('reason', '') for (_, u), r in skips if u == t)}")
        for (which, t), r in skips:
            if t not in whole:
                out.append(f"- {t} `{which}`: {r['result']}: {r.get('reason', '')}")
    return "\n".join(out) + "\n"


def load_results(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The JSON documents of a conformance results folder, in the order of TARGETS (impl, torch, jax), CPU first."""
    from bendtorch.laws.targets import TARGETS
    docs = [json.loads(f.read_text()) for f in sorted(pathlib.Path(folder).glob("*.json"))]
    return sorted(docs, key=lambda d: (TARGETS.index(d.get("target", "impl")) if d.get("target") in TARGETS
                                       else len(TARGETS), d.get("device", "cpu") != "cpu"))


def write_conformance(folder: str | os.PathLike[str]) -> pathlib.Path:
    """Write folder/CONFORMANCE.md (atomically): the conformance table of the JSON documents in folder."""
    from bendtorch.records.durable import write_text
    out = pathlib.Path(folder) / "CONFORMANCE.md"
    head = ("# Conformance: the laws held against impl, PyTorch and JAX\n\n"
            "Each document here was written by `bendtorch laws --target T [--device D] --json T.json` (profile ci); "
            "this table by `bendtorch.laws.run.write_conformance`. holds: no counterexample in the examples tried; "
            "**fails**: the smallest counterexample hypothesis found is below and, with the inputs' bits, in the "
            "JSON.\n\n")
    write_text(out, head + conformance_markdown(load_results(folder)))
    return out
