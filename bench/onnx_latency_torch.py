#!/usr/bin/python3
"""bench/onnx_latency_torch.py — the PyTorch side of bench/onnx-latency.

  /usr/bin/python3 bench/onnx_latency_torch.py --out DIR [--model resnet50] [--opset 17]
      [--size 224] [--batches 1,8] [--threads N] [--seconds 2] [--warmup 3] [--max-runs 200]
      [--torch-folded]

Builds a torchvision model with random weights (nothing is downloaded;
torch.manual_seed(0)) and batch-norm statistics away from their 0 / 1 start,
in eval mode, and exports it to DIR/MODEL.onnx with a symbolic batch.  The
batch norms stay BatchNormalization nodes (the export keeps the module's
structure, TrainingMode.PRESERVE of a model in eval mode, as files from
other exporters and model zoos have them), so that twb's importer and
compiler see them; --torch-folded exports as torch does by default, with
the batch norms folded into the convolutions by torch's exporter.

For each batch B it writes DIR/input-bB.pb (a [B, 3, SIZE, SIZE] input) and
DIR/output-bB.pb (the eager model's output on it), then times, on that input
and with torch.set_num_threads(THREADS):

  eager     the module under torch.no_grad()
  jit       torch.jit.freeze(torch.jit.trace(module, x)) under torch.no_grad()

each after WARMUP untimed runs, then runs until SECONDS have been spent in
timed runs (at least 3, at most MAX_RUNS).  Prints one JSON object:
{"torch": version, "threads": N, "onnx": path, "cells": {"eager": {"1":
{"median_ms", "p90_ms", "runs"}, ...}, "jit": {...}}}.

Exit status 77 when torch, torchvision or onnx is missing.
"""

import argparse
import json
import math
import os
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for the ONNX file and the tensors")
    p.add_argument("--model", default="resnet50", help="torchvision.models name (default resnet50)")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    p.add_argument("--batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per cell (default 2)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs per cell (default 3)")
    p.add_argument("--max-runs", type=int, default=200, help="timed runs per cell at most")
    p.add_argument("--torch-folded", action="store_true",
                   help="let torch's exporter fold the batch norms (its default)")
    args = p.parse_args(argv)
    args.batches = [int(b) for b in args.batches.split(",") if b.strip()]
    return args


def timed(fn, x, warmup, seconds, max_runs):
    """Median and 90th percentile (nearest rank) of fn(x) in ms."""
    for _ in range(warmup):
        fn(x)
    times = []
    while len(times) < max_runs and (len(times) < 3 or sum(times) < seconds):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    p90 = times[max(0, math.ceil(0.9 * n) - 1)]
    return {"median_ms": median * 1e3, "p90_ms": p90 * 1e3, "runs": n}


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import torchvision
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        print(f"onnx_latency_torch.py: missing: {e}", file=sys.stderr)
        return 77

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None).eval()
    # Non-trivial batch-norm statistics (fresh ones are 0 and 1), as
    # tests/onnx/export-torchvision.py sets them.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.model + ".onnx")
    example = torch.randn(1, 3, args.size, args.size)
    mode = torch.onnx.TrainingMode.EVAL if args.torch_folded else torch.onnx.TrainingMode.PRESERVE
    import warnings
    with warnings.catch_warnings():
        # PRESERVE warns about constant folding for models in training mode;
        # this one is in eval mode.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, path, opset_version=args.opset, input_names=["x"],
                          output_names=["logits"], training=mode,
                          dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})

    cells = {"eager": {}, "jit": {}}
    with torch.no_grad():
        for b in args.batches:
            x = torch.randn(b, 3, args.size, args.size)
            y = model(x)
            onnx.save_tensor(numpy_helper.from_array(x.numpy()),
                             os.path.join(args.out, f"input-b{b}.pb"))
            onnx.save_tensor(numpy_helper.from_array(y.numpy()),
                             os.path.join(args.out, f"output-b{b}.pb"))
            print(f"onnx_latency_torch.py: batch {b}: torch eager", file=sys.stderr, flush=True)
            cells["eager"][str(b)] = timed(model, x, args.warmup, args.seconds, args.max_runs)
            print(f"onnx_latency_torch.py: batch {b}: torch jit.trace + freeze", file=sys.stderr,
                  flush=True)
            frozen = torch.jit.freeze(torch.jit.trace(model, x))
            cells["jit"][str(b)] = timed(frozen, x, args.warmup, args.seconds, args.max_runs)
    print(json.dumps({"torch": torch.__version__, "torchvision": torchvision.__version__,
                      "threads": torch.get_num_threads(), "onnx": path, "cells": cells}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
