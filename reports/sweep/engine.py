"""Running a sweep's tasks: a task is one group of libraries on one chunk of positive patterns (the reference once for
the group); tasks run on a local process pool (one single-threaded process per core by default, never more than
there are tasks) or a Dask cluster, or in this process. A range sweep stores each task's accumulators as sealed chunk
files (bendtorch.reports.sweep.chunks), so a restarted sweep computes only the chunks that are missing or fail their
checks, and its figures come from the chunk files alone; a sample sweep keeps them in memory.

An impl library runs in processes whose BENDTORCH_LIBM is its record's libm (impl.kernels.libm reads it once, at
import), so the libraries are grouped by the libm they need. Workers resolve each library's "module:attr" strings
themselves (bendtorch.reports.sweep.libraries.resolve).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from bendtorch.records.functions import SweepFunction
from bendtorch.records.libraries import SweepLibrary
from bendtorch.reports.sweep import chunks as C
from bendtorch.reports.sweep.chunkpass import Task, libm_mode, merge, one_thread, run_task
from bendtorch.reports.sweep.errors import SweepError, shown
from bendtorch.reports.sweep.libraries import is_local

DASK_CONNECT_S = 5          # seconds to reach a Dask scheduler before the sweep gives up
SAMPLE_PART = 1 << 22       # a sample's patterns per task, at most (the first four parts of a sample of <= 2^25)


class LibraryFailed(Exception):
    """A library that raised or returned something other than a float32 array during the work: one line."""


def worker_init() -> None:
    """One thread per worker process: numba's now, torch's once a library has imported it (one_thread)."""
    import numba

    numba.set_num_threads(1)
    one_thread()


def _task_with_key(it: tuple[int, Task]) -> tuple[int, dict[str, dict[str, Any]]]:
    i, t = it
    try:
        return i, run_task(t)
    except Exception as e:  # noqa: BLE001  (a library's failure, named, crosses the process boundary as one line)
        raise LibraryFailed(f"{t[0].name} on {', '.join(lib.name for lib in t[1])}: {type(e).__name__}: {e}") from None


def _pool_map(tasks: list[Task], workers: int, mode: str | None,
              chunksize: int = 1) -> tuple[Any, Iterator[tuple[int, dict[str, Any]]]]:
    """A pool of `workers` spawned processes whose BENDTORCH_LIBM is `mode`, already given the tasks (`chunksize`
    consecutive tasks to a process at a time), and their results in completion order. The caller closes the pool."""
    import multiprocessing as mp

    old = os.environ.get("BENDTORCH_LIBM")
    if mode is not None:
        os.environ["BENDTORCH_LIBM"] = mode
    try:
        ctx = mp.get_context("spawn")
        pool = ctx.Pool(workers, initializer=worker_init)
    finally:
        if old is None:
            os.environ.pop("BENDTORCH_LIBM", None)
        else:
            os.environ["BENDTORCH_LIBM"] = old
    return pool, pool.imap_unordered(_task_with_key, list(enumerate(tasks)), chunksize=chunksize)


@contextlib.contextmanager
def dask_client(address: str | None) -> Iterator[Any]:
    """A Dask client for `address` (a scheduler's address, or "local" for a LocalCluster of one single-threaded
    worker process per core), connected before any work; None for no address. SweepError when Dask is not
    installed or no scheduler answers within DASK_CONNECT_S seconds."""
    if address is None:
        yield None
        return
    try:
        import dask.distributed
    except ImportError:
        raise SweepError("--dask: dask[distributed] is not installed (pip install 'bendtorch[dask]')") from None
    dd: Any = dask.distributed
    cluster: Any = None
    try:
        if address == "local":
            cluster = dd.LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                      dashboard_address=None)
            client = dd.Client(cluster)
        else:
            client = dd.Client(address, timeout=f"{DASK_CONNECT_S}s")
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        if cluster is not None:
            cluster.close()
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SweepError(f"--dask {shown(address)}: no Dask scheduler answers there ({why})") from None
    try:
        client.run(worker_init)
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dask_map(tasks: list[Task], client: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    import dask.distributed

    dd: Any = dask.distributed
    futs = client.map(_task_with_key, list(enumerate(tasks)), pure=False)
    for fut in dd.as_completed(futs):
        yield fut.result()


def lib_groups(libs: list[SweepLibrary]) -> list[tuple[SweepLibrary, ...]]:
    """The libraries grouped by the BENDTORCH_LIBM they need (one task runs one group on one chunk, computing the
    reference once for the group); the libraries that need none join the first group."""
    groups: dict[str | None, list[SweepLibrary]] = {}
    for lib in libs:
        groups.setdefault(lib.libm, []).append(lib)
    free = groups.pop(None, [])
    out = [list(g) for g in groups.values()] or [[]]
    out[0] += free
    return [tuple(g) for g in out]


def task_mode(t: Task) -> str | None:
    """The BENDTORCH_LIBM a task's libraries need (None: any)."""
    modes = {lib.libm for lib in t[1] if lib.libm is not None}
    assert len(modes) <= 1, t[1]
    return modes.pop() if modes else None


