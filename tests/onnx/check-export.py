#!/usr/bin/python3
"""check-export.py — checks of files written by `twb export` (for test-export.sh).

  check-export.py check OUT.onnx MODEL.json INFO.json BATCH OPSET
      onnx.checker (full_check), the opset, shape inference's output shapes
      against twb's (INFO.json: `twb info --json`; BATCH a number or N), node
      names against the twb ids, graph inputs, initializer names.
  check-export.py weights OUT.onnx W.safetensors SEED
      random values for the file's parameters (initializers without "/"),
      as a safetensors state_dict (running variances positive).
  check-export.py same-weights OUT.onnx W.safetensors
      the file's parameters are W's, bit for bit.
  check-export.py input OUT.onnx X.npy BATCH SEED
      a random input for the file's one graph input.
  check-export.py run OUT.onnx X.npy Y.npy
      runs the file with the small NumPy interpreter below (the ops twb
      export writes, in inference) and saves its first output.
  check-export.py close A.npy B.npy TOL
      max |A - B| <= TOL * max |B|.

Prints what failed and exits 1; exits 77 when onnx or numpy is missing.
"""
import json
import math
import struct
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper, shape_inference
except ImportError as e:  # pragma: no cover
    print(f"missing: {e}")
    sys.exit(77)


def fail(msg):
    print(msg)
    sys.exit(1)


# ---- check ------------------------------------------------------------------

DTYPES = {"f32": 1, "f64": 11, "i32": 6, "i64": 7, "u8": 2}


def twb_shape(s, batch):
    """'f32[N, 10]' -> (1, ['4', '10'])"""
    dt, rest = s.split("[", 1)
    dims = [d.strip() for d in rest.rstrip("]").split(",") if d.strip()]
    return DTYPES[dt], [batch if d == "N" else d for d in dims]


def needed_nodes(model):
    nodes = {n["id"]: n for n in model["graph"]["nodes"]}
    need = set()
    stack = [o.split(":")[0] for o in model["graph"]["outputs"]]
    while stack:
        i = stack.pop()
        if i in need:
            continue
        need.add(i)
        stack += [r.split(":")[0] for r in nodes[i].get("inputs", [])]
    return nodes, need


def check(path, model_path, info_path, batch, opset):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    got = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if got != [int(opset)]:
        fail(f"{path}: opset {got}, expected {opset}")
    model = json.load(open(model_path))
    info = {n["id"]: n for n in json.load(open(info_path))["nodes"]}
    nodes, need = needed_nodes(model)

    # Output shapes as shape inference finds them, the declared ones removed.
    bare = onnx.ModelProto()
    bare.CopyFrom(m)
    for o in bare.graph.output:
        o.type.tensor_type.ClearField("shape")
    inferred = shape_inference.infer_shapes(bare, check_type=True, strict_mode=True)
    outs = {o.name: o for o in inferred.graph.output}
    for ref in model["graph"]["outputs"]:
        nid = ref.split(":")[0]
        want_dt, want = twb_shape(info[nid]["shape"], batch)
        o = outs.get(ref)
        if o is None:
            fail(f"{path}: no graph output {ref}")
        t = o.type.tensor_type
        dims = [str(d.dim_value) if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
        if t.elem_type != want_dt or dims != want:
            fail(f"{path}: output {ref}: inferred type {t.elem_type} {dims}, twb says {want_dt} {want}")

    # Node names: a twb id, or "ID/what" for the helpers of a twb node.
    names = [n.name for n in m.graph.node]
    if len(set(names)) != len(names):
        fail(f"{path}: node names repeat")
    outputs = {r.split(":")[0] for r in model["graph"]["outputs"]}
    for nm in names:
        base = nm.split("/")[0]
        if base not in need or nodes[base]["op"] == "input":
            fail(f"{path}: node {nm} is no needed twb node's")
    for i in need:
        op = nodes[i]["op"]
        if op == "input":
            continue
        if op == "constant" and i not in outputs:
            continue  # an f32 constant is its initializer "ID.value"
        if op == "dropout" and i not in outputs:
            if i in names:
                fail(f"{path}: dropout {i} exported")
            continue
        if i not in names:
            fail(f"{path}: no node named {i}")
        if nodes[i]["op"] in ("cross_entropy", "mse_loss", "bce_with_logits"):
            fail(f"{path}: loss {i} exported")

    # Graph inputs: the needed data inputs.
    want_in = sorted(i for i in need if nodes[i]["op"] == "input")
    got_in = sorted(v.name for v in m.graph.input)
    if got_in != want_in:
        fail(f"{path}: graph inputs {got_in}, expected {want_in}")

    # Initializers: parameters under "<scope>.<suffix>" (a shared scope once),
    # constants under "ID/what".
    scopes = {nodes[i].get("share", i) for i in need}
    inits = [t.name for t in m.graph.initializer]
    for nm in inits:
        if "/" in nm:
            if nm.split("/")[0] not in need:
                fail(f"{path}: constant {nm} of no needed node")
        elif nm.rsplit(".", 1)[0] not in scopes:
            fail(f"{path}: initializer {nm} is no needed node's parameter")
    for i in need:
        n = nodes[i]
        a = n.get("attrs", {})
        scope = n.get("share", i)
        want = []
        if n["op"] in ("linear", "conv2d"):
            want = [f"{scope}.weight"] + ([f"{scope}.bias"] if a.get("bias", True) else [])
        elif n["op"] == "embedding":
            want = [f"{scope}.weight"]
        elif n["op"] == "batch_norm":
            want = ([f"{scope}.weight", f"{scope}.bias"] if a.get("affine", True) else []) + (
                [f"{scope}.running_mean", f"{scope}.running_var"]
                if a.get("track_running_stats", True) else [])
        for w in want:
            if w not in inits:
                fail(f"{path}: no initializer {w}")
    print(f"{path}: {len(names)} nodes, {len(inits)} initializers: ok")


# ---- weights and inputs -------------------------------------------------------

ST_DTYPES = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("int64"): "I64"}


