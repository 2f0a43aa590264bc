// Shared steps of the tokenizer oracle tests: annotate a corpus with tiktoken
// ids, run `k3-tokgen --check` on it, write tokenizer.json with k3-tokgen and
// compare npm `tokenizers` against tiktoken.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { BIN_DIR, SOURCE_DIR, loadTiktoken, loadHf, readCorpus, sameIds } from "../../scripts/node/k3_oracle.mjs";

export const TOKGEN = path.join(BIN_DIR, "k3-tokgen");
export const CORPUS = path.join(SOURCE_DIR, "tests/tok/corpus.jsonl");

export function scratchDir(tag) {
  const base = process.env.K3_TEST_TMP ?? os.tmpdir();
  fs.mkdirSync(base, { recursive: true });
  return fs.mkdtempSync(path.join(base, `${tag}-`));
}

export function tokgen(args, input) {
  return execFileSync(TOKGEN, args, { input, maxBuffer: 1 << 28 });
}

// Source args for k3-tokgen: model plus config when given.
export function sourceArgs(model, config) {
  return config ? [model, config] : [model];
}

// C++ encoder (through `k3-tokgen --check`) against tiktoken, both with
// special tokens disallowed (encode_ordinary) and allowed ("all").
export function checkCppAgainstTiktoken({ model, config, texts, dir }) {
  const { enc } = loadTiktoken(model, config);
  const lines = [];
  for (const text of texts) {
    lines.push(JSON.stringify({ text, ids: Array.from(enc.encode_ordinary(text)) }));
    lines.push(JSON.stringify({ text, ids: Array.from(enc.encode(text, "all")), allow_special: true }));
  }
  const annotated = path.join(dir, "annotated.jsonl");
  fs.writeFileSync(annotated, lines.join("\n") + "\n");
  let out;
  try {
    out = tokgen([...sourceArgs(model, config), "--check", annotated, "--json", "--no-write"]);
  } catch (e) {
    out = e.stdout;  // exit 1 on mismatches: the report says which
  }
  enc.free();
  return JSON.parse(out.toString());
}

// tokenizer.json written by k3-tokgen, loaded by npm tokenizers, vs tiktoken
// with all added tokens allowed (HF always matches added tokens).
export async function checkHfAgainstTiktoken({ model, config, texts, dir }) {
  const json = path.join(dir, "tokenizer.json");
  tokgen([...sourceArgs(model, config), "-o", json]);
  const { enc } = loadTiktoken(model, config);
  const hf = loadHf(json);
  let matched = 0;
  const mismatches = [];
  for (const text of texts) {
    const want = Array.from(enc.encode(text, "all"));
    const got = Array.from((await hf.encode(text, null, { addSpecialTokens: false })).getIds());
    if (sameIds(want, got)) matched++;
    else mismatches.push({ text, want, got });
  }
  enc.free();
  return { matched, total: texts.length, mismatches, json };
}

export { readCorpus };
