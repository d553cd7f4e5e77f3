"""`python -m bendtorch.reports.sweep.migrate FOLDER [--cpu-model MODEL --vendor VENDOR --source TEXT]`: rewrite the
sweep JSONs of the earlier layout under FOLDER in the current one, nothing re-run (bendtorch.reports.sweep.legacy),
the CPU written where it is known from elsewhere, marked as recorded after the run from that source."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bendtorch.reports.sweep.figures import SCHEMA_VERSION
from bendtorch.reports.sweep.legacy import is_old, upgrade


def main(argv: list[str] | None = None) -> int:
    from bendtorch.records.durable import write_json
    from bendtorch.reports.sweep.chunks import read_json

    ap = argparse.ArgumentParser(prog="python -m bendtorch.reports.sweep.migrate",
                                 description="sweep JSONs of the earlier layout in the current one (nothing re-run)")
    ap.add_argument("folder", type=Path, help="an atlas folder (FUNCTION/sweep_*.json under it)")
    ap.add_argument("--cpu-model", help="the CPU the runs were made on, where it is known from elsewhere")
    ap.add_argument("--vendor", default="unknown", help="its vendor (GenuineIntel, AuthenticAMD)")
    ap.add_argument("--flags", default="", help="its dispatch flags, comma-separated (avx512f,...)")
    ap.add_argument("--source", help="where the CPU is known from (recorded with it)")
    a = ap.parse_args(argv)
    cpu = ({"model": a.cpu_model, "vendor": a.vendor, "flags": [f for f in a.flags.split(",") if f]}
           if a.cpu_model else None)
    n = 0
    for path in sorted(a.folder.glob("*/sweep_*.json")):
        doc, why = read_json(path, 1 << 26)
        if not isinstance(doc, dict):
            print(f"{path}: skipped ({why or 'not a JSON object'})", file=sys.stderr)
            continue
        if is_old(doc):
            write_json(path, upgrade(doc, cpu, a.source))
            n += 1
    print(f"{n} sweep JSON{'s' if n != 1 else ''} upgraded to schema_version {SCHEMA_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
