// `k3-run CONTAINER --serve` as a child process for the node tests: a tiny
// synthetic container built once under $K3_TEST_TMP (k3_synth.py + k3-repack),
// a free port, "listening on" awaited, SIGTERM then SIGKILL on stop and at exit.
// K3_WEB_CHAT_URL points the tests at a server already running instead;
// K3_SERVE_CONTAINER picks another container (e.g. a real model).
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { execFileSync, spawn } from "node:child_process";

const SOURCE_DIR = process.env.K3_SOURCE_DIR ?? path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const BIN_DIR = process.env.K3_BIN_DIR ?? path.join(SOURCE_DIR, "build/release/bin");
const TMP = process.env.K3_TEST_TMP ?? path.join(SOURCE_DIR, "build/release/testdata");

// The tiny synthetic model repacked to int8, built once (atomic rename, so parallel tests share it).
export function tinyContainer(seed = 1) {
  const dir = path.join(TMP, "serve-containers", `tiny-s${seed}-b8`);
  if (fs.existsSync(dir)) return dir;
  const work = `${dir}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  execFileSync("/usr/bin/python3", [path.join(SOURCE_DIR, "scripts/k3_synth.py"), "--preset", "tiny", "--seed", String(seed),
    "--out", path.join(work, "snap")], { stdio: "ignore" });
  execFileSync(path.join(BIN_DIR, "k3-repack"), [path.join(work, "snap"), path.join(work, "c"), "--bits", "8"], { stdio: "ignore" });
  try { fs.renameSync(path.join(work, "c"), dir); } catch { /* another test won the race */ }
  fs.rmSync(work, { recursive: true, force: true });
  return dir;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const live = new Set();
process.on("exit", () => { for (const p of live) p.kill("SIGKILL"); });

// Starts the server; resolves to {url, stop(), log()} once it prints "listening on".
export async function startServe({ ctx = 2048, extra = [], timeoutMs = 60_000 } = {}) {
  if (process.env.K3_WEB_CHAT_URL) return { url: process.env.K3_WEB_CHAT_URL.replace(/\/$/, ""), stop: async () => {}, log: () => "" };
  const container = process.env.K3_SERVE_CONTAINER ?? tinyContainer();
  const port = await freePort();
  const args = [container, "--serve", "--host", "127.0.0.1", "--port", String(port), "--ctx", String(ctx), "--threads", "2", ...extra];
  const child = spawn(path.join(BIN_DIR, "k3-run"), args, { stdio: ["ignore", "pipe", "pipe"] });
  live.add(child);
  let out = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { out += d; });
  const exited = new Promise((resolve) => child.once("exit", (code, sig) => { live.delete(child); resolve({ code, sig }); }));
  const stop = async () => {
    if (!live.has(child)) return;
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(t);
  };
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`k3-run --serve did not listen within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = () => {
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m) { clearTimeout(timer); resolve(m[1].replace(/\/$/, "")); }
    };
    child.stdout.on("data", check);
    child.stderr.on("data", check);
    exited.then(({ code, sig }) => { clearTimeout(timer); reject(new Error(`k3-run --serve exited (${code ?? sig}) before listening:\n${out}`)); });
  }).catch(async (e) => { await stop(); throw e; });
  return { url, stop, log: () => out };
}
