"""The cold-start warm-up (impl.kernels.warm) and the cache-index lock it relies on (impl.kernels.cachelock)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from numba.core import caching, types

from bendtorch.impl.kernels import cachelock, libm, warm

IndexFile: Any = caching.IndexDataCacheFile  # numba's cache index of one function (untyped)


# -- plan text ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [types.float32, types.int64, types.boolean, types.Array(types.float32, 2, "C"),
                               types.Array(types.int64, 1, "C", readonly=True), types.Array(types.float32, 3, "A")])
def test_type_text_round_trips(t: Any) -> None:
    assert warm.parse_type(warm.type_text(t)) == t


PAIR = types.UniTuple(types.float32, 2)  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("t", [PAIR, types.Array(types.float32, 1, "C", aligned=False)])
def test_a_type_a_plan_cannot_state_is_refused(t: Any) -> None:
    with pytest.raises(ValueError, match="cannot be written in a plan"):
        warm.type_text(t)


@pytest.mark.parametrize("text", ["float", "array(float32, 2, X)", "__class__", "Array"])
def test_text_that_names_no_argument_type_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not an argument type"):
        warm.parse_type(text)


@pytest.mark.parametrize("plan", sorted(warm.load_plans()))
def test_every_plan_entry_names_a_kernel_and_its_types(plan: str) -> None:
    compiles = warm.entries(plan)
    assert compiles, f"{plan}: an empty plan"
    for module, name, variant, args in compiles:
        d = warm.resolve(module, name, variant)
        assert len(args) == len(d.py_func.__code__.co_varnames[:d.py_func.__code__.co_argcount])
        [warm.parse_type(a) for a in args]


def test_a_stale_entry_is_an_error_naming_it() -> None:
    with pytest.raises(KeyError, match="has no kernel rms_fwd_into.sideways"):
        warm.resolve("bendtorch.impl.kernels.rows", "rms_fwd_into", "sideways")


# -- starting the worker --------------------------------------------------------------------------------------------

class _FakePopen:
    started: list[list[str]] = []

    def __init__(self, argv: list[str], **kw: Any) -> None:
        _FakePopen.started.append(argv)
        self.env = kw.get("env", {})

    def poll(self) -> int:
        return 0


@pytest.fixture
def fake_popen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    _FakePopen.started = []
    monkeypatch.setattr(subprocess, "Popen", _FakePopen)
    monkeypatch.setattr(libm, "CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(warm.SWITCH, raising=False)
    return _FakePopen.started


def test_a_cold_cache_starts_the_worker_and_a_marked_one_does_not(fake_popen: list[list[str]]) -> None:
    assert warm.start("train-tiny") is not None
    assert fake_popen == [[sys.executable, "-m", "bendtorch.impl.kernels.warm", "run", "train-tiny"]]
    warm.marker("train-tiny").write_text("done\n")
    assert warm.start("train-tiny") is None and len(fake_popen) == 1


def test_the_switch_and_an_unknown_plan_start_nothing(fake_popen: list[list[str]],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert warm.start("train-huge") is None
    monkeypatch.setenv(warm.SWITCH, "0")
    assert warm.start("train-tiny") is None
    assert fake_popen == []


def test_the_marker_moves_with_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    before = warm.digest("train-tiny")
    plans = warm.load_plans()
    plans["train-tiny"]["compiles"] = plans["train-tiny"]["compiles"][1:]
    monkeypatch.setattr(warm, "load_plans", lambda: plans)
    assert warm.digest("train-tiny") != before


def test_after_the_warm_up_the_command_compiles_nothing(tmp_path: Path) -> None:
    """On an empty cache: the worker compiles the plan and leaves its marker; then `train --model tiny` compiles no
    function at all (every one it needs, nested ones included, is in the cache). A plan missing a first call fails
    here: the command would compile it."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), **{warm.SWITCH: "1"})
    env.pop(warm.RECORD, None)
    subprocess.run([sys.executable, "-m", "bendtorch.impl.kernels.warm", "run", "train-tiny"], env=env, check=True)
    assert list((tmp_path / "cache").rglob("warm-train-tiny-*.done")), "no marker after the warm-up"
    events = tmp_path / "events.json"
    run = subprocess.run([sys.executable, "-m", "bendtorch", "train", "--model", "tiny", "--steps", "2", "--no-bar",
                          "--out", str(tmp_path / "out")], env=dict(env, **{warm.RECORD: str(events)}),
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(events.read_text())["every"] == []


# -- the cache-index lock -------------------------------------------------------------------------------------------

def _lock_is_held(index_path: str) -> bool:
    import fcntl

    with open(index_path + cachelock.LOCK_SUFFIX, "ab") as probe:
        try:
            fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe.fileno(), fcntl.LOCK_UN)
        return False


def _saves(save: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the index's lock was held each time `save` wrote the index."""
    seen: list[bool] = []
    original = IndexFile._save_index

    def watched(self: Any, overloads: Any) -> None:
        seen.append(_lock_is_held(self._index_path))
        original(self, overloads)

    monkeypatch.setattr(IndexFile, "_save_index", watched)
    f = IndexFile(str(tmp_path), "f-1", ("stamp", 1))
    save(f, ("key", 1), b"data 1")
    save(f, ("key", 2), b"data 2")
    return seen


@pytest.mark.skipif(not cachelock.AVAILABLE, reason="not run: no fcntl on this system, so no lock")
def test_the_index_is_written_under_its_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _saves(IndexFile.save, tmp_path, monkeypatch) == [True, True]
    # numba's own save, unwrapped, writes the index without it: the probe above tells the two apart
    (tmp_path / "unwrapped").mkdir()
    unwrapped = IndexFile.save.__wrapped__
    assert _saves(unwrapped, tmp_path / "unwrapped", monkeypatch) == [False, False]


def _save_many(cache: str, who: int, n: int) -> None:
    cachelock.install()
    f = IndexFile(cache, "f-1", ("stamp", 1))
    for i in range(n):
        f.save((who, i), f"{who} {i}".encode())


@pytest.mark.skipif(not cachelock.AVAILABLE, reason="not run: no fcntl on this system, so no lock")
def test_two_processes_saving_one_index_lose_nothing(tmp_path: Path) -> None:
    """Two processes save 100 signatures each into one function's index at once: every key is in the index, each
    with a data file of its own that holds its own data."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_save_many, args=(str(tmp_path), who, 100)) for who in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    f = IndexFile(str(tmp_path), "f-1", ("stamp", 1))
    index = f._load_index()
    assert sorted(index) == sorted((who, i) for who in (0, 1) for i in range(100))
    assert len(set(index.values())) == 200
    for key in index:
        assert f.load(key) == f"{key[0]} {key[1]}".encode()
