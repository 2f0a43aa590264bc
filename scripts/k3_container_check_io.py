#!/usr/bin/python3
"""Safetensors reading and spec 3.2/3.3 validation for k3_container_check.py.

Independent of the C++ tools: a positional-read shard view, a failure
collector, and the holeless/compact-header rules a container shard obeys.
"""

import hashlib
import json
import os
import struct
import sys

import numpy as np

ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "U8": 1, "I8": 1}
PREFIX = "language_model."
EXTRA_FILES = ("config.json", "generation_config.json", "tokenizer_config.json",
               "tiktoken.model", "tokenizer.json")


def strip_prefix(n):
    return n[len(PREFIX):] if n.startswith(PREFIX) else n


class CheckFailed(Exception):
    pass


class Report:
    """Collects failures; keeps going so one run shows every problem."""

    def __init__(self, limit=50):
        self.failures, self.limit = [], limit

    def fail(self, msg):
        self.failures.append(msg)
        if len(self.failures) <= self.limit:
            print(f"FAIL: {msg}", file=sys.stderr)

    def check(self, cond, msg):
        if not cond:
            self.fail(msg)
        return cond


# ----------------------------------------------------------- safetensors I/O

class Shard:
    """A safetensors file: parsed header (in file order) and a read-only map."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise CheckFailed(f"{self.name}: shorter than 8 bytes")
            (self.n,) = struct.unpack("<Q", head)
            if self.n > self.size - 8 or self.n > (512 << 20):
                raise CheckFailed(f"{self.name}: header length {self.n} exceeds file size {self.size}")
            self.header_raw = f.read(self.n)
        self.data_start = 8 + self.n
        try:
            hdr = json.loads(self.header_raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise CheckFailed(f"{self.name}: header is not JSON: {e}")
        if not isinstance(hdr, dict):
            raise CheckFailed(f"{self.name}: header is not a JSON object")
        self.metadata = hdr.pop("__metadata__", None)
        self.header = hdr  # insertion order = file order
        self.names = list(hdr)
        self._fd = os.open(path, os.O_RDONLY)

    def entry(self, name):
        return self.header[name]

    def span(self, name):
        b, e = self.header[name]["data_offsets"]
        return self.data_start + b, self.data_start + e

    def read(self, begin, end):
        """Positional read (no mapping: RSS stays small on big containers)."""
        out = bytearray(end - begin)
        view, pos = memoryview(out), begin
        while pos < end:
            n = os.preadv(self._fd, [view[pos - begin:]], pos)
            if n <= 0:
                raise CheckFailed(f"{self.name}: short read at byte {pos}")
            pos += n
        return bytes(out)

    def bytes(self, name):
        return self.read(*self.span(name))

    def array(self, name, dtype):
        return np.frombuffer(self.bytes(name), dtype=dtype)

    def head_bytes(self):
        return self.read(0, self.data_start)

    def close(self):
        os.close(self._fd)


def validate_holeless(sh, rep, compact=True):
    """Spec 3.2 + 3.3 writer rules on one shard."""
    tag = sh.name
    rep.check(sh.data_start % 8 == 0, f"{tag}: 8+N = {sh.data_start} is not a multiple of 8")
    text = sh.header_raw.decode("utf-8", "replace")
    stripped = text.rstrip(" ")
    rep.check(len(text) - len(stripped) < 8, f"{tag}: header padded with {len(text) - len(stripped)} spaces (> 7)")
    if compact:
        again = json.dumps(json.loads(stripped), separators=(",", ":"), ensure_ascii=True)
        rep.check(again == stripped, f"{tag}: header is not compact ASCII JSON in layout order (spec 3.3)")
    rep.check(sh.metadata is None, f"{tag}: has __metadata__ (the container writes none, spec 3.3)")
    for name in sh.names:
        keys = list(sh.header[name]) if isinstance(sh.header[name], dict) else None
        if keys != ["dtype", "shape", "data_offsets"]:
            rep.fail(f"{tag}: tensor {name}: entry keys {keys} are not dtype, shape, data_offsets")
            break
    pos = 0
    for name in sh.names:
        ent = sh.header[name]
        if not (isinstance(ent, dict) and isinstance(ent.get("dtype"), str)
                and isinstance(ent.get("shape"), list) and isinstance(ent.get("data_offsets"), list)):
            raise CheckFailed(f"{tag}: tensor {name}: malformed header entry {ent!r}")
        off = ent["data_offsets"]
        if len(off) != 2 or not all(type(x) is int for x in off):
            raise CheckFailed(f"{tag}: tensor {name}: data_offsets {off!r} not two integers")
        b, e = off
        rep.check(b == pos, f"{tag}: tensor {name}: begins at {b}, previous tensor ended at {pos} (hole/overlap)")
        rep.check(e >= b, f"{tag}: tensor {name}: end {e} < begin {b}")
        shape = ent["shape"]
        if not all(type(d) is int and d >= 0 for d in shape) or len(shape) > 8:
            raise CheckFailed(f"{tag}: tensor {name}: bad shape {shape!r}")
        dt = ent["dtype"]
        rep.check(dt in ITEMSIZE, f"{tag}: tensor {name}: unexpected dtype {dt}")
        if dt in ITEMSIZE:
            rep.check(e - b == int(np.prod(shape, dtype=np.int64)) * ITEMSIZE[dt],
                      f"{tag}: tensor {name}: {e - b} bytes for {dt}{shape}")
        pos = max(pos, e)
    rep.check(sh.size == sh.data_start + pos,
              f"{tag}: file size {sh.size} != 8+N+data ({sh.data_start}+{pos})")


def sha256_file(path):

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(8 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)
