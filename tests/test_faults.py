"""Fault injection: every file the harness reads or writes, shown what a hostile or careless user could put there.

Each case runs the real command line in a child process under a 4 GB address-space limit (`ulimit -v 4194304`) and a
time limit, and is classified: refused (stderr one line, `... error: ...` with the reason, exit code 2 before any
work or 1 for a failure during work), recomputed (exit code 0 and the result checked right: the same bits as a run
without the fault, or the output asked for), and silently accepted, traceback, hang, memory error, other (each 0).

A family is a list of Case(name, setup, argv, expect): `setup(case_dir, base)` makes the files, `argv` is the
command's arguments (`{dir}` the case's folder, `{base}` the shared reference runs'; bytes pass as they are, for names
that are not UTF-8), `expect` is Refused(needle) or Accepted(check). FAMILIES lists them; another component's families
join it, or run from their own test module through run_families (importing Case, Refused, Accepted, run_families and
the `base` fixture from here), with the same classes and table. The default run takes the cases marked `ci` (a minute);
`BENDTORCH_FAULTS=full .venv/bin/python -m pytest -s tests/test_faults.py` runs every case and prints the table by
family. Elsewhere: the corrupted-checkpoint zoo (tests/test_checkpoint.py), the folder lock and a non-finite loss
(tests/test_train_resume.py), the command line's bad-input table (tests/reference/test_bad_input.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import pytest

FULL = os.environ.get("BENDTORCH_FAULTS", "") == "full"
LIMIT_KB = 4194304  # ulimit -v: 4 GB of address space per case
COLUMNS = ("refused", "recomputed", "silently accepted", "traceback", "hang", "memory error", "other")


@dataclass(frozen=True)
class Base:
    """The shared files every family's cases start from (made once): reference runs and their checkpoints."""

    root: Path
    params_sha256: str  # the digest interchange's driver prints for tiny's parameters drawn from seed 0
    shipped: bytes  # the shipped corpus
    corpus: bytes  # corpus.txt, refdata's data
    safetensors: bytes  # model.safetensors


Result = NamedTuple("Result", [("code", int), ("out", str), ("err", str), ("seconds", float), ("timed_out", bool)])


Check = Callable[[Path, Base, Result], "str | None"]  # None: the result is right; else what is wrong


@dataclass(frozen=True)
class Refused:
    needle: str  # a piece of the one line
    code: int = 2
    check: Check | None = None  # what must hold afterwards (a link's target untouched, nothing written)


@dataclass(frozen=True)
class Accepted:
    check: Check


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Path, Base], None] | None  # Setup
    argv: Sequence[str | bytes]
    expect: Refused | Accepted
    ci: bool = False
    cwd: str = "{dir}"
    program: str = "bendtorch"  # or "interchange": the driver below, which calls bendtorch.impl.interchange
    timeout: float = 90.0


# interchange has no subcommand: its reader and writer are called as a library user calls them, in a child process,
# and an InterchangeError or OutputError is printed as a command would print it
DRIVER = r"""
import hashlib, sys, warnings
import numpy as np
from bendtorch import impl
from bendtorch.impl import llama
from bendtorch.impl.interchange import InterchangeError, load_safetensors, load_state_dict, save_safetensors, state_dict
from bendtorch.records.durable import OutputError
m = llama.build(impl, llama.config("tiny"), 1)
p = m.init(0)
N, E = "model.norm.weight", "model.embed_tokens.weight"

def state(change):  # an expression of sd, t (the norm's tensor) and e (the embedding's): "=..." the whole dict
    import torch
    warnings.simplefilter("ignore")  # torch warns that quantized and sparse CSR tensors are beta or deprecated
    sd = {k: torch.from_numpy(v) for k, v in state_dict(m, p).items()}
    t, e = sd[N], sd[E]
    got = eval(change.removeprefix("="), {"torch": torch, "np": np, "sd": sd, "t": t, "e": e, "N": N, "E": E})
    return got if change.startswith("=") else {**sd, **got}

try:
    cmd, arg = sys.argv[1], sys.argv[2]  # import PATH, export PATH (then read back), or sd CHANGE
    if cmd == "export":
        save_safetensors(m, p, arg)
    q = load_state_dict(m, state(arg)) if cmd == "sd" else load_safetensors(m, arg)
except (InterchangeError, OutputError) as err:
    print(f"interchange: error: {err}", file=sys.stderr)
    sys.exit(2)
print(hashlib.sha256(m.layer.dump(q).tobytes()).hexdigest())
"""


