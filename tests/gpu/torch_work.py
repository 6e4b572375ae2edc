#!/usr/bin/env python3
"""A deterministic PyTorch training workload of settable size, for the gmuxd GPU
check (tests/gpu/daemon_checks.sh) and the simulator-against-reality comparison.

  torch_work.py [--mib M] [--steps N] [--seed S] [--width W]

An MLP of W x W layers whose parameters, gradients and momentum add up to about
M MiB trains for N steps on fixed synthetic data. Prints
  RESULT work-<seed> <last losses>     (compared across runs: must be identical)
  TIME <seconds of the N steps> <steps per second>
Exit 77 when torch or a GPU is missing.
"""
import argparse
import time

from torch_setup import deterministic_torch

ap = argparse.ArgumentParser()
ap.add_argument("--mib", type=int, default=2048)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--width", type=int, default=4096)
a = ap.parse_args()

torch = deterministic_torch(a.seed)
dev = torch.device("cuda")
# parameters + gradients + momentum: 3 copies of W*W floats per layer
per_layer = 3 * a.width * a.width * 4
layers = max(2, (a.mib << 20) // per_layer)
mods = []
for _ in range(layers):
    mods += [torch.nn.Linear(a.width, a.width, bias=False), torch.nn.Tanh()]
model = torch.nn.Sequential(*mods).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
x = torch.randn(256, a.width, device=dev)
y = torch.randn(256, a.width, device=dev)
losses = []
torch.cuda.synchronize()
t0 = time.perf_counter()
for step in range(a.steps):
    opt.zero_grad(set_to_none=False)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(f"RESULT work-{a.seed} layers={layers} " + " ".join(f"{v:.9e}" for v in losses[-3:]))
print(f"TIME {dt:.4f} {a.steps / dt:.3f}")
