#!/usr/bin/python3
"""Snapshot reading for the numpy reference (scripts/k3_ref.py).

Reads a Kimi K3 Hugging Face snapshot directly, independently of the C++ code:
its own safetensors reader (8-byte header length, JSON header, np.memmap of the
data), config.json with the `text_config` nesting rule (spec 1.1), the
model.safetensors.index.json weight_map (spec 2.9), the optional
`language_model.` name prefix (spec 2.1) and float conversion (spec 3.1):
BF16 -> f32 by shifting the 16 bits left by 16, F16 -> f32 by IEEE conversion,
F32 as is. Expert tensors (U8) are returned raw; MXFP4 decoding lives in
k3_ref_ops.mxfp4_dequant.
"""
import glob
import json
import os
import struct

import numpy as np

PREFIX = "language_model."
FLOAT_SIZES = {"BF16": 2, "F16": 2, "F32": 4}
RAW_DTYPES = {"U8": np.uint8, "I8": np.int8}
MAX_HEADER = 512 << 20


class RefError(Exception):
    """A snapshot problem, reported as one line naming the file/tensor."""


class SafetensorsFile:
    """One .safetensors file: parsed header plus a read-only memmap of the data."""

    def __init__(self, path):
        self.path = path
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise RefError(f"{path}: file shorter than 8 bytes")
            (n,) = struct.unpack("<Q", head)
            if n > size - 8 or n > MAX_HEADER:
                raise RefError(f"{path}: header length {n} exceeds file size {size}")
            raw = f.read(n)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise RefError(f"{path}: header is not valid JSON: {e}")
        if not isinstance(header, dict):
            raise RefError(f"{path}: header is not a JSON object")
        self.data_start = 8 + n
        self.entries = {}
        for name, e in header.items():
            if name == "__metadata__":
                continue
            self._check_entry(name, e, size)
            self.entries[name] = e
        self._mm = None
        self._size = size

    def _check_entry(self, name, e, size):
        where = f"{self.path}: tensor {name}"
        if not isinstance(e, dict) or not isinstance(e.get("dtype"), str):
            raise RefError(f"{where}: entry has no string dtype")
        shape, offs = e.get("shape"), e.get("data_offsets")
        if not isinstance(shape, list) or len(shape) > 8 or any(
                isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
            raise RefError(f"{where}: bad shape {shape!r}")
        if not isinstance(offs, list) or len(offs) < 2 or any(
                isinstance(o, bool) or not isinstance(o, int) for o in offs[:2]):
            raise RefError(f"{where}: bad data_offsets {offs!r}")
        b, end = offs[0], offs[1]
        if not (0 <= b <= end) or self.data_start + end > size:
            raise RefError(f"{where}: data_offsets [{b},{end}] outside the file")
        dt = e["dtype"]
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if dt in FLOAT_SIZES:
            if end - b != numel * FLOAT_SIZES[dt]:
                raise RefError(f"{where}: {dt} shape {shape} needs {numel * FLOAT_SIZES[dt]}"
                               f" bytes, span is {end - b}")
        elif dt not in RAW_DTYPES:
            raise RefError(f"{where}: unsupported dtype {dt}")

    def _bytes(self, name):
        if self._mm is None:
            self._mm = np.memmap(self.path, dtype=np.uint8, mode="r")
        b, end = self.entries[name]["data_offsets"][:2]
        return self._mm[self.data_start + b:self.data_start + end]

    def float32(self, name):
        """The tensor converted to a fresh float32 array of its header shape."""
        e = self.entries[name]
        dt, shape, raw = e["dtype"], tuple(e["shape"]), self._bytes(name)
        if dt == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            out = bits.view(np.float32)
        elif dt == "F16":
            out = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif dt == "F32":
            out = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        else:
            raise RefError(f"{self.path}: tensor {name}: expected a float dtype, got {dt}")
        return out.reshape(shape)

    def float32_rows(self, name, rows):
        """Selected rows (first axis) of a 2-D float tensor as f32, converting only those rows."""
        e = self.entries[name]
        dt, shape = e["dtype"], tuple(e["shape"])
        if dt not in FLOAT_SIZES or len(shape) != 2:
            raise RefError(f"{self.path}: tensor {name}: expected a 2-D float tensor, got {dt} {list(shape)}")
        code = {"BF16": "<u2", "F16": "<f2", "F32": "<f4"}[dt]
        table = np.frombuffer(self._bytes(name), dtype=code).reshape(shape)
        picked = table[np.asarray(rows, dtype=np.int64)]
        if dt == "BF16":
            return (picked.astype(np.uint32) << 16).view(np.float32)
        return picked.astype(np.float32)

    def raw(self, name):
        """(dtype string, shape, uint8/int8 view of the bytes) of a U8/I8 tensor."""
        e = self.entries[name]
        if e["dtype"] not in RAW_DTYPES:
            raise RefError(f"{self.path}: tensor {name}: expected U8/I8, got {e['dtype']}")
        return e["dtype"], tuple(e["shape"]), np.asarray(self._bytes(name)).view(RAW_DTYPES[e["dtype"]])


def text_config(root):
    """Spec 1.1: hyper-parameters live under `text_config` when it is an object."""
    tc = root.get("text_config")
    return tc if isinstance(tc, dict) else root


def load_config(snapshot):
    path = os.path.join(snapshot, "config.json")
    try:
        with open(path, "r", encoding="utf-8") as f:
            root = json.load(f)
    except (OSError, ValueError) as e:
        raise RefError(f"{path}: cannot read config: {e}")
    if not isinstance(root, dict):
        raise RefError(f"{path}: not a JSON object")
    return root, text_config(root)


class Snapshot:
    """Name -> tensor access over all shards of an HF snapshot.

    The shard of each tensor comes from model.safetensors.index.json's
    weight_map (what the peer's numpy reference uses). Without an index, every
    *.safetensors in the directory is scanned in sorted path order and the first
    file holding a name wins (the peer engine's rule).
    """

    def __init__(self, snapshot):
        self.dir = snapshot
        self.root_config, self.config = load_config(snapshot)
        self._files = {}
        self.where = {}
        index = os.path.join(snapshot, "model.safetensors.index.json")
        if os.path.exists(index):
            try:
                with open(index, "r", encoding="utf-8") as f:
                    wm = json.load(f)["weight_map"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise RefError(f"{index}: no usable weight_map: {e}")
            if not isinstance(wm, dict):
                raise RefError(f"{index}: weight_map is not an object")
            self.where = {k: os.path.join(snapshot, v) for k, v in wm.items()}
        else:
            paths = sorted(glob.glob(os.path.join(snapshot, "*.safetensors")))
            if not paths:
                raise RefError(f"{snapshot}: no model.safetensors.index.json and no *.safetensors")
            for p in paths:
                for name in self._file(p).entries:
                    self.where.setdefault(name, p)
        # Spec 2.1 (PEER engine rule): prefix every text tensor name when the
        # unprefixed first-layer norm is absent and the prefixed one is present.
        probe = "model.layers.0.input_layernorm.weight"
        self.prefix = PREFIX if (probe not in self.where and PREFIX + probe in self.where) else ""

    def _file(self, path):
        f = self._files.get(path)
        if f is None:
            if not os.path.exists(path):
                raise RefError(f"{path}: shard listed in the index is missing")
            f = self._files[path] = SafetensorsFile(path)
        return f

    def full(self, name):
        return self.prefix + name

    def has(self, name):
        return self.full(name) in self.where

    def _locate(self, name):
        full = self.full(name)
        path = self.where.get(full)
        if path is None:
            raise RefError(f"{self.dir}: tensor {full} is missing")
        f = self._file(path)
        if full not in f.entries:
            raise RefError(f"{path}: tensor {full} listed in the index but not in the shard")
        return f, full

    def shape(self, name):
        f, full = self._locate(name)
        return tuple(f.entries[full]["shape"])

    def f32(self, name, shape=None):
        """Float tensor as f32; with `shape`, its element count must match and it is reshaped."""
        f, full = self._locate(name)
        a = f.float32(full)
        if shape is not None:
            shape = tuple(int(s) for s in shape)
            if a.size != int(np.prod(shape)):
                raise RefError(f"{f.path}: tensor {full}: shape {list(a.shape)} does not hold"
                               f" {list(shape)} ({int(np.prod(shape))} elements)")
            a = a.reshape(shape)
        return a

    def f32_rows(self, name, rows):
        f, full = self._locate(name)
        return f.float32_rows(full, rows)

    def u8(self, name, nbytes):
        """Raw bytes of a U8 tensor; the byte count must be exactly `nbytes`."""
        f, full = self._locate(name)
        dt, shape, data = f.raw(full)
        if dt != "U8":
            raise RefError(f"{f.path}: tensor {full}: expected U8, got {dt}")
        if data.size != nbytes:
            raise RefError(f"{f.path}: tensor {full}: {data.size} bytes, expected {nbytes}")
        return data
