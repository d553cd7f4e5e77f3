"""What a run of bendtorch's law suites needs beyond the pytest plugin (bendtorch.laws.plugin, which holds the options,
the profiles and the target fixture): the session's hypothesis profile loaded before a law module is imported (ci,
dev or deep: --bendtorch-profile or $BENDTORCH_LAWS_PROFILE, default ci), and numba on one thread. pytest loads this
file whenever it collects the laws' folder, from this project or, with --pyargs, from another. Failures are shrunk
and kept in hypothesis's example database (in the cache folder); regressions found once are pinned in the tests with
@example."""

from __future__ import annotations

from typing import Any

import pytest

from bendtorch.laws.plugin import load_profile


def pytest_configure(config: pytest.Config) -> None:
    load_profile(config)


@pytest.fixture(autouse=True)
def _one_numba_thread() -> Any:
    """numba's kernels run on one thread in the laws unless a law asks for more (attn_par_* and determinism set 1
    and 2 threads themselves): the bits never depend on it, and on a busy machine a parallel launch of a tiny kernel
    waits for OpenMP threads on busy cores, which would dominate the suite's time."""
    import numba
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)
