"""The law runner behind `bendtorch laws`: run the law suites under a hypothesis profile against a target and print
a table of suite, family, law, examples tried, result and time, with one total line (the JSON holds the same rows,
the targets' versions and the machine record).

A target is named by a spec (bendtorch.targets.resolve: a built-in name, a "module:attr" reference, an entry point
of the group bendtorch.targets); each of its variants on the device is a column of its own. The made target goes to
the pytest plugin (bendtorch.laws.plugin) through the session's stash, so the laws test the very object whose
versions the document records. A target of several columns runs them at once, each in a process of its own
(`bendtorch laws --variant V` there, its rows read back from its JSON), as many at a time as `jobs` says (default:
every column, at most one per core): a column's work is mostly one thread (tracing, code generation, one law after
another), so on two cores torch.compile's two columns take 82 s together instead of 110 s in turn (docs/FINDINGS.md).
The rows, the table and the document are the same either way; only the times differ."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from bendtorch.targets import Resolved, Target

LAWS_DIR = pathlib.Path(__file__).resolve().parent
CONFORMANCE = "test_targets"  # the module of the laws every target is held to
SUITES = ("impl", "conformance")  # impl's own laws (every other module of laws/), then the conformance laws
SCHEMA_VERSION = 1  # the layout of `bendtorch laws --json`'s document (records/schemas/laws.schema.json)
RESULTS = ("passed", "failed", "error", "not applicable", "not run")


def _is_assertion(e: BaseException) -> bool:
    """A law that does not hold raises an AssertionError (hypothesis may group several): anything else is an error
    in the law or the adapter."""
    if isinstance(e, BaseExceptionGroup):
        return all(_is_assertion(x) for x in e.exceptions)
    return isinstance(e, AssertionError)


def law_key(item: Any) -> str:
    """The registry's key of the law a test item runs ("module::function", as @law recorded it)."""
    fn = getattr(item, "function", None)
    return f"{fn.__module__}::{fn.__name__}" if fn is not None else str(item.nodeid)


class _Collector:
    """A pytest plugin recording each law's outcome ("passed", "failed", "error", "not applicable", "not run"),
    the reason of a skip, the failure's message and the wall time, by the law's registry key (the parameters of one
    law are one row); it hands the made target to the plugin's fixture."""

    def __init__(self, target: Target) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.target = target

    def pytest_configure(self, config: pytest.Config) -> None:
        from bendtorch.laws.plugin import MADE
        config.stash[MADE] = self.target

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        out = yield
        rep = out.get_result()
        rep.law_key = law_key(item)
        if call.excinfo is not None and rep.failed:
            rep.law_kind = "failed" if call.when == "call" and _is_assertion(call.excinfo.value) else "error"
            rep.law_message = call.excinfo.exconly().splitlines()[0][:500]

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            row = self.rows.setdefault(getattr(report, "law_key", report.nodeid), {"outcome": "passed", "seconds": 0.0})
            row["seconds"] += report.duration
            if report.skipped:
                reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
                # the first line: hypothesis adds the explicit example it was running on the lines after
                reason = reason.removeprefix("Skipped: ").splitlines()[0] if reason.strip() else reason
                row["outcome"] = "not applicable" if reason.startswith("not applicable") else "not run"
                row["reason"] = reason.split(": ", 1)[1] if reason.startswith(("not applicable:", "not run:")) \
                    else reason
            elif report.failed:
                row["outcome"] = getattr(report, "law_kind", "error")
                row["message"] = getattr(report, "law_message", "")


@dataclass
class Column:
    """One column of the law table: the target made with one variant on the device (None where it cannot run here)
    and its description for the document ({"target": label, "versions" or "not_run", "variant"})."""

    target: Target | None
    described: dict[str, Any]
    variant: str


@dataclass
class Plan:
    """A run of `bendtorch laws` prepared: the target spec resolved, the device, the columns made."""

    resolved: Resolved
    device: str
    columns: list[Column]

    def libraries(self) -> list[str]:
        made = next((c.target for c in self.columns if c.target is not None), None)
        return self.resolved.libraries(made)


def prepare(spec: str | None = None, device: str = "cpu", variant: str | None = None) -> Plan:
    """Resolve the spec (default $BENDTORCH_TARGET, else impl), check the device and variant against its record and
    make one target per variant that applies. SpecError (before any law runs) for a spec, device or variant that
    names nothing, or a maker that gives no Target; a target that cannot run here is a column whose laws are not
    run."""
    from bendtorch.targets import column, resolve
    res = resolve(spec)
    cols = []
    for v in res.record.check(device, variant):
        t, d = column(res, device, v)
        cols.append(Column(t, d, v.name))
    return Plan(res, device, cols)


