#!/usr/bin/env bash
# test-conformance.sh RUNNER LIST — the ONNX conformance runner
# (bench/onnx-conformance) over the checked-in list of ONNX backend cases twb
# passes, eager and compiled, with --expect-pass; then a case whose expected
# output was swapped for another tensor must fail.  TAP; skipped without
# /usr/share/libonnx-testdata.
set -u
runner=$1
list=$2
data=/usr/share/libonnx-testdata/data
if [ ! -d "$data/node" ]; then
  echo "1..0 # SKIP no $data (Debian's libonnx-testdata)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2" | tail -40; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

echo "1..7"

want=$(grep -cv '^\(#\|$\)' "$list")
out=$("$runner" --compiled --list "$list" --expect-pass --json "$tmp/r.json" 2>&1); st=$?
check "the listed cases pass eager and compiled (exit 0)" '[ $st = 0 ]' "$out"
check "all $want of them ran and passed" \
  'grep -q "^cases: $want; run $want, passed $want, failed 0, skipped 0" <<<"$out"' "$out"
check "the table has a row per op (Conv: run, passed, failed)" \
  'grep -Eq "^Conv +[1-9][0-9]* +[1-9][0-9]* +0$" <<<"$out"' "$out"
check "--json writes every case and the totals" \
  '[ "$(grep -c "\"status\" : \"pass\"" "$tmp/r.json")" = "$want" ] && grep -q "\"passed\" : $want" "$tmp/r.json"' \
  "$(head -c 2000 "$tmp/r.json")"

# A wrong expected output: test_abs's input as its output (negative values differ).
mkdir -p "$tmp/data/node"
cp -r "$data/node/test_abs" "$tmp/data/node/"
cp "$tmp/data/node/test_abs/test_data_set_0/input_0.pb" "$tmp/data/node/test_abs/test_data_set_0/output_0.pb"
out=$("$runner" --data "$tmp/data" --verbose --expect-pass 2>&1); st=$?
check "a wrong output fails the case, and --expect-pass exits 1" \
  '[ $st = 1 ] && grep -q "^FAIL node/test_abs: eager output 0: .* elements differ" <<<"$out" \
   && grep -q "run 1, passed 0, failed 1" <<<"$out"' "$out"
out=$("$runner" --data "$tmp/data" 2>&1); st=$?
check "without --expect-pass it exits 0 all the same" '[ $st = 0 ]' "$out"
printf 'test_abs\nnode/test_no_such_case\n' > "$tmp/list.txt"
out=$("$runner" --data "$data" --list "$tmp/list.txt" --expect-pass 2>&1); st=$?
check "a listed case that is not there fails --expect-pass, named" \
  '[ $st = 1 ] && grep -q "^listed but not found: node/test_no_such_case$" <<<"$out"' "$out"
exit $fail
