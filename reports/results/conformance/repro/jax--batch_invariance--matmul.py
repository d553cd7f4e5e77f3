"""jax against the conformance law batch_invariance/matmul (bit for bit): x·Wᵀ: row 1 in a batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 1 of 1 elements
differ; first at (0, 0): 440980d0 against 440980c8. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy.special
import optax


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


jax.config.update("jax_platforms", "cpu")


def _linear(x, w, b):
    y = jnp.matmul(x, w.T)
    return y if b is None else y + b


_linear = jax.jit(_linear)


def linear(x, w, b):
    a = jnp.asarray
    return np.asarray(_linear(a(x), a(w), None if b is None else a(b)))


x = f32("""
    3e00bf6c be07467f 3f23f2bd 3dd6d5df bf0921a1 3eb922fd 3fa6e979 3f7273e6
    bf3427fe bfa1f955 bf1f8eea 3d29456e c014cd4e be600aec bf9f7a03 bf3b75e0
    bf0b548f bea1f218 3ed2c13d 3f857114 be039e97 3faee846 bf2a4a33 c61c4000
    3f6749d2 3dc08985 bf3e55f8 bf6bf632 beea5b0a 3e617ad5 bf813b2b 461c4000
    be230be2 3f0a74db 3e5bcf9a 3eb5f369 bf276150 be04b970 3f48b29e 3fbf28c0
    bfa1290f 3fc1c841 3fac45a5 3f480406 3e8766ba bea0ba7e 3fbaa06c 3ffae9bf
    3fe69bf9 3fa85552 3eb6fa91 bf9aaa2f bb91f3fa 3f280ebe bfa4e907 3eca4d70
    3edc1718 3f322fdb bf97912d bf296557 bedf7471 bf95bc12 3fdea39b befde803
    3ea86eb5 be84639f 3fcaaf3d 3fa90197 3f222366 c00d064e 3d551c55 3f2f060f
    3f8081d0 bf1e2f28 3fe937ab bfa903e2 bf2959e7 3f6f5f70 3d48ed7e 40002733
    80000001 bf221902 bec15001 bf8baaad bfa38b06 3f2162a6 3f14c748 3fa5b41a
    bf412dd8 3fd834ac be93247b 3fc98636 bedd961b bf3c48a2 3e7fc7bd 3f8406a8
    3e24dfb2 bf15e538 bfabad16 bfb36504 3f00afd3 3f7d5dd5 be283cd7 bf8984ca
    3f5f7fb1 bfa3e3f3 bf368ba1 3f1efb07 c0100250 3ec5d23c bf14e66a 3ddfce09
    bd9b0967 3e4ef713 3f31b541 bf422485 3fb5e2bd 3f39e148 3f57fedd 3f951a43
    3f499f62 3f58158a 3d9ad0d3 bfb6a087 c61c4000 bf44fee9 bfb61c67 3e8453ed
    bf118c75 bf83d0a2 bf85810f 3e896df7 3eb7a3da 3fa94649 bc63fa5a 3f855b01
    3fb37d6a 3f9338a1 c0176124 3f9d4582 3eade2ac 3ed8f88f 3ebe1185 3ec3f8bf
    3ea38a43 beb7c37c bff368c9 bddf0eaf bf4dc15f 3f8a42cb be93d934 3daaf521
    bf597fc7 bf02b827 bc3cf52b bfbe20c6 3e99f366 bdd93c69 bf97c5ab c0197ca6
    3f035762 be985cef bf07aea2 be71d285 3fe88249 bd4bfc1a 3db16571 bfbe5867
    3fd2dc02 3f6ae07e 3f889152 3d43447b 3f6aa9e3 3ebdecbe 3f1cf9f6 be1bd879
    bfbca85c 3f83b180 bff7acc2 be75b1f5 be516e58 bf857c71 3f1cf5a3 be4d233b
    bedfad35 3f051459 bef4022b 3fb1ca19 3eb3f1eb bef2dbc6 bff8ddad bfa76475
    3f8b1d45 bd4f4635 be90f5c5 3fd25612 bfa42dda bf15edab bef1f703 3f161a33
    007fffff bf1d08f4 bfcd7589 3f3ab6a4 00000000 bef3e7a7 3e274296 bfa5756e
    bef1917e 3fb060b2 3e0afcff 4013dcff bf498577 3f148d85 be4832ae 3f10d970
    bbec4d45 bf0faaae bf5e1c22 404439f2 bd9e6716 c00110f8 bf260ab0 3f2d9403
    bf00008d 3fae231a 3f804e96 be1bfea9 bef1c64a bf809d52 bf333102 bfbc8ff4
    3f9a29a8 3fcb9c15 bfa0c922 bf974163 807fffff bf76bf27 c046ce39 bf923632
    3fa60153 beb0fbfd 3f5ac608 befa5a27 3fe15d8c 3e4bffcd bec395ce 40235aea
    bea6212d bf9c510c 3e4ec17f bd1f117d 3f887d53 bf6bf033 3f4e01ee 3f5a4db9
    bf2aed8e 3e272970 bf54ac29 80000000 bf34427e bee7f960 bf886d61 beb136cf
    bbc08baf 3f448dd4 bf1c48da be3e3b87 bfb54f86 bf53d0a2 40305f27 3f854775
    bf480b68 00000002 bf79bfcc bcb1b108 3d0e3eba bf3e8e6b 8da24260 3fb61080
    3ee74351 bebfc761 be61f503 bf078f4f c03be82b 3dece01c bf890799 bf8057f6
    bf23e83d 3f3b7820 bf95d3f4 bfb79689 3f23cd58 3f411e52 bf757cae 3f0ff94b
    be9550d9 3e9a42f8 bfa16725 3f553892 3f9a0464 3f23173b 3f0eef5e c0716cf5
    3e857143 bcd072b2 be169319 bf216d8f 3d62c662 3ed3010d be870f3e beed38d2
    3f9d6893 bf8d7cab 3f83dc20 3e350e54 bf4de6fa be947882 bf6b84b3 3f2cd107
    3eb2202e bf0e8a32 bf8d157d 3e9a7a88 3f751739 bde92308 3ed6324d bec086a1
    3d8a61b9 be952309 3e968cb1 bfc1403a 3f24e9ac be6b736c 3eb79b7a beae3d21
    3ea40662 bf8949bd 3f983636 bfda0dc0 bf8505c7 3e715272 3fbb3e6a 3e8e6692
    c61c4000 bfb6695b be43de08 bca2d51d 3fd8648e 3f1f4399 bfc3b951 4001b6c0
    beca3ebc bf612446 3fbcc6fd bd4bccb2 bebc1c32 3e60096f 0da24260 3f7e4b48
    bfb006a2 3fffce3e 3f726585 bec226a4 bf5193b1 bf781133 3dfcadd6 bf25e465
    bf43cec8 3f4fae5e 3ebaa892 beca053e 3f3bf7a7 3faf0643 bf8c1875 bf1a7156
    3f714faa 3f380c7d 3e6823bf 3f94ca38 bf8b4a86 bfbd5463 bf5dd36d 3dfaf866
    bf4bcc58 bef974a8 bf79999c bf1ed472 bf809cde 3ebc2488 3f4b7dfb bef5fd03
    be543d7c bf14be8d 3f080014 3db66303 3fcc0d55 bf8c386d 3eb999ed 3ee352d7
    beb88b9d 3f15627e bfb82183 40079a78 bfabc81d 3f6b787d bf8f80f3 3f935023
    bec5011a 3e22399d 3d5a7efb 3f8ce4db bea4a1de c03de657 bf429336 3e3c1f15
    bee1850c 3f4512fb 3f81f63c be17517e bfbeacb3 3fb12c53 3f8aa17f 80000001
    4006ee33 beb29fce bf918d24 be1f9d49 3f89f675 bf6ffcf3 3ff9c1be bf6582be
    3f745505 3f0b61e3 be1dc122 3f8a4ee8 bfbff968 3fadc4ea bd826cc6 bf0add09
    3f3fc9df 3f87aac5 3f451150 3fffefbe 3f8a553b 3fa449f2 bf0a3486 3dda2923
    3f101fa0 bc91582b 3e9a6fef 3eda2a67 3f58205f bdd01852 beb318e2 bf540c7f
    bf644892 3f9612e2 bdad199a 3f497530 bfa61005 bff815e4 bf86489f 3f92c4ac
    3f88b6c3 3eaa00f7 bf4d5b06 be05f121 be987410 beb0a059 c0206373 bf5ba110
    be42abe7 3fc21a4e 3e2499d4 3fb3504f bec993f4 be816066 c0799020 3eed39a2
    3f0c0e76 3fe1c2db bef938c4 3dc0d3e5 bf349d7b bf968f97 bf368e3e beb0a3a6
    3fad7efe 3b10f089 bf4a6125 3e11486c 3e5ecb07 bf2d1d8b 3f92557b bff1b56b
    be5aab71 3f2a41c5 bfab51c2 3eb8f640 3fa57d85 3ee8479a bfd85729 bf3a6afd
    3f9dbc1e 3e98bf66 bc218763 3ee1e50b 3f3896aa bf355dfa be94af52 3e1257f5
    bf0b40d0 be08a786 3fa620a9 bf77c30b 3ff69ce2 c61c4000 bfdb51fc be10683f
    3eaf7545 bf42c873 bf3db774 be731d1a 3f3d3ac6 bf02e6c6 3fe9d11a 3e947779
    bdd212fe 3fb98157 3f2053f7 3ebd1328 bea98b3b 3fe830ae 3f4fd38a be504b10
    bfc9e1a9 3ebef381 bf926613 bfdba41e be8eecf2 3e901cfb 3fa42858 3e909d87
    3f4e574c bf9ce9b9 bcb89567 3dfe6281 3f5cbc2a 3dedb138 3f4dd81e bf011334
    3eb745de 3ed4695e bf9ff8a7 3e33c066 bea4068f bff3b927 00000000 beb9458a
    bf5a363c
""", (33, 17))
i = 1
w = f32("""
    3eb0f069 3f525591 3ea92f0c bfa6cddb 3f67c567 3ee48b35 bf0975c4 3f14c428
    3ebaa93c 3e969889 3ce8d5c3 3f0bf562 bf3c8841 be26d1de bef6d858 3f194dfc
    3d22b3a6
""", (1, 17))

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
