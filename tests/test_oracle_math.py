"""The oracle's mathematics checked on its own, against references independent of its formulas: every layer's and
loss's gradient (and the combinators' on small compositions) against central finite differences in float64, the
element-wise functions, softmax and cross-entropy against mpmath at 50 digits, the optimizers against hand-written
closed forms, Dropout's mask against lowbias32 in pure Python ints, and every layer, loss and Adam step against
PyTorch's float64 autograd and optimizers. No float32 anywhere here: these are the oracle's own properties."""

from __future__ import annotations

import math
from typing import Any, Callable

import mpmath
import numpy as np
import pytest

import bendtorch.oracle as L
from bendtorch.impl.optim import CAdam, CAdamW, CAdamWBF16, CMomentum, CSGD, beta_ok
from bendtorch.impl.protocol import Layer
from bendtorch.oracle import funcs, hyper, mp
from bendtorch.oracle.layers import drop_mask, log_softmax, softmax
from bendtorch.oracle.optim import opt_at_step, opt_mat

F64 = np.float64

# Finite differences: the 4th-order central formula (-f(+2h) + 8 f(+h) - 8 f(-h) + f(-2h)) / 12h with h = 1e-3 has a
# truncation error of about h^4 |f^(5)| / 30 ~ 1e-13 and a rounding error of about 2^-53 |f| / h ~ 1e-12 on these
# O(1) inputs, so an analytic gradient right to 1e-7 (relative, or absolute near 0) passes and a slip in a formula
# (a missing term, a wrong sign, a transposition: an O(1) relative error) fails.
H = 1e-3
RTOL = 1e-7
ATOL = 1e-8


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def away_from_zero(a: np.ndarray[Any, Any], r: np.random.Generator, lo: float = 0.05) -> np.ndarray[Any, Any]:
    """Inputs at least lo from 0 (ReLU's kink), so the finite differences never straddle it."""
    s = np.where(a >= 0, 1.0, -1.0)
    return np.asarray(s * (np.abs(a) + lo), dtype=F64)


def leaves(v: Any) -> list[np.ndarray[Any, Any]]:
    """The float arrays of a structure of pairs, in order."""
    if isinstance(v, np.ndarray):
        return [v] if np.issubdtype(v.dtype, np.floating) else []
    if isinstance(v, tuple):
        return [a for x in v for a in leaves(x)]
    return []


def fd(f: Callable[[], float], a: np.ndarray[Any, Any], k: int) -> float:
    """d f / d a.flat[k], 4th-order central differences, a perturbed in place and restored."""
    flat = a.reshape(-1)
    x0 = flat[k]
    vals = []
    for step in (2 * H, H, -H, -2 * H):
        flat[k] = x0 + step
        vals.append(f())
    flat[k] = x0
    return (-vals[0] + 8 * vals[1] - 8 * vals[2] + vals[3]) / (12 * H)


def close(an: float, num: float, what: str) -> None:
    assert abs(an - num) <= ATOL + RTOL * abs(num), f"{what}: analytic {an!r}, finite differences {num!r}"


def check_layer(layer: Layer[Any, Any, Any, Any], p: Any, x: Any, seed: int = 0) -> None:
    """The gradient of sum(r * y) (r random, fixed) with respect to every float input and every parameter number,
    from bwd, against finite differences; bwd must also add into g rather than overwrite it."""
    r = rng(seed + 100)
    y0 = layer.fwd(p, x).y
    rs = [r.standard_normal(a.shape) for a in leaves(y0)]
    dy: Any = rs[0] if isinstance(y0, np.ndarray) else tuple(rs) if len(rs) == 2 else None
    assert dy is not None

    flat_p = np.array(layer.dump(p), dtype=F64)

    def objective() -> float:
        q = layer.load(layer.zeros(), flat_p, 0).p
        y = layer.fwd(q, x).y
        return float(sum(np.sum(a * b) for a, b in zip(leaves(y), rs)))

    f = layer.fwd(p, x)
    g = layer.zeros()
    g0 = np.array(layer.dump(g), dtype=F64)
    base = rng(seed + 7).standard_normal(g0.size)
    g = layer.load(g, base, 0).p           # a non-zero gradient to add into
    b = layer.bwd(f.p, f.s, dy, g)
    dg = np.array(layer.dump(b.g), dtype=F64) - base
    for k in range(flat_p.size):
        if layer.name.startswith("Dropout"):
            break                          # its "parameter" is a step counter, not a number with a gradient
        close(float(dg[k]), fd(objective, flat_p, k), f"{layer.name}: dP[{k}]")
    for i, (a, da) in enumerate(zip(leaves(x), leaves(b.dx))):
        for k in range(a.size):
            close(float(da.reshape(-1)[k]), fd(objective, a, k), f"{layer.name}: dx leaf {i} [{k}]")


