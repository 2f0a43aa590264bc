// A model for driving the chat page: the tiny synthetic snapshot with the
// lm_head rows of every added (special) token zeroed, repacked to int8.
// Untrained, the plain tiny model soon picks a special token that is off the
// chat grammar and the server ends the answer after a handful of tokens; with
// those logits at 0 (below the max of the ordinary ones) greedy never picks
// one, so an answer runs to max_tokens — long enough to watch it stream and
// to stop it half-way. Built once under $K3_TEST_TMP by serve_fixture's
// tinyContainer.
import fs from "node:fs";
import path from "node:path";
import { tinyContainer } from "./serve_fixture.mjs";

// Zeroes rows [firstRow, rows) of a BF16 2-D tensor in a safetensors file, in place.
function zeroRows(file, name, firstRow) {
  const fd = fs.openSync(file, "r+");
  try {
    const len = Buffer.alloc(8);
    fs.readSync(fd, len, 0, 8, 0);
    const headerLen = Number(len.readBigUInt64LE());
    const header = Buffer.alloc(headerLen);
    fs.readSync(fd, header, 0, headerLen, 8);
    const t = JSON.parse(header.toString("utf8"))[name];
    if (!t || t.dtype !== "BF16" || t.shape.length !== 2) throw new Error(`${file}: ${name} is not a 2-D BF16 tensor`);
    const [rows, cols] = t.shape;
    const begin = 8 + headerLen + t.data_offsets[0] + firstRow * cols * 2;
    fs.writeSync(fd, Buffer.alloc((rows - firstRow) * cols * 2), 0, (rows - firstRow) * cols * 2, begin);
  } finally {
    fs.closeSync(fd);
  }
}

export function chattyTinyModel() {
  return tinyContainer("tiny-b8-no-specials", (src) => {
    const head = "language_model.lm_head.weight";
    const shard = JSON.parse(fs.readFileSync(`${src}/model.safetensors.index.json`, "utf8")).weight_map[head];
    // Added tokens start right after the ordinary ranks (one line each in tiktoken.model).
    const ranks = fs.readFileSync(`${src}/tiktoken.model`, "utf8").split("\n").filter((l) => l.trim()).length;
    zeroRows(path.join(src, shard), head, ranks);
  });
}
