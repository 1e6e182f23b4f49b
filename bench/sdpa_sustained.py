"""Run torch's SDPA forward (cuDNN or flash backend) back to back for a fixed time: the sustained comparison, where
the H200 sits at its 700 W power cap, beside attention_bench rows run as long (--benchmark_min_time=SECONDS) —
docs/perf.md v0.35. Usage: python3 bench/sdpa_sustained.py D full|causal SECONDS [uniform|randn] [cudnn|flash]
B = 4, H = 32, S = 4096, bf16. Prints the mean time per call over the whole window (one event pair around each
batch of 10 calls) and TFLOP/s (4·B·H·S²·D, halved for causal)."""
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

D, causal, seconds = int(sys.argv[1]), sys.argv[2] == "causal", float(sys.argv[3])
dist = sys.argv[4] if len(sys.argv) > 4 else "uniform"
backend = sys.argv[5] if len(sys.argv) > 5 else "cudnn"
B, H, S = 4, 32, 4096
gen = (lambda: torch.rand(B, H, S, D, device="cuda", dtype=torch.bfloat16) * 2 - 1) if dist == "uniform" else (
    lambda: torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16))
q, k, v = gen(), gen(), gen()
flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION if backend == "cudnn" else SDPBackend.FLASH_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.cuda.synchronize()
    ms, calls, t0 = 0.0, 0, time.time()
    while time.time() - t0 < seconds:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(10):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        b.record()
        torch.cuda.synchronize()
        ms += a.elapsed_time(b)
        calls += 10
print(f"{backend} D{D} {'causal' if causal else 'full'} {dist}: {calls} calls, {ms / calls:.4f} ms/call, "
      f"{flops / (ms / calls * 1e-3) / 1e12:.1f} TFLOP/s")
