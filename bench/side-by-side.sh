#!/usr/bin/env bash
# Side-by-side rounds of the embedded engine (native and WASM kernels) and PyTorch-CPU on one
# workload, interleaved so that a busy machine slows every contender alike; one JSON line per run.
#   bench/side-by-side.sh train  [rounds] [extra bench-train flags...]   e.g. train 2 --shape 135m
#   bench/side-by-side.sh engine [rounds] [extra bench-engine flags...]  e.g. engine 2 --shape 135m
# PyTorch runs where Debian's python3-torch is installed (/usr/bin/python3), with OpenBLAS's own
# threads; set TORCH=0 to leave it out. Each PyTorch run gets the --shape/--full/--weights-dtype of the
# engine runs (bf16 weights → bf16 autocast or bf16 weights there), plus an fp32 and a bf16 run for train.
# KERNELS="native" leaves the WASM runs out; QUIET=1 runs each contender under the machine's quiet lock
# (flock /tmp/openclaw-quiet.lock nice -n -10), one timing-critical job at a time machine-wide.
# PREV=DIR adds, each round, the same runs from another checkout (e.g. a worktree of the previous main,
# its addon built there); TORCH_BF16=0 leaves out the bf16 autocast training run (on a CPU without
# avx512_bf16 one step takes many minutes) and runs `torch_bench.py matmul` (fp32 vs bf16 GFLOPS) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
what=$1; rounds=${2:-2}; shift 2 || true
args=("$@")
shape=135m; full=""; bf16=""
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --shape) shape=${args[i+1]} ;;
    --full) full=--full ;;
    --weights-dtype) [ "${args[i+1]}" = bf16 ] && bf16=--bf16 ;;
  esac
done
quiet() { if [ "${QUIET:-0}" = 1 ]; then flock /tmp/openclaw-quiet.lock nice -n -10 "$@"; else "$@"; fi; }
torch() { quiet env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/torch_bench.py "$@"; }
have_torch=0
if [ "${TORCH:-1}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then have_torch=1; fi
for ((r = 1; r <= rounds; r++)); do
  echo "# round $r, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for k in ${KERNELS:-native wasm}; do
    quiet node bin/openclaw-rl.js bench "$what" --kernel "$k" --json "${args[@]}" | tail -1
    if [ -n "${PREV:-}" ]; then (cd "$PREV" && quiet node bin/openclaw-rl.js bench "$what" --kernel "$k" --json "${args[@]}" | tail -1 | sed 's/^/previous: /'); fi
  done
  if [ "$have_torch" = 1 ]; then
    if [ "$what" = train ]; then
      torch train --shape "$shape" $full
      if [ "${TORCH_BF16:-1}" = 0 ]; then torch matmul; else torch train --shape "$shape" $full --bf16; fi
    else
      torch engine --shape "$shape" $bf16
    fi
  fi
done
