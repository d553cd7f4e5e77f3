"""Cold start on two cores: a second process compiles a command's kernels while the command compiles them too.

On a fresh install numba compiles every kernel at its first call, one after another, in the command's own process
(`train --model tiny` compiles 13 kernels, 89 functions with the ones they call: about 20 s of a 22 s first run).
The code is fixed, so the same machine code can be compiled in another process and loaded from numba's cache. A
plan (warm_plans.json, beside this file) lists a command's first calls, as recorded from a cold run: the module,
the name the kernel has there (and "serial" or "parallel" for impl.kernels.serial's twins), the argument types.
`start(plan)` launches `python -m bendtorch.impl.kernels.warm run PLAN`, which compiles the plan in REVERSE order
(`dispatcher.compile(signature)`, into numba's cache) while the command compiles in call order: each finds in the
cache what the other has finished (numba reads a function's index afresh at each lookup), and they meet in the
middle. The worker is stopped when the command exits. The same functions compiled by the same numba give the same
machine code, so the bits are the same either way; only the wall time moves (docs/FINDINGS.md, bench/).

Once a worker has compiled a whole plan it leaves a marker in the cache folder named by the digest of the plan and
of impl.kernels' source, so a warm machine starts no worker. Two processes writing one function's cache index is
safe only with impl.kernels.cachelock, which impl.kernels installs. BENDTORCH_WARM=0 turns the worker off.

    python -m bendtorch.impl.kernels.warm run PLAN [-v]   compile a plan (what start() launches)
    python -m bendtorch.impl.kernels.warm record PLAN     re-record a plan from a cold run of its command

Recording: with BENDTORCH_WARM_RECORD=FILE set, a process writes every compilation numba does (the outermost ones,
that is the first calls, and all of them) to FILE as JSON when it exits; tests use it to show that after a warm-up
the command compiles nothing.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numba
from numba.core import event, types
from numba.core.registry import CPUDispatcher

from bendtorch.impl.kernels import cachelock, libm
from bendtorch.records.durable import write_text

HERE = Path(__file__).resolve().parent
PLANS_FILE = HERE / "warm_plans.json"
SWITCH = "BENDTORCH_WARM"  # "0": start no worker
RECORD = "BENDTORCH_WARM_RECORD"  # a file: write this process's compilations there at exit

Entry = tuple[str, str, str, list[str]]  # module, global name, "" | "serial" | "parallel", argument types


# ---------------------------------------------------------------------------------------------------------------
# argument types as text: "float32", "int64", "bool", "array(float32, 2, C)", "array(int64, 1, C, readonly)"
# ---------------------------------------------------------------------------------------------------------------

_ARRAY = re.compile(r"array\((\w+), (\d+), ([CFA])(, readonly)?\)")


def type_text(t: Any) -> str:
    """A numba argument type as plan text; a type the plan format cannot state is an error naming it."""
    if isinstance(t, types.Array):
        if not t.aligned or not isinstance(t.dtype, (types.Number, types.Boolean)):
            raise ValueError(f"warm plan: argument type {t!r} cannot be written in a plan")
        return f"array({t.dtype}, {t.ndim}, {t.layout}{'' if t.mutable else ', readonly'})"
    if isinstance(t, (types.Number, types.Boolean)):
        return str(t)
    raise ValueError(f"warm plan: argument type {t!r} cannot be written in a plan")


def parse_type(text: str) -> Any:
    """The numba type a plan's text names (type_text's inverse)."""
    m = _ARRAY.fullmatch(text)
    if m:
        layout: Any = m.group(3)
        return types.Array(parse_type(m.group(1)), int(m.group(2)), layout, readonly=bool(m.group(4)))
    t = getattr(types, text, None)
    if not isinstance(t, (types.Number, types.Boolean)):
        raise ValueError(f"warm plan: {text!r} is not an argument type")
    return t


# ---------------------------------------------------------------------------------------------------------------
# dispatchers by the name a module gives them
# ---------------------------------------------------------------------------------------------------------------

_VARIANTS = ("", "serial", "parallel")


def _named(module: Any) -> dict[tuple[str, str], Any]:
    """(global name, variant) -> dispatcher, for a module's kernels and impl.kernels.serial's twins of them."""
    out: dict[tuple[str, str], Any] = {}
    for name, v in vars(module).items():
        for variant in _VARIANTS:
            d = getattr(v, variant, None) if variant else v
            if isinstance(d, CPUDispatcher) and d.py_func.__module__ == module.__name__:
                out[(name, variant)] = d
    return out


def resolve(module: str, name: str, variant: str) -> Any:
    """The dispatcher a plan entry names; KeyError when the module has no such kernel (a stale plan)."""
    found = _named(importlib.import_module(module))
    if (name, variant) not in found:
        raise KeyError(f"warm plan: {module} has no kernel {name}{'.' + variant if variant else ''}")
    return found[(name, variant)]


def name_of(dispatcher: Any) -> tuple[str, str, str]:
    """(module, global name, variant) of a dispatcher; its qualified name when no module global holds it."""
    module = dispatcher.py_func.__module__
    for (name, variant), d in _named(sys.modules[module]).items():
        if d is dispatcher:
            return module, name, variant
    return module, dispatcher.py_func.__qualname__, "?"


# ---------------------------------------------------------------------------------------------------------------
# plans, markers, the worker
# ---------------------------------------------------------------------------------------------------------------


def load_plans() -> dict[str, Any]:
    return json.loads(PLANS_FILE.read_text())["plans"]  # type: ignore[no-any-return]


def entries(plan: str) -> list[Entry]:
    return [(m, n, v, list(a)) for m, n, v, a in load_plans()[plan]["compiles"]]


def digest(plan: str) -> str:
    """sha256 of the plan, numba's version, the libm choice and every source file of impl.kernels."""
    h = hashlib.sha256(json.dumps([plan, entries(plan), numba.__version__, libm.MODE]).encode())
    for f in sorted(HERE.rglob("*.py")):
        h.update(f"{f.relative_to(HERE)}\n".encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def marker(plan: str) -> Path:
    """The file a finished warm-up of `plan` leaves in the cache folder impl's kernels compile into."""
    return Path(libm.CACHE_DIR) / f"warm-{plan}-{digest(plan)[:16]}.done"


def compile_plan(plan: str, verbose: bool = False) -> list[str]:
    """Compile every entry of the plan, last first, into numba's cache; then leave the marker. An entry that no
    longer resolves or compiles is skipped (the command compiles what it needs itself) and returned as an error
    line; the marker is left either way, so a stale plan costs one warm-up, not one at every start."""
    errors = []
    for module, name, variant, args in reversed(entries(plan)):
        t0 = time.perf_counter()
        try:
            resolve(module, name, variant).compile(tuple(parse_type(a) for a in args))
        except Exception as e:  # noqa: BLE001 - a speed aid: any failure only leaves the work to the command
            errors.append(f"{module}.{name} {variant}: {type(e).__name__}: {e}".replace("\n", " "))
            continue
        if verbose:
            print(f"{time.perf_counter() - t0:7.2f} s  {module}.{name} {variant}".rstrip(), file=sys.stderr)
    path = marker(plan)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, f"{plan}: impl.kernels' warm plan compiled into this cache; {len(errors)} entries failed\n")
    return errors


