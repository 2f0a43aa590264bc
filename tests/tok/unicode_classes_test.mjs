// Characters whose classes differ between Unicode versions or between Script
// and Script_Extensions (CJK Ext H/I, Kawi, Garay, Kaktovik numerals, ...), in
// contexts where the piece boundaries show in the ids: a vocabulary holding
// every 2+ byte substring of the probe strings makes a different split give
// different ids. Our C++ encoder must equal tiktoken on all of them.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { KIMI_PATTERN, Tiktoken } from "../../scripts/node/k3_oracle.mjs";
import { byteOrder } from "../../scripts/node/k3_small_vocab.mjs";
import { execFileSync } from "node:child_process";
import { SOURCE_DIR } from "../../scripts/node/k3_oracle.mjs";
import { scratchDir, tokgen } from "./oracle_common.mjs";

const chars = [
  "\u{31350}", "\u{31351}", "\u{2EBF0}", "\u{2B739}", "\u{2B73A}", "\u{11F04}", "\u{11F00}", "\u{1E030}", "\u{10D50}",
  "\uA7CB", "\u2FFC", "\u{1D2C0}", "\u{1E290}", "\u{10570}", "\u{10EFD}", "\u{11B00}", "\u{1E4D0}", "\u3001", "\u3005",
  "\u3007", "\u2E80", "\u{16FF0}", "\u0085", "\u180E", "\u200B", "\u017F", "\u212A", "\u0345", "\u{E0100}", "\u{F0000}",
];
const contexts = (c) => ["x" + c + "y", " " + c, c + c, "X" + c + "'s", "1" + c + "2", c + " ", "x" + c, c + "y", "'" + c, "!" + c];

test("Unicode-version and script edge characters split like tiktoken", () => {
  const probes = chars.flatMap(contexts);
  const toks = new Set();
  for (const s of probes) {
    const b = Buffer.from(s);
    for (let i = 0; i < b.length; i++) for (let j = i + 2; j <= b.length; j++) toks.add(b.subarray(i, j).toString("latin1"));
  }
  const list = byteOrder().map((b) => Buffer.from([b])).concat([...toks].sort().map((t) => Buffer.from(t, "latin1")));
  const model = list.map((t, r) => `${t.toString("base64")} ${r}`).join("\n") + "\n";
  const dir = scratchDir("tok-unicode");
  const modelPath = path.join(dir, "tiktoken.model");
  fs.writeFileSync(modelPath, model);
  const enc = new Tiktoken(model, {}, KIMI_PATTERN);
  const want = probes.map((s) => Array.from(enc.encode_ordinary(s)));
  enc.free();
  const corpus = path.join(dir, "probes.jsonl");
  fs.writeFileSync(corpus, probes.map((text, i) => JSON.stringify({ text, ids: want[i] })).join("\n") + "\n");
  let out;
  try {
    out = tokgen([modelPath, "--check", corpus, "--json", "--no-write"]);
  } catch (e) {
    out = e.stdout;
  }
  const rep = JSON.parse(out.toString());
  assert.deepEqual(rep.failures.map((f) => probes[f.line - 1]), []);
  assert.equal(rep.ids_matched, probes.length);
});

test("libs/k3/tok/unicode_tables.cpp is what the oracle generates today", () => {
  const script = path.join(SOURCE_DIR, "scripts/node/tok_unicode_tables.mjs");
  const fresh = execFileSync(process.execPath, [script], { maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "ignore"] }).toString();
  assert.equal(fresh, fs.readFileSync(path.join(SOURCE_DIR, "libs/k3/tok/unicode_tables.cpp"), "utf8"));
});
