"""The seed's erf (main.bend lines 1104-1199), ported bit for bit to float32.

erf is odd, so the work is done on a = |x| and the sign put back (erf_sign, line 1157: pick(x < 0, -e, e)). The pieces
are chosen from the top down, as erf_top, erf_i5, ..., erf_i0 do (lines 1160-1199), by comparisons on a:
- piece 7, a >= 3.92 (infinity included): 1 with x's sign (erf_top, line 1192);
- pieces 6..1, a in [3.25, 3.92), [2.75, 3.25), [2.25, 2.75), [1.75, 2.25), [1.25, 1.75), [0.84375, 1.25):
  K + S(a - c) with c = 3.5, 3.0, 2.5, 2.0, 1.5, 1.0 (erf_p5 .. erf_p0, lines 1133-1155), sign put back;
- piece 0, everything else (a < 0.84375, and NaN, since every comparison with NaN is false): x + x P(x^2)
  (erf_small, line 1129), computed on x itself, so erf(-0) = -0 and NaN comes out NaN; no erf_sign here.
Each polynomial is Horner's rule from the innermost (highest) coefficient outwards, one step being erf_hp(c, t, s) =
c + (t * s) or, for a negative coefficient -c, erf_hm(c, t, s) = (t * s) - c (lines 1122-1127), every operation
rounded once to float32 (no fused multiply-add: numba without fastmath never contracts).

The coefficients are np.float32 of the seed's decimal literals. Each literal is the exact decimal printing of a
float32 value, so it names that float32 however it is read (tests/ check this).

`erf32` is the scalar kernel other kernels call (e.g. GELUErf's), `erf` the element-wise kernel over an array,
`erf_plain` the same operations on numpy float32 scalars (the plain twin tests compare bit for bit), `erf_piece`
the piece (0..7, as listed above) an input takes.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

F = npt.NDArray[np.float32]
F32 = np.float32

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)

# piece thresholds on a = |x| (main.bend lines 1170-1199)
B_SMALL = np.float32(0.84375)
B1 = np.float32(1.25)
B2 = np.float32(1.75)
B3 = np.float32(2.25)
B4 = np.float32(2.75)
B5 = np.float32(3.25)
B_TOP = np.float32(3.92)
BOUNDS = (B_SMALL, B1, B2, B3, B4, B5, B_TOP)
# the centres c of pieces 1..6 (t = a - c)
C0 = np.float32(1.0)
C1 = np.float32(1.5)
C2 = np.float32(2.0)
C3 = np.float32(2.5)
C4 = np.float32(3.0)
C5 = np.float32(3.5)

# erf_small, main.bend line 1131: x + x*(s0 + z*(-s1 + z*(s2 + z*(-s3 + z*(s4 + z*(-s5 + z*s6)))))), z = x*x
S0 = np.float32(0.12837916612625122)
S1 = np.float32(0.37612634897232056)
S2 = np.float32(0.11283732205629349)
S3 = np.float32(0.026861993595957756)
S4 = np.float32(0.005208558402955532)
S5 = np.float32(0.000823960464913398)
S6 = np.float32(8.829222497297451e-05)

# erf_p0, line 1135, [0.84375, 1.25), t = a - 1.0
K0 = np.float32(0.8427007794380188)
P00 = np.float32(1.3508899776581984e-08)
P01 = np.float32(0.41510748863220215)
P02 = np.float32(0.41510751843452454)
P03 = np.float32(0.13837093114852905)
P04 = np.float32(0.06918490678071976)
P05 = np.float32(0.06929104775190353)
P06 = np.float32(0.004778923466801643)
P07 = np.float32(0.017144912853837013)
P08 = np.float32(0.010648881085216999)

# erf_p1, line 1139, [1.25, 1.75), t = a - 1.5
K1 = np.float32(0.9661051630973816)
P10 = np.float32(1.6622220044837377e-08)
P11 = np.float32(0.11893028765916824)
P12 = np.float32(0.17839543521404266)
P13 = np.float32(0.1387522667646408)
P14 = np.float32(0.04459875077009201)
P15 = np.float32(0.014879402704536915)
P16 = np.float32(0.019323812797665596)
P17 = np.float32(0.004488371312618256)
P18 = np.float32(0.0023522074334323406)

# erf_p2, line 1143, [1.75, 2.25), t = a - 2.0
K2 = np.float32(0.9953222870826721)
P20 = np.float32(2.2064206461891445e-08)
P21 = np.float32(0.02066698484122753)
P22 = np.float32(0.04133396968245506)
P23 = np.float32(0.04822301119565964)
P24 = np.float32(0.03444507718086243)
P25 = np.float32(0.013088003732264042)
P26 = np.float32(0.00046277992078103125)
P27 = np.float32(0.0033736424520611763)
P28 = np.float32(0.0015402256976813078)

# erf_p3, line 1147, [2.25, 2.75), t = a - 2.5
K3 = np.float32(0.9995930194854736)
P30 = np.float32(2.846470792405853e-08)
P31 = np.float32(0.002178284339606762)
P32 = np.float32(0.005445694085210562)
P33 = np.float32(0.008350063115358353)
P34 = np.float32(0.008623690344393253)
P35 = np.float32(0.00611893879249692)
P36 = np.float32(0.002765072975307703)
P37 = np.float32(0.0005077228415757418)

# erf_p4, line 1151, [2.75, 3.25), t = a - 3.0
K4 = np.float32(0.9999778866767883)
P40 = np.float32(2.2842012725732275e-08)
P41 = np.float32(0.00013925303937867284)
P42 = np.float32(0.0004177672672085464)
P43 = np.float32(0.0007891026325523853)
P44 = np.float32(0.0010437482269480824)
P45 = np.float32(0.001016448251903057)
P46 = np.float32(0.0007547215791419148)
P47 = np.float32(0.0003925197524949908)

# erf_p5, line 1155, [3.25, 3.92), t = a - 3.5
K5 = np.float32(0.9999992847442627)
P50 = np.float32(2.7855115547481546e-08)
P51 = np.float32(5.400151167123113e-06)
P52 = np.float32(1.8894650565925986e-05)
P53 = np.float32(4.221926792524755e-05)
P54 = np.float32(6.778862734790891e-05)
P55 = np.float32(8.422814426012337e-05)
P56 = np.float32(7.95367595856078e-05)
P57 = np.float32(4.151461325818673e-05)

# every literal, in the seed's order, with its decimal text (tests check wide-then-float32 == direct)
LITERALS: dict[str, str] = {
    "S0": "0.12837916612625122", "S1": "0.37612634897232056", "S2": "0.11283732205629349",
    "S3": "0.026861993595957756", "S4": "0.005208558402955532", "S5": "0.000823960464913398",
    "S6": "8.829222497297451e-05",
    "K0": "0.8427007794380188", "P00": "1.3508899776581984e-08", "P01": "0.41510748863220215",
    "P02": "0.41510751843452454", "P03": "0.13837093114852905", "P04": "0.06918490678071976",
    "P05": "0.06929104775190353", "P06": "0.004778923466801643", "P07": "0.017144912853837013",
    "P08": "0.010648881085216999",
    "K1": "0.9661051630973816", "P10": "1.6622220044837377e-08", "P11": "0.11893028765916824",
    "P12": "0.17839543521404266", "P13": "0.1387522667646408", "P14": "0.04459875077009201",
    "P15": "0.014879402704536915", "P16": "0.019323812797665596", "P17": "0.004488371312618256",
    "P18": "0.0023522074334323406",
    "K2": "0.9953222870826721", "P20": "2.2064206461891445e-08", "P21": "0.02066698484122753",
    "P22": "0.04133396968245506", "P23": "0.04822301119565964", "P24": "0.03444507718086243",
    "P25": "0.013088003732264042", "P26": "0.00046277992078103125", "P27": "0.0033736424520611763",
    "P28": "0.0015402256976813078",
    "K3": "0.9995930194854736", "P30": "2.846470792405853e-08", "P31": "0.002178284339606762",
    "P32": "0.005445694085210562", "P33": "0.008350063115358353", "P34": "0.008623690344393253",
    "P35": "0.00611893879249692", "P36": "0.002765072975307703", "P37": "0.0005077228415757418",
    "K4": "0.9999778866767883", "P40": "2.2842012725732275e-08", "P41": "0.00013925303937867284",
    "P42": "0.0004177672672085464", "P43": "0.0007891026325523853", "P44": "0.0010437482269480824",
    "P45": "0.001016448251903057", "P46": "0.0007547215791419148", "P47": "0.0003925197524949908",
    "K5": "0.9999992847442627", "P50": "2.7855115547481546e-08", "P51": "5.400151167123113e-06",
    "P52": "1.8894650565925986e-05", "P53": "4.221926792524755e-05", "P54": "6.778862734790891e-05",
    "P55": "8.422814426012337e-05", "P56": "7.95367595856078e-05", "P57": "4.151461325818673e-05",
    "B_TOP": "3.92",
}


# ---------------------------------------------------------------------------------------------------------------
# compiled (numba) version
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _hp(c: np.float32, t: np.float32, s: np.float32) -> np.float32:
    """erf_hp, main.bend line 1123: c + (t * s)."""
    return c + t * s


@numba.njit(cache=True)
def _hm(c: np.float32, t: np.float32, s: np.float32) -> np.float32:
    """erf_hm, main.bend line 1126: (t * s) - c, the Horner step for the coefficient -c."""
    return t * s - c


# below 2^-14 erf_small's P(z) is S0 exactly: z = x*x < 2^-28 and every Horner step's sum stays under 0.4, so its last
# step adds z times it, under 2^-29, to S0, whose half spacing is 2^-27. So x + x*S0 there is erf_small's result, bit
# for bit; the skipped steps' products are in the subnormal range for |x| near 1e-22 to 1e-19, where an Intel core
# computes each through a microcode assist (258 ns a number against 4 elsewhere, Intel Xeon, family 6, model 167).
# docs/DESIGN.md lists it among the places impl goes beyond the seed's text (same bits); tests/test_kernels_erf.py
# checks it
SMALL_TINY = np.float32(2.0 ** -14)


@numba.njit(cache=True)
def _small(x: np.float32) -> np.float32:
    """erf_small, main.bend line 1129: z = x*x; x + x*P(z), Horner from S6 outwards (P(z) = S0 below SMALL_TINY)."""
    if abs(x) < SMALL_TINY:
        return x + x * S0
    z = x * x
    p = _hm(S5, z, S6)
    p = _hp(S4, z, p)
    p = _hm(S3, z, p)
    p = _hp(S2, z, p)
    p = _hm(S1, z, p)
    p = _hp(S0, z, p)
    return x + x * p


@numba.njit(cache=True)
def _p0(t: np.float32) -> np.float32:
    """erf_p0, main.bend line 1134, on [0.84375, 1.25) with t = a - 1."""
    p = _hp(P07, t, -P08)
    p = _hp(P06, t, p)
    p = _hm(P05, t, p)
    p = _hp(P04, t, p)
    p = _hp(P03, t, p)
    p = _hm(P02, t, p)
    p = _hp(P01, t, p)
    p = _hp(P00, t, p)
    return K0 + p


@numba.njit(cache=True)
def _p1(t: np.float32) -> np.float32:
    """erf_p1, main.bend line 1138, on [1.25, 1.75) with t = a - 1.5."""
    p = _hm(P17, t, -P18)
    p = _hp(P16, t, p)
    p = _hm(P15, t, p)
    p = _hm(P14, t, p)
    p = _hp(P13, t, p)
    p = _hm(P12, t, p)
    p = _hp(P11, t, p)
    p = _hm(P10, t, p)
    return K1 + p


@numba.njit(cache=True)
def _p2(t: np.float32) -> np.float32:
    """erf_p2, main.bend line 1142, on [1.75, 2.25) with t = a - 2."""
    p = _hm(P27, t, P28)
    p = _hp(P26, t, p)
    p = _hp(P25, t, p)
    p = _hm(P24, t, p)
    p = _hp(P23, t, p)
    p = _hm(P22, t, p)
    p = _hp(P21, t, p)
    p = _hm(P20, t, p)
    return K2 + p


@numba.njit(cache=True)
def _p3(t: np.float32) -> np.float32:
    """erf_p3, main.bend line 1146, on [2.25, 2.75) with t = a - 2.5."""
    p = _hm(P36, t, P37)
    p = _hp(P35, t, p)
    p = _hm(P34, t, p)
    p = _hp(P33, t, p)
    p = _hm(P32, t, p)
    p = _hp(P31, t, p)
    p = _hp(P30, t, p)
    return K3 + p


@numba.njit(cache=True)
def _p4(t: np.float32) -> np.float32:
    """erf_p4, main.bend line 1150, on [2.75, 3.25) with t = a - 3."""
    p = _hm(P46, t, P47)
    p = _hp(P45, t, p)
    p = _hm(P44, t, p)
    p = _hp(P43, t, p)
    p = _hm(P42, t, p)
    p = _hp(P41, t, p)
    p = _hp(P40, t, p)
    return K4 + p


@numba.njit(cache=True)
def _p5(t: np.float32) -> np.float32:
    """erf_p5, main.bend line 1154, on [3.25, 3.92) with t = a - 3.5."""
    p = _hm(P56, t, P57)
    p = _hp(P55, t, p)
    p = _hm(P54, t, p)
    p = _hp(P53, t, p)
    p = _hm(P52, t, p)
    p = _hp(P51, t, p)
    p = _hm(P50, t, p)
    return K5 + p


@numba.njit(cache=True)
def _sign(x: np.float32, e: np.float32) -> np.float32:
    """erf_sign, main.bend line 1157: pick(x < 0, -e, e)."""
    return -e if x < _ZERO else e


@numba.njit(cache=True)
def erf32(x: np.float32) -> np.float32:
    """The seed's erf on one float32 (erf, main.bend line 1197): pieces chosen top-down on a = |x| (erf_top,
    erf_i5 .. erf_i0, lines 1160-1195); see the module docstring."""
    a = abs(x)
    if a >= B_TOP:
        return _sign(x, _ONE)
    if a >= B5:
        return _sign(x, _p5(a - C5))
    if a >= B4:
        return _sign(x, _p4(a - C4))
    if a >= B3:
        return _sign(x, _p3(a - C3))
    if a >= B2:
        return _sign(x, _p2(a - C2))
    if a >= B1:
        return _sign(x, _p1(a - C1))
    if a >= B_SMALL:
        return _sign(x, _p0(a - C0))
    return _small(x)


@numba.njit(cache=True, parallel=True)
def erf_into(xs: F, out: F) -> None:
    """out[i] = erf32(xs[i]) over flat float32 arrays (independent outputs, so prange)."""
    for i in numba.prange(xs.size):
        out[i] = erf32(xs[i])


def erf(xs: npt.ArrayLike) -> F:
    """The seed's erf element-wise over a float32 array (any shape); returns a new float32 array."""
    x = np.ascontiguousarray(xs, dtype=np.float32)
    out = np.empty_like(x)
    erf_into(x.reshape(-1), out.reshape(-1))
    return out


