"""A conformance failure reproduced in a few lines of its library alone: a Python script a framework author can run
without bendtorch (numpy and the library, nothing else) and attach to a bug report.

A law's failure record (bendtorch.laws.verdict.expect_same) holds its inputs and the two results' first differing
bits. A `Recipe` says, for one law, which of the target's operations it calls and the lines that compute the two
results `got` and `want` from the inputs, the same lines the law runs (bendtorch.laws.test_targets). The target's
adapter gives each operation's source in its library alone (Target.source); `reproduction` puts them together: the
inputs as bit patterns, the operation, the recipe's lines and a comparison that prints how many elements differ and
the first, as the law counts them. An array input too large to read inline (more than INLINE_MAX elements) is
stored beside the script in numpy's .npy format (`Reproduction.data`), which the script loads without pickle.

The same lines run against the adapter's own operations (`run_recipe`), so a test holds every script to the
adapter bit for bit on whatever machine it runs (tests/test_repro.py). Laws over a whole model (the one-token step,
training, threads, run to run) have no recipe: their reproduction is the law itself."""

from __future__ import annotations

import io
import pathlib
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

F32 = np.float32
# an array of more than 256 elements (32 lines of 8 words) goes to a .npy file beside the script: inline, one such
# input would outgrow the rest of the script many times over and push it past the 600 lines a file may have
INLINE_MAX = 256


@dataclass(frozen=True)
class Recipe:
    """One law's reproduction: the target operations it calls, the lines computing `got` and `want` from the
    inputs (named as in the failure record), how the law compares them, and for each array input too large to
    record (verdict.INLINE) the seed offset and scale the law drew it with (test_targets.values)."""

    ops: tuple[str, ...]
    lines: str
    nan_equal: bool = True
    zero_sign: bool = True
    drawn: tuple[tuple[str, int, float], ...] = (("x", 0, 1.0), ("w", 1, 1.0), ("b", 2, 1.0))
    needs: tuple[str, ...] = ()   # inputs the lines read that older failure records may lack

    def can_run(self, ce: dict[str, Any]) -> bool:
        """Whether the failure record holds every input the lines need."""
        return all(n in ce.get("inputs", {}) for n in self.needs)


def _rows(call: str) -> str:
    """Row i of the operation on the batch x against the operation on row i alone (row_invariant)."""
    return f"got = {call.format(x='x')}[i:i + 1]\nwant = {call.format(x='x[i:i + 1]')}"


RECIPES: dict[tuple[str, str], Recipe] = {
    ("batch_invariance", "linear"): Recipe(("linear",), _rows("linear({x}, w, b)")),
    ("batch_invariance", "matmul"): Recipe(("linear",), _rows("linear({x}, w, None)")),
    ("batch_invariance", "rms_norm"): Recipe(("rms_norm",), _rows("rms_norm({x}, w, 1e-5)")),
    ("batch_invariance", "layer_norm"): Recipe(("layer_norm",), _rows("layer_norm({x}, w, b, 1e-5)")),
    ("batch_invariance", "softmax"): Recipe(("softmax",), _rows("softmax({x})"), drawn=(("x", 0, 4.0),)),
    ("batch_invariance", "log_softmax"): Recipe(("log_softmax",), _rows("log_softmax({x})"), drawn=(("x", 0, 4.0),)),
    ("batch_invariance", "cross_entropy_rows"): Recipe(
        ("ce_rows",), "got = ce_rows(z, labels)[i:i + 1]\nwant = ce_rows(z[i:i + 1], labels[i:i + 1])",
        drawn=(("z", 0, 4.0),)),
    ("batch_invariance", "attention"): Recipe(
        ("attention",), "got = attention(q, k, v, scale)[i:i + 1]\nwant = attention(q[i:i + 1], k[i:i + 1], v[i:i + 1], scale)",
        drawn=(("q", 0, 1.0), ("k", 1, 1.0), ("v", 2, 1.0))),
    ("attention", "causal_keys"): Recipe(
        ("attention",), "got = attention(q, k2, v, scale)[:, :, :i + 1]\nwant = attention(q, k, v, scale)[:, :, :i + 1]",
        drawn=(("q", 0, 1.0), ("k", 1, 1.0), ("v", 2, 1.0))),
    ("erf", "odd"): Recipe(("erf",), "got = erf(-x)\nwant = -erf(x)", nan_equal=False),
    ("optimizers", "lr_zero_keeps_parameters"): Recipe(
        ("opt_steps",), "got = opt_steps(optimizer, params, grads)[j]\nwant = params[j]", zero_sign=False, drawn=(),
        needs=("optimizer", "j")),
    ("optimizers", "zero_grad_sgd_keeps_parameters"): Recipe(
        ("opt_steps",), "grads = [[np.zeros_like(g) for g in step] for step in grads]\n"
        "got = opt_steps(optimizer, params, grads)[j]\nwant = params[j]", drawn=(), needs=("optimizer", "j")),
}

