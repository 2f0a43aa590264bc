// Small tiktoken vocabularies for tests, built here (never from our C++ code):
// - trainedVocab: byte-level BPE trained on a text (the usual way vocabularies
//   are made: every token's parts have lower ranks);
// - randomVocab: tokens are random substrings of a text with shuffled ranks, so
//   tokens are reachable through several splits in any rank order (a harsh case
//   for HF merges).
// Plus a tokenizer_config.json naming the K3 added tokens at the same offsets
// above num_base as K3 (from tests/data/kimi/k3_added_tokens.reconstructed.json).
import fs from "node:fs";

// GPT-2 order of the 256 single bytes (ranks 0..255), as in the Kimi file.
export function byteOrder() {
  const printable = [], rest = [];
  for (let b = 0; b < 256; b++) ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174 ? printable : rest).push(b);
  return printable.concat(rest);
}

function rng(seed) {
  let s = BigInt(seed) | 1n;
  return () => {
    s ^= s << 13n; s &= (1n << 64n) - 1n;
    s ^= s >> 7n;
    s ^= s << 17n; s &= (1n << 64n) - 1n;
    return Number(s % 1000003n) / 1000003;
  };
}

function modelText(tokens) {
  return tokens.map((t, r) => `${Buffer.from(t).toString("base64")} ${r}`).join("\n") + "\n";
}

// Greedy BPE training over whitespace-separated words (bytes), numRanks total.
export function trainedVocab(text, numRanks) {
  const tokens = byteOrder().map((b) => [b]);
  const words = new Map();
  for (const w of text.split(/(?=\s)/u)) {
    if (w) words.set(w, (words.get(w) ?? 0) + 1);
  }
  let seqs = [...words].map(([w, n]) => ({ syms: [...Buffer.from(w)].map((b) => String.fromCharCode(b)), n }));
  const have = new Set(tokens.map((t) => String.fromCharCode(...t)));
  while (tokens.length < numRanks) {
    const counts = new Map();
    for (const { syms, n } of seqs)
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = syms[i] + "\u0000" + syms[i + 1];
        counts.set(k, (counts.get(k) ?? 0) + n);
      }
    let best = null, bestN = 0;
    for (const [k, n] of counts) if (n > bestN || (n === bestN && k < best)) (best = k), (bestN = n);
    if (!best) break;
    const [a, b] = best.split("\u0000");
    const merged = a + b;
    if (!have.has(merged)) {
      have.add(merged);
      tokens.push([...merged].map((c) => c.charCodeAt(0)));
    }
    for (const s of seqs) {
      const out = [];
      for (let i = 0; i < s.syms.length; i++) {
        if (i + 1 < s.syms.length && s.syms[i] === a && s.syms[i + 1] === b) out.push(merged), i++;
        else out.push(s.syms[i]);
      }
      s.syms = out;
    }
  }
  return modelText(tokens);
}

// 256 bytes + (numRanks-256) distinct random substrings (2..8 bytes) of text,
// in random rank order.
export function randomVocab(text, numRanks, seed) {
  const r = rng(seed);
  const bytes = Buffer.from(text);
  const seen = new Set(), extra = [];
  for (const b of byteOrder()) seen.add(String.fromCharCode(b));
  while (extra.length < numRanks - 256) {
    const len = 2 + Math.floor(r() * 7);
    const at = Math.floor(r() * (bytes.length - len));
    const t = [...bytes.subarray(at, at + len)];
    const k = String.fromCharCode(...t);
    if (!seen.has(k)) seen.add(k), extra.push(t);
  }
  return modelText(byteOrder().map((b) => [b]).concat(extra));
}

// tokenizer_config.json for a vocabulary of numBase ranks, K3 names shifted.
export function k3ConfigFor(numBase, reconstructedPath) {
  const src = JSON.parse(fs.readFileSync(reconstructedPath, "utf8")).added_tokens_decoder;
  const decoder = {};
  for (const [id, tok] of Object.entries(src)) decoder[String(Number(id) - 163584 + numBase)] = tok;
  return JSON.stringify({ added_tokens_decoder: decoder, tokenizer_class: "TikTokenTokenizer" }, null, 2) + "\n";
}
