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


@dataclass(frozen=True)
class LawInfo:
    family: str
    name: str
    holds: str  # "bit for bit" or "within <bound>"


LAWS: dict[str, LawInfo] = {}
EXAMPLES: Counter[str] = Counter()


def law(family: str, name: str, holds: str = "bit for bit") -> Callable[[F], F]:
    def deco(fn: F) -> F:
        key = f"{fn.__module__}::{fn.__name__}"
        LAWS[key] = LawInfo(family, name, holds)

        # @law sits above @given: count the examples by wrapping hypothesis's inner test (the hook hypothesis
        # documents for runners that wrap each example)
        hyp = getattr(fn, "hypothesis", None)
        if hyp is not None:
            orig = hyp.inner_test

            @functools.wraps(orig)
            def counted(*args: Any, **kwargs: Any) -> Any:
                EXAMPLES[key] += 1
                return orig(*args, **kwargs)

            hyp.inner_test = counted
            return fn

        @functools.wraps(fn)
        def once(*args: Any, **kwargs: Any) -> Any:
            EXAMPLES[key] += 1
            return fn(*args, **kwargs)

        return once  # type: ignore[return-value]
    return deco


def scaled(div: int) -> Any:
    """Hypothesis settings with the loaded profile's examples divided by div (at least 2), for laws whose one example
    is costly (a training step on two numba threads): ci and deep keep their ratio of 100."""
    from hypothesis import settings
    return settings(max_examples=max(2, settings().max_examples // div))
