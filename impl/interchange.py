"""Interchange with PyTorch and Hugging Face: a Llama's parameters as a state dict under Hugging Face's
LlamaForCausalLM names, and as a safetensors file; both read back.

Names and shapes are Hugging Face's: `model.embed_tokens.weight` (V x d), `model.layers.{i}.self_attn.{q,k,v,o}_proj
.weight` and `model.layers.{i}.mlp.{gate,up,down}_proj.weight` (out x in, nn.Linear's layout, which is LinearNB's),
`model.layers.{i}.input_layernorm.weight`, `...post_attention_layernorm.weight` and `model.norm.weight` (d, a vector:
impl keeps a 1 x d gain). The LM head is tied to the embedding: exporting writes `lm_head.weight` only when asked
(`with_head=True`, as a state dict of a tied LlamaForCausalLM holds it); importing accepts it if it equals the
embedding and refuses it otherwise (impl cannot untie it).

Reading checks every name, shape and kind of tensor before it converts or builds anything: a missing tensor, an
unexpected name, a wrong shape, a tensor without dense float data (meta, sparse, nested, quantized, float8, an
integer) or a value that is no tensor raises InterchangeError, one line naming it (and the file). float16 and
bfloat16 tensors are widened to float32 exactly; a tensor of a wider float type is refused (rounding it would be a
silent change). Nothing is unpickled: safetensors files are written with the `safetensors` package's numpy API and
read as a bounded regular file (load_safetensors); torch is imported only to make or widen tensors.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import sys
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt

from bendtorch.impl.llama import Model, named
from bendtorch.records import files
from bendtorch.records.durable import write_bytes

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


_FLOATS = ("float32", "float16", "bfloat16")  # the dtypes a state dict's tensors are read in (the last two widened)


def _torch_tensor(v: Any) -> bool:
    torch = sys.modules.get("torch")  # a value can be a tensor only once torch is imported; never imported here
    return torch is not None and isinstance(v, torch.Tensor)


def _meta(v: Any) -> tuple[tuple[int, ...], str]:
    """(the shape, the problem or "") of a state dict's value, read from its metadata alone: nothing is converted
    or copied. A tensor must be a dense, unquantized torch tensor with data (not meta, sparse or nested), or a numpy
    array, of float32, float16 or bfloat16."""
    if _torch_tensor(v):
        if getattr(v, "is_nested", False):  # a nested tensor has no shape to read
            return (), "a nested tensor; only dense tensors are read"
        shape = tuple(int(k) for k in v.shape)
        if v.is_meta:
            return shape, "a meta tensor (it has no data)"
        if str(v.layout) != "torch.strided":
            return shape, f"a sparse tensor ({v.layout}); only dense tensors are read (to_dense() first)"
        if v.is_quantized:
            return shape, f"a quantized tensor ({v.dtype}); only float32, float16 and bfloat16 are read"
        dt = str(v.dtype).removeprefix("torch.")
    elif isinstance(v, np.ndarray):
        shape, dt = tuple(v.shape), str(v.dtype)
    else:
        return (), f"not an array or a tensor (a {type(v).__name__})"
    if dt not in _FLOATS:
        return shape, f"expected float32 (or float16 / bfloat16, widened exactly), found {dt}"
    return shape, ""


def _as_f32(v: Any) -> npt.NDArray[np.float32]:
    """A value _meta found good as float32: float16 and bfloat16 widened exactly (torch widens bfloat16, which
    numpy cannot hold)."""
    if _torch_tensor(v):
        import torch
        v = v.detach().cpu().resolve_conj().resolve_neg()
        if v.dtype in (torch.bfloat16, torch.float16):
            v = v.to(torch.float32)
        v = v.numpy()
    a = np.asarray(v)
    return a.astype(F32) if a.dtype == np.float16 else a


def _fit(model: Model, shapes: dict[Any, tuple[tuple[int, ...], str]], where: str) -> dict[str, Any]:
    """The model's parameters by name, once the names, shapes and problems given (name -> (shape, problem)) fit
    it: a name not a string, a missing or unexpected tensor, a problem or a wrong shape raises InterchangeError
    naming the tensor."""
    for k in shapes:
        if not isinstance(k, str):
            raise InterchangeError(f"{where}a tensor's name must be a string, found {type(k).__name__} {k!r:.80}")
    want = named(model.names, model.layer.zeros())
    missing = [repr(k) for k in want if k not in shapes]
    if missing:
        raise InterchangeError(f"{where}missing tensor{'s' if len(missing) > 1 else ''}: {', '.join(missing[:5])}"
                               + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    extra = [f"{k!r:.80}" for k in shapes if k not in want and k != HEAD]
    if extra:
        raise InterchangeError(f"{where}unexpected tensor{'s' if len(extra) > 1 else ''} (not a parameter of "
                               f"{model.cfg.name}): {', '.join(extra[:5])}")
    for name in [*want, *([HEAD] if HEAD in shapes else [])]:
        z = want[name if name != HEAD else EMBED]
        shape, problem = shapes[name]
        if problem:
            raise InterchangeError(f"{where}{name!r}: {problem}")
        if shape != _hf_shape(name, z) and shape != z.shape:
            raise InterchangeError(f"{where}{name!r}: expected shape {_hf_shape(name, z)}, found {shape}")
    return want


def load_state_dict(model: Model, sd: Mapping[str, Any], where: str = "") -> Any:
    """Parameters of the model's structure filled from a state dict (a mapping of Hugging Face's names to numpy
    arrays or torch tensors). Every name, shape and kind of tensor is checked from the tensors' metadata first
    (nothing is converted or copied before): a meta, sparse, nested or quantized tensor, a float8 or any other
    dtype than float32, float16 and bfloat16, a value that is no tensor, or a state dict that is no mapping raises
    InterchangeError, one line naming the tensor."""
    if not isinstance(sd, Mapping):
        raise InterchangeError(f"{where}a state dict is a mapping of names to tensors, found a {type(sd).__name__}")
    want = _fit(model, {k: _meta(v) for k, v in sd.items()}, where)
    got = {k: _as_f32(sd[k]) for k in [*want, *([HEAD] if HEAD in sd else [])]}
    if HEAD in got:
        if got[HEAD].shape != got[EMBED].shape or not np.array_equal(got[HEAD], got[EMBED]):
            raise InterchangeError(f"{where}{HEAD!r}: the LM head is tied to {EMBED} in this model, but the tensor "
                                   f"differs from it")
    p = model.layer.zeros()
    for name, z in named(model.names, p).items():
        z[...] = got[name].reshape(z.shape)
    return p


# safetensors' dtypes are named by their kind and their width in bits (U8, I16, F8_E4M3, BF16, C64: a complex of
# two 32-bit halves); BOOL takes one byte. F32, F16 and BF16 become float32 exactly, the others are refused.
_ST_DTYPE = re.compile(r"(U|I|F|BF|C)(8|16|32|64)(_E\d+M\d+)?")


def _st_size(dtype: str) -> int | None:
    """bytes per element of a safetensors dtype, None for a name the format does not define"""
    if dtype == "BOOL":
        return 1
    m = _ST_DTYPE.fullmatch(dtype)
    return int(m.group(2)) // 8 if m else None


_ST_READ = ("F32", "F16", "BF16")
ST_HEADER_BOUND = 100_000_000  # the safetensors format's own limit on the header's length


def _st_header(f: files.Reader) -> tuple[dict[str, tuple[str, tuple[int, ...], int, int]], int]:
    """{name: (dtype, shape, start, end)} and the byte where the tensors begin, from a safetensors file's header
    (an 8-byte little-endian length, then that many bytes of JSON), with the format's checks: the length within
    ST_HEADER_BOUND and the file, the tensors' byte ranges in order, without gaps or overlaps, ending at the end
    of the file, each as long as its shape and dtype say."""
    if f.size < 8:
        raise f.fail(f"not a safetensors file: {f.size} bytes, shorter than the 8-byte header length")
    n = struct.unpack("<Q", f.read_at(0, 8))[0]
    if n > min(ST_HEADER_BOUND, f.size - 8):
        raise f.fail(f"not a safetensors file: a header of {n} bytes, over the bound of "
                     f"{min(ST_HEADER_BOUND, f.size - 8)} (the format's {ST_HEADER_BOUND} and the file's size)")

    def pairs(kv: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in kv}) != len(kv):
            raise ValueError("a name appears twice")
        return dict(kv)

    try:
        doc = json.loads(f.read_at(8, n).decode("utf-8"), object_pairs_hook=pairs)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise f.fail(f"not a safetensors file: the header is not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise f.fail(f"not a safetensors file: the header is a JSON {type(doc).__name__}, not an object")
    out: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
    for name, info in doc.items():
        if name == "__metadata__":
            continue
        ok = isinstance(info, dict) and isinstance(info.get("dtype"), str) and isinstance(info.get("shape"), list) \
            and all(type(k) is int and k >= 0 for k in info["shape"]) and isinstance(info.get("data_offsets"), list) \
            and len(info["data_offsets"]) == 2 and all(type(k) is int for k in info["data_offsets"]) \
            and 0 <= info["data_offsets"][0] <= info["data_offsets"][1]
        if not ok:
            raise f.fail(f"not a safetensors file: tensor {name!r:.80} is not described by a dtype, a shape and "
                         f"data_offsets [start, end]")
        shape = tuple(info["shape"])
        start, end = info["data_offsets"]
        size = _st_size(info["dtype"])
        if size is not None and end - start != size * math.prod(shape):
            raise f.fail(f"{name!r:.80}: {end - start} bytes for {info['dtype']} of shape {shape}")
        out[name] = (info["dtype"], shape, start, end)
    pos = 0
    for name, (_, _, start, end) in sorted(out.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if start != pos:
            raise f.fail(f"{name!r:.80}: its bytes start at {start}, the tensors before it end at {pos} (the "
                         f"tensors must follow one another without gaps or overlaps)")
        pos = end
    if 8 + n + pos != f.size:
        raise f.fail(f"{f.size} bytes, but its header declares {8 + n + pos} ({n} of header, {pos} of tensors)")
    return out, 8 + n


def _st_tensor(name: str, dt: str, shape: tuple[int, ...], raw: bytes | bytearray) -> npt.NDArray[np.float32]:
    """One tensor's bytes as float32: F32 as is, F16 and BF16 widened exactly (a bfloat16 is the high half of the
    float32 with the same value)."""
    if dt == "F32":
        a = np.frombuffer(raw, dtype="<f4").astype(F32)
    elif dt == "F16":
        a = np.frombuffer(raw, dtype="<f2").astype(F32)
    else:
        a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << np.uint32(16)).view(F32)
    return a.reshape(shape)


def load_safetensors(model: Model, path: str | os.PathLike[str]) -> Any:
    """Parameters from a safetensors file in Hugging Face's naming (see load_state_dict). The file is read as a
    regular file (records.files): its header with a bound, checked as the format requires and against the model
    (names, shapes, dtypes: F32, F16 and BF16, the last two widened exactly) before any tensor is read; then each
    tensor's bytes, which the header has bounded. The header is parsed here rather than by the safetensors package,
    whose readers take the whole file as bytes or map a file they open themselves."""
    with files.open_regular(path, error=InterchangeError) as f:
        where = f"{f.name}: "
        header, base = _st_header(f)
        problems = {k: (shape, "" if dt in _ST_READ else f"dtype {dt}; expected one of {', '.join(_ST_READ)} (a "
                        f"wider float would be rounded, an integer is not a parameter)")
                    for k, (dt, shape, _, _) in header.items()}
        names = [*_fit(model, problems, where), *([HEAD] if HEAD in header else [])]
        tensors = {k: _st_tensor(k, header[k][0], header[k][1], f.read_at(base + header[k][2],
                                                                           header[k][3] - header[k][2]))
                   for k in names}
    return load_state_dict(model, tensors, where=where)