# the comparison every script ends with: the law's (verdict.differ), in numpy
COMPARE = '''\
g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
bad = g.view(np.uint32) != w.view(np.uint32)
{extra}idx = np.argwhere(bad)
print(f"{{int(bad.sum())}} of {{bad.size}} elements differ", end="")
if idx.size:
    k = tuple(int(a) for a in idx[0])
    print(f"; first at {{k}}: {{g[k].view(np.uint32):08x}} ({{float(g[k])!r}}) against "
          f"{{w[k].view(np.uint32):08x}} ({{float(w[k])!r}})")
else:
    print()
'''
_NAN_EQUAL = "bad &= ~(np.isnan(g) & np.isnan(w))  # a NaN matches any NaN\n"
_ZERO_SIGN = "bad &= ~((g == 0) & (w == 0))  # -0 matches +0\n"

F32_HELPER = '''\
def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)
'''


def recipe(family: str, law: str) -> Recipe | None:
    """The law's recipe, or None where its reproduction is the law itself."""
    return RECIPES.get((family, law))


def _array(rec: dict[str, Any], drawn: dict[str, tuple[int, float]], name: str, seed: int | None) -> Any:
    """The array a failure record holds (its bits or values), or the one the law drew from its seed."""
    from bendtorch.laws.verdict import decode
    if "bits" in rec:
        return decode(rec)
    if "values" in rec:
        return np.array(rec["values"], rec["dtype"]).reshape(rec["shape"])
    if name in drawn and seed is not None:
        from bendtorch.laws.test_targets import values
        off, scale = drawn[name]
        return values(seed + off, tuple(rec["shape"]), scale)
    raise ValueError(f"input {name}: neither its bits nor a seed that regenerates it")


def inputs_of(ce: dict[str, Any], rec: Recipe) -> dict[str, Any]:
    """The failure record's inputs as the law passed them (arrays, lists of arrays, scalars), the seed left out."""
    raw = ce.get("inputs", {})
    seed = raw.get("seed") if isinstance(raw.get("seed"), int) else None
    drawn = {n: (o, s) for n, o, s in rec.drawn}

    def value(name: str, v: Any) -> Any:
        if isinstance(v, dict) and "shape" in v:
            return _array(v, drawn, name, seed)
        if isinstance(v, dict) and "float32" in v:
            return v["value"]
        if isinstance(v, list):
            return [value(name, a) for a in v]
        return v
    return {k: value(k, v) for k, v in raw.items() if k != "seed"}


def run_recipe(rec: Recipe, ops: dict[str, Callable[..., Any]], inputs: dict[str, Any]) -> tuple[Any, Any]:
    """(got, want): the recipe's lines run with the given operations (a target's bound methods, or a script's
    functions) on the inputs."""
    ns: dict[str, Any] = {"np": np, **ops, **{k: _copy(v) for k, v in inputs.items()}}
    exec(rec.lines, ns)  # the recipe's own lines, from RECIPES above
    return np.asarray(ns["got"]), np.asarray(ns["want"])


def _copy(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, list):
        return [_copy(a) for a in v]
    return v


def _literal(v: Any, name: str, stem: str, data: dict[str, np.ndarray]) -> str:
    """Python source giving the input v named `name` (float32 arrays by their bits, 8 words a line); an array of
    more than INLINE_MAX elements is put in data under its file name, stem.name.npy, and loaded from it."""
    if isinstance(v, np.ndarray):
        if v.size > INLINE_MAX:
            file = f"{stem}.{name}.npy"
            data[file] = np.ascontiguousarray(v)
            return f"np.load(HERE / {file!r}, allow_pickle=False)"
        if v.dtype == F32:
            words = [f"{u:08x}" for u in np.ascontiguousarray(v).view(np.uint32).ravel().tolist()]
            lines = [" ".join(words[j:j + 8]) for j in range(0, len(words), 8)] or [""]
            body = "\n".join(f"    {ln}" for ln in lines)
            return f'f32("""\n{body}\n""", {tuple(v.shape)!r})'
        return f"np.array({v.ravel().tolist()!r}, np.{v.dtype}).reshape({tuple(v.shape)!r})"
    if isinstance(v, list):
        return "[" + ", ".join(_literal(a, f"{name}.{j}", stem, data) for j, a in enumerate(v)) + "]"
    return repr(v)


def npy_bytes(a: np.ndarray) -> bytes:
    """The array in numpy's .npy format, no pickle: the same bytes for the same array, whatever the machine."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=False)
    return buf.getvalue()


@dataclass(frozen=True)
class Reproduction:
    """A reproduction script's text and the arrays it loads from beside it: {file name: array}."""

    text: str
    data: dict[str, np.ndarray] = field(default_factory=dict)

    def files(self) -> dict[str, bytes]:
        """The data files' names and bytes (.npy), as written beside the script."""
        return {name: npy_bytes(a) for name, a in sorted(self.data.items())}


