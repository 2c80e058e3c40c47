"""Library decode attention beside vpsim's kernel: PyTorch's scaled_dot_product_attention
through each backend it offers (FlashAttention-2, memory-efficient, cuDNN, math), timed as
vpsim-kernel-tests times (L2 flushed by a 4x-L2 memset, CUDA events around one call, median of N).
Runs on the GPU machine: python3 bench/attn_library.py [iters]. Prints one line per (shape, backend):
  lib case=NAME backend=B median_us=T min_us=T max_us=T rel_err=E   (or error=...)
rel_err: ||out - math_fp32|| / ||math_fp32||, the math backend on fp32 inputs as reference."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
SHAPES = [  # name, batch, q_len, kv_len, heads, kv_heads, qk_dim, v_dim, v_in_k
    ("mla-8k", 1, 3, 8192, 8, 1, 576, 512, True),
    ("mla-32k", 1, 3, 32768, 8, 1, 576, 512, True),
    ("gqa-8k-q3", 1, 3, 8192, 8, 8, 128, 128, False),
    ("gqa-32k-q3", 1, 3, 32768, 8, 8, 128, 128, False),
]
BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)]


def main():
    dev = torch.device("cuda")
    flush = torch.empty(4 * torch.cuda.get_device_properties(dev).L2_cache_size, dtype=torch.uint8, device=dev)
    g = torch.Generator(device=dev).manual_seed(1234)
    for name, b, ql, kv, h, kvh, dk, dv, v_in_k in SHAPES:
        q = torch.rand(b, h, ql, dk, device=dev, generator=g) * 2 - 1
        k = torch.rand(b, kvh, kv, dk, device=dev, generator=g) * 2 - 1
        v = k[..., :dv] if v_in_k else torch.rand(b, kvh, kv, dv, device=dev, generator=g) * 2 - 1
        scale = 0.58 * 3 / dk ** 0.5
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=kvh != h)
        qb, kb, vb = q.bfloat16(), k.bfloat16(), v.bfloat16()
        if v_in_k:
            vb = kb[..., :dv]  # the latent as both key and value, as the MLA kernel reads it
        for bname, backend in BACKENDS:
            try:
                with sdpa_kernel(backend):
                    call = lambda: F.scaled_dot_product_attention(qb, kb, vb, scale=scale, enable_gqa=kvh != h)
                    out = call()
                    err = ((out.float() - ref).norm() / ref.norm()).item()
                    for _ in range(3):
                        call()
                    a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    ts = []
                    for i in range(ITERS):
                        flush.fill_(i & 0xFF)
                        a.record()
                        call()
                        e.record()
                        e.synchronize()
                        ts.append(a.elapsed_time(e) * 1e3)
                ts.sort()
                print(f"lib case={name} backend={bname} median_us={ts[len(ts) // 2]:.2f} min_us={ts[0]:.2f} "
                      f"max_us={ts[-1]:.2f} rel_err={err:.2e}", flush=True)
            except Exception as ex:  # a backend that refuses the shape says why
                msg = str(ex).replace("\n", " ")[:160]
                print(f"lib case={name} backend={bname} error={msg}", flush=True)


if __name__ == "__main__":
    main()
