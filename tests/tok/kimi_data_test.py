#!/usr/bin/python3
"""The real Kimi vocabulary the tokenizer tests read is committed in
tests/data/kimi: both files are there, with their provenance and licence
notice, and their bytes are the ones SOURCE.md records (sha256, size), so an
edited or truncated copy fails here rather than silently changing what every
tokenizer test means."""
import hashlib
import os
import re

SOURCE = os.environ.get("K3_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
KIMI = os.path.join(SOURCE, "tests/data/kimi")

source_md = open(os.path.join(KIMI, "SOURCE.md"), encoding="utf-8").read()
licence = open(os.path.join(KIMI, "LICENSE.moonshot"), encoding="utf-8").read()
assert "Copyright (c) 2025 Moonshot AI" in licence and "Our only modification part is that" in licence

# The summary table: | `name` | bytes | `sha256` |
rows = re.findall(r"^\| `([^`]+)` \| ([\d,]+) \| `([0-9a-f]{64})` \|$", source_md, re.M)
assert sorted(r[0] for r in rows) == ["k3_added_tokens.reconstructed.json", "tiktoken.model"], rows
for name, size, digest in rows:
    data = open(os.path.join(KIMI, name), "rb").read()
    assert len(data) == int(size.replace(",", "")), f"{name}: {len(data)} bytes, SOURCE.md says {size}"
    got = hashlib.sha256(data).hexdigest()
    assert got == digest, f"{name}: sha256 {got}, SOURCE.md says {digest}"
# The pinned prefix/suffix of the real vocabulary's sum.
assert dict((r[0], r[2]) for r in rows)["tiktoken.model"].startswith("b6c497a7")
print("ok: tests/data/kimi matches SOURCE.md")
