"""tensorflow (tf.function) against the conformance law batch_invariance/rms_norm (bit for bit): rms_norm: row 0 in a
batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 237 of 256
elements differ; first at (0, 0): 3ec87638 against 3ec87639. Run with python; it prints how many elements differ and
the first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import tensorflow as tf


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _rms_norm(x, w, eps):
    return x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), axis=-1, keepdims=True) + eps) * w


_rms_norm = tf.function(_rms_norm, jit_compile=False)


def rms_norm(x, w, eps):
    c = tf.constant
    return _rms_norm(c(x), c(w), eps).numpy()


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'tensorflow-tf-function--batch_invariance--rms_norm.x.npy', allow_pickle=False)
i = 0
w = f32("""
    40029e6b c0239004 3ed6110d bf115959 bee7c1a6 be5cc581 c0014774 be6d7fae
    bf5d7e9b 4054ac06 3e67349b beb48c06 be9004e8 bf2b0516 bf870f2c bec81711
    3ef6c18c be744766 3f752fad be4c98ee 3cc6bbff 3fc5dd75 3f0b8c09 bf0156ac
    be3b3a24 3f0a5fdb 3ff7b0f7 be8a0bad be796772 3f804bd0 bf62ef0a be955c5b
    3f61ee13 3f1491d2 3dbb6d1c 3f2b8bf6 c035009c 3f82ba2f bf75ab47 bfd59556
    3e8d8a4c 007fffff bee3b88f bf89c7ab 3cd603bf bd580d90 3fb3eaa4 3f3f5621
    3e46779c 3f8e49ff be5274a2 bf6d07c1 3f1584d8 3f15213d be5bfc1c bf486625
    3e6aa752 461c4000 3f30ac04 3efb949f bfd1c612 3d7b4dd1 bf76cf3c 3f41d93d
    c0022fcc bf6a1c50 3f35a709 3f9404f3 c00a1cc3 befeff14 3ea7f240 bf1bf597
    3fcb9a19 bf987a1e 3eb58536 bf863227 3fb3f698 bcb15deb bebe97a0 bfdbed7c
    3fd7460f 3f40b619 3f40e98f 3f91a618 3eb2cdd3 bf23a5aa bf4cdc9c bf4cd9e8
    3faf5e88 bfbaedc5 bf18abac bea47a15 3e660288 3f134a19 bf9fe269 bfdd7115
    bb90a544 3f9b560f 3f41ce8f 3e5cd38f bea26239 3e9622ba be792cd5 3f513473
    bf4b60e7 3e097632 bde2e0b2 3f0b199a 3e6607a4 402333c4 3fbfd3eb 3fbf9515
    c002873b beae3dfb bf1bcde8 3f086071 c011db92 80001383 3f8892e9 bfa6aa42
    bf7a8228 bf4d199c 3d31570b 3f2416ae 40031091 be4a2f23 3f447b0c 3e1f25d9
    3fe14544 3f3dfe0f 3faf2ca9 bf89f143 be44dac0 bf505364 3fc0a21e 3f285b17
    be9c3be4 bee7a9df 3ef825ff bf339536 bf6e3b13 3ef6699c 401da3f5 be7c0a6f
    bf0e4d38 bf95e878 bfaae1a4 3f06654d 3f59ce3a 3c165192 3eaa4766 3ded65ac
    3e0dfb89 bfc3592e beea8e7a 3de44f43 bf487d9e bef3ee99 bf51b1dc beaac013
    3f5a654e bed02b4d be1d9047 3f504fd9 3f250fa9 3fd8fc90 c005ca82 3f5b5b1c
    bef6edf1 3e09eca7 3f5674c7 3f8aa80a 3f850972 3e1ed44a 3fce096d be90e1ff
    be105d90 3f4ca248 bf0d26be 400a4c4a 3f82755c 400b3ca0 bcd9d191 bec4242f
    3e2b0ea2 3f3c0d35 bf1661a9 3ec26844 bc89a921 3fcecea9 bf29a6d3 3f85e8a1
    bf24d43e bf75ec1f bf35d62f bf985803 3e15dcde 3f84005b 3e284229 3f1fd3c5
    3fd0eb16 3e8a40e8 3e47d8a4 be8cd4db bfcddae2 3f427e40 bfe0d3b2 3f2715ce
    bc6a9fd7 80000000 bd8acb22 bf52bd3f 3eb74004 bf0f6ba3 be394cbf 3d2b80b4
    be09c766 be415562 bf551b1d be41ac49 c008da93 be211baa bf9959e6 3f8f64cd
    3fa28cf6 bff9bb36 3e146511 be01658b bf85fac7 3f081a6c beec6292 bfe240b0
    be8889d8 be17cfaa 3dd9f881 bf9d990b 3f1d9d44 3f3c46ea bf92aa78 bf28aac2
    bda487e4 bf10e07b 3fdf335a 3e555f80 bf815ac1 bf49c182 bd6b65ef 4012ee0a
    be368aec 3e02892e 3f03987a bd245b18 4011f659 bf081205 3f3e8419 3e2449da
""", (256,))

got = rms_norm(x, w, 1e-5)[i:i + 1]
want = rms_norm(x[i:i + 1], w, 1e-5)

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
