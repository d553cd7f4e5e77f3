"""Interchange with PyTorch and Hugging Face: a Llama's parameters as a state dict under Hugging Face's
LlamaForCausalLM names, and as a safetensors file; both read back.

Names and shapes are Hugging Face's: `model.embed_tokens.weight` (V x d), `model.layers.{i}.self_attn.{q,k,v,o}_proj
.weight` and `model.layers.{i}.mlp.{gate,up,down}_proj.weight` (out x in, nn.Linear's layout, which is LinearNB's),
`model.layers.{i}.input_layernorm.weight`, `...post_attention_layernorm.weight` and `model.norm.weight` (d, a vector:
impl keeps a 1 x d gain). The LM head is tied to the embedding: exporting writes `lm_head.weight` only when asked
(`with_head=True`, as a state dict of a tied LlamaForCausalLM holds it); importing accepts it if it equals the
embedding and refuses it otherwise (impl cannot untie it).

Reading checks every name and shape before it builds anything: a missing tensor, an unexpected name or a wrong shape
raises InterchangeError naming it (and the file). float16 and bfloat16 tensors are widened to float32 exactly; a
tensor of a wider float type is refused (rounding it would be a silent change). safetensors files are read and
written with the `safetensors` package's numpy API (no pickle); torch is imported only by the state-dict functions
that make tensors.
"""

from __future__ import annotations

import os
from typing import Any, Callable, cast

import numpy as np
import numpy.typing as npt

from bendtorch.records.durable import write_bytes
from bendtorch.impl.llama import Model, named

F32 = np.float32
HEAD = "lm_head.weight"
EMBED = "model.embed_tokens.weight"


class InterchangeError(ValueError):
    """A state dict or safetensors file that does not fit the model: names the tensor (and the file)."""


def _hf_shape(name: str, a: npt.NDArray[Any]) -> tuple[int, ...]:
    return (a.size,) if name.endswith("norm.weight") else tuple(a.shape)


def state_dict(model: Model, p: Any, with_head: bool = False) -> dict[str, npt.NDArray[np.float32]]:
    """{Hugging Face name: float32 array in Hugging Face's shape}, copies of p's matrices."""
    out: dict[str, npt.NDArray[np.float32]] = {}
    for name, a in named(model.names, p).items():
        arr = np.ascontiguousarray(a, dtype=F32)
        out[name] = arr.reshape(_hf_shape(name, arr)).copy()
    if with_head:
        out[HEAD] = out[EMBED].copy()
    return out


def to_torch_state_dict(model: Model, p: Any, with_head: bool = True) -> dict[str, Any]:
    """The state dict as torch float32 tensors (what LlamaForCausalLM.load_state_dict takes)."""
    import torch
    return {k: torch.from_numpy(v) for k, v in state_dict(model, p, with_head).items()}


def save_safetensors(model: Model, p: Any, path: str | os.PathLike[str]) -> None:
    """A safetensors file in Hugging Face's naming (the tied head left out, as Hugging Face saves tied models),
    written atomically."""
    from safetensors.numpy import save
    write_bytes(path, save(state_dict(model, p, with_head=False), metadata={"format": "pt"}))


def _as_f32(name: Any, v: Any, where: str) -> npt.NDArray[np.float32]:
    if not isinstance(name, str):
        raise InterchangeError(f"{where}a tensor's name must be a string, found {type(name).__name__} {name!r}")
    if hasattr(v, "detach"):  # a torch tensor: widen bf16/fp16 in torch, which numpy cannot hold
        import torch
        if v.dtype in (torch.bfloat16, torch.float16):
            v = v.to(torch.float32)
        v = v.detach().cpu().numpy()
    a = np.asarray(v)
    if a.dtype == np.float16:
        a = a.astype(F32)
    if a.dtype != F32:
        raise InterchangeError(f"{where}{name!r}: expected float32 (or float16 / bfloat16, widened exactly), found "
                               f"{a.dtype}")
    return a


def load_state_dict(model: Model, sd: dict[str, Any], where: str = "") -> Any:
    """Parameters of the model's structure filled from a state dict (numpy arrays or torch tensors) under Hugging
    Face's names. Every name and shape is checked first; nothing is built from a dict that does not fit."""
    want = named(model.names, model.layer.zeros())
    got = {k: _as_f32(k, v, where) for k, v in sd.items()}
    missing = [repr(k) for k in want if k not in got]
    if missing:
        raise InterchangeError(f"{where}missing tensor{'s' if len(missing) > 1 else ''}: {', '.join(missing[:5])}"
                               + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    extra = [repr(k) for k in got if k not in want and k != HEAD]
    if extra:
        raise InterchangeError(f"{where}unexpected tensor{'s' if len(extra) > 1 else ''} (not a parameter of "
                               f"{model.cfg.name}): {', '.join(extra[:5])}")
    for name, z in want.items():
        a = got[name]
        if a.shape != _hf_shape(name, z) and a.shape != z.shape:
            raise InterchangeError(f"{where}{name!r}: expected shape {_hf_shape(name, z)}, found {a.shape}")
    if HEAD in got:
        if got[HEAD].shape != got[EMBED].shape or not np.array_equal(got[HEAD], got[EMBED]):
            raise InterchangeError(f"{where}{HEAD!r}: the LM head is tied to {EMBED} in this model, but the tensor "
                                   f"differs from it")
    p = model.layer.zeros()
    for name, z in named(model.names, p).items():
        z[...] = got[name].reshape(z.shape)
    return p


# safetensors' dtype names -> how their little-endian bytes become float32 exactly
_WIDEN = {"F32": "float32", "F16": "float16 (widened exactly)", "BF16": "bfloat16 (widened exactly)"}


def _st_tensor(name: str, info: dict[str, Any], where: str) -> npt.NDArray[np.float32]:
    """One tensor of a safetensors file as float32: F32 as is, F16 and BF16 widened exactly (a bfloat16 is the
    high half of the float32 with the same value); any other dtype refused, naming it."""
    dt, shape, data = info.get("dtype"), tuple(info.get("shape", ())), bytes(info.get("data", b""))
    if dt == "F32":
        a = np.frombuffer(data, dtype="<f4").astype(F32)
    elif dt == "F16":
        a = np.frombuffer(data, dtype="<f2").astype(F32)
    elif dt == "BF16":
        a = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << np.uint32(16)).view(F32)
    else:
        raise InterchangeError(f"{where}{name!r}: dtype {dt}; expected one of {', '.join(_WIDEN)} (a wider float "
                               f"would be rounded, an integer is not a parameter)")
    if a.size != int(np.prod(shape, dtype=np.int64)):
        raise InterchangeError(f"{where}{name!r}: {a.size} numbers for shape {shape}")
    return a.reshape(shape)


def load_safetensors(model: Model, path: str | os.PathLike[str]) -> Any:
    """Parameters from a safetensors file in Hugging Face's naming (see load_state_dict). Float32, float16 and
    bfloat16 tensors are read (the last two widened exactly); the header is parsed by the safetensors package."""
    from safetensors import deserialize
    name = os.fspath(path)
    try:
        raw = open(name, "rb").read()
    except OSError as e:
        raise InterchangeError(f"{name}: cannot read: {e.strerror}") from e
    try:
        items = cast(Callable[[bytes], list[tuple[str, dict[str, Any]]]], deserialize)(raw)
    except Exception as e:  # safetensors raises its own error types for a malformed header
        raise InterchangeError(f"{name}: not a safetensors file: {e}") from None
    where = f"{name}: "
    return load_state_dict(model, {k: _st_tensor(k, info, where) for k, info in items}, where=where)
