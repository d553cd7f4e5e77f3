"""Shared fixtures for the kernel tests: `threads` runs a test once on 1 numba thread and once on 2. The session
loads the harness's hypothesis profiles (its example database in the cache folder, never .hypothesis/ here)."""

from __future__ import annotations

from typing import Iterator

import numba
import pytest

from bendtorch.laws.plugin import load_profile

THREADS = sorted({1, min(2, int(getattr(numba.config, "NUMBA_NUM_THREADS")))})


def pytest_configure(config: pytest.Config) -> None:
    load_profile(config)


@pytest.fixture(params=THREADS)
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    old = numba.get_num_threads()
    numba.set_num_threads(request.param)
    yield request.param
    numba.set_num_threads(old)
