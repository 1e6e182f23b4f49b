"""One cuDNN SDPA forward (B=4 H=32 S=4096 bf16, head dim and mask from argv) after two warm-ups, for Nsight
Compute to profile beside tilejit's kernel (scripts/device_v09b.sh): python3 scripts/ncu_sdpa.py 128 full"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

D, causal = int(sys.argv[1]), sys.argv[2] == "causal"
q, k, v = (torch.randn(4, 32, 4096, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