def task_size(t: Task) -> int:
    """Inputs times libraries: what the progress bar counts."""
    p = t[2]
    return 2 * len(t[1]) * (p[1] - p[0] if isinstance(p, tuple) else int(p.size))


def execute(tasks: list[Task], workers: int, client: Any,
            on_result: Callable[[int, dict[str, dict[str, Any]]], None], progress: bool, desc: str,
            chunksize: int = 1, overlap: bool = False, while_pools_run: Callable[[], Any] | None = None) -> None:
    """Run the tasks (a local pool per BENDTORCH_LIBM their libraries need, of at most as many processes as it has
    chunks of `chunksize` consecutive tasks, which go to one process together), calling on_result(i, {lib: acc})
    for each as it completes. The pools run one after another, or with `overlap` all at once, this process's own
    group (where it runs one) meanwhile; `while_pools_run()` is called once the pools have their tasks and before
    this process runs any."""
    from tqdm import tqdm

    bar = tqdm(total=sum(task_size(t) for t in tasks), unit="in", unit_scale=True, smoothing=0.05, desc=desc,
               disable=not progress, file=sys.stderr)
    groups: dict[str | None, list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault(task_mode(t), []).append(i)
    pools: list[Any] = []

    def pooled(sub: list[Task], procs: int, mode: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
        pool, it = _pool_map(sub, procs, mode, chunksize)
        pools.append(pool)
        return it

    try:
        runs: list[tuple[list[int], Callable[[], Iterable[tuple[int, dict[str, Any]]]], bool]] = []
        for mode, idx in groups.items():
            sub = [tasks[i] for i in idx]
            local = any(is_local(lib) for t in sub for lib in t[1])
            if local and mode is not None and mode != libm_mode():
                raise SweepError(f"a library given as a Python object runs in this process, which runs "
                                 f"BENDTORCH_LIBM={libm_mode()}, not {mode}")
            procs = min(workers, -(-len(sub) // chunksize))   # never more processes than chunks of tasks
            if client is not None and not local:
                runs.append((idx, partial(_dask_map, sub, client), False))
            elif local or (procs <= 1 and (mode is None or mode == libm_mode())):
                runs.append((idx, partial(_InProcess, sub), True))
            else:
                runs.append((idx, partial(pooled, sub, max(1, procs), mode), False))

        def drain(idx: list[int], it: Iterable[tuple[int, dict[str, Any]]]) -> None:
            for j, accs in it:
                on_result(idx[j], accs)
                bar.update(task_size(tasks[idx[j]]))

        if overlap:
            # every pool given its tasks now; this process's own group first, then the pools' results as they come
            started = [(idx, make()) for idx, make, here in runs if not here]
            if while_pools_run is not None:
                while_pools_run()
            for idx, make, here in runs:
                if here:
                    drain(idx, make())
            for idx, it in started:
                drain(idx, it)
        else:
            if while_pools_run is not None:
                while_pools_run()
            for idx, make, _ in runs:   # each pool started when its turn comes
                drain(idx, make())
    finally:
        for pool in pools:
            pool.terminate()
        bar.close()


class _InProcess:
    """The tasks run in this process, one at a time, as they are iterated."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        worker_init()
        return (_task_with_key((j, t)) for j, t in enumerate(self.tasks))


@dataclass
class ChunkStats:
    """What a range sweep did with its chunk files: reused, computed (missing), recomputed (failed a check)."""
    reused: int = 0
    computed: int = 0
    recomputed: int = 0
    failed: list[str] = field(default_factory=list)     # "LIB/chunk_LO.npz: why", each recomputed one
    notes: list[str] = field(default_factory=list)      # a folder's chunks discarded, a manifest rewritten

    def record(self) -> dict[str, Any]:
        return {"reused": self.reused, "computed": self.computed, "recomputed_after_a_failed_check": self.recomputed,
                "failed_checks": self.failed[:20], "notes": self.notes}

    def line(self, func: str) -> str | None:
        """The one line the run prints on stderr when chunks were not trusted, else None."""
        if not self.failed and not self.notes:
            return None
        parts = list(self.notes)
        if self.failed:
            shown_ = "; ".join(self.failed[:3]) + (f"; and {len(self.failed) - 3} more" if len(self.failed) > 3 else "")
            parts.append(f"{len(self.failed)} chunk file{'s' if len(self.failed) > 1 else ''} failed "
                         f"{'their' if len(self.failed) > 1 else 'its'} checks and "
                         f"{'were' if len(self.failed) > 1 else 'was'} recomputed ({shown_})")
        return f"sweep {func}: " + "; ".join(parts)


def sweep_range(out: Path, fn: SweepFunction, libs: list[SweepLibrary], keys: dict[str, str], lo: int, hi: int,
                chunk: int, workers: int, client: Any = None,
                progress: bool = True) -> tuple[dict[str, dict[str, Any]], ChunkStats]:
    """Each library on the positive patterns [lo, hi) and their negatives, in chunks, reusing the chunk files on
    disk (OUT/FUNCTION/chunks/LIB/) that pass every check under the library's key (keys[LIB], a digest); returns
    each library's merged accumulators and what was done with the chunk files."""
    stats = ChunkStats()
    dirs: dict[str, Path] = {}
    for lib in libs:
        d = out / fn.name / "chunks" / lib.name
        note = C.open_dir(d, fn.name, lib.name, keys[lib.name], lo, hi, chunk)
        if note:
            stats.notes.append(note)
        dirs[lib.name] = d

    def expect(lib: str, s: int) -> C.Expect:
        return C.Expect(fn.name, lib, keys[lib], s, min(s + chunk, hi), len(fn.pieces), fn.half_x_ties)

    tasks: list[Task] = []
    for group in lib_groups(libs):
        for s in range(lo, hi, chunk):
            todo = []
            for lib in group:
                got, why = C.read_chunk(C.chunk_path(dirs[lib.name], s), expect(lib.name, s))
                if got is not None:
                    stats.reused += 1
                    continue
                todo.append(lib)
                if why == "missing":
                    stats.computed += 1
                else:
                    stats.recomputed += 1
                    stats.failed.append(f"{lib.name}/{C.chunk_path(dirs[lib.name], s).name}: {why}")
            if todo:
                tasks.append((fn, tuple(todo), (s, min(s + chunk, hi))))
    line = stats.line(fn.name)
    if line:
        print(line, file=sys.stderr)

    def save(i: int, accs: dict[str, dict[str, Any]]) -> None:
        s = tasks[i][2][0]
        for lib, acc in accs.items():
            C.write_chunk(C.chunk_path(dirs[lib], s), acc, expect(lib, s))

    execute(tasks, workers, client, save, progress, f"sweep {fn.name}")
    res = {}
    for lib in libs:
        total: dict[str, Any] | None = None
        for s in range(lo, hi, chunk):
            path = C.chunk_path(dirs[lib.name], s)
            acc, why = C.read_chunk(path, expect(lib.name, s))
            if acc is None:
                raise SweepError(f"{shown(path)}: changed while the sweep ran ({why}); run it again")
            total = merge(total, acc)
        assert total is not None
        res[lib.name] = total
    return res, stats


def sample_parts(n_patterns: int, pieces: int = 4) -> int:
    """How many tasks a sample of n positive patterns is split into: `pieces` (at least 32 patterns each), more when
    a part would exceed SAMPLE_PART patterns."""
    parts = max(1, min(pieces, n_patterns // 32))
    return max(parts, -(-n_patterns // SAMPLE_PART))


def sweep_patterns(fn: SweepFunction, libs: list[SweepLibrary], pats: Any, workers: int, client: Any = None,
                   progress: bool = True, pieces: int = 4,
                   while_pools_run: Callable[[], Any] | None = None) -> dict[str, dict[str, Any]]:
    """Each library on the given positive patterns and their negatives (no files): the sample mode."""
    parts = np.array_split(pats, sample_parts(pats.size, pieces))
    # a task per library and part (a sample's reference is cheap to compute again), a library's parts given to one
    # process together: so a library that is slow to import (TensorFlow: seconds) is imported by one worker only.
    # Each library's parts merge in the same order as before, so its figures are those of a group's task.
    tasks: list[Task] = [(fn, (lib,), p) for lib in libs for p in parts]
    got: dict[int, dict[str, dict[str, Any]]] = {}
    execute(tasks, workers, client, lambda i, accs: got.__setitem__(i, accs), progress, f"sweep {fn.name} (sample)",
            chunksize=len(parts), overlap=True, while_pools_run=while_pools_run)
    res = {}
    for lib in libs:
        total: dict[str, Any] | None = None
        for i, t in enumerate(tasks):
            if lib in t[1]:
                total = merge(total, got[i][lib.name])
        assert total is not None
        res[lib.name] = total
    return res