def save_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.tobytes()
        header[name] = {"dtype": ST_DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    rev = {v: k for k, v in ST_DTYPES.items()}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=rev[e["dtype"]]).reshape(e["shape"])
    return out


def params_of(path):
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer if "/" not in t.name}


def weights(path, out, seed):
    rng = np.random.default_rng(int(seed))
    ws = {}
    for name, a in params_of(path).items():
        if name.endswith("running_var"):
            v = rng.uniform(0.5, 1.5, a.shape)
        else:
            v = rng.normal(0, 0.5, a.shape)
        ws[name] = v.astype(a.dtype)
    save_safetensors(out, ws)


def same_weights(path, wpath):
    got, want = params_of(path), load_safetensors(wpath)
    if sorted(got) != sorted(want):
        fail(f"{path}: parameters {sorted(got)}, the weights file has {sorted(want)}")
    for k in got:
        if got[k].shape != want[k].shape or got[k].tobytes() != want[k].tobytes():
            fail(f"{path}: {k} differs from the weights file's")
    print(f"{path}: {len(got)} parameters equal the weights file's")


def make_input(path, out, batch, seed):
    m = onnx.load(path)
    inits = {t.name for t in m.graph.initializer}
    (vi,) = [v for v in m.graph.input if v.name not in inits]
    t = vi.type.tensor_type
    shape = [int(batch)] + [d.dim_value for d in t.shape.dim[1:]]
    rng = np.random.default_rng(int(seed))
    if t.elem_type == 7:
        # Indices for an embedding: below the smallest table in the file.
        rows = min(i.dims[0] for i in m.graph.initializer if i.name.endswith(".weight"))
        np.save(out, rng.integers(0, rows, shape).astype(np.int64))
    else:
        np.save(out, rng.normal(0, 1, shape).astype(np.float32))


# ---- a small interpreter --------------------------------------------------------


def attrs_of(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def pad_hw(x, pads, value):
    t, l, b, r = pads[0], pads[1], pads[2], pads[3]
    return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=value)


