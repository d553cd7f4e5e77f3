"""bendtorch's pytest plugin (the pytest11 entry point `bendtorch`): the conformance laws against any target, inside
any project, with the harness's hypothesis profiles.

    pytest --bendtorch-target mypkg.target:make --pyargs bendtorch.laws.test_targets

Options: `--bendtorch-target SPEC` (a built-in name, a "module:attr" reference or an entry point of the group
bendtorch.targets; default $BENDTORCH_TARGET, else impl), `--bendtorch-device` (default cpu), `--bendtorch-variant`
(one of the target's variants on that device; default every one, each test once per variant) and
`--bendtorch-profile ci|dev|deep` (default $BENDTORCH_LAWS_PROFILE, else ci). Fixture: `bendtorch_target`, the
target made (a target that cannot run here skips its tests with "not run: <reason>"); the laws' `target` fixture is
this one.

The plugin loads in every pytest session of an environment where bendtorch is installed, so it stays idle until used:
importing it imports pytest and bendtorch.laws.registry (the standard library alone), and a session that names no option, requests no fixture of it and collects no law
of bendtorch runs as if it were not installed. A bad spec, device or variant given on the command line (or in
$BENDTORCH_TARGET) is a usage error before any test runs. The profiles are loaded when the laws' folder is collected
(bendtorch.laws' conftest calls `load_profile`) or when --bendtorch-profile is given; hypothesis's folder (its
example database) is then the cache folder's (records.paths: $BENDTORCH_CACHE or the user's cache), never
.hypothesis/ in the current directory."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from bendtorch.laws.registry import PROFILES

if TYPE_CHECKING:
    from bendtorch.targets import Resolved, Target

PROFILE_ENV = "BENDTORCH_LAWS_PROFILE"
DEVICE = "cpu"

# a target already made by the caller (bendtorch laws), used by the fixture instead of making it again
MADE: pytest.StashKey[Any] = pytest.StashKey()
_RESOLVED: pytest.StashKey[Any] = pytest.StashKey()


def _builtin() -> list[str]:
    from bendtorch.records.targets import RECORDS
    return list(RECORDS)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("bendtorch", "bendtorch: the conformance laws against a target")
    g.addoption("--bendtorch-target", default=None, metavar="SPEC",
                help="the target the conformance laws are held to: a built-in name (" + ", ".join(_builtin()) + "), "
                     "pkg.mod:attr, or an entry point of the group bendtorch.targets (default $BENDTORCH_TARGET, "
                     "else impl)")
    g.addoption("--bendtorch-device", default=None, metavar="DEVICE",
                help=f"the target's device (default {DEVICE})")
    g.addoption("--bendtorch-variant", default=None, metavar="NAME",
                help="one of the target's variants on the device (default: each in turn)")
    g.addoption("--bendtorch-profile", default=None, choices=sorted(PROFILES),
                help=f"the hypothesis profile of bendtorch's laws (default ${PROFILE_ENV}, else ci)")


def _asked(config: pytest.Config) -> str | None:
    """The spec the session names (option, else environment), None when it names none."""
    spec: str | None = config.getoption("--bendtorch-target", None)
    return spec or os.environ.get("BENDTORCH_TARGET") or None


def _device(config: pytest.Config) -> str:
    return str(config.getoption("--bendtorch-device", None) or DEVICE)


def _resolved(config: pytest.Config) -> Resolved:
    """The session's target spec resolved and checked against its device and variant (once a session);
    pytest.UsageError for a spec, device or variant that names nothing."""
    if _RESOLVED not in config.stash:
        from bendtorch.targets import SpecError, resolve
        try:
            res = resolve(_asked(config))
            res.record.check(_device(config), config.getoption("--bendtorch-variant", None))
        except SpecError as e:
            raise pytest.UsageError(f"bendtorch: {e}") from None
        config.stash[_RESOLVED] = res
    r: Resolved = config.stash[_RESOLVED]
    return r


def load_profile(config: pytest.Config) -> None:
    """Register the harness's hypothesis profiles (ci, dev, deep: bendtorch.laws.registry.PROFILES examples, no
    deadline) and load the session's. Hypothesis's folder (its example database and what else it keeps) is moved
    to the cache folder's hypothesis/. A session target whose record sets max_examples draws at most that many
examples a law, and its failures are reported as found, not shrunk."""
    from hypothesis import HealthCheck, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import DirectoryBasedExampleDatabase

    from bendtorch.records.paths import cache_dir

    home = cache_dir("hypothesis")
    set_hypothesis_home_dir(home)
    db = DirectoryBasedExampleDatabase(str(home / "examples"))
    for name, n in PROFILES.items():
        settings.register_profile(name, max_examples=n, deadline=None, derandomize=False, print_blob=True,
                                  database=db, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                      HealthCheck.filter_too_much])
    name = config.getoption("--bendtorch-profile", None) or os.environ.get(PROFILE_ENV) or "ci"
    if name not in PROFILES:
        raise pytest.UsageError(f"bendtorch: ${PROFILE_ENV}={name!r}: not a profile ({', '.join(PROFILES)})")
    settings.load_profile(name)
    cap = _resolved(config).record.max_examples if _asked(config) is not None else None
    if cap is not None and cap < settings().max_examples:
        # the target's record caps the examples (a compiling target): the profile's settings with fewer, and no
        # shrinking, whose every smaller shape tried would be one more compilation
        from hypothesis import Phase
        settings.register_profile(f"{name}-max{cap}", settings(
            max_examples=cap, phases=[p for p in Phase if p is not Phase.shrink]))
        settings.load_profile(f"{name}-max{cap}")


def pytest_configure(config: pytest.Config) -> None:
    if _asked(config) is not None:
        _resolved(config)  # a bad spec stops the session here, before collection
    if config.getoption("--bendtorch-profile", None):
        load_profile(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test using the target runs once per variant of it on the device (one column each), unless
    --bendtorch-variant names one."""
    if "bendtorch_target" not in metafunc.fixturenames or MADE in metafunc.config.stash:
        return
    res = _resolved(metafunc.config)
    vs = res.record.check(_device(metafunc.config), metafunc.config.getoption("--bendtorch-variant", None))
    if len(vs) > 1:
        metafunc.parametrize("bendtorch_variant", [v.name for v in vs], indirect=True, scope="session")


@pytest.fixture(scope="session")
def bendtorch_variant(request: pytest.FixtureRequest) -> str | None:
    """The variant of the target this test runs with (None: the one that applies)."""
    v: str | None = getattr(request, "param", None) or request.config.getoption("--bendtorch-variant", None)
    return v


@pytest.fixture(scope="session")
def bendtorch_target(request: pytest.FixtureRequest, bendtorch_variant: str | None) -> Target:
    """The target the session names, made on its device with the variant; a target that cannot run here skips the
    tests using it with "not run: <reason>"."""
    if MADE in request.config.stash:
        made: Target = request.config.stash[MADE]
        return made
    from bendtorch.targets import NotRun
    res = _resolved(request.config)
    device = _device(request.config)
    try:
        return res.make(device, res.record.check(device, bendtorch_variant)[0])
    except NotRun as e:
        pytest.skip(f"not run: {e}")
