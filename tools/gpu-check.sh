#!/usr/bin/env bash
# tools/gpu-check.sh — build and run every GPU test and benchmark, then print a summary.
#
# Configures build-gpu with -Dcuda=enabled --buildtype=debugoptimized (debug
# builds add nvcc -G, which disables device optimisation), compiles it, runs
# `meson test --suite cuda` and any meson benchmark in suite cuda, and prints
# a "name | result" table last.  Without nvcc it says so, prints
# "cuda | not built" and exits 0.  Exit status: 1 if configuring, compiling
# or a test failed, else 0.  Tests on a machine with no GPU skip themselves.
set -uo pipefail

cd "$(dirname "$(readlink -f "$0")")/.." || exit 1

builddir=build-gpu
rows=()
status=0

row () { rows+=("$1|$2"); }

summary ()
{
  local r name w=4
  for r in "${rows[@]}"; do
    name=${r%%|*}
    [ ${#name} -gt "$w" ] && w=${#name}
  done
  echo
  echo "gpu-check summary"
  printf '%-*s | %s\n' "$w" name result
  printf '%s-+-%s\n' "$(printf '%*s' "$w" '' | tr ' ' -)" "------"
  for r in "${rows[@]}"; do
    printf '%-*s | %s\n' "$w" "${r%%|*}" "${r#*|}"
  done
}

# The toolkit lives in /usr/local/cuda on these machines (docs: TOOLCHAIN.md).
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "gpu-check: nvcc not found (no CUDA toolkit in PATH or /usr/local/cuda): nothing to build"
  row cuda "not built"
  summary
  exit 0
fi
row nvcc "$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

if command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi -L 2>/dev/null) && [ -n "$gpus" ]; then
  row gpu "$(echo "$gpus" | head -n 1 | sed 's/ (UUID.*//')"
else
  row gpu "none visible (GPU tests will skip)"
fi

scripts/setup-deps || row setup-deps "FAIL (going on)"

if [ ! -f "$builddir/meson-private/coredata.dat" ]; then
  if ! meson setup "$builddir" -Dcuda=enabled --buildtype=debugoptimized; then
    row configure "FAIL (see $builddir/meson-logs/meson-log.txt)"
    summary
    exit 1
  fi
fi
row configure ok

# Does the configured project actually compile CUDA code?
if meson introspect "$builddir" --compilers 2>/dev/null | grep -q '"cuda"'; then
  row "cuda compiler" "in use"
else
  row "cuda compiler" "not used: meson.build does not add CUDA yet"
fi

if meson compile -C "$builddir"; then
  row compile ok
else
  row compile FAIL
  summary
  exit 1
fi

# Names of the tests (or benchmarks) in suite "cuda", one a line.
cuda_names ()
{
  meson introspect "$builddir" "$1" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if any(s == "cuda" or s.endswith(":cuda") for s in t.get("suite", [])):
        print(t["name"])'
}

# One row per test from meson testlog.json (one JSON object a line).
test_rows ()
{
  local log="$builddir/meson-logs/$1"
  [ -f "$log" ] || return 0
  while IFS='|' read -r name result; do
    row "$name" "$result"
  done < <(/usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    print(t["name"] + "|" + t["result"])' "$log")
}

if [ -n "$(cuda_names --tests)" ]; then
  rm -f "$builddir/meson-logs/testlog-cuda.json"
  if meson test -C "$builddir" --suite cuda --print-errorlogs --logbase testlog-cuda; then
    row "suite cuda" ok
  else
    row "suite cuda" FAIL
    status=1
  fi
  test_rows testlog-cuda.json
else
  row "suite cuda" "no tests defined yet"
fi

if [ -n "$(cuda_names --benchmarks)" ]; then
  if meson test -C "$builddir" --benchmark --suite cuda --logbase benchlog-cuda; then
    row "benchmarks cuda" ok
  else
    row "benchmarks cuda" FAIL
    status=1
  fi
  test_rows benchlog-cuda.json
else
  row "benchmarks cuda" "none defined yet"
fi

summary
exit "$status"