def _expand(a: str | bytes, d: Path, base: Path) -> str | bytes:
    if isinstance(a, bytes):
        return a.replace(b"{dir}", os.fsencode(d)).replace(b"{base}", os.fsencode(base))
    return a.replace("{dir}", str(d)).replace("{base}", str(base))


def run_case(case: Case, d: Path, base: Base) -> Result:
    """The case's command in a child process under the memory limit; killed (with its children) past its time."""
    cmd: list[str | bytes] = [sys.executable, "-m", "bendtorch"] if case.program == "bendtorch" else \
        [sys.executable, "-c", DRIVER]
    cmd += [_expand(a, d, base.root) for a in case.argv]
    wrapped = ["bash", "-c", f'ulimit -v {LIMIT_KB}; exec "$@"', "fault", *cmd]
    t0 = time.monotonic()
    proc = subprocess.Popen(wrapped, cwd=_expand(case.cwd, d, base.root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=case.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        (out, err), timed_out = proc.communicate(), True
    return Result(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                  time.monotonic() - t0, timed_out)


def classify(case: Case, d: Path, base: Base, r: Result) -> tuple[str, str]:
    """(the column the case's outcome counts in, a note on it)."""
    if r.timed_out:
        return "hang", f"no answer in {case.timeout:.0f} s"
    if any(s in r.err for s in ("MemoryError", "Unable to allocate", "Cannot allocate memory", "std::bad_alloc")) \
            or r.code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT):
        return "memory error", r.err.strip()[-300:]
    if "Traceback (most recent call last)" in r.err:
        return "traceback", r.err.strip().splitlines()[-1][:300]
    if r.code == 0:
        if isinstance(case.expect, Accepted):
            wrong = case.expect.check(d, base, r)
            return ("recomputed", "") if wrong is None else ("silently accepted", wrong)
        return "silently accepted", "exit code 0 where a refusal was expected"
    lines = r.err.strip().splitlines()
    if r.code in (1, 2) and len(lines) == 1 and ": error: " in lines[0]:
        e = case.expect
        if isinstance(e, Refused) and str(_expand(e.needle, d, base.root)) in lines[0] and e.code == r.code:
            wrong = e.check(d, base, r) if e.check else None
            return ("refused", lines[0]) if wrong is None else ("other", f"refused, but {wrong}")
        return "other", f"refused ({r.code}) with another reason: {lines[0][:300]}"
    return "other", f"exit code {r.code}, stderr {r.err.strip()[-300:]!r}"


def run_families(families: Sequence[tuple[str, list[Case]]], tmp: Path, base: Base,
                 workers: int = 2) -> dict[str, Counter[str]]:
    """Every case of every family, `workers` at a time (each case's setup runs first, in this thread: a setup may
    change the current directory); prints the table; returns the counts by family."""
    jobs = []
    for k, (fam, cases) in enumerate(families):
        for i, case in enumerate(cases):
            d = tmp / f"f{k}-{i}"
            d.mkdir(parents=True)
            if case.setup is not None:
                case.setup(d, base)
            jobs.append((fam, case, d))
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda j: run_case(j[1], j[2], base), jobs))
    counts: dict[str, Counter[str]] = {fam: Counter() for fam, _ in families}
    notes = []
    for (fam, case, d), r in zip(jobs, results):
        col, note = classify(case, d, base, r)
        counts[fam][col] += 1
        counts[fam]["tried"] += 1
        want = "refused" if isinstance(case.expect, Refused) else "recomputed"
        if col != want:
            notes.append(f"  {fam} / {case.name}: {col}: {note}")
    print(f"\nFAULTS {'full' if FULL else 'CI slice'}, each case under ulimit -v {LIMIT_KB}:\n{'family':<36} tried "
          + " ".join(f"{c:>10.10}" for c in COLUMNS))
    for fam, c in [*counts.items(), ("all", sum(counts.values(), Counter()))]:
        print(f"{fam:<36} {c['tried']:>5} " + " ".join(f"{c[k]:>10}" for k in COLUMNS))
    print("\n".join(notes))
    assert not notes, "\n" + "\n".join(notes)
    return counts