def start(plan: str) -> subprocess.Popen[bytes] | None:
    """Start compiling `plan` in a second process, unless it is off, pointless, unknown or done; it stops at our
    exit."""
    if os.environ.get(SWITCH, "1").strip() == "0" or not cachelock.AVAILABLE or (os.cpu_count() or 1) < 2:
        return None
    if plan not in load_plans() or marker(plan).exists():
        return None
    env = {k: v for k, v in os.environ.items() if k != RECORD}  # the worker's compilations are not the command's
    worker = subprocess.Popen([sys.executable, "-m", "bendtorch.impl.kernels.warm", "run", plan], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()

    atexit.register(stop)
    return worker


# ---------------------------------------------------------------------------------------------------------------
# recording a process's compilations
# ---------------------------------------------------------------------------------------------------------------


class Recorder(event.Listener):
    """numba's compile events: the outermost ones (a command's first calls) and every one, in order."""

    def __init__(self) -> None:
        self.depth = 0
        self.first: list[Entry] = []
        self.every: list[tuple[str, str, list[str]]] = []

    def on_start(self, ev: Any) -> None:
        d, args = ev.data["dispatcher"], ev.data["args"]
        self.every.append((d.py_func.__module__, d.py_func.__qualname__, [repr(a) for a in args]))
        if self.depth == 0:
            self.first.append((*name_of(d), [type_text(a) for a in args]))
        self.depth += 1

    def on_end(self, ev: Any) -> None:
        self.depth -= 1


def record_to(path: str) -> None:
    rec = Recorder()
    event.register("numba:compile", rec)  # type: ignore[no-untyped-call]
    atexit.register(lambda: write_text(path, json.dumps({"first": rec.first, "every": rec.every}, indent=0)))


if os.environ.get(RECORD):
    record_to(os.environ[RECORD])


def record(plan: str) -> list[Entry]:
    """Run the plan's command once on an empty numba cache and return its first calls."""
    command = load_plans()[plan]["command"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "events.json")
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"), **{RECORD: out, SWITCH: "0"})
        os.mkdir(os.path.join(tmp, "out"))
        argv = [a.replace("{out}", os.path.join(tmp, "out")) for a in command]
        run = subprocess.run([sys.executable, "-m", "bendtorch", *argv], env=env, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"warm plan {plan}: bendtorch {' '.join(command)} failed: {run.stderr[-2000:]}")
        events = json.loads(Path(out).read_text())
    first = [(m, n, v, a) for m, n, v, a in events["first"]]
    for m, n, v, _ in first:
        if v == "?":
            raise ValueError(f"warm plan {plan}: {m}.{n} is not a module's kernel")
    return first


def plans_text(doc: dict[str, Any]) -> str:
    """The plans file's text: one line per command and per first call, so a re-recorded plan diffs line by line."""
    plans = []
    for name, p in doc["plans"].items():
        calls = ",\n".join(f"    {json.dumps(c)}" for c in p["compiles"])
        plans.append(f'  {json.dumps(name)}: {{\n   "command": {json.dumps(p["command"])},\n'
                     f'   "compiles": [\n{calls}\n   ]\n  }}')
    return f'{{\n "about": {json.dumps(doc["about"])},\n "plans": {{\n' + ",\n".join(plans) + "\n }\n}\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bendtorch.impl.kernels.warm",
                                description="compile a command's kernels ahead of it, or re-record a plan")
    p.add_argument("action", choices=("run", "record"))
    p.add_argument("plan", choices=sorted(load_plans()))
    p.add_argument("-v", "--verbose", action="store_true", help="one line per kernel compiled, on stderr")
    a = p.parse_args(argv)
    if a.action == "run":
        errors = compile_plan(a.plan, a.verbose)
        for line in errors:
            print(f"warm plan {a.plan}: {line}", file=sys.stderr)
        return 1 if errors else 0
    doc = json.loads(PLANS_FILE.read_text())
    doc["plans"][a.plan]["compiles"] = record(a.plan)
    write_text(PLANS_FILE, plans_text(doc))
    print(f"{PLANS_FILE.name}: {a.plan}: {len(doc['plans'][a.plan]['compiles'])} first calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
