"""Interchange with PyTorch: a `tiny` Llama trained in impl, exported under Hugging Face's names and
loaded into the PyTorch reference model, gives the same logits within the reference bounds
(tests/reference/test_llama_vs_torch.py: 64 u normwise against the float64 oracle); a safetensors file in Hugging Face's naming, written here from the PyTorch
reference model, loads into impl and gives the same logits within those bounds; wrong names, missing tensors and
wrong shapes get errors naming them."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bendtorch import impl  # noqa: E402
from bendtorch import oracle  # noqa: E402
from bendtorch.impl import llama  # noqa: E402
from bendtorch.impl.interchange import (InterchangeError, load_safetensors, load_state_dict, save_safetensors,  # noqa: E402
                              state_dict, to_torch_state_dict)
from bendtorch.reference.torch_llama import TorchLlama  # noqa: E402

U = 2.0 ** -24
B = 2


def rel_u(x: Any, exact: Any) -> float:
    x, exact = np.asarray(x, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    return float(np.max(np.abs(x - exact)) / np.max(np.abs(exact)) / U)


@lru_cache(maxsize=None)
def trained() -> tuple[Any, Any, Any, Any]:
    """tiny, 5 AdamW steps in impl on random bytes; the parameters, a batch, and the model."""
    cfg = llama.config("tiny")
    m = llama.build(impl, cfg, B)
    rng = np.random.default_rng(11)
    toks = rng.integers(0, 256, 4000)
    tr = impl.train_new(m.layer, impl.adamw(lr=3e-3), m.init(1))
    for _ in range(5):
        x, y = llama.batch_at(toks, B, cfg.t, rng)
        tr = impl.train_step(m.layer, m.loss, impl.adamw(lr=3e-3), tr, x, y)
    x, _ = llama.batch_at(toks, B, cfg.t, rng)
    return cfg, m, tr.p, x


def oracle_logits(cfg: Any, p32: Any, x: Any) -> Any:
    mo = llama.build(oracle, cfg, B)
    return mo.layer.fwd(llama.cast(p32, np.float64), x).y


def test_impl_weights_into_pytorch_give_the_same_logits() -> None:
    cfg, m, p, x = trained()
    sd = to_torch_state_dict(m, p)
    assert sd["model.norm.weight"].shape == (cfg.d,) and "lm_head.weight" in sd
    tm = TorchLlama(cfg, {k: v.numpy() for k, v in sd.items() if k != "lm_head.weight"}, torch.float32)
    t_logits = tm.forward(x, B).detach().numpy().reshape(B * cfg.t, cfg.vocab)
    i_logits = m.layer.fwd(p, x).y
    exact = oracle_logits(cfg, p, x)
    assert rel_u(t_logits, exact) <= 64.0 and rel_u(i_logits, exact) <= 64.0


def test_a_huggingface_safetensors_file_loads_into_impl(tmp_path: Path) -> None:
    from safetensors.torch import save_file
    cfg, m, p, x = trained()
    # the PyTorch reference model writes its own file, in Hugging Face's naming and shapes
    tm = TorchLlama(cfg, {k: v.copy() for k, v in llama.named(m.names, p).items()}, torch.float32)
    tensors = {k: v.detach().clone().contiguous() for k, v in tm.p.items()}
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    q = load_safetensors(m, path)
    assert np.array_equal(m.layer.dump(q).view(np.uint32), m.layer.dump(p).view(np.uint32))
    i_logits = m.layer.fwd(q, x).y
    t_logits = tm.forward(x, B).detach().numpy().reshape(B * cfg.t, cfg.vocab)
    exact = oracle_logits(cfg, p, x)
    assert rel_u(i_logits, exact) <= 64.0 and rel_u(t_logits, exact) <= 64.0


def test_export_then_import_round_trips(tmp_path: Path) -> None:
    cfg, m, p, x = trained()
    save_safetensors(m, p, tmp_path / "a.safetensors")
    q = load_safetensors(m, tmp_path / "a.safetensors")
    assert np.array_equal(m.layer.dump(q).view(np.uint32), m.layer.dump(p).view(np.uint32))
    q2 = load_state_dict(m, to_torch_state_dict(m, p))
    assert np.array_equal(m.layer.dump(q2).view(np.uint32), m.layer.dump(p).view(np.uint32))


def test_bad_state_dicts_name_the_tensor(tmp_path: Path) -> None:
    cfg, m, p, x = trained()
    sd = state_dict(m, p)
    bad = dict(sd)
    del bad["model.layers.1.mlp.up_proj.weight"]
    with pytest.raises(InterchangeError, match="missing tensor: 'model.layers.1.mlp.up_proj.weight'"):
        load_state_dict(m, bad)
    bad = dict(sd)
    bad["model.layers.0.self_attn.qproj.weight"] = bad.pop("model.layers.0.self_attn.q_proj.weight")
    with pytest.raises(InterchangeError, match="q_proj.weight"):
        load_state_dict(m, bad)
    bad = dict(sd)
    bad["model.layers.0.self_attn.q_proj.weight"] = np.zeros((3, 3), np.float32)
    with pytest.raises(InterchangeError, match=r"q_proj.weight': expected shape \(32, 32\), found \(3, 3\)"):
        load_state_dict(m, bad)
    bad = dict(sd)
    bad["lm_head.weight"] = bad["model.embed_tokens.weight"] + 1
    with pytest.raises(InterchangeError, match="tied"):
        load_state_dict(m, bad)
    bad = dict(sd)
    bad["model.norm.weight"] = bad["model.norm.weight"].astype(np.float64)
    with pytest.raises(InterchangeError, match="'model.norm.weight': expected float32"):
        load_state_dict(m, bad)
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(InterchangeError, match="junk.safetensors: not a safetensors file"):
        load_safetensors(m, tmp_path / "junk.safetensors")


def test_bfloat16_safetensors_widen_exactly(tmp_path: Path) -> None:
    """A file as safetensors.torch writes a bfloat16 model loads, every number widened exactly (a bfloat16 is the
    high half of the float32 of the same value), and equals PyTorch's own widening bit for bit."""
    torch = pytest.importorskip("torch", reason="torch writes the bfloat16 file")
    from safetensors.torch import save_file
    cfg, m, p, x = trained()
    sd16 = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in state_dict(m, p).items()}
    save_file(sd16, str(tmp_path / "bf16.safetensors"))
    q = load_safetensors(m, tmp_path / "bf16.safetensors")
    want = {k: v.to(torch.float32).numpy() for k, v in sd16.items()}
    for k, a in state_dict(m, q).items():
        assert np.array_equal(a.view(np.uint32), want[k].view(np.uint32)), k
        assert np.array_equal(a.view(np.uint32) & 0xFFFF, np.zeros_like(a, np.uint32)), k  # low halves zero