def windows(x, k, s, d):
    """x [N, C, H, W] -> [N, C, OH, OW, KH, KW] (strided views)"""
    n, c, h, w = x.shape
    oh = (h - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.empty((n, c, oh, ow, k[0], k[1]), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            out[..., i, j] = x[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                               j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return out


def conv(x, w, b, a):
    k = a.get("kernel_shape", list(w.shape[2:]))
    s, d = a.get("strides", [1, 1]), a.get("dilations", [1, 1])
    g = a.get("group", 1)
    xw = windows(pad_hw(x, a.get("pads", [0] * 4), 0.0), k, s, d)   # N C OH OW KH KW
    n, c = x.shape[:2]
    o = w.shape[0]
    cg, og = c // g, o // g
    ys = []
    for gi in range(g):
        xs = xw[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * og:(gi + 1) * og]
        ys.append(np.einsum("nchwij,ocij->nohw", xs.astype(np.float64), ws.astype(np.float64)))
    y = np.concatenate(ys, axis=1)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(x.dtype)


def pool(x, a, kind):
    k, s = a["kernel_shape"], a.get("strides", [1, 1])
    pads = a.get("pads", [0] * 4)
    if kind == "max":
        xw = windows(pad_hw(x, pads, -np.inf), k, s, a.get("dilations", [1, 1]))
        return xw.max(axis=(4, 5))
    xw = windows(pad_hw(x, pads, 0.0), k, s, [1, 1])
    if a.get("count_include_pad", 0):
        return (xw.sum(axis=(4, 5)) / (k[0] * k[1])).astype(x.dtype)
    ones = windows(pad_hw(np.ones_like(x), pads, 0.0), k, s, [1, 1])
    return (xw.sum(axis=(4, 5)) / ones.sum(axis=(4, 5))).astype(x.dtype)


def norm_axes(axes, r):
    return tuple(a % r for a in axes) if axes is not None else tuple(range(r))


erf = np.vectorize(math.erf, otypes=[np.float64])


def run_node(op, ins, a):
    x = ins[0] if ins else None
    if op in ("Add", "Sub", "Mul", "Div"):
        f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
        return [f(ins[0], ins[1])]
    unary = {"Neg": np.negative, "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log,
             "Reciprocal": np.reciprocal, "Relu": lambda v: np.maximum(v, 0),
             "Sigmoid": lambda v: 1 / (1 + np.exp(-v)), "Tanh": np.tanh,
             "Identity": lambda v: v, "Erf": lambda v: erf(v).astype(v.dtype)}
    if op in unary:
        return [unary[op](x)]
    if op == "LeakyRelu":
        return [np.where(x > 0, x, np.float32(a.get("alpha", 0.01)) * x)]
    if op == "Gemm":
        w = ins[1].T if a.get("transB") else ins[1]
        y = x.astype(np.float64) @ w.astype(np.float64)
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2]
        return [y.astype(x.dtype)]
    if op == "MatMul":
        return [np.matmul(ins[0].astype(np.float64), ins[1].astype(np.float64)).astype(x.dtype)]
    if op == "Conv":
        return [conv(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op == "MaxPool":
        return [pool(x, a, "max")]
    if op == "AveragePool":
        return [pool(x, a, "avg")]
    if op == "GlobalAveragePool":
        return [x.mean(axis=(2, 3), keepdims=True)]
    if op == "BatchNormalization":
        sh = (1, -1) + (1,) * (x.ndim - 2)
        sc, b, mu, var = (t.reshape(sh) for t in ins[1:5])
        return [((x - mu) / np.sqrt(var + np.float32(a.get("epsilon", 1e-5))) * sc + b).astype(x.dtype)]
    if op == "LayerNormalization":
        ax = tuple(range(a.get("axis", -1) % x.ndim, x.ndim))
        mu = x.mean(axis=ax, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=ax, keepdims=True)
        y = (x - mu) / np.sqrt(var + np.float32(a.get("epsilon", 1e-5))) * ins[1]
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2]
        return [y.astype(x.dtype)]
    if op in ("Softmax", "LogSoftmax"):
        ax = a.get("axis", -1)
        e = np.exp(x - x.max(axis=ax, keepdims=True))
        sm = e / e.sum(axis=ax, keepdims=True)
        return [sm if op == "Softmax" else np.log(sm)]
    if op in ("ReduceMean", "ReduceMax", "ReduceSum"):
        axes = a.get("axes")
        if op == "ReduceSum" and len(ins) > 1 and ins[1] is not None:
            axes = list(ins[1])
        ax = norm_axes(axes, x.ndim)
        f = {"ReduceMean": np.mean, "ReduceMax": np.max, "ReduceSum": np.sum}[op]
        return [f(x, axis=ax, keepdims=bool(a.get("keepdims", 1))).astype(x.dtype)]
    if op == "ArgMax":
        y = np.argmax(x, axis=a.get("axis", 0))
        return [np.expand_dims(y, a.get("axis", 0)) if a.get("keepdims", 1) else y]
    if op == "Cast":
        return [x.astype({1: np.float32, 11: np.float64, 6: np.int32, 7: np.int64, 2: np.uint8,
                          9: np.bool_}[a["to"]])]
    if op == "Flatten":
        ax = a.get("axis", 1)
        return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
    if op == "Reshape":
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(ins[1])]
        return [x.reshape(shape)]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Concat":
        return [np.concatenate(ins, axis=a["axis"])]
    if op == "Split":
        cuts = np.cumsum(ins[1])[:-1]
        return np.split(x, cuts, axis=a.get("axis", 0))
    if op == "Slice":
        st, en, ax, sp = (int(v[0]) for v in ins[1:5])
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(st, en, sp)
        return [x[tuple(idx)]]
    if op == "Gather":
        return [np.take(x, ins[1], axis=a.get("axis", 0))]
    return run_node_more(op, ins, a)


def nearest_index(out_len, in_len, scale, ctm, nm):
    o = np.arange(out_len, dtype=np.float64)
    if ctm == "asymmetric":
        c = o / scale
    elif ctm == "align_corners":
        c = o * (in_len - 1) / max(out_len - 1, 1)
    elif ctm == "pytorch_half_pixel":
        c = (o + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(o)
    else:  # half_pixel
        c = (o + 0.5) / scale - 0.5
    r = {"floor": np.floor, "ceil": np.ceil,
         "round_prefer_ceil": lambda v: np.floor(v + 0.5),
         "round_prefer_floor": lambda v: np.ceil(v - 0.5)}[nm](c)
    return np.clip(r, 0, in_len - 1).astype(np.int64)


def run_node_more(op, ins, a):
    """The ops onnx-export-ops.c writes (ONNX's semantics, NumPy's terms)."""
    x = ins[0] if ins else None
    unary = {"Abs": np.abs, "Ceil": np.ceil, "Floor": np.floor, "Sign": np.sign,
             "Not": np.logical_not, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan,
             "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh,
             "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh,
             "Round": np.round, "IsNaN": np.isnan,
             "Softplus": lambda v: np.log1p(np.exp(v.astype(np.float64))).astype(v.dtype),
             "Softsign": lambda v: v / (1 + np.abs(v))}
    if op in unary:
        return [unary[op](x)]
    binary = {"Pow": np.power, "Max": np.maximum, "Min": np.minimum, "Greater": np.greater,
              "Less": np.less, "Equal": np.equal, "GreaterOrEqual": np.greater_equal,
              "LessOrEqual": np.less_equal, "And": np.logical_and, "Or": np.logical_or,
              "Xor": np.logical_xor}
    if op in binary:
        return [binary[op](ins[0], ins[1])]
    f32 = lambda k, d: np.float32(a.get(k, d))
    em1 = lambda v: np.expm1(v.astype(np.float64))
    if op == "Elu":
        return [np.where(x > 0, x, f32("alpha", 1.0) * em1(x)).astype(x.dtype)]
    if op == "Selu":
        al, ga = f32("alpha", 1.67326319217681884765625), f32("gamma", 1.05070102214813232421875)
        return [np.where(x > 0, ga * x, ga * al * em1(x)).astype(x.dtype)]
    if op == "Celu":
        al = f32("alpha", 1.0)
        return [np.where(x > 0, x, al * em1(x / al)).astype(x.dtype)]
    if op == "ThresholdedRelu":
        return [np.where(x > f32("alpha", 1.0), x, 0).astype(x.dtype)]
    if op == "Shrink":
        b, lam = f32("bias", 0.0), f32("lambd", 0.5)
        return [np.where(x < -lam, x + b, np.where(x > lam, x - b, 0)).astype(x.dtype)]
    if op == "PRelu":
        return [np.where(x > 0, x, x * ins[1]).astype(x.dtype)]
    if op == "IsInf":
        pos, neg = a.get("detect_positive", 1), a.get("detect_negative", 1)
        return [(np.isposinf(x) & bool(pos)) | (np.isneginf(x) & bool(neg))]
    if op == "Mod":
        return [np.fmod(ins[0], ins[1]) if a.get("fmod", 0) else np.mod(ins[0], ins[1])]
    if op == "Clip":
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else None
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else None
        y = x
        if lo is not None:
            y = np.maximum(y, lo)
        if hi is not None:
            y = np.minimum(y, hi)
        return [y.astype(x.dtype)]
    if op == "HardSigmoid":
        al, be = np.float32(a.get("alpha", 0.2)), np.float32(a.get("beta", 0.5))
        return [np.clip(al * x + be, 0, 1).astype(x.dtype)]
    if op == "HardSwish":
        return [(x * np.clip(x / np.float32(6) + np.float32(0.5), 0, 1)).astype(x.dtype)]
    if op == "Hardmax":
        ax = a.get("axis", -1) % x.ndim
        idx = np.expand_dims(np.argmax(x, axis=ax), ax)
        y = np.zeros_like(x)
        np.put_along_axis(y, idx, 1, axis=ax)
        return [y]
    if op == "Where":
        return [np.where(ins[0], ins[1], ins[2])]
    if op == "Cast":
        to = {1: np.float32, 11: np.float64, 6: np.int32, 7: np.int64, 2: np.uint8, 9: np.bool_}
        return [x.astype(to[a["to"]])]
    if op == "Squeeze":
        return [np.squeeze(x, axis=tuple(int(v) for v in ins[1]))]
    if op == "Unsqueeze":
        y = x
        for ax in sorted(int(v) % (x.ndim + len(ins[1])) for v in ins[1]):
            y = np.expand_dims(y, ax)
        return [y]
    if op == "Expand":
        return [x * np.ones(tuple(int(v) for v in ins[1]), x.dtype)]
    if op in ("ReduceMin", "ReduceProd", "ReduceLogSumExp"):
        ax = norm_axes(a.get("axes"), x.ndim)
        keep = bool(a.get("keepdims", 1))
        if op == "ReduceLogSumExp":
            x64 = x.astype(np.float64)
            m = x64.max(axis=ax, keepdims=True)
            y = np.log(np.exp(x64 - m).sum(axis=ax, keepdims=True)) + m
            return [(y if keep else np.squeeze(y, axis=ax)).astype(x.dtype)]
        f = np.min if op == "ReduceMin" else np.prod
        return [f(x, axis=ax, keepdims=keep).astype(x.dtype)]
    if op == "ArgMin":
        ax = a.get("axis", 0) % x.ndim
        if a.get("select_last_index", 0):
            y = x.shape[ax] - 1 - np.argmin(np.flip(x, ax), axis=ax)
        else:
            y = np.argmin(x, axis=ax)
        return [np.expand_dims(y, ax) if a.get("keepdims", 1) else y]
    if op == "CumSum":
        ax = int(np.asarray(ins[1]).reshape(-1)[0]) % x.ndim
        y = np.flip(x, ax) if a.get("reverse", 0) else x
        c = np.cumsum(y, axis=ax, dtype=x.dtype)
        if a.get("exclusive", 0):
            c = c - y
        return [np.flip(c, ax) if a.get("reverse", 0) else c]
    if op == "Trilu":
        k = int(ins[1]) if len(ins) > 1 and ins[1] is not None else 0
        return [np.triu(x, k) if a.get("upper", 1) else np.tril(x, k)]
    if op == "TopK":
        ax = a.get("axis", -1) % x.ndim
        k = int(ins[1][0])
        key = -x if a.get("largest", 1) else x
        idx = np.take(np.argsort(key, axis=ax, kind="stable"), np.arange(k), axis=ax)
        return [np.take_along_axis(x, idx, axis=ax), idx.astype(np.int64)]
    if op == "GatherElements":
        return [np.take_along_axis(x, ins[1].astype(np.int64), axis=a.get("axis", 0))]
    if op == "ScatterElements":
        ax = a.get("axis", 0) % x.ndim
        y = x.copy()
        red = a.get("reduction", b"none")
        red = red.decode() if isinstance(red, bytes) else red
        for pos in np.ndindex(ins[1].shape):
            t = list(pos)
            t[ax] = int(ins[1][pos])
            t = tuple(t)
            y[t] = ins[2][pos] if red == "none" else (y[t] + ins[2][pos] if red == "add"
                                                       else y[t] * ins[2][pos])
        return [y]
    if op == "GatherND":
        b = a.get("batch_dims", 0)
        idx = ins[1].astype(np.int64)
        q = idx.shape[-1]
        out = np.empty(idx.shape[:-1] + x.shape[b + q:], x.dtype)
        for pos in np.ndindex(idx.shape[:-1]):
            out[pos] = x[pos[:b] + tuple(idx[pos])]
        return [out]
    if op == "ScatterND":
        y = x.copy()
        idx = ins[1].astype(np.int64)
        red = a.get("reduction", b"none")
        red = red.decode() if isinstance(red, bytes) else red
        for pos in np.ndindex(idx.shape[:-1]):
            t = tuple(idx[pos])
            y[t] = ins[2][pos] if red == "none" else (y[t] + ins[2][pos] if red == "add"
                                                       else y[t] * ins[2][pos])
        return [y]
    if op == "EyeLike":
        to = {1: np.float32, 11: np.float64, 6: np.int32, 7: np.int64, 2: np.uint8}
        return [np.eye(x.shape[0], x.shape[1], a.get("k", 0), to[a.get("dtype", 1)])]
    if op == "NegativeLogLikelihoodLoss":
        t = ins[1].astype(np.int64)
        w = ins[2] if len(ins) > 2 and ins[2] is not None else np.ones(x.shape[1], x.dtype)
        ign = a.get("ignore_index")
        keep = np.ones(t.shape, bool) if ign is None else t != ign
        ts = np.where(keep, t, 0)
        picked = np.take_along_axis(x, np.expand_dims(ts, 1), axis=1)[:, 0]
        wt = np.where(keep, w[ts], 0).astype(x.dtype)
        loss = -picked * wt
        red = a.get("reduction", b"mean")
        red = red.decode() if isinstance(red, bytes) else red
        if red == "none":
            return [loss.astype(x.dtype)]
        if red == "sum":
            return [np.asarray(loss.sum(), x.dtype)]
        return [np.asarray(loss.sum() / wt.sum(), x.dtype)]
    if op == "Pad":
        p = [int(v) for v in ins[1]]
        r = x.ndim
        width = [(p[d], p[r + d]) for d in range(r)]
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode == "constant":
            v = ins[2] if len(ins) > 2 and ins[2] is not None else 0
            return [np.pad(x, width, constant_values=v)]
        return [np.pad(x, width, mode={"reflect": "reflect", "edge": "edge"}[mode])]
    if op == "Resize":
        dec = lambda v: v.decode() if isinstance(v, bytes) else v
        ctm = dec(a.get("coordinate_transformation_mode", "half_pixel"))
        nm = dec(a.get("nearest_mode", "round_prefer_floor"))
        sc = ins[2] if len(ins) > 2 and ins[2] is not None and ins[2].size else None
        if sc is None:
            sizes = [int(v) for v in ins[3]]
            sc = [sizes[d] / x.shape[d] for d in range(x.ndim)]
        else:
            sizes = [int(np.floor(x.shape[d] * float(sc[d]))) for d in range(x.ndim)]
        y = x
        for d in range(x.ndim):
            if sizes[d] != x.shape[d] or float(sc[d]) != 1.0:
                y = np.take(y, nearest_index(sizes[d], x.shape[d], float(sc[d]), ctm, nm), axis=d)
        return [y]
    raise NotImplementedError(op)


def run(path, xpath, ypath):
    np.seterr(all="ignore")  # log of a negative is NaN, as in twb
    m = onnx.load(path)
    env = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    (vi,) = [v for v in m.graph.input if v.name not in env]
    env[vi.name] = np.load(xpath)
    env[""] = None
    for node in m.graph.node:
        outs = run_node(node.op_type, [env[i] for i in node.input], attrs_of(node))
        for name, v in zip(node.output, outs):
            env[name] = v
    np.save(ypath, np.asarray(env[m.graph.output[0].name]))


def close(apath, bpath, tol):
    a, b = np.load(apath).astype(np.float64), np.load(bpath).astype(np.float64)
    if a.shape != b.shape:
        fail(f"shapes {a.shape} and {b.shape}")
    err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
    print(f"max |a - b| / max |b| = {err:.3g}")
    if not err <= float(tol):
        fail(f"error {err:.3g} over {tol}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"check": check, "weights": weights, "same-weights": same_weights, "input": make_input,
     "run": run, "close": close}[cmd](*args)
