"""Which kernels cuBLAS runs for bf16 A·Bᵀ on this GPU (tile shape, cluster, cooperative / ping-pong appear in the
kernel names). Run on the device machine: python3 bench/cublas_kernel_names.py. Prints shape -> kernel name."""
import torch
from torch.profiler import ProfilerActivity, profile

for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 6144, 4096), (4096, 28672, 4096), (4096, 4096, 14336),
                (4096, 6144, 4096), (16384, 4096, 14336), (8192, 96, 8192),
                (8192, 192, 8192), (16, 6144, 4096), (1, 4096, 4096)):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a @ b.t()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        a @ b.t()
        torch.cuda.synchronize()
    names = sorted({e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    print(f"{m}x{n}x{k}: {' | '.join(names)}")