@numba.njit(cache=True)
def erf_piece32(x: np.float32) -> int:
    """The piece erf32 takes for x: 7 (a >= 3.92), 6..1 (erf_p5 .. erf_p0), 0 (erf_small, NaN included)."""
    a = abs(x)
    if a >= B_TOP:
        return 7
    if a >= B5:
        return 6
    if a >= B4:
        return 5
    if a >= B3:
        return 4
    if a >= B2:
        return 3
    if a >= B1:
        return 2
    if a >= B_SMALL:
        return 1
    return 0


@numba.njit(cache=True, parallel=True)
def _piece_into(xs: F, out: npt.NDArray[np.int8]) -> None:
    for i in numba.prange(xs.size):
        out[i] = erf_piece32(xs[i])


def erf_piece(x: npt.ArrayLike) -> npt.NDArray[np.int8]:
    """The piece index (0..7, see the module docstring) each input takes, as an int8 array of x's shape."""
    xa = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(xa.shape, dtype=np.int8)
    _piece_into(xa.reshape(-1), out.reshape(-1))
    return out


# ---------------------------------------------------------------------------------------------------------------
# plain version: the same operations on numpy float32 scalars (each operation rounded once to float32)
# ---------------------------------------------------------------------------------------------------------------

def _horner_plain(t: np.float32, first: np.float32, steps: tuple[tuple[bool, np.float32], ...]) -> np.float32:
    """Horner from the innermost value `first` outwards; each step (positive, c) is c + t*s or (t*s) - c."""
    s = first
    for pos, c in steps:
        ts = np.float32(t * s)
        s = np.float32(c + ts) if pos else np.float32(ts - c)
    return s


