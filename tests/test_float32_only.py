"""impl/ is float32 only: the seed has no F64 (main.bend's header), so no 64-bit float may appear in impl's code.

The scan reads impl's Python tokens: a name that spells a 64-bit float type (float64, double, float_, longdouble,
c_double, ...) or a string that names one as a dtype ('float64', 'f8', 'd', '<f8', ...) is an error. Comments and
prose strings (docstrings) may talk about float64; code may not use it."""

from __future__ import annotations

import io
import pathlib
import tokenize

IMPL = pathlib.Path(__file__).resolve().parent.parent / "impl"
BAD_NAMES = {"float64", "double", "float_", "longdouble", "float128", "c_double", "c_longdouble", "cdouble",
             "complex128", "complex64", "float96"}
BAD_DTYPE_STRINGS = {"float64", "f8", "<f8", ">f8", "=f8", "d", "double", "float_", "longdouble", "float128",
                     "complex128", "c16", "c8", "complex64"}


def bad_tokens(source: str) -> list[tuple[int, str]]:
    hits = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in BAD_NAMES:
            hits.append((tok.start[0], tok.string))
        elif tok.type == tokenize.STRING:
            body = tok.string.lstrip("rbuRBU").strip("'\"")
            if body in BAD_DTYPE_STRINGS:
                hits.append((tok.start[0], tok.string))
    return hits


def test_no_float64_in_impl_code() -> None:
    hits = []
    for path in sorted(IMPL.rglob("*.py")):
        for line, what in bad_tokens(path.read_text()):
            hits.append(f"{path.relative_to(IMPL.parent)}:{line}: {what}")
    assert not hits, "64-bit floats in impl/:\n" + "\n".join(hits)


def test_scan_catches_float64() -> None:
    # the scan must fire on the spellings it is meant to catch, and not on prose
    for bad in ["x.astype(np.float64)\n", "np.zeros(3, dtype='float64')\n", "np.double(1)\n", "y = x.astype('d')\n",
                "from numpy import float64\n", "a = np.longdouble(2)\n"]:
        assert bad_tokens(bad), bad
    assert not bad_tokens('"""float64 belongs to oracle/ alone."""\n# float64 here is a comment\n')
