// Encode throughput of our C++ encoder (k3-tokgen bench) vs the tiktoken
// oracle (npm tiktoken@1.0.22, wasm) on the same text in the same run.
// Usage: scripts/bench_tokenizer [--mb N] [--text FILE] [--repeat N] [--source DIR|MODEL]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { BIN_DIR, SOURCE_DIR, kimiPaths, loadTiktoken, readCorpus } from "./k3_oracle.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const mb = Number(opt("--mb", "4"));
const repeat = Number(opt("--repeat", "3"));
const { model, config } = kimiPaths();
const source = opt("--source", null);
const tokgen = path.join(BIN_DIR, "k3-tokgen");
if (!fs.existsSync(tokgen)) {
  console.error(`bench_tokenizer: ${tokgen} not built (set K3_BIN_DIR)`);
  process.exit(2);
}

// Default text: the container and runtime docs (English prose, tables, code) interleaved
// with the multilingual test corpus lines, repeated to the requested size.
function defaultText() {
  const parts = [
    fs.readFileSync(path.join(SOURCE_DIR, "docs/CONTAINER.md"), "utf8"),
    readCorpus(path.join(SOURCE_DIR, "tests/tok/corpus.jsonl")).filter((t) => t.length < 400).join("\n"),
    fs.readFileSync(path.join(SOURCE_DIR, "docs/K3_RUN.md"), "utf8"),
  ];
  const unit = parts.join("\n\n");
  let text = "";
  while (Buffer.byteLength(text) < mb * 1e6) text += unit + "\n";
  return text;
}

const textFile = opt("--text", null);
const text = textFile ? fs.readFileSync(textFile, "utf8") : defaultText();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "k3-bench-tok-"));
const file = path.join(tmp, "text.txt");
fs.writeFileSync(file, text);
const bytes = fs.statSync(file).size;

const { enc } = source ? loadTiktoken(path.join(source, "tiktoken.model"), path.join(source, "tokenizer_config.json")) : loadTiktoken(model, config);
let best = Infinity, tiktokenTokens = 0;
for (let i = 0; i < repeat; i++) {
  const t0 = process.hrtime.bigint();
  tiktokenTokens = enc.encode_ordinary(text).length;
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
}
enc.free();
const tiktokenMBs = bytes / 1e6 / best;

const srcArgs = source ? [source] : [model, config];
const ours = JSON.parse(execFileSync(tokgen, ["bench", ...srcArgs, "--file", file, "--repeat", String(repeat)]).toString());
fs.rmSync(tmp, { recursive: true, force: true });

const ratio = ours.mb_per_s / tiktokenMBs;
console.log(`text: ${bytes} bytes (${textFile ?? "spec + notes + corpus"}), best of ${repeat}`);
console.log(`tiktoken 1.0.22 (wasm): ${tiktokenMBs.toFixed(2)} MB/s, ${tiktokenTokens} tokens`);
console.log(`k3 tok (C++): ${ours.mb_per_s.toFixed(2)} MB/s, ${ours.tokens} tokens`);
console.log(`ratio k3/tiktoken: ${ratio.toFixed(2)}x ${ratio >= 1 ? "(target >= 1.0x met)" : "(BELOW target 1.0x)"}`);
console.log(`pre-tokenizer alone: hand-written ${ours.pretokenize_mb_per_s.toFixed(1)} MB/s, PCRE2 JIT ${ours.regex_pretokenize_mb_per_s.toFixed(1)} MB/s (${ours.pieces} vs ${ours.regex_pieces} pieces)`);
if (ours.tokens !== tiktokenTokens || ours.pieces !== ours.regex_pieces) {
  console.error("bench_tokenizer: token counts differ: the encoders disagree on this text");
  process.exit(1);
}
