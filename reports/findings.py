"""The committed findings (reports/results/findings/*.json, made by the studies in bendtorch.reference) as sections
of REPORT.md: where the seed's orders lose to PyTorch and why, Adam's c2 settled, every drift as a distribution over
seeds, the two truths of a float32 constant, batch and thread invariance. Each section names the command that made
its figures; a missing file gives a line saying so, never an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results" / "findings"


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


def invariance(d: dict[str, Any]) -> list[str]:
    L = [f"Row i's bits computed alone and in a batch of B = 1..{d['max_batch']} rows, and on 1 and 2 threads "
         "(`same` = the same bits for every B):\n",
         "| op | " + " | ".join(d["summary"]) + " |", "| --- | " + " | ".join("---" for _ in d["summary"]) + " |"]
    ops: list[str] = []
    for t in d["summary"].values():
        ops += [o for o in t if o not in ops]
    for o in ops:
        cells = []
        for t in d["summary"].values():
            r = t.get(o)
            if r is None or r.get("batch") is None:
                cells.append("n/a")
                continue
            b = "same" if r.get("batch", "").startswith("same") else str(r.get("batch"))
            cells.append(f"{b}; threads {'same' if r.get('threads_1_vs_2') else 'differ'}")
        L.append(f"| {o} | {' | '.join(cells)} |")
    L += ["", f"`{d['command']}`. ![invariance](invariance.png)"]
    return L


SECTIONS: list[tuple[str, str, Callable[[dict[str, Any]], list[str]]]] = [
    ("Where the seed's orders lose to PyTorch", "orders.json", orders),
    ("Training drift as a distribution over seeds", "llama_drift.json", llama_drift),
    ("Adam's c2, settled", "adam_c2.json", adam_c2),
    ("AdamW with BF16 moments", "bf16_drift.json", bf16_drift),
    ("Two truths: the decimal meant and the float32 constant used", "two_truths.json", two_truths),
    ("Batch and thread invariance", "invariance.json", invariance),
]


def findings_markdown(results: Path = RESULTS, heading: str = "##", link_prefix: str = "") -> str:
    """Every committed finding as Markdown sections; link_prefix is prepended to the plots' file names."""
    L: list[str] = []
    for title, name, render in SECTIONS:
        L.append(f"\n{heading} {title}\n")
        path = results / name
        try:
            body = render(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as e:
            L.append(f"not available: {path.name} ({type(e).__name__}: {e})")
            continue
        L += [line.replace("](", f"]({link_prefix}") if line.startswith("`") and "![" in line else line
              for line in body]
    return "\n".join(L) + "\n"
