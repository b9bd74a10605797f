#!/usr/bin/env bash
# test-open-args.sh TWB ASSETS — what `twb WORD…` means (TAP), without a
# display: a command's name runs the command; a file of any kind the window
# opens goes to the window (here: "cannot open a display", never "unknown
# command"), decided by its content; a file it cannot open is named, exit 1,
# before any display is needed; a mistyped command or option exits 2; "--"
# and ./NAME open a file named like a command.
set -u
twb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
assets=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DISPLAY WAYLAND_DISPLAY
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }
window='cannot open a display'

here=$(cd "$(dirname "$0")/.." && pwd)
cp "$here/onnx/data/mlp.onnx" "$tmp/mlp.onnx"
cp "$here/onnx/data/mlp.onnx" "$tmp/onnx-named.json"
cp "$assets/models/mlp.json" "$tmp/train"
gzip -c "$here/profiler/data/torch-trace.json" >"$tmp/trace.json.gz"
cp "$tmp/trace.json.gz" "$tmp/trace-named.onnx"
printf 'hello\n' >"$tmp/notes.json"
: >"$tmp/empty.json"
head -c 12 "$tmp/trace.json.gz" >"$tmp/cut.json.gz"

echo "1..17"
for f in mlp.onnx onnx-named.json trace.json.gz trace-named.onnx; do
  out=$("$twb" "$tmp/$f" 2>&1); st=$?
  check "twb $f: for the window (no display here: exit 1 saying so)" \
    '[ $st = 1 ] && grep -q "$window" <<<"$out" && ! grep -q "unknown command" <<<"$out"' "$out"
done
out=$("$twb" "$tmp/notes.json" 2>&1); st=$?
check "a text file: exit 1, named, before the display" \
  '[ $st = 1 ] && grep -q "notes.json: not a file Tensor Workbench opens" <<<"$out" && ! grep -q "$window" <<<"$out"' "$out"
out=$("$twb" "$tmp/empty.json" 2>&1); st=$?
check "an empty file: exit 1, named" '[ $st = 1 ] && grep -q "empty.json is empty" <<<"$out"' "$out"
out=$("$twb" "$tmp/cut.json.gz" 2>&1); st=$?
check "a truncated gzip file: exit 1, named" '[ $st = 1 ] && grep -q "cut.json.gz: the gzip data stops early" <<<"$out"' "$out"
out=$("$twb" "$tmp/missing.onnx" 2>&1); st=$?
check "a missing file: exit 1, named" '[ $st = 1 ] && grep -q "missing.onnx: No such file" <<<"$out"' "$out"
out=$("$twb" "$tmp/mlp.onnx" "$tmp/notes.json" "$tmp" 2>&1); st=$?
check "several files, two bad: each bad one named, nothing opened" \
  '[ $st = 1 ] && grep -q "notes.json" <<<"$out" && grep -q "is a folder" <<<"$out" && ! grep -q "$window" <<<"$out"' "$out"
out=$("$twb" "$here/cli/data/tiny-bn.safetensors" 2>&1); st=$?
check "weights: exit 1, and where they go" '[ $st = 1 ] && grep -q "Load Weights" <<<"$out"' "$out"
out=$(cd "$tmp" && "$twb" train 2>&1); st=$?
check "twb train (a file named train here): the command, its usage" \
  '[ $st = 2 ] && grep -q "usage: twb train" <<<"$out"' "$out"
out=$(cd "$tmp" && "$twb" -- train 2>&1); st=$?
check "twb -- train: the file" '[ $st = 1 ] && grep -q "$window" <<<"$out"' "$out"
out=$(cd "$tmp" && "$twb" ./train 2>&1); st=$?
check "twb ./train: the file" '[ $st = 1 ] && grep -q "$window" <<<"$out"' "$out"
out=$("$twb" trian 2>&1); st=$?
check "a mistyped command: exit 2, named" '[ $st = 2 ] && grep -q "unknown command .trian." <<<"$out"' "$out"
out=$("$twb" --bogus 2>&1); st=$?
check "an unknown option: exit 2, named" '[ $st = 2 ] && grep -q "unknown option .--bogus." <<<"$out"' "$out"
out=$("$twb" --help 2>/dev/null); st=$?
lists_all () {
  for c in train eval info compile predict devices profile trace-info onnx-info import export; do
    grep -q "^  $c " <<<"$out" || return 1
  done
}
check "--help: exit 0, on standard output, every command listed" '[ $st = 0 ] && lists_all' "$out"
out=$("$twb" --version 2>&1); st=$?
check "--version" '[ $st = 0 ] && grep -qE "^twb [0-9]+\.[0-9]+" <<<"$out"' "$out"
exit $fail
