"""The proofs of laws/proofs.py (over laws/symbolic.py's values) fail when they should, run the functions the kernels
run, and rest on bounds that are enforced where the layers and kernels are built.

- Broken on purpose: each proof is given a function with one small mistake (an off-by-one in kv_of, a tree_sum
  pass that drops the last number, ...) and must come back with z3's counterexample, which its message prints; the
  counterexample is checked on the broken function itself where the statement is a plain equation.
- Faithful: the symbolic run of each index function, on concrete values, gives what the compiled function gives.
- Bounds: what each proof assumes is refused (or made true) before any kernel runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest
import z3  # type: ignore[import-untyped]

from bendtorch.impl.kernels import attention as AK
from bendtorch.impl.kernels import dropout as D
from bendtorch.impl.kernels import index as I
from bendtorch.impl.kernels import losses as LK
from bendtorch.impl.kernels import matmul as MK
from bendtorch.impl.kernels import packed as PK
from bendtorch.impl.kernels.index import pick
from bendtorch.laws import proofs as P
from bendtorch.laws import symbolic as Sym

# ---------------------------------------------------------------------------------------------------------------
# Broken on purpose: (proof, the function replaced, the broken version)
# ---------------------------------------------------------------------------------------------------------------

_S16 = np.uint32(16)
_LO = np.uint32(0xFFFF)
_HI = np.uint32(0xFFFF0000)
_M32 = np.uint64(0xFFFFFFFF)


def kv_of_off_by_one(hi: int, g: int) -> int:
    return (hi + 1) // g


def head_cols_overlap(hi: int, g: int, hd: int) -> tuple[int, int]:
    return hi * (hd - 1), (hi // g) * hd


def kc_of_query_head(hi: int, g: int, hd: int) -> tuple[int, int]:
    return hi * hd, hi * hd


def row_of_short(bi: int, i: int, t: int) -> int:
    return bi * (t - 1) + i


def sees_the_next(i: int) -> int:
    return i + 2


def unit_of_shifted(u: int, h: int) -> tuple[int, int]:
    return u // h, (u + 1) % h


def group_heads_short(j: int, g: int) -> tuple[int, int]:
    return j * g, j * g + g - 1


def ts_drops_last(m: int) -> tuple[bool, int, int]:
    return m % 2 == 3, m - 1, m // 2


def ts_pairs_short(m: int) -> int:
    return (m - 1) // 2


def ts_pair_backwards(i: int) -> tuple[int, int]:
    return 2 * i, 2 * i - 1


def word_of_shifted(t: int) -> int:
    return (t + 1) >> 1


def word_elems_short(k: int, n: int) -> tuple[int, int]:
    return 2 * k, pick(2 * k + 1 < n, 2 * k + 1, n)


def put_clobbers(odd: bool, w: np.uint32, h: np.uint32) -> np.uint32:
    return pick(odd, np.uint32(h << _S16), (w & _HI) | h)


def bf16_truncates(u: np.uint32) -> np.uint32:
    return pick((u & I._ABS) > I._INF, I._NAN16, np.uint32(u >> _S16))


def bf16_ties_up(u: np.uint32) -> np.uint32:
    return pick((u & I._ABS) > I._INF, I._NAN16, np.uint32(np.uint32(u + np.uint32(0x8000)) >> _S16))


def bf16_nan_kept(u: np.uint32) -> np.uint32:
    return np.uint32(np.uint32(np.uint32(u + I._RND) + np.uint32((u >> _S16) & I._ONE_U)) >> _S16)


def widen_by_15(h: np.uint32) -> np.uint32:
    return np.uint32(h << np.uint32(15))


def counter_unmasked(key: np.uint64, i: int) -> np.uint64:
    return key + np.uint64(i)


_K1 = np.uint64(2146121005)
_K2 = np.uint64(2221713035)


def mix32_shift_14(x: np.uint64) -> np.uint64:
    a = x ^ (x >> np.uint64(16))
    b = (a * _K1) & _M32
    c = b ^ (b >> np.uint64(14))
    d = (c * _K2) & _M32
    return d ^ (d >> np.uint64(16))


def mix32_unmasked(x: np.uint64) -> np.uint64:
    a = x ^ (x >> np.uint64(16))
    b = a * _K1
    c = b ^ (b >> np.uint64(15))
    d = (c * _K2) & _M32
    return d ^ (d >> np.uint64(16))


def block_span_long(blk: int, kb: int, k: int) -> tuple[int, int]:
    return blk * kb, (blk + 1) * kb


def n_blocks_floor(k: int, kb: int) -> int:
    return k // kb


def pair_span_gap(off: int, ca: int, cb: int) -> tuple[int, int, int]:
    return off, off + ca + 1, off + ca + cb


def pair_span_overlap(off: int, ca: int, cb: int) -> tuple[int, int, int]:
    return off, off + ca - 1, off + ca + cb


BROKEN: list[tuple[str, str, Callable[..., Any]]] = [
    ("kv_of_group", "kv_of", kv_of_off_by_one),
    ("kv_of_group", "group_heads", group_heads_short),
    ("head_cols", "head_cols", head_cols_overlap),
    ("head_cols", "head_cols", kc_of_query_head),
    ("row_of", "row_of", row_of_short),
    ("causal", "n_visible", sees_the_next),
    ("attn_par_units", "unit_of", unit_of_shifted),
    ("attn_par_fwd_disjoint", "row_of", row_of_short),
    ("attn_par_bwd_disjoint", "group_heads", lambda j, g: (j * g, j * g + g + 1)),
    ("tree_sum_pairing", "ts_carry", ts_drops_last),
    ("tree_sum_pairing", "ts_pairs", ts_pairs_short),
    ("tree_sum_in_place", "ts_pair", ts_pair_backwards),
    ("packed_layout", "word_of", word_of_shifted),
    ("packed_layout", "word_elems", word_elems_short),
    ("packed_halves", "put", put_clobbers),
    ("bf16_round", "bf16_of_bits", bf16_truncates),
    ("bf16_round", "bf16_of_bits", bf16_ties_up),
    ("bf16_round", "bf16_of_bits", bf16_nan_kept),
    ("bf16_widen", "bf16_widen_bits", widen_by_15),
    ("dropout_counter", "drop_counter", counter_unmasked),
    ("dropout_mix32", "mix32", mix32_shift_14),
    ("dropout_mix32", "mix32", mix32_unmasked),
    ("matmul_blocks", "block_span", block_span_long),
    ("matmul_no_blocks", "n_blocks", n_blocks_floor),
    ("pair_offsets", "pair_span", pair_span_gap),
    ("pair_offsets", "pair_span", pair_span_overlap),
]


@pytest.mark.parametrize("proof, name, broken", BROKEN, ids=[f"{p}-{getattr(f, '__name__', n)}" for p, n, f in BROKEN])
def test_a_broken_function_gets_a_counterexample(proof: str, name: str, broken: Callable[..., Any]) -> None:
    o = P.check(P.BY_NAME[proof], {name: broken})
    assert not o.proved and o.status == "counterexample" and o.counterexample, o.message()
    msg = o.message()
    assert "FALSE, z3's counterexample:" in msg and proof in msg
    # the same proof with the real function holds
    assert P.check(P.BY_NAME[proof]).proved


def test_the_counterexample_is_real() -> None:
    """kv_of off by one: at z3's counterexample the broken kv_of breaks the law on plain integers too."""
    o = P.check(P.BY_NAME["kv_of_group"], {"kv_of": kv_of_off_by_one})
    c = o.counterexample
    hi, g, kv = c["hi"], c["g"], c["kv"]
    r = kv_of_off_by_one(hi, g)
    h0, h1 = I.group_heads(r, g)
    assert not (0 <= r < kv and h0 <= hi < h1)