def rand_params(layer: Layer[Any, Any, Any, Any], seed: int, scale: float = 0.5) -> Any:
    return layer.load(layer.zeros(), rng(seed).standard_normal(layer.count()) * scale, 0).p


# ---------------------------------------------------------------------------------------------------------------
# Layers: gradients against finite differences
# ---------------------------------------------------------------------------------------------------------------

N, I, O = 3, 4, 5


@pytest.mark.parametrize("make", [L.Linear, L.LinearFirst, L.LinearNB])
def test_linear_gradients(make: Callable[[int, int, int], Layer[Any, Any, Any, Any]]) -> None:
    lay = make(N, I, O)
    p = rand_params(lay, 1)
    x = rng(2).standard_normal((N, I))
    if make is L.LinearFirst:
        b = lay.bwd(p, lay.fwd(p, x).s, np.ones((N, O)), lay.zeros())
        assert np.all(b.dx == 0.0)         # LinearFirst's dX is zeros (main.bend line 710)
        check_layer(L.Linear(N, I, O), p, x)   # and its dP is Linear's, checked here through Linear
        lin = L.Linear(N, I, O)
        b2 = lin.bwd(p, lin.fwd(p, x).s, np.ones((N, O)), lin.zeros())
        assert all(np.array_equal(u, v) for u, v in zip(b.g, b2.g))
    else:
        check_layer(lay, p, x)


@pytest.mark.parametrize("name", list(funcs.ACTIVATIONS))
def test_activation_gradients(name: str) -> None:
    lay = L.Activation(name, N, O)
    x = away_from_zero(rng(3).standard_normal((N, O)) * 2.0, rng(4))
    check_layer(lay, None, x)


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
def test_softmax_gradients(name: str) -> None:
    lay = getattr(L, name)(N, O)
    check_layer(lay, None, rng(5).standard_normal((N, O)) * 3.0)


def test_norm_gradients() -> None:
    x = rng(6).standard_normal((N, O)) * 1.5 + 0.3
    rms = L.RMSNorm(N, O)
    check_layer(rms, 1.0 + rand_params(rms, 7), x)
    ln = L.LayerNorm(N, O, eps=1e-3)
    p = rand_params(ln, 8)
    check_layer(ln, L.LN(1.0 + p.g, p.b), x)


def test_embedding_gradient_and_repeats() -> None:
    emb = L.Embedding(5, 4, 3)
    p = rand_params(emb, 9)
    ids = np.array([2, 0, 2, 3, 2], dtype=np.int64)
    check_layer(emb, p, ids)
    f = emb.fwd(p, ids)
    assert np.array_equal(f.y, p[ids])
    b = emb.bwd(p, f.s, np.ones((5, 3)), emb.zeros())
    assert b.dx.shape == (0,) and np.array_equal(b.g[2], np.full(3, 3.0)) and np.all(b.g[1] == 0)
    with pytest.raises(ValueError, match="id 4"):
        emb.fwd(p, np.array([0, 1, 4, 0, 0], dtype=np.int64))


def test_dropout_gradient_is_its_mask() -> None:
    d = L.Dropout(N, O, 0.3, 11)
    check_layer(d, L.DropP(5), rng(12).standard_normal((N, O)))


# ---------------------------------------------------------------------------------------------------------------
# Combinators on small compositions
# ---------------------------------------------------------------------------------------------------------------


