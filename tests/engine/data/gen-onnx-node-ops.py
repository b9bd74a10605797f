#!/usr/bin/python3
# gen-onnx-node-ops.py — writes onnx-node-ops.json beside it: ONNX's own
# backend test cases (Debian's libonnx-testdata, ONNX 1.12) for Clip,
# HardSigmoid, HardSwish, Pad, Resize (nearest), Abs, Sign, Floor, Ceil,
# Erf, Pow, Min and Max (two inputs), with the ONNX inputs
# that are attributes in twb (pads, scales, sizes, min, max, value) turned
# into twb attributes.  test-ops-onnx.c runs each case through the registry.
#
#   /usr/bin/python3 tests/engine/data/gen-onnx-node-ops.py   (needs python3-onnx)
import glob, json, os
import onnx
from onnx import numpy_helper as nh

D = '/usr/share/libonnx-testdata/data/node/'
CASES = [
    'test_clip', 'test_clip_splitbounds', 'test_clip_inbounds', 'test_clip_outbounds',
    'test_clip_default_min', 'test_clip_default_max',
    'test_hardsigmoid', 'test_hardsigmoid_default', 'test_hardswish',
    'test_constant_pad', 'test_reflect_pad', 'test_edge_pad',
    'test_resize_downsample_scales_nearest', 'test_resize_downsample_sizes_nearest',
    'test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn',
    'test_resize_upsample_scales_nearest', 'test_resize_upsample_sizes_nearest',
    'test_resize_upsample_sizes_nearest_ceil_half_pixel',
    'test_resize_upsample_sizes_nearest_floor_align_corners',
    'test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric',
    'test_abs', 'test_sign', 'test_floor', 'test_ceil', 'test_erf',
    'test_pow', 'test_pow_bcast_array', 'test_pow_bcast_scalar',
    'test_min_two_inputs', 'test_max_two_inputs', 'test_min_float64', 'test_max_float64',
]
UNARY = {'Abs': 'abs', 'Sign': 'sign', 'Floor': 'floor', 'Ceil': 'ceil', 'Erf': 'erf'}
BINARY = {'Pow': 'pow', 'Min': 'minimum', 'Max': 'maximum'}


def load(case):
    def arrays(kind):
        return [nh.to_array(onnx.load_tensor(f))
                for f in sorted(glob.glob(D + case + '/test_data_set_0/' + kind + '_*.pb'))]
    m = onnx.load(D + case + '/model.onnx')
    node = m.graph.node[-1]
    ins = dict(zip([i.name for i in m.graph.input], arrays('input')))
    for c in m.graph.node[:-1]:       # Constant nodes feeding the op (roi, scales)
        if c.op_type == 'Constant':
            ins[c.output[0]] = nh.to_array(c.attribute[0].t)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    return node, ins, attrs, arrays('output')[0]


out = []
for case in CASES:
    node, ins, attrs, y = load(case)
    x = ins[node.input[0]]
    ta = {}
    x2 = None
    if node.op_type in UNARY:
        op = UNARY[node.op_type]
    elif node.op_type in BINARY:
        op = BINARY[node.op_type]
        x2 = ins[node.input[1]]
    elif node.op_type == 'Clip':
        op = 'clip'
        if len(node.input) > 1 and node.input[1]:
            ta['min'] = float(ins[node.input[1]])
        if len(node.input) > 2 and node.input[2]:
            ta['max'] = float(ins[node.input[2]])
    elif node.op_type == 'HardSigmoid':
        op = 'hard_sigmoid'
        ta = {k: float(v) for k, v in attrs.items()}
    elif node.op_type == 'HardSwish':
        op = 'hard_swish'
    elif node.op_type == 'Pad':
        op = 'pad'
        ta['pads'] = [int(v) for v in ins[node.input[1]]]
        ta['mode'] = attrs.get('mode', 'constant')
        if len(node.input) > 2 and node.input[2]:
            ta['value'] = float(ins[node.input[2]])
    elif node.op_type == 'Resize':
        op = 'resize'
        names = list(node.input) + [''] * 4
        if names[2] and ins[names[2]].size:
            ta['scales'] = [float(v) for v in ins[names[2]][2:]]
        if names[3] and ins[names[3]].size:
            ta['sizes'] = [int(v) for v in ins[names[3]][2:]]
        ct = attrs.get('coordinate_transformation_mode')
        if ct:
            ta['coordinate_transformation_mode'] = ct
        if 'nearest_mode' in attrs:
            ta['nearest_mode'] = attrs['nearest_mode']
    c = {
        'case': case, 'op': op, 'attrs': ta,
        'x_shape': list(x.shape), 'x': [float(v) for v in x.astype('float64').ravel()],
        'y_shape': list(y.shape), 'y': [float(v) for v in y.astype('float64').ravel()],
    }
    if x2 is not None:
        c['x2_shape'] = list(x2.shape)
        c['x2'] = [float(v) for v in x2.astype('float64').ravel()]
    out.append(c)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'onnx-node-ops.json')
with open(path, 'w') as f:
    json.dump({'source': 'libonnx-testdata (ONNX 1.12) data/node, test_data_set_0',
               'cases': out}, f, indent=None, separators=(',', ':'))
    f.write('\n')
print(path, len(out), 'cases')
