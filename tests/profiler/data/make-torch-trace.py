#!/usr/bin/python3
# make-torch-trace.py — writes torch-real-trace.json(.gz): a real PyTorch
# profiler trace for the importer's tests (tests/profiler/test-trace-import.c).
#
# A tiny MLP (784 -> 128 -> relu -> 10, cross-entropy, SGD) trained on random
# data; torch.profiler with schedule(wait=1, warmup=1, active=3) records three
# steps (ProfilerStep#2..#4) of CPU activity with shapes, and
# export_chrome_trace writes them.  Run with Debian's python3-torch:
#
#   /usr/bin/python3 tests/profiler/data/make-torch-trace.py tests/profiler/data
#
# The output is gzip-compressed when larger than 200 KB.
import gzip
import os
import sys
import tempfile

import torch
import torch.profiler as tp


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(64, 784)
    y = torch.randint(0, 10, (64,))

    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")

        def on_ready(prof):
            prof.export_chrome_trace(raw)

        with tp.profile(activities=[tp.ProfilerActivity.CPU], record_shapes=True,
                        schedule=tp.schedule(wait=1, warmup=1, active=3, repeat=1),
                        on_trace_ready=on_ready) as prof:
            for _ in range(6):
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                prof.step()
        with open(raw, "rb") as f:
            data = f.read()

    for name in ("torch-real-trace.json", "torch-real-trace.json.gz"):
        try:
            os.unlink(os.path.join(out_dir, name))
        except FileNotFoundError:
            pass
    if len(data) > 200 * 1000:
        path = os.path.join(out_dir, "torch-real-trace.json.gz")
        # mtime 0: the same trace gives the same bytes.
        with open(path, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as g:
            g.write(data)
    else:
        path = os.path.join(out_dir, "torch-real-trace.json")
        with open(path, "wb") as f:
            f.write(data)
    print(f"{path}: {os.path.getsize(path)} bytes ({len(data)} bytes of JSON)")


if __name__ == "__main__":
    main()
