"""Element-wise activations (main.bend lines 737-761 and 1046-1217): each value f(x) and each input gradient d(dy, v)
as the seed writes them, every operation rounded once to float32 in the seed's order (no fused multiply-add: numba
without fastmath never contracts), exp and tanh impl.kernels.libm's exp32 / tanh32 (impl's portable functions unless
BENDTORCH_LIBM=clib selects the C library's expf / tanhf).

    ReLU     f = x unless x < 0 (relu(-0) = -0, relu(NaN) = NaN)       d(dy, y) = +0 where y <= 0, else dy
    Sigmoid  f = 1 / (1 + exp(-x))                                     d(dy, y) = (dy * (1 - y)) * y
    Tanh     f = tanh(x)                                               d(dy, y) = dy * (1 - y*y)
    SiLU     f = x / (1 + exp(-x))                                     d(dy, x) = (dy*s) * (1 + x*(1 - s)), s = sigmoid(x)
    GELU     f = (0.5*x) * (1 + tanh(inner)),
             inner = 0.7978845608028654 * (x + 0.044715 * ((x*x)*x))   d(dy, x): see `gelu_d`
    GELUErf  f = (x*0.5) * (1 + erf(x * 0.7071067811865476))           d(dy, x) = dy * (cdf + x*pdf)

ReLU, Sigmoid and Tanh save their output (ActOut, line 749), so d takes y; SiLU, GELU and GELUErf save their input
(ActIn, line 1052), so d takes x. The constants are np.float32 of the seed's decimal literals; the seed's constant
product (3.0 * 0.044715 : F32) (line 1098) is rounded once to float32, as the seed computes it.

The loops (`act_fwd`, `act_bwd`) are flat over the n*c numbers, in index order; each output depends on its own
input only, so they run under prange. The activation is chosen by a code or a name of the table `ACTS`, impl's half
of the activations' records (bendtorch.records.ops.ACTIVATIONS: name, code, saved value, the stem of the kernels
here); any other raises. Each activation has its own copy of the loops, made from the records (`_loop`: a loop with
the activation's kernel bound in), so a command compiles only the kernels of the activations it runs. numba's
dispatch over the codes (`act_v`, `act_d`, and `act_v_e`, `act_d_e` for the activations computed from exp(-x)) is a
chain of links generated from the records, one per code. So a new activation is its kernels and twins here, its
formulas in the oracle and its record, and no branch or loop to write. The plain twins (`act_fwd_plain`,
`act_bwd_plain`) compute the same expressions with numpy float32 array operations (one rounding each) and the same
functions through `impl.kernels.libm`.

Every kernel is compiled with error_model="numpy": a float division by zero gives the IEEE infinity or NaN, as the
seed's F32 division does, instead of numba's default ZeroDivisionError (same bits otherwise).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, cast

import numba
import numpy as np
import numpy.typing as npt

from bendtorch.impl.kernels.serial import renamed_copy, sized

from bendtorch.impl.kernels import libm
from bendtorch.impl.kernels.erf import erf32, erf_plain
from bendtorch.records.ops import ACTIVATIONS, Act, OpRecord

F = npt.NDArray[np.float32]
F32 = np.float32

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_NEG_HALF = np.float32(-0.5)                       # F32.neg(0.5), line 1213
_SQRT_2_OVER_PI = np.float32(0.7978845608028654)   # lines 1089, 1098
_GELU_A = np.float32(0.044715)                     # line 1089
_GELU_3A = np.float32(np.float32(3.0) * _GELU_A)   # (3.0 * 0.044715 : F32), line 1098, rounded once
_INV_SQRT2 = np.float32(0.7071067811865476)        # lines 1207, 1210
_INV_SQRT_2PI = np.float32(0.3989422804014327)     # line 1213


# ---------------------------------------------------------------------------------------------------------------
# the scalar functions, forward and backward side by side
# ---------------------------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def relu_v(x: np.float32) -> np.float32:
    """relu_v, main.bend line 754: pick(x < 0, 0, x)."""
    return _ZERO if x < _ZERO else x


@numba.njit(cache=True, error_model="numpy")
def relu_d(dy: np.float32, y: np.float32) -> np.float32:
    """relu_d, line 757: pick(y <= 0, 0, dy) (PyTorch's threshold_backward: NaN passes)."""
    return _ZERO if y <= _ZERO else dy


@numba.njit(cache=True, error_model="numpy", inline="always")
def _sigmoid_e(e: np.float32) -> np.float32:
    """sigmoid given e = exp(-x): 1 / (1 + e)."""
    return _ONE / (_ONE + e)


@numba.njit(cache=True, error_model="numpy")
def sigmoid_v(x: np.float32) -> np.float32:
    """sigmoid_v, line 1055: 1 / (1 + exp(-x))."""
    return _sigmoid_e(libm.exp32(-x))


@numba.njit(cache=True, error_model="numpy")
def sigmoid_v_e(x: np.float32, e: np.float32) -> np.float32:
    """sigmoid given x and e = exp(-x): 1 / (1 + e) (_map_exp_neg's block form)."""
    return _sigmoid_e(e)


@numba.njit(cache=True, error_model="numpy")
def sigmoid_d(dy: np.float32, y: np.float32) -> np.float32:
    """sigmoid_d, line 1059: (dy * (1 - y)) * y."""
    return (dy * (_ONE - y)) * y


@numba.njit(cache=True, error_model="numpy")
def tanh_v(x: np.float32) -> np.float32:
    """tanh_v, line 1065: tanhf(x)."""
    return np.float32(libm.tanh32(x))


@numba.njit(cache=True, error_model="numpy")
def tanh_d(dy: np.float32, y: np.float32) -> np.float32:
    """tanh_d, line 1068: dy * (1 - (y*y))."""
    return dy * (_ONE - y * y)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _silu_e(x: np.float32, e: np.float32) -> np.float32:
    """SiLU given e = exp(-x): x / (1 + e)."""
    return x / (_ONE + e)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _silu_d_e(dy: np.float32, x: np.float32, e: np.float32) -> np.float32:
    """SiLU's gradient given e = exp(-x): s = 1 / (1 + e); (dy*s) * (1 + (x*(1 - s)))."""
    s = _sigmoid_e(e)
    return (dy * s) * (_ONE + x * (_ONE - s))


@numba.njit(cache=True, error_model="numpy")
def silu_v(x: np.float32) -> np.float32:
    """silu_v, line 1076: x / (1 + exp(-x)) (PyTorch's CPU kernel)."""
    return _silu_e(x, libm.exp32(-x))


@numba.njit(cache=True, error_model="numpy")
def silu_d(dy: np.float32, x: np.float32) -> np.float32:
    """silu_d, line 1079: s = sigmoid_v(x); (dy*s) * (1 + (x*(1 - s)))."""
    return _silu_d_e(dy, x, libm.exp32(-x))


@numba.njit(cache=True, error_model="numpy")
def silu_v_e(x: np.float32, e: np.float32) -> np.float32:
    """SiLU given x and e = exp(-x): x / (1 + e) (_map_exp_neg's block form)."""
    return _silu_e(x, e)


@numba.njit(cache=True, error_model="numpy")
def silu_d_e(dy: np.float32, x: np.float32, e: np.float32) -> np.float32:
    """SiLU's gradient given e = exp(-x) (_zip_exp_neg's block form)."""
    return _silu_d_e(dy, x, e)


@numba.njit(cache=True, error_model="numpy")
def gelu_inner(x: np.float32) -> np.float32:
    """gelu_inner, line 1088: 0.7978845608028654 * (x + (0.044715 * ((x*x)*x)))."""
    return _SQRT_2_OVER_PI * (x + _GELU_A * ((x * x) * x))


@numba.njit(cache=True, error_model="numpy")
def gelu_v(x: np.float32) -> np.float32:
    """gelu_v, line 1091: (0.5*x) * (1 + tanh(gelu_inner(x)))."""
    return (_HALF * x) * (_ONE + libm.tanh32(gelu_inner(x)))


@numba.njit(cache=True, error_model="numpy")
def gelu_d(dy: np.float32, x: np.float32) -> np.float32:
    """gelu_d, line 1094: th = tanh(inner); left = 0.5*x; dleft = 0.5*(1 + th);
    dright = (left*(1 - th*th)) * (0.7978845608028654 * (1 + (3*0.044715)*(x*x))); dy * (dleft + dright)."""
    th = libm.tanh32(gelu_inner(x))
    left = _HALF * x
    dleft = _HALF * (_ONE + th)
    dright = (left * (_ONE - th * th)) * (_SQRT_2_OVER_PI * (_ONE + _GELU_3A * (x * x)))
    return dy * (dleft + dright)


@numba.njit(cache=True, error_model="numpy")
def gelu_erf_cdf(x: np.float32) -> np.float32:
    """gelu_erf_cdf, line 1206: 0.5 * (1 + erf(x * 0.7071067811865476))."""
    return _HALF * (_ONE + erf32(x * _INV_SQRT2))


@numba.njit(cache=True, error_model="numpy")
def gelu_erf_v(x: np.float32) -> np.float32:
    """gelu_erf_v, line 1209: (x*0.5) * (1 + erf(x * 0.7071067811865476)) (PyTorch's CPU order)."""
    return (x * _HALF) * (_ONE + erf32(x * _INV_SQRT2))


@numba.njit(cache=True, error_model="numpy")
def gelu_erf_d(dy: np.float32, x: np.float32) -> np.float32:
    """gelu_erf_d, line 1212: pdf = 0.3989422804014327 * exp((x*x) * -0.5); dy * (cdf(x) + (x*pdf))."""
    pdf = _INV_SQRT_2PI * libm.exp32((x * x) * _NEG_HALF)
    return dy * (gelu_erf_cdf(x) + x * pdf)


# ---------------------------------------------------------------------------------------------------------------
# numba's dispatch over the codes: a chain of small functions generated from the records (the end of this module),
# one link per code, each calling its activation's kernel, inlined into the functions below (one if-chain each);
# those, and the loops, are what numba caches
# ---------------------------------------------------------------------------------------------------------------

# numba's cache knows a compiled function by its module's source and its own bytecode, not by the globals it reads:
# the dispatch and the loops read the records' table (the chains, EXP_NEG_*), so their cache entries carry the
# table's digest in their name (as impl.kernels.serial's twins carry "_serial"), and code compiled for another table
# (a record added, moved or changed) is never loaded.
_TABLE = hashlib.sha256(repr([(r.name, r.act) for r in ACTIVATIONS]).encode()).hexdigest()[:12]


def _by_table(f: Any) -> Any:
    f.__qualname__ = f"{f.__qualname__}_{_TABLE}"
    return f


@numba.njit(cache=True, error_model="numpy")
@_by_table
def act_v(op: int, x: np.float32) -> np.float32:
    """The activation of code op on one number: its record's kernel (a test checks that each code reaches its own
    kernel; any other code raises)."""
    return _V(op, (x,))  # type: ignore[no-any-return]


@numba.njit(cache=True, error_model="numpy")
@_by_table
def act_d(op: int, dy: np.float32, v: np.float32) -> np.float32:
    """The input gradient of code op on one number; v is the saved output (ActOut) or input (ActIn)."""
    return _D(op, (dy, v))  # type: ignore[no-any-return]


@numba.njit(cache=True, error_model="numpy")
@_by_table
def act_v_e(op: int, x: np.float32, e: np.float32) -> np.float32:
    """The activation of code op given x and e = exp(-x), for the codes whose record says so (exp_neg)."""
    return _V_E(op, (x, e))  # type: ignore[no-any-return]


@numba.njit(cache=True, error_model="numpy")
@_by_table
def act_d_e(op: int, dy: np.float32, x: np.float32, e: np.float32) -> np.float32:
    """The input gradient of code op given dy, x and e = exp(-x), for the codes whose record says so (exp_neg)."""
    return _D_E(op, (dy, x, e))  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------------------
# the loops (Ew.map / Ew.zip, lines 166-196): flat, index order, independent outputs; one copy per activation
# ---------------------------------------------------------------------------------------------------------------

# Each loop below is a template: `_loop` (at the end of this module) compiles a copy of it for each activation, with
# the global name _F bound to that activation's kernel. A loop taking the activation's code at run time compiles every
# activation's kernels at its first call (2.9 s of a cold start's compiling, where SiLU's own loops take about 0.5);
# a copy per activation compiles only the kernels of the activations a command uses.
_F: Any = None  # in each activation's copy of a loop: its kernel (f, d, or their forms from exp(-x))

_BLOCK = 4096  # numbers per block of the exp(-x) form: one libm.exp_array call each, blocks under prange


@numba.njit(cache=True, error_model="numpy", inline="always")
def _exp_neg_block(x: F, out: F, b: int) -> tuple[int, int]:
    """out[t] = exp(-x[t]) over block b (numbers lo..hi-1, returned), by libm.exp_array."""
    lo = b * _BLOCK
    hi = min(lo + _BLOCK, x.size)
    u0 = np.uint64(lo)  # unsigned indices: signed ones have LLVM use gathers and scatters (FINDINGS)
    for tt in range(hi - lo):
        t = u0 + np.uint64(tt)
        out[t] = -x[t]
    libm.exp_array(out[lo:hi], out[lo:hi])
    return lo, hi


def _map(x: F, y: F) -> None:
    """y[t] = f(x[t]) over flat arrays (Ew.map, line 182)."""
    for t in numba.prange(x.size):
        y[t] = _F(x[t])


def _map_exp_neg(x: F, y: F) -> None:
    """y[t] = f(x[t]) for an activation of x and exp(-x) (Sigmoid, SiLU): exp(-x) of a block at once (libm.exp_array:
    exp32's bits, vectorised) into y, then f from x and it: the same operations on each number as f(x[t])."""
    n = x.size
    for b in numba.prange((n + _BLOCK - 1) // _BLOCK):
        lo, hi = _exp_neg_block(x, y, b)
        u0 = np.uint64(lo)
        for tt in range(hi - lo):
            t = u0 + np.uint64(tt)
            y[t] = _F(x[t], y[t])


def _zip(dy: F, v: F, dx: F) -> None:
    """dx[t] = d(dy[t], v[t]) over flat arrays (Ew.zip, line 193)."""
    for t in numba.prange(dy.size):
        dx[t] = _F(dy[t], v[t])


def _zip_exp_neg(dy: F, v: F, dx: F) -> None:
    """dx[t] = d(dy[t], v[t]) for a gradient of x and exp(-x) (SiLU's): exp(-x) a block at a time into dx first,
    as _map_exp_neg does."""
    n = dy.size
    for b in numba.prange((n + _BLOCK - 1) // _BLOCK):
        lo, hi = _exp_neg_block(v, dx, b)
        u0 = np.uint64(lo)
        for tt in range(hi - lo):
            t = u0 + np.uint64(tt)
            dx[t] = _F(dy[t], v[t], dx[t])


def act_fwd(op: int | str, x: F) -> F:
    """The activation op (a code or a name of ACTS) over a float32 array of any shape; a new array."""
    k = act_kernel(op)
    xc = np.ascontiguousarray(x, dtype=F32)
    y = np.empty_like(xc)
    k.fwd_into(xc.reshape(-1), y.reshape(-1))
    return y


def act_bwd(op: int | str, dy: F, v: F) -> F:
    """The input gradient of op, from dy and the saved v (same shape); a new array."""
    k = act_kernel(op)
    dyc = np.ascontiguousarray(dy, dtype=F32)
    vc = np.ascontiguousarray(v, dtype=F32)
    if dyc.shape != vc.shape:
        raise ValueError(f"{k.name}: dy {dyc.shape} and the saved value {vc.shape} differ in shape")
    dx = np.empty_like(dyc)
    k.bwd_into(dyc.reshape(-1), vc.reshape(-1), dx.reshape(-1))
    return dx


# ---------------------------------------------------------------------------------------------------------------
# plain twins: numpy float32 array operations (one rounding each), the same functions through libm
# ---------------------------------------------------------------------------------------------------------------

def lib_map(f: Callable[[np.float32], np.float32], a: F) -> F:
    """f (a float32 function from impl.kernels.libm, or erf_plain) on every number of a, one call per
    number: the plain twins' exp, log, tanh, erf."""
    flat = np.ascontiguousarray(a, dtype=F32).reshape(-1)
    out = np.array([f(v) for v in flat], dtype=F32)
    return out.reshape(np.shape(a))


def sigmoid_v_plain(x: F) -> F:
    return _ONE / (_ONE + lib_map(libm.expf, -x))


def _inner_plain(x: F) -> F:
    return _SQRT_2_OVER_PI * (x + _GELU_A * ((x * x) * x))


def _cdf_plain(x: F) -> F:
    return _HALF * (_ONE + lib_map(erf_plain, x * _INV_SQRT2))


def relu_v_plain(x: F) -> F:
    return np.where(x < _ZERO, _ZERO, x).astype(F32)


def relu_d_plain(dy: F, y: F) -> F:
    return np.where(y <= _ZERO, _ZERO, dy).astype(F32)


def sigmoid_d_plain(dy: F, y: F) -> F:
    return (dy * (_ONE - y)) * y


def tanh_v_plain(x: F) -> F:
    return lib_map(libm.tanhf, x)


def tanh_d_plain(dy: F, y: F) -> F:
    return dy * (_ONE - y * y)


def silu_v_plain(x: F) -> F:
    return x / (_ONE + lib_map(libm.expf, -x))


def silu_d_plain(dy: F, x: F) -> F:
    s = sigmoid_v_plain(x)
    return cast(F, (dy * s) * (_ONE + x * (_ONE - s)))


def gelu_v_plain(x: F) -> F:
    return (_HALF * x) * (_ONE + lib_map(libm.tanhf, _inner_plain(x)))


def gelu_d_plain(dy: F, x: F) -> F:
    th = lib_map(libm.tanhf, _inner_plain(x))
    left = _HALF * x
    dleft = _HALF * (_ONE + th)
    dright = (left * (_ONE - th * th)) * (_SQRT_2_OVER_PI * (_ONE + _GELU_3A * (x * x)))
    return cast(F, dy * (dleft + dright))


def gelu_erf_v_plain(x: F) -> F:
    return (x * _HALF) * (_ONE + lib_map(erf_plain, x * _INV_SQRT2))


def gelu_erf_d_plain(dy: F, x: F) -> F:
    pdf = _INV_SQRT_2PI * lib_map(libm.expf, (x * x) * _NEG_HALF)
    return dy * (_cdf_plain(x) + x * pdf)


def act_fwd_plain(op: int | str, x: F) -> F:
    """act_fwd's expressions as numpy float32 array operations (the entry's plain twin)."""
    k = act_kernel(op)
    with np.errstate(all="ignore"):
        return k.plain_v(np.asarray(x, dtype=F32))


def act_bwd_plain(op: int | str, dy: F, v: F) -> F:
    """act_bwd's expressions as numpy float32 array operations (the entry's plain twin)."""
    k = act_kernel(op)
    with np.errstate(all="ignore"):
        return k.plain_d(np.asarray(dy, dtype=F32), np.asarray(v, dtype=F32))


# ---------------------------------------------------------------------------------------------------------------
# the table and the dispatch, generated from the activations' records (bendtorch.records.ops.ACTIVATIONS)
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ActKernel:
    """One activation in impl: its name (the layer constructor's), its code (numba's dispatch in act_v / act_d),
    whether its backward pass reads the saved output (ActOut, main.bend line 749) or the input (ActIn, line 1052),
    its scalar kernels, their plain twins, and the seed's lines; all from its record."""

    name: str
    code: int
    saves_output: bool
    v: Callable[..., Any]
    d: Callable[..., Any]
    plain_v: Callable[[F], F]
    plain_d: Callable[[F, F], F]
    seed_lines: str
    exp_neg: tuple[bool, bool]  # f, d a function of x and exp(-x) (act_v_e, act_d_e)?
    fwd_into: Callable[[F, F], None]      # its loops over flat arrays: _map or _map_exp_neg with its f
    bwd_into: Callable[[F, F, F], None]   # _zip or _zip_exp_neg with its d


def _act(r: OpRecord) -> Act:
    assert r.act is not None, f"{r.name}: an activation's record has its Act"
    return r.act


def _loop(template: Callable[..., None], stem: str, kernel: Any) -> Any:
    """The loop `template` compiled for one activation: a copy of it whose global _F is `kernel`, named for the
    activation (a name of its own in numba's cache) and the records' table (_by_table), parallel with its serial
    twin (impl.kernels.serial.sized)."""
    f = _by_table(renamed_copy(template, f"_{stem}", _F=kernel))
    return sized(numba.njit(cache=True, parallel=True, error_model="numpy")(f))


def _kernels(r: OpRecord) -> ActKernel:
    """impl's half of an activation's record: its kernels and twins, found in this module by the record's stem, and
    its loops, made here and kept as module globals too (`act_fwd_into_{stem}`, `act_bwd_into_{stem}`: the names
    impl.kernels.warm's plans give them)."""
    a = _act(r)
    g = globals()
    v, d = g[f"{a.kernel}_v"], g[f"{a.kernel}_d"]
    fwd = _loop(_map_exp_neg, a.kernel, g[f"{a.kernel}_v_e"]) if a.exp_neg[0] else _loop(_map, a.kernel, v)
    bwd = _loop(_zip_exp_neg, a.kernel, g[f"{a.kernel}_d_e"]) if a.exp_neg[1] else _loop(_zip, a.kernel, d)
    g[f"act_fwd_into_{a.kernel}"], g[f"act_bwd_into_{a.kernel}"] = fwd, bwd
    return ActKernel(r.name, a.code, a.saves_output, v, d, g[f"{a.kernel}_v_plain"], g[f"{a.kernel}_d_plain"],
                     a.seed_lines, a.exp_neg, fwd, bwd)


ACTS: tuple[ActKernel, ...] = tuple(_kernels(r) for r in ACTIVATIONS)
NAMES = tuple(k.name for k in ACTS)
EXP_NEG_FWD = np.array([k.exp_neg[0] for k in ACTS])
EXP_NEG_BWD = np.array([k.exp_neg[1] for k in ACTS])
SAVES_OUTPUT = tuple(k.saves_output for k in ACTS)
_BY_CODE = {k.code: k for k in ACTS}
_BY_NAME = {k.name: k for k in ACTS}
if [k.code for k in ACTS] != list(range(len(ACTS))):
    raise ValueError(f"the activations' codes must be 0, 1, ... in the records' order: {[k.code for k in ACTS]}")


def act_kernel(op: int | str) -> ActKernel:
    """The entry of an activation code or name; a ValueError for any other."""
    k = _BY_NAME.get(op) if isinstance(op, str) else _BY_CODE.get(op)
    if k is None:
        raise ValueError(f"unknown activation {op!r}; the table has {', '.join(NAMES)}")
    return k


def _unknown(message: str) -> Any:
    """The end of a dispatch chain: any code that reached it is unknown."""
    @numba.njit(error_model="numpy", inline="always")
    def unknown(op: int, args: Any) -> Any:
        if op >= 0 or op < 0:      # always: the return below only gives the chain its type (the last argument's)
            raise ValueError(message)
        return args[-1]
    return unknown


def _link(code: int, kernel: Any, rest: Any) -> Any:
    """One link of a dispatch chain: the kernel on the arguments (a tuple) for its code, the rest of the chain for
    any other. Inlined into its caller by numba (inline="always"): the chain compiles as one function, the if-chain
    it stands for."""
    @numba.njit(error_model="numpy", inline="always")
    def link(op: int, args: Any) -> Any:
        if op == code:
            return kernel(*args)
        return rest(op, args)
    return link


def _chain(form: str, what: str, which: Callable[[Act], bool] = lambda a: True) -> Any:
    """The dispatch over the codes of the activations `which` selects: the kernel `{stem}{form}` of each, tried in
    code order, then the end that raises."""
    out = _unknown(what)
    for a in reversed([_act(r) for r in ACTIVATIONS]):
        if which(a):
            out = _link(a.code, globals()[f"{a.kernel}{form}"], out)
    return out


_V = _chain("_v", "act_v: unknown activation code")
_D = _chain("_d", "act_d: unknown activation code")
_V_E = _chain("_v_e", "act_v_e: not a function of exp(-x)", lambda a: a.exp_neg[0])
_D_E = _chain("_d_e", "act_d_e: not a function of exp(-x)", lambda a: a.exp_neg[1])
