"""A plain PyTorch loop reporting through `logging` (epoch, global step, loss); its own list is the record."""

import logging

import torch
from record import save

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
torch.manual_seed(0)
net = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x = torch.randn(160, 8)
y = x.sum(1, keepdim=True)
points, step = [], 0
for epoch in range(3):
    for i in range(0, 160, 8):
        loss = torch.nn.functional.mse_loss(net(x[i : i + 8]), y[i : i + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 5 == 0:
            log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
            points.append((step, loss.item()))
save("step", points)