def _row_order(r: dict[str, Any]) -> tuple[int, str, str]:
    return SUITES.index(r["suite"]), r["family"], r["law"]


def not_run_rows(label: str, reason: str) -> list[dict[str, Any]]:
    """A row "not run" with the reason for every conformance law (imported to list them, not run)."""
    import importlib

    from bendtorch.laws.registry import LAWS
    mod = importlib.import_module(f"bendtorch.laws.{CONFORMANCE}")
    laws = {LAWS[f"{mod.__name__}::{n}"] for n in dir(mod) if f"{mod.__name__}::{n}" in LAWS}
    return sorted(({"family": i.family, "law": i.name, "holds": i.holds, "examples": 0, "known": "",
                    "result": "not run", "seconds": 0.0, "target": label, "suite": "conformance", "reason": reason}
                   for i in laws), key=_row_order)


def run_column(plan: Plan, col: Column, profile: str, select: str | None = None,
               quiet: bool = True) -> list[dict[str, Any]]:
    """Run the laws under the profile against one column's target; one row per law and suite. The harness's own
    target runs every suite of laws/ (its own laws and the conformance laws), another the conformance laws alone.
    Each row: family, law, holds, known, examples, result ("passed", "failed", "error", "not applicable", "not
    run"), seconds, target (the column's label), suite ("impl" or "conformance"), and where there is one the
    reason of a skip, the failure's message and the smallest counterexample hypothesis found."""
    from bendtorch.laws.registry import COUNTEREXAMPLES, EXAMPLES, LAWS, strength_text

    label = col.described["target"]
    if col.target is None:  # the target cannot run here: every conformance law says so, without starting pytest
        return not_run_rows(label, col.described["not_run"])
    os.environ["BENDTORCH_LAWS_PROFILE"] = profile
    EXAMPLES.clear()
    COUNTEREXAMPLES.clear()
    collector = _Collector(col.target)
    where = str(LAWS_DIR) if plan.resolved.record.own else str(LAWS_DIR / f"{CONFORMANCE}.py")
    from bendtorch.laws import plugin
    # the plugin registered here as a module, its entry point blocked: the same whether or not pytest autoloads it;
    # bendtorch is imported already (this runs inside it), so pytest cannot mark its modules for assertion rewriting
    # and would warn: they need none (the laws' modules, imported by pytest, are rewritten as usual)
    args = [where, "-p", "no:cacheprovider", "-p", "no:bendtorch", "-W",
            "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning",
            "--bendtorch-profile", profile,
            "--bendtorch-target", plan.resolved.spec, "--bendtorch-device", plan.device,
            "--bendtorch-variant", col.variant]
    if quiet:  # the table and the JSON carry each failure and its counterexample: one line per failure here
        args += ["-q", "--tb=line"]
    if select:
        args += ["-k", select]
    pytest.main(args, plugins=[collector, plugin])
    rows = []
    for key, hit in collector.rows.items():
        info = LAWS.get(key)
        if info is None:
            continue
        row = {"family": info.family, "law": info.name, "holds": info.holds, "examples": EXAMPLES[key],
               "known": strength_text(info, EXAMPLES[key]), "result": hit["outcome"],
               "seconds": round(hit["seconds"], 3), "target": label,
               "suite": "conformance" if key.split("::")[0].endswith(CONFORMANCE) else "impl"}
        for extra in ("reason", "message"):
            if extra in hit:
                row[extra] = hit[extra]
        if hit["outcome"] == "failed" and key in COUNTEREXAMPLES:
            row["counterexample"] = COUNTEREXAMPLES[key]
        rows.append(row)
    return sorted(rows, key=_row_order)


def run_laws(profile: str, select: str | None = None, quiet: bool = True, target: str | None = None,
             device: str = "cpu", variant: str | None = None) -> list[dict[str, Any]]:
    """Every column's rows (run_column) for the target a spec names, on device, each variant in turn in this
    process."""
    plan = prepare(target, device, variant)
    return [r for c in plan.columns for r in run_column(plan, c, profile, select, quiet)]


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


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many rows have each result, in RESULTS' order."""
    return {k: sum(r["result"] == k for r in rows) for k in RESULTS}


def total_line(rows: list[dict[str, Any]], context: str = "") -> str:
    """The table's one total: "total: 95 laws: 94 passed, 0 failed, 1 not applicable (context)"; a table of several
    columns (variants) counts law runs."""
    labels = list(dict.fromkeys(r["target"] for r in rows))
    what = (f"{len(rows)} law{'s' if len(rows) != 1 else ''}" if len(labels) <= 1
            else f"{len(rows)} law runs over {len(labels)} columns")
    c = counts(rows)
    said = ", ".join(f"{v} {k}" for k, v in c.items() if v or k in ("passed", "failed"))
    return f"total: {what}: {said}" + (f" ({context})" if context else "")


