"""The conformance target `torch`: the laws' operations on PyTorch as a model author calls it.

torch.nn.functional's linear, rms_norm, layer_norm, softmax, log_softmax, cross_entropy (reduction="none"),
dropout and scaled_dot_product_attention (is_causal=True, enable_gqa=True); torch.erf; the float32 -> bfloat16 cast;
the tiny Llama written as Hugging Face's LlamaForCausalLM computes it (RMSNorm through F.rms_norm, rotate-half RoPE
with HF's inv_freq and cos/sin table, SwiGLU MLP, tied head); torch.optim's SGD, Adam and AdamW; the model's and
the optimizer's state_dict saved with torch.save and read back with torch.load(weights_only=True).

On "cuda" (when a GPU is present) every tensor lives on the GPU, with TF32 matmuls off or on as asked; the arrays
come back to numpy for the laws' comparisons."""

from __future__ import annotations

import contextlib
import io
import platform
from typing import Any, Iterator, Sequence

from bendtorch.records.targets import TargetRecord, Variant
from bendtorch.targets.base import NotRun, Opt, Target, as_f32, impl_shape, op_source, require, thread_count, weights

# this target's record: bendtorch.records.targets reads it from this file's text (the module is not imported
# to list the targets: it imports its library, which may be missing)
RECORD = TargetRecord("torch", "bendtorch.targets.torch:make",
                      ("PyTorch eager as a model author calls it: torch.nn.functional, torch.optim, torch.save; on "
                       "cuda every tensor on the GPU"), libraries=("torch", "numpy"),
                      devices=("cpu", "cuda"),
                      variants=(Variant("tf32-off", "TF32 off", {"tf32": False}, ("cuda",)),
                                Variant("tf32-on", "TF32 on", {"tf32": True}, ("cuda",))), rank=1)


