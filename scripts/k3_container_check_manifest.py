#!/usr/bin/python3
"""k3-manifest.json checks for k3_container_check.py (docs/CONTAINER.md, format_version 1).

Every size, offset and SHA-256 the manifest states is recomputed from the
container files and, for experts, from the source shards.
"""

import hashlib
import json
import os

from k3_container_check_io import EXTRA_FILES, sha256_file, strip_prefix

EXPERT_PARTS = ("w1.weight_packed", "w1.weight_scale", "w2.weight_packed",
                "w2.weight_scale", "w3.weight_packed", "w3.weight_scale")


def check_manifest(ck):
    """Cross-check k3-manifest.json (docs/CONTAINER.md) with the files and the source."""
    rep = ck.rep
    path = os.path.join(ck.dst, "k3-manifest.json")
    if not os.path.exists(path):
        rep.check(not ck.require_manifest, "k3-manifest.json: missing")
        return "absent"
    with open(path, encoding="utf-8") as f:
        man = json.load(f)
    rep.check(man.get("format") == "k3-container" and man.get("format_version") == 1,
              f"manifest: format {man.get('format')!r} version {man.get('format_version')!r}")
    st = man.get("settings") or {}
    rep.check([st.get("bits"), st.get("mla_bits"), st.get("head_bits")] ==
              [ck.bits["bits"], ck.bits["mla"], ck.bits["head"]],
              f"manifest: settings {st} != checked bits {ck.bits}")
    with open(os.path.join(ck.src, "config.json"), "rb") as f:
        rep.check((man.get("source") or {}).get("config_sha256") == hashlib.sha256(f.read()).hexdigest(),
                  "manifest: source.config_sha256 is not the SHA-256 of the source config.json")
    shards = man.get("shards") or []
    rep.check([x.get("file") for x in shards] == sorted(d.name for d in ck.dst_shards.values()),
              "manifest: shards list does not match the output shard files")
    by_name = {d.name: (num, d) for num, d in ck.dst_shards.items()}
    for ent in shards:
        if ent.get("file") not in by_name:
            continue
        num, d = by_name[ent["file"]]
        s = ck.src_shards[num]
        tag = f"manifest: shard {d.name}"
        rep.check(ent.get("size") == d.size, f"{tag}: size {ent.get('size')} != {d.size}")
        rep.check(ent.get("data_offset") == d.data_start, f"{tag}: data_offset != {d.data_start}")
        rep.check(ent.get("tensors") == len(d.names), f"{tag}: tensors != {len(d.names)}")
        rep.check(ent.get("sha256") == sha256_file(d.path), f"{tag}: sha256 of the file differs")
        so = ent.get("source") or {}
        rep.check(so.get("file") == s.name and so.get("size") == s.size and
                  so.get("header_sha256") == hashlib.sha256(s.head_bytes()).hexdigest(),
                  f"{tag}: source identity (file/size/header_sha256) does not match {s.name}")
        exp = []
        layer_of = {}
        for n in d.names:
            if n.endswith("w1.weight_packed") and ".experts." in n:
                parts = strip_prefix(n).split(".")
                exp.append((int(parts[2]), int(parts[5]), n))
                layer_of[n] = int(parts[2])
        got = ent.get("experts") or []
        rep.check([(x.get("layer"), x.get("id")) for x in got] == [(a, b) for a, b, _ in sorted(exp)],
                  f"{tag}: expert list does not match the shard's experts (sorted by layer, id)")
        for x, (_, _, n) in zip(got, sorted(exp)):
            off = d.data_start + d.header[n]["data_offsets"][0]
            base = n[: -len("w1.weight_packed")]
            length = d.header[base + "w3.weight_scale"]["data_offsets"][1] - d.header[n]["data_offsets"][0]
            if not rep.check(x.get("offset") == off and x.get("length") == length,
                             f"{tag}: expert {x.get('layer')}/{x.get('id')} range "
                             f"{x.get('offset')}+{x.get('length')} != {off}+{length}"):
                continue
            h = hashlib.sha256()
            for w in EXPERT_PARTS:
                h.update(s.bytes(base + w))
            rep.check(x.get("sha256") == h.hexdigest(),
                      f"{tag}: expert {x.get('layer')}/{x.get('id')} sha256 != source bytes' digest")
    files = man.get("files") or []
    want_files = sorted(fn for fn in EXTRA_FILES if os.path.exists(os.path.join(ck.src, fn)))
    rep.check([x.get("file") for x in files] == want_files,
              f"manifest: files {[x.get('file') for x in files]} != copied extra files {want_files}")
    for x in files:
        p = os.path.join(ck.dst, x.get("file", ""))
        if rep.check(os.path.isfile(p), f"manifest: listed file {x.get('file')} missing"):
            rep.check(x.get("size") == os.path.getsize(p) and x.get("sha256") == sha256_file(p),
                      f"manifest: file {x.get('file')} size/sha256 mismatch")
    return "ok"