# ----------------------------------------------------------------- the shared reference runs, the accepted checks


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    """ref: tiny, 6 steps on the shipped corpus, checkpoints at 3 and 6; refdata: the same on corpus.txt (other bytes);
    v1: ref's step-3 checkpoint with a version 1 manifest; model.safetensors: tiny's parameters of seed 0."""
    from bendtorch import impl
    from bendtorch.data import corpus_bytes
    from bendtorch.impl import llama
    from bendtorch.impl.checkpoint_folder import MANIFEST_FILE, _seal, read_manifest
    from bendtorch.impl.interchange import save_safetensors

    root = tmp_path_factory.mktemp("faults-base")
    run = [sys.executable, "-m", "bendtorch", "train", "--steps", "6", "--checkpoint-every", "3", "--no-bar"]
    (root / "corpus.txt").write_bytes(corpus_bytes()[::-1])
    for extra in (["--out", "ref"], ["--data", "corpus.txt", "--out", "refdata"]):
        subprocess.run(run + extra, cwd=root, check=True, capture_output=True)
    shutil.copytree(root / "ref" / "ckpt_step3", root / "v1")
    body = {k: v for k, v in read_manifest(root / "v1")[1].items() if k != "data"}
    old = {**body["flags"], "lr": None, "wd": None, "batch": None, "layers": None, "data": None}
    (root / "v1" / MANIFEST_FILE).write_bytes(_seal({**body, "version": 1, "flags": old}))
    m = llama.build(impl, llama.config("tiny"), 1)
    save_safetensors(m, m.init(0), root / "model.safetensors")
    return Base(root, hashlib.sha256(m.layer.dump(m.init(0)).tobytes()).hexdigest(), corpus_bytes(),
                corpus_bytes()[::-1], (root / "model.safetensors").read_bytes())


def same_as(ref: str, out: str = "out") -> Check:
    """The run ended on the reference run's bits (its final state and parameters)."""
    def check(d: Path, base: Base, r: Result) -> str | None:
        for f in ("final_state/state.bin", "final_params.bin"):
            a, b = d / out / f, base.root / ref / f
            if not a.is_file() or a.read_bytes() != b.read_bytes():
                return f"{out}/{f} differs from {ref}'s"
        return None
    return check


def wrote(*names: str | bytes) -> Check:
    def check(d: Path, base: Base, r: Result) -> str | None:
        missing = [n for n in names if not os.path.lexists(d / os.fsdecode(n))]
        return f"missing {missing}" if missing else None
    return check


def prints_params(d: Path, base: Base, r: Result) -> str | None:
    return None if r.out.strip() == base.params_sha256 else f"read other parameters ({r.out.strip()[:16]})"


def untouched(victim: str, content: bytes, *absent: str) -> Check:
    """A link's target keeps its bytes and nothing named in absent was written."""
    def check(d: Path, base: Base, r: Result) -> str | None:
        if (d / victim).read_bytes() != content:
            return f"{victim} was written through a link"
        made = [a for a in absent if os.path.lexists(d / a)]
        return f"{made} written before the refusal" if made else None
    return check


# ------------------------------------------------------------------------------------------ making special files


Setup = Callable[[Path, Base], None]


