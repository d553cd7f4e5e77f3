"""torch_compile (static shapes) against the conformance law batch_invariance/layer_norm (bit for bit): layer_norm: row
28 in a batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 11 of 17
elements differ; first at (0, 0): 3e280140 against 3e280158. Run with python; it prints how many elements differ and
the first, as bit patterns (got against want).
"""
import numpy as np
import torch
import torch.nn.functional as F


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


_layer_norm = torch.compile(_layer_norm, backend="inductor", mode="default", dynamic=False)


def layer_norm(x, w, b, eps):
    t = torch.from_numpy
    with torch.no_grad():
        return _layer_norm(t(x), t(w), t(b), eps).numpy()


x = f32("""
    bdace3fb 3d6faba5 bfc0404c 3fad4658 00000001 bfa8e035 3f97be7b c032ea70
    bff72791 3f8978a2 3f073175 beb494f1 0da24260 4040dacc bf59616a 3d3f088b
    3e84300b 3f61cd8b bf910383 8da24260 be071d77 3ea0d7cd bef01ed7 80000001
    3f25cfd6 3f0a137e bfe18643 3f3f69c4 bff73f9d c0050a1f 3f94220e 3eed3418
    be49c3a1 bfb44470 bf234cef 3f6a9f23 be2cecf9 bf1100c9 8da24260 be9091a7
    be0c1b51 4000e3c9 3fe66187 3f05beb6 3e95f253 bf0586af bfae37f0 3d1db3f0
    bf6595f0 be92a963 3ed20765 3ee71ccf bf48925d bf75a5d1 bf58f561 be3d4d7e
    bf43420a bfc8b1b7 be47260a 3ee8f237 bfcf17f9 bfae3672 bf56c4a1 bf617ec4
    bbdf58b1 bfea66d5 bf9dab99 bf6fff59 3fad1eb8 3e1a4d6c be7d4b71 3f78e04c
    3faac87f 3f44eaa3 3e90cb45 bfa053ed 3d61fd10 3dd68dfd 3f5fbbd8 bf7cef27
    3f6503eb 3d6a417a bf046277 3f1c8ab7 bef89a6d 0da24260 3b338626 bf904905
    3f8a9573 beb92ef1 bfed1688 3f38a4ca 3f3f64d7 80000001 be4955c6 bf6e14b8
    3ef22542 3fd526ba bfc85886 bf881718 be95a9a0 3f212d7b 3d1b607b bf2fb680
    bf532cde 3d427e5e bf31dcf0 3f841bf4 bd24274d 3e97d98c 3f3d75d0 3f9a937d
    bf67a166 be9344bf bf0fe758 be951c96 3f914a0b 3f1231e8 8da24260 bf130616
    bf7c48fb bf5de8ce bef66b0b 3f2d1dd9 bf6f021f 3ec8f507 3fb7f2eb bf18662f
    bdd879d4 3fe88704 bf86689e 3f2ccb33 3f01d70d 3ed561a7 3facae7a 3d82bf4b
    3f825cfc c003cb60 bf9c9ba3 3ee22e41 beafd245 bebfaab9 bfa00b5e bfb92080
    bef0b622 bf793286 3f6191f2 be499436 bea6af65 3e54ff7c c0045bd0 3f458ba1
    bf3da56d be5b1768 bd9b27a3 3f953e71 bf393c87 bfe4127e 3f866ca1 bfc5d026
    bf4863f0 3e7068d1 3fb3ebf8 3f682024 bfaa7221 bebf2984 3ec64302 bfaaac3e
    beeb9b68 bf3a589d 3d530b70 bf98fb9a be233685 bfb97f1d bf1186b4 3ed61b9b
    bd8b2ce4 3e1662a9 3d828489 be01dd8a 3f27e46c bf4a4d84 bec7b5c0 be2d2ee2
    3f896ce7 3f6b1c56 bf5caa64 be74c1a5 3f89bc7f 3fb229d9 3fb8c56a bf64199c
    3ef9bf7c 3fc5398a 3ec2da26 3c9fb538 bdf4a0ab 3fe05db1 3f174f13 3f92c343
    bf6dfbc6 be8c922e 3fea61ec 3fdad1d8 3f49a34b 3eec9758 3fd11229 3c8fcfcd
    bfc17ec0 bf76f1a9 bf6dc003 bee9e77f 3e7be6a6 3f0ba6bf 3fb64dff bf60e210
    bf20cc49 3f85fcf0 bffec1ab bddd6f13 3fcd5db7 bea9d0b7 3f3ca3fc 80000000
    3f296982 3ebc5d44 3e87cc9b bec5d83f 3f7ad28d bfa0aeaf bfb234cd 3dbb05a3
    3fb6a87d bf13cdf4 bfe7654f bf115faf bf4f7937 be38aab9 3e9842cd bf07e191
    3f83ee35 bfe96623 3e55a600 3f35886e 3eeeff48 bed19831 3f39827a 3f42f2c1
    bf1ee84a be5ba4ea be8e4eec 3f849957 be18d225 be9ae70e 3fa8063d 3e985210
    bfdabf8d 40134491 3f838315 3c4c52e7 bf993b83 3fd411be c02ba5cd 3f9bf593
    3e77c959 3f43e3dd bf5b4975 3e81d606 bf28bb20 bfc5258a be82f9bf bdcfbc70
    00000002 3e170b53 beee1d0d bde4a17d bfcdd776 3d71e5d2 80000000 be3bf22c
    c048a4b1 3f39af83 bd42f15a 3f5d71b6 befb6ef2 beecdbde bfe2e50c bf79914b
    be7710bf 3e810eec 3f42d50d bf364985 bf1ff492 3ef9e2c6 bf85349d 3e26aeed
    3fc58fae bf52bc40 3fc28f7a c03b4700 bf95db99 3f9e27b4 bf985da9 8da24260
    400de910 bf827208 bf13f90f be726635 3ee807ec bd7cbf0b bf0f6db2 3f2db199
    3f76a212 becc77bd bf501c3f 3fe75f88 bf5d02f6 bf035ef3 3f8622cf 3f234885
    3f7714d8 bfdfa8be 3f085fe6 bf8047dd 3eabd8c2 bfb8bdff 3fd2b525 3d3005c7
    3f898d58 bfd3325f 3ddfbcc4 bf89753c 3dbfc1ff 8da24260 3f96660b beff51a5
    3fff0736 3ef78615 bf84bb01 bff2ca95 bf4e8f61 3f3085d4 3f1384be bf9f68ff
    3e053014 bfcfceeb bf3ea7ab bfc973f8 3f91800b bfc2833d bf985a71 bf1b9ccf
    3ec1d8b1 bfd3494c bf7d7408 3f46b5e0 bde86480 bf33f75b bf2dd051 bfa445ec
    3f990313 bf35f690 bf0afc69 3c6aebfe bf9f65a4 bdce7e80 3ee88fb2 3f837a6d
    bf675a61 3fc78a56 3f3f720e 3d6da71e 3f491b11 bf4b72eb bf417398 3f8597fc
    3f1a6c5b bfaf7d69 3f89a5ba be829998 3f4f0193 3f4e557e bff9700e 400713f6
    3f24310a 3f099503 3fa861bc 3f0243ce 3ece84d2 3f55e49d bf3287ee 3fadfc28
    be265055 3ed264d3 bf84cc06 bf0760e0 bf67cbad bf519b0f bf9dfbd2 be130622
    3ec69b53 bf9fd8f7 be9e54bf 3f0a188c bf3f4516 bf672b43 3f98a6df bfdf2a6f
    bf9c9f49 3f13ad45 bf305a9e 3fd0a844 3ed7b56f bdbe2295 bf40d906 3f84a0f8
    befa1b7b bded8cdc 3e693874 3f4c0deb 3f97ba4e 3db16230 bda326a1 bf81da1a
    3e60b18f bfa502cb 3e558e3d 3ef4bdfc 3f56841f bf5385b4 3eddcf05 bff15170
    3faecf8e 0da24260 be938669 3f118d10 3dd94b44 3ed8fd04 3f369b56 beba7458
    3f400fe0 bc4bf816 be39e5d9 bdc34a83 bff2e48b bf775404 be05ef9a bf944572
    bfb8fa7d 3f3351c5 3f2ccbc4 bf57e6f6 3f2e4511 400bbee1 3f294cca 3f600895
    bf31b9bd 3e1b4d24 beb82aea 3f7de848 bf475a63 3fab5e8b bea39244 bfec627d
    befce703 c01c9852 bf26b9d4 bf017fcc 3f3821e0 3dbb6027 400dc87a 3fba5b1a
    bf182844 3f8f19a3 bf9abd10 3ea10f4d 40089825 3f1947e2 3f80d4e6 bf9c005c
    3fad57fa bf5953a9 c0264617 3f1407fd 3eff342b bed73d38 3e790d5d be91a8bd
    00000000 bf1dfaf9 bf5fbafb bc41512e bf7b8bb7 bff309aa 3da0fc3d beb1db5a
    3ede77de bfdcd7dd bc35350e bf93ad8f 3e891126 3ff7ae7c beaa6ada 3e45fd72
    80000000 3f1ac574 be8c07d1 bdea5afd bc8a8c83 be39e226 4020dae3 bf512483
    3feb744f bf5edba0 3fad784a 3fd7915e 3f8f2e53 bfbdf507 bfc93dee bf08fe9e
    3fdcca39 3f8d9b8b be440583 bf3dd012 be260ded 3f603e51 bf14ef28 3e8ae0e0
    bf3fd1fe 3f562c3d 3f0db24c 3fff2eba bf5da4d4 bf913d1b 3e9aa423 bfce3923
    bf7bb01c bf817785 bf7843d8 bf559395 bf4bdbb6 3f125c88 bd2d15a1 bf365f28
    bfab062a bd311b02 3e472109 3f4f5886 bf4aeb80 3e8176da 3fb62fdf be16c87b
    bda82c77 3f83d4c3 bfe093b1 bfe5d6b5 bf207805 3fbb2800 beaf4115 bf53d260
    3f950151
""", (33, 17))
i = 28
w = f32("""
    3f2c1d27 bfe3dcba 3f24a140 bf2f67f6 bf0a43ff 807fffff 3ebfc169 3f7c81b2
    bfa89d79 3f29c5e8 bf5ccef8 3f3f76fa 3f3d9b03 3f86a9a8 bfb2b5d0 3f303618
    beffabf9
""", (17,))
b = f32("""
    bf9cd5c4 3fa37bad 3fcb98f7 4004d669 bc6b5758 3fc2b106 be9481d4 bc7a61bc
    3f654e3c 3f13298a 3f79d466 3e530312 3d1e2d7b 3fe2a322 beadd95d bf27169b
    3f313e04
""", (17,))

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
