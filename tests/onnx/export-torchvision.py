#!/usr/bin/python3
"""Export a torchvision model (random weights: nothing is downloaded) for
tests/onnx/test-import.c: export-torchvision.py NAME OPSET SIZE OUTDIR writes
OUTDIR/NAME.onnx, OUTDIR/input.pb (a [1, 3, SIZE, SIZE] input) and
OUTDIR/output.pb (torch's eager output on it).  Exit status 77: torch or
torchvision is missing."""
import os
import sys

try:
    import torch
    import torchvision
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print("missing: %s" % e)
    sys.exit(77)

name, opset, size, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
model = getattr(torchvision.models, name)(weights=None).eval()
# Non-trivial batch-norm statistics (fresh ones are 0 and 1).
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
x = torch.randn(1, 3, size, size)
with torch.no_grad():
    y = model(x)
torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), opset_version=opset,
                  input_names=["x"], output_names=["logits"])
onnx.save_tensor(numpy_helper.from_array(x.numpy()), os.path.join(out, "input.pb"))
onnx.save_tensor(numpy_helper.from_array(y.numpy()), os.path.join(out, "output.pb"))
