"""The Llama of impl.llama written in plain PyTorch (Hugging Face's LlamaForCausalLM computation: RMSNorm as
x * rsqrt(mean(x^2) + eps) * w, rotate-half RoPE with inv_freq in the model's dtype, grouped-query attention through
scaled_dot_product_attention(is_causal=True) with K and V repeat_interleave'd, SwiGLU MLP, tied LM head, mean
cross-entropy), loading the weights by Hugging Face's names from `impl.llama.named`.

Used by tests/reference/test_llama_vs_torch.py and bench/bench.py. Runs in float32 or float64 (the float64 run
cross-checks the oracle's model: the same function, computed in a second way)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as Fn

from bendtorch.impl.llama import LlamaCfg


class TorchLlama:
    """Parameters as leaf tensors (requires_grad) by name; `loss(x, y)` gives (loss, logits) for b sequences."""

    def __init__(self, cfg: LlamaCfg, weights: dict[str, Any], dtype: torch.dtype = torch.float32) -> None:
        self.cfg = cfg
        self.dtype = dtype
        self.p: dict[str, torch.Tensor] = {}
        for k, v in weights.items():
            a = np.asarray(v)
            if a.ndim == 2 and a.shape[0] == 1 and k.endswith("norm.weight"):
                a = a.reshape(-1)
            self.p[k] = torch.tensor(np.array(a, copy=True), dtype=dtype, requires_grad=True)
        half = cfg.hd // 2
        inv = 1.0 / (torch.tensor(cfg.theta, dtype=dtype) **
                     (torch.arange(0, 2 * half, 2, dtype=torch.int64).to(dtype) / (2 * half)))
        fr = torch.outer(torch.arange(cfg.t, dtype=torch.int64).to(dtype), inv)
        emb = torch.cat([fr, fr], -1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def params(self) -> list[torch.Tensor]:
        return list(self.p.values())

    def _norm(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        var = x.pow(2).mean(-1, keepdim=True)
        return w * (x * torch.rsqrt(var + self.cfg.eps))

    def _rope(self, x: torch.Tensor) -> torch.Tensor:  # x: b, heads, t, hd
        half = self.cfg.hd // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos + rot * self.sin

    def forward(self, ids: Any, b: int) -> torch.Tensor:
        c, P = self.cfg, self.p
        t, h, kv, hd = c.t, c.heads, c.kv_heads, c.hd
        x = P["model.embed_tokens.weight"][torch.as_tensor(np.asarray(ids))]
        for i in range(c.layers):
            pre = f"model.layers.{i}."
            hn = self._norm(x, P[pre + "input_layernorm.weight"])
            q = (hn @ P[pre + "self_attn.q_proj.weight"].T).view(b, t, h, hd).transpose(1, 2)
            k = (hn @ P[pre + "self_attn.k_proj.weight"].T).view(b, t, kv, hd).transpose(1, 2)
            v = (hn @ P[pre + "self_attn.v_proj.weight"].T).view(b, t, kv, hd).transpose(1, 2)
            q, k = self._rope(q), self._rope(k)
            k, v = k.repeat_interleave(c.g, dim=1), v.repeat_interleave(c.g, dim=1)
            o = Fn.scaled_dot_product_attention(q, k, v, is_causal=True, scale=float(np.float32(1.0 / np.sqrt(hd))))
            x = x + o.transpose(1, 2).reshape(b * t, h * hd) @ P[pre + "self_attn.o_proj.weight"].T
            hn = self._norm(x, P[pre + "post_attention_layernorm.weight"])
            m = Fn.silu(hn @ P[pre + "mlp.gate_proj.weight"].T) * (hn @ P[pre + "mlp.up_proj.weight"].T)
            x = x + m @ P[pre + "mlp.down_proj.weight"].T
        x = self._norm(x, P["model.norm.weight"])
        logits: torch.Tensor = x @ P["model.embed_tokens.weight"].T
        return logits

    def loss(self, ids: Any, labels: Any, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.forward(ids, b)
        return Fn.cross_entropy(logits, torch.as_tensor(np.asarray(labels))), logits

    def grads(self) -> dict[str, Any]:
        """{name: gradient as numpy, in impl's shapes (norm gains 1 x d)}."""
        out = {}
        for k, v in self.p.items():
            g = v.grad.detach().numpy() if v.grad is not None else np.zeros(tuple(v.shape))
            out[k] = g.reshape(1, -1) if g.ndim == 1 else g
        return out
