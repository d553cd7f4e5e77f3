"""The machine record: what a result was measured on, written the same way into every result the harness makes.

impl's bits are the same on every machine (its own float32 functions, fixed summation orders); every other
library's move with the processor (PyTorch's and numpy's vectorised loops dispatch on the CPU's instruction sets,
MKL picks kernels by CPU vendor and model) and with the library's version and build. So a figure about another
library is a fact of one machine, and the record says which: the CPU (model, vendor, family and model numbers, the
instruction sets libraries dispatch on), each measured library's version, build and dispatch level, the BLAS and
OpenMP runtimes loaded (threadpoolctl: their version, core type and thread count), the thread counts, and impl's
source digest.

`machine(libraries)` makes the record; `cpu_name(m)` names its CPU in one phrase; `compare_note(committed, here,
library)` says whether a committed figure about a library can be compared with this machine's (None) or why not
("not compared: committed on <cpu>, this is <cpu>"). Records written before the CPU was recorded (only a platform
string) compare as an unrecorded CPU: never equal to this one."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

SCHEMA = 1  # the record's layout: bump when a field changes meaning

# the CPU flags (Linux's /proc/cpuinfo names) that float32 libraries dispatch on
DISPATCH_FLAGS = ("sse4_2", "avx", "f16c", "fma", "avx2", "avx512f", "avx512dq", "avx512cd", "avx512bw",
                  "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512ifma", "avx512vbmi",
                  "avx_vnni", "amx_bf16", "amx_tile", "amx_int8", "asimd", "sve", "sve2")


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        k, _, v = line.partition(":")
        out.setdefault(k.strip(), v.strip())
    return out


def cpu() -> dict[str, Any]:
    """The processor: model name, vendor, family / model / stepping numbers, the dispatch-relevant flags it has,
    the architecture, and the cores (all, and those this process may use)."""
    info = _cpuinfo()
    flags = set(info.get("flags", info.get("Features", "")).split())
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1

    def num(key: str) -> int | None:
        v = info.get(key, "")
        try:
            return int(v, 0)
        except ValueError:
            return None

    return {"model": info.get("model name") or platform.processor() or platform.machine(),
            "vendor": info.get("vendor_id") or info.get("CPU implementer") or "unknown",
            "family": num("cpu family"), "model_number": num("model"), "stepping": num("stepping"),
            "flags": [f for f in DISPATCH_FLAGS if f in flags], "arch": platform.machine(),
            "cores": os.cpu_count(), "usable_cores": usable}


# ---- each library's version, build and dispatch level -------------------------------------------------------

def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _numpy() -> dict[str, Any]:
    import numpy as np

    cfg: Any = np.show_config(mode="dicts") or {}
    blas = cfg.get("Build Dependencies", {}).get("blas", {})
    simd = cfg.get("SIMD Extensions", {})
    return {"version": np.__version__, "build": {"blas": f"{blas.get('name')} {blas.get('version')}"},
            "dispatch": {"baseline": list(simd.get("baseline", [])), "found": list(simd.get("found", []))}}


def _torch() -> dict[str, Any]:
    import torch

    shown = str(torch.__config__.show())
    lines = [ln.strip(" -") for ln in shown.splitlines()]
    mkl = next((ln for ln in lines if "Math Kernel Library" in ln), None)
    dnn = next((ln for ln in lines if "MKL-DNN" in ln or "oneDNN" in ln), None)
    return {"version": str(torch.__version__),
            "build": {"git": str(torch.version.git_version), "cuda": str(torch.version.cuda), "mkl": mkl,
                      "onednn": dnn},
            "dispatch": {"cpu_capability": str(torch.backends.cpu.get_cpu_capability())}}


def _torch_cuda() -> dict[str, Any]:
    """PyTorch's probe and the device torch_cuda runs on: the GPU's name, compute capability and CUDA runtime, or the
    CPU stand-in (its figures are the CPU's, named so)."""
    import torch

    out = _torch()
    dev = os.environ.get("BENDTORCH_SWEEP_GPU") or "cuda"
    if dev == "cuda" and torch.cuda.is_available():
        cap = torch.cuda.get_device_capability(0)
        cudnn = torch.backends.cudnn.version()  # type: ignore[no-untyped-call]
        out["dispatch"] = {**out["dispatch"], "device": "cuda", "gpu": torch.cuda.get_device_name(0),
                           "capability": f"{cap[0]}.{cap[1]}", "cuda_runtime": str(torch.version.cuda),
                           "cudnn": str(cudnn)}
    else:
        out["dispatch"] = {**out["dispatch"], "device": "cpu (stand-in)" if dev == "cpu" else "none: no GPU"}
    return out


def _torch_compile() -> dict[str, Any]:
    """PyTorch's probe, the C++ compiler Inductor builds with and the vector ISA it generates code for (its own
    check, which compiles a few lines with that compiler)."""
    from torch._inductor import cpu_vec_isa

    out = _torch()
    isa = cpu_vec_isa.pick_vec_isa()
    out["build"] = {**out["build"], "cxx": _first_line(["g++", "--version"])}
    out["dispatch"] = {**out["dispatch"], "inductor_isa": str(isa) or "none (scalar C++)",
                       "inductor_lanes": int(isa.nelements()) if isa else 1}
    return out


def _numba() -> dict[str, Any]:
    import llvmlite.binding as ll  # type: ignore[import-untyped]
    import numba

    return {"version": numba.__version__, "build": {"llvmlite": _dist_version("llvmlite")},
            "dispatch": {"host_cpu": ll.get_host_cpu_name(), "target": getattr(numba.config, "CPU_NAME", None) or "host"}}


def _jax() -> dict[str, Any]:
    import jax

    return {"version": jax.__version__, "build": {"jaxlib": _dist_version("jaxlib")},
            "dispatch": {"backend": jax.default_backend(), "device": str(jax.devices()[0])}}


def _onnxruntime() -> dict[str, Any]:
    import onnxruntime as ort

    return {"version": ort.__version__, "build": {"onnx": _dist_version("onnx"), "device": ort.get_device()},
            "dispatch": {"providers": list(ort.get_available_providers())}}


# the notes a library's C++ code writes to standard error while it is imported, before any setting of its can quiet
# them: absl's line about logging before its initialisation, and its INFO lines ("I", the date, the time, the
# thread, file:line; TensorFlow's oneDNN note and CPU feature guard, which TF_CPP_MIN_LOG_LEVEL does not reach at
# import). Warnings and errors ("W", "E", "F" lines) and any other text are kept
STARTUP_NOTES = re.compile(r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
                           r"|I\d{4} \d\d:\d\d:[\d.]+ +\d+ [\w.]+:\d+\] .*")


def import_quietly(name: str) -> Any:
    """importlib.import_module(name), with what the import writes to this process's standard error (file
    descriptor 2: C++ code writes there, not to sys.stderr) held back and written back after it, less the lines
    that are start-up notes (STARTUP_NOTES), whether the import succeeded or raised."""
    if name in sys.modules:
        return sys.modules[name]
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 to hold back: a plain import
        return importlib.import_module(name)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            return importlib.import_module(name)
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            lines = held.read().decode(errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not STARTUP_NOTES.fullmatch(line.rstrip("\n")))
            if kept:
                os.write(2, kept.encode())


def _tensorflow() -> dict[str, Any]:
    """TensorFlow: its distribution (tensorflow-cpu: no CUDA), whether it was built with oneDNN, Keras's version; the
    dispatch is TF_ENABLE_ONEDNN_OPTS as TensorFlow read it at import (unset: oneDNN's kernels on, on x86)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = import_quietly("tensorflow")
    from tensorflow.python.util import _pywrap_util_port as port

    bi = dict(tf.sysconfig.get_build_info())
    return {"version": tf.__version__, "build": {"cuda": bool(bi.get("is_cuda_build")),
                                                 "dist": _dist_version("tensorflow-cpu") and "tensorflow-cpu",
                                                 "onednn": bool(port.IsMklEnabled()),
                                                 "keras": _dist_version("keras")},
            "dispatch": {"onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default")}}


def _first_line(argv: list[str]) -> str:
    """The first line a program prints (a compiler's --version), or why there is none."""
    import subprocess

    try:
        said = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"{argv[0]}: {type(e).__name__}"
    return (said.splitlines() or [f"{argv[0]}: no output"])[0]


def _bundled(dist: str, folder: str) -> list[str]:
    """The shared libraries a wheel bundles in its .libs folder, by name and version ("libblas 3.10.0": auditwheel's
    hash taken out of the file name)."""
    import re

    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        return []
    out = []
    for f in files:
        m = re.match(r"^(lib[\w+]+?)-[0-9a-f]{8}\.so\.?([\d.]*)$", f.name)
        if f.parts[0] == folder and m:
            out.append(f"{m.group(1)} {m.group(2)}".strip())
    return sorted(out)


def _mlx() -> dict[str, Any]:
    """MLX: its CPU backend's version and bundled libraries (the BLAS), and the C++ compiler that builds the
    kernels of mx.compile'd functions (nn.silu, nn.gelu, ...) on the CPU when they are first called."""
    import mlx.core as mx

    return {"version": _dist_version("mlx") or "?",
            "build": {"cpu": _dist_version("mlx-cpu"), "bundled": _bundled("mlx-cpu", "mlx_cpu.libs"),
                      "cxx": _first_line(["g++", "--version"]),
                      "compile": "disabled" if os.environ.get("MLX_DISABLE_COMPILE") else "enabled"},
            "dispatch": {"device": str(mx.default_device())}}


def _clib() -> dict[str, Any]:
    lib, ver = platform.libc_ver()
    return {"version": f"{lib} {ver}".strip() or "unknown", "build": {}, "dispatch": {}}


PROBES: dict[str, Callable[[], dict[str, Any]]] = {
    "numpy": _numpy, "torch": _torch, "torch_cuda": _torch_cuda, "torch_compile": _torch_compile, "numba": _numba,
    "jax": _jax, "onnxruntime": _onnxruntime, "tensorflow": _tensorflow, "mlx": _mlx, "clib": _clib,
}


def probe(name: str) -> dict[str, Any]:
    """One library's version, build and dispatch level (importing it: it is being measured). A library without a
    probe gives its distribution's version; one that is not installed says so."""
    fn = PROBES.get(name)
    try:
        if fn is not None:
            return fn()
    except ImportError as e:
        return {"version": None, "error": f"not installed ({e.name or e})"}
    v = _dist_version(name)
    return {"version": v} if v is not None else {"version": None, "error": "not installed"}


def thread_pools() -> list[dict[str, Any]]:
    """The BLAS and OpenMP runtimes loaded in this process (threadpoolctl): API, library, version, core type
    (OpenBLAS's architecture), threading layer and thread count; no file paths."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keep = ("user_api", "internal_api", "prefix", "version", "architecture", "threading_layer", "num_threads")
    return [{k: p.get(k) for k in keep if p.get(k) is not None} for p in threadpool_info()]


def threads() -> dict[str, Any]:
    """The thread counts the measured libraries run with (those already imported)."""
    out: dict[str, Any] = {}
    if "numba" in sys.modules:
        out["numba"] = int(sys.modules["numba"].get_num_threads())
    if "torch" in sys.modules:
        out["torch"] = int(sys.modules["torch"].get_num_threads())
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        if var in os.environ:
            out[var] = os.environ[var]
    return out


def impl_digest() -> str:
    """sha256 of impl's source files (every .py under bendtorch.impl, by relative path, and its data: the portable
    functions' exception tables) and of the op records impl's activation dispatch is generated from
    (records/ops.py), read from the files without importing impl: a figure made from one digest is reproduced bit
    for bit by the same one; another digest may have other bits."""
    spec = importlib.util.find_spec("bendtorch.impl")
    if spec is None or not spec.submodule_search_locations:
        return "unknown"
    root = Path(list(spec.submodule_search_locations)[0])
    h = hashlib.sha256()

    def walk(d: Path, rel: str) -> None:
        for e in sorted(d.iterdir(), key=lambda e: e.name):
            if e.is_dir() and e.name != "__pycache__":
                walk(e, f"{rel}{e.name}/")
            elif e.name.endswith((".py", ".npz")):
                h.update(f"{rel}{e.name}\n".encode())
                h.update(e.read_bytes())

    walk(root, "")
    ops = Path(__file__).resolve().parent / "ops.py"
    h.update(b"records/ops.py\n")
    h.update(ops.read_bytes())
    return h.hexdigest()


def machine(libraries: Iterable[str] = (), **extra: Any) -> dict[str, Any]:
    """The machine record: the CPU, the OS, Python and the C library, each named library's version, build and
    dispatch level (numpy and numba always: the harness runs on them), the thread pools and counts, impl's source
    digest, and any extra fields given (the sweep's workers, a device)."""
    names = list(dict.fromkeys(["numpy", "numba", *libraries]))
    return {"schema": SCHEMA, "cpu": cpu(), "os": platform.platform(), "python": platform.python_version(),
            "c_library": _clib()["version"], "libraries": {n: probe(n) for n in names},
            "thread_pools": thread_pools(), "threads": threads(), "impl_digest": impl_digest(), **extra}


# ---- reading records: one CPU phrase, and whether two records are comparable -------------------------------------

def cpu_name(m: dict[str, Any] | None) -> str:
    """The record's CPU in one phrase ("AMD EPYC (family 26, model 2)"); records from before the CPU was recorded
    give "an unrecorded CPU" with what they did record."""
    if not m:
        return "an unrecorded machine"
    c = m.get("cpu")
    if isinstance(c, dict):
        nums = ", ".join(f"{k} {c[v]}" for k, v in (("family", "family"), ("model", "model_number"))
                         if c.get(v) is not None)
        return f"{c.get('model')}" + (f" ({nums})" if nums else "")
    if isinstance(c, str):  # an older record: the model name alone
        return c
    return f"an unrecorded CPU ({m.get('processor') or m.get('platform') or 'no details'})"


def _cpu_identity(m: dict[str, Any] | None) -> tuple[Any, ...] | None:
    c = (m or {}).get("cpu")
    if not isinstance(c, dict):
        return None
    return (c.get("model"), c.get("vendor"), c.get("family"), c.get("model_number"), c.get("arch"),
            tuple(c.get("flags", ())))


def library_facts(m: dict[str, Any] | None, library: str) -> dict[str, Any] | None:
    """What the record says of one library: version, build, dispatch (None when it does not say)."""
    lib = (m or {}).get("libraries", {}).get(library)
    return lib if isinstance(lib, dict) else None


def compare_note(committed: dict[str, Any] | None, here: dict[str, Any], library: str | None = None) -> str | None:
    """None when a figure about `library` measured on `committed` can be compared with one measured `here`: the same
    CPU (model, vendor, numbers, architecture, flags) and, for the library, the same version, build and dispatch
    level. Otherwise the reason, starting "not compared: ". A figure about impl needs no such check."""
    a, b = _cpu_identity(committed), _cpu_identity(here)
    if a is None or a != b:
        return f"not compared: committed on {cpu_name(committed)}, this is {cpu_name(here)}"
    if library is not None:
        fa, fb = library_facts(committed, library), library_facts(here, library)
        strip = ("version", "build", "dispatch")
        if fa is None or fb is None or {k: fa.get(k) for k in strip} != {k: fb.get(k) for k in strip}:
            def say(f: dict[str, Any] | None) -> str:
                return "unrecorded" if f is None else f"{f.get('version')} ({f.get('dispatch')})"
            return (f"not compared: committed with {library} {say(fa)} on {cpu_name(committed)}, this is "
                    f"{library} {say(fb)}")
    return None


def describe(m: dict[str, Any] | None, libraries: Iterable[str] = ()) -> str:
    """The record in one line for a report: CPU, cores, OS, and each named library's version and dispatch."""
    if not m:
        return "an unrecorded machine"
    parts = [cpu_name(m)]
    c = m.get("cpu")
    if isinstance(c, dict) and c.get("cores"):
        parts.append(f"{c['cores']} cores")
    for n in libraries:
        f = library_facts(m, n)
        if f is not None and f.get("version"):
            d = f.get("dispatch") or {}
            level = d.get("cpu_capability") or ("/".join(d.get("found", [])[-1:]) if d.get("found") else "")
            parts.append(f"{n} {f['version']}" + (f" ({level})" if level else ""))
    return ", ".join(parts)
