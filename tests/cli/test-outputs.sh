#!/usr/bin/env bash
# test-outputs.sh TWB ASSETS — no command writes over a file it reads, nor
# to anything but a regular file (TAP).  Every output option of every
# command (train --checkpoint, --metrics, --dump-on-break; predict --output;
# export -o; import -o and the OUT.safetensors beside it; profile --trace)
# aimed at each file the command reads (the model, CSV data, .npy features
# and their labels, --init-weights, --resume, --weights, --input, the ONNX
# model), directly, through a symbolic link, a chain of two, a hard link;
# and at a directory, a fifo, /dev/null, /dev/full, a missing folder, or
# another output.  Each is refused with exit status 1 and a message naming
# the option and the file, and afterwards every file in the folder is
# byte-identical and nothing new is there (nor /dev/full.safetensors).  The
# accepted forms still write: a new file, a run resumed onto its own
# checkpoint, a link to a new file.
set -u
twb=$1
case $twb in /*) ;; *) twb="$PWD/$twb" ;; esac
assets=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

w="$tmp/w"
mkdir "$w"
cp "$assets/models/spirals.json" "$w/m.json"
# 64 rows of two features and a label; the same as .npy features and labels.
/usr/bin/python3 - "$w" <<'PY'
import struct, sys
d = sys.argv[1]
rows = [((i % 7) / 7.0 - 0.5, (i % 5) / 5.0 - 0.5, i % 2) for i in range(64)]
with open(d + "/data.csv", "w") as f:
    f.write("x,y,label\n")
    for x, y, c in rows:
        f.write("%g,%g,%d\n" % (x, y, c))
def npy(path, descr, shape, raw):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += ' ' * (63 - (10 + len(h)) % 64) + '\n'
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + raw)
npy(d + "/x.npy", "<f4", "(64, 2)", b"".join(struct.pack("<ff", x, y) for x, y, _ in rows))
npy(d + "/x_labels.npy", "<i8", "(64,)", b"".join(struct.pack("<q", c) for _, _, c in rows))
PY
"$twb" train "$w/m.json" --max-steps 2 --no-eval -q --checkpoint "$w/init.st" >/dev/null 2>&1
cp "$w/init.st" "$w/resume.st"
"$twb" export "$w/m.json" --weights "$w/init.st" -o "$w/m.onnx" >/dev/null 2>&1
cp "$w/m.onnx" "$w/w.safetensors"     # an ONNX file whose name is import's derived output
ln -s data.csv "$w/link.csv"
ln -s link-hop.json "$w/link2.json"
ln -s m.json "$w/link-hop.json"
ln "$w/x_labels.npy" "$w/hard.npy"
mkdir "$w/dir"
mkfifo "$w/fifo"

echo "1..53"
check "fixtures: data, weights, a checkpoint, an ONNX file" \
  '[ -s "$w/data.csv" ] && [ -s "$w/x.npy" ] && [ -s "$w/init.st" ] && [ -s "$w/m.onnx" ]'

# Every entry of the folder (kind, size, link target) and every regular
# file's digest: equal before and after means nothing changed or appeared.
state () {
  (cd "$w" && find . -mindepth 1 -printf '%p %y %s %l\n' | sort \
     && find . -type f -print0 | sort -z | xargs -0 md5sum)
  ls -d /dev/full.safetensors /dev/null.safetensors 2>/dev/null
}
before=$(state)
# refused NAME WANT CMD...: exit 1, output matching the regex WANT, the
# folder as it was.
refused () {
  local name=$1 want=$2
  shift 2
  local out st after
  out=$("$@" 2>&1); st=$?
  after=$(state)
  if [ $st = 1 ] && grep -qE -- "$want" <<<"$out" && [ "$after" = "$before" ]; then
    ok "$name"
  else
    not_ok "$name" "exit $st: $out
$(diff <(echo "$before") <(echo "$after"))"
  fi
}
same='is the same file as'
tr () { "$twb" train "$w/m.json" --max-steps 2 --no-eval -q "$@"; }

# train: each output onto each input.
for opt in --checkpoint --metrics --dump-on-break; do
  extra=()
  [ $opt = --dump-on-break ] && extra=(--break-on step=1)
  refused "train $opt onto the model" "$opt .*m.json $same the model" tr "${extra[@]}" $opt "$w/m.json"
  refused "train $opt onto the CSV data" "$opt .*data.csv $same --data" \
    tr "${extra[@]}" --data "$w/data.csv" $opt "$w/data.csv"
  refused "train $opt onto the .npy labels" "$opt .*x_labels.npy $same --data .*x_labels.npy" \
    tr "${extra[@]}" --data "$w/x.npy" $opt "$w/x_labels.npy"
  refused "train $opt onto --init-weights" "$opt .*init.st $same --init-weights" \
    tr "${extra[@]}" --init-weights "$w/init.st" $opt "$w/init.st"
  refused "train $opt through a link to the data" "$opt .*link.csv $same --data" \
    tr "${extra[@]}" --data "$w/data.csv" $opt "$w/link.csv"
  refused "train $opt through a hard link to the labels" "$opt .*hard.npy $same --data" \
    tr "${extra[@]}" --data "$w/x.npy" $opt "$w/hard.npy"
done
refused "train --metrics onto --resume" "--metrics .*resume.st $same --resume" \
  tr --resume "$w/resume.st" --metrics "$w/resume.st"
refused "train --dump-on-break onto --resume" "--dump-on-break .*resume.st $same --resume" \
  tr --resume "$w/resume.st" --break-on step=1 --dump-on-break "$w/resume.st"
refused "train --checkpoint through two links to the model" "--checkpoint .*link2.json $same the model" \
  tr --checkpoint "$w/link2.json"
refused "train --checkpoint and --metrics onto one file" "--metrics .*both $same --checkpoint" \
  tr --checkpoint "$w/both" --metrics "$w/both"
refused "train --metrics onto a directory" "--metrics .*dir is a directory, not a regular file" \
  tr --metrics "$w/dir"
refused "train --dump-on-break onto a fifo" "--dump-on-break .*fifo is a fifo, not a regular file" \
  tr --break-on step=1 --dump-on-break "$w/fifo"
refused "train --metrics onto /dev/null" "--metrics /dev/null is a character device" tr --metrics /dev/null
refused "train --checkpoint in a missing folder" "--checkpoint .*nope/ck.st: the folder .*nope does not exist" \
  tr --checkpoint "$w/nope/ck.st"

# predict, export, import, profile.
pr () { "$twb" predict "$w/m.json" --weights "$w/init.st" --input "$w/x.npy" "$@"; }
refused "predict --output onto the model" "--output .*m.json $same the model" pr --output "$w/m.json"
refused "predict --output onto --weights" "--output .*init.st $same --weights" pr --output "$w/init.st"
refused "predict --output onto --input" "--output .*x.npy $same --input" pr --output "$w/x.npy"
refused "predict --output onto a fifo" "--output .*fifo is a fifo" pr --output "$w/fifo"
refused "predict --output onto /dev/full" "--output /dev/full is a character device" pr --output /dev/full
ex () { "$twb" export "$w/m.json" --weights "$w/init.st" "$@"; }
refused "export -o onto the model" "-o .*m.json $same the model" ex -o "$w/m.json"
refused "export -o onto --weights" "-o .*init.st $same --weights" ex -o "$w/init.st"
refused "export -o through a link to the model" "-o .*link-hop.json $same the model" ex -o "$w/link-hop.json"
refused "export -o onto a directory" "-o .*dir is a directory" ex -o "$w/dir"
im () { "$twb" import "$w/m.onnx" "$@"; }
refused "import -o onto the ONNX model" "-o .*m.onnx $same the ONNX model" im -o "$w/m.onnx"
refused "import -o a directory: no DIR.safetensors" "-o .*dir is a directory" im -o "$w/dir"
refused "import -o a fifo: no fifo.safetensors" "-o .*fifo is a fifo" im -o "$w/fifo"
refused "import -o /dev/full: no /dev/full.safetensors" "-o /dev/full is a character device" im -o /dev/full
refused "import -o /dev/null: no /dev/null.safetensors" "-o /dev/null is a character device" im -o /dev/null
refused "import: the weights file beside -o onto the ONNX model" \
  "the weights file .*w.safetensors $same the ONNX model" "$twb" import "$w/w.safetensors" -o "$w/w.json"
refused "import -o in a missing folder" "-o .*nope/m.json: the folder .*nope does not exist" im -o "$w/nope/m.json"
pf () { "$twb" profile "$w/m.json" --steps 1 --warmup 0 "$@"; }
refused "profile --trace onto the model" "--trace .*m.json $same the model" pf --trace "$w/m.json"
refused "profile --trace onto the CSV data" "--trace .*data.csv $same --data" \
  pf --data "$w/data.csv" --trace "$w/data.csv"
refused "profile --trace onto the .npy labels" "--trace .*x_labels.npy $same --data" \
  pf --data "$w/x.npy" --trace "$w/x_labels.npy"
refused "profile --trace onto a fifo" "--trace .*fifo is a fifo" pf --trace "$w/fifo"
check "no refused command wrote anything" '[ "$(state)" = "$before" ]'

# The recipe's own dataset when it is a file: --data left out.
sed 's/"dataset": "spirals"/"dataset": "data.csv"/' "$w/m.json" > "$w/m-csv.json"
before=$(state)
refused "train --metrics onto the recipe's CSV" "--metrics .*data.csv $same the recipe's dataset" \
  bash -c 'cd "$1" && "$2" train m-csv.json --max-steps 1 -q --no-eval --metrics data.csv' _ "$w" "$twb"

# Accepted forms write what they should.
out=$(tr --resume "$w/resume.st" --checkpoint "$w/resume.st" --max-steps 4 2>&1); st=$?
check "a resumed run may update its own checkpoint" '[ $st = 0 ] && ! cmp -s "$w/resume.st" "$w/init.st"' "$out"
out=$(tr --data "$w/data.csv" --checkpoint "$w/new.st" --metrics "$w/new.csv" 2>&1); st=$?
check "train onto new files writes them" '[ $st = 0 ] && [ -s "$w/new.st" ] && [ -s "$w/new.csv" ]' "$out"
ln -s target.onnx "$w/dangling.onnx"
out=$(ex -o "$w/dangling.onnx" 2>&1); st=$?
check "export through a link to a new file writes the target" \
  '[ $st = 0 ] && [ -L "$w/dangling.onnx" ] && [ -s "$w/target.onnx" ]' "$out"
out=$(im -o "$w/imported.json" 2>&1); st=$?
check "import writes the model and the weights beside it" \
  '[ $st = 0 ] && [ -s "$w/imported.json" ] && [ -s "$w/imported.safetensors" ]' "$out"
exit $fail
