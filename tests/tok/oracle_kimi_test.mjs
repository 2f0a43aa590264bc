// The real Kimi vocabulary (tests/data/kimi): our C++ encoder and the
// tokenizer.json written by k3-tokgen, both against tiktoken@1.0.22 on the
// corpus; encode/decode subcommands; deterministic tokenizer.json.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import crypto from "node:crypto";
import path from "node:path";
import { kimiPaths, loadTiktoken } from "../../scripts/node/k3_oracle.mjs";
import { CORPUS, checkCppAgainstTiktoken, checkHfAgainstTiktoken, readCorpus, scratchDir, sourceArgs, tokgen } from "./oracle_common.mjs";

const { model, config } = kimiPaths();
const texts = readCorpus(CORPUS);
const dir = scratchDir("tok-kimi");

test("corpus has at least 500 strings", () => {
  assert.ok(texts.length >= 500, `${texts.length} strings`);
});

test("C++ encoder equals tiktoken on the corpus, and decode(encode(x)) == x", () => {
  const rep = checkCppAgainstTiktoken({ model, config, texts, dir });
  assert.equal(rep.lines, 2 * texts.length);
  assert.deepEqual(rep.failures, []);
  assert.equal(rep.ids_matched, 2 * texts.length);
  assert.equal(rep.round_trips, 2 * texts.length);
});

test("tokenizer.json through npm tokenizers equals tiktoken on the corpus", async () => {
  const r = await checkHfAgainstTiktoken({ model, config, texts, dir });
  console.log(`# HF tokenizers vs tiktoken (real vocab): ${r.matched}/${r.total}`);
  assert.deepEqual(r.mismatches.slice(0, 3), []);
  // Deterministic: a second run writes the same bytes.
  const again = path.join(dir, "again.json");
  tokgen([...sourceArgs(model, config), "-o", again]);
  const sha = (p) => crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex");
  assert.equal(sha(again), sha(r.json));
});

test("encode and decode subcommands agree with tiktoken", () => {
  const { enc } = loadTiktoken(model, config);
  for (const text of ["Hello world", "你好\nKimi", "I'M here \r\n 👨‍👩‍👧‍👦 12345", "<|open|>x<|sep|>"]) {
    const ids = JSON.parse(tokgen(["encode", ...sourceArgs(model, config), "--json"], text).toString());
    assert.deepEqual(ids, Array.from(enc.encode_ordinary(text)));
    const special = JSON.parse(tokgen(["encode", ...sourceArgs(model, config), "--allow-special", "--json"], text).toString());
    assert.deepEqual(special, Array.from(enc.encode(text, "all")));
    const bytes = tokgen(["decode", ...sourceArgs(model, config)], ids.join(" "));
    assert.equal(bytes.toString("utf8"), text);
  }
  // A character split across tokens decodes to the same bytes as tiktoken.
  const ids = Array.from(enc.encode_ordinary("👨‍👩‍👧‍👦"));
  const part = ids.slice(0, 1);
  const mine = tokgen(["decode", ...sourceArgs(model, config), "--ids", ...part.map(String)]);
  assert.deepEqual([...mine], [...enc.decode(Uint32Array.from(part))]);
  enc.free();
});