def test_tree_sum_dropping_the_last_number_is_caught_and_would_be_wrong() -> None:
    """The pass that forgets the carry: z3's m is a length at which the broken sum differs."""
    o = P.check(P.BY_NAME["tree_sum_pairing"], {"ts_carry": ts_drops_last})
    m = o.counterexample["m"]
    xs = np.arange(1, m + 1, dtype=np.float32)  # small integers: every sum exact

    def tree_sum_with(carry: Callable[[int], tuple[bool, int, int]]) -> float:
        a, n = [float(x) for x in xs], m  # the kernel's loop, with the carry given
        while n > 1:
            for i in range(I.ts_pairs(n)):
                left, right = I.ts_pair(i)
                a[i] = a[left] + a[right]
            odd, src, dst = carry(n)
            if odd:
                a[dst] = a[src]
            n = I.ts_next(n)
        return a[0]

    assert tree_sum_with(I.ts_carry) == float(LK.tree_sum(xs)) == m * (m + 1) // 2
    assert tree_sum_with(ts_drops_last) != m * (m + 1) // 2


def test_vacuous_bounds_are_not_a_proof() -> None:
    def vacuous(f: P.Fns) -> P.Built:
        m, = P.ints("m")
        return [m.e >= 2, m.e <= 1], m == m + 1, P.shown(m)

    o = P.check(P.Proof("vacuous", "nothing", P.UNBOUNDED, "2 <= m <= 1", (), vacuous))
    assert not o.proved and o.status.startswith("vacuous")


