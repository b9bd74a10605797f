#!/usr/bin/env bash
# test-renderer.sh TWB — which renderer the window asks GTK for (TAP):
# without a GPU render node (/dev/dri/renderD*) GTK's GL would be Mesa's
# software rasterizer, so the window draws with cairo; GSK_RENDERER, when
# set, is left alone.  Run under an X server (the ui suite's xvfb-run).
set -u
twb=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "1..3"
note="no GPU render node in /dev/dri: drawing with cairo"
out=$(env -u GSK_RENDERER G_MESSAGES_DEBUG=twb-application "$twb" --screenshot "$tmp/a.png" 2>&1)
st=$?
if compgen -G "/dev/dri/renderD*" >/dev/null; then
  if [ $st = 0 ] && ! grep -q "$note" <<<"$out"; then echo "ok 1 - a render node: GTK's own choice"
  else echo "not ok 1 - a render node: GTK's own choice"; sed 's/^/# /' <<<"$out"; fi
else
  if [ $st = 0 ] && grep -q "$note" <<<"$out"; then echo "ok 1 - no render node: cairo"
  else echo "not ok 1 - no render node: cairo"; sed 's/^/# /' <<<"$out"; fi
fi
out=$(env GSK_RENDERER=cairo G_MESSAGES_DEBUG=twb-application "$twb" --screenshot "$tmp/b.png" 2>&1)
st=$?
if [ $st = 0 ] && ! grep -q "$note" <<<"$out"; then echo "ok 2 - GSK_RENDERER set: left alone"
else echo "not ok 2 - GSK_RENDERER set: left alone"; sed 's/^/# /' <<<"$out"; fi
# The picture is drawn either way (the same window, the same size).
if [ -s "$tmp/a.png" ] && [ -s "$tmp/b.png" ]; then echo "ok 3 - both drew the window"
else echo "not ok 3 - both drew the window"; fi
