"""The layer zoo: every public call checks what it is given. Layers of every kind are built and their fwd, bwd and
step called with wrongly shaped, wrongly typed (float64, integers, Python lists) and non-contiguous p, g, x, dy and
optimizer state; each call must either give the right answer (the same bits as the call with well-formed arguments
holding the same values) or raise a named error (ShapeError, ValueError or TypeError whose message names the layer,
or the part of it, at fault, in at most MAX_MESSAGE characters). No crash, no garbage: the calls run in a
subprocess, so a kernel that reads or writes out of bounds and kills the process fails the test instead of the run.

Cases are drawn by hypothesis in this process and run in one child process per example; the number of examples
follows the law suites' profile (BENDTORCH_LAWS_PROFILE: ci 1, dev 10, deep 100 examples of CASES cases each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bendtorch.records.ops import CONSTRUCTORS, load_params, op, sample
from bendtorch.records.optimizers import NAMES as OPT_NAMES, optimizer

ROOT = Path(__file__).resolve().parents[1]
PROFILE_EXAMPLES = {"ci": 1, "dev": 10, "deep": 100}
EXAMPLES = PROFILE_EXAMPLES.get(os.environ.get("BENDTORCH_LAWS_PROFILE", "ci"), 1)
CASES = 48
MAX_MESSAGE = 400
F32 = np.float32

# the layers of the zoo: every layer and combinator of the op records, built from small dimensions (n, a, b)
KINDS = [r.name for r in CONSTRUCTORS if r.kind != "loss"]
CALLS = ["fwd", "bwd", "step"]
TARGETS = {"fwd": ["p", "x"], "bwd": ["p", "g", "dy"], "step": ["p", "g", "st"]}
# every optimizer of the records (its state's structure), and AdamWBF16 with its second moment packed too
OPTS = [*OPT_NAMES, "adamw-bf16+v16"]
MUTATIONS = ["none", "narrow", "wide", "float64", "int", "list", "noncontig", "scalar"]
# the hyperparameters of every configuration class, by field name
HYPER: dict[str, Any] = {"lr": 1e-3, "mu": 0.9, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "wd": 0.01, "c1": 0.1, "c2": 0.001}


def build(kind: str, n: int, a: int, b: int) -> Any:
    """The record's layer with dimensions from (n, a, b), and the ids' bound (its dims' "v") for an Embedding."""
    import bendtorch.impl as L
    rec = op(kind)
    assert rec.small is not None
    d = rec.small(n, a, b)
    return rec.build(L, d), d


def config(name: str) -> Any:
    """The optimizer's configuration (its record's class) with HYPER's values; "+v16" packs v as BF16 too."""
    import dataclasses
    from bendtorch.records.studies import resolve
    cls = resolve(optimizer(name.removesuffix("+v16")).config)
    vals = {**HYPER, "v16": name.endswith("+v16")}
    return cls(**{f.name: vals[f.name] for f in dataclasses.fields(cls)})


def arrays(tree: Any) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """The array leaves of a value with their paths (states' dataclass fields included)."""
    out: list[tuple[tuple[int, ...], np.ndarray]] = []

    def go(v: Any, path: tuple[int, ...]) -> None:
        if isinstance(v, np.ndarray):
            out.append((path, v))
        elif isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                go(x, path + (i,))
        elif hasattr(v, "__dataclass_fields__"):
            for i, k in enumerate(v.__dataclass_fields__):
                go(getattr(v, k), path + (i,))
    go(tree, ())
    return out


def replace_at(tree: Any, path: tuple[int, ...], new: Any) -> Any:
    import dataclasses
    if not path:
        return new
    i, rest = path[0], path[1:]
    if isinstance(tree, tuple):
        parts = list(tree)
        parts[i] = replace_at(parts[i], rest, new)
        return type(tree)(*parts) if hasattr(tree, "_fields") else tuple(parts)
    k = list(tree.__dataclass_fields__)[i]
    return dataclasses.replace(tree, **{k: replace_at(getattr(tree, k), rest, new)})


def copy_tree(tree: Any) -> Any:
    """A deep copy that keeps each array's layout (a strided view stays a strided view of new memory)."""
    import dataclasses
    if isinstance(tree, np.ndarray):
        if tree.flags.c_contiguous or tree.ndim == 0:
            return tree.copy()
        return mutate(tree, "noncontig")
    if isinstance(tree, tuple):
        parts = [copy_tree(x) for x in tree]
        return type(tree)(*parts) if hasattr(tree, "_fields") else tuple(parts)
    if isinstance(tree, list):
        return [copy_tree(x) for x in tree]
    if isinstance(tree, dict):
        return {k: copy_tree(x) for k, x in tree.items()}
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return dataclasses.replace(tree, **{k: copy_tree(getattr(tree, k)) for k in tree.__dataclass_fields__})
    return tree


def mutate(a: np.ndarray, how: str) -> Any:
    if how == "narrow":
        return a[..., :-1].copy() if a.shape[-1] > 1 else np.zeros(a.shape[:-1] + (2,), a.dtype)
    if how == "wide":
        return np.concatenate([a, a], axis=-1)
    if how == "float64":
        return a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.float32)
    if how == "int":
        return a.astype(np.int64) if a.dtype.kind == "f" else a.astype(np.float64)
    if how == "list":
        return a.tolist()
    if how == "noncontig":
        if a.ndim >= 2 and a.shape[0] > 1:  # padded rows: no flat view of it exists (reshape(-1) copies)
            wide = np.zeros(a.shape[:-1] + (a.shape[-1] + 1,), a.dtype)
            wide[..., :-1] = a
            v = wide[..., :-1]
        else:                               # every other number of a twice-as-long array
            v = np.repeat(a, 2, axis=-1)[..., ::2]
        assert np.array_equal(v, a) and (a.size <= 1 or not v.flags.c_contiguous)
        return v
    if how == "scalar":
        return a.dtype.type(1)
    return a