_SMALL_STEPS = ((False, S5), (True, S4), (False, S3), (True, S2), (False, S1), (True, S0))
# (innermost value, steps, K, centre) for pieces 1..6
_PIECES: tuple[tuple[np.float32, tuple[tuple[bool, np.float32], ...], np.float32, np.float32], ...] = (
    (np.float32(-P08), ((True, P07), (True, P06), (False, P05), (True, P04), (True, P03), (False, P02),
                        (True, P01), (True, P00)), K0, C0),
    (np.float32(-P18), ((False, P17), (True, P16), (False, P15), (False, P14), (True, P13), (False, P12),
                        (True, P11), (False, P10)), K1, C1),
    (P28, ((False, P27), (True, P26), (True, P25), (False, P24), (True, P23), (False, P22), (True, P21),
           (False, P20)), K2, C2),
    (P37, ((False, P36), (True, P35), (False, P34), (True, P33), (False, P32), (True, P31), (True, P30)), K3, C3),
    (P47, ((False, P46), (True, P45), (False, P44), (True, P43), (False, P42), (True, P41), (True, P40)), K4, C4),
    (P57, ((False, P56), (True, P55), (False, P54), (True, P53), (False, P52), (True, P51), (False, P50)), K5, C5),
)


def erf_piece_plain(x: np.float32) -> int:
    """erf_piece32 on a numpy float32 scalar."""
    a = np.abs(np.float32(x))
    for k, b in zip((7, 6, 5, 4, 3, 2, 1), (B_TOP, B5, B4, B3, B2, B1, B_SMALL)):
        if a >= b:
            return k
    return 0


def erf_plain(x: np.float32) -> np.float32:
    """The seed's erf (main.bend lines 1122-1199) on one numpy float32 scalar, the same operations as erf32."""
    x = np.float32(x)
    k = erf_piece_plain(x)
    if k == 0:
        with np.errstate(invalid="ignore"):  # NaN in, NaN out, quietly (as the compiled kernel)
            z = np.float32(x * x)
            p = _horner_plain(z, S6, _SMALL_STEPS)
            return np.float32(x + np.float32(x * p))
    if k == 7:
        e = _ONE
    else:
        first, steps, kk, c = _PIECES[k - 1]
        t = np.float32(np.abs(x) - c)
        e = np.float32(kk + _horner_plain(t, first, steps))
    return np.float32(-e) if x < _ZERO else e
