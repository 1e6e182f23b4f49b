"""Baselines for bench/attention_bench.cpp, run on the device machine (python3
with torch is there): torch scaled_dot_product_attention with the flash and
cuDNN backends, B=4 H=32 S=4096 bf16, TFLOP/s counting 4*B*H*S^2*D (halved for
causal), and the backward (dQ, dK, dV from a random dO) counting 2.5x that.
Prints one table."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S = 4, 32, 4096


# Inputs: torch.randn (default), or with TJ_SDPA_INPUTS=uniform uniform in [-1, 1) as attention_bench's FwdData draws
# them (the data changes the tensor cores' power draw, and with it the clock under sustained load).
UNIFORM = os.environ.get("TJ_SDPA_INPUTS", "normal") == "uniform"
FORWARD_ONLY = os.environ.get("TJ_SDPA_FORWARD_ONLY", "0") == "1"


def inputs(D, **kw):
    if UNIFORM:
        return torch.rand(B, H, S, D, device="cuda", dtype=torch.bfloat16, **kw) * 2 - 1
    return torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, **kw)


def bench(fn, iters=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


print(f"{'D':>4} {'mask':>7} {'backend':>8} {'ms':>8} {'TFLOP/s':>8}")
for D in (64, 96, 128, 256):
    q, k, v = (inputs(D) for _ in range(3))
    for causal in (False, True):
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                print(f"{D:>4} {'causal' if causal else 'full':>7} {name:>8} {ms:8.3f} {flops / ms / 1e9:8.1f}")
            except RuntimeError as e:
                print(f"{D:>4} {'causal' if causal else 'full':>7} {name:>8} unavailable: {str(e)[:60]}")

if FORWARD_ONLY:
    sys.exit(0)
print(f"\nbackward (2.5 x forward FLOPs)\n{'D':>4} {'mask':>7} {'backend':>8} {'ms':>8} {'TFLOP/s':>8}")
for D in (64, 128):
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    do = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
    for causal in (False, True):
        flops = 2.5 * 4 * B * H * S * S * D / (2 if causal else 1)
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    ms = bench(lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True))
                print(f"{D:>4} {'causal' if causal else 'full':>7} {name:>8} {ms:8.3f} {flops / ms / 1e9:8.1f}")
            except RuntimeError as e:
                print(f"{D:>4} {'causal' if causal else 'full':>7} {name:>8} unavailable: {str(e)[:60]}")
