#!/usr/bin/env bash
# test-panels-pointer.sh TWB — training runs kept with the model as a
# person keeps them, by the keyboard and the pointer in a real Xvfb (TAP):
# F5 twice, a click on the Training tab, Save As (Ctrl+Shift+S, a new name
# typed into the file chooser, Enter), F5 again, Ctrl+Q; then the renamed
# file opened in a new twb and F5 once more.  Checked on the files: the
# renamed model carries the identity its runs were kept under (the key of
# its first path, so runs kept before identities are found too), and every
# run, before and after the rename and the reopening, is in that one
# folder, numbered on.  The screen (Xvfb's frame buffer) is saved as PNG
# after each session for a person to look at (TWB_TEST_SHOTS).  twb must
# log no warning or critical.  Skips without xdotool/Xvfb.
set -u
twb=$(realpath "$1")
for t in xdotool Xvfb; do
  if ! command -v "$t" >/dev/null 2>&1; then
    echo "1..0 # SKIP $t not installed"
    exit 0
  fi
done
py=/usr/bin/python3
tmp=$(mktemp -d)
shots=${TWB_TEST_SHOTS:-$tmp/shots}
mkdir -p "$shots" "$tmp/fb"
app=""; xv=""
cleanup () { kill $app $xv 2>/dev/null; wait 2>/dev/null; }
trap 'cleanup; rm -rf "$tmp"' EXIT

cat >"$tmp/m.json" <<'JSON'
{ "format": "twb-model", "version": 1, "name": "small",
  "graph": { "nodes": [
    { "id": "x", "op": "input", "attrs": { "shape": [2], "dtype": "f32", "role": "data" }, "pos": [40, 40] },
    { "id": "y", "op": "input", "attrs": { "shape": [], "dtype": "i64", "role": "label" }, "pos": [40, 300] },
    { "id": "fc1", "op": "linear", "inputs": ["x"], "attrs": { "out_features": 16 }, "pos": [290, 40] },
    { "id": "relu1", "op": "relu", "inputs": ["fc1"], "pos": [540, 40] },
    { "id": "fc2", "op": "linear", "inputs": ["relu1"], "attrs": { "out_features": 2 }, "pos": [790, 40] },
    { "id": "loss", "op": "cross_entropy", "inputs": ["fc2", "y"], "pos": [790, 220] } ],
    "outputs": ["fc2"] },
  "training": { "loss": "loss", "batch_size": 32, "epochs": 1, "seed": 0, "dataset": "spirals",
    "validation_split": 0, "optimizer": { "type": "sgd", "lr": 0.05, "momentum": 0.9,
    "nesterov": false, "weight_decay": 0 }, "schedule": { "type": "constant" } } }
JSON

# The frame buffer (XWD) as PNG.
shot () {
  "$py" - "$tmp/fb/Xvfb_screen0" "$1" <<'PY' 2>/dev/null
import struct, sys
from PIL import Image
d = open(sys.argv[1], 'rb').read()
h = struct.unpack('>25I', d[:100])
header, w, hgt, bpl, ncol = h[0], h[4], h[5], h[12], h[19]
off = header + ncol * 12
img = Image.frombuffer('RGBX', (w, hgt), d[off:off + bpl * hgt], 'raw', 'BGRX', bpl, 1)
img.convert('RGB').save(sys.argv[2])
PY
}

# session FILE NAME KEYS…: twb on FILE in its own Xvfb, its window found by
# NAME; runs the steps given as functions; quits with Ctrl+Q.
start () {
  rm -f "$tmp/fd"
  exec 3<> "$tmp/fd"
  Xvfb -displayfd 3 -screen 0 1400x900x24 -fbdir "$tmp/fb" -nolisten tcp >/dev/null 2>&1 &
  xv=$!
  for _ in $(seq 50); do [ -s "$tmp/fd" ] && break; sleep 0.1; done
  export DISPLAY=":$(head -1 "$tmp/fd")"
  export GSK_RENDERER=cairo GTK_A11Y=none GDK_BACKEND=x11 XDG_STATE_HOME="$tmp/state" \
    XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" TWB_COLOR_SCHEME=light \
    NO_AT_BRIDGE=1 TWB_NO_RECOVERY=1
  local bus=()
  command -v dbus-run-session >/dev/null 2>&1 && bus=(dbus-run-session --)
  (cd "$tmp" && exec "${bus[@]}" "$twb" "$1") >>"$tmp/app.log" 2>&1 &
  app=$!
  wid=""
  for _ in $(seq 100); do
    wid=$(xdotool search --onlyvisible --name "$2" 2>/dev/null | head -1)
    [ -n "$wid" ] && break
    sleep 0.2
  done
  [ -n "$wid" ] || return 1
  xdotool windowmove "$wid" 0 0 windowsize "$wid" 1400 900
  sleep 1.5
}

