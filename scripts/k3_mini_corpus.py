#!/usr/bin/python3
"""Openly licensed English text for k3-mini, read from installed Debian packages.

Sources (provenance and licence are recorded in models/k3-mini/README.md):
- `fortunes` / `fortunes-min`: /usr/share/games/fortunes/* (BSD fortune files);
- `dict-gcide`: /usr/share/dictd/gcide.dict.dz (GCIDE, GPL-2+);
- `bible-kjv`: the `bible` program's King James text (public domain);
- GNU manual pages (coreutils, grep, sed, findutils, tar, gzip, diffutils;
  GPL-3+), rendered with `man -E ascii`.
- tzdata city names (/usr/share/zoneinfo, public domain) for tool-use dialogues.

Every document has a stable key; held-out membership is a hash of that key
(sha256, about 1 in HELD_EVERY), so the split is the same on every machine and
never depends on reading order.
"""

import gzip
import hashlib
import os
import re
import subprocess

HELD_EVERY = 20
FORTUNE_DIR = "/usr/share/games/fortunes"
FORTUNE_SKIP = {"art", "ascii-art", "translate-me", "debian", "knghtbrd"}  # drawings, non-English, in-jokes
GCIDE = "/usr/share/dictd/gcide.dict.dz"
MAN_PACKAGES = ("coreutils", "grep", "sed", "findutils", "tar", "gzip", "diffutils")
ZONE_DIR = "/usr/share/zoneinfo"


def held_out(key):
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:4], "little") % HELD_EVERY == 0


class Doc:
    __slots__ = ("source", "key", "text")

    def __init__(self, source, key, text):
        self.source, self.key, self.text = source, key, text


def fortunes():
    out = []
    for name in sorted(os.listdir(FORTUNE_DIR)):
        path = os.path.join(FORTUNE_DIR, name)
        if "." in name or name in FORTUNE_SKIP or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            parts = f.read().split("\n%\n")
        for n, p in enumerate(parts):
            p = p.strip("\n%")
            if 20 <= len(p) <= 1500 and p.isascii():
                out.append(Doc("fortunes", f"fortune/{name}/{n}", p.replace("\t", "    ")))
    return out


_GCIDE_HEAD = re.compile(r"^([A-Z][a-z]+) \\[^\\]*\\, ([a-z]+)\.(?: |$)")


def _gcide_clean(s):
    s = re.sub(r"\[[^\]]*\]", "", s)        # etymologies, [1913 Webster]
    s = re.sub(r"\\[^\\]*\\", "", s)         # pronunciations
    s = re.sub(r"\s+", " ", s).strip()
    return s


def gcide_entries(limit_bytes):
    """(word, part of speech, first definition sentence, cleaned entry text) for
    simple single-word entries, in dictionary order, up to limit_bytes of text."""
    with gzip.open(GCIDE, "rt", encoding="utf-8", errors="replace") as f:
        raw = f.read()
    out, total, seen = [], 0, set()
    pos_names = {"n": "noun", "v": "verb", "a": "adjective", "adv": "adverb"}
    for block in raw.split("\n\n"):
        m = _GCIDE_HEAD.match(block)
        if not m or m.group(2) not in pos_names or not block.isascii():
            continue
        word = m.group(1).lower()
        if word in seen or not 3 <= len(word) <= 12:
            continue
        body = _gcide_clean(block[m.end():])
        body = re.sub(r"^(?:\d+\. )?(?:\([A-Za-z. ]+\) )?", "", body)
        sent = body.split(". ")[0].split("; ")[0].strip().rstrip(".")
        if not 12 <= len(sent) <= 140 or not sent[0].isalpha() or any(c in sent for c in "[]{}()=") \
                or "--" in sent:
            continue
        seen.add(word)
        text = f"{m.group(1)}, {pos_names[m.group(2)]}. {body}"
        if len(text) > 600:
            text = text[:600].rsplit(" ", 1)[0] + "."
        out.append((word, pos_names[m.group(2)], sent[0].lower() + sent[1:], text))
        total += len(text)
        if total >= limit_bytes:
            break
    return out


def gcide_docs(entries):
    return [Doc("gcide", f"gcide/{w}", text) for w, _, _, text in entries]


_BOOKS = ("Genesis Exodus Leviticus Numbers Deuteronomy Joshua Judges Ruth Psalms Proverbs "
          "Ecclesiastes Isaiah Matthew Mark Luke John Acts Romans James Revelation").split()


def bible():
    out = []
    for book in _BOOKS:
        r = subprocess.run(["bible", "-f", f"{book}1:1-{book}150:200"], capture_output=True,
                           text=True, check=True)
        chapters = {}
        for line in r.stdout.splitlines():
            m = re.match(r"^(\w+?)(\d+):(\d+) (.*)$", line)
            if m:
                chapters.setdefault(int(m.group(2)), []).append(m.group(4).strip())
        for c, verses in sorted(chapters.items()):
            # 8-verse passages: short documents, like the other sources
            for s in range(0, len(verses), 8):
                out.append(Doc("kjv", f"kjv/{book}/{c}/{s}", " ".join(verses[s:s + 8])))
    return out


def man_pages():
    names = []
    for pkg in MAN_PACKAGES:
        r = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
        names += [os.path.basename(p).split(".")[0] for p in r.stdout.splitlines()
                  if "/share/man/man1/" in p and p.endswith(".gz")]
    out = []
    env = dict(os.environ, MANWIDTH="72", LANG="C", LC_ALL="C")
    for name in sorted(set(names)):
        r = subprocess.run(["man", "-E", "ascii", "-P", "cat", "1", name], capture_output=True,
                           text=True, env=env, errors="replace")
        text = re.sub(r".\x08", "", r.stdout)
        # one document per section, trimmed of the running header/footer
        lines = [ln.rstrip() for ln in text.splitlines()[1:-1]]
        sec, buf = "TOP", []
        for ln in lines + ["END"]:
            if re.match(r"^[A-Z][A-Z ]+$", ln):
                body = "\n".join(buf).strip("\n")
                if len(body) > 40:
                    out.append(Doc("man", f"man/{name}/{sec}", f"{name}(1) {sec}\n{body[:2000]}"))
                sec, buf = ln, []
            else:
                buf.append(ln)
    return out


def cities():
    """City names from tzdata zone names (Europe/Paris -> Paris), sorted."""
    out = set()
    for area in ("Europe", "America", "Asia", "Africa", "Australia", "Pacific", "Atlantic", "Indian"):
        d = os.path.join(ZONE_DIR, area)
        for root, _, files in os.walk(d):
            for f in files:
                name = f.replace("_", " ")
                if name.isascii() and name[0].isupper() and " " not in name.strip() or \
                        (name.isascii() and len(name.split()) == 2 and name[0].isupper()):
                    out.add(name)
    return sorted(c for c in out if c.replace(" ", "").isalpha() and len(c) >= 4)


def split(docs):
    train = [d for d in docs if not held_out(d.key)]
    held = [d for d in docs if held_out(d.key)]
    return train, held