def table(rows: list[dict[str, Any]], context: str = "", notes: bool = True) -> str:
    """The law table in Markdown, each law once per suite (and column): suite, [target,] family, law, holds,
    known, examples, result, time, [note], then the total line. The target column appears when the rows come
    from more than one column."""
    many = len({r["target"] for r in rows}) > 1
    cols = ["suite", *(["target"] if many else []), "family", "law", "holds", "known", "examples", "result",
            "time (s)", *(["note"] if notes else [])]
    align = {"examples": "---:", "time (s)": "---:"}

    def cell(r: dict[str, Any], c: str) -> str:
        v = {"time (s)": f"{r['seconds']:.2f}", "note": _note(r) if notes else ""}.get(c)
        return (str(r.get(c, "")) if v is None else v).replace("|", "/")
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join(align.get(c, "---") for c in cols) + " |"]
    lines += ["| " + " | ".join(cell(r, c) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n\n" + total_line(rows, context) + "\n"


def exit_code(rows: list[dict[str, Any]], own: bool, allow_not_run: bool = False) -> int:
    """The harness's own target: 1 when a law fails or errs. Another target: a failing law is a finding, reported
    with its counterexample, so 1 only when a law errs (a bug in the law or the adapter). Either: 1 when no law ran,
    or when every law was "not run" (the target's library is missing, there is no GPU) unless allow_not_run."""
    if not rows:
        return 1
    bad = ("failed", "error") if own else ("error",)
    if any(r["result"] in bad for r in rows):
        return 1
    if not allow_not_run and all(r["result"] == "not run" for r in rows):
        return 1
    return 0


def default_jobs(plan: Plan) -> int:
    """Columns run at once by default: every column that can run here, at most one per core."""
    runnable = sum(c.target is not None for c in plan.columns)
    return max(1, min(runnable, os.cpu_count() or 1))


def _column_in_process(plan: Plan, col: Column, profile: str, select: str | None) -> list[dict[str, Any]]:
    """One column's rows from a process of its own: `bendtorch laws --variant V --json FILE` on the same spec,
    device and profile. A process that ends without its JSON (it crashed) gives every law of the column the result
    "error", with the exit status and the last line it printed."""
    label = col.described["target"]
    with tempfile.TemporaryDirectory(prefix="bendtorch-laws-") as tmp:
        out = pathlib.Path(tmp) / "column.json"
        cmd = [sys.executable, "-m", "bendtorch", "laws", "--target", plan.resolved.spec, "--device", plan.device,
               "--variant", col.variant, "--profile", profile, "--jobs", "1", "--allow-not-run", "--json", str(out),
               *([] if select is None else ["-k", select])]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        if out.is_file():
            rows: list[dict[str, Any]] = json.loads(out.read_text())["rows"]
            return rows
    last = next((ln for ln in reversed(done.stdout.splitlines()) if ln.strip()), "no output")
    rows = not_run_rows(label, f"the column's process exited {done.returncode}: {last[:300]}")
    for r in rows:
        r["result"] = "error"
    return rows


def run_columns(plan: Plan, profile: str, select: str | None = None, jobs: int = 1) -> list[dict[str, Any]]:
    """Every column's rows, in the plan's order: in turn in this process (jobs 1, or a single column that runs),
    else up to `jobs` columns at once, each in a process of its own."""
    runnable = [c for c in plan.columns if c.target is not None]
    if jobs <= 1 or len(runnable) <= 1:
        return [r for c in plan.columns for r in run_column(plan, c, profile, select)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_column_in_process, plan, c, profile, select) if c.target is not None else None
                   for c in plan.columns]
        return [r for c, f in zip(plan.columns, futures)
                for r in (f.result() if f is not None else run_column(plan, c, profile, select))]


def run_and_print(plan: Plan, profile: str, select: str | None = None, json_path: pathlib.Path | None = None,
                  allow_not_run: bool = False, jobs: int = 1) -> int:
    """Run the laws of a prepared plan (run_columns: `jobs` columns at once), print the table and its total line,
    and write the rows to json_path if given (atomically) with the columns' versions and the machine record of the
    target's libraries. Returns exit_code's answer; when every law was not run it says so on stderr."""
    t0 = time.time()
    rows = run_columns(plan, profile, select, jobs)
    seconds = time.time() - t0
    name = plan.resolved.record.name
    where = f" {plan.device}" if plan.device != "cpu" else ""
    print(table(rows, context=f"{seconds:.1f} s, profile {profile}, target {name}{where}"))
    if json_path is not None:
        from bendtorch.records.durable import write_json
        from bendtorch.records.machine import machine
        doc = {"schema_version": SCHEMA_VERSION, "profile": profile, "target": name, "spec": plan.resolved.spec,
               "origin": plan.resolved.how, "device": plan.device, "seconds": round(seconds, 1),
               "targets": [c.described for c in plan.columns], "machine": machine(plan.libraries()), "rows": rows}
        write_json(json_path, doc)
    code = exit_code(rows, plan.resolved.record.own, allow_not_run)
    if rows and all(r["result"] == "not run" for r in rows) and not allow_not_run:
        why = "; ".join(dict.fromkeys(c.described.get("not_run", "") for c in plan.columns)) or rows[0].get("reason")
        print(f"bendtorch laws: every law of {name}{where} was not run ({why}); --allow-not-run exits 0",
              file=sys.stderr)
    return code


# ---------------------------------------------------------------------------------------------------------------
# the conformance table: law x target
# ---------------------------------------------------------------------------------------------------------------

CELL = {"passed": "holds", "failed": "**fails**", "error": "error", "not applicable": "n/a", "not run": "not run"}


def _reproduce(doc_target: str, r: dict[str, Any], scripts: set[str], link: str) -> str:
    """Where a failure's reproduction is: its script in the library alone (repro/, bendtorch.laws.repro), or the law
    itself for a law over a whole model."""
    from bendtorch.laws.registry import LAWS
    from bendtorch.laws.repro import file_name
    name = file_name(r["target"], r["family"], r["law"])
    if name in scripts:
        return f" Reproduced in the library alone: [repro/{name}]({link}{name})."
    fn = next((k.split("::")[-1] for k, i in LAWS.items() if k.startswith(f"bendtorch.laws.{CONFORMANCE}::")
               and (i.family, i.name) == (r["family"], r["law"])), r["law"])
    return f" Reproduced by the law: `bendtorch laws --target {doc_target} -k {fn}`."


def conformance_markdown(results: list[dict[str, Any]], scripts: set[str] | None = None,
                         link: str = "repro/") -> str:
    """The conformance table for REPORT.md from the JSON documents `bendtorch laws --target T --json FILE` wrote (one
    per target and device): a row per conformance law, a column per target (holds / fails / n/a / not run), then
    the targets' versions and machine, every failure's smallest counterexample with where it is reproduced (scripts:
    the names of the reproductions in repro/ beside the documents, linked as LINK + name), and every reason a law was not applicable or not
    run."""
    from bendtorch.records.machine import describe as describe_machine
    import bendtorch.laws.test_targets  # noqa: F401  (registers the conformance laws, named in the reproductions)
    labels: list[str] = []
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    spec: dict[str, str] = {}
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
            spec[r["target"]] = str(doc.get("target", "impl"))
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
                "JSON), each with its reproduction: a script in the library alone (numpy and that library; it prints "
                "how many elements differ and the first, as bits) or, for a law over a whole model, the law:", ""]
        for (which, t), r in fails:
            out.append(f"- {t} `{which}`: {_note(r)}." + _reproduce(spec[t], r, scripts or set(), link))
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
    """The JSON documents of a conformance results folder, the built-in targets in their records' order (each
    target's devices in its record's order), then any other target."""
    from bendtorch.records.targets import order
    docs = [json.loads(f.read_text()) for f in sorted(pathlib.Path(folder).glob("*.json"))]
    return sorted(docs, key=lambda d: order(d.get("target", "impl"), d.get("device", "cpu")))


def write_conformance(folder: str | os.PathLike[str]) -> pathlib.Path:
    """Write folder/CONFORMANCE.md (atomically): the conformance table of the JSON documents in folder."""
    from bendtorch.records.durable import write_text
    out = pathlib.Path(folder) / "CONFORMANCE.md"
    head = ("# Conformance: the laws held against every target\n\n"
            "Each document here was written by `bendtorch laws --target T [--device D] --json T.json` (profile ci); "
            "this table by `bendtorch.laws.run.write_conformance`. holds: no counterexample in the examples tried; "
            "**fails**: the smallest counterexample hypothesis found is below and, with the inputs' bits, in the "
            "JSON.\n\n")
    from bendtorch.laws.repro import write_reproductions
    write_reproductions(folder)
    scripts = {p.name for p in (pathlib.Path(folder) / "repro").glob("*.py")}
    write_text(out, head + conformance_markdown(load_results(folder), scripts))
    return out