stop () {
  xdotool windowfocus --sync "$wid" 2>/dev/null
  xdotool key --window "$wid" ctrl+q 2>/dev/null
  for _ in $(seq 50); do kill -0 $app 2>/dev/null || break; sleep 0.2; done
  cleanup
}

runs_in () { ls "$1" 2>/dev/null | grep -c '^run-[0-9]*\.json$'; }

# Run to the end with F5: the small model trains in well under a second;
# wait until a run record appears in the store.
train () {
  local before
  before=$(find "$tmp/data" -name 'run-*.json' 2>/dev/null | wc -l)
  # After a dialog the window must have the keyboard again.
  xdotool windowactivate --sync "$wid" 2>/dev/null || xdotool windowfocus --sync "$wid" 2>/dev/null
  sleep 0.3
  xdotool key --window "$wid" F5
  for _ in $(seq 100); do
    [ "$(find "$tmp/data" -name 'run-*.json' 2>/dev/null | wc -l)" -gt "$before" ] && break
    sleep 0.2
  done
  sleep 0.5
}

echo "1..6"
fail=0
if ! start "$tmp/m.json" "m.json"; then
  echo "not ok 1 - the window opened"; sed 's/^/# /' "$tmp/app.log"; exit 1
fi
echo "ok 1 - the window opened"
train
train
# The Training tab, by the pointer (bottom panel's first tab).
xdotool mousemove 76 519 click 1; sleep 0.6
xdotool key --window "$wid" ctrl+shift+s; sleep 1.5
xdotool key ctrl+a; sleep 0.2
xdotool type --delay 30 renamed.json; sleep 0.3
xdotool key Return; sleep 2.5
train
shot "$shots/panels-pointer-1.png"
stop

first_key=$("$py" -c "
import hashlib, os, sys
p = os.path.realpath(sys.argv[1])
print('m-' + hashlib.sha1(p.encode()).hexdigest()[:10])" "$tmp/m.json")
if [ -f "$tmp/renamed.json" ] && [ "$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['editor']['model_id'])" "$tmp/renamed.json" 2>/dev/null)" = "$first_key" ]; then
  echo "ok 2 - Save As wrote the renamed model with the identity its runs are kept under"
else
  echo "not ok 2 - Save As wrote the renamed model with the identity its runs are kept under"
  ls -la "$tmp" | sed 's/^/# /'; fail=1
fi
store="$tmp/data/twb/runs/$first_key"
if [ "$(runs_in "$store")" = 3 ]; then
  echo "ok 3 - the runs before and after the rename are in one folder"
else
  echo "not ok 3 - the runs before and after the rename are in one folder"
  find "$tmp/data" | sed 's/^/# /'; fail=1
fi

if start "$tmp/renamed.json" "renamed.json"; then
  train
  shot "$shots/panels-pointer-2.png"
  stop
fi
if [ -f "$store/run-4.json" ] && [ "$(runs_in "$store")" = 4 ]; then
  echo "ok 4 - reopened under its new name, the model's next run is run-4, beside the others"
else
  echo "not ok 4 - reopened under its new name, the model's next run is run-4, beside the others"
  find "$tmp/data" | sed 's/^/# /'; fail=1
fi
if "$py" -c "
import json, sys
for i in (1, 2, 3, 4):
    r = json.load(open('%s/run-%d.json' % (sys.argv[1], i)))
    assert r['state'] == 'finished' and r['steps'] > 0, r" "$store" 2>"$tmp/err"; then
  echo "ok 5 - every run finished and was kept"
else
  echo "not ok 5 - every run finished and was kept"; sed 's/^/# /' "$tmp/err"; fail=1
fi
if grep -Ew 'CRITICAL|WARNING' "$tmp/app.log" >"$tmp/warn"; then
  echo "not ok 6 - twb logged no warnings or criticals"; sed 's/^/# /' "$tmp/warn"; fail=1
else
  echo "ok 6 - twb logged no warnings or criticals"
fi
exit $fail