def parts(lay: Any) -> set[str]:
    """The labels of a layer and of every layer inside it: the parts an error may name."""
    return {lay.label}.union(*(parts(c) for c in lay.children))


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """One call with one argument mutated; what happened."""
    import bendtorch.impl as L
    from bendtorch.impl.optim import CAdamWBF16, opt_at, state_new
    lay, dims = build(case["kind"], case["n"], case["a"], case["b"])
    s = sample(op(case["kind"]), L, dims, case["seed"])   # the record's sample: x, parameters, dy
    p, x, dy = load_params(lay, s.params, F32), s.x, s.dy
    cnt = lay.count()
    rng = np.random.default_rng(case["seed"] + 1)
    g = lay.load(lay.zeros(), rng.standard_normal(cnt).astype(F32), 0).p if cnt else lay.zeros()
    cfg = config(case["opt"])
    step_op = opt_at(cfg, F32(0.1), F32(0.001))
    st0 = state_new(cfg, lay.zeros)
    if isinstance(cfg, CAdamWBF16):  # one step first, so the packed tree has its leaves (their arrays mutate)
        st0 = lay.step(step_op, copy_tree(p), copy_tree(g), st0).st
    args = {"p": p, "x": x, "g": g, "dy": dy, "st": st0}
    tgt, how = case["target"], case["mutation"]
    leaves = arrays(args[tgt])
    bad = dict(args)
    if how != "none":
        if leaves:
            path, a = leaves[case["leaf"] % len(leaves)]
            bad[tgt] = replace_at(args[tgt], path, mutate(a, how))
        else:
            bad[tgt] = np.zeros((1, 1), F32) if how != "list" else [[0.0]]

    def call(v: dict[str, Any]) -> list[Any]:
        v = copy_tree(v)
        if case["call"] == "fwd":
            return [lay.fwd(v["p"], v["x"]).y]
        s = lay.fwd(copy_tree(args["p"]), args["x"]).s
        if case["call"] == "bwd":
            r = lay.bwd(v["p"], s, v["dy"], v["g"])
            return [r.dx, r.g]
        r2 = lay.step(step_op, v["p"], v["g"], v["st"])
        # a state with no buffers (a parameter-free layer's, Dropout's) comes back as it was given: not compared
        return [r2.p, r2.g, r2.st] if arrays(args["st"]) else [r2.p, r2.g]

    names = {case["kind"]} | parts(lay)
    try:
        got = call(bad)
    except (ValueError, TypeError) as e:  # ShapeError is a ValueError
        msg = str(e)
        named = any(nm.split("(")[0] in msg for nm in names) or case["kind"] in msg
        return {"outcome": "named" if named and len(msg) <= MAX_MESSAGE else "unnamed", "error": type(e).__name__,
                "message": msg[:1000]}
    except Exception as e:  # noqa: BLE001  (any other exception is a finding)
        return {"outcome": "other", "error": type(e).__name__, "message": str(e)[:1000]}
    want = call(args)
    same = all(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))
               for (_, a), (_, b) in zip(arrays(got), arrays(want))) and len(arrays(got)) == len(arrays(want))
    return {"outcome": "right" if same else "garbage"}