def at(rel: str | bytes, make: Callable[[Path, Path, Base], object]) -> Setup:
    """A setup that makes rel (in the case's folder, its parents made) with make(path, case folder, base)."""
    def setup(d: Path, b: Base) -> None:
        p = d / os.fsdecode(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        make(p, d, b)
    return setup


def fifo(rel: str) -> Setup:
    return at(rel, lambda p, d, b: os.mkfifo(p))


def folder(rel: str) -> Setup:
    return at(rel, lambda p, d, b: p.mkdir())


def link(rel: str, target: str) -> Setup:
    return at(rel, lambda p, d, b: os.symlink(target.replace("{dir}", str(d)).replace("{base}", str(b.root)), p))


def sparse(rel: str, size: int) -> Setup:
    def make(p: Path, d: Path, b: Base) -> None:
        with open(p, "wb") as f:
            f.truncate(size)
    return at(rel, make)


def put(rel: str | bytes, data: Callable[[Base], bytes]) -> Setup:
    return at(rel, lambda p, d, b: p.write_bytes(data(b)))


def ckpt(rel: str | bytes, src: str = "ref/ckpt_step3", then: Setup | None = None) -> Setup:
    """A copy of a reference checkpoint at rel (then: a further change)."""
    return at(rel, lambda p, d, b: (shutil.copytree(b.root / src, p), then and then(d, b)))


def sock(rel: str) -> Setup:
    def make(p: Path, d: Path, b: Base) -> None:  # bound by a relative name: a socket's path is limited to 108 bytes
        here = os.getcwd()
        os.chdir(p.parent)
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.bind(p.name)
        finally:
            os.chdir(here)
    return at(rel, make)


def both(*steps: Setup) -> Setup:
    def setup(d: Path, b: Base) -> None:
        for s in steps:
            s(d, b)
    return setup


def corpus(b: Base) -> bytes:
    return (b.root / "corpus.txt").read_bytes()


def shipped(b: Base) -> bytes:
    return b.shipped

def resealed(rel: str, **bin_fields: Any) -> Setup:
    """The manifest at rel sealed again with its .bin's record changed, as a forger would."""
    def make(d: Path, b: Base) -> None:
        from bendtorch.impl.checkpoint_folder import MANIFEST_FILE, _seal, read_manifest
        body = read_manifest(d / rel)[1]
        (d / rel / MANIFEST_FILE).write_bytes(_seal({**body, "bin": {**body["bin"], **bin_fields}}))
    return make


# ---------------------------------------------------------------------------------------------------- the families


T = ["train", "--steps", "6", "--no-bar"]
OUT = ["--out", "{dir}/out"]
RESUME = [*T, "--resume", "{dir}/ck", *OUT]


def data(*a: str | bytes) -> list[str | bytes]:
    return [*T, "--data", *a, *OUT]


def swap(rel: str, make: Callable[[str], Setup]) -> Setup:
    """A copy of ref's step-3 checkpoint at ck, with ck/rel replaced by what make(rel) makes."""
    def then(d: Path, b: Base) -> None:
        (d / "ck" / rel).unlink()
        make("ck/" + rel)(d, b)
    return ckpt("ck", then=then)


def _train_reads() -> list[Case]:
    R = Refused
    return [
        Case("--data a fifo", fifo("c"), data("{dir}/c"), R("--data {dir}/c: is a fifo, not a regular file"), ci=True),
        Case("--data a directory", folder("c"), data("{dir}/c"), R("--data {dir}/c: is a directory, not a regular")),
        Case("--data /dev/zero", None, data("/dev/zero"), R("--data /dev/zero: is a character device")),
        Case("--data a socket", sock("c"), data("{dir}/c"), R("is a socket, not a regular file")),
        Case("--data a dangling link", link("c", "{dir}/nothing"), data("{dir}/c"), R("a symbolic link to nothing")),
        Case("--data a link to a fifo", both(fifo("f"), link("c", "{dir}/f")), data("{dir}/c"), R("is a fifo")),
        Case("--data a link to a corpus", link("c", "{base}/corpus.txt"), data("{dir}/c"),
             Accepted(same_as("refdata"))),
        Case("--resume: state.bin a fifo", swap("state.bin", fifo), RESUME, R("state.bin: is a fifo"), ci=True),
        Case("--resume: manifest.json a fifo", swap("manifest.json", fifo), RESUME, R("manifest.json: is a fifo")),
        Case("--resume: state.bin a directory", swap("state.bin", folder), RESUME, R("state.bin: is a directory")),
        Case("--resume: state.bin a socket", swap("state.bin", sock), RESUME, R("state.bin: is a socket")),
        Case("--resume: manifest.json a link to /dev/zero", swap("manifest.json", lambda r: link(r, "/dev/zero")),
             RESUME, R("manifest.json: is a symbolic link"), ci=True),
        Case("--resume: state.bin a link to the true one",
             swap("state.bin", lambda r: link(r, "{base}/ref/ckpt_step3/state.bin")), RESUME,
             R("state.bin: is a symbolic link")),
        Case("--resume: manifest.json a link to the true one",
             swap("manifest.json", lambda r: link(r, "{base}/ref/ckpt_step3/manifest.json")), RESUME,
             R("manifest.json: is a symbolic link")),
        Case("--resume a fifo", fifo("ck"), RESUME, R("ck: is a fifo, not a checkpoint folder")),
        Case("--resume /dev/zero", None, [*T, "--resume", "/dev/zero", *OUT], R("is a character device")),
        Case("--resume a link to a checkpoint folder", link("ck", "{base}/ref/ckpt_step3"), RESUME,
             Accepted(same_as("ref"))),
        Case("--resume naming state.bin in the folder", ckpt("ck"), [*T, "--resume", "{dir}/ck/state.bin", *OUT],
             Accepted(same_as("ref"))),
    ]


def _train_writes() -> list[Case]:
    O = [*T, "--checkpoint-every", "3", *OUT]
    keep = put("victim", lambda b: b"keep me")

    def linked(name: str) -> Case:
        gone = untouched("victim", b"keep me", *(f"out/{n}" for n in ("final_state", "summary.json") if n != name))
        return Case(f"out/{name} a link", both(keep, link(f"out/{name}", "{dir}/victim")), O,
                    Refused(f"out/{name}: is a symbolic link", check=gone), ci=name == "loss.png")
    return [
        *(linked(n) for n in ("loss.png", "summary.json", "final_params.bin", ".bendtorch.lock")),
        Case("out/final_state a link to a folder", both(put("vdir/victim", lambda b: b"keep me"),
                                                       link("out/final_state", "{dir}/vdir")), O,
             Refused("out/final_state: is a symbolic link", check=untouched("vdir/victim", b"keep me")), ci=True),
        Case("out/ckpt_step3 a link to a folder", both(put("vdir/victim", lambda b: b"keep me"),
                                                      link("out/ckpt_step3", "{dir}/vdir")), O,
             Refused("out/ckpt_step3: is a symbolic link", check=untouched("vdir/victim", b"keep me"))),
        Case("out/summary.json a dangling link", link("out/summary.json", "{dir}/nothing"), O,
             Refused("summary.json: is a symbolic link")),
        Case("out/summary.json a directory", folder("out/summary.json"), O, Refused("exists and is not a regular")),
        Case("out/final_state a file", put("out/final_state", lambda b: b"x"), O,
             Refused("out/final_state: exists and is not a directory")),
        Case("out/final_params.bin a fifo", fifo("out/final_params.bin"), O, Refused("is not a regular file")),
        Case("out/loss.png a socket", sock("out/loss.png"), O, Refused("loss.png: exists and is not a regular")),
        Case("--out a fifo", fifo("out"), O, Refused("exists and is not a directory")),
        Case("--out a dangling link", link("out", "{dir}/nothing"), O, Refused("not writable")),
        Case("--out a link to a folder", both(folder("real"), link("out", "{dir}/real")), O,
             Accepted(same_as("ref", "real"))),
    ]


def _interchange() -> list[Case]:
    def imp(path: str, cmd: str = "import") -> dict[str, Any]:
        return {"argv": [cmd, path], "program": "interchange"}
    return [
        Case("import a fifo", fifo("m"), expect=Refused("m: is a fifo, not a regular file"), ci=True, **imp("{dir}/m")),
        Case("import a directory", folder("m"), expect=Refused("is a directory"), **imp("{dir}/m")),
        Case("import /dev/zero", None, expect=Refused("/dev/zero: is a character device"), **imp("/dev/zero")),
        Case("import a socket", sock("m"), expect=Refused("is a socket"), **imp("{dir}/m")),
        Case("import a dangling link", link("m", "{dir}/nothing"), expect=Refused("to nothing"), **imp("{dir}/m")),
        Case("import a link to a model", link("m", "{base}/model.safetensors"), expect=Accepted(prints_params),
             **imp("{dir}/m")),
        Case("import a model", put("m", lambda b: b.safetensors), expect=Accepted(prints_params), **imp("{dir}/m")),
        Case("export onto a link", both(put("victim", lambda b: b"keep me"), link("m", "{dir}/victim")), ci=True,
             expect=Refused("m: is a symbolic link", check=untouched("victim", b"keep me")),
             **imp("{dir}/m", "export")),
        Case("export into a missing folder", None, expect=Refused("folder {dir}/nope does not exist"),
             **imp("{dir}/nope/m.safetensors", "export")),
        Case("export onto a directory", folder("m"), expect=Refused("m: is a directory"), **imp("{dir}/m", "export")),
        Case("export onto a fifo", fifo("m"), expect=Accepted(prints_params), **imp("{dir}/m", "export")),
    ]


def _huge_last(p: Path, d: Path, b: Base) -> None:
    """model.safetensors with its last tensor declared 2^20 x 2^10 (4 GiB, the file sparse to match): the header
    holds together; only the model's shapes refuse it."""
    raw = b.safetensors
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    last = max((k for k in head if k != "__metadata__"), key=lambda k: head[k]["data_offsets"][1])
    start = head[last]["data_offsets"][0]
    head[last] = {"dtype": "F32", "shape": [2 ** 20, 2 ** 10], "data_offsets": [start, start + 2 ** 32]}
    blob = json.dumps(head).encode()
    p.write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + n:8 + n + start])
    os.truncate(p, 8 + len(blob) + start + 2 ** 32)


