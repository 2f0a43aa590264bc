// A model for driving the chat page: the tiny synthetic snapshot with the
// lm_head rows of every added (special) token zeroed, repacked to int8.
// Untrained, the plain tiny model soon picks a special token that is off the
// chat grammar and the server ends the answer after a handful of tokens; with
// those logits at 0 (below the max of the ordinary ones) greedy never picks
// one, so an answer runs to max_tokens — long enough to watch it stream and
// to stop it half-way. Built once under $K3_TEST_TMP (atomic rename).
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { SOURCE_DIR, BIN_DIR } from "./serve_fixture.mjs";

const TMP = process.env.K3_TEST_TMP ?? "/tmp/k3-serve-tests";

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
  const dst = path.join(TMP, "serve", "tiny-b8-no-specials");
  if (fs.existsSync(path.join(dst, "k3-manifest.json"))) return dst;
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  const work = `${dst}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  execFileSync("/usr/bin/python3", [path.join(SOURCE_DIR, "scripts/k3_synth.py"), "--preset", "tiny", "--seed", "1",
    "--out", `${work}/src`], { stdio: "ignore" });
  const head = "language_model.lm_head.weight";
  const shard = JSON.parse(fs.readFileSync(`${work}/src/model.safetensors.index.json`, "utf8")).weight_map[head];
  // Added tokens start right after the ordinary ranks (one line each in tiktoken.model).
  const ranks = fs.readFileSync(`${work}/src/tiktoken.model`, "utf8").split("\n").filter((l) => l.trim()).length;
  zeroRows(path.join(work, "src", shard), head, ranks);
  execFileSync(path.join(BIN_DIR, "k3-repack"), [`${work}/src`, `${work}/c`, "--bits", "8"], { stdio: "ignore" });
  try {
    fs.renameSync(`${work}/c`, dst);
  } catch { /* a concurrent builder won */ }
  fs.rmSync(work, { recursive: true, force: true });
  return dst;
}
