"""The committed findings (reports/results/findings/*.json, made by the studies in bendtorch.reference) as sections
of REPORT.md: where the seed's orders lose to PyTorch and why, Adam's c2 settled, every drift as a distribution over
seeds, the two truths of a float32 constant, batch and thread invariance. Each section names the command that made
its figures and the machine its figures about PyTorch were measured on (impl's are the same on every machine); a
missing file gives a line saying so, never an error.

PyTorch's batch-size groups move with the processor, so `live_invariance` measures them again on this machine
(bendtorch.reference.findings.invariance's study, impl and PyTorch) and the invariance section puts this machine's
groups beside the committed ones, each with its machine, saying where they differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results" / "findings"
LIVE_MAX_BATCH = 64  # the committed study's B range, so the two compare batch size for batch size


def _dist(d: dict[str, Any], fmt: str = "{:.3g}") -> str:
    """A distribution over seeds as 'median (min-max)'."""
    return f"{fmt.format(d['median'])} ({fmt.format(d['min'])}-{fmt.format(d['max'])})"


def _seeds(d: dict[str, Any]) -> str:
    s = d.get("seeds") or []
    return f"{len(s)} seeds ({', '.join(map(str, s))})"


def orders(d: dict[str, Any]) -> list[str]:
    v = d["verdict"]
    rope = v["rope_max_last_quarter_u"]
    return [
        "The seed sums a Softmax row's exponentials left to right (main.bend's row sum), and cross-entropy's loss "
        "value sums the per-row losses left to right in float32 before dividing by n. A running float32 sum's "
        "error grows with the number of terms (about sqrt(n) ulps for random signs, up to n in the worst case); "
        "a pairwise sum's grows with log n. So at scale the seed's orders lose to PyTorch's, which sums in "
        "vectorised partial sums:\n",
        "| what | size | impl (the seed's order) | pairwise sum | PyTorch |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| Softmax, normwise error (u = 2^-24), worst row | width {v['softmax_width']:,} | "
        f"{v['softmax_impl_median_u']:.1f} | {v['softmax_pairwise_median_u']:.2f} | {v['softmax_torch_median_u']:.2f} |",
        f"| cross-entropy loss value, relative error (u) | {v['ce_rows']:,} rows | {v['ce_impl_median_u']:.1f} | "
        f"{v['ce_pairwise_mean_median_u']:.2f} | {v['ce_torch_median_u']:.2f} |",
        "",
        "Medians over the seeds of the study (ranges and every width in the JSON and the plot). RoPE: the angle "
        "pos * inv[c] rounded to float32 makes the table's error grow linearly with the position, for impl and for "
        "Hugging Face's rotary code alike; `RoPE(..., precise=True)` carries the angle as a float32 pair "
        "(worst error over the last quarter of 8192 positions, head dim 64):\n",
        "| base | impl (the seed) | Hugging Face | impl, precise=True |",
        "| ---: | ---: | ---: | ---: |",
        *[f"| {float(b):g} | {r['impl']:.0f} | {r['hf']:.0f} | {r['precise']:.2f} |" for b, r in rope.items()],
        "",
        f"`{d['command']}`. ![orders](orders.png)",
    ]


def adam_c2(d: dict[str, Any]) -> list[str]:
    v = d["verdict"]
    L = [f"The seed's claim: {v['claim']}. Measured: every pairing of the c2 used in v's update with the q2 used "
         f"in the bias correction, tiny Llama, {d['steps']} AdamW steps, {len(d['seeds'])} seeds "
         f"({', '.join(map(str, d['seeds']))}), lr {', '.join(map(str, d['lrs']))}; the ratio is the run's final "
         "drift from the float64 oracle over PyTorch float32's on the same seed. Median (min-max):\n",
         "| c2 in v | q2 | " + " | ".join(f"lr {lr}" for lr in d["distributions"]) + " |",
         "| --- | --- | " + " | ".join("---:" for _ in d["distributions"]) + " |"]
    for p in d["pairings"]:
        c2, q2 = p.split(" | ")
        cells = [_dist(d["distributions"][lr][p]["ratio_to_torch"], "{:.2f}") for lr in d["distributions"]]
        L.append(f"| {c2} | {q2}{' (matched)' if p in v.get('matched', []) else ''} | {' | '.join(cells)} |")
    big = v.get("largest_ratio", {})
    runs = [(p, x) for lr in d["distributions"] for p in d["pairings"]
            for x in d["distributions"][lr][p]["ratio_to_torch"]["values"]]
    hits = [p for p, x in runs if x >= 21.0]
    matched = set(v.get("matched", []))
    meds = {p: [d["distributions"][lr][p]["ratio_to_torch"]["median"] for lr in d["distributions"]]
            for p in d["pairings"]}
    where = ("only where v's c2 and q2 disagree (a mismatched pair)" if hits and not set(hits) & matched
             else "under a matched pair too" if hits else "under no pairing")
    L += ["",
          f"Verdict: with a matched pair (v's c2 and q2 built from the same c2) the median ratio over the seeds is "
          f"{min(min(meds[p]) for p in matched):.2f} to {max(max(meds[p]) for p in matched):.2f}; with a mismatched "
          f"one it is {min(min(meds[p]) for p in meds if p not in matched):.2f} to "
          f"{max(max(meds[p]) for p in meds if p not in matched):.2f}. A ratio of 21 or more appears in "
          f"{len(hits)} of {len(runs)} runs, {where} (largest {big.get('ratio', float('nan')):.1f}: "
          f"{big.get('pairing')}, lr {big.get('lr')}). Why: with a mismatched pair, sqrt(v / q2) is biased the "
          "same way at every step and training adds the bias up; with a matched pair the bias cancels."
          + (" The seed's recursion takes q2 from the same c2 as v (a matched pair), so its 21x is not its own "
             "typical run but a tail of the mismatched pairings." if hits and not set(hits) & matched else ""),
          "", f"`{d['command']}`. ![adam_c2](adam_c2.png)"]
    return L


def llama_drift(d: dict[str, Any]) -> list[str]:
    return [f"Tiny Llama, {d['steps']} AdamW steps (lr {d['lr']}, betas {d['betas']}, wd {d['wd']}), batch "
            f"{d['batch']} x 16 from the shipped corpus, {_seeds(d['ratio'])}; final ||p32 - p64|| / ||p64||, "
            "median (min-max):\n",
            "| impl | PyTorch float32 | impl / PyTorch |", "| ---: | ---: | ---: |",
            f"| {_dist(d['impl'])} | {_dist(d['torch'])} | {_dist(d['ratio'], '{:.2f}')} |",
            "", "Which float32 run ends closer to float64 changes with the seed: neither library is reliably "
            "closer.", "", f"`{d['command']}`. ![llama_drift](llama_drift.png)"]


def bf16_drift(d: dict[str, Any]) -> list[str]:
    return ([f"AdamW with its moments packed as BF16, tiny Llama, {_seeds(next(iter(d['ratio_to_f32'].values())))}; "
             "final drift from float64 over the float32-moment run's, median (min-max):\n",
             "| moments | drift / F32 moments' drift |", "| --- | ---: |"]
            + [f"| {k} | {_dist(r, '{:.1f}')} |" for k, r in d["ratio_to_f32"].items()]
            + ["", f"Ordered (F32 < BF16 m < BF16 m and v) on every seed: {d['ordered_on_every_seed']}.",
               "", f"`{d['command']}`. ![bf16_drift](bf16_drift.png)"])


def two_truths(d: dict[str, Any]) -> list[str]:
    L = ["The oracle reads a float32 constant as the decimal the user meant; the float32 program computes with the "
         "rounded constant. Where the two differ by more than "
         f"{d['gap_threshold_ulps']} ulp, both errors (normwise, u): against the decimal the user meant (the "
         "tables above use this one) and against the function the program computes with its constants.\n",
         "| op | constant gap (ulp) | output | impl: decimal / program | PyTorch: decimal / program |",
         "| --- | ---: | --- | ---: | ---: |"]
    for a in d.get("attention", []):
        gap = max(g["gap_ulps"] for g in a["gaps"])
        for o in a["median"]["impl"]["decimal"]:
            i, t = a["median"]["impl"], a["median"]["torch"]
            L.append(f"| {a['op']} | {gap:.3f} | {o} | {i['decimal'][o]:.2f} / {i['program'][o]:.2f} | "
                     f"{t['decimal'][o]:.2f} / {t['program'][o]:.2f} |")
    for r in d.get("rows", []):
        gap = max(g["gap_ulps"] for g in r["gaps"])
        for o, v in r["outputs"].items():
            L.append(f"| {r['op']} | {gap:.3f} | {o} | {v['impl']['decimal']['norm']:.2f} / "
                     f"{v['impl']['program']['norm']:.2f} | {v['torch']['decimal']['norm']:.2f} / "
                     f"{v['torch']['program']['norm']:.2f} |")
    L += ["", f"`{d['command']}`."]
    return L


def _ranges(bs: list[int]) -> str:
    """Batch sizes as runs: [1, 2, 3, 5] -> "1-3, 5"."""
    runs: list[list[int]] = []
    for b in bs:
        if runs and b == runs[-1][1] + 1:
            runs[-1][1] = b
        else:
            runs.append([b, b])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def batch_groups(v: dict[str, Any]) -> str:
    """One operation of the invariance study as its batch-size groups: the batch sizes B at which a row keeps the
    bits it has alone, those at which it has the bits of the largest batch instead, and the rest."""
    if "rows_changed" not in v:
        return "n/a" if "not_applicable" in v else str(v.get("not_run", "n/a"))
    changed, vs_top = v["rows_changed"], v["rows_differing_from_the_largest_batch"]
    n = len(changed)
    if not any(changed):
        return f"same bits for B = 1..{n}"
    alone = [b for b in range(1, n + 1) if not changed[b - 1]]
    top = [b for b in range(1, n + 1) if changed[b - 1] and not vs_top[b - 1]]
    rest = [b for b in range(1, n + 1) if changed[b - 1] and vs_top[b - 1]]
    return f"as alone: B = {_ranges(alone)}; as at B = {n}: {_ranges(top)}; other bits: {_ranges(rest)}"


def _threads(v: dict[str, Any]) -> str:
    t = v.get("threads_1_vs_2_same_bits")
    return "" if t is None else "; threads same" if t is True else "; threads differ" if t is False else f"; {t}"


def live_invariance(max_batch: int = LIVE_MAX_BATCH) -> dict[str, Any]:
    """The invariance study on this machine (impl and PyTorch, B = 1..max_batch): the study's result with each
    operation's batch-size groups."""
    from bendtorch.reference.findings import invariance as study

    res = study.study(max_batch=max_batch, targets=("impl", "torch"))
    res["groups"] = {t: {op: batch_groups(v) + _threads(v) for op, v in r.items()}
                     for t, r in res["targets"].items()}
    return res


