"""torch_compile (dynamic shapes) against the conformance law batch_invariance/matmul (bit for bit): x·Wᵀ: row 29 in a
batch of 64 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 1 of 1 elements
differ; first at (0, 0): bdd80278 against bdd80270. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import numpy as np
import torch
import torch.nn.functional as F


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _linear(x, w, b):
    return F.linear(x, w, b)


_linear = torch.compile(_linear, backend="inductor", mode="default", dynamic=True)


def linear(x, w, b):
    t = torch.from_numpy
    with torch.no_grad():
        return _linear(t(x), t(w), None if b is None else t(b)).numpy()


x = f32("""
    bfd5edaf bf23ead2 bfaed12e bf894301 bfab8983 3f68e15c bec04fcb 3ecd0f5e
    bfabb26d bf0389c0 3fac56a8 3e55da59 3facad14 bf81129d bf9c8afb 3e3b2f25
    bf9b3abf befe5f4c 3cb387b0 3f8f8c86 bea95370 bf4d501a bf0701fe 3ed978b8
    bee783c2 3f50016f bed44944 bf848ee0 bcc2f3fa 3f176373 3fa2101d bf916325
    be1784a5 3f8d3800 3f3ad1b5 ba186d7e bdef499f 3f14d008 3ee9fe0f 3f162ad4
    400ae436 3ef63196 bf344b03 be9df8e9 bff8c8d9 3e241f89 3f6b6942 3ed0a96b
    3f937211 3f321df6 bf5cab33 3ebd3d4e 3fc676a4 3f51987d bdae0fc4 bfb59b52
    3e985f97 bd948135 bfbeacb9 3cbc8675 3eafd3c9 3dc8d3dc beedc0b6 3dce627b
    bfb7e622 3f7b5a41 bf0abc2c bf3effc6 3fcd3adf 3f2505a3 3f345ecf be3a9914
    be4a3c38 bf421552 3f6dd5bc bef2bc35 3f8340f6 bf84833a c0001705 3f82e849
    bdfd0d1b 3e5018d0 bea4f928 3fd85427 bf5c0ce9 3f2536a8 3fbc48b2 beba6c7f
    beff75d2 80000000 be278797 bf78baad be88da0c bf8b6537 3f2e06be bfae5b1a
    3e7e96f3 bde2efa5 bc863b5d 00000001 3f5e3950 3ff5c363 3fe49993 bfcbe745
    3ee556bf bfe4095c bf425ce4 bf91427f bfa32682 bec05832 bf468bcb 3f11ab2a
    be4c5a32 bf87e761 3e833842 be95ae49 4028eb23 3f0b059c 3f40d653 3ead0373
    3e901dca 3f457507 bf552214 3e1f5e08 3fd24094 c0114194 3f10976c be42a861
    3f242592 bfe9416c be9cbd09 bf0d8d1c bf371969 3f4cc38c bebd45e0 3ea43ea7
    beca1ae4 3ec41e38 bf31b0d2 3ebc2514 befcbf03 3e30bc55 3f59098c bf824698
    3eaea0be 4016d6b4 00000000 bfbf9c66 bfe0441e bf2d9b7e be1c1f5c 3ead4dbf
    3f990b98 3fadf3e2 3e8803fe 3eb925cb 3f92f671 3e31ae82 3ebb2c14 bea17a77
    3f9eb0c1 3fb96c9b 400540f6 bf09888c 3ff31dd2 be29dfb6 bfd0be35 3eaf2866
    bd5f4b3e bf2c8922 3f995e76 3f3a23f1 3fb176aa bfa6096c 3e16913e bd3aad36
    3e4df6d9 3fc5f6dd 3e800120 3e7f10e7 bfa1828e 3fda0c45 3c2b8188 bfc4b979
    bf6c83c9 3da8ba93 3fb477ff bfaa199b bff85e8e 3f139960 3f769349 3a22ceea
    be51a71f 3f1bb134 bf85c92b be51a380 beaf9915 3ecead6e bebd4815 3f882074
    00000002 40243f90 bf592344 3eecc895 3e9804f0 be2230f0 3f71172a be7de4f9
    be0704fa bd66875d 3e7e373f bf615a6b bf59a46e 3cb59934 bf628221 3e40f419
    beba4620 4020ac16 3f2f4615 3f40d005 be9867da bf7bb65c bef523ea 3eefdb82
    bf8246ae bf136c3b 3e646062 3f20ba55 be265633 3e33d70c bffc0971 bf925a17
    bfd9c021 be871f2c bf47e325 bfae5b4b bc693752 bf4cc6cc bfdbd692 c012d55d
    3f8ee221 3f4582bf 3f4f5528 be013e38 3d1ad34f 3f3c193b bfea89ea be30474f
    bea0805d bf41b0ef 3e928953 3f9395c8 3f9b044c bf101481 3fb71444 bef6aa8b
    bfd37754 bdcaf216 3fdeb5c5 3f11f32f 3ebe7d0d 3fc49296 bb4bebc1 3db1f7b9
    bf5d4c8d 3e04a125 3f9af406 bf63d49c 3fa53291 bf3ab102 bc8ae84a 3da3f129
    beb8ba43 beee191c bf3ad9cc bf4dda7b 3e3ffef9 be93682d bf743e67 bec4cd01
    3e6d6f5d be603fee bf766379 3f5120df be9458e9 bfe32d72 00000000 3e1d77d0
    bf9757e8 bf1c5c03 3f32c797 3e5f9239 beff8d1c 3f096358 bd8021bf be43c228
    bfb53a00 bf976571 bed7f6c5 3f8b1ed9 be7f5478 bf284230 3eac1fc1 3e40c6fc
    3f8362ac 3fd548e6 bebe0106 bffcee1f 3fb6bffb 3e89b406 3f51f40d bf42c10d
    3f219459 3e6cb18e be873e66 3e43994b 3eeed69d 3d88ef4c ba6b002e bf873bec
    3d5f6d27 bf43b6f4 bf1d249f bf0f3659 bfbd0002 3f6a442c 3e9f876d bd7b3e67
    be5a5ef5 3f45ac43 3d61d793 bf6c1044 3e237398 bf5ecc47 bf4f5749 bfaa99bc
    3f2924b8 3f0b0439 bdddee77 3fb46b05 3f87d405 3fc1910d 3e894bc5 c008ba46
    bf29f520 3f1aeec0 be2d53fd 3f0ba6a0 bede4fa3 3f9a61e9 3de34bc8 bfbb842a
    beb6efec 3f1ce7f5 3e4498c2 3f2329ea 3e9b4bb2 3f07f5c9 bedd8801 bf8d0cc5
    3f8285b4 461c4000 3fc9c7fd bf4a22a2 be5c5ed5 3f954e0b bfc6f943 3efa10ef
    bf40074f 3f259bce 3f5e8f8f bf5c1b83 3f2f9981 3e3a2f10 bfcef1d5 3f5a086b
    3f517c5b bfdc59ff bf8b789b becc3a73 00000002 4000ad40 bdcacaf1 bff35368
    bdbd336c be9b5060 bf1b59c8 3fad7e88 3f0100c2 be6d47ba 3fa52332 beaaca4f
    bfaabab3 3f2765bc 3bfbc9c8 bf5e67eb 3f9370b1 3ec7d27a 3ed83bb0 0da24260
    be4d63c0 3e124401 3ef85a23 3fe03758 bf7d7b2f 3f136dc6 bf7aa75a 3e4cf6f4
    bf093f54 bfa96ce5 3e19ee29 3f2ef6e8 bd9d549b bec0279b bfa9d42d be92c771
    3e39fa1f bf25eead 3e044c4b bf42d073 3fa54218 3f57aaeb 3f3b95be be50e3ca
    3fc24b2a 3edd597e bdb6bb4d bf4a10f4 bf4cf259 bf7cfbf8 3e97e606 bc38c8a6
    3f7345df bec1415f 3fbca5f7 be211962 bf9afd6a bf76110e bfa5301b 3e38157d
    bf4daad1 bfb5ece6 3dc6252f 3e8b0323 be9b2cd0 beafca94 3ea17109 3f326c22
    3ee187e5 3f3d878a 3f64beec 3f3d53ea 3ea592c2 3f6cf92d bfa27055 3f4da716
    3f91ee7e bf8421c0 3fdb1a10 bfa5ac36 beb42cd4 bd9d2d33 bff44349 bf8d33a8
    bff64293 bfbcf680 bf925296 3ed7f6ac 3f269db8 bf08a003 3d16edfd 400932dc
    bf2f9364 bf13861e bee15219 3ed85b13 bed7d4a9 bfd2677d bf075653 bf0905b7
    3da470d1 3fbcb77d bc8d4cf1 bf1a08c9 c0113712 bfacd1bc 3f858b2a be2a00b0
    bfba4f90 3ec4fb79 3effc239 00000001 3efbbf20 bc776ec0 3e1ccced bf6c82db
    3d257582 bc36f828 3b49a2a8 3f2c3292 bf762386 beffbff4 be29a155 3e4c6fbc
    bf8cfdd8 bda6187b c00cc63e bf52f743 3eb8bb3d bf671da6 bef1d968 bfab8925
    bfbcf201 3fbdad02 3f8f5258 3fbb5ef9 bf042f81 bf25a1f2 bf62fb9d bec37a45
    bf621bf9 3f0710ff 3e6f2226 bf8732cb 3f63d803 3d08f932 bf4b6afc 3fbfabde
    bf7a8918 3f29ee72 3f529849 be2a3903 3ff65187 bfb000b8 bfd9267f 3f156e70
    beb214b4 3ea324d3 bf0613f6 bfd7bb12 3fa07961 bf78c017 bf57299f 3f15e2e3
    be0f87ae 3fc4bed7 bfaf0c6a bfb5bad5 be00d954 3edb5d46 3f8afd7f 3eb68ee0
    bfdba133 3f84dadc 3f280fb2 bcf13c61 bf3025bd 3f694dd0 3d7bc131 3fae7b25
    3f0d330e 3dae7af3 3fafed68 3db8b0e0 3f3df55e 3fd92d8f bf47d668 3f31a5a4
    3ea34dfb 3ec16fd7 3f46eccf bce73f23 3f17f62a 3eb5b865 3f5a11bb bf87ca60
    bd0f144e 3ed16431 be6eaef8 3ec3fd6a bdfdc133 3f102e0b 3f57b6f9 bf7a69d1
    401ac0c3 bf6118dd 3d225c47 3da7bb6a 3eacf5d6 3f8ddf61 be7d4cf4 3d1e7641
    3e285dd9 bff886cb 3fb2e0b9 3f922634 3f351906 3f75f43f bebd3d3f be39eabb
    3fbee12b bf9f0976 3f9cbda8 00000000 bf208392 3d23ba06 3d1ed000 3f85d8bc
    bebc9e1c 400ffb27 3f7a9c2a 3e98f298 bf9b195b 3e3c8d6d be7cd42e 3f9cbe1b
    bd7f327e 3e8e141e 3d32460b c00c1db3 3f2b4681 bfb6aa52 bf96616c 3ddc1eb0
    3edf78f1 bdbb9dff bf049737 bf2190b2 bf7f897f c02e52b3 c000578f bdd710ee
    4016f054 bf9f13cc 3f89d131 beda6585 3f8054fa 3f9abb7a 3f9f3a0d 3cda7eb4
    c0045f6e bfa61571 3f1c86ff 3f42b0df 3ef57041 40069c3b 3f996b63 befdafc3
    bf6972e7 bf8ae337 3f89004f 3f2cd514 bf93918e 4003341b 3f9f41b0 3ba7a0cb
    3f224e01 3e955051 3fb403f5 3f022a01 bfd0d3ce bf5d7880 bc77147d bedc462b
    3efc280b 3e5f751c 3f9cf4b4 3fcba7cf 3f8aa443 3df9135f bf692511 bf3780b4
    bf3dd5cd beab1c1a bfc4dda0 be5cb0e2 bf256067 3e51e2de bf1d544a bfd1f7bc
    3d31223f 3e064536 400789ad 3f9782d6 3f976d12 bd6583af 3f90a420 3f0ab6e7
    bf9c0dee be80bd39 be34e661 3eac7085 3fc23530 bfbcf2fe be806bff 3e9f093b
    3e57b1bd bea98529 bdfdbc69 3f2a8c5d 3e868c0e 3fbe15e7 bf1bc0ef 3f45a072
    bf637d03 bf2e9871 3f855e07 c01e5573 3f5a7cec 3d237b1b bff3b590 3eb7d0f2
    bdbac2a4 bf47ca6e 3fd319d7 3f0656bf c008c649 40068cf8 bf0b306f bdef792b
    3ec95d23 3e353acf 3f1584bd bf6cf7c5 3eadf4a3 3f0bd5e2 be2585de 3f83d3c9
    bf933fbc bffc6f60 be924fc2 3c52780c 3eb8e305 3f58402d bf7faed0 3fa51a1e
    3f47d237 3ffd315f bd8ad8ec bfb856d3 bf8d833f beab38f9 bfa4e2a9 3e64f505
    bc673263 bf21b334 be913b69 3f64dfb7 3d813a9a 3ea6c940 bfb46de3 be84ee6f
    be0a3127 400ceb0b c0082451 bfd0a331 be59e999 bdaf698b bf118597 bc36aafc
    bf7d2d31 3f85204f bf8b8299 bee62490 3f094caf 3f62b985 3e91f510 3ef30d3b
    bfd69975 bf69b03f bf68f647 3fca9ba4 3e41a175 3fcd370d 3fd5b27c 3f74d73f
    3e09c1fa 3f2c9167 3e40ae3e 3ffcfecf bf8b9ca8 3f44f65c 3f7e9152 3e544d80
    bfd03865 3f1e1f49 3fa8e7fa be8fd4f0 bfb0ab52 3fd4c21f 3ea341c1 3f249230
    bdf5ca14 bf2f2e6e bf601845 beff5b3c 3f85db42 be3cb0b3 3f46957d 3fb33137
    bd8322a9 bea301cd bec223e5 3ecbd4d7 3df9b29c 3f31689f 3f380a7a bf2bb8f0
    3e5da1ef be9fe4d3 3e5db3cd beb60081 bf33a7a5 bfe52ce6 beea2957 3e3400d2
    3fd3836b 3efc3e03 be8f8a05 3cfc2443 bf8bb5e5 bf8ee94f 3f595ad8 3ee3d3dd
    3f6621da 3ddb8766 3d9fcbe3 bfa48e85 3f62ab9a bf36c357 3e440bce be799422
    3f8e496f 3d0b6ac3 bd988eb4 3ea2b2f7 c0047f1b bf10df4d 3eda835a 3fa6ec80
    3e1d9829 3d5116f7 3fb0836e 3f1f2c27 bfb0eefd 3f8f00b5 3f77e493 bfa903fe
    4015e67d c0051ef1 3e6b9564 c0095192 3eaea773 bf50cc99 3ecb80c7 be143f54
    3dd037e6 be3d4c85 3d6f72bc 3e245089 3f55218d 3eb47242 3ecb7406 bfe3fa67
    bf088b69 3fe901bb bf5cfe4b 3ffa2337 3e935ae2 bf93a217 007fffff bf01865a
    bf17135a bed580a8 bf7f2864 beba2f95 bea39703 bfbb416f 3fec21d4 3e958dad
    be3409ad 3e2c294b 3edf7ef9 bff9b77e 3fed36f4 3ee79e5f be0d6329 3f74743c
    bfd57ee1 3e241035 3e734e72 bfa5f55c bde57e8f bf02fa77 be53f0e3 3f01f3e4
    3ce07f09 bf9aa9bc bf44a11e 3f8d9f35 40531413 be42dce0 be275a96 bd0fabf1
    bf35d30e be4fc27e 3f7b8c6e 3fbdbb7b bf3f0de7 bf25ce88 bf306770 bf192cfe
    bfd77a10 3f469401 3f083462 bf862b5a bf242384 bdcdb75e c009ca3e 3e06405a
    3ddf6909 bf37b64c bfdedbb7 3f139a4f bfc0d6b3 3ffa2b30 3f865dbb be9e79ed
    3fbe5d31 bdf02672 beeee421 beae8c7a bead7f6b bfcacb7f 3f04d3cb 3f924574
    3fdebd92 3ee59641 bf79bd37 bf2bf9d8 3e52dfd4 bf74522b bf2f759b bed0dd63
    3e9c544c bf138d90 bfab47ae 3f85586a be18465d 3ef2a6db be9aa89d bfca92ab
    8da24260 be2b3469 3e88a541 3fa4683e 3f5ee83b 3f81fc94 bf01e4b4 bedfabbf
    bf62f07b 3f0a804c beeed1f1 bc1077bf bf1502c4 bfe36205 3f9cad4a bf94725b
    bee92584 bf4adb07 3ea9060a bd0e434d be51e424 bf584d4f be84a5a1 3fdc2bf3
    bf22e1ca bf1afadd beb1ac70 3f7eb4f7 3fc5a9ac 3e051f36 bf872441 3f5f0595
    3f8016a1 be3a1dac bf81e4d3 befa9539 401ae096 3da783b5 bf6ddc86 be6eb0a5
    3e0fc2a0 3e2df0fc beb8b206 bf002f97 3f8129c3 bc99626d bfcc9d9f 3e1e48e0
    3f1efbc0 bd2cc973 3ecaf2bd c0012af7 3d1bf57f 3f4412ef 40095345 3ea2bfb9
    3f6719d2 3e175303 bf444c45 3f96a483 be80c4e2 bf200fc7 bfd74539 3ea91f71
    3ec045e2 bf056cf8 be216f04 beb00b33 bf6899f3 3f897fd9 bfa2dc3f 3ea55dff
    3f2d19f5 3dc0fd75 bf218edd bf1bc327 3f672ee6 3e9cfe80 bcbc5105 3ee2f722
    3f242631 3f848fef bd18ef13 3f778fac 3f228273 bf5a521f 3e357e50 3f99a0c9
    bf4510c5 befe7b13 40060864 3fb9c015 bf6f70b7 bf5b9989 bdaebf18 80000000
    3f8d0f8a 3ecdde63 3f3500e9 befb524b bf556384 bf941ebb 3f80dcc1 bf8a3059
    bf9c45cd 3dfb7ed3 3f10bb97 bd938341 be365825 bea6b47d bfacff4b bf309a46
    bfa74823 be3ea0b5 bfa5ad09 bea1b47d 3f8a1d87 3f2ed018 3e99382e 3fe8e07d
    bebf28ca bd20ab58 3db9aa2d 3e9a4673 bf6f1273 3fc939eb 3faaa004 bf647688
    bf3a0ebb 3f15e18a be8789f0 3db0e582 bffe036c bf08ec89 bdb4e779 3fc80ce2
""", (64, 17))
i = 29
w = f32("""
    bf5f4f66 bfc20012 be889ca5 bf703d8e 3ee8efbf 3f81f116 be291838 c0118a1a
    bfdb53db 3db9df41 3fb5f85a 3bb06e91 bd759f56 3fb3350a 3eeb6821 3eebe6d2
    80000001
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