def slug(label: str) -> str:
    """A column's label as a file name: 'tensorflow (tf.function)' -> 'tensorflow-tf-function'."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def file_name(label: str, family: str, law: str) -> str:
    return f"{slug(label)}--{family}--{law}.py"


def sidecars(folder: Any, name: str) -> list[pathlib.Path]:
    """The data files in folder of the script `name`: its stem, then .*.npy (stems hold no dot, so no other's)."""
    stem = pathlib.Path(name).stem
    return sorted(pathlib.Path(folder).glob(f"{stem}.*.npy"))


def reproduction(label: str, row: dict[str, Any], sources: dict[str, str], machine: str) -> Reproduction:
    """The reproduction of a failed law row of the column `label`, the operations' sources from its target: the
    script (file_name) and the data files it loads from its folder."""
    rec = RECIPES[(row["family"], row["law"])]
    ce = row["counterexample"]
    ins = inputs_of(ce, rec)
    first = ce.get("first") or {}
    found = (f"{ce.get('differ')} of {ce.get('of')} elements differ; first at {tuple(first.get('index', ()))}: "
             f"{first.get('got_bits')} against {first.get('want_bits')}")
    about = (f"{label} against the conformance law {row['family']}/{row['law']} ({row.get('holds', '')}): "
             f"{ce.get('what', '')}.")
    found = (f"Found by bendtorch's conformance laws on {machine}: {found}. Run with python; it prints how many "
             "elements differ and the first, as bit patterns (got against want).")
    head = '"""' + textwrap.fill(about, 116) + "\n\n" + textwrap.fill(found, 116) + '\n"""\n'

    stem = pathlib.Path(file_name(label, row["family"], row["law"])).stem
    data: dict[str, np.ndarray] = {}
    body = "\n".join(f"{k} = {_literal(v, k, stem, data)}" for k, v in ins.items())
    if data:
        body = ("# the data files (.npy) sit beside this script\n"
                "HERE = pathlib.Path(__file__).resolve().parent\n" + body)
    imports = (["import pathlib"] if data else []) + ["import numpy as np"]
    defs = []
    for op in rec.ops:
        src = textwrap.dedent(sources[op]).strip("\n")
        for ln in src.splitlines():
            if ln.startswith(("import ", "from ")) and ln not in imports:
                imports.append(ln)
        defs.append("\n".join(ln for ln in src.splitlines() if not ln.startswith(("import ", "from "))).strip("\n"))
    extra = (_NAN_EQUAL if rec.nan_equal else "") + ("" if rec.zero_sign else _ZERO_SIGN)
    # the bit-pattern helper only where an input is written by its bits (not where every one is a data file)
    helper = F32_HELPER + "\n\n" if "f32(" in body + rec.lines else ""
    text = (head + "\n".join(imports) + "\n\n\n" + helper + "\n\n\n".join(defs) + "\n\n\n" + body +
            "\n\n" + rec.lines + "\n\n" + COMPARE.format(extra=extra))
    return Reproduction(text, data)


def write_reproductions(folder: Any) -> dict[str, str]:
    """folder/repro/*.py for every failed law of the conformance documents in folder whose recipe exists and whose
    target, made here, gives its operations' sources, each with its data files (the stale ones of a rewritten
    script removed); {file name or row: what was written or why not}."""
    from bendtorch.laws.run import load_results, prepare
    from bendtorch.records.durable import write_bytes, write_text
    from bendtorch.records.machine import describe
    folder = pathlib.Path(folder)
    (folder / "repro").mkdir(exist_ok=True)
    done: dict[str, str] = {}
    for doc in load_results(folder):
        fails = [r for r in doc["rows"] if r.get("result") == "failed" and r.get("counterexample")
                 and (rec := recipe(r["family"], r["law"])) is not None and rec.can_run(r["counterexample"])]
        if not fails:
            continue
        variants = {d["target"]: d.get("variant") for d in doc.get("targets", [])}
        made: dict[str, Any] = {}
        for r in fails:
            label = r["target"]
            name = file_name(label, r["family"], r["law"])
            if label not in made:
                try:
                    plan = prepare(doc["target"], doc.get("device", "cpu"), variants.get(label))
                    made[label] = plan.columns[0].target
                except Exception as e:  # a target that cannot be made here leaves its scripts as they are
                    made[label] = None
                    done[name] = f"not written: {label} cannot be made here ({e})"
            t = made[label]
            if t is None:
                done.setdefault(name, f"not written: {label} does not run here")
                continue
            srcs = {op: t.source(op) for op in RECIPES[(r["family"], r["law"])].ops}
            missing = sorted(k for k, s in srcs.items() if s is None)
            if missing:
                done[name] = f"not written: {label} gives no source for {missing}"
                continue
            have = {k: s for k, s in srcs.items() if s is not None}
            made_here = reproduction(label, r, have, describe(doc.get("machine")))
            files = made_here.files()
            for data_name, data in files.items():  # the data first: the script never names a file not there
                write_bytes(folder / "repro" / data_name, data)
            write_text(folder / "repro" / name, made_here.text)
            for stale in sidecars(folder / "repro", name):
                if stale.name not in files:
                    stale.unlink()
            done[name] = "written"
    return done