require("torch", target="torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402

from bendtorch.impl.llama import LlamaCfg  # noqa: E402


# each operation in PyTorch alone, for a failure's reproduction (Target.source): its parameters, its computation on
# tensors and how the numpy arrays become its arguments (t = torch.from_numpy)
SOURCES: dict[str, tuple[str, str, str]] = {
    "linear": ("x, w, b", "return F.linear(x, w, b)", "t(x), t(w), None if b is None else t(b)"),
    "rms_norm": ("x, w, eps", "return F.rms_norm(x, (x.shape[-1],), w, eps)", "t(x), t(w), eps"),
    "layer_norm": ("x, w, b, eps", "return F.layer_norm(x, (x.shape[-1],), w, b, eps)", "t(x), t(w), t(b), eps"),
    "softmax": ("x", "return F.softmax(x, dim=-1)", "t(x)"),
    "log_softmax": ("x", "return F.log_softmax(x, dim=-1)", "t(x)"),
    "ce_rows": ("z, labels", 'return F.cross_entropy(z, labels, reduction="none")',
                "t(z), torch.from_numpy(np.asarray(labels, np.int64))"),
    "attention": ("q, k, v, sc", "return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=float(sc),\n"
                  "                                      enable_gqa=q.shape[1] != k.shape[1])", "t(q), t(k), t(v), sc"),
    "erf": ("x", "return torch.erf(x)", "t(x)"),
}


def torch_source(op: str, wrap: str | None = None) -> str | None:
    """SOURCES[op] as a reproduction's function (base.op_source), under torch.no_grad, optionally wrapped."""
    if op not in SOURCES:
        return None
    params, body, args = SOURCES[op]
    call = f"t = torch.from_numpy\nwith torch.no_grad():\n    return {{f}}({args}).numpy()"
    return op_source("import torch\nimport torch.nn.functional as F", op, params, body, call, wrap)


class Torch(Target):
    name = "torch"
    devices: tuple[str, ...] = ("cpu", "cuda")

    def __init__(self, device: str = "cpu", tf32: bool = False) -> None:
        super().__init__(device, tf32=tf32)
        self.tf32 = tf32
        if device == "cuda":
            # the machine record then names the GPU, its compute capability and the CUDA runtime
            self.libraries = ("torch", "torch_cuda")
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32

    def versions(self) -> dict[str, str]:
        v = {"torch": torch.__version__, "numpy": np.__version__}
        if self.device == "cuda":
            v["cuda"] = str(torch.version.cuda)
            v["gpu"] = torch.cuda.get_device_name(0)
        else:
            v["cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
        v["machine"] = platform.machine()
        return v

    def _t(self, a: Any) -> torch.Tensor:
        return torch.from_numpy(as_f32(a)).to(self.device)

    @staticmethod
    def _np(t: torch.Tensor) -> Any:
        return as_f32(t.detach().cpu().numpy())

    def linear(self, x: Any, w: Any, b: Any | None) -> Any:
        return self._np(Fn.linear(self._t(x), self._t(w), None if b is None else self._t(b)))

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        return self._np(Fn.rms_norm(self._t(x), (x.shape[-1],), self._t(w), eps))

    def layer_norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        return self._np(Fn.layer_norm(self._t(x), (x.shape[-1],), self._t(w), self._t(b), eps))

    def softmax(self, x: Any) -> Any:
        return self._np(Fn.softmax(self._t(x), dim=-1))

    def log_softmax(self, x: Any) -> Any:
        return self._np(Fn.log_softmax(self._t(x), dim=-1))

    def ce_rows(self, z: Any, labels: Any) -> Any:
        lab = torch.as_tensor(np.asarray(labels, np.int64), device=self.device)
        return self._np(Fn.cross_entropy(self._t(z), lab, reduction="none"))

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sc: float) -> torch.Tensor:
        return Fn.scaled_dot_product_attention(q, k, v, is_causal=True, scale=float(sc),
                                               enable_gqa=q.shape[1] != k.shape[1])

    def attention(self, q: Any, k: Any, v: Any, sc: float) -> Any:
        with torch.no_grad():
            return self._np(self._sdpa(self._t(q), self._t(k), self._t(v), sc))

    def attention_grad(self, q: Any, k: Any, v: Any, do: Any, sc: float) -> tuple[Any, Any, Any]:
        qt, kt, vt = (self._t(a).requires_grad_(True) for a in (q, k, v))
        self._sdpa(qt, kt, vt, sc).backward(self._t(do))  # type: ignore[no-untyped-call]
        assert qt.grad is not None and kt.grad is not None and vt.grad is not None
        return self._np(qt.grad), self._np(kt.grad), self._np(vt.grad)

    def dropout(self, x: Any, p: float) -> Any:
        return self._np(Fn.dropout(self._t(x), p, training=True))

    def bf16_bits(self, x: Any) -> Any:
        return self._t(x).to(torch.bfloat16).view(torch.int16).cpu().numpy().view(np.uint16).copy()

    def erf(self, x: Any) -> Any:
        return self._np(torch.erf(self._t(x)))

    def source(self, op: str) -> str | None:
        return torch_source(op) if self.device == "cpu" else None

    # ---- the tiny Llama, as Hugging Face's LlamaForCausalLM computes it ----

    def _params(self, cfg: LlamaCfg, seed: int) -> dict[str, torch.Tensor]:
        return {k: torch.nn.Parameter(self._t(np.asarray(v).reshape(-1) if k.endswith("norm.weight") else v))
                for k, v in weights(cfg, seed).items()}

    def _rope_table(self, cfg: LlamaCfg, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        # LlamaRotaryEmbedding: inv_freq = 1 / base^(arange(0, dim, 2, int64).float() / dim), freqs = pos x inv_freq
        inv = 1.0 / (cfg.theta ** (torch.arange(0, cfg.hd, 2, dtype=torch.int64).to(self.device).float() / cfg.hd))
        fr = torch.outer(torch.arange(t, device=self.device).float(), inv)
        emb = torch.cat((fr, fr), dim=-1)
        return emb.cos(), emb.sin()

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    def _forward(self, cfg: LlamaCfg, P: dict[str, torch.Tensor], ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        h, kv, hd = cfg.heads, cfg.kv_heads, cfg.hd
        cos, sin = self._rope_table(cfg, t)
        x = Fn.embedding(ids, P["model.embed_tokens.weight"])
        for i in range(cfg.layers):
            pre = f"model.layers.{i}."
            hn = Fn.rms_norm(x, (cfg.d,), P[pre + "input_layernorm.weight"], cfg.eps)
            q = Fn.linear(hn, P[pre + "self_attn.q_proj.weight"]).view(b, t, h, hd).transpose(1, 2)
            k = Fn.linear(hn, P[pre + "self_attn.k_proj.weight"]).view(b, t, kv, hd).transpose(1, 2)
            v = Fn.linear(hn, P[pre + "self_attn.v_proj.weight"]).view(b, t, kv, hd).transpose(1, 2)
            q = q * cos + self._rotate_half(q) * sin
            k = k * cos + self._rotate_half(k) * sin
            o = self._sdpa(q, k, v, float(np.float32(1.0 / np.sqrt(hd))))
            x = x + Fn.linear(o.transpose(1, 2).reshape(b, t, h * hd), P[pre + "self_attn.o_proj.weight"])
            hn = Fn.rms_norm(x, (cfg.d,), P[pre + "post_attention_layernorm.weight"], cfg.eps)
            m = Fn.silu(Fn.linear(hn, P[pre + "mlp.gate_proj.weight"])) * Fn.linear(hn, P[pre + "mlp.up_proj.weight"])
            x = x + Fn.linear(m, P[pre + "mlp.down_proj.weight"])
        x = Fn.rms_norm(x, (cfg.d,), P["model.norm.weight"], cfg.eps)
        return Fn.linear(x, P["model.embed_tokens.weight"])

    def _ids(self, a: Any) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a, np.int64), device=self.device)

    def llama_logits(self, cfg: LlamaCfg, seed: int, tokens: Any) -> Any:
        with torch.no_grad():
            return self._np(self._forward(cfg, self._params(cfg, seed), self._ids(tokens)))

    def _loss(self, cfg: LlamaCfg, P: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The mean cross-entropy of the model's logits on tokens x against the next tokens y."""
        return Fn.cross_entropy(self._forward(cfg, P, x).reshape(-1, cfg.vocab), y.reshape(-1))

    def _optimizer(self, opt: Opt, ps: Sequence[torch.Tensor]) -> torch.optim.Optimizer:
        if opt.name in ("sgd", "momentum"):
            return torch.optim.SGD(ps, lr=opt.lr, momentum=opt.mu if opt.name == "momentum" else 0.0,
                                   weight_decay=opt.wd)
        cls = torch.optim.Adam if opt.name == "adam" else torch.optim.AdamW
        return cls(ps, lr=opt.lr, betas=(opt.b1, opt.b2), eps=opt.eps, weight_decay=opt.wd)

    def train(self, cfg: LlamaCfg, seed: int, opt: Opt, batches: Sequence[tuple[Any, Any]],
              save_at: int | None = None) -> tuple[dict[str, Any], Any]:
        P = self._params(cfg, seed)
        o = self._optimizer(opt, list(P.values()))
        losses = []
        for s, (x, y) in enumerate(batches):
            if s == save_at:
                buf = io.BytesIO()
                torch.save({"model": {k: v.detach() for k, v in P.items()}, "opt": o.state_dict()}, buf)
                buf.seek(0)
                ck = torch.load(buf, weights_only=True)
                P = {k: torch.nn.Parameter(torch.zeros_like(v)) for k, v in P.items()}
                with torch.no_grad():
                    for k, v in P.items():
                        v.copy_(ck["model"][k])
                o = self._optimizer(opt, list(P.values()))
                o.load_state_dict(ck["opt"])
            o.zero_grad()
            loss = self._loss(cfg, P, self._ids(x), self._ids(y))
            loss.backward()  # type: ignore[no-untyped-call]
            o.step()
            losses.append(float(loss.detach().cpu()))
        return {k: impl_shape(k, self._np(v)) for k, v in P.items()}, np.array(losses, np.float32)

    def opt_steps(self, opt: Opt, params: list[Any], grads: list[list[Any]]) -> list[Any]:
        ps = [torch.nn.Parameter(self._t(p)) for p in params]
        o = self._optimizer(opt, ps)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = self._t(g)
            o.step()
        return [self._np(p) for p in ps]

    @contextlib.contextmanager
    def threads(self, k: int) -> Iterator[None]:
        with thread_count(torch.get_num_threads, torch.set_num_threads, k):
            yield


def make(device: str = "cpu", tf32: bool = False) -> Target:
    if device == "cuda" and not torch.cuda.is_available():
        raise NotRun("no GPU")
    return Torch(device, tf32)
