"""tensorflow (eager) against the conformance law optimizers/lr_zero_keeps_parameters (bit for bit, but -0 may become
+0): sgd lr=0 wd=0.0: parameter 0.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 1 of 21 elements
differ; first at (2, 2): 00000000 against 00000001. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import numpy as np
import keras
import tensorflow as tf


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def opt_steps(optimizer, params, grads):
    assert optimizer["name"] in ("sgd", "momentum"), "Keras's SGD: plain or with momentum"
    vs = [tf.Variable(tf.constant(p)) for p in params]
    o = keras.optimizers.SGD(optimizer["lr"], momentum=optimizer["mu"] if optimizer["name"] == "momentum" else 0.0)
    o.build(vs)

    def step(*gs):
        o.apply_gradients(zip(gs, vs))

    for gs in grads:
        step(*[tf.constant(g) for g in gs])
    return [v.numpy() for v in vs]


params = [f32("""
    be8ba1a5 4009d396 c0d56a85 c13a6811 40e0e54e c07ff586 4006614b 3ff734bc
    40a060ce c186b2c2 410cf78d c0b7b6b6 c1a0d74a c09b010a 416b6846 408aad5d
    00000001 3ff0e2f1 412a80b3 c04091d7 c0e8b371
""", (3, 7)), f32("""
    3f83cc73 c11ce265 80001383 c124760b c0b7d3ac
""", (1, 5))]
grads = [[f32("""
    3f4a8643 bfc7c674 3f0fb359 3fe6157b bf985643 40130109 40201e7e bfade062
    3f4ab344 3e7ad058 3fafa2b0 3ebb9a43 3d983f6f bfe49c60 bf0da669 3f97a722
    c0086c77 3e158b1c 3eb1c8af 00000000 be5d2884
""", (3, 7)), f32("""
    3e041370 3bc66f48 3feebb5b 3eaedd8c 3f84c444
""", (1, 5))], [f32("""
    3ff62631 3f79ea3e 3fbe0424 bfb0113c beb94378 be684557 3ea08eb1 3eb54f2a
    bf2a41cd 3eae167e be8c308e bf453126 3f08f910 3fb5976f bd9e8a42 bd4a95e3
    3facdc55 8da24260 3efdb9b9 3fe62258 bf2a3ac0
""", (3, 7)), f32("""
    3e75d519 bf4d4047 bf3b1c9e be308635 3e097b31
""", (1, 5))]]
optimizer = {'name': 'sgd', 'lr': 0.0, 'wd': 0.0, 'mu': 0.9, 'b1': 0.9, 'b2': 0.999, 'eps': 1e-08}
j = 0

got = opt_steps(optimizer, params, grads)[j]
want = params[j]

g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
bad = g.view(np.uint32) != w.view(np.uint32)
bad &= ~(np.isnan(g) & np.isnan(w))  # a NaN matches any NaN
bad &= ~((g == 0) & (w == 0))  # -0 matches +0
idx = np.argwhere(bad)
print(f"{int(bad.sum())} of {bad.size} elements differ", end="")
if idx.size:
    k = tuple(int(a) for a in idx[0])
    print(f"; first at {k}: {g[k].view(np.uint32):08x} ({float(g[k])!r}) against "
          f"{w[k].view(np.uint32):08x} ({float(w[k])!r})")
else:
    print()
