"""TensorFlow's float32 CPU functions as a sweep library (FUNCS): the elementwise calls of
bendtorch.targets.tensorflow (ELEMENTWISE: tf.exp, tf.math.log, tf.tanh, tf.sin, tf.cos, tf.math.erf, tf.sqrt,
tf.math.rsqrt, tf.sigmoid, tf.nn.silu, tf.nn.gelu(approximate=True) for GELU's tanh form, tf.nn.gelu(approximate=False)
for its erf form), eagerly, on one tensor a chunk, and their derivatives through tf.GradientTape with the output
gradient 1 (dsigmoid, dtanh, dsilu, dgelu_tanh, dgelu_erf). A chunk is one call, so the copies in and out are its
only fixed cost; TensorFlow's CPU kernels split a large elementwise op over its intra-op threads (the same
vectorised loop on each part)."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from bendtorch.targets import tensorflow as T

Fn = Callable[[Any], Any]

FUNCS: dict[str, Fn] = {
    **{f: partial(T.elementwise, f) for f in T.ELEMENTWISE},
    **{f"d{f}": partial(T.derivative, f) for f in ("sigmoid", "tanh", "silu", "gelu_tanh", "gelu_erf")},
}
