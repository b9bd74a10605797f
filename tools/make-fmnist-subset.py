#!/usr/bin/env python3
"""Write the bundled Fashion-MNIST subset (assets/data/fashion-mnist-subset).

Takes the first N_TRAIN training and N_TEST test images and labels from
Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist) and writes
them as gzipped IDX files under the original names.  The output is
reproducible: the gzip header carries no timestamp and no file name.

Usage: tools/make-fmnist-subset.py [SOURCE_DIR [OUTPUT_DIR]]
"""

import gzip
import os
import struct
import sys

N_TRAIN = 4000
N_TEST = 1000
SOURCE = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.normpath(os.path.join(HERE, "..", "assets", "data", "fashion-mnist-subset"))


def read_idx(path):
    """Return (type_code, dims, payload bytes) of an IDX file (gzip or raw)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        sys.exit(f"{path}: not an IDX file")
    type_code, ndim = raw[2], raw[3]
    dims = list(struct.unpack(">%dI" % ndim, raw[4:4 + 4 * ndim]))
    return type_code, dims, raw[4 + 4 * ndim:]


def write_subset(src, dst, n):
    type_code, dims, payload = read_idx(src)
    if type_code != 0x08:
        sys.exit(f"{src}: expected unsigned bytes (type 0x08), found {type_code:#04x}")
    if dims[0] < n:
        sys.exit(f"{src}: only {dims[0]} items, {n} wanted")
    item = 1
    for d in dims[1:]:
        item *= d
    header = bytes([0, 0, type_code, len(dims)]) + struct.pack(">%dI" % len(dims), n, *dims[1:])
    with open(dst, "wb") as f:
        # mtime=0 and an empty name keep the output byte-for-byte reproducible.
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
            gz.write(header + payload[:n * item])


def main():
    src_dir = sys.argv[1] if len(sys.argv) > 1 else SOURCE
    out_dir = sys.argv[2] if len(sys.argv) > 2 else OUTPUT
    os.makedirs(out_dir, exist_ok=True)
    for prefix, n in (("train", N_TRAIN), ("t10k", N_TEST)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{prefix}-{kind}-ubyte.gz"
            write_subset(os.path.join(src_dir, name), os.path.join(out_dir, name), n)
            print(f"wrote {os.path.join(out_dir, name)} ({n} items)")


if __name__ == "__main__":
    main()
