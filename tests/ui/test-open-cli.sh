#!/usr/bin/env bash
# test-open-cli.sh TWB ASSETS ONNX_DATA PROFILER_DATA [SHOT_DIR] — `twb FILE`
# as a person types it (TAP): an ONNX model, a gzip trace from twb profile
# and a PyTorch trace under a name that says nothing each open in the
# window, which shows them (its title names the imported model or the
# trace), whatever the file's extension; nothing logged as a warning or a
# critical.  Each in its own Xvfb and session bus; skips without Xvfb or
# xdotool.  Pictures of the same files through `twb --screenshot FILE` go
# to SHOT_DIR for a person to look at.
set -u
twb=$1
assets=$2
onnx_data=$3
prof_data=$4
shots=${5:-}
for t in xdotool Xvfb; do
  if ! command -v "$t" >/dev/null 2>&1; then
    echo "1..0 # SKIP $t not installed"
    exit 0
  fi
done
tmp=$(mktemp -d)
app=""; xv=""
cleanup () { kill $app $xv 2>/dev/null; wait 2>/dev/null; app=""; xv=""; }
trap 'cleanup; rm -rf "$tmp"' EXIT
export GSK_RENDERER=cairo GTK_A11Y=none GDK_BACKEND=x11 TWB_NO_RECOVERY=1 NO_AT_BRIDGE=1 \
  TWB_COLOR_SCHEME=light XDG_STATE_HOME="$tmp/state" XDG_DATA_HOME="$tmp/data" \
  XDG_CONFIG_HOME="$tmp/config"

# The files: an ONNX model named .json (the old rule sent it to the model
# loader), a trace twb wrote (gzip), PyTorch's trace named .data.
cp "$onnx_data/convnet.onnx" "$tmp/convnet.json"
cp "$prof_data/torch-real-trace.json" "$tmp/pytorch-run.data"
# (A failed profile shows as the trace case failing, with its log.)
"$twb" profile "$assets/models/spirals.json" --steps 3 --warmup 1 \
  --trace "$tmp/mlp-run.json.gz" >"$tmp/profile.log" 2>&1 || sed 's/^/# /' "$tmp/profile.log"

start_xvfb () {   # start_xvfb WxH: a new X server, DISPLAY set to it
  rm -f "$tmp/fd"
  exec 3<> "$tmp/fd"
  Xvfb -displayfd 3 -screen 0 "$1x24" -nolisten tcp >/dev/null 2>&1 &
  xv=$!
  for _ in $(seq 50); do [ -s "$tmp/fd" ] && break; sleep 0.1; done
  export DISPLAY=":$(head -1 "$tmp/fd")"
}

# session FILE TITLE_REGEX: start Xvfb and `twb FILE`, wait for a visible
# window whose title matches; 0 when it came.  The log goes to $tmp/app.log.
session () {
  start_xvfb 1280x900
  local bus=()
  command -v dbus-run-session >/dev/null 2>&1 && bus=(dbus-run-session --)
  "${bus[@]}" "$twb" "$1" >"$tmp/app.log" 2>&1 &
  app=$!
  local found=1
  for _ in $(seq 300); do
    if xdotool search --onlyvisible --name "$2" >/dev/null 2>&1; then found=0; break; fi
    kill -0 $app 2>/dev/null || break
    sleep 0.1
  done
  title=$(xdotool search --onlyvisible --name "Tensor Workbench" getwindowname 2>/dev/null | head -1)
  sleep 0.5
  cleanup
  return $found
}

n=0
fail=0
check_open () {   # check_open FILE REGEX WHAT
  n=$((n + 1))
  if session "$1" "$2" && ! grep -qE "WARNING|CRITICAL" "$tmp/app.log"; then
    echo "ok $n - $3 (the window is titled \"$title\")"
  else
    fail=1
    echo "not ok $n - $3 (title \"${title:-no window}\")"
    sed 's/^/# /' "$tmp/app.log"
  fi
}

echo "1..5"
check_open "$tmp/convnet.json" "convnet" "twb convnet.json (ONNX bytes): imported into the window"
check_open "$tmp/mlp-run.json.gz" "^mlp-run.json.gz" "twb mlp-run.json.gz: the trace in the window"
check_open "$tmp/pytorch-run.data" "^pytorch-run.data" "twb pytorch-run.data (PyTorch's trace): in the window"

# The same files through the screenshot path, for a person to look at:
# the imported graph, and the trace on the Profiler tab.
n=$((n + 1))
shot_ok=1
shot_dir=${shots:-$tmp}
for f in convnet.json mlp-run.json.gz; do
  start_xvfb 1400x1000
  "$twb" --screenshot "$shot_dir/open-$f.png" --size 1200x800 "$tmp/$f" >"$tmp/shot.log" 2>&1 \
    || { shot_ok=0; sed 's/^/# /' "$tmp/shot.log"; }
  grep -qE "WARNING|CRITICAL" "$tmp/shot.log" && { shot_ok=0; sed 's/^/# /' "$tmp/shot.log"; }
  cleanup
done
if [ $shot_ok = 1 ]; then
  echo "ok $n - twb --screenshot FILE shows the same files (open-*.png in ${shots:-a temporary folder})"
else
  fail=1
  echo "not ok $n - twb --screenshot FILE shows the same files"
fi

# A file the window cannot open: named on the terminal, exit 1, no window.
n=$((n + 1))
printf 'not a model\n' >"$tmp/notes.onnx"
out=$("$twb" "$tmp/notes.onnx" 2>&1); st=$?
if [ $st = 1 ] && grep -q "notes.onnx: not a file Tensor Workbench opens" <<<"$out"; then
  echo "ok $n - twb notes.onnx (text): exit 1, the file named"
else
  fail=1
  echo "not ok $n - twb notes.onnx (text): exit 1, the file named (exit $st)"
  sed 's/^/# /' <<<"$out"
fi
exit $fail
