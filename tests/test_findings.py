"""The findings' library code (reference/findings/), impl's precise RoPE table (impl/kernels/rope_precise.py), and
the studies' registry (records/studies.py) with `bendtorch study`.

Each test asserts a property that a broken version fails: the precise table's kernel and plain twin give the same
bits, and its error stays at the level of one rounding where the seed's table (checked beside it with the same bound)
is thousands of units off; RoPE's default is the seed's table bit for bit; the constant readers are switched and
restored; the Softmax and cross-entropy studies rank the orders as the arithmetic says they must; the invariance
sweep tells an operation on rows from one that mixes the batch. Every study record names a function that takes its
options with the same defaults; a bad option or output is one line and exit code 2 before any work; the command
writes the result with its command, options, impl's digest and the machine, and the figure; every committed result
names a command that parses."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import bendtorch.impl as L
from bendtorch.records import studies as S
from bendtorch.impl.kernels import rope as R
from bendtorch.impl.kernels import rope_precise as P
from bendtorch.oracle.rope import rope_angles

F32 = np.float32
U = 2.0 ** -24


def table_error_u(cs: np.ndarray, sn: np.ndarray, t: int, half: int, base: float) -> np.ndarray:
    """Per position, max over c of |cos - cos64| and |sin - sin64| in units of 2^-24."""
    a = rope_angles(t, half, base)
    err: np.ndarray = np.maximum(np.abs(cs - np.cos(a)), np.abs(sn - np.sin(a))).max(axis=1) / U
    return err


@pytest.mark.parametrize("t,half,base", [(64, 8, 1e4), (37, 12, 1e5), (200, 3, 5e5), (16, 1, 1e4)])
def test_rope_precise_kernel_and_plain_twin_same_bits(t: int, half: int, base: float) -> None:
    kc, ks = P.rope_table_precise(t, half, F32(base))
    pc, ps = P.rope_table_precise_plain(t, half, F32(base))
    assert kc.dtype == np.float32 and kc.shape == (t, half)
    assert np.array_equal(kc.view(np.uint32), pc.view(np.uint32))
    assert np.array_equal(ks.view(np.uint32), ps.view(np.uint32))


@pytest.mark.parametrize("base", [1e4, 1e5])
def test_rope_precise_error_stays_at_one_rounding(base: float) -> None:
    # 1.5 u: cosf and sinf are within 1 ulp on a float32 argument, the angle pair carries ~2^-44 relative error and
    # the correction term adds one rounding; the seed's table at the same positions is > 100 u off, so the same
    # check fails on it (positions 3072..4095, angles up to 4095 rad)
    t, half = 4096, 16
    precise = table_error_u(*P.rope_table_precise(t, half, F32(base)), t, half, base)
    seed = table_error_u(*R.rope_table(t, half, F32(base)), t, half, base)
    assert precise.max() <= 1.5, precise.max()
    assert seed[3 * t // 4:].max() > 100.0, seed.max()


def test_rope_precise_rejects_positions_beyond_float32() -> None:
    with pytest.raises(ValueError, match="2\\^24"):
        P.rope_table_precise(1 << 24, 1, F32(1e4))


def test_rope_layer_default_is_the_seed_table_and_precise_is_an_option() -> None:
    n, t, h, half = 24, 12, 2, 4
    x = np.random.default_rng(0).standard_normal((n, h * 2 * half), dtype=F32)
    cs, sn = R.rope_table(t, half, F32(1e4))
    seed_y = R.rope_apply_plain(x, cs, sn, t, h, half, True)
    d = L.RoPE(n, h * 2 * half, t, h, half, 1e4)
    p = L.RoPE(n, h * 2 * half, t, h, half, 1e4, precise=True)
    assert np.array_equal(d.fwd(None, x).y.view(np.uint32), seed_y.view(np.uint32))
    pc, ps = P.rope_table_precise(t, half, F32(1e4))
    assert np.array_equal(p.fwd(None, x).y.view(np.uint32),
                          R.rope_apply_plain(x, pc, ps, t, h, half, True).view(np.uint32))
    assert "precise" in p.name and "precise" not in d.name


def test_two_truths_gap_and_switch() -> None:
    import bendtorch.oracle.attention as OA
    from bendtorch.reference.findings import two_truths as T
    before = OA._decimal
    log: list[dict[str, object]] = []
    with T.program_constants(log):
        s24 = OA._decimal(F32(1.0 / np.sqrt(24)))
        s16 = OA._decimal(F32(0.25))
    assert OA._decimal is before  # restored
    assert s24 == float(F32(1.0 / np.sqrt(24))) and s24 != before(F32(1.0 / np.sqrt(24)))
    gaps = [float(g["gap_ulps"]) for g in log]  # type: ignore[arg-type]
    assert gaps[0] > T.GAP_ULPS and gaps[1] == 0.0, gaps


def test_two_truths_restores_readers_after_an_error() -> None:
    import bendtorch.oracle.layers as OL
    from bendtorch.reference.findings import two_truths as T
    before = getattr(OL, "dec")
    with pytest.raises(RuntimeError):
        with T.program_constants():
            raise RuntimeError("boom")
    assert getattr(OL, "dec") is before


def test_softmax_left_to_right_loses_to_pairwise_at_width() -> None:
    # a running float32 sum of c ~ 4096 exponentials of N(0, 1) logits accumulates errors ~ sqrt(c) u, the pairwise
    # sum ~ sqrt(log c) u: at width 4096 the left-to-right error is several times the pairwise one
    pytest.importorskip("torch")
    from bendtorch.reference.findings import orders as O
    e = O.softmax_errors(4096, 2, seed=0)
    assert min(e["impl"]) > 2.0 * max(e["pairwise"]), e


def test_ce_pairwise_mean_equals_impl_on_one_row() -> None:
    # with one row there is no sum over rows: impl's loss and the tree_sum mean of its own terms are the same number
    pytest.importorskip("torch")
    from bendtorch.reference.findings import orders as O
    e = O.ce_errors(1, 32, seed=3)
    assert e["impl"] == e["pairwise mean"]
    e = O.ce_errors(2048, 16, seed=3)
    assert e["impl"] > e["pairwise mean"], e


class _NoThreads:
    """A stand-in target: the sweep needs only `threads`."""

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        yield


def test_invariance_sweep_tells_a_row_wise_op_from_a_batch_wise_one() -> None:
    from bendtorch.reference.findings import invariance as I
    rowwise = I.sweep(_NoThreads(), lambda tg, x: x * F32(2.0), (8,), 5)
    assert rowwise["first_batch_with_a_change"] is None and rowwise["rows_changed"] == [0] * 5
    assert rowwise["threads_1_vs_2_same_bits"] is True
    # subtracting the batch mean makes every row depend on the others: changed from B = 2 on
    batchwise = I.sweep(_NoThreads(), lambda tg, x: x - x.mean(axis=0, keepdims=True), (8,), 5)
    assert batchwise["first_batch_with_a_change"] == 2 and batchwise["batch_invariant_to"] == 1


def test_impl_softmax_is_batch_invariant_in_the_sweep() -> None:
    from bendtorch.reference.findings import invariance as I
    f, item = I.operations(classes=64)["softmax"]
    r = I.sweep(I.LIBRARIES["impl"](), f, item, 6)
    assert r["first_batch_with_a_change"] is None, r


# ---- the studies' registry and `bendtorch study` ------------------------------------------------------------------

def _study_parser() -> argparse.ArgumentParser:
    from bendtorch import cli
    return cli.build_parser()


@pytest.mark.parametrize("st", S.STUDIES, ids=lambda s: s.name)
def test_a_study_record_names_functions_that_take_its_options(st: S.Study) -> None:
    run = S.resolve(st.run)
    params = inspect.signature(run).parameters
    for o in st.options:
        assert o.name in params, f"{st.run} takes no {o.name}"
        assert params[o.name].default == o.default, (o.name, params[o.name].default, o.default)
        assert o.kind != "flag" or o.default is False, o.name
        assert not o.many or isinstance(o.default, tuple), o.name
    rest = set(params) - {o.name for o in st.options} - ({"progress"} if st.progress else set())
    assert all(params[p].default is not inspect.Parameter.empty for p in rest), rest  # every other one has a default
    assert ("progress" in params) == st.progress
    for spec in (st.plot, st.text):
        assert spec is None or callable(S.resolve(spec)), spec
    assert st.result.endswith(".json") and st.figure in (None, st.result[:-5] + ".png")
    args = _study_parser().parse_args(["study", st.name, *st.quick])  # the quick run's options parse
    assert args.study == st.name


def test_the_studies_have_one_name_and_one_result_file_each() -> None:
    assert len({s.name for s in S.STUDIES}) == len({s.result for s in S.STUDIES}) == len(S.STUDIES)
    assert S.get("orders") is S.BY_NAME["orders"]
    with pytest.raises(KeyError, match="the studies are orders, "):
        S.get("order")


def test_every_committed_result_names_a_command_that_parses(capsys: pytest.CaptureFixture[str]) -> None:
    # a committed figure says how to make it again: its command is `bendtorch study NAME` with options that parse
    folder = Path(__file__).resolve().parent.parent / "reports" / "results" / "findings"
    committed = sorted(p.name for p in folder.glob("*.json"))
    assert committed and set(committed) <= {s.result for s in S.STUDIES}, committed
    by_result = {s.result: s for s in S.STUDIES}
    for name in committed:
        words = json.loads((folder / name).read_text())["command"].split()
        assert words[:3] == ["bendtorch", "study", by_result[name].name], (name, words)
        _study_parser().parse_args(words[1:])


def test_the_command_is_written_out_option_by_option() -> None:
    from bendtorch.commands.study import command
    assert command("adam_c2", {"seeds": 10, "lrs": (1e-3, 3e-3), "steps": 100}) == (
        "bendtorch study adam_c2 --seeds 10 --lrs 0.001 0.003 --steps 100")
    assert command("state_bytes", {"model": "tiny", "layers": None}) == "bendtorch study state_bytes --model tiny"
    assert command("two_truths", {"full": True}) == "bendtorch study two_truths --full"
    assert command("orders", {"small": False}) == "bendtorch study orders"


@pytest.mark.parametrize("argv,says", [
    (["adam_c2", "--seeds", "0"], "--seeds: 0 is out of range"),
    (["adam_c2", "--lrs", "0"], "--lrs: 0 is out of range"),
    (["llama_drift", "--lr", "nan"], "--lr: nan is out of range"),
    (["state_bytes", "--model", "big"], "invalid choice: 'big'"),
    (["proofs", "--timeout", "x"], "not a number: 'x'"),
    (["nope"], "invalid choice: 'nope'"),
])
def test_a_bad_option_is_one_line_and_exit_2(argv: list[str], says: str, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch import cli

    monkeypatch.setattr(S, "resolve", _no_work)
    assert cli.main(["study", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def _no_work(spec: str) -> Any:
    raise AssertionError(f"{spec} was resolved: work started before the options were checked")


def test_an_output_that_cannot_be_written_is_refused_before_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch import cli

    monkeypatch.setattr(S, "resolve", _no_work)
    (tmp_path / "file").write_text("")
    assert cli.main(["study", "proofs", "--out", str(tmp_path / "file")]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    (tmp_path / "proofs.json").symlink_to(tmp_path / "elsewhere.json")
    assert cli.main(["study", "proofs", "--out", str(tmp_path)]) == 2
    assert "symbolic link" in capsys.readouterr().err and not (tmp_path / "elsewhere.json").exists()


def _toy_run(n: int = 3, scale: float = 1.0, progress: Any = None) -> dict[str, Any]:
    progress("toy: started")
    return {"values": [scale * i for i in range(n)]}


def _toy_plot(r: dict[str, Any], path: Path) -> None:
    path.write_bytes(b"png: " + str(len(r["values"])).encode())


def _toy_text(r: dict[str, Any]) -> str:
    return f"toy: {len(r['values'])} values"


def test_the_command_writes_the_result_with_its_command_and_machine_and_the_figure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from bendtorch import cli
    from bendtorch.records.machine import impl_digest
    from bendtorch.records.schemas import validate

    toy = S.Study("toy", "a toy", f"{__name__}:_toy_run",
                  (S.Option("n", "int", 3, "how many", lo=1), S.Option("scale", "float", 1.0, "scale")),
                  "toy.json", plot=f"{__name__}:_toy_plot", text=f"{__name__}:_toy_text", progress=True)
    monkeypatch.setattr(S, "STUDIES", (*S.STUDIES, toy))
    monkeypatch.setitem(S.BY_NAME, "toy", toy)
    assert cli.main(["study", "toy", "--n", "4", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "toy: started" in out.err and out.out.splitlines()[0] == "toy: 4 values"
    doc = json.loads((tmp_path / "toy.json").read_text())
    validate(doc, "findings")
    assert doc["values"] == [0.0, 1.0, 2.0, 3.0] and doc["options"] == {"n": 4, "scale": 1.0}
    assert doc["command"] == "bendtorch study toy --n 4 --scale 1.0" and doc["impl_fingerprint"] == impl_digest()
    assert (tmp_path / "toy.png").read_bytes() == b"png: 4"


def test_a_real_study_runs_through_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bendtorch import cli
    from bendtorch.records.schemas import validate

    assert cli.main(["study", "proofs", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "proofs.json").read_text())
    validate(doc, "findings")
    assert doc["proved"] == doc["of"] == len(doc["proofs"]) > 0
    assert f"{doc['of']} of {doc['of']} proved" in capsys.readouterr().out
