"""The built-in models' RoPE tables shipped with impl.kernels.rope (rope_tables.npz): current, the computed bits, read
only while current and well formed, and what the models' layers use."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels import rope as R
from bendtorch.impl.kernels.rope_tables import write_shipped
from bendtorch.impl.layers.rope import RoPE
from bendtorch.impl.llama import CONFIGS

F32 = np.float32

pytestmark = pytest.mark.skipif(libm.MODE != "portable", reason="not run: the shipped tables are impl's portable "
                                                                "functions'; BENDTORCH_LIBM=clib computes its own")


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


def _models() -> list[tuple[int, int, np.float32]]:
    return [(c.t, c.hd // 2, F32(c.theta)) for c in CONFIGS.values()]


def test_the_shipped_file_is_current_and_holds_the_computed_bits() -> None:
    with np.load(R.SHIPPED, allow_pickle=False) as z:
        assert str(z["digest"]) == R.source_digest(), \
            "rope_tables.npz is stale: run python -m bendtorch.impl.kernels.rope_tables"
        tables = {n: z[n] for n in z.files if n != "digest"}
    assert tables, "no table shipped"
    for name, cs in tables.items():
        if name.startswith("cos_"):
            half, base_bits = name[4:].split("_")
            base = F32(np.array(int(base_bits, 16), dtype=np.uint32).view(F32)[()])
            ccs, csn = R.computed_table(cs.shape[0], int(half), base)
            assert np.array_equal(_bits(cs), _bits(ccs)), name
            assert np.array_equal(_bits(tables["sin_" + name[4:]]), _bits(csn)), name


def test_every_built_in_model_reads_its_table_and_computes_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError(f"computed a RoPE table {args}")

    monkeypatch.setattr(R, "computed_table", refuse)
    for t, half, base in _models():
        RoPE(2 * t, 2 * half, t, 1, half, base)  # builds its table
        assert R.shipped_table(t, half, base) is not None
    with pytest.raises(AssertionError, match="computed a RoPE table"):  # the check itself can fail
        RoPE(8, 6, 4, 1, 3, 10000.0)


@pytest.mark.parametrize("t", [1, 5, 16])
def test_a_prefix_of_a_table_is_the_table_of_fewer_positions(t: int) -> None:
    _, half, base = _models()[0]
    got = R.shipped_table(t, half, base)
    assert got is not None
    for a, b in zip(got, R.computed_table(t, half, base)):
        assert a.shape == (t, half) and a.flags.c_contiguous and np.array_equal(_bits(a), _bits(b))


def test_more_positions_than_shipped_or_another_base_are_computed() -> None:
    t, half, base = _models()[0]
    assert R.shipped_table(t + 1, half, base) is None
    assert R.shipped_table(t, half, F32(base + 1)) is None
    cs, sn = R.rope_table(t + 1, half, base)
    assert cs.shape == (t + 1, half)
    assert np.array_equal(_bits(cs[:t]), _bits(R.rope_table(t, half, base)[0]))


def test_the_caller_owns_the_arrays_it_is_given() -> None:
    t, half, base = _models()[0]
    cs, _ = R.rope_table(t, half, base)
    cs[:] = 7
    assert not np.any(R.rope_table(t, half, base)[0] == 7)


def test_a_file_of_other_source_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tables.npz"
    assert write_shipped(path, [(4, 2, 10000.0), (3, 2, 10000.0)]) == [R.table_key(2, F32(10000.0))]
    assert R.shipped_tables(path)[R.table_key(2, F32(10000.0))][0].shape == (4, 2)  # the longest t kept
    R.shipped_tables.cache_clear()
    monkeypatch.setattr(R, "source_digest", lambda: "0" * 64)
    try:
        assert R.shipped_tables(path) == {}
    finally:
        R.shipped_tables.cache_clear()


@pytest.mark.parametrize("damage", ["not a zip", "wrong shape", "no sin"])
def test_a_broken_file_is_warned_of_and_not_read(tmp_path: Path, damage: str) -> None:
    path = tmp_path / f"{damage.replace(' ', '_')}.npz"
    key = R.table_key(2, F32(10000.0))
    good = np.zeros((4, 2), F32)
    arrays: dict[str, np.ndarray] = {"digest": np.array(R.source_digest()), f"cos_{key}": good}
    if damage == "wrong shape":
        arrays.update({f"cos_{key}": np.zeros((4, 3), F32), f"sin_{key}": good})
    if damage == "not a zip":
        path.write_bytes(b"PK\x03\x04 this is not an npz")
    else:
        np.savez(path, **arrays)  # type: ignore[arg-type]
    with pytest.warns(RuntimeWarning, match="RoPE tables not read"):
        assert R.shipped_tables(path) == {}


def test_a_missing_file_is_no_warning(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert R.shipped_tables(tmp_path / "none.npz") == {}
