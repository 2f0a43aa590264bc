// Shared by the server tests: the model they run (one variable: K3_SERVE_MODEL,
// else a tiny synthetic container built here once), starting a live
// `k3-run --serve` on a free port, and small request helpers.
import fs from "node:fs";
import path from "node:path";
import { execFileSync, spawn } from "node:child_process";
import { OpenAI, APIError } from "../../scripts/node/openai_client.mjs";

export const SOURCE_DIR = process.env.K3_SOURCE_DIR ?? path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
export const BIN_DIR = process.env.K3_BIN_DIR ?? path.join(SOURCE_DIR, "build/release/bin");
const TMP = process.env.K3_TEST_TMP ?? "/tmp/k3-serve-tests";
export const K3_RUN = path.join(BIN_DIR, "k3-run");
export { OpenAI, APIError };

// The container under test. k3-mini (a trained model) can replace tiny here.
export function modelDir() {
  if (process.env.K3_SERVE_MODEL) return process.env.K3_SERVE_MODEL;
  return tinyContainer("tiny-b8");
}

// The tiny synthetic snapshot, edited in place by editSnapshot(srcDir) if
// given, repacked to int8 under TMP/serve/NAME once (concurrent builders: the
// first rename wins). `preset`: another k3_synth preset (small).
export function tinyContainer(name, editSnapshot = () => {}, preset = "tiny") {
  const dst = path.join(TMP, "serve", name);
  if (fs.existsSync(path.join(dst, "k3-manifest.json"))) return dst;
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  const work = `${dst}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  execFileSync("/usr/bin/python3", [path.join(SOURCE_DIR, "scripts/k3_synth.py"), "--preset", preset, "--seed", "1",
    "--out", `${work}/src`], { stdio: "inherit" });
  editSnapshot(`${work}/src`);
  execFileSync(path.join(BIN_DIR, "k3-repack"), [`${work}/src`, `${work}/c`, "--bits", "8"], { stdio: "inherit" });
  try {
    fs.renameSync(`${work}/c`, dst);
  } catch {}
  fs.rmSync(work, { recursive: true, force: true });
  return dst;
}

// The trained models/k3-mini, repacked to int8 under TMP/serve once: the
// model whose chat output really has reasoning, answers and tool calls.
export function k3MiniContainer() {
  const dst = path.join(TMP, "serve", "k3-mini-b8");
  if (fs.existsSync(path.join(dst, "k3-manifest.json"))) return dst;
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  const work = `${dst}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  execFileSync(path.join(BIN_DIR, "k3-repack"), [path.join(SOURCE_DIR, "models/k3-mini"), work, "--bits", "8"],
    { stdio: "inherit" });
  try {
    fs.renameSync(work, dst);
  } catch {}
  fs.rmSync(work, { recursive: true, force: true });
  return dst;
}

// Starts `k3-run MODEL --serve --port 0 ...args`; resolves once it prints
// "listening on http://HOST:PORT". stop() sends SIGTERM and awaits the exit.
export async function startServer(args = [], { env = {}, model = modelDir() } = {}) {
  const proc = spawn(K3_RUN, [model, "--serve", "--port", "0", "--threads", "1", ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let log = "";
  proc.stderr.on("data", (d) => { log += d; });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m) resolve(m[1]);
    });
    exited.then(({ code }) => reject(new Error(`k3-run --serve exited (${code}) before listening:\n${log}`)));
  });
  return {
    url,
    proc,
    log: () => log,
    client: (opts = {}) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0, ...opts }),
    async stop() {
      proc.kill("SIGTERM");
      return exited;
    },
  };
}

export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, text, json, headers: res.headers };
}

export async function tokenize(url, body) {
  const r = await postJson(`${url}/tokenize`, body);
  if (r.status !== 200) throw new Error(`/tokenize ${r.status}: ${r.text}`);
  return r.json.tokens;
}

// Streams a chat completion; returns the concatenated channels and the chunks.
export async function streamChat(client, params, { signal, onChunk } = {}) {
  const stream = await client.chat.completions.create({ ...params, stream: true }, { signal });
  const out = { content: "", reasoning: "", chunks: [], finish: null, usage: null };
  for await (const c of stream) {
    out.chunks.push(c);
    if (c.usage) out.usage = c.usage;
    const ch = c.choices?.[0];
    if (ch?.delta?.content) out.content += ch.delta.content;
    if (ch?.delta?.reasoning_content) out.reasoning += ch.delta.reasoning_content;
    if (ch?.finish_reason) out.finish = ch.finish_reason;
    if (onChunk) onChunk(c, out);
  }
  return out;
}

// One series of GET /metrics (Prometheus text) as a number; NaN when absent.
export async function metric(url, name, { signal } = {}) {
  const text = await (await fetch(`${url}/metrics`, { signal })).text();
  const m = text.match(new RegExp(`^${name} (\\S+)$`, "m"));
  return m ? Number(m[1]) : NaN;
}

// Whether the server runs the ASan build (libasan is mapped): there freed
// memory waits in a quarantine, so RSS is not the program's to bound.
export function sanitized(pid) {
  return fs.readFileSync(`/proc/${pid}/maps`, "utf8").includes("libasan");
}

export function rssKiB(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
  return Number(m[1]);
}
