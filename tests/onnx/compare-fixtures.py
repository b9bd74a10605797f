#!/usr/bin/python3
"""Compares a regenerated ONNX fixture with the checked-in one, by value.

    compare-fixtures.py tensor GOT.pb WANT.pb RTOL
    compare-fixtures.py model GOT.onnx WANT.onnx RTOL

tensor: same dtype and shape, and every element within RTOL of the largest
|value| of WANT (NaN nowhere).  model: the same graph once the initializers'
values are set aside (nodes, attributes, inputs, outputs, opsets, the
initializers' names, types and shapes), and each initializer within RTOL of
its largest |value|.  Prints one line saying what was compared and the worst
error seen, relative to the largest value; exits 1 when something differs.

Floating-point values made by torch on one CPU are never compared byte for
byte with those made on another: kernels sum in other orders and vector
libm calls round differently (see test-onnx-fixtures.sh for the tolerances).
"""
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh


def close(got, want, rtol):
    """(ok, worst relative error, message)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, float("inf"), "%s%s vs %s%s" % (got.dtype, list(got.shape), want.dtype,
                                                      list(want.shape))
    if got.size == 0:
        return True, 0.0, "empty"
    if not np.issubdtype(want.dtype, np.floating):
        same = bool(np.array_equal(got, want))   # integers: exact everywhere
        return same, 0.0 if same else float("inf"), "integers"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not (np.isfinite(g).all() and np.isfinite(w).all()):
        return False, float("inf"), "not finite"
    scale = max(float(np.abs(w).max()), 1e-30)
    worst = float(np.abs(g - w).max()) / scale
    return worst <= rtol, worst, "%d values" % w.size


def main():
    kind, got_path, want_path, rtol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    if kind == "tensor":
        got = nh.to_array(onnx.load_tensor(got_path))
        want = nh.to_array(onnx.load_tensor(want_path))
        ok, worst, what = close(got, want, rtol)
        print("%s: %s, worst error %.3g of the largest value (tolerance %g)" %
              (want_path.rsplit("/", 1)[-1], what, worst, rtol))
        return 0 if ok else 1
    got, want = onnx.load(got_path), onnx.load(want_path)
    bad = []
    worst = 0.0
    gi = {t.name: t for t in got.graph.initializer}
    wi = {t.name: t for t in want.graph.initializer}
    if sorted(gi) != sorted(wi):
        bad.append("initializers %s vs %s" % (sorted(gi), sorted(wi)))
    for name in sorted(set(gi) & set(wi)):
        ok, err, what = close(nh.to_array(gi[name]), nh.to_array(wi[name]), rtol)
        worst = max(worst, err)
        if not ok:
            bad.append("initializer %s: %s, error %.3g" % (name, what, err))
    # The rest of the file, with the initializers' values left out.
    for m in (got, want):
        for t in m.graph.initializer:
            t.ClearField("raw_data")
            t.ClearField("float_data")
    if got.graph.SerializeToString() != want.graph.SerializeToString():
        bad.append("the graphs differ (nodes, attributes, inputs or outputs)")
    if [(o.domain, o.version) for o in got.opset_import] != \
       [(o.domain, o.version) for o in want.opset_import]:
        bad.append("opsets differ")
    print("%s: %d initializers, worst error %.3g of the largest value (tolerance %g)%s" %
          (want_path.rsplit("/", 1)[-1], len(wi), worst, rtol,
           "; " + "; ".join(bad) if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
