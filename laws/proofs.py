"""Proofs of the kernels' index arithmetic for every size, with the SMT solver z3 (main.bend line 20: "the laws at
the end of this file are checked by Bend's kernel"; the sampled laws beside them check values, these check every
size at once).

Each statement calls impl.kernels.index's functions on symbolic values (laws/symbolic.py: the source that runs,
over unbounded integers or machine words, as each proof says), asserts its bounds, the negation of its claim and the
obligations its operations add, and asks z3 for a model: `unsat` proves the claim for every value within the
bounds; a model is a counterexample, which `Outcome.message` prints. The bounds each proof assumes are enforced where
the layer or kernel is built (tests/test_proof_engine.py checks it). `run` checks every proof (`bendtorch study
proofs`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import z3  # type: ignore[import-untyped]

from bendtorch.impl.kernels import dropout as D
from bendtorch.impl.kernels import index as I
from bendtorch.laws.symbolic import Bool, Int, Word, pick, symbolic, term, w64, with_obligations

# ---------------------------------------------------------------------------------------------------------------
# Proofs and their outcome
# ---------------------------------------------------------------------------------------------------------------

UNBOUNDED = "unbounded integers"
WORDS = "machine words (numba's uint64 arithmetic)"
FLOATS = "IEEE binary32 and bfloat16 (z3 floating point)"

Fns = Mapping[str, Callable[..., Any]]
Built = tuple[list[Any], Any, dict[str, Any]]


@dataclass(frozen=True)
class Proof:
    """A statement over every value within its bounds. `build(fns)` gets the symbolic versions of the index functions
    it names (`fns`) and returns (the bounds, the claim, the variables a counterexample shows)."""

    name: str
    says: str
    domain: str
    assumes: str
    fns: tuple[str, ...]
    build: Callable[[Fns], Built]


@dataclass
class Outcome:
    proof: Proof
    proved: bool
    status: str  # "proved", "counterexample" or z3's reason for "unknown"
    seconds: float
    counterexample: dict[str, Any] = field(default_factory=dict)

    def message(self) -> str:
        p = self.proof
        head = f"{p.name} ({p.domain}; assumes {p.assumes})"
        if self.proved:
            return f"{head}: proved in {self.seconds:.2f} s"
        if self.counterexample:
            cx = ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
            return f"{head}: FALSE, z3's counterexample: {cx}"
        return f"{head}: not proved ({self.status}) after {self.seconds:.2f} s"


def _value(m: z3.ModelRef, e: Any) -> Any:
    v = m.eval(e, model_completion=True)
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_bv_value(v):
        return hex(v.as_long())
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return str(v)


def check(p: Proof, replace: Mapping[str, Callable[..., Any]] | None = None, timeout_s: float = 60.0) -> Outcome:
    """Prove p with impl.kernels.index's functions (and dropout's mix32), or with the replacements given by name in
    `replace` (to show that a broken function fails)."""
    t0 = time.perf_counter()
    fns = dict(replace or {})
    sym = {n: symbolic(fns.get(n, getattr(I, n, None) or getattr(D, n))) for n in p.fns}
    (bounds, claim, shown), obligations = with_obligations(lambda: p.build(sym))
    s = z3.Solver()
    s.set("timeout", int(timeout_s * 1000))
    s.add(*[term(b) for b in bounds])
    if s.check() != z3.sat:  # bounds nothing satisfies would prove anything
        return Outcome(p, False, "vacuous: no value satisfies the bounds", time.perf_counter() - t0)
    s.add(z3.Not(z3.And(term(claim), *obligations)))
    r = s.check()
    dt = time.perf_counter() - t0
    if r == z3.unsat:
        return Outcome(p, True, "proved", dt)
    if r == z3.sat:
        m = s.model()
        return Outcome(p, False, "counterexample", dt, {k: _value(m, v) for k, v in shown.items()})
    return Outcome(p, False, f"unknown: {s.reason_unknown()}", dt)


# ---------------------------------------------------------------------------------------------------------------
# Helpers for statements
# ---------------------------------------------------------------------------------------------------------------


def ints(*names: str) -> list[Int]:
    return [Int(z3.Int(n)) for n in names]


def all_of(*cs: Any) -> z3.BoolRef:
    return z3.And(*[term(c) for c in cs])


def implies(a: Any, b: Any) -> z3.BoolRef:
    return z3.Implies(term(a), term(b))


def within(x: Int, lo: Any, hi: Any) -> z3.BoolRef:
    """lo <= x < hi."""
    return z3.And(term(x) >= term(lo), term(x) < term(hi))


def shown(*xs: Int | Word) -> dict[str, Any]:
    return {str(x.e): x.e for x in xs}


def _not(x: Any) -> z3.BoolRef:
    return z3.Not(term(x))


COUNT_MAX = 2**32 - 1
_BF16 = z3.FPSort(8, 8)
_F32 = z3.Float32()
ATTN_BOUNDS = "b, t, kv, g, hd >= 1 (Attention's constructor); indices below their array sizes (< 2^63)"

# ---------------------------------------------------------------------------------------------------------------
# Attention (main.bend lines 2199-2742)
# ---------------------------------------------------------------------------------------------------------------


def _kv_of_group(f: Fns) -> Built:
    hi, g, kv, j = ints("hi", "g", "kv", "j")
    r = f["kv_of"](hi, g)
    h0, h1 = f["group_heads"](r, g)
    j0, j1 = f["group_heads"](j, g)
    bounds = [kv.e >= 1, g.e >= 1, within(hi, 0, kv * g), within(j, 0, kv)]
    claim = all_of(within(r, 0, kv),                      # every query head reads a key/value head that exists
                   within(hi, h0, h1),                    # and is one of that head's group (the backward unit)
                   implies(within(hi, j0, j1), r == j),   # a group's heads read its head and no other
                   j0 >= 0, j0 < j1, j1 <= kv * g)        # every group is g heads that exist
    return bounds, claim, shown(hi, g, kv, j)


def _head_cols(f: Fns) -> Built:
    hi, hi2, g, kv, hd, d, d2 = ints("hi", "hi2", "g", "kv", "hd", "d", "d2")
    hc, kc = f["head_cols"](hi, g, hd)
    hc2, kc2 = f["head_cols"](hi2, g, hd)
    h = kv * g
    bounds = [kv.e >= 1, g.e >= 1, hd.e >= 1, within(hi, 0, h), within(hi2, 0, h), within(d, 0, hd),
              within(d2, 0, hd)]
    claim = all_of(hc >= 0, hc + hd <= h * hd,            # the head's hd columns lie in Q's w = h*hd
                   kc >= 0, kc + hd <= kv * hd,           # its key/value head's in K's and V's kvw = kv*hd
                   kc == f["kv_of"](hi, g) * hd,          # which are kv_of's head's
                   implies(hc + d == hc2 + d2, (hi == hi2) & (d == d2)),  # no two heads share a column of Q
                   implies(kc + d == kc2 + d2, f["kv_of"](hi, g) == f["kv_of"](hi2, g)))
    return bounds, claim, shown(hi, hi2, g, kv, hd, d, d2)


def _rows(f: Fns) -> Built:
    bi, i, bi2, i2, b, t = ints("bi", "i", "bi2", "i2", "b", "t")
    r, r2 = f["row_of"](bi, i, t), f["row_of"](bi2, i2, t)
    bounds = [b.e >= 1, t.e >= 1, within(bi, 0, b), within(i, 0, t), within(bi2, 0, b), within(i2, 0, t)]
    claim = all_of(within(r, 0, b * t),                   # a row of the n = b*t
                   r == f["row_of"](bi, 0, t) + i,        # the kernels' r0 + i
                   implies(r == r2, (bi == bi2) & (i == i2)))  # one (sequence, position) a row
    return bounds, claim, shown(bi, i, bi2, i2, b, t)


def _causal(f: Fns) -> Built:
    bi, bi2, i, j, j2, t = ints("bi", "bi2", "i", "j", "j2", "t")
    nv = f["n_visible"](i)
    r0 = f["row_of"](bi, 0, t)
    bounds = [t.e >= 1, bi.e >= 0, bi2.e >= 0, within(i, 0, t), j.e >= 0, within(j2, 0, t)]
    claim = all_of(nv >= 1,                               # the softmax's first score is a visible one
                   (j < nv) == (j <= i),                  # position i reads positions 0..i exactly
                   implies(j < nv, j < t),                # each a position of the sequence
                   implies((j < nv) & (bi2 != bi), r0 + j != f["row_of"](bi2, j2, t)))  # none of another's rows
    return bounds, claim, shown(bi, bi2, i, j, j2, t)


def _units(f: Fns) -> Built:
    u, u2, b, h, sb, sh = ints("u", "u2", "b", "h", "seq", "head")
    bi, hi = f["unit_of"](u, h)
    bi2, hi2 = f["unit_of"](u2, h)
    ub, uh = f["unit_of"](sb * h + sh, h)
    bounds = [b.e >= 1, h.e >= 1, within(u, 0, b * h), within(u2, 0, b * h), within(sb, 0, b), within(sh, 0, h)]
    claim = all_of(within(bi, 0, b), within(hi, 0, h),    # a unit is a (sequence, head) that exists
                   implies(u != u2, (bi != bi2) | (hi != hi2)),  # no two units compute the same one
                   within(sb * h + sh, 0, b * h), ub == sb, uh == sh)  # and every one is some unit's
    return bounds, claim, shown(u, u2, b, h, sb, sh)


def _par_fwd(f: Fns) -> Built:
    u, u2, b, kv, g, t, hd, i, i2, d, d2 = ints("u", "u2", "b", "kv", "g", "t", "hd", "i", "i2", "d", "d2")
    h = kv * g
    bi, hi = f["unit_of"](u, h)
    bi2, hi2 = f["unit_of"](u2, h)
    hc, _ = f["head_cols"](hi, g, hd)
    hc2, _ = f["head_cols"](hi2, g, hd)
    bounds = [x.e >= 1 for x in (b, kv, g, t, hd)] + [within(u, 0, b * h), within(u2, 0, b * h), within(i, 0, t),
                                                        within(i2, 0, t), within(d, 0, hd), within(d2, 0, hd)]
    same = (f["row_of"](bi, 0, t) + i == f["row_of"](bi2, 0, t) + i2) & (hc + d == hc2 + d2)
    claim = implies(same, u == u2)                         # two units never write one number of O
    return bounds, claim, shown(u, u2, b, kv, g, t, hd, i, i2, d, d2)


def _par_bwd(f: Fns) -> Built:
    u, u2, b, kv, g, t, hd, i, i2, d, d2, hi, hi2 = ints("u", "u2", "b", "kv", "g", "t", "hd", "i", "i2", "d", "d2",
                                                         "hi", "hi2")
    bi, j = f["unit_of"](u, kv)
    bi2, j2 = f["unit_of"](u2, kv)
    h0, h1 = f["group_heads"](j, g)
    h02, h12 = f["group_heads"](j2, g)
    hc, kc = f["head_cols"](hi, g, hd)
    hc2, kc2 = f["head_cols"](hi2, g, hd)
    bounds = [x.e >= 1 for x in (b, kv, g, t, hd)] + [within(u, 0, b * kv), within(u2, 0, b * kv),
                                                        within(hi, h0, h1), within(hi2, h02, h12), within(i, 0, t),
                                                        within(i2, 0, t), within(d, 0, hd), within(d2, 0, hd)]
    same_row = f["row_of"](bi, 0, t) + i == f["row_of"](bi2, 0, t) + i2
    claim = implies(same_row & ((hc + d == hc2 + d2) | (kc + d == kc2 + d2)), u == u2)  # dQ, dK, dV: one writer
    return bounds, claim, shown(u, u2, b, kv, g, t, hd, i, i2, d, d2, hi, hi2)


# ---------------------------------------------------------------------------------------------------------------
# tree_sum (main.bend lines 2791-2809)
# ---------------------------------------------------------------------------------------------------------------


def _ts_read(f: Fns, m: Int, i: Int, k: Int) -> Any:
    """Pair i of a pass over m adds the number at k."""
    left, right = f["ts_pair"](i)
    return (i >= 0) & (i < f["ts_pairs"](m)) & ((k == left) | (k == right))


def _ts_pass(f: Fns) -> Built:
    m, k, i, i2 = ints("m", "k", "i", "i2")
    odd, src, dst = f["ts_carry"](m)
    carried = odd & (k == src)
    nxt, npairs = f["ts_next"](m), f["ts_pairs"](m)
    left, right = f["ts_pair"](i)
    bounds = [m.e >= 2, within(k, 0, m)]
    claim = all_of(_ts_read(f, m, k // 2, k) | carried,   # every number of the level is summed (k's pair: k // 2)
                   implies(_ts_read(f, m, i, k) & _ts_read(f, m, i2, k), i == i2),  # by one pair only
                   implies(_ts_read(f, m, i, k), _not(carried)),  # and never also carried
                   implies(within(i, 0, npairs), (left != right) & within(left, 0, m) & within(right, 0, m)),
                   dst == npairs,                          # the pairs write 0..pairs-1, the carry the next one:
                   nxt == npairs + pick(odd, 1, 0),       # the next level is exactly [0, next)
                   nxt >= 1, nxt < m)                      # and shorter: every length comes down to one
    return bounds, claim, shown(m, k, i, i2)


def _ts_in_place(f: Fns) -> Built:
    m, i, i2 = ints("m", "i", "i2")
    odd, src, dst = f["ts_carry"](m)
    left, right = f["ts_pair"](i)
    left2, right2 = f["ts_pair"](i2)
    npairs = f["ts_pairs"](m)
    bounds = [m.e >= 2, within(i, 0, npairs), within(i2, 0, npairs)]
    claim = all_of(left >= i, right >= i,                  # pair i reads before it writes a[i]
                   implies(i < i2, (left2 != i) & (right2 != i)),  # no pair reads what an earlier one wrote
                   implies(odd, (src >= npairs) & (dst <= src)))   # the carry reads a number no pair wrote
    return bounds, claim, shown(m, i, i2)


# ---------------------------------------------------------------------------------------------------------------
# Packed BF16 (main.bend lines 50-60, 297-345)
# ---------------------------------------------------------------------------------------------------------------


def _words(f: Fns) -> Built:
    n, t, t2, k = ints("n", "t", "t2", "k")
    nw = f["n_words"](n)
    lo, hi = f["word_elems"](k, n)
    lo1, _ = f["word_elems"](k + 1, n)
    wt, wt2 = f["word_of"](t), f["word_of"](t2)
    bounds = [n.e >= 0, within(t, 0, n), within(t2, 0, n), within(k, 0, nw)]
    claim = all_of(within(wt, 0, nw),                      # every element's word exists (odd or even n)
                   lo >= 0, lo < hi, hi <= n, hi - lo <= 2,  # word k holds one or two of the n elements
                   implies(k == 0, lo == 0), implies(k + 1 < nw, hi == lo1), implies(k + 1 == nw, hi == n),
                   implies(within(t, lo, hi), (wt == k) & (f["is_high"](t) == (t == lo + 1))),  # low, then high
                   implies((t != t2) & (wt == wt2), f["is_high"](t) != f["is_high"](t2)),  # never one half
                   (nw == 0) == (n == 0))
    return bounds, claim, shown(n, t, t2, k)


def _halves(f: Fns) -> Built:
    w, h, a, b = (Word(z3.BitVec(x, 32)) for x in ("w", "h", "a", "b"))
    odd = Bool(z3.Bool("odd"))
    other = Bool(z3.Not(odd.e))
    zero = Word(z3.BitVecVal(0, 32))
    nw = f["put"](odd, w, h)
    two = f["put"](True, f["put"](False, zero, a), b)
    one = f["put"](False, zero, a)
    bounds = [z3.ULT(x.e, 2**16) for x in (h, a, b)]
    claim = all_of(z3.ULT(nw.e, 2**32),                    # the word fits its uint32
                   f["half"](odd, nw) == h,                # the half written reads back
                   f["half"](other, nw) == f["half"](other, w),  # the other half is untouched
                   f["half"](False, two) == a, f["half"](True, two) == b,  # even n: a word of two
                   f["half"](False, one) == a, f["half"](True, one) == zero)  # odd n's last word
    return bounds, claim, {"w": w.e, "h": h.e, "odd": odd.e, "a": a.e, "b": b.e}


def _bf16_round(f: Fns) -> Built:
    u = z3.BitVec("u", 32)
    r = f["bf16_of_bits"](Word(u)).e
    x = z3.fpBVToFP(u, _F32)
    r64 = w64(r)
    claim = z3.And(z3.ULT(r64, 2**16),
                   z3.Implies(z3.Not(z3.fpIsNaN(x)),
                              z3.fpBVToFP(z3.Extract(15, 0, r64), _BF16) == z3.fpToFP(z3.RNE(), x, _BF16)),
                   z3.Implies(z3.fpIsNaN(x), r64 == 0xFFFF))
    return [], claim, {"u": u, "bf16_of_bits(u)": r}


def _bf16_widen(f: Fns) -> Built:
    h = z3.BitVec("h", 16)
    hw = Word(z3.ZeroExt(16, h))
    wb = w64(f["bf16_widen_bits"](hw).e)
    xb = z3.fpBVToFP(h, _BF16)
    xf = z3.fpBVToFP(z3.Extract(31, 0, wb), _F32)
    back = w64(f["bf16_of_bits"](Word(z3.Extract(31, 0, wb))).e)
    claim = z3.And(z3.ULT(wb, 2**32),
                   z3.Implies(z3.Not(z3.fpIsNaN(xb)), z3.And(xf == z3.fpToFP(z3.RNE(), xb, _F32),
                                                             back == z3.ZeroExt(48, h))),
                   z3.Implies(z3.fpIsNaN(xb), z3.fpIsNaN(xf)))
    return [], claim, {"h": h}


# ---------------------------------------------------------------------------------------------------------------
# Dropout (main.bend lines 1228-1248)
# ---------------------------------------------------------------------------------------------------------------


def _drop_counter(f: Fns) -> Built:
    key, i = z3.BitVec("key", 64), z3.BitVec("i", 64)
    r = w64(f["drop_counter"](Word(key), Word(i)).e)
    bounds = [z3.ULT(key, 2**32), z3.ULT(i, 2**63)]
    claim = r == z3.ZeroExt(32, z3.Extract(31, 0, key) + z3.Extract(31, 0, i))  # U32's key + i
    return bounds, claim, {"key": key, "i": i}


def _seed_mix32(x: z3.BitVecRef) -> z3.BitVecRef:
    """lowbias32 as main.bend line 1229 writes it, in U32 (wrapping) arithmetic: the specification."""
    a = x ^ z3.LShR(x, 16)
    b = a * 2146121005
    c = b ^ z3.LShR(b, 15)
    d = c * 2221713035
    return d ^ z3.LShR(d, 16)


def _mix32(f: Fns) -> Built:
    x = z3.BitVec("x", 32)
    r = w64(f["mix32"](Word(z3.ZeroExt(32, x))).e)
    return [], r == z3.ZeroExt(32, _seed_mix32(x)), {"x": x}


# ---------------------------------------------------------------------------------------------------------------
# The matrix product's blocks, a pair of layers' offsets
# ---------------------------------------------------------------------------------------------------------------


def _blocks(f: Fns) -> Built:
    k, kb, blk = ints("k", "kb", "blk")
    nb = f["n_blocks"](k, kb)
    k0, k1 = f["block_span"](blk, kb, k)
    n0, _ = f["block_span"](blk + 1, kb, k)
    bounds = [k.e >= 0, kb.e >= 1, within(blk, 0, nb)]
    claim = all_of(k0 >= 0, k0 < k1, k1 <= k, k1 - k0 <= kb,  # a block is 1..kb of the summed indices
                   implies(blk == 0, k0 == 0), implies(blk + 1 < nb, k1 == n0), implies(blk + 1 == nb, k1 == k))
    return bounds, claim, shown(k, kb, blk)


def _blocks_none(f: Fns) -> Built:
    k, kb = ints("k", "kb")
    nb = f["n_blocks"](k, kb)
    return [k.e >= 0, kb.e >= 1], all_of(nb >= 0, (nb == 0) == (k == 0)), shown(k, kb)


def _pair_span(f: Fns) -> Built:
    off, ca, cb, x = ints("off", "ca", "cb", "x")
    a, b, end = f["pair_span"](off, ca, cb)
    bounds = [off.e >= 0, ca.e >= 0, cb.e >= 0, off.e + ca.e + cb.e <= COUNT_MAX]
    claim = all_of(a == off, end == off + ca + cb, b - a == ca, end - b == cb,  # each part its count, in order
                   implies(within(x, off, off + ca + cb), z3.Xor(within(x, a, b), within(x, b, end))),
                   implies(z3.Or(within(x, a, b), within(x, b, end)), within(x, off, off + ca + cb)),
                   end <= COUNT_MAX)                       # so the seed's U32 offsets never wrap
    return bounds, claim, shown(off, ca, cb, x)


PROOFS: tuple[Proof, ...] = (
    Proof("kv_of_group", "query head hi reads key/value head kv_of(hi, g), the one whose group of g heads holds hi "
          "(kv_of, main.bend line 2216; bgroup, line 2509)", UNBOUNDED, ATTN_BOUNDS, ("kv_of", "group_heads"),
          _kv_of_group),
    Proof("head_cols", "each query head owns hd columns of Q inside w, no two heads share one, and its K/V columns "
          "are its key/value head's (head_cols, line 2369)", UNBOUNDED, ATTN_BOUNDS, ("head_cols", "kv_of"),
          _head_cols),
    Proof("row_of", "(sequence, position) -> row is one-to-one onto [0, b*t) (rows_out, line 2578)", UNBOUNDED,
          ATTN_BOUNDS, ("row_of",), _rows),
    Proof("causal", "position i reads exactly positions 0..i of its own sequence, nothing of another (qrow, "
          "line 2246)", UNBOUNDED, ATTN_BOUNDS, ("n_visible", "row_of"), _causal),
    Proof("attn_par_units", "the parallel units are every (sequence, head) exactly once (fpar / bpar, lines "
          "2596, 2663)", UNBOUNDED, ATTN_BOUNDS, ("unit_of",), _units),
    Proof("attn_par_fwd_disjoint", "two forward units never write one number of O (so the thread count never "
          "changes the bits)", UNBOUNDED, ATTN_BOUNDS, ("unit_of", "head_cols", "row_of"), _par_fwd),
    Proof("attn_par_bwd_disjoint", "two backward units never write one number of dQ, dK or dV", UNBOUNDED,
          ATTN_BOUNDS, ("unit_of", "group_heads", "head_cols", "row_of"), _par_bwd),
    Proof("tree_sum_pairing", "each pass of tree_sum adds every number of its level exactly once and leaves the "
          "next level at [0, (m + 1) // 2), shorter, for every length m (ts_pass, line 2791)", UNBOUNDED,
          "m >= 2 (m <= 1 ends the loop); m is an array size (< 2^63)", ("ts_pairs", "ts_pair", "ts_carry", "ts_next"),
          _ts_pass),
    Proof("tree_sum_in_place", "a pass in place never reads a number it has already overwritten", UNBOUNDED,
          "m >= 2; m is an array size (< 2^63)", ("ts_pairs", "ts_pair", "ts_carry"), _ts_in_place),
    Proof("packed_layout", "the words' elements tile [0, n), element t in half is_high(t) of word t >> 1, two "
          "elements never in one half, for odd and even n (line 52)", UNBOUNDED,
          "n >= 0 (an array size, < 2^63)", ("n_words", "word_elems", "word_of", "is_high"), _words),
    Proof("packed_halves", "put then half gives the value back and leaves the other half, so pack then unpack is "
          "the identity (ph_half / ph_put, lines 332-344)", WORDS,
          "values below 2^16 (bf16_of_bits's results: bf16_round proves it)", ("put", "half"), _halves),
    Proof("bf16_round", "float32 -> BF16 bits is IEEE round to nearest, ties to even, into bfloat16 for every "
          "non-NaN float32, and a NaN gives 0xFFFF (ph_of_bits, line 321)", FLOATS, "none: every 32-bit pattern",
          ("bf16_of_bits",), _bf16_round),
    Proof("bf16_widen", "BF16 -> float32 is exact: the bits are those of the same number, and rounding back gives "
          "the BF16 (ph_to, line 328)", FLOATS, "none: every 16-bit pattern", ("bf16_widen_bits", "bf16_of_bits"),
          _bf16_widen),
    Proof("dropout_counter", "the hash input is key + i taken mod 2^32 (drop_k, line 1237)", WORDS,
          "key < 2^32 (mix32's result, dropout_mix32 proves it); i a flat index (0 <= i < 2^63)",
          ("drop_counter",), _drop_counter),
    Proof("dropout_mix32", "the kernel's mix32 in uint64 with masks equals the seed's lowbias32 in U32 for every "
          "32-bit word (line 1229)", WORDS, "x < 2^32 (inputs are masked to 32 bits)", ("mix32",), _mix32),
    Proof("matmul_blocks", "the blocks of kb tile the summed indices [0, k) in order, each 1..kb long", UNBOUNDED,
          "k >= 0, kb >= 1 (checked by the matmul drivers)", ("n_blocks", "block_span"), _blocks),
    Proof("matmul_no_blocks", "there are no blocks exactly when k = 0 (the sum is +0.0)", UNBOUNDED,
          "k >= 0, kb >= 1", ("n_blocks",), _blocks_none),
    Proof("pair_offsets", "a pair's parts tile its [off, off + count) in order without overlap, and no offset "
          "passes 2^32 - 1 (pair_dump / pair_load / pair_store, lines 811-835)", UNBOUNDED,
          "off + count <= 2^32 - 1 (a combinator refuses a larger count where it is built)", ("pair_span",),
          _pair_span),
)

BY_NAME = {p.name: p for p in PROOFS}


def run(timeout: float = 60.0) -> dict[str, Any]:
    """Every proof of PROOFS checked (z3 given `timeout` seconds each): each one's outcome and seconds."""
    t0 = time.perf_counter()
    done = [check(p, timeout_s=timeout) for p in PROOFS]
    return {"proofs": [{"name": o.proof.name, "proved": o.proved, "status": o.status, "seconds": o.seconds,
                        "counterexample": o.counterexample, "message": o.message()} for o in done],
            "proved": sum(o.proved for o in done), "of": len(done), "seconds": time.perf_counter() - t0}


def text(r: dict[str, Any]) -> str:
    """One line per proof, then the count."""
    return "\n".join([p["message"] for p in r["proofs"]] + [f"{r['proved']} of {r['of']} proved in "
                                                           f"{r['seconds']:.2f} s"])
