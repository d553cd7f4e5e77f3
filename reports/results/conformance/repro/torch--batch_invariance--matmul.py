"""torch against the conformance law batch_invariance/matmul (bit for bit): x·Wᵀ: row 0 in a batch of 2 against alone.

Found by bendtorch's conformance laws on an unrecorded CPU (x86_64): 11 of 16 elements differ; first at (0, 0):
3f4d0fcf against 3f4d0fce. Run with python; it prints how many elements differ and the first, as bit patterns (got
against want).
"""
import numpy as np
import torch
import torch.nn.functional as F


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _linear(x, w, b):
    return F.linear(x, w, b)


def linear(x, w, b):
    t = torch.from_numpy
    with torch.no_grad():
        return _linear(t(x), t(w), None if b is None else t(b)).numpy()


x = f32("""
    3e00bf6c be07467f 3f23f2bd 3dd6d5df bf0921a1 3eb922fd 3fa6e979 3f7273e6
    bf3427fe bfa1f955 bf1f8eea 3d29456e c014cd4e be600aec bf9f7a03 bf3b75e0
    bf0b548f bea1f218 3ed2c13d 3f857114 be039e97 3faee846 bf2a4a33 3eb3f921
    3f6749d2 3dc08985 bf3e55f8 bf6bf632 beea5b0a 3e617ad5 bf813b2b be56321f
    be230be2 3f0a74db
""", (2, 17))
i = 0
w = f32("""
    3eb0f069 3f525591 3ea92f0c bfa6cddb 3f67c567 3ee48b35 bf0975c4 3f14c428
    3ebaa93c 3e969889 3ce8d5c3 3f0bf562 bf3c8841 be26d1de bef6d858 3f194dfc
    3d22b3a6 be95bce4 bf482b27 be83aeb4 3c0566c8 be8d1bd3 3fa5a3e2 3f80dc58
    c02d83b0 bff1cb30 be32f775 bed82957 3e5ac53b 3e5e89a4 40078aac bf8e56b2
    bec15572 4002bcc5 3f258e54 3f29be85 bf0395ec bfd2f421 3e2b7be1 3ddf42c7
    bf9d19df bf2ee7f1 bd938ba3 bf71db3e bdc941c4 3dc38c9b 0da24260 bf019c55
    3f17ffe0 3f642384 3ea4463b bf517789 3f3b4d90 bf005e60 3f6110ac bf893054
    3f6a1a86 bca45c1d bf9fd701 bea0b76e 3d5d9a5a 3e8bab4e bf7b70ae bf8dbe66
    3e4c5fe3 beeef9ce 3e712862 3f426fdf bfd30b77 3e823f29 3f9cc13b be985570
    bf4f918b 3f40930d 3e81c3be 3f655898 beb0c01d bfbdac39 bde14d53 bee44396
    3f467b9f 3e4647b0 bfd0bfab bf98fb1b 3f624000 3f2e0515 bf23e6fd ba8977c6
    3ee42238 3eefd2b1 3f605169 3e835216 bdc2355c be8487bc 3f872295 c0100dff
    be0dfba9 3d072b1e bfb671d6 3eaa668c bf26ba5a 3f5cc92f be009b36 3f2b4da0
    3f9c0311 3ec40f59 bf602f43 bfc1d531 3fe06ee4 bde3ed29 bf3045cb 3e13b821
    be440155 3f5a25ff 3d0af847 3c6145ef bf36eeb2 3ef06b3b bf8455bf 3f2a77bb
    3fc31062 bfc328e9 c01dd6b3 3f1debc4 402310c2 bf801e4e bfa016cc 3f16c6ab
    bf573988 bf018ae3 beb23c74 3f08314a becf83cb 3e8e46a9 be34c522 bf583c5e
    bea3c044 bf734d64 3bd57baa bf8fdad9 bf8be3f6 3fba7dba bd59d7b2 bd5cc85f
    3f02f40d bed77a92 be6a052d 3ed9ad18 3e9098cf bf9463d6 3f5555f1 bf1726bf
    bf872d98 bf668589 bec7f58f 3fd04b60 bf9677f6 3e23eaef c008d21d bacd618d
    3f6649fc be7257df bf211d67 3e6d113d 3f333d25 3f29e576 3ffc7a06 3e562fff
    bf17a830 be0100b0 bd947a1e 3ddeb1b5 bcf5fce3 3e322421 bfd5de6a 3f546290
    bf13221d bf962a10 3f2343a9 3fa89e23 3efc6e30 80000000 bf6ea5fd 4037c7c2
    3f6158a1 bf91d468 bf47965a 3db2222d bfc7016e 3e2cad73 beeb0b6d 3f9cf66f
    3f764fc5 c02d85b3 3d2ad055 bfcf092d 3f8e089e 3e2c23f2 3f0c644d bf885602
    3fea0a01 400148e2 bf884a6b 3ebee1a0 bf2c5d8c bcc115bd c61c4000 3feefea0
    bf781c26 be97984c 3f00612f bf25c689 be750e51 bf104ab3 be08a9f0 bf95d457
    bee03ff9 be53dbbd beaade23 3d6833ba be96117e 3f40d276 bea579f0 be0beddf
    bf2a2f1c bf06c9ad bfa1dae6 3f04cf17 bf923e08 bf3ef072 3eb7eeea 3ece1e19
    beccdbd7 c0013ba7 3ed74d85 3e84e580 bfb4c8e8 3f4533d4 bf337b47 bf9026ef
    3dc40e77 be36c0f4 3e4f7cab bfcd8927 3fe7f728 bf1a47d6 bfc5138e 3f1e6c71
    beb5a8e3 3ea653da beade128 bd74b24f 3e7babe0 bf3f24a5 3f2dc1e1 bef096bf
    bf5ea3d1 3d9dc32d 3ee3dc73 be6a93c6 bf5cce19 3f1eaa44 bfe15274 bf83f35b
    3d21e2c1 bfae3732 3ce5543a bd60b826 3f6613d0 bf6a2fb3 bf203b69 3eaa96ca
""", (16, 17))

got = linear(x, w, None)[i:i + 1]
want = linear(x[i:i + 1], w, None)

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
