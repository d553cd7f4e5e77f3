"""tensorflow (eager) against the conformance law batch_invariance/log_softmax (bit for bit): log_softmax: row 0 in a
batch of 33 against alone.

Found by bendtorch's conformance laws on Intel(R) Xeon(R) Processor (family 6, model 207), 2 cores: 2 of 17 elements
differ; first at (0, 2): c03dc75e against c03dc75f. Run with python; it prints how many elements differ and the
first, as bit patterns (got against want).
"""
import numpy as np
import tensorflow as tf


def f32(hexbits, shape):
    """A float32 array from its bit patterns (hex words, C order)."""
    return np.array([int(h, 16) for h in hexbits.split()], np.uint32).view(np.float32).reshape(shape)


def _log_softmax(x):
    return tf.nn.log_softmax(x, axis=-1)


def log_softmax(x):
    c = tf.constant
    return _log_softmax(c(x)).numpy()


x = f32("""
    3f00bf6c bf07467f 4023f2bd 3ed6d5df c00921a1 3fb922fd 40a6e979 407273e6
    c03427fe c0a1f955 c01f8eea 3e29456e c114cd4e bf600aec c09f7a03 c03b75e0
    c00b548f bfa1f218 3fd2c13d 40857114 bf039e97 40aee846 c02a4a33 c61c4000
    406749d2 3ec08985 c03e55f8 c06bf632 bfea5b0a 3f617ad5 c0813b2b 461c4000
    bf230be2 400a74db 3f5bcf9a 3fb5f369 c0276150 bf04b970 4048b29e 40bf28c0
    c0a1290f 40c1c841 40ac45a5 40480406 3f8766ba bfa0ba7e 40baa06c 40fae9bf
    40e69bf9 40a85552 3fb6fa91 c09aaa2f bc91f3fa 40280ebe c0a4e907 3fca4d70
    3fdc1718 40322fdb c097912d c0296557 bfdf7471 c095bc12 40dea39b bffde803
    3fa86eb5 bf84639f 40caaf3d 40a90197 40222366 c10d064e 3e551c55 402f060f
    408081d0 c01e2f28 40e937ab c0a903e2 c02959e7 406f5f70 3e48ed7e 41002733
    80000001 c0221902 bfc15001 c08baaad c0a38b06 402162a6 4014c748 40a5b41a
    c0412dd8 40d834ac bf93247b 40c98636 bfdd961b c03c48a2 3f7fc7bd 408406a8
    3f24dfb2 c015e538 c0abad16 c0b36504 4000afd3 407d5dd5 bf283cd7 c08984ca
    405f7fb1 c0a3e3f3 c0368ba1 401efb07 c1100250 3fc5d23c c014e66a 3edfce09
    be9b0967 3f4ef713 4031b541 c0422485 40b5e2bd 4039e148 4057fedd 40951a43
    40499f62 4058158a 3e9ad0d3 c0b6a087 c61c4000 c044fee9 c0b61c67 3f8453ed
    c0118c75 c083d0a2 c085810f 3f896df7 3fb7a3da 40a94649 bd63fa5a 40855b01
    40b37d6a 409338a1 c1176124 409d4582 3fade2ac 3fd8f88f 3fbe1185 3fc3f8bf
    3fa38a43 bfb7c37c c0f368c9 bedf0eaf c04dc15f 408a42cb bf93d934 3eaaf521
    c0597fc7 c002b827 bd3cf52b c0be20c6 3f99f366 bed93c69 c097c5ab c1197ca6
    40035762 bf985cef c007aea2 bf71d285 40e88249 be4bfc1a 3eb16571 c0be5867
    40d2dc02 406ae07e 40889152 3e43447b 406aa9e3 3fbdecbe 401cf9f6 bf1bd879
    c0bca85c 4083b180 c0f7acc2 bf75b1f5 bf516e58 c0857c71 401cf5a3 bf4d233b
    bfdfad35 40051459 bff4022b 40b1ca19 3fb3f1eb bff2dbc6 c0f8ddad c0a76475
    408b1d45 be4f4635 bf90f5c5 40d25612 c0a42dda c015edab bff1f703 40161a33
    007fffff c01d08f4 c0cd7589 403ab6a4 00000000 bff3e7a7 3f274296 c0a5756e
    bff1917e 40b060b2 3f0afcff 4113dcff c0498577 40148d85 bf4832ae 4010d970
    bcec4d45 c00faaae c05e1c22 414439f2 be9e6716 c10110f8 c0260ab0 402d9403
    c000008d 40ae231a 40804e96 bf1bfea9 bff1c64a c0809d52 c0333102 c0bc8ff4
    409a29a8 40cb9c15 c0a0c922 c0974163 807fffff c076bf27 c146ce39 c0923632
    40a60153 bfb0fbfd 405ac608 bffa5a27 40e15d8c 3f4bffcd bfc395ce 41235aea
    bfa6212d c09c510c 3f4ec17f be1f117d 40887d53 c06bf033 404e01ee 405a4db9
    c02aed8e 3f272970 c054ac29 80000000 c034427e bfe7f960 c0886d61 bfb136cf
    bcc08baf 40448dd4 c01c48da bf3e3b87 c0b54f86 c053d0a2 41305f27 40854775
    c0480b68 00000002 c079bfcc bdb1b108 3e0e3eba c03e8e6b 8da24260 40b61080
    3fe74351 bfbfc761 bf61f503 c0078f4f c13be82b 3eece01c c0890799 c08057f6
    c023e83d 403b7820 c095d3f4 c0b79689 4023cd58 40411e52 c0757cae 400ff94b
    bf9550d9 3f9a42f8 c0a16725 40553892 409a0464 4023173b 400eef5e c1716cf5
    3f857143 bdd072b2 bf169319 c0216d8f 3e62c662 3fd3010d bf870f3e bfed38d2
    409d6893 c08d7cab 4083dc20 3f350e54 c04de6fa bf947882 c06b84b3 402cd107
    3fb2202e c00e8a32 c08d157d 3f9a7a88 40751739 bee92308 3fd6324d bfc086a1
    3e8a61b9 bf952309 3f968cb1 c0c1403a 4024e9ac bf6b736c 3fb79b7a bfae3d21
    3fa40662 c08949bd 40983636 c0da0dc0 c08505c7 3f715272 40bb3e6a 3f8e6692
    c61c4000 c0b6695b bf43de08 bda2d51d 40d8648e 401f4399 c0c3b951 4101b6c0
    bfca3ebc c0612446 40bcc6fd be4bccb2 bfbc1c32 3f60096f 0da24260 407e4b48
    c0b006a2 40ffce3e 40726585 bfc226a4 c05193b1 c0781133 3efcadd6 c025e465
    c043cec8 404fae5e 3fbaa892 bfca053e 403bf7a7 40af0643 c08c1875 c01a7156
    40714faa 40380c7d 3f6823bf 4094ca38 c08b4a86 c0bd5463 c05dd36d 3efaf866
    c04bcc58 bff974a8 c079999c c01ed472 c0809cde 3fbc2488 404b7dfb bff5fd03
    bf543d7c c014be8d 40080014 3eb66303 40cc0d55 c08c386d 3fb999ed 3fe352d7
    bfb88b9d 4015627e c0b82183 41079a78 c0abc81d 406b787d c08f80f3 40935023
    bfc5011a 3f22399d 3e5a7efb 408ce4db bfa4a1de c13de657 c0429336 3f3c1f15
    bfe1850c 404512fb 4081f63c bf17517e c0beacb3 40b12c53 408aa17f 80000001
    4106ee33 bfb29fce c0918d24 bf1f9d49 4089f675 c06ffcf3 40f9c1be c06582be
    40745505 400b61e3 bf1dc122 408a4ee8 c0bff968 40adc4ea be826cc6 c00add09
    403fc9df 4087aac5 40451150 40ffefbe 408a553b 40a449f2 c00a3486 3eda2923
    40101fa0 bd91582b 3f9a6fef 3fda2a67 4058205f bed01852 bfb318e2 c0540c7f
    c0644892 409612e2 bead199a 40497530 c0a61005 c0f815e4 c086489f 4092c4ac
    4088b6c3 3faa00f7 c04d5b06 bf05f121 bf987410 bfb0a059 c1206373 c05ba110
    bf42abe7 40c21a4e 3f2499d4 40b3504f bfc993f4 bf816066 c1799020 3fed39a2
    400c0e76 40e1c2db bff938c4 3ec0d3e5 c0349d7b c0968f97 c0368e3e bfb0a3a6
    40ad7efe 3c10f089 c04a6125 3f11486c 3f5ecb07 c02d1d8b 4092557b c0f1b56b
    bf5aab71 402a41c5 c0ab51c2 3fb8f640 40a57d85 3fe8479a c0d85729 c03a6afd
    409dbc1e 3f98bf66 bd218763 3fe1e50b 403896aa c0355dfa bf94af52 3f1257f5
    c00b40d0 bf08a786 40a620a9 c077c30b 40f69ce2 c61c4000 c0db51fc bf10683f
    3faf7545 c042c873 c03db774 bf731d1a 403d3ac6 c002e6c6 40e9d11a 3f947779
    bed212fe 40b98157 402053f7 3fbd1328 bfa98b3b 40e830ae 404fd38a bf504b10
    c0c9e1a9 3fbef381 c0926613 c0dba41e bf8eecf2 3f901cfb 40a42858 3f909d87
    404e574c c09ce9b9 bdb89567 3efe6281 405cbc2a 3eedb138 404dd81e c0011334
    3fb745de 3fd4695e c09ff8a7 3f33c066 bfa4068f c0f3b927 00000000 bfb9458a
    c05a363c
""", (33, 17))
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
