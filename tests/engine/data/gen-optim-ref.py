#!/usr/bin/python3
"""Writes optim-ref.json: torch.optim reference trajectories for test-optim.c.

Two fixed parameters get five fixed gradients (one set per step); for each
optimizer configuration the parameters after every step are recorded.  All
tensors are float32; the values are written as the exact doubles of those
float32 numbers, so nothing is lost in the JSON.

Run from this folder with Debian's python3-torch:  /usr/bin/python3 gen-optim-ref.py
"""
import json

import torch

STEPS = 5

g = torch.Generator().manual_seed(1234)
params0 = {
    "w": torch.randn(2, 3, generator=g, dtype=torch.float32),
    "b": torch.randn(4, generator=g, dtype=torch.float32) * 0.1,
}
grads = []
for step in range(STEPS):
    grads.append({name: torch.randn(p.shape, generator=g, dtype=torch.float32)
                  * (0.5 + step)   # growing scale, so the Adam moments change shape
                  for name, p in params0.items()})
# One tiny gradient element, where Adam's eps matters.
for step in range(STEPS):
    grads[step]["b"][0] = 1e-7

CASES = [
    ("sgd", dict(type="sgd", lr=0.1)),
    ("sgd-wd", dict(type="sgd", lr=0.1, weight_decay=0.01)),
    ("sgd-momentum", dict(type="sgd", lr=0.1, momentum=0.9)),
    ("sgd-momentum-wd", dict(type="sgd", lr=0.05, momentum=0.8, weight_decay=0.1)),
    ("sgd-nesterov-wd", dict(type="sgd", lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adam", dict(type="adam", lr=0.01)),
    ("adam-wd", dict(type="adam", lr=0.01, weight_decay=0.1)),
    ("adam-betas", dict(type="adam", lr=0.003, beta1=0.8, beta2=0.99, eps=1e-6)),
    ("adamw-wd", dict(type="adamw", lr=0.01, weight_decay=0.1)),
    ("adamw-big-wd", dict(type="adamw", lr=0.05, weight_decay=0.5, beta1=0.5, beta2=0.9)),
]


def full_config(c):
    out = dict(type=c["type"], lr=c["lr"], momentum=c.get("momentum", 0.0),
               nesterov=c.get("nesterov", False), weight_decay=c.get("weight_decay", 0.0),
               beta1=c.get("beta1", 0.9), beta2=c.get("beta2", 0.999), eps=c.get("eps", 1e-8))
    return out


def make_optimizer(c, params):
    if c["type"] == "sgd":
        return torch.optim.SGD(params, lr=c["lr"], momentum=c["momentum"],
                               nesterov=c["nesterov"], weight_decay=c["weight_decay"],
                               foreach=False)
    cls = torch.optim.Adam if c["type"] == "adam" else torch.optim.AdamW
    return cls(params, lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=c["eps"],
               weight_decay=c["weight_decay"], foreach=False)


cases = []
for name, c in CASES:
    c = full_config(c)
    ps = {k: v.clone().requires_grad_(True) for k, v in params0.items()}
    opt = make_optimizer(c, list(ps.values()))
    after = []
    for step in range(STEPS):
        for k, p in ps.items():
            p.grad = grads[step][k].clone()
        opt.step()
        after.append({k: p.detach().flatten().tolist() for k, p in ps.items()})
    cases.append({"name": name, "optimizer": c, "after": after})

out = {
    "generator": "gen-optim-ref.py",
    "torch_version": torch.__version__,
    "steps": STEPS,
    "params": {k: {"shape": list(v.shape), "value": v.flatten().tolist()}
               for k, v in params0.items()},
    "grads": [{k: v.flatten().tolist() for k, v in gs.items()} for gs in grads],
    "cases": cases,
}
with open("optim-ref.json", "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
