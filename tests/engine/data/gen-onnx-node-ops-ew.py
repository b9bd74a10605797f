#!/usr/bin/python3
# gen-onnx-node-ops-ew.py — writes onnx-node-ops-ew.json beside it: ONNX's
# own backend test cases (Debian's libonnx-testdata, ONNX 1.12) of the
# element-wise ops of engine/ops/elementwise-more.c and logic.c (trigonometry,
# elu, selu, celu, softplus, softsign, thresholded_relu, shrink, prelu,
# round, comparisons, logic, isnan, isinf, mod), the n-ary Sum and Mean and
# the integer forms of Add, Sub, Mul, Div, Pow, Min and Max: every case of
# one node whose inputs and output are of a type twb has.  Each case keeps
# the twb op and attributes the registry runs (null for Sum / Mean and
# Pow of mixed types: the importer only) and test_data_set_0's tensors.
# test-ops-ew-more.c runs each through the registry and, where
# libonnx-testdata is installed, its model.onnx through the importer.
#
#   /usr/bin/python3 tests/engine/data/gen-onnx-node-ops-ew.py   (needs python3-onnx)
import glob, json, math, os
import numpy as np
import onnx
from onnx import numpy_helper as nh

D = '/usr/share/libonnx-testdata/data/'
SUITES = ['node', 'pytorch-operator', 'pytorch-converted', 'simple']
UNARY = {o: o.lower() for o in ['Sin', 'Cos', 'Tan', 'Asin', 'Acos', 'Atan', 'Sinh', 'Cosh',
                                 'Asinh', 'Acosh', 'Atanh', 'Round', 'Softplus', 'Softsign',
                                 'Elu', 'Selu', 'Celu', 'Shrink']}
UNARY.update({'ThresholdedRelu': 'thresholded_relu', 'IsNaN': 'isnan', 'IsInf': 'isinf',
              'Not': 'logical_not'})
BINARY = {'Equal': 'equal', 'Greater': 'greater', 'Less': 'less',
          'GreaterOrEqual': 'greater_equal', 'LessOrEqual': 'less_equal',
          'And': 'logical_and', 'Or': 'logical_or', 'Xor': 'logical_xor', 'Mod': 'mod',
          'Add': 'add', 'Sub': 'sub', 'Mul': 'mul', 'Div': 'div', 'Pow': 'pow',
          'Min': 'minimum', 'Max': 'maximum'}
NARY = ['Sum', 'Mean', 'PRelu']
# ONNX's int8 and int16 come into twb as i32 (onnx/onnx-read.h).
DTYPES = {np.float32: 'f32', np.float64: 'f64', np.int32: 'i32', np.int64: 'i64',
          np.uint8: 'u8', np.bool_: 'u8', np.int8: 'i32', np.int16: 'i32'}
# The integer forms are the point of Add ... Max here (their float cases are
# in onnx-node-ops.json or run by the conformance bench).
INT_ONLY = {'Add', 'Sub', 'Mul', 'Div', 'Min', 'Max'}


def tensor(a):
    dt = DTYPES.get(a.dtype.type)
    if dt is None:
        return None
    vals = []
    for v in a.reshape(-1).tolist():
        v = float(v) if not isinstance(v, bool) else float(v)
        vals.append(v if math.isfinite(v) else repr(v))   # 'nan', 'inf', '-inf'
    return {'dtype': dt, 'shape': list(a.shape), 'data': vals}


def twb_op(node, opset, ins):
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    t = node.op_type
    if t in UNARY:
        op = UNARY[t]
        if t == 'IsInf':
            return op, {k: bool(v) for k, v in attrs.items()}
        if t == 'Not':
            return op, {}
        return op, {k: float(v) for k, v in attrs.items()}
    if t in BINARY:
        if t == 'Pow' and ins[0].dtype != ins[1].dtype:
            return None, {}
        return BINARY[t], ({'fmod': int(attrs['fmod'])} if 'fmod' in attrs else {})
    if t == 'PRelu':
        x, s = ins
        if s.size == 1 or opset < 7:
            return 'prelu', {'num_parameters': int(s.size)}
        return 'prelu_broadcast', {}
    return None, {}


cases = []
for suite in SUITES:
    for mdir in sorted(glob.glob(D + suite + '/test_*')):
        m = onnx.load(mdir + '/model.onnx')
        g = m.graph
        if len(g.node) != 1 or len(g.output) != 1:
            continue
        node = g.node[0]
        t = node.op_type
        if t not in UNARY and t not in BINARY and t not in NARY:
            continue
        opset = max((o.version for o in m.opset_import if o.domain in ('', 'ai.onnx')), default=0)
        if any(a.name in ('broadcast', 'axis', 'consumed_inputs') for a in node.attribute):
            continue                      # opset 1-6 broadcasting attributes
        inits = {i.name: nh.to_array(i) for i in g.initializer}
        data = [nh.to_array(onnx.load_tensor(f))
                for f in sorted(glob.glob(mdir + '/test_data_set_0/input_*.pb'))]
        feeds = dict(zip([i.name for i in g.input if i.name not in inits], data))
        feeds.update(inits)
        if any(n not in feeds for n in node.input):
            continue
        ins = [feeds[n] for n in node.input]
        y = nh.to_array(onnx.load_tensor(mdir + '/test_data_set_0/output_0.pb'))
        if t in INT_ONLY and all(a.dtype.kind == 'f' for a in ins):
            continue
        tin = [tensor(a) for a in ins]
        ty = tensor(y)
        if ty is None or any(a is None for a in tin):
            continue
        op, attrs = twb_op(node, opset, ins)
        if t == 'PRelu' and op == 'prelu':
            tin[1]['shape'] = [int(ins[1].size)]
        cases.append({'suite': suite, 'case': os.path.basename(mdir), 'onnx_op': t, 'op': op,
                      'attrs': attrs, 'inputs': tin, 'output': ty})

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'onnx-node-ops-ew.json'), 'w') as f:
    json.dump({'source': 'libonnx-testdata (ONNX 1.12), test_data_set_0 of each case',
               'cases': cases}, f, separators=(',', ':'))
    f.write('\n')
print(len(cases), 'cases')
