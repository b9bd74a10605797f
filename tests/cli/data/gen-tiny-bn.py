#!/usr/bin/python3
"""Writes the --init-weights fixture of tests/cli/test-init-weights.sh, with
Debian's python3-torch (run from this folder: /usr/bin/python3 gen-tiny-bn.py).

  tiny-bn.safetensors        the state_dict of tiny-bn.json's PyTorch twin, as
                             torch saves it: conv.weight, bn.{weight, bias,
                             running_mean, running_var, num_batches_tracked},
                             fc.{weight, bias}; the batch norm's running
                             statistics moved away from 0 / 1 by two forward
                             passes in training mode (num_batches_tracked 2)
  tiny-bn-x.npy, tiny-bn-x_labels.npy   32 samples [2, 4, 4] and labels 0..2
  tiny-bn-expected.json      PyTorch's figures on those samples as one batch:
                             the loss of the first SGD step (lr 0.1, momentum
                             0.9, training mode), and the loss in eval mode
                             after it (running statistics after the step)
"""

import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import twb_torch  # noqa: E402

torch.manual_seed(20240611)
model = json.load(open(os.path.join(HERE, "tiny-bn.json")))
net = twb_torch.module_class(torch)(model)
net.train()
with torch.no_grad():
    for _ in range(2):
        net(torch.randn(16, 2, 4, 4) * 2 + 0.5)
x = torch.randn(32, 2, 4, 4)
y = torch.arange(32) % 3
twb_torch.save_safetensors(net.state_dict(), os.path.join(HERE, "tiny-bn.safetensors"))
np.save(os.path.join(HERE, "tiny-bn-x.npy"), x.numpy())
np.save(os.path.join(HERE, "tiny-bn-x_labels.npy"), y.numpy())

opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
_, loss = net(x, y)
opt.zero_grad()
loss.backward()
opt.step()
net.eval()
with torch.no_grad():
    _, eval_loss = net(x, y)
with open(os.path.join(HERE, "tiny-bn-expected.json"), "w") as f:
    json.dump({"first_step_loss": loss.item(), "eval_loss_after": eval_loss.item(),
               "torch": torch.__version__}, f, indent=1)
    f.write("\n")