def test_odd_names_print_with_repr_and_keys_must_be_strings(tmp_path: Path) -> None:
    from safetensors.numpy import save
    cfg, m, p, x = trained()
    sd = state_dict(m, p)
    bad = dict(sd)
    bad["evil\nname\x00"] = np.zeros(2, np.float32)
    with pytest.raises(InterchangeError) as e:
        load_state_dict(m, bad)
    assert "'evil\\nname\\x00'" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InterchangeError, match="name must be a string, found int 7"):
        load_state_dict(m, {**sd, 7: np.zeros(2, np.float32)})  # type: ignore[dict-item]
    (tmp_path / "i8.safetensors").write_bytes(save({**sd, "model.norm.weight": np.zeros(32, np.int8)}))
    with pytest.raises(InterchangeError, match="'model.norm.weight': dtype I8"):
        load_safetensors(m, tmp_path / "i8.safetensors")


def test_tensors_without_dense_float_data_are_refused_before_any_conversion() -> None:
    """A meta, sparse, nested or quantized tensor, a float8, complex or integer dtype, a value that is no tensor and
    a state dict that is no mapping: one InterchangeError line each, naming the tensor; nothing is converted first
    (a tensor expanded to 2^40 numbers is refused by its shape, without a copy)."""
    import warnings
    cfg, m, p, x = trained()
    sd = to_torch_state_dict(m, p, with_head=False)
    n, e = "model.norm.weight", "model.embed_tokens.weight"
    t = sd[n]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensors are deprecated, sparse CSR tensors in beta
        bad = {"a meta tensor": {n: torch.empty(t.shape, device="meta")},
               "a sparse tensor (torch.sparse_coo)": {n: t.to_sparse()},
               "a sparse tensor (torch.sparse_csr)": {e: sd[e].to_sparse_csr()},
               "found float8_e4m3fn": {n: t.to(torch.float8_e4m3fn)}, "found float8_e5m2": {n: t.to(torch.float8_e5m2)},
               "a quantized tensor": {n: torch.quantize_per_tensor(t, 0.1, 0, torch.quint8)},
               "a nested tensor": {n: torch.nested.nested_tensor([t[:2], t[:3]])},
               "found complex64": {n: t.to(torch.complex64)}, "found int64": {n: t.to(torch.int64)},
               "not an array or a tensor (a list)": {n: [1.0] * 32},
               "expected shape (256, 32), found (1099511627776,)": {e: torch.zeros(1).expand(2 ** 40)}}
    for needle, change in bad.items():
        with pytest.raises(InterchangeError) as err:
            load_state_dict(m, {**sd, **change})
        assert needle in str(err.value) and "\n" not in str(err.value), (needle, str(err.value))
    for value, what in (([t], "list"), (None, "NoneType"), (t, "Tensor")):
        with pytest.raises(InterchangeError, match=f"a state dict is a mapping of names to tensors, found a {what}"):
            load_state_dict(m, value)  # type: ignore[arg-type]
    # a transposed view and a tensor that requires grad are dense float32: read, the same bits
    q = load_state_dict(m, {**sd, e: sd[e].t().contiguous().t(), n: t.clone().requires_grad_()})
    assert np.array_equal(m.layer.dump(q).view(np.uint32), m.layer.dump(p).view(np.uint32))


