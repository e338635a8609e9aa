"""An accelerate loop with a tqdm bar: the counter moves after each optimizer step, then the
postfix shows that step's loss (diffusers' and kohya's training scripts' order)."""

import torch
from accelerate import Accelerator
from record import save
from tqdm.auto import tqdm

accelerator = Accelerator(cpu=True)
torch.manual_seed(0)
net = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x = torch.randn(320, 8)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
net, opt, data = accelerator.prepare(net, opt, data)
points, step = [], 0
bar = tqdm(total=len(data) * 2, disable=not accelerator.is_local_main_process)
for _epoch in range(2):
    for xb, yb in data:
        loss = torch.nn.functional.mse_loss(net(xb), yb)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        step += 1
        bar.update(1)
        bar.set_postfix(loss=loss.item())
        points.append((step, loss.item()))
bar.close()
save("step", points)
