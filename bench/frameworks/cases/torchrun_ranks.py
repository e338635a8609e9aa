"""2 gloo ranks on CPU (run by torch.distributed.run), each printing its own loss; rank 0's list is the record."""

import os

import torch
import torch.distributed as dist
from record import save

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
points = []
for step in range(1, 31):
    x = torch.randn(8, 8)
    loss = torch.nn.functional.mse_loss(net(x), x.sum(1, keepdim=True))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    points.append((step, loss.item()))
if rank == 0:
    save("step", points)
dist.destroy_process_group()
os._exit(0)
