"""impl/ is float32 only: the seed has no F64 (main.bend's header), so no 64-bit float may appear anywhere in impl/,
not in its code and not in its comments or docstrings (float64 belongs to oracle/ alone).

Two scans: the whole text of every impl/ file for a word that names a wider float type (float64, double, f64,
longdouble, float128, c_double, complex128, ...; any case), and impl's string tokens for a dtype code that names one
('d', 'f8', '<f8', 'c16', ...), which a text search cannot tell from other strings."""

from __future__ import annotations

import io
import pathlib
import re
import tokenize

IMPL = pathlib.Path(__file__).resolve().parent.parent / "impl"
BAD_WORDS = re.compile(r"(?i)\b(float64|f64|double|float_|longdouble|float96|float128|c_double|c_longdouble|cdouble|"
                       r"complex64|complex128)\b")
BAD_DTYPE_STRINGS = {"f8", "<f8", ">f8", "=f8", "d", "c16", "c8"}


def bad_spots(source: str) -> list[tuple[int, str]]:
    hits = [(source.count("\n", 0, m.start()) + 1, m.group(0)) for m in BAD_WORDS.finditer(source)]
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").strip("'\"") in BAD_DTYPE_STRINGS:
            hits.append((tok.start[0], tok.string))
    return hits


def test_no_float64_anywhere_in_impl() -> None:
    hits = []
    for path in sorted(IMPL.rglob("*.py")):
        for line, what in bad_spots(path.read_text()):
            hits.append(f"{path.relative_to(IMPL.parent)}:{line}: {what}")
    assert not hits, "64-bit floats named in impl/:\n" + "\n".join(hits)


def test_scan_catches_float64() -> None:
    # the scan must fire on every spelling it is meant to catch, code and prose alike, and not on float32 names
    for bad in ["x.astype(np.float64)\n", "np.zeros(3, dtype='float64')\n", "np.double(1)\n", "y = x.astype('d')\n",
                "from numpy import float64\n", "a = np.longdouble(2)\n", '"""the float64 twin"""\n',
                "# a double-precision product\n", "# the seed has no F64\n"]:
        assert bad_spots(bad), bad
    assert not bad_spots('"""float32 only: np.float32, c_float, the float32 ulp."""\nx = np.float32(1.0)\n')