def _sparse_oversized() -> list[Case]:
    sd = "interchange"
    return [
        Case("state.bin 64 GiB, sparse", swap("state.bin", lambda r: sparse(r, 64 << 30)), RESUME,
             Refused("state.bin: 68719476736 bytes, the manifest says"), ci=True),
        Case("state.bin 64 GiB, sparse, the manifest resealed to say so",
             both(swap("state.bin", lambda r: sparse(r, 64 << 30)), resealed("ck", bytes=64 << 30)), RESUME,
             Refused("bin.bytes is 68719476736; this model's state takes at most")),
        Case("manifest.json 1 GiB, sparse", swap("manifest.json", lambda r: sparse(r, 1 << 30)), RESUME,
             Refused("manifest.json: 1.0 GiB, over the bound of 1.0 MiB")),
        Case("corpus 16 GiB, sparse", sparse("c", 16 << 30), data("{dir}/c"), Refused("c: 16.0 GiB, over the bound of"),
             ci=True),
        Case("corpus 1.9 GB, sparse (within the bound)", sparse("c", 1_900_000_000), data("{dir}/c"),
             Refused("needs about")),
        Case("safetensors 16 GiB, sparse, a valid header", both(put("m", lambda b: b.safetensors), at(
            "m", lambda p, d, b: os.truncate(p, 16 << 30))), ["import", "{dir}/m"],
            Refused("17179869184 bytes, but its header declares"), ci=True, program=sd),
        Case("safetensors header of 2^62 bytes", put("m", lambda b: struct.pack("<Q", 2 ** 62) + b"{}"),
             ["import", "{dir}/m"], Refused("a header of 4611686018427387904 bytes, over the bound"), program=sd),
        Case("safetensors declaring a 4 GiB tensor", at("m", _huge_last), ["import", "{dir}/m"],
             Refused("found (1048576, 1024)"), program=sd),
        Case("safetensors cut short", put("m", lambda b: b.safetensors[:-4]),
             ["import", "{dir}/m"], Refused("but its header declares"), program=sd),
        Case("state dict: a tensor expanded to 2^40", None, ["sd", "{E: torch.zeros(1).expand(2 ** 40)}"],
             Refused("expected shape (256, 32), found (1099511627776,)"), program=sd),
        Case("state dict: an array broadcast to 2^40", None,
             ["sd", "{E: np.broadcast_to(np.float32(0), (2 ** 20, 2 ** 20))}"],
             Refused("expected shape (256, 32), found (1048576, 1048576)"), program=sd),
    ]


