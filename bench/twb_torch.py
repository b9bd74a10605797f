"""A twb model file as a PyTorch module, for bench/parity-torch and the
--init-weights tests.

    import twb_torch
    TwbNet = twb_torch.module_class(torch)
    net = TwbNet(json.load(open("assets/models/mlp.json")))
    net.state_dict().keys()   # "fc1.weight", "fc1.bias", ... as twb names them
    logits, loss = net(x, y)

Every node with parameters becomes a submodule named by its parameter
scope (the node id, or the one given in "share"), so the
state_dict's keys are twb's parameter names and shapes, and a shared layer is
one module used twice.  The module is built from the graph by running a
sample through it (the in_features of a linear layer is whatever reaches it).
Ops outside the list below raise ValueError naming the node: better no
reference than a wrong one.

Semantics follow twb's op docs (engine/ops/*.c), which follow PyTorch:
max/avg pooling stride defaults to the kernel size, avg_pool2d counts
padding by default, layer_norm normalises the trailing normalized_ndim dims,
flatten runs from start_dim (1) to end_dim (-1), concat joins along axis (1).
"""

import math

SUPPORTED = ("input", "flatten", "linear", "relu", "tanh", "sigmoid", "conv2d", "batch_norm",
             "layer_norm", "max_pool2d", "avg_pool2d", "concat", "add", "cross_entropy",
             "mse_loss")


def _pair(v):
    if isinstance(v, (list, tuple)):
        return tuple(v) if len(v) == 2 else (v[0], v[0])
    return (v, v)


def _topo(nodes):
    """Node ids in an order where inputs come first (the file's order need not be)."""
    by_id = {n["id"]: n for n in nodes}
    done, order = set(), []

    def visit(nid, stack):
        if nid in done:
            return
        if nid in stack:
            raise ValueError(f"cycle through node {nid}")
        stack.add(nid)
        for ref in by_id[nid].get("inputs", []):
            visit(ref.split(":")[0], stack)
        stack.discard(nid)
        done.add(nid)
        order.append(nid)

    for n in nodes:
        visit(n["id"], set())
    return [by_id[i] for i in order]


