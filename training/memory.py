"""What a training run will allocate, estimated from the model's shape before anything is allocated, and the check
that it fits what this process may still allocate (records.files.available_memory: the machine's available memory,
`ulimit -v` and `ulimit -d`, the control group's limit).

The estimate adds, in bytes:
- parameters and gradients: 8 per parameter (float32 each);
- the optimizer's state: 4 per parameter for Momentum, 8 for Adam and AdamW, 4 for packed BF16 m with float32 v,
  2 for BF16 m and v (the packed words);
- the step's temporaries: the tied embedding and head's gradient (V x d), computed apart before it is added, and the
  initial draw's scaling (8 bytes per embedding number);
- activations: what the forward pass keeps for the backward and the backward's buffers, per row of the batch (n = b
  t rows): per layer a few widths d, the MLP's ffn, the heads' widths and each head's t attention probabilities;
  the head's logits and their gradient (vocab each); measured coefficients (ACT_*), checked against measured runs
  in tests/test_train_resume.py;
- the data: the file's bytes and its tokens as int64 (9 per byte), or smol's random tokens (8 each);
- saving: one part of the state in the seed's layout while it is written (the parameters' size);
- resuming: the checkpoint's bytes and a second state while it is restored and verified;
- a margin for what the process maps besides the arrays (`margin`): the compiled kernels and the plotting library,
  and for each of numba's threads its stack and its C library's malloc arena (64 MiB of address space each, which
  `ulimit -v` counts; how many arenas a run maps varies by one from run to run).

The estimate is of address space, what `ulimit -v` limits (resident memory is less: pages never touched are not
resident); tests/test_train_resume.py holds it between 1 and 1.5 times the address space a measured run adds. The
kernels' first compilation (once per install; numba caches them) takes more for a while and is not in the estimate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bendtorch.records.files import available_memory, human
from bendtorch.training.options import TrainError

if TYPE_CHECKING:
    from bendtorch.impl.llama import LlamaCfg

OPT_BYTES = {"sgd": 0, "momentum": 4, "adam": 8, "adamw": 8}  # per parameter; adamw-bf16: opt_bytes()
ACT_D, ACT_FFN, ACT_W, ACT_HT, ACT_V, ACT_HEAD_D = 7, 4, 2, 2, 4, 6  # float32 numbers per row (see above)
KERNELS = 128 << 20  # the compiled kernels a first step loads, the plot's library, a thread's arena more or less
ARENA = 64 << 20  # glibc's malloc arena per thread (address space reserved on the thread's first allocation)


def margin() -> int:
    """What the first step maps besides the arrays: KERNELS, and one stack and one malloc arena per numba thread
    and for the main thread."""
    import resource

    from numba import config

    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    stack = 8 << 20 if stack == resource.RLIM_INFINITY or stack <= 0 else stack
    return int(KERNELS + (int(getattr(config, "NUMBA_NUM_THREADS")) + 1) * (ARENA + stack))


def param_count(c: LlamaCfg) -> int:
    """A Llama's parameter count (impl.llama.build): the embedding (tied to the head), per layer two RMSNorm gains,
    q, k, v, o and the MLP's gate, up and down, and the final norm."""
    w, kvw = c.heads * c.hd, c.kv_heads * c.hd
    return c.vocab * c.d + c.layers * (2 * c.d + (w + 2 * kvw) * c.d + w * c.d + 3 * c.ffn * c.d) + c.d


def opt_bytes(opt: str, v16: bool) -> int:
    """The optimizer state's bytes per parameter."""
    return (2 if v16 else 4) + 2 if opt == "adamw-bf16" else OPT_BYTES[opt]


def estimate(c: LlamaCfg, batch: int, opt: str, v16: bool, data_bytes: int, resume: bool) -> dict[str, int]:
    """The estimate's parts in bytes (see the module's docstring); data_bytes: what the data's bytes and tokens
    take."""
    p = param_count(c)
    n = batch * c.t
    w, kvw = c.heads * c.hd, c.kv_heads * c.hd
    per_layer = ACT_D * c.d + ACT_FFN * c.ffn + ACT_W * (w + 2 * kvw) + ACT_HT * c.heads * c.t
    state = 4 * p + opt_bytes(opt, v16) * p
    return {"parameters and gradients": 8 * p, "optimizer state": opt_bytes(opt, v16) * p,
            "step temporaries": 8 * c.vocab * c.d,
            "activations": 4 * n * (c.layers * per_layer + ACT_V * c.vocab + ACT_HEAD_D * c.d),
            "data": data_bytes, "saving": 4 * p, "resuming": 2 * state if resume else 0, "margin": margin()}


def check(parts: dict[str, int], request: str) -> dict[str, Any]:
    """The memory record of a run that fits ({"estimate_bytes", "available_bytes", "limited_by"}); TrainError, one
    line with the estimate (its largest parts) and the available memory, when it does not."""
    need = sum(parts.values())
    room, what = available_memory()
    if need > room:
        big = ", ".join(f"{k} {human(v)}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:3] if v)
        raise TrainError(f"{request}: needs about {human(need)} of memory ({big}, ...), but {human(room)} is "
                         f"available ({what}); a smaller --batch or fewer --layers would fit")
    return {"estimate_bytes": need, "available_bytes": room, "limited_by": what}
