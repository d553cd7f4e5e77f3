"""Hypothesis profiles for the law suites: `ci` (fast, for .ci/run), `dev`, and `deep` (100 times ci's examples).
Choose with `pytest --profile deep` or the environment variable BENDTORCH_LAWS_PROFILE; default `ci`.
Failures are shrunk and kept in hypothesis's example database (.hypothesis/); regressions found once are pinned
in the tests with @example."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from bendtorch.laws.registry import PROFILES

for _name, _n in PROFILES.items():
    settings.register_profile(_name, max_examples=_n, deadline=None, derandomize=False, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--profile", default=None, choices=sorted(PROFILES),
                     help="hypothesis profile for the law suites (ci, dev, deep)")
    parser.addoption("--target", default="impl", choices=["impl", "torch", "jax"],
                     help="the library the conformance laws (test_targets.py) are held against; default impl")
    parser.addoption("--device", default="cpu", choices=["cpu", "cuda"], help="the target's device (torch only)")
    parser.addoption("--tf32", default="off", choices=["off", "on"], help="TF32 matmuls on cuda (torch only)")


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest) -> Any:
    """The conformance target adapter chosen by --target/--device/--tf32; a target that cannot run here (library
    missing, no GPU) makes every conformance law "not run" with the reason."""
    from bendtorch.laws.targets import NotRun, load
    opt = request.config.getoption
    try:
        return load(opt("--target"), opt("--device"), opt("--tf32") == "on")
    except NotRun as e:
        pytest.skip(f"not run: {e}")


def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("--profile") or os.environ.get("BENDTORCH_LAWS_PROFILE", "ci")
    settings.load_profile(name)


@pytest.fixture(autouse=True)
def _one_numba_thread() -> Any:
    """numba's kernels run on one thread in the laws unless a law asks for more (attn_par_* and determinism set 1
    and 2 threads themselves): the bits never depend on it, and on this shared 2-core machine a
    parallel launch of a tiny kernel on 2 threads costs about 17 ms (OpenMP threads waiting for a busy core) against
    3 microseconds on one, which would dominate the suite's time."""
    import numba
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)
