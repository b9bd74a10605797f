#!/usr/bin/python3
"""PyTorch reference for bench/compare-torch.

Trains one of the twb example models (assets/models/{mlp,lenet5,mlp-gemm}.json)
in PyTorch with the same recipe twb uses and prints ONE JSON object on stdout:

  {"framework": "torch", "model": "mlp", "batch": 64, "threads": 1,
   "median_step_ms": ..., "mean_step_ms": ..., "p90_step_ms": ...,
   "samples_per_s": ..., "train_loss": ..., "test_accuracy": ... (only with
   --full), "blas_core": "Cooperlake", "blas_libraries": [...], ...}

Recipe: SGD lr 0.01 momentum 0.9, CrossEntropyLoss, Fashion-MNIST from
/usr/share/datasets/fashion-mnist (pixels / 255, no normalisation), a new
seeded shuffle every epoch, PyTorch's default initialisation.

Timing mode (default): `--warmup` steps (20) are run and not measured, then
`--max-steps` steps (200) are timed one by one with time.perf_counter.  A
step is zero_grad + forward + loss + backward + optimizer step; the batch is
sliced out of the dataset before the clock starts, so data loading is not
timed.  Batches are always full (the last partial batch of an epoch is
dropped) and the data reshuffles when an epoch runs out.

Accuracy mode (--full): one full epoch (last partial batch included, as
DataLoader's default), every step timed, then accuracy on the 10k test set.

train_loss: mean of the per-step losses over the steps that were run
(warm-up included); train_loss_last: the last step's loss.

Run it with Debian's Python (/usr/bin/python3): `python3` on PATH may be a
different interpreter without Debian's torch.
"""

import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MODELS = ("mlp", "lenet5", "mlp-gemm")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=MODELS, default="mlp")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=200,
                   help="timed steps after the warm-up (timing mode)")
    p.add_argument("--warmup", type=int, default=20,
                   help="untimed steps before the timed ones (timing mode)")
    p.add_argument("--full", action="store_true",
                   help="one full epoch, then test accuracy")
    p.add_argument("--blas-only", action="store_true",
                   help="print the BLAS library and core torch loaded, and exit")
    p.add_argument("--infer-latency", action="store_true",
                   help="time batch-1 inference (eager and torch.jit.trace + freeze) instead of training")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--data", default=DATA_DIR,
                   help="folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
    return p.parse_args(argv)


def pin_threads(n):
    """BLAS and OpenMP read their thread counts when the library loads, so
    this runs before `import torch`.  Only the *_NUM_THREADS variables are
    touched; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE stay as they are."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


# IDX (http://yann.lecun.com/exdb/mnist/): magic 0x00000800 | dtype<<8 | ndim,
# then ndim big-endian u32 sizes, then the data.  Only u8 (dtype 0x08) here.
def read_idx(path):
    import numpy as np

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    magic, = struct.unpack_from(">I", raw, 0)
    if magic >> 16 != 0 or (magic >> 8) & 0xFF != 0x08:
        raise ValueError(f"{path}: not a u8 IDX file (magic 0x{magic:08x})")
    ndim = magic & 0xFF
    dims = struct.unpack_from(">" + "I" * ndim, raw, 4)
    offset = 4 + 4 * ndim
    count = 1
    for d in dims:
        count *= d
    if len(raw) - offset != count:
        raise ValueError(f"{path}: {len(raw) - offset} data bytes, header says {count}")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(dims)


def find_idx(folder, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{folder}: no {stem}[.gz] (apt-get install dataset-fashion-mnist)")


def load_split(torch, folder, prefix):
    import numpy as np

    images = read_idx(find_idx(folder, prefix + "-images-idx3-ubyte"))
    labels = read_idx(find_idx(folder, prefix + "-labels-idx1-ubyte"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{folder}: {images.shape[0]} {prefix} images but {labels.shape[0]} labels")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def build_model(nn, name):
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10))
    if name == "lenet5":
        return nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(400, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))
    if name == "mlp-gemm":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 4096), nn.ReLU(),
            nn.Linear(4096, 4096), nn.ReLU(),
            nn.Linear(4096, 10))
    raise ValueError(name)


def blas_report(torch):
    """What runs torch's matrix products in this process: the BLAS library it
    loaded (torch.__config__ says BLAS_INFO=generic for Debian's build, which
    links libblas.so.3 -- an alternative, OpenBLAS by default) and, when that
    is OpenBLAS, the core it picked (openblas_get_corename, asked through the
    library already mapped); oneDNN, which runs torch's convolutions, is
    named from the build's configuration."""
    import ctypes
    import re

    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if path.startswith("/") and path not in libs and re.search(
                    r"/lib(open)?blas|/libmkl|/libblis|/libdnnl|/libmkldnn", path):
                libs.append(path)
    config = torch.__config__.show()
    m = re.search(r"BLAS_INFO=([^,\s]+)", config)
    report = {"blas_info": m.group(1) if m else None, "blas_libraries": libs,
              "blas_core": None, "blas_config": None}
    dnn = re.search(r"(Intel\(R\) MKL-DNN|oneDNN) v([0-9.]+)", config)
    if dnn:
        report["onednn"] = dnn.group(2)
    cap = re.search(r"CPU capability usage: (\S+)", config)
    if cap:
        report["cpu_capability"] = cap.group(1)
    for path in libs:
        if "openblas" not in path:
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            report["blas_core"] = lib.openblas_get_corename().decode()
            report["blas_config"] = lib.openblas_get_config().decode()
        except (OSError, AttributeError):
            pass
        break
    return report


