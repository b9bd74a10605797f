#!/usr/bin/python3
"""Writes the ONNX test fixtures beside this script, with Debian's torch.

    /usr/bin/python3 tests/onnx/data/make-fixtures.py [OUTDIR]

mlp.onnx     Linear(8, 16) → ReLU → Linear(16, 4), batch 2
convnet.onnx Conv(3→4, 3×3, pad 1) → BatchNorm → ReLU → MaxPool(2) → Flatten → Gemm(64 → 5),
             input 1×3×8×8, in eval mode (batch norm uses its running statistics)

BatchNormalization stays its own node (TrainingMode.PRESERVE on a model in
eval mode).  Each model at opset 13, with NAME-input_0.pb and NAME-output_0.pb:
TensorProtos of a fixed input and torch's output on it, for the importer to
compare against.
Fixed seeds, so a rerun writes the same weights and data (the .onnx bytes can
differ with the torch version: producer_version).
"""
import os
import sys

import onnx
import onnx.numpy_helper
import torch

OPSET = 13


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.nn.functional.max_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


def write(out, name, model, x):
    model.eval()
    with torch.no_grad():
        if isinstance(model, ConvNet):
            # Non-trivial running statistics, so batch norm is not an identity.
            model.bn.running_mean.uniform_(-0.5, 0.5)
            model.bn.running_var.uniform_(0.5, 2.0)
            model.bn.weight.uniform_(0.5, 1.5)
            model.bn.bias.uniform_(-0.5, 0.5)
        y = model(x)
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=OPSET, input_names=["input"],
                      output_names=["output"], do_constant_folding=True,
                      # PRESERVE keeps BatchNormalization as its own node (EVAL
                      # would fold it into the conv); the model is in eval mode.
                      training=torch.onnx.TrainingMode.PRESERVE)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    for kind, t in (("input", x), ("output", y)):
        proto = onnx.numpy_helper.from_array(t.numpy(), kind)
        with open(os.path.join(out, "%s-%s_0.pb" % (name, kind)), "wb") as f:
            f.write(proto.SerializeToString())
    print(path, os.path.getsize(path), "bytes")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(11)
    write(out, "mlp", Mlp(), torch.randn(2, 8))
    write(out, "convnet", ConvNet(), torch.randn(1, 3, 8, 8))


if __name__ == "__main__":
    main()
