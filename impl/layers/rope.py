"""RoPE: rotary position embedding, the rotate-half form of Llama and `transformers` (main.bend lines 2120-2197).

Rows are b sequences of t positions (row r is position r mod t); each row holds h heads of 2*half numbers, and the
pair (x[c], x[c + half]) of a head turns by pos * inv[c], inv[c] = 1 / base^(2c / (2*half)):

    forward:  (a, b) -> (a cos - b sin, b cos + a sin)
    backward: (da, db) -> (da cos + db sin, db cos - da sin)      (the opposite angle)

No parameters, nothing saved. The cos/sin table is computed with the seed's operations in its order
(impl.kernels.rope.rope_table); the seed computes it once a call, here once at construction (the same numbers: it
depends only on t, half and base).
"""

from __future__ import annotations

import numpy as np

from bendtorch.impl.kernels import rope as K
from bendtorch.impl.kernels.rope_precise import rope_table_precise
from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, param_free
from bendtorch.impl.specs import Mat, MatSpec, ShapeError

F32 = np.float32


def RoPE(n: int, w: int, t: int, h: int, half: int, base: float | np.float32,
         precise: bool = False) -> Layer[None, Mat, Mat, None]:
    """The seed's RoPE(n, w, t, h, half, base) (line 2196); w = h*2*half is checked (ShapeError). base is rounded
    to float32. precise=True goes beyond the seed: the table's angle is carried as a float32 pair
    (impl.kernels.rope_precise), so cos and sin stay within about 1 unit of 2^-24 at every position instead of an
    error growing with the position; the default is the seed's table, bit for bit."""
    check_dims("RoPE", n=n, w=w, t=t, h=h, half=half)
    if w != h * (half + half) or min(n, t, h, half) < 1:
        raise ShapeError(f"RoPE: needs w = h*2*half (all >= 1), got n={n} w={w} t={t} h={h} half={half}")
    cs, sn = (rope_table_precise if precise else K.rope_table)(t, half, F32(base))

    def fwd(p: None, x: Mat) -> Fwd[None, Mat, None]:
        return Fwd(None, K.rope_apply(np.ascontiguousarray(x), cs, sn, t, h, half, True), None)

    def bwd(p: None, s: None, dy: Mat, g: None) -> Bwd[None, Mat]:
        return Bwd(None, K.rope_apply(np.ascontiguousarray(dy), cs, sn, t, h, half, False), None)

    return param_free(layer_name("RoPE", n, w, t, h, half, base=np.float32(base),
                                 **({"precise": True} if precise else {})), MatSpec(n, w), MatSpec(n, w),
                      np.float32, fwd, bwd)