def batches(torch, n, batch, seed, drop_last):
    """Yields index tensors; a new permutation each epoch from (seed, epoch)."""
    epoch = 0
    while True:
        g = torch.Generator()
        g.manual_seed(seed * 1000003 + epoch)
        perm = torch.randperm(n, generator=g)
        stop = n - n % batch if drop_last else n
        for i in range(0, stop, batch):
            yield epoch, perm[i:i + batch]
        epoch += 1


def infer_latency(torch, nn, args):
    """Median latency of one sample's forward pass: eager, and traced + frozen."""
    model = build_model(nn, args.model).eval()
    x = torch.rand(1, 1, 28, 28)

    def median_ms(fn, n):
        for _ in range(50):
            fn()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    with torch.no_grad():
        eager = median_ms(lambda: model(x), args.max_steps)
        traced = torch.jit.freeze(torch.jit.trace(model, x))
        jit = median_ms(lambda: traced(x), args.max_steps)
    print(json.dumps({"framework": "torch", "model": args.model, "threads": args.threads,
                      "eager_ms": round(eager, 5), "jit_ms": round(jit, 5),
                      "torch_version": torch.__version__, **blas_report(torch)}), flush=True)
    return 0


def main(argv):
    args = parse_args(argv)
    pin_threads(args.threads)

    import torch
    from torch import nn

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    if args.blas_only:
        print(json.dumps({"framework": "torch", "torch_version": torch.__version__,
                          **blas_report(torch)}), flush=True)
        return 0
    if args.infer_latency:
        return infer_latency(torch, nn, args)

    x_train, y_train = load_split(torch, args.data, "train")
    model = build_model(nn, args.model)
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model.train()

    n = x_train.shape[0]
    if args.full:
        warmup, timed = 0, (n + args.batch - 1) // args.batch
    else:
        warmup, timed = args.warmup, args.max_steps

    step_ms = []
    losses = []
    it = batches(torch, n, args.batch, args.seed, drop_last=not args.full)
    for step in range(warmup + timed):
        epoch, idx = next(it)
        if args.full and epoch > 0:
            break
        xb = x_train.index_select(0, idx).contiguous()
        yb = y_train.index_select(0, idx).contiguous()

        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = criterion(model(xb), yb)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()

        losses.append(loss.item())
        if step >= warmup:
            step_ms.append((t1 - t0) * 1e3)

    median = statistics.median(step_ms)
    mean = statistics.fmean(step_ms)
    ordered = sorted(step_ms)
    p90 = ordered[max(0, -(-9 * len(ordered) // 10) - 1)]  # nearest rank
    result = {
        "framework": "torch",
        "model": args.model,
        "batch": args.batch,
        "threads": args.threads,
        "steps": len(step_ms),
        "warmup_steps": warmup,
        "median_step_ms": round(median, 4),
        "mean_step_ms": round(mean, 4),
        "p90_step_ms": round(p90, 4),
        "samples_per_s": round(args.batch * 1e3 / mean, 1),
        "train_loss": round(statistics.fmean(losses), 6),
        "train_loss_last": round(losses[-1], 6),
        "seed": args.seed,
        "torch_version": torch.__version__,
        **blas_report(torch),
    }

    if args.full:
        x_test, y_test = load_split(torch, args.data, "t10k")
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, x_test.shape[0], 1000):
                pred = model(x_test[i:i + 1000]).argmax(dim=1)
                correct += int((pred == y_test[i:i + 1000]).sum())
        result["test_accuracy"] = round(correct / x_test.shape[0], 4)

    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
