"""Embedding (main.bend lines 1868-1918): a table of v rows of d numbers, looked up by n token ids.

    forward   y[r, :] = E[ids[r], :]              row copies, no arithmetic (emb_cp, line 1873)
    backward  g[ids[r], :] += dy[r, :]            for r = 0, 1, ..., n-1 in this order (emb_sc, line 1899), so a
                                                  repeated id accumulates its rows in order, one rounding per add;
              dx = the empty id list               an id has no gradient (line 1916)

The parameter is the v x d table (protocol.mat_param: step opt_mat, dump / load / store row by row, count v*d,
line 1918). The saved value is the ids. An id outside [0, v), or ids that are not a 1-D integer array of n, raise
a ValueError naming the layer (the seed's types rule these out; Python's do not).
"""

from __future__ import annotations

import numpy as np

from bendtorch.impl.optim import opt_mat
from bendtorch.impl.protocol import Bwd, Fwd, Layer, check_dims, layer_name, mat_param
from bendtorch.impl.specs import Ids, IdsSpec, Mat, MatSpec


def _check_ids(name: str, ids: object, n: int, v: int) -> Ids:
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name}: the ids must be a 1-D integer array of {n}, got "
                         f"{getattr(ids, 'dtype', type(ids).__name__)} {getattr(ids, 'shape', '')}")
    if ids.shape[0] != n:
        raise ValueError(f"{name}: {n} ids expected, got {ids.shape[0]}")
    bad = np.flatnonzero((ids < 0) | (ids >= v))
    if bad.size:
        q = int(bad[0])
        raise ValueError(f"{name}: id {int(ids[q])} at position {q} is outside the table's rows [0, {v})")
    return ids.astype(np.int64, copy=False)


def Embedding(n: int, v: int, d: int) -> Layer[Mat, Ids, Mat, Ids]:
    """n ids looked up in a v x d table (main.bend line 1917)."""
    check_dims("Embedding", n=n, v=v, d=d)
    name = layer_name("Embedding", n, v, d)

    def fwd(p: Mat, x: Ids) -> Fwd[Mat, Mat, Ids]:
        """y row r = table row ids[r] (emb_f, line 1885)."""
        ids = _check_ids(name, x, n, v)
        y = np.ascontiguousarray(p[ids], dtype=np.float32)
        return Fwd(p, y, ids)

    def bwd(p: Mat, s: Ids, dy: Mat, g: Mat) -> Bwd[Mat, Ids]:
        """g row ids[r] += dy row r, r = 0..n-1 in order (emb_bwd, line 1911), g in place."""
        ids = _check_ids(name, s, n, v)
        for r in range(n):
            row = g[ids[r]]
            row += dy[r]
        return Bwd(p, np.zeros(0, dtype=np.int64), g)

    return mat_param(name, IdsSpec(n), MatSpec(n, d), np.float32, v, d, fwd, bwd, opt_mat)