def test_a_python_branch_on_a_symbolic_value_is_refused() -> None:
    def branchy(hi: int, g: int) -> int:
        return hi // g if hi > 0 else 0

    with pytest.raises(Sym.SymbolicBranch):
        P.check(P.BY_NAME["kv_of_group"], {"kv_of": branchy})

    def mixes_an_int(u: np.uint32) -> np.uint32:
        return np.uint32(u + 1)

    with pytest.raises(TypeError, match="numba types it int64"):
        P.check(P.BY_NAME["bf16_round"], {"bf16_of_bits": mixes_an_int})


# ---------------------------------------------------------------------------------------------------------------
# Faithful: the symbolic run computes what the compiled function computes
# ---------------------------------------------------------------------------------------------------------------


def _concrete(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_concrete(v) for v in x)
    if isinstance(x, (Sym.Int, Sym.Bool, Sym.Word)):
        v = z3.simplify(x.e)
        if z3.is_true(v) or z3.is_false(v):
            return z3.is_true(v)
        return v.as_long()
    return int(x) if isinstance(x, (np.integer, int)) and not isinstance(x, (bool, np.bool_)) else bool(x)


def _sym_int(v: int) -> Sym.Int:
    return Sym.Int(z3.IntVal(v))


def _sym_word(v: int, bits: int) -> Sym.Word:
    return Sym.Word(z3.BitVecVal(v, bits))


INT_FUNCTIONS = [("kv_of", 2), ("group_heads", 2), ("head_cols", 3), ("row_of", 3), ("n_visible", 1),
                 ("unit_of", 2), ("ts_pairs", 1), ("ts_pair", 1), ("ts_carry", 1), ("ts_next", 1), ("n_words", 1),
                 ("word_of", 1), ("is_high", 1), ("word_elems", 2), ("n_blocks", 2), ("block_span", 3),
                 ("pair_span", 3)]


@pytest.mark.parametrize("name, arity", INT_FUNCTIONS)
def test_the_symbolic_run_of_an_index_function_is_the_compiled_one(name: str, arity: int) -> None:
    fn = getattr(I, name)
    sym = Sym.symbolic(fn)
    rng = np.random.default_rng(0)
    for _ in range(50):
        args = [int(v) for v in rng.integers(1, 1000, size=arity)]
        assert _concrete(sym(*[_sym_int(a) for a in args])) == _concrete(fn(*args)), (name, args)


def test_the_symbolic_run_of_the_bit_functions_is_the_compiled_one() -> None:
    rng = np.random.default_rng(1)
    us = [int(u) for u in rng.integers(0, 2**32, size=300)] + [0, 0x7F800000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF,
                                                               0x3F808000, 0x3F818000]
    for u in us:
        got = _concrete(Sym.symbolic(I.bf16_of_bits)(_sym_word(u, 32)))
        assert got == int(I.bf16_of_bits(np.uint32(u))), hex(u)
        h = u & 0xFFFF
        assert _concrete(Sym.symbolic(I.bf16_widen_bits)(_sym_word(h, 32))) == int(I.bf16_widen_bits(np.uint32(h)))
        assert _concrete(Sym.symbolic(D.mix32)(_sym_word(u, 64))) == int(D.mix32(np.uint64(u)))
        for odd in (False, True):
            w = int(rng.integers(0, 2**32))
            assert _concrete(Sym.symbolic(I.put)(odd, _sym_word(w, 32), _sym_word(h, 32))) == \
                int(I.put(odd, np.uint32(w), np.uint32(h)))
            assert _concrete(Sym.symbolic(I.half)(odd, _sym_word(w, 32))) == int(I.half(odd, np.uint32(w)))
        i = int(rng.integers(0, 2**40))
        assert _concrete(Sym.symbolic(I.drop_counter)(_sym_word(u, 64), _sym_word(i, 64))) == \
            int(I.drop_counter(np.uint64(u), i))