def worker() -> None:
    """The child: cases as JSON on stdin, one JSON line out before ("start") and after ("done") each case."""
    cases = json.loads(sys.stdin.read())
    for i, case in enumerate(cases):
        print(json.dumps({"start": i}), flush=True)
        print(json.dumps({"done": i, **run_case(case)}), flush=True)


def cases() -> st.SearchStrategy[dict[str, Any]]:
    def one(kind: str, call: str, draw: Any) -> dict[str, Any]:
        c: dict[str, Any] = draw(st.fixed_dictionaries({
            "kind": st.just(kind), "call": st.just(call), "target": st.sampled_from(TARGETS[call]),
            "mutation": st.sampled_from(MUTATIONS), "n": st.integers(1, 4), "a": st.integers(1, 5),
            "b": st.integers(1, 5), "leaf": st.integers(0, 7), "seed": st.integers(0, 2**16),
            "opt": st.sampled_from(OPTS)}))
        return c

    @st.composite
    def case(draw: Any) -> dict[str, Any]:
        return one(draw(st.sampled_from(KINDS)), draw(st.sampled_from(CALLS)), draw)

    return case()


def run_in_child(batch: list[dict[str, Any]],
                 code: str = "from tests.test_layer_zoo import worker; worker()") -> list[dict[str, Any]]:
    r = subprocess.run([sys.executable, "-c", code],
                       input=json.dumps(batch), capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    done = [json.loads(line) for line in r.stdout.splitlines() if line.startswith('{"done"')]
    started = [json.loads(line)["start"] for line in r.stdout.splitlines() if line.startswith('{"start"')]
    if r.returncode != 0:
        last = started[-1] if started else None
        crash = batch[last] if last is not None else None
        raise AssertionError(f"the child process died (exit code {r.returncode}) in case {crash}: "
                             f"{r.stderr[-2000:]}")
    assert len(done) == len(batch), r.stderr[-2000:]
    return done


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(cases(), min_size=CASES, max_size=CASES))
def test_every_call_is_right_or_a_named_error(batch: list[dict[str, Any]]) -> None:
    results = run_in_child(batch)
    bad = [(c, r) for c, r in zip(batch, results) if r["outcome"] not in ("named", "right")]
    assert not bad, "\n".join(f"{c} -> {r}" for c, r in bad[:10])
    # a well-formed call gives the right answer, and a wrong shape is always refused
    for c, r in zip(batch, results):
        if c["mutation"] == "none":
            assert r["outcome"] == "right", (c, r)
        if c["mutation"] in ("narrow", "wide", "list", "scalar") and c["target"] != "st":
            assert r["outcome"] == "named", (c, r)


def test_the_zoo_sees_garbage_and_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The zoo's verdicts can fail. Without the parameter check, a non-contiguous weight handed to LinearNB's step is
    updated in a copy (numpy's reshape) and the step is silently lost: the zoo calls that garbage. A child process
    that dies in a case is a failure naming that case."""
    from bendtorch.impl.protocol import Layer
    case = {"kind": "LinearNB", "call": "step", "target": "p", "mutation": "noncontig", "n": 2, "a": 3, "b": 4,
            "leaf": 0, "seed": 1, "opt": "adamw"}
    assert run_case(case)["outcome"] == "named"
    monkeypatch.setattr(Layer, "check_params", lambda self, call, what, v: None)
    assert run_case(case)["outcome"] == "garbage"
    with pytest.raises(AssertionError, match=r"died \(exit code -6\) in case \{'kind': 'ReLU'"):
        run_in_child([{**case, "kind": "ReLU"}], code='import os; print(\'{"start": 0}\', flush=True); os.abort()')


def test_an_error_names_the_failing_part_not_the_whole_model() -> None:
    import bendtorch.impl as L
    from bendtorch.impl.specs import ShapeError
    m: Any = L.Linear(4, 8, 8)
    for _ in range(30):
        m = L.Seq(m, L.Seq(L.RMSNorm(4, 8), L.Linear(4, 8, 8)))
    assert len(m.name) > 1000
    p = m.zeros()
    with pytest.raises(ShapeError) as e:
        m.fwd(p, np.zeros((4, 7), F32))
    assert len(str(e.value)) < 200 and "Mat[4 x 8]" in str(e.value), str(e.value)
    # a bad gain inside names that RMSNorm, not the model: p = (the blocks before, (gain, Lin)) of the last block
    bad = (p[0], (np.zeros((1, 3), F32), p[1][1]))
    with pytest.raises(ShapeError, match=r"^RMSNorm\(4, 8, eps=1e-05\)\.fwd: p: expected an array \(1, 8\)") as e2:
        m.fwd(bad, np.zeros((4, 8), F32))
    assert len(str(e2.value)) < 200
