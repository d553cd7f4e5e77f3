"""Hypothesis profiles for the law suites: `ci` (fast, for .ci/run), `dev`, and `deep` (100 times ci's examples).
Choose with `pytest --profile deep` or the environment variable BENDTORCH_LAWS_PROFILE; default `ci`.
Failures are shrunk and kept in hypothesis's example database (.hypothesis/); regressions found once are pinned
in the tests with @example."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from laws.registry import PROFILES

for _name, _n in PROFILES.items():
    settings.register_profile(_name, max_examples=_n, deadline=None, derandomize=False, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--profile", default=None, choices=sorted(PROFILES),
                     help="hypothesis profile for the law suites (ci, dev, deep)")


def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("--profile") or os.environ.get("BENDTORCH_LAWS_PROFILE", "ci")
    settings.load_profile(name)