def _state_dicts() -> list[Case]:
    n = "'model.norm.weight': "
    refused = {  # a change to the state dict (see DRIVER's state) -> the refusal
        "=list(sd.values())": "a state dict is a mapping of names to tensors, found a list", "=None": "a NoneType",
        "=t": "found a Tensor", "='model'": "found a str",
        "{N: torch.empty(t.shape, device='meta')}": n + "a meta tensor",
        "{N: t.to_sparse()}": n + "a sparse tensor (torch.sparse_coo)", "{E: e.to_sparse_csr()}": "(torch.sparse_csr)",
        "{N: t.to(torch.float8_e4m3fn)}": n + "expected float32 (or float16 / bfloat16, widened exactly), found float8",
        "{N: t.to(torch.float8_e5m2)}": "found float8_e5m2", "{N: t.to(torch.complex64)}": "found complex64",
        "{N: torch.quantize_per_tensor(t, 0.1, 0, torch.quint8)}": n + "a quantized tensor (torch.quint8)",
        "{N: t.to(torch.int64)}": "found int64", "{N: t.to(torch.bool)}": "found bool",
        "{N: torch.nested.nested_tensor([t[:2], t[:3]])}": n + "a nested tensor",
        "{N: t.numpy().astype(np.float64)}": "found float64", "{N: np.array([object()] * 32)}": "found object",
        "{N: [1.0] * 32}": n + "not an array or a tensor (a list)", "{N: None}": "(a NoneType)",
        "{7: t}": "a tensor's name must be a string, found int 7"}
    right = ("{E: e.t().contiguous().t()}", "{E: e.clone().requires_grad_()}", "{N: t.to(torch.bfloat16)}",
             "{N: t.numpy().astype(np.float16)}")
    ci = ("{N: torch.empty(t.shape, device='meta')}", "{N: t.to(torch.float8_e4m3fn)}")
    return [*(Case(f"state dict: {k}", None, ["sd", k], Refused(v), ci=k in ci, program="interchange")
              for k, v in refused.items()),
            *(Case(f"state dict: {k}", None, ["sd", k], Accepted(prints_params), program="interchange")
              for k in right)]


