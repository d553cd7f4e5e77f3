"""The atlas: one Markdown table of every function swept into a folder (OUT/FUNCTION/sweep_full.json, else
sweep_sample.json), one row per function and column, each row naming the CPU it was measured on, then the twins,
the machines, the libraries, the commands and the plots. ATLAS.md beside the results and REPORT.md's atlas section
are this text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bendtorch.records.functions import FUNCTIONS
from bendtorch.records.libraries import LIBRARIES
from bendtorch.records.machine import cpu_name, describe
from bendtorch.reports.sweep.chunks import read_json
from bendtorch.reports.sweep.errors import shown
from bendtorch.reports.sweep.figures import latest_columns, library_of, machine_id
from bendtorch.reports.sweep.legacy import upgrade

JSON_MAX = 1 << 26   # bytes: a sweep JSON is tens of kilobytes


def pct(frac: float) -> str:
    """A fraction as a percentage with 4 decimals, more where needed so that only a fraction of exactly 1 reads
    100 (1217 misrounded inputs in 2^32 read 99.99997, not 100.0000)."""
    if frac == 1.0:
        return "100"
    for d in range(4, 12):
        t = f"{100 * frac:.{d}f}"
        if not t.startswith("100"):
            return t
    return f"{100 * frac:.12f}"


def summary_line(rep: dict[str, Any], libs: list[str] | None = None) -> str:
    """The command line's summary of a run: one line per column (default: each its latest run measured)."""
    parts = []
    for cid in libs or list(latest_columns(rep)):
        f = rep["libraries"][cid]
        parts.append(f"{cid}: max {f['max_ulp']:.4g} ulp, CR {pct(f['correctly_rounded_fraction'])}%, "
                     f"within 1 {pct(f['within_one_ulp_fraction'])}%, specials "
                     f"{'right' if f['specials_right'] else 'WRONG'}")
    return f"{rep['function']} ({rep['mode']}, {rep['seconds']:.1f} s)\n  " + "\n  ".join(parts)


def measured_on(col: dict[str, Any]) -> str:
    """A row's machine: the CPU, and for a library whose bits are the same on every machine, that it is."""
    cpu = cpu_name(col.get("machine"))
    return f"{cpu} (the same bits on any)" if col.get("same_everywhere") else cpu


def read_sweeps(results_dir: Path, func: str) -> list[dict[str, Any]]:
    """A function's full and sample sweep JSONs in results_dir (the current layout), those that can be read."""
    reps = []
    for kind in ("full", "sample"):
        doc, _ = read_json(results_dir / func / f"sweep_{kind}.json", JSON_MAX)
        if isinstance(doc, dict) and isinstance(doc.get("libraries"), dict) and "mode" in doc:
            reps.append(upgrade(doc))
    return reps


def atlas_markdown(results_dir: Path, link_prefix: str | None = None) -> str:
    """The atlas section from RESULTS_DIR/FUNCTION/sweep_full.json and sweep_sample.json: one row per function and
    column (max ulp, correctly rounded %, within one ulp %, specials right, the CPU it was measured on; the full
    sweep where there is one, else the sample, marked), then the plots, linked as LINK_PREFIX/FUNCTION/NAME.png
    (default: RESULTS_DIR as given)."""
    results_dir = Path(results_dir)
    prefix = shown(link_prefix if link_prefix is not None else results_dir).rstrip("/")
    L = ["## The float32 function atlas\n",
         "Every function against its correctly rounded float32 value (float64 reference, mpmath on the inputs too "
         "close to a rounding boundary), `bendtorch sweep FUNCTION`. inputs: \"all 2^32\" = every float32 bit "
         "pattern; \"sample N\" = N spread inputs plus the special values only (not exhaustive). CR = correctly "
         "rounded, of finite inputs; specials = NaN in NaN out and the exact bits at +-inf and +-0. impl's own "
         "functions give the same bits on every machine; every other library's figures are facts of the CPU "
         "named in their row.\n",
         "| function | library | inputs | max ulp | at x | CR % | within 1 ulp % | specials | measured on |",
         "|---|---|---|---|---|---|---|---|---|"]
    plots_: list[str] = []
    machines: dict[str, dict[str, Any]] = {}
    commands: list[str] = []
    twins: list[str] = []
    others = sorted(p.name for p in results_dir.iterdir() if p.is_dir() and p.name not in FUNCTIONS) \
        if results_dir.is_dir() else []
    for func in [*FUNCTIONS, *others]:
        reps = read_sweeps(results_dir, func)
        if not reps:
            continue
        rows: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        title = FUNCTIONS[func].title if func in FUNCTIONS else str(reps[0].get("title", func))
        for rep in reps:
            cols = rep["libraries"]
            n_in = next(iter(cols.values()))["inputs"] if cols else 0
            tag = "all 2^32" if str(rep["mode"]).startswith("full") else f"sample {n_in}"
            commands += [str(r.get("command")) for r in rep.get("runs", [])]
            for cid, f in cols.items():
                lib = library_of(cid, f)
                where = "any" if f.get("same_everywhere") else machine_id(f)
                if (lib, where) not in rows and "twin" in f:
                    of = f["twin"]["of"]
                    note = LIBRARIES[of].note if of in LIBRARIES else f["twin"].get("note", "")
                    twins.append(f"{func}: {lib} against {of} ({note}), {tag} inputs: "
                                 f"{f['twin']['bit_differences']} bit differences")
                rows.setdefault((lib, where), (tag, f))
            plots_ += [f"{func}/{n}" for n in rep.get("plots", [])]
        for (lib, _), (tag, f) in rows.items():
            m = f.get("machine") or {}
            machines.setdefault(cpu_name(m) + str(m.get("os")), m)
            sp = "yes" if f["specials_right"] else "no"
            L.append(f"| {title} | {lib} | {tag} | {f['max_ulp']:.4g} | {f['max_ulp_at']!r} | "
                     f"{pct(f['correctly_rounded_fraction'])} | {pct(f['within_one_ulp_fraction'])} | {sp} | "
                     f"{measured_on(f)} |")
    if twins:
        L.append("\nTwins, two implementations that must give the same bits:\n")
        L += [f"- {t}" for t in twins]
    if machines:
        L.append("\nMachines:\n")
        for m in machines.values():
            after = f" ({m['recorded_after_the_run']})" if m.get("recorded_after_the_run") else ""
            L.append(f"- {describe(m, ['torch', 'numpy', 'clib'])}; C library {m.get('c_library')}; "
                     f"{m.get('os')}{after}")
        L.append("\nLibraries: " + "; ".join(f"{k}: {v.note}" for k, v in LIBRARIES.items()) + ".\n")
    if commands:
        L.append("Commands: " + ", ".join(f"`{shown(c)}`" for c in dict.fromkeys(commands)) + "\n")
    L += [f"![{p}]({prefix}/{p})" for p in plots_]
    return "\n".join(L) + "\n"


def write_atlas(out: Path) -> Path:
    """OUT/ATLAS.md: the atlas of every function swept into OUT so far (rewritten after each sweep)."""
    from bendtorch.records.durable import write_text
    path = Path(out) / "ATLAS.md"
    write_text(path, atlas_markdown(Path(out), link_prefix="."))
    return path
