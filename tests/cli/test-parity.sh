#!/usr/bin/env bash
# test-parity.sh TWB ASSETS — bench/parity-torch in small (TAP): where
# Debian's python3-torch is installed, PyTorch and twb train the MLP and the
# functional example (shared layer) from the same initial weights, 8
# full-batch steps of SGD and of Adam on 128 samples, and every step of twb
# eager and compiled must be as close to a float64 PyTorch run as the band of
# PyTorch float32 runs is (within parity-torch's stated tolerance: 2x that
# band plus 2^-20 relative; see bench/parity-torch for why float64 is the
# judge and why a band).  One TAP line per model, optimizer and mode.
set -u
twb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! $py -c 'import torch' 2>/dev/null; then
  echo "1..0 # SKIP python3-torch is not installed (scripts/setup-deps --bench installs it)"
  exit 0
fi

out=$("$root/bench/parity-torch" --twb "$twb" --models mlp,functional --optimizers sgd,adam \
        --steps 8 --n 128 --orders 3 --json-out "$tmp/rows.json" 2>&1)
rc=$?
$py - "$tmp/rows.json" "$rc" <<'PY'
import json, sys
try:
    rows = json.load(open(sys.argv[1]))
except Exception as e:
    print("1..1\nnot ok 1 - parity-torch wrote its rows (%s)" % e)
    sys.exit(0)
groups = {}
for r in rows:
    for mode in ("twb_eager", "twb_compiled"):
        groups.setdefault((r["model"], r["optimizer"], mode), []).append(r)
print("1..%d" % (len(groups) + 1))
n = 0
for (model, opt, mode), rs in sorted(groups.items()):
    n += 1
    bad = [r["step"] for r in rs if not r[mode]["pass"]]
    worst = max(r[mode]["dparam_rel"] for r in rs)
    band = max(r["torch32"]["dparam_rel"] for r in rs)
    line = "%s %s %s: %d steps, worst relative parameter distance to float64 %.1e (PyTorch float32 band %.1e)" % (
        model, opt, mode.replace("twb_", ""), len(rs), worst, band)
    print(("ok %d - %s" if not bad and len(rs) == 8 else "not ok %d - %s; failing steps %s") % (
        (n, line) if not bad and len(rs) == 8 else (n, line, bad)))
n += 1
print(("ok %d - parity-torch exits 0" if sys.argv[2] == "0" else "not ok %d - parity-torch exits " + sys.argv[2]) % n)
PY
[ "$rc" = 0 ] || sed 's/^/# /' <<<"$out" | tail -20
