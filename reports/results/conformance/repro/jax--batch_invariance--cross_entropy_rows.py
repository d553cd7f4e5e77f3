"""jax against the conformance law batch_invariance/cross_entropy_rows (bit for bit): cross-entropy term 26 in a batch
of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 1 of 1 elements
differ; first at (0,): 40c64886 against 40c64884. Run with python; it prints how many elements differ and the first,
as bit patterns (got against want).
"""
import pathlib
import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy.special
import optax


jax.config.update("jax_platforms", "cpu")


def _ce_rows(z, labels):
    return optax.softmax_cross_entropy_with_integer_labels(z, labels)


_ce_rows = jax.jit(_ce_rows)


def ce_rows(z, labels):
    a = jnp.asarray
    return np.asarray(_ce_rows(a(z), jnp.asarray(np.asarray(labels, np.int32))))


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
z = np.load(HERE / 'jax--batch_invariance--cross_entropy_rows.z.npy', allow_pickle=False)
labels = np.array([217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233, 128, 155, 248, 186, 161, 139, 143, 239, 71, 208, 171, 0, 100, 219, 141, 8, 195, 186, 216, 44, 22], np.int64).reshape((33,))
i = 26

got = ce_rows(z, labels)[i:i + 1]
want = ce_rows(z[i:i + 1], labels[i:i + 1])

g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
bad = g.view(np.uint32) != w.view(np.uint32)
bad &= ~(np.isnan(g) & np.isnan(w))  # a NaN matches any NaN
idx = np.argwhere(bad)
print(f"{int(bad.sum())} of {bad.size} elements differ", end="")
if idx.size:
    k = tuple(int(a) for a in idx[0])
    print(f"; first at {k}: {g[k].view(np.uint32):08x} ({float(g[k])!r}) against "
          f"{w[k].view(np.uint32):08x} ({float(w[k])!r})")
else:
    print()
