#!/usr/bin/python3
# gen-onnx-node-ops-reduce.py — writes onnx-node-ops-reduce.json beside it:
# ONNX's own backend test cases (Debian's libonnx-testdata, ONNX 1.12,
# data/node, test_data_set_0) of the single-node graphs of the reductions,
# index ops and losses twb imports (onnx/onnx-import-reduce.c): the model
# file and its input and output tensors, each as a serialized ONNX proto in
# base64, read back by test-ops-reduce-more.c through the importer
# (every graph input fixed, fed by name, run eagerly).  Cases of more than
# 5,000 values are left to the conformance runner.
#
# Where ONNX feeds an attribute-like input (a reduction's axes, Trilu's k,
# CumSum's axis, Tile's repeats) from the test data, the case is written
# twice: as it is, and with that input an initializer holding the test
# data's value, as exporters write it: "<case>@const" where twb refuses the
# first form (the output's shape depends on the value, unknown at import),
# "<case>@init" where twb imports both (Trilu's k and CumSum's axis read at
# run time; class weights, scales, indices and updates as constant nodes or,
# for LayerNormalization, as the op's parameters).
#
#   /usr/bin/python3 tests/engine/data/gen-onnx-node-ops-reduce.py   (needs python3-onnx)
import base64, glob, json, os
import onnx
from onnx import numpy_helper as nh

D = '/usr/share/libonnx-testdata/data/node/'
OPS = {'ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2',
       'ReduceLogSum', 'ReduceLogSumExp', 'ReduceSumSquare', 'ArgMax', 'ArgMin', 'CumSum', 'Trilu',
       'Tile', 'GatherElements', 'Range', 'Size', 'Hardmax', 'Einsum', 'GlobalMaxPool', 'CastLike',
       'LayerNormalization', 'NegativeLogLikelihoodLoss', 'SoftmaxCrossEntropyLoss',
       'ScatterElements', 'Scatter', 'GatherND', 'EyeLike', 'ScatterND', 'InstanceNormalization',
       'TopK'}
MAX_VALUES = 5000
# Attribute-like inputs by op: positions.
CONST_INPUTS = {'ReduceSum': [1], 'ReduceMean': [1], 'ReduceMax': [1], 'ReduceMin': [1],
                'ReduceProd': [1], 'ReduceL1': [1], 'ReduceL2': [1], 'ReduceLogSum': [1],
                'ReduceLogSumExp': [1], 'ReduceSumSquare': [1], 'Trilu': [1], 'CumSum': [1],
                'Tile': [1], 'TopK': [1],
                # inputs exporters write as initializers: both forms import
                'NegativeLogLikelihoodLoss': [2], 'SoftmaxCrossEntropyLoss': [2],
                'LayerNormalization': [1, 2], 'InstanceNormalization': [1, 2],
                'GatherElements': [1], 'ScatterElements': [1, 2], 'ScatterND': [1, 2],
                'GatherND': [1]}
# Those twb also takes computed (run-time values, or constant nodes).
RUNTIME_OK = {'Trilu', 'CumSum', 'NegativeLogLikelihoodLoss', 'SoftmaxCrossEntropyLoss',
              'LayerNormalization', 'InstanceNormalization', 'GatherElements', 'ScatterElements',
              'ScatterND', 'GatherND'}


def b64(data):
    return base64.b64encode(data).decode('ascii')


out = []
for case in sorted(os.listdir(D)):
    m = onnx.load(D + case + '/model.onnx')
    if len(m.graph.node) != 1 or m.graph.node[0].op_type not in OPS:
        continue
    files = {k: sorted(glob.glob(D + case + '/test_data_set_0/' + k + '_*.pb'))
             for k in ('input', 'output')}
    tensors = {k: [onnx.load_tensor(f) for f in v] for k, v in files.items()}
    if sum(nh.to_array(t).size for v in tensors.values() for t in v) > MAX_VALUES:
        continue
    with open(D + case + '/model.onnx', 'rb') as f:
        model = f.read()
    inits = {t.name for t in m.graph.initializer}
    in_names = [i.name for i in m.graph.input if i.name not in inits]
    out_names = [o.name for o in m.graph.output]
    for k, names in (('input', in_names), ('output', out_names)):
        for name, t in zip(names, tensors[k]):
            t.name = name

    def entry(name, model_bytes, ins):
        return {'case': name, 'op': m.graph.node[0].op_type, 'model': b64(model_bytes),
                'inputs': [b64(t.SerializeToString()) for t in ins],
                'outputs': [b64(t.SerializeToString()) for t in tensors['output']]}

    out.append(entry(case, model, tensors['input']))
    node = m.graph.node[0]
    fixed = {node.input[i] for i in CONST_INPUTS.get(node.op_type, [])
             if i < len(node.input) and node.input[i] in in_names}
    if fixed:
        c = onnx.ModelProto()
        c.CopyFrom(m)
        keep = [i for i in c.graph.input if i.name not in fixed]
        del c.graph.input[:]
        c.graph.input.extend(keep)
        for t in tensors['input']:
            if t.name in fixed:
                c.graph.initializer.append(t)
        suffix = '@init' if node.op_type in RUNTIME_OK else '@const'
        out.append(entry(case + suffix, c.SerializeToString(),
                         [t for t in tensors['input'] if t.name not in fixed]))

# Folding, which ONNX's cases (graph inputs all) do not reach: Range of
# constants and Size of a fixed input, added to the input ("twb_" cases,
# expected outputs from NumPy).
import numpy as np
from onnx import helper as oh, TensorProto as TP


def synthetic(name, n, nodes, inits, want):
    g = oh.make_graph(nodes, name, [oh.make_tensor_value_info('x', TP.FLOAT, [n])],
                      [oh.make_tensor_value_info('y', TP.FLOAT, [n])], inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid('', 13)])
    x = np.arange(n, dtype=np.float32) * np.float32(0.25) - 1
    xt, yt = nh.from_array(x, 'x'), nh.from_array((x + want).astype(np.float32), 'y')
    out.append({'case': name, 'op': nodes[0].op_type, 'model': b64(m.SerializeToString()),
                'inputs': [b64(xt.SerializeToString())], 'outputs': [b64(yt.SerializeToString())]})


sc = lambda name, v, dt: nh.from_array(np.array(v, dtype=dt), name)
synthetic('twb_range_fold_float', 5,
          [oh.make_node('Range', ['s', 'l', 'd'], ['r']), oh.make_node('Add', ['x', 'r'], ['y'])],
          [sc('s', 0.5, np.float32), sc('l', 3.0, np.float32), sc('d', 0.5, np.float32)],
          np.arange(0.5, 3.0, 0.5, dtype=np.float32))
synthetic('twb_range_fold_int32', 2,
          [oh.make_node('Range', ['s', 'l', 'd'], ['r']), oh.make_node('Cast', ['r'], ['rf'], to=1),
           oh.make_node('Add', ['x', 'rf'], ['y'])],
          [sc('s', 10, np.int32), sc('l', 4, np.int32), sc('d', -3, np.int32)],
          np.arange(10, 4, -3).astype(np.float32))
synthetic('twb_size_fold', 6,
          [oh.make_node('Size', ['x'], ['n']), oh.make_node('Cast', ['n'], ['nf'], to=1),
           oh.make_node('Add', ['x', 'nf'], ['y'])], [], np.float32(6))

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'onnx-node-ops-reduce.json')
with open(path, 'w') as f:
    json.dump({'source': 'libonnx-testdata (ONNX 1.12) data/node, test_data_set_0',
               'cases': out}, f, indent=1)
    f.write('\n')
print(path, len(out), 'cases')
