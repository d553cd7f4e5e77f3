#!/usr/bin/env bash
# The GPU measurements, as one short run on a machine with an NVIDIA GPU (and PyTorch's CUDA build installed with
# bendtorch): the conformance laws for PyTorch CUDA (TF32 off and on, the two variants of the torch target on cuda),
# and CUDA's float32 exp, log, tanh, sin, cos, erf, sqrt and 1/sqrt (the sweep library torch_cuda) over all 2^32
# inputs, the GPU computing each chunk and every core running the checker. Everything lands in OUT (default
# gpu-out/), with nvidia-smi's account of the GPU and driver; each JSON records the machine, the GPU's name,
# compute capability and CUDA runtime.
#
#   bash bench/gpu.sh                          on the GPU machine, all 2^32 inputs
#   bash bench/gpu.sh --standin --sample 4096  here: the same path with the CPU standing in for the GPU
#                                               (BENDTORCH_SWEEP_GPU=cpu), a sample of the inputs; the laws on cuda
#                                               say "not run: no GPU"
# The op-accuracy matrix of PyTorch CUDA (TF32 off and on: `bendtorch report --target torch --device cuda
# --accuracy-only`) lands in OUT/accuracy. JAX's CUDA build is not a target here: the jax target runs on the CPU only.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
BT=${BT:-bendtorch}
SAMPLE=()
STANDIN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --standin) STANDIN=1 ;;
    --sample) SAMPLE=(--sample "$2"); shift ;;
    *) echo "bench/gpu.sh: unknown argument $1 (--standin, --sample N)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT/atlas"
if [ "$STANDIN" = 1 ]; then export BENDTORCH_SWEEP_GPU=cpu; fi
status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "nvidia-smi: not available"; } \
  > "$OUT/nvidia-smi.csv" 2>&1
# the laws: exit 0 with findings; --allow-not-run so that a machine without a GPU still writes its "not run" rows
$BT laws --target torch --device cuda --allow-not-run --json "$OUT/torch-cuda.json" > "$OUT/laws.txt" 2>&1 || status=1
grep "^total" "$OUT/laws.txt"
$BT report --target torch --device cuda --accuracy-only --out "$OUT/accuracy" > "$OUT/accuracy.txt" 2>&1 || status=1
tail -1 "$OUT/accuracy.txt"
WORKERS=$(nproc)
for f in exp log tanh sin cos erf sqrt rsqrt; do
  $BT sweep "$f" --lib torch_cuda "${SAMPLE[@]}" --workers "$WORKERS" --out "$OUT/atlas" --quiet --no-plots \
    > "$OUT/sweep-$f.txt" 2>&1 || status=1
  tail -2 "$OUT/sweep-$f.txt" | head -1
done
exit $status
