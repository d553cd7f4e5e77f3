"""The law registry: every law is a hypothesis test decorated with `@law(family, name, holds)` (under @given), which
records its family, its name, whether it holds bit for bit or within a bound, and counts the examples it ran, so
`bendtorch laws` can print the table (family, law, examples tried, result, time)."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

PROFILES = {"ci": 20, "dev": 200, "deep": 2000}

F = TypeVar("F", bound=Callable[..., Any])


# How strongly a law is known: proved by z3 for every value within its stated bounds (laws/proofs.py), checked on
# every input (exhaustive), or sampled (hypothesis's examples, counted per run).
STRENGTHS = ("proved", "exhaustive", "sampled")


@dataclass(frozen=True)
class LawInfo:
    family: str
    name: str
    holds: str  # "bit for bit" or "within <bound>"
    strength: str = "sampled"  # one of STRENGTHS


def strength_text(info: LawInfo, examples: int) -> str:
    """The strength as the law table prints it."""
    if info.strength == "proved":
        return "proved (z3)"
    if info.strength == "exhaustive":
        return "exhaustive (every input)"
    return f"sampled (hypothesis, {examples} examples)"


LAWS: dict[str, LawInfo] = {}
EXAMPLES: Counter[str] = Counter()
# the last failing example of each law, as its LawFailure recorded it: hypothesis replays the shrunk (smallest)
# example last, so this is the counterexample `bendtorch laws --json` reports
COUNTEREXAMPLES: dict[str, dict[str, Any]] = {}


class LawFailure(AssertionError):
    """A law does not hold on this example; `record` says how to reproduce it (shapes, inputs, both results'
    bits) in a form JSON can hold."""

    def __init__(self, message: str, record: dict[str, Any]) -> None:
        super().__init__(message)
        self.record = record


def law(family: str, name: str, holds: str = "bit for bit", strength: str = "sampled") -> Callable[[F], F]:
    if strength not in STRENGTHS:
        raise ValueError(f"law {family}/{name}: strength must be one of {STRENGTHS}, got {strength!r}")

    def deco(fn: F) -> F:
        key = f"{fn.__module__}::{fn.__name__}"
        LAWS[key] = LawInfo(family, name, holds, strength)

        # @law sits above @given: count the examples by wrapping hypothesis's inner test (the hook hypothesis
        # documents for runners that wrap each example)
        hyp = getattr(fn, "hypothesis", None)
        if hyp is not None:
            orig = hyp.inner_test

            @functools.wraps(orig)
            def counted(*args: Any, **kwargs: Any) -> Any:
                EXAMPLES[key] += 1
                try:
                    return orig(*args, **kwargs)
                except LawFailure as e:
                    COUNTEREXAMPLES[key] = e.record
                    raise

            hyp.inner_test = counted
            return fn

        @functools.wraps(fn)
        def once(*args: Any, **kwargs: Any) -> Any:
            EXAMPLES[key] += 1
            return fn(*args, **kwargs)

        return once  # type: ignore[return-value]
    return deco


def scaled(div: int) -> Callable[[F], F]:
    """Hypothesis settings with the loaded profile's examples divided by div (at least 2), for laws whose one example
    is costly (a training step on two numba threads): ci and deep keep their ratio of 100."""
    from hypothesis import settings
    return settings(max_examples=max(2, settings().max_examples // div))


def need_threads(k: int) -> None:
    """Skip the calling law as "not run" when numba cannot run k threads here (NUMBA_NUM_THREADS below k): a law
    that compares k threads with one must not pass by comparing one with one."""
    import numba
    import pytest

    have = int(getattr(numba.config, "NUMBA_NUM_THREADS"))
    if have < k:
        pytest.skip(f"not run: the law compares {k} numba threads with one, and numba has {have} here "
                    "(NUMBA_NUM_THREADS)")