def _changed_data() -> list[Case]:
    fromdata = ["--resume", "{base}/refdata/ckpt_step3", *OUT]
    flipped = put("c", lambda b: bytes([b.corpus[0] ^ 1]) + b.corpus[1:])

    def warned(d: Path, base: Base, r: Result) -> str | None:
        ok = "warning: --resume" in r.err and "is not verified" in r.err
        return same_as("ref")(d, base, r) if ok else "no warning that the data is not verified"
    return [
        Case("corpus rewritten, same size", flipped, [*T, "--data", "{dir}/c", *fromdata],
             Refused("trained on other data: sha256"), ci=True),
        Case("corpus appended to", put("c", lambda b: b.corpus + b"more"), [*T, "--data", "{dir}/c", *fromdata],
             Refused("trained on other data")),
        Case("relative --data from another folder, other bytes", put("b/corpus.txt", lambda b: b.shipped),
             [*T, "--data", "corpus.txt", *fromdata], Refused("trained on other data"), cwd="{dir}/b"),
        Case("relative --data from another folder, the same bytes", put("a/corpus.txt", lambda b: b.corpus),
             [*T, "--data", "corpus.txt", *fromdata], Accepted(same_as("refdata")), cwd="{dir}/a", ci=True),
        Case("trained on a file, resumed on the shipped corpus", None, [*T, *fromdata],
             Refused("this run's data is sha256")),
        Case("trained on the shipped corpus, resumed on a copy of it", both(ckpt("ck"), put("c", lambda b: b.shipped)),
             [*RESUME, "--data", "{dir}/c"], Accepted(same_as("ref"))),
        Case("--lr 0.003 spelled out (the default)", ckpt("ck"), [*RESUME, "--lr", "0.003"],
             Accepted(same_as("ref"))),
        Case("every default spelled out", ckpt("ck"), [*RESUME, "--lr", "3e-3", "--wd", "0.01", "--batch", "4",
                                                      "--layers", "2", "--b1", "0.9", "--b2", "0.999", "--eps", "1e-8"],
             Accepted(same_as("ref"))),
        Case("--lr 0.004", ckpt("ck"), [*RESUME, "--lr", "0.004"], Refused("other flags: --lr 0.003 (now 0.004)")),
        Case("a version 1 manifest, the same flags", ckpt("ck", "v1"), RESUME, Accepted(warned)),
        Case("a version 1 manifest, --lr 0.003 spelled out", ckpt("ck", "v1"), [*RESUME, "--lr", "0.003"],
             Accepted(warned)),
        Case("a version 1 manifest, another --data", both(ckpt("ck", "v1"), put("c", lambda b: b.shipped)),
             [*RESUME, "--data", "{dir}/c"], Refused("written with other flags: --data None")),
    ]


