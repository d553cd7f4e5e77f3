"""tensorflow (eager) against the conformance law batch_invariance/layer_norm (bit for bit): layer_norm: row 0 in a
batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 88 of 256
elements differ; first at (0, 0): 3e710361 against 3e710362. Run with python; it prints how many elements differ and
the first, as bit patterns (got against want).
"""
import pathlib
import numpy as np
import tensorflow as tf


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _layer_norm(x, w, b, eps):
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return tf.nn.batch_normalization(x, mean, var, b, w, eps)


def layer_norm(x, w, b, eps):
    c = tf.constant
    return _layer_norm(c(x), c(w), c(b), eps).numpy()


# the data files (.npy) sit beside this script
HERE = pathlib.Path(__file__).resolve().parent
x = np.load(HERE / 'tensorflow-eager--batch_invariance--layer_norm.x.npy', allow_pickle=False)
i = 0
w = f32("""
    3eb0f069 3f525591 3ea92f0c bfa6cddb 3f67c567 3ee48b35 bf0975c4 3f14c428
    3ebaa93c 3e969889 3ce8d5c3 3f0bf562 bf3c8841 be26d1de bef6d858 3f194dfc
    3d22b3a6 be95bce4 bf482b27 be83aeb4 3c0566c8 be8d1bd3 3fa5a3e2 3f80dc58
    c02d83b0 bff1cb30 be32f775 bed82957 3e5ac53b 3e5e89a4 40078aac bf8e56b2
    bec15572 4002bcc5 3f258e54 3f29be85 bf0395ec bfd2f421 3e2b7be1 3ddf42c7
    bf9d19df bf2ee7f1 bd938ba3 bf71db3e bdc941c4 3dc38c9b 3d11c2e0 bf019c55
    3f17ffe0 3f642384 3ea4463b bf517789 3f3b4d90 bf005e60 3f6110ac bf893054
    3f6a1a86 bca45c1d bf9fd701 bea0b76e 3d5d9a5a 3e8bab4e bf7b70ae c61c4000
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
    bf13221d bf962a10 3f2343a9 3fa89e23 3efc6e30 3e2506f2 bf6ea5fd 4037c7c2
    3f6158a1 bf91d468 bf47965a 3db2222d bfc7016e 3e2cad73 beeb0b6d 3f9cf66f
    3f764fc5 c02d85b3 3d2ad055 bfcf092d 3f8e089e 3e2c23f2 461c4000 bf885602
    3fea0a01 400148e2 bf884a6b 3ebee1a0 bf2c5d8c bcc115bd bfa20064 3feefea0
    bf781c26 be97984c 3f00612f bf25c689 be750e51 bf104ab3 be08a9f0 bf95d457
    bee03ff9 be53dbbd beaade23 3d6833ba be96117e 3f40d276 bea579f0 8da24260
    bf2a2f1c bf06c9ad bfa1dae6 3f04cf17 bf923e08 bf3ef072 3eb7eeea 3ece1e19
    beccdbd7 c0013ba7 3ed74d85 3e84e580 bfb4c8e8 3f4533d4 bf337b47 bf9026ef
    3dc40e77 be36c0f4 3e4f7cab bfcd8927 3fe7f728 bf1a47d6 bfc5138e 3f1e6c71
    beb5a8e3 3ea653da beade128 bd74b24f 3e7babe0 bf3f24a5 3f2dc1e1 bef096bf
""", (256,))
b = f32("""
    3e419736 bf05d2d8 bed37d11 c01c4100 3fe65cd0 3f927407 bea69dd2 3f461830
    3e8ffad8 bf0dc755 3f7a41dc be9f0145 bea85b9b bf4aca21 3ee8f044 bdcb2859
    3f0b980b bf1b7086 3e01df29 bf646c12 3f576a40 3e408c45 3ea9409a 3ed22d92
    bf816080 3f487e8d 4003a105 bfd1b87c bfdd5d5b bfc09e51 3f5769da 3e03ce0a
    3f8a0720 3f38f13b 3e57a023 3e916d73 be2dd5b2 3f5e5369 bf909a88 bed7fde1
    3e78c4f6 3fe694f5 bf43b3ec bf8a1ea7 bf103397 3f782239 be70a549 3fa98434
    bfefaf0c 3f907372 3f84767f bfb596d6 3e1d4492 3f9b9df2 3db40ee6 3f7fec6f
    4017fe26 3e8c40d9 be8f8e45 bf4563ad 3f25e790 be49739b be37094a bdd79270
    3f265ddc bf887dd1 bfc3d2fe c01bc4a3 3f996e0c 3d9720f9 3fc14b98 bc12bd70
    bf3dfde6 3ef4b326 bd9cda63 bfa08930 bf6293b9 3fe225d3 3eb56d71 3ed5309e
    be8d9830 bf309176 3f64438e bdd64665 bf4254e9 be0958fd bf67d5cc 3e429b60
    3f908a88 bf5609ad 3fb6da88 bf2ae924 3e1d1814 bf561d6d be63919e 3d422b21
    bede8f06 bf33f076 bf2d89f3 bf52378a bfc8f862 be86a3f4 3ecd649c 3f688d07
    3f25a886 401d4500 3ea32a3d bee9a499 3fef91b9 bf860b3e 3f77ee26 bf74845e
    3eb54e20 bffbf46d 3f6636cd be220baa bf77b9f9 3fd6d66f 3f43ee49 3d3ba0ff
    807fffff bd319cf9 80001383 3f398af4 3f4c4ea8 bf2af215 bf0ca38d bf08356f
    bfacb66d bf177174 bdbd4071 3f30e23a 3fa90232 bf4eefc1 3f0d0ccc bee38fd8
    4004cfe0 bd479257 3f008b65 bf6fa853 bf4f8958 3e4e8937 bec4a2c9 3eb4e23e
    bfc7e9da 3f297928 bf664458 3fdc785f be93b1fa 3f8c732e bfb28ed0 3edb9ed8
    bf6355e9 bef94986 3cc97e5a bea257a6 3e874c83 3f3f6659 3f271cbb bdb3297e
    bfae84e4 bf4dfd4a be487451 c007cbff 3f40885a be7563b7 be80acec 3f72c8c9
    3f2afc2f 3e624e14 bf802bb3 3e9eef94 3eb13e2f bf628081 3f858b3e 3f0204e5
    bffc1ca7 3df9c0a2 bfa1e1a0 3f9172c6 3f4e9962 bf8d4276 bf628704 3dd09874
    be748ad3 3fc339db 3f3db076 be909a4e 3f13d038 c00210dd 3e9ea696 3f5dccda
    be373f54 bf35d099 3f10da76 3ffab3e3 3e51c929 bf8f725e 3fb91022 bff0743e
    3f00d209 bf14fafb 3f6e3bb3 bf597727 3fa973d8 3e99bd65 bfdd091d bffca5e8
    bea1d745 461c4000 3e021429 3d897694 be7190c6 3f3ce707 3ec130fa 3e8f897f
    bf7c16cd 3f980b94 3fae796b bfa692c1 40134bb2 3f38f631 bef9dbec bff3c1ef
    3f282716 3f0eb911 80000000 bfe530d9 3f8feedb bf169c12 bef18892 40361f0d
    400830b2 3f742817 bee92cf2 3f264318 c012039a 3dda2dd1 bf428373 bfa48eb6
    bfca9956 3f066fae 3db6e31d 3e238e9a 3f57a5f5 bf5898f2 bf9e27a2 bfe35ff1
    beab9ee3 3f429999 be19027b 3f2420fa bf972cc5 bef030ac bf44146d bf9fcad8
""", (256,))

got = layer_norm(x, w, b, 1e-5)[i:i + 1]
want = layer_norm(x[i:i + 1], w, b, 1e-5)

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
