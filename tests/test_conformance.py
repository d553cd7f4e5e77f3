"""The conformance suite's own checks (laws/test_targets.py, targets/, records/targets.py):

- every conformance law fails on a deliberately broken adapter (a real adapter with one operation changed in the
  way the law forbids) and holds on the adapter it breaks, so a "holds" in the table means something;
- each library adapter (torch, jax) maps the laws' operations correctly: its results have the laws' shapes and agree
  with impl's to within rounding, which a wrong layout, axis or weight orientation would not;
- `bendtorch laws --target` reports findings with their counterexamples, and the exit code rule;
- the target records and how a spec is resolved (a built-in name, then pkg.mod:attr, then an entry point), a bad
  spec being one usage error, and the pytest plugin idle in a session that does not use it.

A library adapter whose library is missing is skipped with the reason its adapter gives ("not run: ...")."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from bendtorch.impl.llama import config
from tests import target_checks as C

from bendtorch.laws.registry import LawFailure
from bendtorch.laws.run import conformance_markdown, exit_code
from bendtorch.records.targets import RECORDS
from bendtorch.targets import NotApplicable, NotRun, Opt, Target, make_target

F32 = np.float32

T = C.conformance_laws()  # the laws under the conformance tests' profile (target_checks)


def up(a: Any) -> Any:
    """Every element one ulp up: the smallest change a bit-for-bit law must see."""
    a = np.asarray(a, F32)
    return np.nextafter(a, F32(np.inf)).astype(F32)


class Broken(Target):
    """A real adapter with one operation replaced; every other operation is the base's."""

    def __init__(self, base: Target, **ops: Callable[..., Any]) -> None:
        self.base, self.ops = base, ops
        self.name = f"broken {base.name}"
        self.calls = 0
        self.nthreads = 0

    def __getattribute__(self, name: str) -> Any:
        ops = object.__getattribute__(self, "ops")
        if name in ops:
            return lambda *a, **k: ops[name](self, *a, **k)
        if name in ("base", "ops", "calls", "nthreads", "name", "_na", "device") or name.startswith("__"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "base"), name)


def batched(op: str) -> Callable[..., Any]:
    """op, but one ulp up whenever more than one row (or sequence) is computed at once."""
    def f(self: Broken, x: Any, *a: Any) -> Any:
        y = getattr(self.base, op)(x, *a)
        return up(y) if np.asarray(x).shape[0] > 1 else y
    return f


def _llama_batched(self: Broken, cfg: Any, seed: int, tokens: Any) -> Any:
    y = self.base.llama_logits(cfg, seed, tokens)
    return up(y) if tokens.shape[0] > 1 else y


def _attn_reads_last(what: str) -> Callable[..., Any]:
    def f(self: Broken, q: Any, k: Any, v: Any, sc: float) -> Any:
        o = self.base.attention(q, k, v, sc)
        src = v if what == "v" else k
        leak = src[:, :, -1:, :].sum(axis=(1, 3), keepdims=True)  # the last position, read by every position
        return (o + F32(1e-3) * leak).astype(F32)
    return f


def _grad_after(self: Broken, q: Any, k: Any, v: Any, do: Any, sc: float) -> Any:
    dq, dk, dv = self.base.attention_grad(q, k, v, do, sc)
    dk = dk.copy()
    dk[:, :, -1, :] += F32(1.0)
    return dq, dk, dv


def _tiled_heads(self: Broken, q: Any, k: Any, v: Any, sc: float) -> Any:
    """Query head a reads key/value head a % kv (np.tile) instead of a // g."""
    r = q.shape[1] // k.shape[1]
    return self.base.attention(q, np.tile(k, (1, r, 1, 1)), np.tile(v, (1, r, 1, 1)), sc)


def _grad_batched(self: Broken, q: Any, k: Any, v: Any, do: Any, sc: float) -> Any:
    dq, dk, dv = self.base.attention_grad(q, k, v, do, sc)
    return (dq, dk, up(dv)) if q.shape[0] > 1 else (dq, dk, dv)