def test_seq_fork_both_mul_gradients() -> None:
    x = rng(13).standard_normal((N, I))
    seq = L.Seq(L.Linear(N, I, O), L.Seq(L.GELUErf(N, O), L.LayerNorm(N, O)))
    check_layer(seq, rand_params(seq, 14), x)
    fork = L.Seq(L.Fork(L.Linear(N, I, O), L.Seq(L.LinearNB(N, I, O), L.Tanh(N, O))), L.Mul2(N, O))
    check_layer(fork, rand_params(fork, 15), x)
    b1 = L.Both(L.Linear(N, I, O), L.Sigmoid(N, I))
    b2 = L.Both(L.SiLU(N, O), L.Linear(N, I, O))
    both = L.Seq(b1, b2)
    check_layer(both, rand_params(both, 16), (x, rng(17).standard_normal((N, I))))


def test_residual_gradient() -> None:
    res = L.Residual(L.Seq(L.Linear(N, O, O), L.GELU(N, O)))
    check_layer(res, rand_params(res, 18), rng(19).standard_normal((N, O)))


def test_tie_gradient_adds_both_uses() -> None:
    """Tied embeddings: Embedding(n, v, d) then Tanh then LinearNB(n, d, v) with the table as its weight. The
    finite differences move the one shared table, so they see both uses; bwd must add both gradients."""
    n, v, d = 4, 6, 3
    tie = L.Tie(L.Embedding(n, v, d), L.Tanh(n, d), L.LinearNB(n, d, v))
    p = rand_params(tie, 20)
    ids = np.array([1, 5, 1, 0], dtype=np.int64)
    check_layer(tie, p, ids)
    assert tie.count() == v * d


# ---------------------------------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------------------------------


def check_loss(loss: Any, y: np.ndarray[Any, Any], t: Any) -> None:
    lo = loss(y, t)
    for k in range(y.size):
        close(float(lo.dy.reshape(-1)[k]), fd(lambda: float(loss(y, t).loss), y, k), f"{loss.name} dy[{k}]")


def test_loss_gradients() -> None:
    y = rng(21).standard_normal((4, 5)) * 2.0
    lab = np.array([0, 4, 2, 2], dtype=np.int64)
    check_loss(L.CrossEntropy(4, 5), y, lab)
    check_loss(L.NLL(4, 5), y, lab)
    check_loss(L.MSE(4, 5), y, rng(22).standard_normal((4, 5)))


def test_cross_entropy_against_mpmath_on_confident_rows() -> None:
    """Rows whose loss is 1e-9 .. 1e-40: naive float64 log(sum exp) - z_y gives 0 for most of them; the oracle's
    log1p form must agree with 50-digit mpmath to a few float64 ulps (relative 1e-14 is ~2^-46)."""
    z = np.array([[0.0, -20.0, -25.0], [50.0, -40.0, 10.0], [3.0, 3.0 - 92.0, -1e3], [-7.5, -7.5, 1.0]])
    lab = np.array([0, 0, 0, 1], dtype=np.int64)
    ce = L.CrossEntropy(4, 3)
    lo = ce(z, lab)
    rows = [mp.ce_row_mp(z[i], int(lab[i])) for i in range(4)]
    assert rows[1] < 1e-17 and rows[2] < 1e-39           # the naive form would return 0.0 for these
    want = float(mpmath.fsum(rows)) / 4
    assert abs(lo.loss - want) <= 1e-14 * abs(want)
    for i in range(4):                                     # each row alone
        one = L.CrossEntropy(1, 3)(z[i:i + 1], lab[i:i + 1])
        assert abs(one.loss - rows[i]) <= 1e-14 * abs(rows[i]), (i, one.loss, rows[i])
        sm = mp.softmax_mp(z[i])
        with mpmath.workdps(mp.row_dps(z[i])):
            s_rest = float(mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for j, v in enumerate(z[i]) if j != lab[i])
                           / mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for v in z[i]))
        want_dy = sm.copy()
        want_dy[lab[i]] = -s_rest                        # p_y - 1 without the cancellation
        assert np.allclose(one.dy[0], want_dy, rtol=1e-14, atol=0.0), (i, one.dy[0], want_dy)


def test_softmax_and_log_softmax_against_mpmath() -> None:
    z = np.array([[0.0, -30.0, 5.0, 5.0, -700.0], [1e-3, 2e-3, -1e-3, 0.0, 4e-3]])
    for i in range(2):
        want = mp.softmax_mp(z[i])
        assert np.allclose(softmax(z)[i], want, rtol=1e-14, atol=0.0)
        with mpmath.workdps(50):
            lse = mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for v in z[i]))
            wl = np.array([float(mpmath.mpf(v) - lse) for v in z[i]])
        assert np.allclose(log_softmax(z)[i], wl, rtol=1e-14, atol=0.0)