def module_class(torch):
    """The class is made here so that importing this file needs no torch."""
    nn = torch.nn
    F = torch.nn.functional

    class TwbNet(nn.Module):
        def __init__(self, model_json, dtype=torch.float32):
            super().__init__()
            g = model_json["graph"]
            self._twb_nodes = _topo(g["nodes"])
            self._twb_outputs = g.get("outputs", [])
            losses = [n["id"] for n in self._twb_nodes if n["op"] in ("cross_entropy", "mse_loss")]
            self._twb_loss_id = model_json.get("training", {}).get("loss") or (losses[0] if losses else None)
            for n in self._twb_nodes:
                if n["op"] not in SUPPORTED:
                    raise ValueError(f"node {n['id']}: op {n['op']} has no PyTorch equivalent here")
            self._twb_data_shape = None
            for n in self._twb_nodes:
                a = n.get("attrs", {})
                if n["op"] == "input" and a.get("role", "data") == "data":
                    self._twb_data_shape = list(a["shape"])
            # Run a sample through, making each layer as its input shape becomes known.
            with torch.no_grad():
                self._run(torch.zeros([2] + self._twb_data_shape, dtype=torch.float32), None, build=True)
            self.to(dtype)

        @staticmethod
        def scope(n):
            return n.get("share") or n["id"]

        def _make(self, n, x):
            a = n.get("attrs", {})
            op = n["op"]
            if op == "linear":
                return nn.Linear(x.shape[-1], a["out_features"], bias=a.get("bias", True))
            if op == "conv2d":
                return nn.Conv2d(x.shape[1], a["out_channels"], _pair(a["kernel_size"]),
                                 stride=_pair(a.get("stride", 1)), padding=_pair(a.get("padding", 0)),
                                 dilation=_pair(a.get("dilation", 1)), groups=a.get("groups", 1),
                                 bias=a.get("bias", True))
            if op == "batch_norm":
                return nn.BatchNorm2d(x.shape[1], eps=a.get("eps", 1e-5), momentum=a.get("momentum", 0.1),
                                      affine=a.get("affine", True),
                                      track_running_stats=a.get("track_running_stats", True)) \
                    if x.dim() == 4 else \
                    nn.BatchNorm1d(x.shape[1], eps=a.get("eps", 1e-5), momentum=a.get("momentum", 0.1),
                                   affine=a.get("affine", True),
                                   track_running_stats=a.get("track_running_stats", True))
            if op == "layer_norm":
                k = a.get("normalized_ndim", 1)
                return nn.LayerNorm(list(x.shape[x.dim() - k:]), eps=a.get("eps", 1e-5),
                                    elementwise_affine=a.get("elementwise_affine", True))
            return None

        def _run(self, x, y, build=False):
            vals = {}
            loss = None

            def get(ref):
                nid, _, k = ref.partition(":")
                v = vals[nid]
                return v[int(k)] if k else (v[0] if isinstance(v, tuple) else v)

            for n in self._twb_nodes:
                a = n.get("attrs", {})
                op = n["op"]
                ins = [get(r) for r in n.get("inputs", [])]
                if op == "input":
                    out = x if a.get("role", "data") == "data" else y
                elif op in ("linear", "conv2d", "batch_norm", "layer_norm"):
                    s = self.scope(n)
                    if s not in self._modules:
                        if not build:
                            raise ValueError(f"node {n['id']}: no layer {s}")
                        # Registered under the scope itself: state_dict keys are twb's names.
                        self.add_module(s, self._make(n, ins[0]))
                    out = self._modules[s](ins[0])
                elif op == "flatten":
                    out = torch.flatten(ins[0], a.get("start_dim", 1), a.get("end_dim", -1))
                elif op == "relu":
                    out = F.relu(ins[0])
                elif op == "tanh":
                    out = torch.tanh(ins[0])
                elif op == "sigmoid":
                    out = torch.sigmoid(ins[0])
                elif op == "max_pool2d":
                    k = _pair(a["kernel_size"])
                    out = F.max_pool2d(ins[0], k, stride=_pair(a.get("stride", k)),
                                       padding=_pair(a.get("padding", 0)),
                                       dilation=_pair(a.get("dilation", 1)))
                elif op == "avg_pool2d":
                    k = _pair(a["kernel_size"])
                    out = F.avg_pool2d(ins[0], k, stride=_pair(a.get("stride", k)),
                                       padding=_pair(a.get("padding", 0)),
                                       count_include_pad=a.get("count_include_pad", True))
                elif op == "concat":
                    out = torch.cat(ins, dim=a.get("axis", 1))
                elif op == "add":
                    out = ins[0] + ins[1]
                elif op == "cross_entropy":
                    out = None if y is None else F.cross_entropy(
                        ins[0], ins[1], reduction=a.get("reduction", "mean"),
                        label_smoothing=a.get("label_smoothing", 0.0))
                elif op == "mse_loss":
                    out = None if y is None else F.mse_loss(ins[0], ins[1],
                                                            reduction=a.get("reduction", "mean"))
                vals[n["id"]] = out
                if n["id"] == self._twb_loss_id:
                    loss = out
            pred = get(self._twb_outputs[0]) if self._twb_outputs else None
            return pred, loss

        def forward(self, x, y=None):
            return self._run(x, y)

    return TwbNet


def param_count(state_dict):
    return sum(math.prod(v.shape) for v in state_dict.values())


# safetensors (https://huggingface.co/docs/safetensors): an 8-byte little-endian
# header length, a JSON header of name -> {dtype, shape, data_offsets}, then the
# raw little-endian data.  Written by hand when the safetensors module is
# missing (Debian has python3-torch but no python3-safetensors).
_ST_DTYPES = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
              "int64": "I64", "int32": "I32", "uint8": "U8"}


def save_safetensors(state_dict, path, metadata=None):
    """state_dict as safetensors.torch.save_file writes it."""
    import torch

    try:
        from safetensors.torch import save_file
        save_file({k: v.contiguous() for k, v in state_dict.items()}, path, metadata=metadata)
        return
    except ImportError:
        pass
    header, blobs, offset = {}, [], 0
    for name in sorted(state_dict):
        t = state_dict[name].detach().cpu().contiguous()
        dt = _ST_DTYPES[str(t.dtype).replace("torch.", "")]
        # bfloat16 has no NumPy dtype: its bytes go through a 16-bit integer view.
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = dict(metadata)
    import json
    import struct

    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_safetensors(path):
    """name -> torch tensor (F32, F64, I64, I32, U8), and the metadata."""
    import json
    import struct

    import numpy as np
    import torch

    raw = open(path, "rb").read()
    n, = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    np_types = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        a = np.frombuffer(raw, dtype=np_types[e["dtype"]], count=(end - b) // np.dtype(np_types[e["dtype"]]).itemsize,
                          offset=8 + n + b)
        out[name] = torch.from_numpy(a.copy()).reshape(e["shape"])
    return out, meta
