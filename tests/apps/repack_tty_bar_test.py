#!/usr/bin/python3
"""k3-repack's progress bar on a terminal (stderr on a pseudo-terminal): the
first frame, drawn before any byte is converted, already shows the total to
read, and in a unit that suits it (the tiny snapshot is ~2 MB: "MB", not
"0.00 GB"); every frame shows the same total, which is the run's bytes_read
(from --json on stdout, not a TTY); the last frame is 100 %."""
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile

SOURCE = os.environ.get("K3_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
BIN = os.environ.get("K3_BIN_DIR", os.path.join(SOURCE, "build/release/bin"))
TMP = os.environ.get("K3_TEST_TMP", tempfile.gettempdir())

with tempfile.TemporaryDirectory(dir=TMP) as d:
    src = os.path.join(d, "src")
    subprocess.run([sys.executable, os.path.join(SOURCE, "scripts/k3_synth.py"), "--preset", "tiny", "--seed", "1",
                    "--out", src], check=True, capture_output=True)
    master, slave = pty.openpty()
    p = subprocess.Popen([os.path.join(BIN, "k3-repack"), src, os.path.join(d, "c"), "--bits", "8", "--json"],
                         stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    tty = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        assert ready, "k3-repack wrote nothing to its terminal for 60 s"
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        tty += chunk
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, (p.returncode, tty)
    read = json.loads(out)["bytes_read"]

frame = re.compile(r"\[[#.]{30}\] +([\d.]+)% +([\d.]+)/([\d.]+) (GB|MB|kB) +[\d.]+ (GB|MB|kB)/s ETA ")
frames = [frame.match(f) for f in tty.decode().replace("\r\n", "\n").split("\r") if f.startswith("[")]
assert frames and all(frames), tty
first, last = frames[0], frames[-1]
assert first.group(4) == "MB", first.group(0)  # ~2 MB to read: not "0.00 GB"
assert float(first.group(2)) == 0.0 and float(first.group(1)) == 0.0, first.group(0)  # drawn before any byte
assert all(f.group(3) == f"{read / 1e6:.2f}" for f in frames), (read, [f.group(0) for f in frames])
assert float(last.group(1)) == 100.0 and last.group(2) == last.group(3), last.group(0)
print(f"ok: {len(frames)} frames, total {first.group(3)} MB from the first")