def _odd_paths() -> list[Case]:
    x = b"\xff"
    return [
        Case("--out not UTF-8", None, [*T, "--out", b"{dir}/out" + x], Refused("out\\xff: the path is not valid UTF-8"),
             ci=True),
        Case("--out with a newline", None, [*T, "--out", "{dir}/out\nx"], Accepted(wrote("out\nx/final_state"))),
        Case("--data not UTF-8", put(b"c" + x, lambda b: b.shipped), [*T, "--data", b"{dir}/c" + x, *OUT],
             Accepted(same_as("ref"))),
        Case("--data not UTF-8, missing", None, data(b"{dir}/c" + x), Refused("c\\xff: no such file"), ci=True),
        Case("--data with a newline, missing", None, data("{dir}/c\nd"), Refused("c\\x0ad: no such file")),
        Case("--data not UTF-8, a directory", folder("c\udcff"), data(b"{dir}/c" + x),
             Refused("c\\xff: is a directory")),
        Case("--resume not UTF-8", ckpt(b"ck" + x), [*T, "--resume", b"{dir}/ck" + x, *OUT], Accepted(same_as("ref"))),
        Case("--resume not UTF-8, missing", None, [*T, "--resume", b"{dir}/ck" + x, *OUT],
             Refused("ck\\xff: no checkpoint there")),
        Case("--resume with a newline, missing", None, [*T, "--resume", "{dir}/ck\n", *OUT],
             Refused("ck\\x0a: no checkpoint there")),
        Case("export to a name not UTF-8", None, ["export", b"{dir}/m" + x], Accepted(prints_params),
             program="interchange"),
        Case("import a name not UTF-8, missing", None, ["import", b"{dir}/m" + x], Refused("m\\xff: no such file"),
             program="interchange"),
    ]


def _memory() -> list[Case]:
    smol = ["train", "--model", "smol", "--steps", "1", "--no-bar", *OUT]
    return [
        Case("smol --layers 64", None, [*smol, "--layers", "64"], Refused("--model smol --layers 64: needs about"),
             ci=True),
        Case("smol --batch 4096", None, [*smol, "--batch", "4096"], Refused("--batch 4096: needs about")),
        Case("smol --layers 64 --batch 4096", None, [*smol, "--layers", "64", "--batch", "4096"],
             Refused("needs about")),
        Case("tiny --batch 4096 (fits)", None, ["train", "--steps", "1", "--no-bar", "--batch", "4096", *OUT],
             Accepted(wrote("out/summary.json", "out/final_state/state.bin")), timeout=300),
    ]


# (family, cases): a component adds its families here, and they run and count with these
FAMILIES: list[tuple[str, list[Case]]] = [
    ("special files: train's data, resume", _train_reads()),
    ("links, special files: train's out", _train_writes()),
    ("special files: interchange", _interchange()),
    ("sparse and oversized files", _sparse_oversized()),
    ("state dict tensors", _state_dicts()),
    ("changed data under resume", _changed_data()),
    ("paths not UTF-8, odd bytes", _odd_paths()),
    ("memory", _memory()),
]


def test_fault_families(tmp_path: Path, base: Base) -> None:
    """Every family's cases (the CI slice, or every case with BENDTORCH_FAULTS=full) end as expected: refused with
    one line or recomputed right; none silently accepted, none a traceback, a hang or a memory error."""
    chosen = [(fam, [c for c in cases if FULL or c.ci]) for fam, cases in FAMILIES]
    counts = run_families([(f, cs) for f, cs in chosen if cs], tmp_path, base)
    assert sum(c["tried"] for c in counts.values()) >= (100 if FULL else 15)