def _train_counted(self: Broken, *a: Any, **k: Any) -> Any:
    self.calls += 1
    p, losses = self.base.train(*a, **k)
    return p, (up(losses) if self.calls % 2 == 0 else losses)


@contextlib.contextmanager
def _threads(self: Broken, n: int) -> Iterator[None]:
    self.nthreads = n
    yield


def _train_threads(self: Broken, *a: Any, **k: Any) -> Any:
    p, losses = self.base.train(*a, **k)
    return p, (up(losses) if self.nthreads == 2 else losses)


def _train_resumed(self: Broken, cfg: Any, seed: int, opt: Opt, data: Any, save_at: int | None = None) -> Any:
    p, losses = self.base.train(cfg, seed, opt, data, save_at=save_at)
    return ({n: up(w) for n, w in p.items()} if save_at is not None else p), losses


def _opt_up(self: Broken, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
    return [up(p) for p in self.base.opt_steps(opt, params, grads)]


def _bf16_truncate(self: Broken, x: Any) -> Any:
    return (np.asarray(x, F32).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_nan_inf(self: Broken, x: Any) -> Any:
    h = self.base.bf16_bits(x)
    return np.where(np.isnan(np.asarray(x, F32)), np.uint16(0x7F80), h).astype(np.uint16)


def _dropout_ftz(self: Broken, x: Any, p: float) -> Any:
    """Subnormals flushed to zero, as a CPU in FTZ mode would."""
    y = np.asarray(self.base.dropout(x, p), F32).copy()
    y[(y != 0) & (np.abs(y) < F32(1.1754944e-38))] = F32(0.0)
    return y


def _erf_asym(self: Broken, x: Any) -> Any:
    y = self.base.erf(x)
    return np.where(np.asarray(x) < 0, np.nextafter(y, F32(0)), y).astype(F32)


def _erf_dip(self: Broken, x: Any) -> Any:
    y = self.base.erf(x)
    return np.where(np.asarray(x) >= F32(0.84375), y - F32(0.01), y).astype(F32)


def _erf_big(self: Broken, x: Any) -> Any:
    return (self.base.erf(x) * F32(1.5)).astype(F32)


# law -> (the adapter broken, the operation replaced)
BREAKS: dict[str, tuple[str, dict[str, Callable[..., Any]]]] = {
    "test_linear_batch_invariant": ("impl", {"linear": batched("linear")}),
    "test_matmul_batch_invariant": ("impl", {"linear": batched("linear")}),
    "test_rms_norm_batch_invariant": ("impl", {"rms_norm": batched("rms_norm")}),
    "test_layer_norm_batch_invariant": ("impl", {"layer_norm": batched("layer_norm")}),
    "test_softmax_batch_invariant": ("impl", {"softmax": batched("softmax")}),
    "test_log_softmax_batch_invariant": ("impl", {"log_softmax": batched("log_softmax")}),
    "test_ce_rows_batch_invariant": ("torch", {"ce_rows": batched("ce_rows")}),
    "test_attention_batch_invariant": ("impl", {"attention": batched("attention")}),
    "test_llama_forward_batch_invariant": ("impl", {"llama_logits": _llama_batched}),
    "test_llama_step_batch_invariant": ("impl", {"llama_logits": _llama_batched}),
    "test_causal": ("impl", {"attention": _attn_reads_last("v")}),
    "test_causal_keys": ("impl", {"attention": _attn_reads_last("k")}),
    "test_causal_grad": ("impl", {"attention_grad": _grad_after}),
    "test_kv_of_group": ("impl", {"attention": _tiled_heads}),
    "test_attn_par_fwd": ("impl", {"attention": batched("attention")}),
    "test_attn_par_bwd": ("impl", {"attention_grad": _grad_batched}),
    "test_run_to_run": ("impl", {"train": _train_counted}),
    "test_threads": ("impl", {"train": _train_threads, "threads": _threads}),
    "test_resume": ("impl", {"train": _train_resumed}),
    "test_lr_zero": ("impl", {"opt_steps": _opt_up}),
    "test_zero_grad_sgd": ("impl", {"opt_steps": _opt_up}),
    "test_bf16_rne": ("impl", {"bf16_bits": _bf16_truncate}),
    "test_bf16_nan": ("impl", {"bf16_bits": _bf16_nan_inf}),
    "test_dropout_p_zero": ("impl", {"dropout": _dropout_ftz}),
    "test_erf_odd": ("impl", {"erf": _erf_asym}),
    "test_erf_monotone": ("impl", {"erf": _erf_dip}),
    "test_erf_bounded": ("impl", {"erf": _erf_big}),
}

LAWS = sorted(n for n in vars(T) if n.startswith("test_") and callable(getattr(T, n)))


def base(name: str) -> Target:
    try:
        return make_target(name)
    except NotRun as e:
        pytest.skip(f"not run: {e}")


def test_every_conformance_law_has_a_breakage() -> None:
    assert sorted(BREAKS) == LAWS


@pytest.mark.parametrize("law", LAWS)
def test_law_fails_on_a_broken_adapter_and_holds_on_the_real_one(law: str) -> None:
    """The law holds on the real adapter and fails, with a recorded counterexample, on the broken one."""
    which, ops = BREAKS[law]
    real = base(which)
    fn = getattr(T, law)
    fn(target=real)
    with pytest.raises((LawFailure, BaseExceptionGroup)) as e:
        fn(target=Broken(real, **ops))
    errs = list(e.value.exceptions) if isinstance(e.value, BaseExceptionGroup) else [e.value]
    assert all(isinstance(x, LawFailure) and x.record.get("what") for x in errs), errs


# ---- the library adapters map the operations right: the laws' shapes, impl's numbers to within rounding ----

def close(a: Any, b: Any) -> bool:
    """Agreement up to the libraries' own rounding: a relative 1e-3 (about 8000 ulps, far more than any of these
    few-operation results differ by between libraries) plus 1e-5 absolute. A wrong mapping (heads transposed, a
    weight used untransposed, the wrong axis) gives differences of order one, which this catches."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 1e-3 * np.abs(b) + 1e-5))


# every built-in library adapter (the records' targets other than the harness's own)
ADAPTERS = [name for name, rec in RECORDS.items() if not rec.own]


def where_applicable(check: Callable[..., None], *args: Any) -> None:
    """check(*args) (assertions about one operation) where the library has the operation: a library without it (an
    inference runtime has no gradient and no optimizer) has nothing to agree on."""
    with contextlib.suppress(NotApplicable):
        check(*args)


def _grads_agree(lib: Target, ref: Target, q: Any, k: Any, v: Any) -> None:
    assert all(close(a, c) for a, c in zip(lib.attention_grad(q, k, v, q, 0.5), ref.attention_grad(q, k, v, q, 0.5)))


def _train_agrees(lib: Target, ref: Target, cfg: Any, opt: Opt, data: Any) -> None:
    pa, la = lib.train(cfg, 3, opt, data)
    pb, lb = ref.train(cfg, 3, opt, data)
    assert close(la, lb), opt
    assert all(close(pa[n], pb[n]) for n in pb), opt


def _steps_agree(lib: Target, ref: Target, opt: Opt, ps: Any, gs: Any) -> None:
    assert close(lib.opt_steps(opt, ps, gs)[0], ref.opt_steps(opt, ps, gs)[0]), opt


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_agrees_with_impl(name: str) -> None:
    # each operation the library has (a library without one, NotApplicable, has nothing to agree on there; every
    # target has the products)
    lib, ref = base(name), make_target("impl")
    r = np.random.default_rng(0)
    x, w, b = (r.standard_normal(s).astype(F32) for s in ((5, 7), (3, 7), (3,)))
    g, bb = r.standard_normal(7).astype(F32), r.standard_normal(7).astype(F32)
    lab = np.array([0, 6, 3, 2, 1])
    q, k, v = (r.standard_normal(s).astype(F32) for s in ((2, 4, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4)))
    cfg = config("tiny", t=4)
    toks = r.integers(0, cfg.vocab, (2, 4))
    checks: dict[str, Callable[[], bool]] = {
        "linear": lambda: close(lib.linear(x, w, b), ref.linear(x, w, b)),
        "matmul": lambda: close(lib.linear(x, w, None), ref.linear(x, w, None)),
        "rms_norm": lambda: close(lib.rms_norm(x, g, 1e-5), ref.rms_norm(x, g, 1e-5)),
        "layer_norm": lambda: close(lib.layer_norm(x, g, bb, 1e-5), ref.layer_norm(x, g, bb, 1e-5)),
        "softmax": lambda: close(lib.softmax(x), ref.softmax(x)),
        "log_softmax": lambda: close(lib.log_softmax(x), ref.log_softmax(x)),
        "ce_rows": lambda: close(lib.ce_rows(x, lab), -ref.log_softmax(x)[np.arange(5), lab]),
        "attention": lambda: close(lib.attention(q, k, v, 0.5), ref.attention(q, k, v, 0.5)),
        "erf": lambda: close(lib.erf(x), ref.erf(x)),
        # both round to nearest even on these values
        "bf16_bits": lambda: bool(np.array_equal(lib.bf16_bits(x), ref.bf16_bits(x))),
        "llama_logits": lambda: close(lib.llama_logits(cfg, 3, toks), ref.llama_logits(cfg, 3, toks)),
    }
    compared = []
    for op, agrees in checks.items():
        try:
            ok = agrees()
        except NotApplicable:
            continue
        assert ok, f"{name} {op}"
        compared.append(op)
    assert {"linear", "matmul"} <= set(compared), compared
    where_applicable(_grads_agree, lib, ref, q, k, v)
    data = [(toks, r.integers(0, cfg.vocab, (2, 4))) for _ in range(2)]
    for opt in (Opt("sgd", 0.1), Opt("momentum", 0.05), Opt("adam", 1e-3, wd=0.01), Opt("adamw", 1e-3, wd=0.01)):
        where_applicable(_train_agrees, lib, ref, cfg, opt, data)
        ps = [r.standard_normal((3, 4)).astype(F32)]
        gs = [[r.standard_normal((3, 4)).astype(F32)] for _ in range(3)]
        where_applicable(_steps_agree, lib, ref, opt, ps, gs)


# ---- what the command reports ----

def test_exit_code_rule() -> None:
    """impl (the harness's own target): a failing law exits 1. Another library: a failing law is a finding (exit
    0), an erring law exits 1. Either: no law run, or every law not run, exits 1 unless not run is allowed."""
    held = [{"result": "passed"}, {"result": "not applicable"}, {"result": "not run"}]
    assert exit_code(held, own=True) == 0 and exit_code(held, own=False) == 0
    assert exit_code(held + [{"result": "failed"}], own=True) == 1
    assert exit_code(held + [{"result": "failed"}], own=False) == 0
    assert exit_code(held + [{"result": "error"}], own=False) == 1
    assert exit_code([], own=False) == 1
    none_ran = [{"result": "not run"}] * 3
    assert exit_code(none_ran, own=False) == 1 and exit_code(none_ran, own=True) == 1
    assert exit_code(none_ran, own=False, allow_not_run=True) == 0


def test_conformance_markdown() -> None:
    ce = {"what": "linear: row 0 in a batch of 2 against alone", "inputs": {"x": {"shape": [2, 17]}, "i": 0},
          "first": {"index": [0, 1], "got_bits": "3f800001", "want_bits": "3f800000", "got": 1.0000001, "want": 1.0}}
    docs = [{"profile": "ci", "seconds": 1.0, "targets": [{"target": "impl", "versions": {"numba": "x"}}],
             "rows": [{"family": "batch_invariance", "law": "linear", "result": "passed", "target": "impl",
                       "suite": "conformance"},
                      {"family": "protocol", "law": "seq_assoc", "result": "passed", "target": "impl",
                       "suite": "impl"}]},
            {"profile": "ci", "seconds": 2.0, "targets": [{"target": "torch", "versions": {"torch": "y"}}],
             "rows": [{"family": "batch_invariance", "law": "linear", "result": "failed", "target": "torch",
                       "suite": "conformance", "counterexample": ce}]}]
    md = conformance_markdown(docs)
    assert "| family | law | impl | torch |" in md
    assert "| batch_invariance | linear | holds | **fails** |" in md
    assert "seq_assoc" not in md  # impl's own laws are not part of the conformance table
    assert "3f800001 (1.0000001) against 3f800000 (1.0)" in md and "x 2x17, i 0" in md


def test_a_counterexample_record_gives_the_inputs_back() -> None:
    """The JSON record of an input reads back to the same bits (NaN payloads, -0 and subnormals included)."""
    from bendtorch.laws.verdict import decode, encode
    a = np.array([[1.5, -0.0], [np.nan, 1e-45]], F32)
    a.view(np.uint32)[1, 0] = 0x7FA00001  # a signaling NaN's payload
    assert np.array_equal(decode(encode(a)).view(np.uint32), a.view(np.uint32))
    h = np.array([0x7FC1, 0x8000], np.uint16)
    assert np.array_equal(decode(encode(h)), h)
    assert encode(np.zeros(5000, F32)).get("bits") is None  # too large: regenerated from the seed instead


# ---- the target records, and how a spec is resolved ----

class Doubling(Target):
    """A target of this test module: linear doubled, so a law can tell it from impl."""

    name = "doubling"
    libraries = ("numpy",)

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        return (np.asarray(x, F32) @ np.asarray(w, F32).T * F32(2)).astype(F32)


def make_doubling(device: str = "cpu") -> Target:
    return Doubling(device)


NOT_A_TARGET = 3


def test_every_record_names_an_extra_that_exists_and_a_maker_that_makes_its_target() -> None:
    import tomllib
    from pathlib import Path

    from bendtorch.records.machine import PROBES
    extras = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for name, rec in RECORDS.items():
        assert rec.extra is None or rec.extra in extras, (name, rec.extra)
        assert rec.libraries and set(rec.libraries) <= set(PROBES), (name, rec.libraries)
        assert rec.maker.startswith("bendtorch.targets.") and rec.note
        try:
            t = make_target(name)
        except NotRun as e:  # its library is missing: the adapter says so, naming the record's extra
            assert rec.install_hint() in str(e), e
            continue
        assert isinstance(t, Target) and t.device == "cpu" and t.versions()


def test_each_built_in_record_is_the_one_its_adapter_states() -> None:
    # records.targets reads each adapter's RECORD from the file's text; the module, imported, holds the same record
    import importlib
    for name, rec in RECORDS.items():
        try:
            mod = importlib.import_module(rec.maker.partition(":")[0])
        except NotRun:
            continue
        assert mod.RECORD == rec, name
    assert [r.rank for r in RECORDS.values()] == sorted(r.rank for r in RECORDS.values())


def test_a_new_target_is_one_file_and_a_record_that_is_not_literal_is_refused(tmp_path: Any) -> None:
    from bendtorch.records.targets import built_ins
    (tmp_path / "mine.py").write_text(
        'from bendtorch.records.targets import TargetRecord, Variant\n\n'
        'RECORD = TargetRecord("mine", "mypkg.mine:make", "a " + "note", libraries=("numpy",), rank=-1,\n'
        '                      variants=(Variant("a", "A", {"x": 1}),))\n\n'
        'def make(device="cpu"):\n    raise SystemExit("never imported")\n')
    (tmp_path / "helper.py").write_text("X = 1\n")   # no RECORD: not a target
    recs = built_ins([tmp_path, *[os.path.dirname(make_target.__code__.co_filename)]])
    assert list(recs)[0] == "mine" and recs["mine"].note == "a note" and recs["mine"].variants[0].options == {"x": 1}
    assert list(recs)[1:] == list(RECORDS)
    (tmp_path / "mine.py").write_text('NOTE = "n"\nRECORD = TargetRecord("mine", "m:make", NOTE)\n')
    with pytest.raises(ValueError, match=r"mine.py, line 1: a target's RECORD holds literals"):
        built_ins([tmp_path])


def test_an_adapter_says_not_run_naming_its_extra() -> None:
    from bendtorch.targets import require
    with pytest.raises(NotRun, match=r"no_such_module_x is not installed \(pip install 'bendtorch\[jax\]'\)"):
        require("numpy", "no_such_module_x", target="jax")
    require("numpy", target="jax")  # present: no error


def test_variants_are_columns_of_their_own() -> None:
    from bendtorch.records.targets import PLAIN, SpecError
    torch_rec = RECORDS["torch"]
    assert torch_rec.check("cpu") == (PLAIN,) and torch_rec.label("cpu") == "torch"
    assert [torch_rec.label("cuda", v) for v in torch_rec.check("cuda")] == ["torch cuda (TF32 off)",
                                                                            "torch cuda (TF32 on)"]
    assert [v.options for v in torch_rec.check("cuda", "tf32-on")] == [{"tf32": True}]
    with pytest.raises(SpecError, match="no variant 'tf32-on'"):
        torch_rec.check("cpu", "tf32-on")
    with pytest.raises(SpecError, match="runs on cpu, not cuda"):
        RECORDS["impl"].check("cuda")


def test_resolution_order_built_in_then_module_attr_then_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    from bendtorch.records import targets as R
    from bendtorch.targets import make_target, resolve
    eps = {n: EntryPoint(n, f"{__name__}:make_doubling", R.GROUP) for n in ("doubling-ep", "torch")}
    monkeypatch.setattr(R, "entry_points", lambda: eps)
    assert resolve("torch").how == "built-in"  # a built-in name comes before an entry point of that name
    for spec, how in ((f"{__name__}:make_doubling", "module:attr"), (f"{__name__}:Doubling", "module:attr"),
                      ("doubling-ep", "entry point")):
        res = resolve(spec)
        t = res.make()
        assert res.how == how and res.record.name == spec and res.libraries(t) == ["numpy"], spec
        assert isinstance(t, Doubling)
        x = np.ones((2, 3), F32)
        assert np.array_equal(t.linear(x, x, None), np.full((2, 2), 6, F32))
    inst = Doubling()
    monkeypatch.setattr(sys.modules[__name__], "INSTANCE", inst, raising=False)
    assert make_target(f"{__name__}:INSTANCE") is inst
    monkeypatch.setenv(R.ENV, "doubling-ep")
    assert resolve().how == "entry point" and resolve().spec == "doubling-ep"


@pytest.mark.parametrize("spec, says", [
    ("nosuch", "unknown target 'nosuch'"),
    ("no_such_pkg.mod:make", "no module named 'no_such_pkg.mod'"),
    ("bendtorch.targets:no_such_attr", "has no attribute 'no_such_attr'"),
    (f"{__name__}:NOT_A_TARGET", "a int, not a target"),
    ("bendtorch.targets.base:Opt", "a type, not a target"),
    ("not a:ref", "not a module:attr reference"),
])
def test_a_bad_spec_is_one_line(spec: str, says: str) -> None:
    from bendtorch.records.targets import SpecError
    from bendtorch.targets import resolve
    with pytest.raises(SpecError) as e:
        resolve(spec)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_command_refuses_a_bad_spec_before_any_work(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch.cli import main
    for argv, says in ((["--target", "nosuch"], "unknown target 'nosuch'"),
                       (["--target", "impl", "--device", "cuda"], "target impl runs on cpu, not cuda"),
                       (["--target", "torch", "--variant", "tf32-on"], "no variant 'tf32-on'"),
                       (["--target", "json:dumps"], "is not a maker")):
        assert main(["laws", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (argv, err)
    monkeypatch.setenv("BENDTORCH_TARGET", "nosuch")
    assert main(["laws"]) == 2
    assert "(from $BENDTORCH_TARGET)" in capsys.readouterr().err


def test_every_law_not_run_exits_1_unless_allowed(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    """PyTorch on a GPU where there is none (or its variant TF32 on alone): every law not run, the reason in the
    rows, exit 1 with one line on stderr; --allow-not-run exits 0."""
    import json

    from bendtorch.cli import main
    from bendtorch.records.schemas import validate
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("not run: a GPU is present, so the cuda laws would run")
    out = tmp_path / "cuda.json"
    assert main(["laws", "--target", "torch", "--device", "cuda", "--variant", "tf32-on", "--json", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "every law of torch cuda was not run (no GPU)" in err, err
    doc = json.loads(out.read_text())
    validate(doc, "laws")
    assert doc["targets"] == [{"target": "torch cuda (TF32 on)", "variant": "tf32-on", "not_run": "no GPU"}]
    assert {(r["result"], r["reason"], r["suite"]) for r in doc["rows"]} == {("not run", "no GPU", "conformance")}
    assert len(doc["rows"]) == len(LAWS) and "torch" in doc["machine"]["libraries"]
    assert main(["laws", "--target", "torch", "--device", "cuda", "--allow-not-run"]) == 0
    assert "total: 54 law runs over 2 columns: 0 passed, 0 failed, 54 not run" in capsys.readouterr().out


def test_threads_law_is_not_run_where_numba_has_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """With NUMBA_NUM_THREADS=1 impl cannot run 2 threads: the 1-vs-2-threads law says not run, never passes."""
    import numba
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    impl = make_target("impl")
    with pytest.raises(NotRun, match="numba has 1 thread"):
        with impl.threads(2):
            pass
    with pytest.raises(pytest.skip.Exception, match="not run: impl threads: numba has 1 thread"):
        T.test_threads(target=impl)


# ---- the pytest plugin: idle in a session that does not use it; a bad spec is a usage error ----

IDLE = '''
import sys
from hypothesis import given, settings, strategies as st

def test_nothing_of_bendtorch_is_loaded():
    heavy = [m for m in ("numba", "torch", "bendtorch.targets", "bendtorch.impl") if m in sys.modules]
    assert heavy == [] and settings._current_profile == "default", (heavy, settings._current_profile)

@given(st.integers())
def test_hypothesis_keeps_its_defaults(i):
    assert settings().max_examples == 100
'''


def test_the_plugin_is_idle_in_a_session_that_does_not_use_it(tmp_path: Any) -> None:
    import subprocess
    (tmp_path / "test_idle.py").write_text(IDLE)
    # hypothesis loads its own "ci" profile where a CI service's variables are set (hypothesis._settings.is_in_ci):
    # the session runs without them, so the profile it finds is hypothesis's default unless the plugin loaded one
    from hypothesis import _settings as hypothesis_settings
    ci_vars = set(getattr(hypothesis_settings, "_CI_VARS", ())) | {"CI", "TF_BUILD", "GITHUB_ACTIONS"}
    env = {k: v for k, v in os.environ.items() if k not in ci_vars} | {"BENDTORCH_TARGET": ""}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_idle.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert "--bendtorch-target=SPEC" in r.stdout and "--bendtorch-profile" in r.stdout  # the plugin is loaded
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--bendtorch-target", "nosuch", "test_idle.py"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 4 and "ERROR: bendtorch: unknown target 'nosuch'" in r.stderr, r.stdout + r.stderr


def test_the_plugin_runs_a_law_once_per_variant(tmp_path: Any) -> None:
    """PyTorch on cuda has two variants (TF32 off, on): each law runs once per variant; without a GPU each says
    "not run: no GPU"."""
    import subprocess
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--bendtorch-target",
                        "torch", "--bendtorch-device", "cuda", "--pyargs", "bendtorch.laws.test_targets", "-k",
                        "erf_odd", "--collect-only"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and "test_erf_odd[tf32-off]" in r.stdout and "test_erf_odd[tf32-on]" in r.stdout, \
        r.stdout + r.stderr
    import torch
    if not torch.cuda.is_available():
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                            "--bendtorch-target", "torch", "--bendtorch-device", "cuda", "--pyargs",
                            "bendtorch.laws.test_targets", "-k", "erf_odd"], cwd=tmp_path, capture_output=True,
                           text=True)
        assert r.returncode == 0 and "SKIPPED [2]" in r.stdout and "not run: no GPU" in r.stdout, r.stdout


def test_columns_at_once_give_the_rows_of_columns_in_turn(tmp_path: Any) -> None:
    """`bendtorch laws` runs a target's columns at once, each in a process of its own (--jobs 2), or in turn in one
    process (--jobs 1): the same rows, in the same order, with the same results and examples; only the times differ.
    ONNX Runtime's two columns (graph optimisations on and off) on the erf laws: a second each."""
    import json
    import subprocess
    import importlib.util
    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("not run: onnxruntime is not installed (pip install 'bendtorch[onnx]')")
    docs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}.json"
        r = subprocess.run([sys.executable, "-m", "bendtorch", "laws", "--target", "onnxruntime", "-k", "erf",
                            "--jobs", jobs, "--json", str(out)], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert "total: 6 law runs over 2 columns: 6 passed" in r.stdout, r.stdout[-500:]
        docs.append(json.loads(out.read_text()))
    strip = [[{k: v for k, v in row.items() if k != "seconds"} for row in d["rows"]] for d in docs]
    assert strip[0] == strip[1] and len(strip[0]) == 6
    assert [row["target"] for row in strip[1]] == ["onnxruntime (ORT_ENABLE_ALL)"] * 3 + \
        ["onnxruntime (ORT_DISABLE_ALL)"] * 3
    assert docs[0]["targets"] == docs[1]["targets"]


def test_a_column_whose_process_dies_is_every_law_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A column's process that ends without its JSON (killed, crashed) makes each of its laws an "error" naming the
    exit status and the last line it printed, never a pass; the other column's rows are its own, and the exit code
    is 1."""
    import subprocess

    from bendtorch.laws import run as R
    plan = R.prepare(f"{__name__}:make_doubling")
    plan.columns.append(R.Column(plan.columns[0].target, {"target": "doubling (again)"}, "again"))
    calls = []

    def died(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        if cmd[cmd.index("--variant") + 1] != "again":
            return subprocess.CompletedProcess(cmd, -9, stdout="working\nKilled\n\n")
        out = cmd[cmd.index("--json") + 1]
        with open(out, "w") as f:
            f.write('{"rows": [{"law": "odd", "result": "passed", "target": "doubling (again)"}]}')
        return subprocess.CompletedProcess(cmd, 0, stdout="")
    monkeypatch.setattr(subprocess, "run", died)
    rows = R.run_columns(plan, "ci", jobs=1 + 1)
    assert len(calls) == 2 and all(c[c.index("--jobs") + 1] == "1" for c in calls)
    first = [r for r in rows if r["target"] != "doubling (again)"]
    assert first and {r["result"] for r in first} == {"error"}
    assert all(r["reason"] == "the column's process exited -9: Killed" for r in first)
    assert rows[len(first):] == [{"law": "odd", "result": "passed", "target": "doubling (again)"}]
    assert R.exit_code(rows, own=False) == 1
