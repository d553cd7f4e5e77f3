"""One process at a time writes a numba cache index: numba's own save is not safe between processes.

numba keeps one index file per function (signature -> data file) and names a new data file by the first number the
index it has just read does not use (numba/core/caching.py, IndexDataCacheFile.save). Two processes that compile two
signatures of one function at the same time both read the same index, both pick the same number, and the index one
of them writes then names the other's machine code: a later run would load code compiled for other argument types.
The harness runs processes that compile side by side (the cold-start warm-up of impl.kernels.warm beside the command,
the sample sweeps' pools), so `install()` wraps that save in an exclusive lock on a file beside the index
(fcntl.flock, released when the file closes, even if the process dies): read index, pick a number, write index,
write data happen as one step. Loading is unchanged: numba writes each file atomically (temporary file, then
os.replace), so a reader sees a whole index or the previous one.

Where fcntl does not exist (Windows) nothing is wrapped, and impl.kernels.warm starts no second process.
"""

from __future__ import annotations

import functools
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from numba.core import caching

LOCK_SUFFIX = ".lock"  # the lock file is the index's path with this suffix
AVAILABLE = fcntl is not None


def install() -> None:
    """Wrap IndexDataCacheFile.save in the index's lock (once; a second call does nothing)."""
    save: Any = caching.IndexDataCacheFile.save
    if not AVAILABLE or getattr(save, "_bendtorch_locked", False):
        return

    @functools.wraps(save)
    def locked_save(self: Any, key: Any, data: Any) -> None:
        with open(self._index_path + LOCK_SUFFIX, "ab") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            save(self, key, data)  # the lock goes with the file's close

    locked_save._bendtorch_locked = True  # type: ignore[attr-defined]
    caching.IndexDataCacheFile.save = locked_save  # type: ignore[method-assign]
