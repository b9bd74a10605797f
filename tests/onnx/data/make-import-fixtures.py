#!/usr/bin/python3
"""Fixtures of the ONNX importer's test (tests/onnx/test-import.c).

Run with Debian's torch (/usr/bin/python3); writes, beside this script:

  import-mlp.onnx      x.view(x.size(0), -1) (the Shape/Gather/Unsqueeze/Concat
                       chain before Reshape), MatMul + Add, Gemm, Relu, Tanh,
                       Softmax
  import-cnn.onnx      Conv (padding, stride, groups, dilation), BatchNormalization
                       (kept: TrainingMode.PRESERVE), Relu, MaxPool, AveragePool,
                       a residual Add, Sigmoid, GlobalAveragePool, Flatten, Gemm
  import-*-input.pb, import-*-output.pb   a fixed input and torch's output
  import-ops.onnx      ReLU6 and clamp (Clip), hardsigmoid, hardswish, constant and
                       reflect pads (Pad), nearest upsampling (Resize), after a Conv
  import-unsupported.onnx   three nodes twb cannot import (Loop, TopK, an
                       Conv with auto_pad SAME_UPPER) among supported ones

Seeds are fixed, so a rerun gives the same files with the same torch.
"""
import os
import torch
import torch.nn as nn
import onnx
from onnx import helper, numpy_helper, TensorProto
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.w2 = nn.Parameter(torch.randn(16, 8) * 0.3)
        self.b2 = nn.Parameter(torch.randn(8) * 0.1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        x = torch.relu(self.fc1(x))
        x = torch.tanh(x @ self.w2 + self.b2)
        return torch.softmax(self.head(x), dim=1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=2, dilation=2, groups=2)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.bn1(self.conv1(x)))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.layer1 = nn.Sequential(Block(4))
        self.avg = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = self.layer1(x)
        x = torch.sigmoid(self.avg(x))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class Ops(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)

    def forward(self, x):
        x = nn.functional.pad(x, (1, 2, 0, 1), value=0.25)
        x = nn.functional.relu6(self.conv(x) * 4.0)
        x = nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")
        x = nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")
        return nn.functional.hardswish(x - 3.0) + nn.functional.hardsigmoid(x) \
            + torch.clamp(x, -0.5, 0.5)


def save_pb(t, path):
    onnx.save_tensor(numpy_helper.from_array(t.detach().numpy()), path)


def export(model, x, name, **kw):
    model.eval()
    with torch.no_grad():
        # Non-trivial running statistics, so that batch norm's mean and var matter.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
        y = model(x)
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=13, input_names=["x"],
                      output_names=["y"], **kw)
    save_pb(x, os.path.join(HERE, name + "-input.pb"))
    save_pb(y, os.path.join(HERE, name + "-output.pb"))


def unsupported():
    w = numpy_helper.from_array(np.ones((2, 2, 3, 3), np.float32), "conv.weight")
    k = numpy_helper.from_array(np.array([1], np.int64), "k")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, [])])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu1"),
        helper.make_node("Conv", ["r", "conv.weight"], ["c"], name="conv",
                         auto_pad="SAME_UPPER"),
        helper.make_node("TopK", ["c", "k"], ["v", "idx"], name="topk", axis=-1),
        helper.make_node("Loop", ["", ""], [], name="Loop_12", body=body),
        helper.make_node("Sigmoid", ["v"], ["y"], name="sig"),
    ]
    g = helper.make_graph(nodes, "unsupported",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[w, k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "import-unsupported.onnx"))


if __name__ == "__main__":
    torch.manual_seed(0)
    # A symbolic batch keeps the Shape chain (a static one is folded by torch).
    export(Mlp(), torch.randn(2, 3, 4), "import-mlp",
           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    export(Cnn(), torch.randn(2, 3, 16, 16), "import-cnn",
           training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    export(Ops(), torch.randn(1, 2, 5, 6), "import-ops")
    unsupported()
