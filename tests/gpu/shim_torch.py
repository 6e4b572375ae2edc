#!/usr/bin/env python3
"""A small deterministic PyTorch training loop for the libgmux.so GPU checks.

tests/gpu/shim_checks.sh runs it natively and under `gmux run` and compares the
printed losses, which must be identical. Exit 77 when torch or a GPU is missing.
"""
from torch_setup import deterministic_torch

torch = deterministic_torch(1234)

dev = torch.device("cuda")
x = torch.randn(4096, 256, device=dev)
y = torch.randint(0, 10, (4096,), device=dev)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
losses = []
for step in range(60):
    idx = torch.arange(step * 64, step * 64 + 512, device=dev) % 4096
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("RESULT torch-train " + " ".join(f"{v:.9e}" for v in losses[-5:]))