def invariance_differences(live: dict[str, Any], committed: dict[str, Any]) -> list[str]:
    """Where this machine's study and the committed one disagree, one line per target and operation. With the same
    B range every count is compared (rows changed against alone and against the largest batch, the threads); with
    another range, the rows changed against alone over the range both measured."""
    same_range = live.get("max_batch") == committed.get("max_batch")
    out = []
    for t, ops in live.get("targets", {}).items():
        for op, v in ops.items():
            c = committed.get("targets", {}).get(t, {}).get(op)
            if not isinstance(c, dict) or "rows_changed" not in v or "rows_changed" not in c:
                continue
            if same_range:
                keys = ("rows_changed", "rows_differing_from_the_largest_batch", "threads_1_vs_2_same_bits")
                differ = any(v.get(k) != c.get(k) for k in keys)
            else:
                k = min(len(v["rows_changed"]), len(c["rows_changed"]))
                differ = v["rows_changed"][:k] != c["rows_changed"][:k]
            if differ:
                out.append(f"{t} {op}: here {batch_groups(v)}{_threads(v)}; committed {batch_groups(c)}{_threads(c)}")
    return out


def invariance(d: dict[str, Any], live: dict[str, Any] | None = None, here: str = "this machine") -> list[str]:
    committed_on = measured_on(d)
    L = [f"Row i's bits computed alone and in a batch of B rows, and on 1 and 2 threads, for each batch size B "
         f"(`same` = the same bits for every B; otherwise the batch sizes at which a row keeps its bits alone, those "
         f"at which it has the largest batch's bits instead, and the rest). The committed study (B = "
         f"1..{d['max_batch']}) was measured on {committed_on}"
         + (f"; this machine's (B = 1..{live['max_batch']}, `bendtorch report`) on {here}" if live else "")
         + ". impl's columns are the same on every machine; PyTorch's move with the processor.\n"]
    cols: list[tuple[str, dict[str, Any]]] = []
    if live and "targets" in live:
        cols += [(f"{t} (here)", r) for t, r in live["targets"].items()]
    cols += [(f"{t} (committed)", r) for t, r in d.get("targets", {}).items()
             if not live or t != "impl" or "impl" not in live.get("targets", {})]
    L += ["| op | " + " | ".join(c for c, _ in cols) + " |", "| --- |" + " --- |" * len(cols)]
    ops: list[str] = []
    for _, r in cols:
        ops += [o for o in r if o not in ops]
    for o in ops:
        cells = [batch_groups(r[o]) + _threads(r[o]) if isinstance(r.get(o), dict) else "-" for _, r in cols]
        L.append(f"| {o} | {' | '.join(cells)} |")
    if live and "targets" in live:
        diff = invariance_differences(live, d)
        L += ["", "This machine and the committed study agree on every operation." if not diff else
              f"This machine ({here}) and the committed study ({committed_on}) differ:"]
        L += [f"- {x}" for x in diff]
    elif live:
        L += ["", f"Not measured here: {live.get('status')}"]
    L += ["", f"`{d['command']}`. ![invariance](invariance.png)"]
    return L


