"""Shared set-up of the PyTorch GPU checks (shim_torch.py, torch_work.py)."""
import os
import sys


def deterministic_torch(seed):
    """torch, set up for bit-identical runs; exits 77 (skipped) without torch or a GPU."""
    try:
        import torch
    except ImportError:
        print("no torch: skipped", file=sys.stderr)
        sys.exit(77)
    if not torch.cuda.is_available():
        print("no GPU: skipped", file=sys.stderr)
        sys.exit(77)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(seed)
    return torch