# ---------------------------------------------------------------------------------------------------------------
# Element-wise functions against mpmath
# ---------------------------------------------------------------------------------------------------------------

XS = np.array([-40.0, -12.5, -6.0, -1.0, -0.3, -1e-9, 0.0, 2e-7, 0.5, 1.7, 4.0, 9.0, 30.0])


@pytest.mark.parametrize("name", list(funcs.ACTIVATIONS))
def test_activation_values_against_mpmath(name: str) -> None:
    """Relative 1e-13 (~2^-43) even in the tails where the textbook forms cancel (gelu(-12.5) ~ 1e-68): the
    rewritings in oracle/funcs.py keep float64's precision. (GELU's sqrt(2/pi) is float64's, 2^-53 relative, and
    u = 30 (x + ...) amplifies an input's relative error by ~|du/dx x / u| < 3: still far under 1e-13.)"""
    f, _, f_mp = funcs.ACTIVATIONS[name]
    got = f(XS.copy())
    with mpmath.workdps(2500):      # the textbook forms cancel down to ~1e-2000 at x = -40: keep every digit
        want = np.array([float(f_mp(mpmath.mpf(float(x)))) for x in XS])
    for x, g_, w in zip(XS, got, want):
        assert abs(g_ - w) <= 1e-13 * abs(w), (name, x, g_, w)


def test_erf_against_mpmath() -> None:
    x = np.concatenate([np.linspace(-6, 6, 101), [1e-30, -3.9, 3.9192, 0.84375]])
    assert np.allclose(funcs.erf(x), mp.erf_mp_array(x), rtol=4e-16, atol=0.0)
    # erfc in the tail, where 1 - erf loses everything: relative 1e-14
    t = np.array([3.0, 6.0, 12.0, 26.0])
    with mpmath.workdps(50):
        want = np.array([float(mpmath.erfc(mpmath.mpf(v))) for v in t])
    assert np.allclose(funcs.erfc(t), want, rtol=1e-14, atol=0.0)


# ---------------------------------------------------------------------------------------------------------------
# Optimizers against closed forms
# ---------------------------------------------------------------------------------------------------------------