def measured_on(d: dict[str, Any]) -> str:
    """The machine a committed finding was measured on, in one phrase: its machine record's CPU and PyTorch, or for
    a result written before the machine was recorded "an unrecorded CPU" with the versions it kept."""
    from bendtorch.records.machine import describe

    m = d.get("machine")
    if isinstance(m, dict) and m:
        return describe(m, ["torch"])
    v = d.get("versions") or {}
    return "an unrecorded CPU" + (f" (PyTorch {v['torch']})" if v.get("torch") else "")


# title, file, renderer, whether its figures include another library's (PyTorch's)
SECTIONS: list[tuple[str, str, Callable[[dict[str, Any]], list[str]], bool]] = [
    ("Where the seed's orders lose to PyTorch", "orders.json", orders, True),
    ("Training drift as a distribution over seeds", "llama_drift.json", llama_drift, True),
    ("Adam's c2, settled", "adam_c2.json", adam_c2, True),
    ("AdamW with BF16 moments", "bf16_drift.json", bf16_drift, False),
    ("Two truths: the decimal meant and the float32 constant used", "two_truths.json", two_truths, True),
    ("Batch and thread invariance", "invariance.json", invariance, True),
]


def findings_markdown(results: Path = RESULTS, heading: str = "##", link_prefix: str = "",
                      live: dict[str, Any] | None = None, here: str = "this machine") -> str:
    """Every committed finding as Markdown sections, each saying where its figures about PyTorch were measured;
    link_prefix is prepended to the plots' file names. live: `live_invariance`'s result (or a dict with a status
    saying why it is missing), shown beside the committed invariance study; here names this machine."""
    L: list[str] = []
    for title, name, render, other in SECTIONS:
        L.append(f"\n{heading} {title}\n")
        path = results / name
        try:
            d = json.loads(path.read_text())
            body = invariance(d, live, here) if render is invariance else render(d)
        except (OSError, ValueError, KeyError, TypeError) as e:
            L.append(f"not available: {path.name} ({type(e).__name__}: {e})")
            continue
        if render is not invariance:
            L.append(f"Committed figures: PyTorch's measured on {measured_on(d)}; impl's are the same on every "
                     "machine.\n" if other else "Committed figures, impl's only: the same on every machine.\n")
        L += [line.replace("](", f"]({link_prefix}") if line.startswith("`") and "![" in line else line
              for line in body]
    return "\n".join(L) + "\n"
