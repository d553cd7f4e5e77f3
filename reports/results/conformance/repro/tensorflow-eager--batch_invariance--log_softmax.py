"""tensorflow (eager) against the conformance law batch_invariance/log_softmax (bit for bit): log_softmax: row 0 in a
batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 2 of 17 elements
differ; first at (0, 2): c03dc75e against c03dc75f. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import tensorflow as tf


def _log_softmax(x):
    return tf.nn.log_softmax(x, axis=-1)


def log_softmax(x):
    c = tf.constant
    return _log_softmax(c(x)).numpy()


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'tensorflow-eager--batch_invariance--log_softmax.x.npy', allow_pickle=False)
i = 0

got = log_softmax(x)[i:i + 1]
want = log_softmax(x[i:i + 1])

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