def test_every_index_function_is_proved() -> None:
    """Each function of impl.kernels.index the kernels call appears in some proof."""
    used = {n for p in P.PROOFS for n in p.fns}
    kernels = {n for n, v in vars(I).items() if Sym._is_dispatcher(v)} - {"pick"}
    assert kernels <= used, kernels - used


def test_the_kernels_call_the_proved_functions() -> None:
    """The kernels' modules hold impl.kernels.index's own compiled functions (not copies)."""
    for mod, names in [(AK, ("kv_of", "head_cols", "row_of", "n_visible", "group_heads", "unit_of")),
                       (PK, ("bf16_of_bits", "bf16_widen_bits", "half", "put", "is_high", "n_words", "word_elems",
                             "word_of")),
                       (D, ("drop_counter",)), (LK, ("ts_pairs", "ts_pair", "ts_carry", "ts_next")),
                       (MK, ("n_blocks", "block_span"))]:
        for n in names:
            assert getattr(mod, n) is getattr(I, n), (mod.__name__, n)


# ---------------------------------------------------------------------------------------------------------------
# Bounds: enforced where the layer or the kernel is built
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["b", "t", "kv", "g", "hd"])
def test_attention_refuses_a_size_below_one(bad: str) -> None:
    from bendtorch.impl.layers.attention import Attention
    from bendtorch.impl.specs import ShapeError
    d = {"b": 2, "t": 3, "kv": 2, "g": 2, "hd": 4}
    d[bad] = 0
    with pytest.raises(ShapeError, match="Attention"):
        Attention(d["b"] * d["t"], d["kv"] * d["g"] * d["hd"], d["kv"] * d["hd"], d["b"], d["t"], d["kv"], d["g"],
                  d["hd"], 0.5)


def test_a_pair_of_more_than_2_to_32_minus_1_numbers_is_refused() -> None:
    from bendtorch.impl import combinators as C
    from bendtorch.impl.protocol import Layer
    from bendtorch.impl.specs import MatSpec, ShapeError
    base: Layer[Any, Any, Any, Any] = C.Id(MatSpec(1, 1))
    big = dataclasses.replace(base, n_count=2**31)
    fits = dataclasses.replace(base, n_count=2**31 - 1)
    assert C.Seq(big, fits).count() == 2**32 - 1
    with pytest.raises(ShapeError, match="2\\^32 - 1"):
        C.Seq(big, big)
    with pytest.raises(ShapeError, match="2\\^32 - 1"):
        C.Fork(big, big)


def test_a_pair_whose_parts_disagree_with_their_counts_is_refused() -> None:
    """pair_span's offsets are checked against where each part's load and store end."""
    from bendtorch.impl import combinators as C
    from bendtorch.impl.protocol import Layer
    from bendtorch.impl.specs import MatSpec, ShapeError
    base: Layer[Any, Any, Any, Any] = C.Id(MatSpec(1, 1))
    liar = dataclasses.replace(base, n_count=1)
    pair = C.Seq(liar, base)
    with pytest.raises(ShapeError, match="load"):
        pair.load((None, None), np.zeros(4, np.float32), 0)
    with pytest.raises(ShapeError, match="store"):
        pair.store((None, None), np.zeros(4, np.float32), 0)
    with pytest.raises(ShapeError, match="dump"):
        pair.dump((None, None))


def test_unpacking_too_few_words_is_refused() -> None:
    from bendtorch.impl.packed import bf16_unpack
    with pytest.raises(ValueError, match="3 values need 2 words"):
        bf16_unpack(np.zeros(1, np.uint32), 3)


def test_matmul_refuses_a_block_length_below_one() -> None:
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="kb"):
        MK.mm(a, a.T.copy(), kb=0)


def test_the_dropout_key_is_below_2_to_32() -> None:
    """dropout_counter assumes key < 2^32: seeds and steps are taken mod 2^32 and mix32's result is 32 bits."""
    a = D.mask(3, 5, 2**40 + 7, 2**33 + 1, np.float32(0.5))
    b = D.mask(3, 5, 7, 1, np.float32(0.5))
    assert np.array_equal(a, b)
    for x in (0, 1, 2**32 - 1, 123456789):
        assert int(D.drop_key(np.uint64(x), np.uint64(2**32 - 1))) < 2**32