def run_steps(cfg: Any, w0: np.ndarray[Any, Any], gs: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    w = w0.copy()
    st: Any = L.state_new(cfg, lambda: np.zeros_like(w0))
    for t, g in enumerate(gs, start=1):
        r = opt_mat(opt_at_step(cfg, t), w, g.copy(), st)
        assert np.all(r.g == 0.0)
        w, st = r.p, r.st
    return w


W0 = np.array([[0.5, -1.25, 2.0, 0.0]])
GS = [np.array([[0.3, -0.7, 1.1, -2.0]]), np.array([[-0.2, 0.4, 0.9, 0.01]]), np.array([[1.0, 0.5, -0.5, 3.0]])]


def test_sgd_and_momentum_closed_forms() -> None:
    lr, mu = 0.1, 0.9                       # the decimals the user wrote, read back from the float32 fields
    w = run_steps(CSGD(np.float32(lr)), W0, GS[:2])
    assert np.allclose(w, W0 - lr * (GS[0] + GS[1]), rtol=1e-15, atol=1e-16)
    w = run_steps(CMomentum(np.float32(lr), np.float32(mu)), W0, GS)
    m1, m2 = GS[0], mu * GS[0] + GS[1]
    m3 = mu * m2 + GS[2]
    assert np.allclose(w, W0 - lr * (m1 + m2 + m3), rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_adamw_closed_forms(decoupled: bool) -> None:
    """Three steps of the textbook Adam (Kingma & Ba; Loshchilov & Hutter for AdamW), written out with
    m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t), in float64 with the decimal hyperparameters."""
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    f = np.float32
    cls = CAdamW if decoupled else CAdam
    cfg = cls(f(lr), f(b1), f(b2), f(eps), f(wd), f(0.1), f(0.001))
    got = run_steps(cfg, W0, GS)
    w, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for t, g in enumerate(GS, start=1):
        if decoupled:
            w = w * (1 - lr * wd)
        else:
            g = g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    assert np.allclose(got, w, rtol=1e-13, atol=1e-15), (got, w)
    # the first step is w - lr g / (|g| + eps) whatever the betas (bias corrections cancel)
    one = run_steps(cfg, W0, GS[:1])
    g1 = GS[0] if decoupled else GS[0] + wd * W0
    w1 = (W0 * (1 - lr * wd) if decoupled else W0) - lr * g1 / (np.abs(g1) + eps)
    assert np.allclose(one, w1, rtol=1e-14, atol=1e-16)


def test_bf16_config_is_exact_adamw() -> None:
    f = np.float32
    a = run_steps(CAdamW(f(0.01), f(0.9), f(0.999), f(1e-8), f(0.1), f(0.1), f(0.001)), W0, GS)
    b = run_steps(CAdamWBF16(f(0.01), f(0.9), f(0.999), f(1e-8), f(0.1), f(0.1), f(0.001), True), W0, GS)
    assert np.array_equal(a, b)


def test_hyperparameters_are_the_written_decimals() -> None:
    assert hyper.dec(np.float32(0.9)) == 0.9 and hyper.dec(np.float32(1e-8)) == 1e-8
    assert hyper.one_minus(np.float32(0.999)) == 0.001 and hyper.one_minus(np.float32(0.9)) == 0.1
    assert hyper.one_minus_pow(np.float32(0.9), 3) == 0.271
    assert hyper.one_minus_pow(np.float32(0.999), 2) == 0.001999
    assert hyper.recip_one_minus(np.float32(0.2)) == 1.25
    assert hyper.recip_one_minus(np.float32(1.0)) == math.inf
    q1, q2 = L.q_at(L.adamw(), 1000)
    with mpmath.workdps(60):
        assert q1 == float(1 - mpmath.mpf("0.9") ** 1000) and q2 == float(1 - mpmath.mpf("0.999") ** 1000)


def test_beta_ok_matches_the_seed_check() -> None:
    """The oracle's float32 beta_ok gives impl's answer on typical, boundary and bad pairs (the poisoning rule
    must be the seed's, main.bend line 517)."""
    r = rng(24)
    bs = np.concatenate([r.random(300), [0.0, 0.9, 0.999, 0.5, 1.0, np.nan, -0.1]]).astype(np.float32)
    for b in bs:
        for c in (np.float32(1.0) - b, np.float32(1.0 - float(b) + 1e-7), np.float32(1.0 - float(b) + 4e-7),
                  np.float32(0.01), np.float32(0.0), np.float32(np.nan)):
            assert hyper.beta_ok32(b, c) == beta_ok(b, c), (b, c)


# ---------------------------------------------------------------------------------------------------------------
# Dropout's mask: lowbias32 in pure Python ints
# ---------------------------------------------------------------------------------------------------------------


def mix32_py(x: int) -> int:
    """lowbias32 (main.bend line 1229), every operation reduced modulo 2^32 by hand."""
    x &= 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return x


def test_mix32_constants() -> None:
    assert 0x7FEB352D == 2146121005 and 0x846CA68B == 2221713035


@pytest.mark.parametrize("seed,t,p", [(0, 0, 0.5), (1234, 7, 0.1), (2 ** 32 - 1, 2 ** 32 - 1, 0.9),
                                      (99, 12345, 0.3333333)])
def test_dropout_mask_is_lowbias32(seed: int, t: int, p: float) -> None:
    n, c = 7, 37
    key = mix32_py(seed ^ mix32_py(t))
    p32 = np.float32(p)
    num, den = p32.as_integer_ratio()                  # p's float32 value as an exact fraction
    want = np.zeros((n, c), dtype=bool)
    for i in range(n * c):
        h = mix32_py(key + i) >> 8                     # u = h / 2^24 < p  <=>  h den < num 2^24, all integers
        want.reshape(-1)[i] = h * den < num * 2 ** 24
    assert np.array_equal(drop_mask(n, c, seed, t, p32), want)
    lay = L.Dropout(n, c, p, seed)
    x = rng(27).standard_normal((n, c))
    y = lay.fwd(L.DropP(t), x).y
    assert np.all(y[want] == 0.0)
    assert np.array_equal(y[~want], x[~want] * hyper.recip_one_minus(p32))


# ---------------------------------------------------------------------------------------------------------------
# An independent second opinion: PyTorch's float64 autograd and optimizers
# ---------------------------------------------------------------------------------------------------------------


def test_against_torch_float64() -> None:
    """Forward and backward of every layer and loss, and 5 Adam / AdamW steps, against PyTorch in float64
    (its own formulas and autograd). Both are float64 computations of the same math: they agree to ~1e-15 relative,
    so 1e-12 allows for the different orders of operations and nothing more."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    r = rng(40)
    n, c = 4, 6
    x = r.standard_normal((n, c)) * 2.0
    dy = r.standard_normal((n, c))

    def cmp(lay: Layer[Any, Any, Any, Any], p: Any, tf: Callable[[Any], Any]) -> None:
        xt = torch.tensor(x, requires_grad=True)
        yt = tf(xt)
        yt.backward(torch.tensor(dy))
        f = lay.fwd(p, x)
        b = lay.bwd(f.p, f.s, dy, lay.zeros())
        assert np.allclose(f.y, yt.detach().numpy(), rtol=1e-12, atol=1e-14), lay.name
        assert np.allclose(b.dx, xt.grad.numpy(), rtol=1e-12, atol=1e-14), lay.name

    cmp(L.ReLU(n, c), None, torch.relu)
    cmp(L.Sigmoid(n, c), None, torch.sigmoid)
    cmp(L.Tanh(n, c), None, torch.tanh)
    cmp(L.SiLU(n, c), None, F.silu)
    cmp(L.GELU(n, c), None, lambda t: F.gelu(t, approximate="tanh"))
    cmp(L.GELUErf(n, c), None, F.gelu)
    cmp(L.Softmax(n, c), None, lambda t: torch.softmax(t, 1))
    cmp(L.LogSoftmax(n, c), None, lambda t: torch.log_softmax(t, 1))
    g = r.standard_normal((1, c))
    cmp(L.RMSNorm(n, c), g.copy(), lambda t: F.rms_norm(t, (c,), torch.tensor(g[0]), eps=1e-5))
    lb = r.standard_normal((1, c))
    cmp(L.LayerNorm(n, c), L.LN(g.copy(), lb.copy()),
        lambda t: F.layer_norm(t, (c,), torch.tensor(g[0]), torch.tensor(lb[0]), eps=1e-5))
    w, bb = r.standard_normal((c, c)), r.standard_normal((1, c))
    cmp(L.Linear(n, c, c), L.Lin(w.copy(), bb.copy()), lambda t: F.linear(t, torch.tensor(w), torch.tensor(bb[0])))
    lab = np.array([0, 5, 2, 2])
    losses: list[tuple[Any, Callable[[Any], Any]]] = [
        (L.CrossEntropy(n, c), lambda t: F.cross_entropy(t, torch.tensor(lab))),
        (L.NLL(n, c), lambda t: F.nll_loss(t, torch.tensor(lab))),
        (L.MSE(n, c), lambda t: F.mse_loss(t, torch.tensor(dy)))]
    for loss, tf in losses:
        xt = torch.tensor(x, requires_grad=True)
        lt = tf(xt)
        lt.backward()
        lo = loss(x, dy if loss.name.startswith("MSE") else lab)
        assert abs(lo.loss - lt.item()) <= 1e-13 * abs(lt.item()), loss.name
        assert np.allclose(lo.dy, xt.grad.numpy(), rtol=1e-12, atol=1e-15), loss.name
    for cls, topt in ((CAdam, torch.optim.Adam), (CAdamW, torch.optim.AdamW)):
        w0 = r.standard_normal((3, 4))
        grads = [r.standard_normal((3, 4)) for _ in range(5)]
        cfg = cls(*(np.float32(v) for v in (0.01, 0.9, 0.999, 1e-8, 0.1, 0.1, 0.001)))
        got = run_steps(cfg, w0, grads)
        wt = torch.tensor(w0.copy(), requires_grad=True)
        opt = topt([wt], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1, foreach=False)
        for gr in grads:
            wt.grad = torch.tensor(gr)
            opt.step()
        assert np.allclose(got, wt.detach().numpy(), rtol=1e-12, atol=1e-15), cls.__name__