def test_the_safetensors_header_is_checked_as_the_format_requires(tmp_path: Path) -> None:
    """The reader's own checks of the header (safetensors' rules): the length within the file and the format's
    bound, tensors that follow one another without gaps or overlaps to the end of the file, each as long as its
    shape and dtype say, names once; the file's size against the header before a tensor is read."""
    import json
    import struct

    from safetensors.numpy import save
    cfg, m, p, x = trained()
    good = save(state_dict(m, p), metadata={"format": "pt"})
    n = struct.unpack("<Q", good[:8])[0]
    head = json.loads(good[8:8 + n])

    def with_header(h: dict[str, Any] | bytes, body: bytes = good[8 + n:]) -> Path:
        blob = h if isinstance(h, bytes) else json.dumps(h).encode()
        f = tmp_path / "f.safetensors"
        f.write_bytes(struct.pack("<Q", len(blob)) + blob + body)
        return f

    norm = "model.norm.weight"
    start, end = head[norm]["data_offsets"]
    cases: dict[str, dict[str, Any] | bytes] = {
        "without gaps or overlaps": {**head, norm: {**head[norm], "data_offsets": [start + 4, end + 4]}},
        "bytes for F32 of shape (33,)": {**head, norm: {**head[norm], "shape": [33]}},
        "is not described by a dtype": {**head, norm: {"dtype": "F32", "shape": [32]}},
        "a name appears twice": json.dumps(head).replace("{", '{"a": 1, "a": 2, ', 1).encode(),
        "the header is a JSON list": b"[1, 2]",
        "the header is not JSON": b"{not json",
    }
    for needle, h in cases.items():
        with pytest.raises(InterchangeError, match=re.escape(needle)):
            load_safetensors(m, with_header(h))
    with pytest.raises(InterchangeError, match="but its header declares"):
        load_safetensors(m, with_header(head, good[8 + n:] + b"\0"))
    big = tmp_path / "big.safetensors"
    big.write_bytes(good)
    os.truncate(big, 16 << 30)  # a valid header, then 16 GiB of holes: refused by its size, nothing read
    with pytest.raises(InterchangeError, match="17179869184 bytes, but its header declares"):
        load_safetensors(m, big)
    (tmp_path / "huge").write_bytes(struct.pack("<Q", 2 ** 62) + b"{}")
    with pytest.raises(InterchangeError, match="a header of 4611686018427387904 bytes, over the bound"):
        load_safetensors(m, tmp_path / "huge")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InterchangeError, match="fifo: is a fifo, not a regular file"):
        load_safetensors(m, tmp_path / "fifo")


def test_exporting_into_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    from bendtorch.records.durable import OutputError
    cfg, m, p, x = trained()
    with pytest.raises(OutputError, match=f"folder {tmp_path / 'nope'} does not exist"):
        save_safetensors(m, p, tmp_path / "nope" / "m.safetensors")
    assert list(tmp_path.iterdir()) == []
