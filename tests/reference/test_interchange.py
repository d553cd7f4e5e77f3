"""Interchange with PyTorch: a `tiny` Llama trained in impl, exported under Hugging Face's names and
loaded into the PyTorch reference model, gives the same logits within the reference bounds
(tests/reference/test_llama_vs_torch.py: 64 u normwise against the float64 oracle); a safetensors file in Hugging Face's naming, written here from the PyTorch
reference model, loads into impl and gives the same logits within those bounds; wrong names, missing tensors and
wrong shapes get errors naming them."""

from __future__ import annotations

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
