"""bendtorch: a verification-first research harness for BendTorch's float32 deep-learning library. The command line
is `bendtorch` (or `python -m bendtorch`); the library is `bendtorch.impl`, its float64 twin `bendtorch.oracle`."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("bendtorch")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
