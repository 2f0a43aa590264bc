// Oracles for the k3kit tokenizer tests and benchmarks, all independent of our
// C++ code: OpenAI tiktoken (npm tiktoken@1.0.22, the wasm build of the Rust
// core) and Hugging Face tokenizers (npm, the Rust core's binding).
import fs from "node:fs";
import path from "node:path";
import { Tiktoken } from "tiktoken/lite";
export { Tiktoken };
import { Tokenizer as HfTokenizer } from "tokenizers";

// tokenization_kimi.py pat_str (spec 7.3), verbatim: tiktoken's fancy-regex reads it as is.
export const KIMI_PATTERN =
  "[\\p{Han}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

export const SOURCE_DIR = process.env.K3_SOURCE_DIR ?? path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
export const BIN_DIR = process.env.K3_BIN_DIR ?? path.join(SOURCE_DIR, "build/tok/bin");

export function countRanks(modelText) {
  let n = 0;
  for (const line of modelText.split("\n")) if (line.trim() !== "") n++;
  return n;
}

// The 256 added tokens as tokenization_kimi.py registers them: config names,
// `<|reserved_token_{id}|>` for the rest. Returns {content: id}.
export function addedTokens(numBase, configPath) {
  const specials = {};
  const named = new Map();
  if (configPath && fs.existsSync(configPath)) {
    const cfg = JSON.parse(fs.readFileSync(configPath, "utf8"));
    for (const [id, tok] of Object.entries(cfg.added_tokens_decoder ?? {})) named.set(Number(id), tok.content);
  }
  for (let id = numBase; id < numBase + 256; id++) specials[named.get(id) ?? `<|reserved_token_${id}|>`] = id;
  return specials;
}

// The real Kimi vocabulary with K3's (reconstructed) added tokens, committed in
// tests/data/kimi (provenance and licence in SOURCE.md there).
export function kimiPaths() {
  const dir = path.join(SOURCE_DIR, "tests/data/kimi");
  return { model: path.join(dir, "tiktoken.model"), config: path.join(dir, "k3_added_tokens.reconstructed.json") };
}

export function loadTiktoken(modelPath, configPath) {
  const text = fs.readFileSync(modelPath, "utf8");
  const specials = addedTokens(countRanks(text), configPath);
  return { enc: new Tiktoken(text, specials, KIMI_PATTERN), specials };
}

export function loadHf(tokenizerJsonPath) {
  return HfTokenizer.fromFile(tokenizerJsonPath);
}

// Corpus: JSON lines, each a string or {"text": ..., "ids": [...]}.
export function readCorpus(p) {
  return fs
    .readFileSync(p, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const v = JSON.parse(l);
      return typeof v === "string" ? v : v.text;
    });
}

export function sameIds(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
