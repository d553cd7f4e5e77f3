"""REPORT.md from report.json (bendtorch.reports.report writes both). Each section says where its figures about
another library come from: measured here, on this machine (the op rows, the small model, the optimizer study, the
drift, the live torch column and batch-size groups), or committed, with the machine that measured them (the full
erf sweep, the conformance table, the atlas, the findings); impl's figures are the same on every machine. Every
link is a file in the report's own folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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


def headline(rep: dict[str, Any]) -> str:
    """"64 of 66 rows pass; 2 errors": the op rows that pass, and the errors of every section."""
    n_ok = sum(r["pass"] for r in rep["rows"])
    k = len(rep["errors"])
    return f"{n_ok} of {len(rep['rows'])} rows pass; {k} error{'' if k == 1 else 's'}"


def _here(rep: dict[str, Any]) -> str:
    from bendtorch.records.machine import describe

    return describe(rep["machine"], ["torch"])


def ops_table(rep: dict[str, Any]) -> list[str]:
    L = [f"**{headline(rep)}.** Errors are ulps against the float64 oracle (oracle/ulp.py): element-wise max / p99 "
         "/ median over every value of every case; `norm` is the normwise error max|x - exact| / ulp32(max|exact|) "
         "that each op's bound applies to (reference/ops.py, which also gives each bound's reason). `= torch`: bit "
         f"for bit equal to PyTorch (required where marked !). PyTorch's columns were measured here, on {_here(rep)}."
         "\n",
         "| op | out | pass | impl max | impl p99 | impl median | impl norm | torch max | torch p99 "
         "| torch median | torch norm | bound (norm / elem) | = torch | plot |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
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
        L += [f"- {r['op']}.{r['output']}: {'; '.join(r['why'])}" for r in fails]
    if rep["errors"]:
        L.append("\n## Errors\n")
        L += [f"- {e}" for e in rep["errors"]]
    return L


def accuracy_section(rep: dict[str, Any]) -> list[str]:
    """The op-accuracy matrix (op x target, reports.accuracy), measured here."""
    acc = rep.get("accuracy") or {"status": "not measured"}
    if "columns" not in acc:
        return ["\n## Op accuracy by target\n", f"not run: {acc.get('status')}"]
    from bendtorch.reports.accuracy import matrix_markdown
    return ["", matrix_markdown(acc)]


def model_sections(rep: dict[str, Any]) -> list[str]:
    mo = rep.get("model")
    L = ["\n## Small model: Linear(12->32), GELUErf, LayerNorm, Linear(32->10), CrossEntropy, AdamW\n"]
    if isinstance(mo, dict) and "steps" in mo:
        L.append(f"{mo['steps']} steps, n = 16, from the same initial weights, impl and PyTorch both run here. "
                 f"Oracle loss {mo['oracle_loss_first']:.6f} -> {mo['oracle_loss_last']:.6f}.\n")
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
        L.append("torch.optim run here. See docs/optimizers.md for the causes; `bendtorch study optimizers` "
                 "measures them.\n")
        L.append(rep["optimizer_study"])
    else:
        L.append("not run (--quick or --only)")
    return L


def erf_sections(rep: dict[str, Any]) -> list[str]:
    from bendtorch.records.machine import describe

    L = ["\n## erf sweep (sample mode)\n"]
    e = rep["erf"]
    if e.get("status") == "ok":
        L.append(f"impl's figures (the same on every machine). {e['mode']}: max {e['max_ulp']} ulp (at "
                 f"{e['max_ulp_at']}), correctly rounded {100 * e['correctly_rounded_fraction']:.3f}%, within one "
                 f"ulp step {100 * e['within_one_ulp_fraction']:.4f}%, NaN in NaN out {e['nan_in_nan_out']}, odd "
                 f"{e['odd_symmetric']}. Full figures: [{e['json']}]({e['json']}).")
        if e.get("seed_claims"):
            L.append("\nThe seed's claims: " + "; ".join(
                f"{k}: {'holds' if v.get('holds', v.get('holds_to_0.1_percent')) else 'does not hold'}"
                for k, v in e["seed_claims"].items()))
    else:
        L.append(f"{e.get('status')}")
    f = rep.get("erf_full", {})
    L.append("\n## erf sweep: all 2^32 float32 inputs\n")
    if f.get("status") != "ok":
        return L + [str(f.get("status"))]
    made = ", ".join(f"`{r.get('command')}` ({r.get('seconds') or 0:.0f} s)" for r in f["runs"])
    L.append(f"Committed: `{f['json']}`, made by {made} on {describe(f['machine'], ['torch'])}: the other "
             "libraries' rows are facts of that machine (PyTorch's erf moves with the processor); impl's are the "
             f"same on every machine. {f['inputs']:,} inputs, {f['finite_inputs']:,} finite. Hard cases decided by "
             f"mpmath: {f['hard_cases'].get('count')} {f['hard_cases'].get('counted_over', '')} (the float64 "
             f"rounding was wrong on {f['hard_cases'].get('float64_rounding_was_wrong')}).\n")
    L.append("| the seed's claim (main.bend lines 1118-1120) | measured | verdict |")
    L.append("| --- | --- | --- |")
    for c in f["claims"]:
        L.append(f"| {c['claim']} | {c['measured']} | {'confirmed' if c['confirmed'] else 'REFUTED'} |")
    comp = f.get("comparisons") or {}
    if comp:
        from bendtorch.records.machine import cpu_name
        L.append("\n| function | max ulp | correctly rounded | within one step | measured on |")
        L.append("| --- | --- | --- | --- | --- |")
        L.append(f"| impl (the seed's erf) | {f['max_ulp']:.7g} | {100 * f['correctly_rounded_fraction']:.3f}% | "
                 f"{100 * f['within_one_ulp_fraction']:.4f}% | any machine (impl's bits) |")
        names = {"torch": "torch.erf", "torch_gelu_erf_aten": "the erf inside PyTorch's GELU (ATen vector path)",
                 "clib": "the C library's erff"}
        for name, c in comp.items():
            if isinstance(c, dict) and "max_ulp" in c:
                L.append(f"| {names.get(name.partition('@')[0], name)} | {c['max_ulp']:.7g} | "
                         f"{100 * c.get('correctly_rounded_fraction', 0):.3f}% | "
                         f"{100 * c.get('within_one_ulp_fraction', 0):.4f}% | {cpu_name(c.get('machine'))} |")
    L.append("")
    L += [f"![{Path(p).stem}]({p})" for p in f["plots"]]
    return L


def drift_section(rep: dict[str, Any]) -> list[str]:
    d = rep.get("drift")
    L = ["\n## Training drift: tiny Llama, AdamW, impl and PyTorch float32 against the float64 oracle\n"]
    if not (isinstance(d, dict) and "impl" in d):
        return L + [f"not run: {d}"]
    L.append(f"`reference.llama_drift.drift_over_seeds(seeds={d['seeds']}, steps={d['steps']})`, run here: batch "
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
    return L


def laws_section(lw: dict[str, Any]) -> list[str]:
    """The law table (laws.run.table): each law once per suite, the suite named, and one total."""
    from bendtorch.laws.run import SUITES, table

    L = ["\n## Laws (z3 proofs and hypothesis, ci profile)\n"]
    if lw.get("status") != "ok":
        return L + [f"not run: {' '.join(x for x in (lw.get('command'), lw.get('status')) if x)}"]
    L.append(f"`{lw['command']}`: impl's own laws (suite impl) and the conformance laws every target is held to "
             f"(suite conformance), run by this report; impl's results are the same on every machine. Rows in "
             f"[{lw['json']}]({lw['json']}).\n")
    rows = sorted(lw["rows"], key=lambda r: (SUITES.index(r["suite"]) if r.get("suite") in SUITES else len(SUITES),
                                             r["family"], r["law"]))
    L.append(table(rows, context=f"{lw['seconds']:.0f} s, profile ci"))
    return L


def conformance_section(rep: dict[str, Any]) -> list[str]:
    L = ["\n## Conformance: the laws held against impl, PyTorch and JAX\n"]
    live = rep.get("live", {})
    cmp_ = live.get("conformance_compared") or {}
    intro = ("Committed columns from reports/results/conformance/, each with the machine that measured it in the "
             "list below the table; impl's column is the same on every machine, every other library's is a fact of "
             "its machine.")
    if cmp_.get("status") == "ok":
        tl = live["conformance_torch"]
        intro += (f" `torch (here)`: `{tl['command']}` run by this report on {cmp_['here']} (rows in "
                  f"[{tl['json']}]({tl['json']})); `torch (committed)` was measured on {cmp_['committed_on']}.")
        if cmp_["differ"]:
            intro += (f" **The two torch columns differ** on {len(cmp_['differ'])} laws: "
                      + "; ".join(cmp_["differ"]) + ".")
        else:
            intro += " The two torch columns agree on every law."
        if cmp_.get("machine_note"):
            intro += (" The two columns come from different machines (" + cmp_["machine_note"].removeprefix(
                "not compared: ") + "): where they differ, each is a fact of its machine.")
    else:
        why = live.get("status") if live.get("status") != "ok" else cmp_.get("status")
        intro += f" PyTorch's column was not measured here: {why}."
    L += [intro + "\n", rep.get("conformance") or "not available"]
    return L


def markdown(rep: dict[str, Any]) -> str:
    from bendtorch.records.machine import describe

    L = ["# bendtorch reference report\n", f"Command: `{rep['command']}`  ",
         f"Mode: {rep['mode']}; {rep['seconds']:.1f} s; written {rep['written']}\n",
         f"This machine: {describe(rep['machine'], ['torch', 'numpy', 'numba'])}. Each section says where its "
         "figures about another library come from: measured here (a fact of this machine), or committed (a fact of "
         "the machine named); impl's figures are the same on every machine.\n"]
    L += ops_table(rep)
    L += accuracy_section(rep)
    L += model_sections(rep)
    L += erf_sections(rep)
    L += drift_section(rep)
    L += laws_section(rep.get("laws") or {})
    L += conformance_section(rep)
    head, _, body = (rep.get("atlas") or "## The float32 function atlas\n\nnot available").partition("\n")
    L.append(f"\n{head}\n\nCommitted (reports/results/atlas/): impl's rows are the same on every machine; every "
             "other library's rows are facts of the machine named in the \"Measured on\" line below (PyTorch's erf, "
             "exp, log and tanh rows move with the processor).\n" + body)
    L.append("\n# Findings (committed results, reports/results/findings/)\n")
    L.append(rep.get("findings") or "not available")
    return "\n".join(L) + "\n"
