#!/usr/bin/python3
"""Independent numpy reference for the k3kit quantizers (spec 5.3, 5.4, 5.9, 4).

Usage: quant_ref.py MODE IN.f32 ROWS COLS OUT_Q OUT_SCALES
  MODE int8      int8 per row (spec 5.3): q int8 [rows*cols], scales f32 [rows]
  MODE int4      int4-g64 (spec 5.4): packed u8 [rows*cols/2], scales f32 [rows*cols/64]
  MODE downcast  int8 per row, then the spec 5.9 downcast to int4-g64
  MODE act8      IDOT activations (spec 4), groups of 32: q int8, scales f32 [rows*cols/32]
IN.f32 holds rows*cols little-endian float32. Every operation is float32 with
round-half-even, written from the spec text, not from the C++ code.
"""
import sys

import numpy as np

F = np.float32
FLOOR = F(1e-20)


def scale_of(am, qmax):
    s = (am / F(qmax)).astype(F)
    return np.where(s < FLOOR, FLOOR, s).astype(F)


def round_clip(v, lo, hi):
    # NaN cannot occur for finite inputs; the tests only feed finite values.
    return np.clip(np.rint(v), lo, hi)


def int8_rows(w):
    am = np.max(np.abs(w), axis=1)
    s = scale_of(am, 127)
    inv = (F(1) / s).astype(F)
    q = round_clip((w * inv[:, None]).astype(F), -127, 127).astype(np.int8)
    return q, s


def pack_nibbles(v):
    u = (v.astype(np.int16) + 8).astype(np.uint8).reshape(v.shape[0], -1)
    return (u[:, 0::2] | (u[:, 1::2] << 4)).astype(np.uint8)


def int4_g64(w):
    rows, cols = w.shape
    g = w.reshape(rows, cols // 64, 64)
    am = np.max(np.abs(g), axis=2)
    s = scale_of(am, 7)
    inv = (F(1) / s).astype(F)
    v = round_clip((g * inv[:, :, None]).astype(F), -8, 7)
    return pack_nibbles(v.reshape(rows, cols)), s


def downcast(w):
    rows, cols = w.shape
    q8, s8 = int8_rows(w)
    g = q8.reshape(rows, cols // 64, 64).astype(np.int32)
    am = np.max(np.abs(g), axis=2).astype(F)
    s = ((am * s8[:, None]).astype(F) / F(7)).astype(F)
    s = np.where(s < FLOOR, FLOOR, s).astype(F)
    inv = (s8[:, None] / s).astype(F)
    v = round_clip((g.astype(F) * inv[:, :, None]).astype(F), -8, 7)
    return pack_nibbles(v.reshape(rows, cols)), s


def act8(w):
    g = w.reshape(-1, 32)
    am = np.max(np.abs(g), axis=1)
    s = scale_of(am, 127)
    inv = (F(1) / s).astype(F)
    q = round_clip((g * inv[:, None]).astype(F), -127, 127).astype(np.int8)
    return q, s


def main():
    mode, inp, rows, cols, out_q, out_s = sys.argv[1:7]
    rows, cols = int(rows), int(cols)
    w = np.fromfile(inp, dtype="<f4").reshape(rows, cols)
    np.seterr(all="ignore")
    fn = {"int8": int8_rows, "int4": int4_g64, "downcast": downcast, "act8": act8}[mode]
    q, s = fn(w)
    q.tofile(out_q)
    s.astype("<f4").tofile(out_s)


if __name__ == "__main__":
    main()
