"""The law runner behind `bendtorch laws`: run the law suites under a hypothesis profile and print a table of
family, law, examples tried, result and time (the JSON holds the same rows)."""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any

LAWS_DIR = pathlib.Path(__file__).resolve().parent


class _Collector:
    """A pytest plugin recording each law's outcome and wall time."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            key = report.nodeid.split("[")[0]
            row = self.rows.setdefault(key, {"outcome": "passed", "seconds": 0.0})
            row["seconds"] += report.duration
            if report.outcome != "passed":
                row["outcome"] = report.outcome


def run_laws(profile: str, select: str | None = None, quiet: bool = True) -> list[dict[str, Any]]:
    """Run laws/ under the profile; one row per law."""
    import pytest

    from bendtorch.laws.registry import EXAMPLES, LAWS

    os.environ["BENDTORCH_LAWS_PROFILE"] = profile
    col = _Collector()
    args = [str(LAWS_DIR), "-p", "no:cacheprovider", "--profile", profile]
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
        rows.append({"family": info.family, "law": info.name, "holds": info.holds, "examples": EXAMPLES[key],
                     "result": hit["outcome"], "seconds": round(hit["seconds"], 3)})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = "| family | law | holds | examples | result | time (s) |\n| --- | --- | --- | ---: | --- | ---: |\n"
    return head + "".join(f"| {r['family']} | {r['law']} | {str(r['holds']).replace('|', '/')} | {r['examples']} | "
                          f"{r['result']} | "
                          f"{r['seconds']:.2f} |\n" for r in rows)


def run_and_print(profile: str, select: str | None = None, json_path: pathlib.Path | None = None) -> int:
    """Run the laws under the profile, print the table and a summary line, and write the rows to json_path if given
    (atomically). Returns the exit code: 0 when every law selected passed, 1 otherwise or when none ran."""
    t0 = time.time()
    rows = run_laws(profile, select)
    print(table(rows))
    failed = [r for r in rows if r["result"] != "passed"]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed ({time.time() - t0:.1f} s, profile "
          f"{profile})")
    if json_path is not None:
        from bendtorch.impl.checkpoint import write_atomic
        write_atomic(json_path, json.dumps({"profile": profile, "rows": rows}, indent=1).encode())
    return 1 if failed or not rows else 0
