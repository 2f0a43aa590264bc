// Small vocabularies (any size must work): a BPE-trained 768-rank vocabulary
// with K3's added tokens at the same offsets, and random-rank vocabularies.
// Our C++ encoder must equal tiktoken exactly; the tokenizer.json must equal
// it on the trained vocabulary, and its rate on random vocabularies is reported.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { kimiPaths } from "../../scripts/node/k3_oracle.mjs";
import { k3ConfigFor, randomVocab, trainedVocab } from "../../scripts/node/k3_small_vocab.mjs";
import { CORPUS, checkCppAgainstTiktoken, checkHfAgainstTiktoken, readCorpus, scratchDir, tokgen } from "./oracle_common.mjs";

const texts = readCorpus(CORPUS);
const short = texts.filter((t) => t.length < 400);  // training text: no long runs
// Real vocabularies do not contain their added tokens' text as a rank (HF
// would then resolve the added token to the rank's id); keep them out.
const addedContents = Object.values(JSON.parse(fs.readFileSync(kimiPaths().config, "utf8")).added_tokens_decoder).map((t) => t.content);
let trainingText = short.join("\n");
for (const c of addedContents) trainingText = trainingText.split(c).join(" ");

function writeSnapshot(tag, modelText, numBase) {
  const dir = scratchDir(tag);
  fs.writeFileSync(path.join(dir, "tiktoken.model"), modelText);
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), k3ConfigFor(numBase, kimiPaths().config));
  return { dir, model: path.join(dir, "tiktoken.model"), config: path.join(dir, "tokenizer_config.json") };
}

test("trained 768-rank vocabulary: C++ and tokenizer.json equal tiktoken", async () => {
  const snap = writeSnapshot("tok-trained", trainedVocab(trainingText, 768), 768);
  const rep = checkCppAgainstTiktoken({ ...snap, texts });
  assert.deepEqual(rep.failures.slice(0, 3), []);
  assert.equal(rep.ids_matched, 2 * texts.length);
  const hf = await checkHfAgainstTiktoken({ ...snap, texts });
  console.log(`# HF tokenizers vs tiktoken (trained 768): ${hf.matched}/${hf.total}`);
  assert.deepEqual(hf.mismatches.slice(0, 3), []);
  // The snapshot directory form loads the config: <|open|> is 768 + 3.
  const ids = JSON.parse(tokgen(["encode", snap.dir, "--allow-special", "--json"], "<|open|><|sep|>").toString());
  assert.deepEqual(ids, [771, 773]);
});

test("without tokenizer_config.json every added id is reserved", () => {
  const snap = writeSnapshot("tok-noconfig", trainedVocab(trainingText.slice(0, 20000), 300), 300);
  fs.rmSync(snap.config);
  const ids = JSON.parse(tokgen(["encode", snap.dir, "--allow-special", "--json"], "<|reserved_token_303|>").toString());
  assert.deepEqual(ids, [303]);
  const rep = checkCppAgainstTiktoken({ model: snap.model, config: null, texts: short, dir: snap.dir });
  assert.equal(rep.ids_matched, 2 * short.length);
});

test("random-rank vocabularies: C++ exact; tokenizer.json match rate reported", async () => {
  let matched = 0, total = 0;
  for (const seed of [1, 2, 3]) {
    const snap = writeSnapshot(`tok-random${seed}`, randomVocab(trainingText, 2048, seed), 2048);
    const rep = checkCppAgainstTiktoken({ ...snap, texts });
    assert.deepEqual(rep.failures.slice(0, 3), []);
    assert.equal(rep.ids_matched, 2 * texts.length);
    const hf = await checkHfAgainstTiktoken({ ...snap, texts });
    matched += hf.matched;
    total += hf.total;
    for (const m of hf.mismatches.slice(0, 2)) console.log(`# seed ${seed} mismatch: ${JSON.stringify(m.text.slice(0, 60))} want ${m.want.slice(0, 12)} got ${m.got.slice(0, 12)}`);
  }
  console.log(`# HF tokenizers vs tiktoken (random 2048-rank vocabularies): ${matched}/${total} = ${(100 * matched / total).toFixed(2)}%`);
  assert.ok(matched / total > 0.9);
});
