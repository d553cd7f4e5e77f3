"""The sweep's chunk files are sealed and its folder is locked: a chunk file that fails any check (swapped from another
range, truncated, empty, not an .npz, an array missing, another dtype or shape, a digest that does not match, a
directory or a link in its place, far larger than a chunk can be) is recomputed and the run says so on one line of
stderr, counted in the JSON, with the clean run's figures; chunks of another key are recomputed; a garbage manifest
or earlier JSON is replaced; two sweeps are kept out of one folder; --workers is capped by the chunk count; and the
command line's remaining hostile inputs (a non-UTF-8 --out, a Dask address where nothing listens, a sample larger
than the memory) are one line each, never a traceback."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bendtorch.records.functions import FUNCTIONS
from bendtorch.records.libraries import LIBRARIES
from bendtorch.reports import sweep as S
from bendtorch.reports.sweep import chunkpass
from bendtorch.reports.sweep import chunks as C
from bendtorch.reports.sweep import engine
from tests.bitcheck import without_run_details

ROOT = Path(__file__).resolve().parent.parent
LO, CHUNK = 0x3F800000, 1 << 11
KW: dict[str, Any] = dict(lo=LO, hi=LO + 4 * CHUNK, chunk=CHUNK, workers=1, plot=False, progress=False)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("clean")
    return out, S.sweep("exp", ["impl", "numpy"], out, **KW)


def _chunk(out: Path, k: int, lib: str = "numpy") -> Path:
    return C.chunk_path(out / "exp" / "chunks" / lib, LO + k * CHUNK)


def _npz(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _swap(p: Path, out: Path) -> None:
    shutil.copyfile(_chunk(out, 1), p)    # another range's chunk, the same length


def _sparse(p: Path, out: Path) -> None:
    with open(p, "wb") as f:
        f.truncate(1 << 36)                # 64 GiB of nothing: refused by its size, never read


def _into_dir(p: Path, out: Path) -> None:
    p.unlink()
    p.mkdir()
    (p / "x").write_text("x")


def _link(p: Path, out: Path) -> None:
    p.unlink()
    p.symlink_to(_chunk(out, 1))


FAULTS: dict[str, Callable[[Path, Path], object]] = {
    "another range's chunk copied over it": _swap,
    "truncated": lambda p, out: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "empty": lambda p, out: p.write_bytes(b""),
    "not an npz": lambda p, out: p.write_bytes(os.urandom(3000)),
    "an array missing": lambda p, out: _npz(p, lambda a: a.pop("hist")),
    "another dtype": lambda p, out: _npz(p, lambda a: a.__setitem__("hist", a["hist"].astype(np.float64))),
    "another shape": lambda p, out: _npz(p, lambda a: a.__setitem__("bmax", a["bmax"][:, :10])),
    "a figure changed under its seal": lambda p, out: _npz(p, lambda a: a["cnt"].__setitem__((0, 0, 1), 0)),
    "a garbage seal": lambda p, out: _npz(p, lambda a: a.__setitem__(C.SEAL, np.frombuffer(b"\xff{", np.uint8))),
    "far larger than a chunk": _sparse,
    "a directory in its place": _into_dir,
    "a link in its place": _link,
}


def _sweep_again(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], list[str]]:
    capsys.readouterr()
    rep = S.sweep("exp", ["impl", "numpy"], out, **KW)
    return rep, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_chunk_that_fails_a_check_is_recomputed_and_said(fault: str, clean: tuple[Path, dict[str, Any]],
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, want = clean
    out = tmp_path / "o"
    shutil.copytree(src, out, symlinks=True)
    FAULTS[fault](_chunk(out, 2), out)
    got, err = _sweep_again(out, capsys)
    assert without_run_details(got["libraries"]) == without_run_details(want["libraries"])
    assert len(err) == 1 and "1 chunk file failed its checks and was recomputed (numpy/chunk_" in err[0], err
    assert got["runs"][-1]["chunks"]["recomputed_after_a_failed_check"] == 1
    assert got["runs"][-1]["chunks"]["reused"] == 7
    # the recomputed chunk passes its checks now: a third run reuses all and says nothing
    third, err = _sweep_again(out, capsys)
    assert err == [] and third["runs"][-1]["chunks"]["reused"] == 8


@pytest.mark.parametrize("what", ["garbage chunk manifest", "manifest of another key", "garbage range JSON"])
def test_a_bad_manifest_or_an_earlier_json_is_replaced(what: str, clean: tuple[Path, dict[str, Any]],
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, want = clean
    out = tmp_path / "o"
    shutil.copytree(src, out, symlinks=True)
    mpath = out / "exp" / "chunks" / "numpy" / C.MANIFEST
    if what == "garbage chunk manifest":
        mpath.write_bytes(b"\x00{not json")
    elif what == "manifest of another key":
        mpath.write_text(json.dumps({**json.loads(mpath.read_text()), "key": "0" * 64}))
    else:
        (out / "exp" / Path(want["json"]).name).write_bytes(b"[1, 2")
    got, err = _sweep_again(out, capsys)
    assert without_run_details(got["libraries"]) == without_run_details(want["libraries"])
    assert len(err) == 1, err
    if what == "manifest of another key":
        assert "made under another key: recomputed" in err[0] and got["runs"][-1]["chunks"]["computed"] == 4
    elif what == "garbage chunk manifest":
        assert "chunk manifest is not JSON" in err[0] and got["runs"][-1]["chunks"]["reused"] == 8
    else:
        assert "is not a sweep JSON" in err[0] and len(got["runs"]) == 1


def test_a_chunk_of_another_checker_version_is_not_reused(clean: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # the key holds the checker's version (and the function's, the library's and the machine's facts): another
    # key's chunks are recomputed, and the JSON names the key its columns were made under
    from bendtorch.reports.sweep import keys

    src, want = clean
    out = tmp_path / "o"
    shutil.copytree(src, out, symlinks=True)
    monkeypatch.setattr(keys, "CHECKER_VERSION", keys.CHECKER_VERSION + 1)
    got, err = _sweep_again(out, capsys)
    assert got["runs"][-1]["chunks"]["computed"] == 8 and len(err) == 1
    assert got["libraries"]["impl"]["key"]["checker"] == keys.CHECKER_VERSION
    assert got["libraries"]["impl"]["key"]["sha256"] != want["libraries"]["impl"]["key"]["sha256"]


def test_two_sweeps_are_kept_out_of_one_folder(tmp_path: Path) -> None:
    from filelock import FileLock

    tmp_path.mkdir(exist_ok=True)
    held = FileLock(str(tmp_path / C.LOCK_FILE))
    held.acquire()
    try:
        p = subprocess.run([sys.executable, "-m", "bendtorch.cli", "sweep", "exp", "--sample", "64", "--lib", "impl",
                            "--out", str(tmp_path), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        held.release()
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "in use by another sweep" in p.stderr, p.stderr
    assert not (tmp_path / "exp" / "sweep_sample.json").exists()


def test_workers_are_capped_by_the_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = engine._pool_map

    def spy(tasks: Any, workers: int, mode: Any, chunksize: int = 1) -> Any:
        sizes.append(workers)
        return real(tasks, workers, mode, chunksize)
    monkeypatch.setattr(engine, "_pool_map", spy)
    S.sweep("exp", ["numpy"], tmp_path, **dict(KW, hi=LO + 2 * CHUNK, workers=64))
    assert sizes == [2]


def test_a_sample_gives_each_library_s_parts_to_one_process_and_keeps_its_figures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a sample runs a task per library and part, a library's parts together (so a library slow to import is
    # imported by one process), the pools started together: the figures are those of one task per group of libraries
    seen: list[tuple[int, int, int]] = []
    real = engine._pool_map

    def spy(tasks: Any, workers: int, mode: Any, chunksize: int = 1) -> Any:
        seen.append((len(tasks), workers, chunksize))
        return real(tasks, workers, mode, chunksize)
    monkeypatch.setattr(engine, "_pool_map", spy)
    libs = [LIBRARIES[n] for n in ("numpy", "clib")]
    pats = np.arange(LO, LO + 4096, dtype=np.uint32)
    got = engine.sweep_patterns(FUNCTIONS["exp"], libs, pats, workers=2, progress=False, pieces=4)
    assert seen == [(8, 2, 4)]   # 2 libraries x 4 parts, 2 processes, a library's 4 parts to one
    for lib in libs:   # the figures of the group's tasks, computed here in one process
        want = chunkpass.merge(None, chunkpass.process_bits(FUNCTIONS["exp"], tuple(libs), pats)[lib.name])
        for k in ("cnt", "hist", "maxu", "argb", "miss_n", "bmax"):
            assert np.array_equal(got[lib.name][k], want[k]), (lib.name, k)


def _cli(args: list[str], timeout: float = 300, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bendtorch.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_a_non_utf8_out_is_one_line_before_any_work(tmp_path: Path) -> None:
    # every command refuses an output folder whose name is not UTF-8 (the reports, the JSON and the atlas's links
    # name it), up front: one line, exit 2, nothing created and no temporary file left
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/atlas-\xff")
    p = _cli(["sweep", "exp", "--sample", "64", "--lib", "impl", "--workers", "1", "--out", out, "--quiet"])
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "atlas-\\xff" in p.stderr and "not valid UTF-8" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not os.path.exists(out) and os.listdir(tmp_path) == []


def test_a_dask_address_where_nothing_listens_is_one_line_within_seconds(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed", reason="not run: dask[distributed] is not installed (optional extra)")
    t0 = time.monotonic()
    p = _cli(["sweep", "exp", "--sample", "64", "--lib", "impl", "--dask", "tcp://127.0.0.1:1", "--out",
              str(tmp_path), "--quiet"])
    took = time.monotonic() - t0
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no Dask scheduler answers" in p.stderr, p.stderr
    assert took < 25, took  # the connection gives up after 5 s (30 s by Dask's default); the rest is start-up


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def test_a_sample_larger_than_the_memory_is_refused_before_allocation(tmp_path: Path) -> None:
    # under a 6 GiB address-space limit, whatever the machine: the estimate and the memory available, one line
    p = _cli(["sweep", "exp", "--sample", "2147483648", "--lib", "impl", "--out", str(tmp_path), "--quiet"],
             preexec_fn=_limit_memory)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "--sample 2147483648: needs about" in p.stderr and "GiB is available" in p.stderr, p.stderr
