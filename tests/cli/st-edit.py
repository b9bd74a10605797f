#!/usr/bin/python3
"""st-edit.py IN OUT EDIT... — a changed copy of a safetensors file, for the
command-line tests (pure Python: no torch, no numpy).

Edits, applied in order:
  drop=KEY             remove tensor KEY
  add=KEY              add an f32 tensor KEY of shape [2]
  shape=KEY:D0,D1      give KEY that shape (data cut or padded with zeros)
  dtype=KEY:DT         store KEY as DT (F64, F16, I64; values converted); KEY * = all floats
  meta=NAME:VALUE      set a metadata string; meta=NAME: (empty VALUE) removes it

The format: an 8-byte little-endian header length, a JSON header of
name -> {dtype, shape, data_offsets} (plus "__metadata__"), then the data.
"""

import json
import struct
import sys

SIZES = {"F32": 4, "F64": 8, "F16": 2, "I64": 8, "I32": 4}
CODES = {"F32": "f", "F64": "d", "F16": "e", "I64": "q", "I32": "i"}


def read(path):
    raw = open(path, "rb").read()
    n, = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        count = (end - b) // SIZES[e["dtype"]]
        values = list(struct.unpack_from("<%d%s" % (count, CODES[e["dtype"]]), data, b))
        tensors[name] = [e["dtype"], e["shape"], values]
    return tensors, meta


def write(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dt, shape, values = tensors[name]
        if dt in ("I64", "I32"):
            values = [int(v) for v in values]
        raw = struct.pack("<%d%s" % (len(values), CODES[dt]), *values)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main(argv):
    tensors, meta = read(argv[1])
    for edit in argv[3:]:
        kind, _, arg = edit.partition("=")
        if kind == "drop":
            del tensors[arg]
        elif kind == "add":
            tensors[arg] = ["F32", [2], [0.5, -0.5]]
        elif kind == "shape":
            key, _, dims = arg.partition(":")
            shape = [int(d) for d in dims.split(",")] if dims else []
            count = 1
            for d in shape:
                count *= d
            values = tensors[key][2][:count]
            tensors[key][1:] = [shape, values + [0.0] * (count - len(values))]
        elif kind == "dtype":
            key, _, dt = arg.partition(":")
            for k in tensors if key == "*" else [key]:
                if key == "*" and tensors[k][0] not in ("F32", "F64", "F16"):
                    continue
                tensors[k][0] = dt
        elif kind == "meta":
            name, _, value = arg.partition(":")
            if value:
                meta[name] = value
            else:
                meta.pop(name, None)
        else:
            raise SystemExit(f"st-edit.py: unknown edit {edit}")
    write(argv[2], tensors, meta)


if __name__ == "__main__":
    main(sys.argv)
