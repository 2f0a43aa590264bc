#!/usr/bin/python3
"""Loss curve of a k3-mini training run as a PNG, with numpy + zlib only.

    k3_mini_plot.py CKPT/train_log.csv OUT.png

Grey: per-step training loss; blue: its 25-step moving average; the shaded
band marks the MXFP4 QAT steps; red dot: held-out loss (from train.json next
to the log). Axes carry integer loss ticks and step ticks every 100, labelled
with a built-in 3x5 digit font (no font files, no matplotlib).
"""

import json
import os
import struct
import sys
import zlib

import numpy as np

W, H, M = 720, 400, 44  # size, margin
DIGITS = {  # 3x5 bitmaps, rows top to bottom
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001001001",
    "8": "111101111101111", "9": "111101111001111",
}


def png(path, img):
    raw = b"".join(b"\x00" + row.tobytes() for row in img)

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", img.shape[1], img.shape[0], 8, 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def text(img, x, y, s, scale=2, color=(40, 40, 40)):
    for ch in s:
        bits = DIGITS[ch]
        for r in range(5):
            for c in range(3):
                if bits[r * 3 + c] == "1":
                    img[y + r * scale:y + (r + 1) * scale, x + c * scale:x + (c + 1) * scale] = color
        x += 4 * scale


def line(img, xs, ys, color, width=1):
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for t in np.linspace(0, 1, n):
            x, y = int(round(x0 + t * (x1 - x0))), int(round(y0 + t * (y1 - y0)))
            img[max(y - width // 2, 0):y + width // 2 + 1, max(x - width // 2, 0):x + width // 2 + 1] = color


def main(argv):
    log, out = argv[1], argv[2]
    rows = np.loadtxt(log, delimiter=",", skiprows=1)
    step, loss = rows[:, 0], rows[:, 1]
    info_path = os.path.join(os.path.dirname(log), "train.json")
    info = json.load(open(info_path)) if os.path.exists(info_path) else {}
    img = np.full((H, W, 3), 255, np.uint8)
    lo, hi = 0.0, float(np.ceil(loss.max()))
    smax = float(step.max()) or 1.0
    px = lambda s: M + (W - 2 * M) * s / smax  # noqa: E731
    py = lambda v: H - M - (H - 2 * M) * (v - lo) / (hi - lo)  # noqa: E731
    if info.get("qat_frac"):
        q0 = int(px(smax * (1 - info["qat_frac"])))
        img[M:H - M, q0:W - M] = (236, 244, 236)
    for v in range(int(lo), int(hi) + 1):
        y = int(py(v))
        img[y, M:W - M] = (225, 225, 225)
        text(img, 8, y - 5, str(v))
    for s in range(0, int(smax) + 1, 100):
        x = int(px(s))
        img[H - M:H - M + 5, x] = (0, 0, 0)
        text(img, x - 4 * len(str(s)), H - M + 10, str(s))
    img[H - M, M:W - M] = (0, 0, 0)
    img[M:H - M, M] = (0, 0, 0)
    line(img, [px(s) for s in step], [py(v) for v in loss], (170, 170, 170))
    k = 25
    if len(loss) > k:
        avg = np.convolve(loss, np.ones(k) / k, mode="valid")
        line(img, [px(s) for s in step[k - 1:]], [py(v) for v in avg], (30, 80, 200), width=3)
    if info.get("held_loss") is not None:
        x, y = int(px(smax)), int(py(info["held_loss"]))
        img[y - 4:y + 5, x - 4:x + 5] = (210, 30, 30)
    png(out, img)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
