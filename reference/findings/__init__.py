"""Studies that state the seed's numerical findings as distributions over seeds (Adam's c2 is
bendtorch.reference.adam_c2, beside the training loop it shares): the seed's summation and angle orders at large
sizes (orders), the two truths a float32 constant allows (two_truths), and batch and thread invariance (invariance). Each module has a function returning a JSON-able dict, a function that plots it,
and a `python -m bendtorch.reference.findings.<module>` entry that writes both under reports/results/findings/."""

from __future__ import annotations

import json
import os
import pathlib
import platform
import sys
import tempfile
from typing import Any


def versions() -> dict[str, str]:
    """The versions a figure was measured with (Python, numpy, numba, torch when importable)."""
    import numba
    import numpy as np
    out = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
           "platform": platform.platform()}
    try:
        import torch
        out["torch"] = torch.__version__
        out["torch_threads"] = str(torch.get_num_threads())
    except ImportError:  # the studies that need torch import it themselves and say so
        pass
    return out


def write_json(obj: Any, path: pathlib.Path) -> None:
    """Write obj as indented JSON atomically (a temporary file in the same folder, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=False)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a committed result from other users
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def command_line() -> str:
    """The command that is running, as a user would type it (for the JSON's `command` field)."""
    mod = sys.modules["__main__"].__spec__
    head = f"python -m {mod.name}" if mod is not None else f"python {sys.argv[0]}"
    return " ".join([head, *sys.argv[1:]])


RESULTS = pathlib.Path(__file__).resolve().parent.parent.parent / "reports" / "results" / "findings"
