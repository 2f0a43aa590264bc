// The server's connections against clients that are slow, idle, half-open,
// pipelining or too many (issue 30, "a server that cannot be starved"), its
// port and --host checks, the Bearer scheme in any case and the prompt cap
// while tokenizing. Raw sockets (node:net) speak HTTP/1.1 byte by byte where
// the point is the bytes; the official openai client where it is the API.
// Bounded: every wait has a deadline; attackers are destroyed at the end.
import nodeTest, { after, before } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { spawn } from "node:child_process";
import { K3_RUN, metric, modelDir, postJson, startServer } from "./serve_fixture.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const test = (name, fn) => nodeTest(name, { timeout: 60000 }, fn);  // a stuck server fails, never hangs

function portOf(url) {
  return Number(new URL(url).port);
}

function connect(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

// Writes `parts`, optionally half-closes, then collects everything until the
// server closes (or `ms` pass). Returns the bytes as latin1 text.
async function exchange(port, parts, { halfClose = false, ms = 8000 } = {}) {
  const s = await connect(port);
  let data = "";
  let closedByServer = false;
  const done = new Promise((resolve) => {
    s.on("data", (d) => { data += d.toString("latin1"); });
    s.on("end", () => { closedByServer = true; resolve(); });
    s.on("error", () => resolve());
    s.on("close", () => resolve());
    setTimeout(resolve, ms);
  });
  for (const p of parts) s.write(p);
  if (halfClose) s.end();
  await done;
  s.destroy();
  return { data, closedByServer };
}

// Splits HTTP/1.1 responses written back to back (Content-Length or chunked bodies).
function parseResponses(text) {
  const out = [];
  let pos = 0;
  while (pos < text.length) {
    const headEnd = text.indexOf("\r\n\r\n", pos);
    if (headEnd < 0) break;
    const lines = text.slice(pos, headEnd).split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(":");
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    pos = headEnd + 4;
    let body = "";
    if (status >= 100 && status < 200) {
      // interim: no body
    } else if (headers["transfer-encoding"] === "chunked") {
      for (;;) {
        const eol = text.indexOf("\r\n", pos);
        const size = parseInt(text.slice(pos, eol), 16);
        pos = eol + 2;
        if (size === 0) { pos += 2; break; }
        body += text.slice(pos, pos + size);
        pos += size + 2;
      }
    } else {
      const n = Number(headers["content-length"] ?? 0);
      body = text.slice(pos, pos + n);
      pos += n;
    }
    out.push({ status, headers, body });
  }
  return out;
}

// /metrics must answer within 5 s whatever the attackers hold.
const metricSoon = (url, name) => metric(url, name, { signal: AbortSignal.timeout(5000) });

// k3-run --serve with these flags, expected to refuse at once: { code, stderr }.
function refusedStart(args) {
  return new Promise((resolve) => {
    const p = spawn(K3_RUN, [modelDir(), "--serve", "--threads", "1", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    p.stderr.on("data", (d) => { stderr += d; });
    const killer = setTimeout(() => p.kill("SIGKILL"), 20000);
    p.on("exit", (code) => { clearTimeout(killer); resolve({ code, stderr }); });
  });
}

let srv, port;
before(async () => {
  srv = await startServer(["--ctx", "256"]);
  port = portOf(srv.url);
});
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, "clean exit on SIGTERM");
});

// The prompt serve_api_test shows runs to max_tokens on this model.
const hello = [{ role: "user", content: "Hello there" }];
const chatBody = (extra = {}) => JSON.stringify({ messages: hello, max_tokens: 2,
  temperature: 0, chat_template_kwargs: { thinking: false }, ...extra });
const post = (path, body, extraHeaders = "") =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`;

test("50 connections sending a header byte per second and 200 idle ones: /health and a chat answer within 1 s", async () => {
  const idle = [], slow = [];
  try {
    for (let i = 0; i < 200; ++i) idle.push(await connect(port));
    for (let i = 0; i < 50; ++i) slow.push(await connect(port));
    const header = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + "a".repeat(64);
    let sent = 0;
    const drip = setInterval(() => { for (const s of slow) s.write(header[sent % header.length]); ++sent; }, 1000);
    for (const s of slow) s.write(header[0]);
    ++sent;
    await sleep(2500);  // every slow client is mid-request, every idle one connected
    try {
      assert.ok((await metricSoon(srv.url, "k3_connections_open")) >= 250, "the attackers' connections are open");
      let t0 = Date.now();
      const h = await fetch(`${srv.url}/health`, { signal: AbortSignal.timeout(5000) });
      assert.equal(h.status, 200);
      const healthMs = Date.now() - t0;
      t0 = Date.now();
      const r = await srv.client({ timeout: 5000 }).chat.completions.create({ model: "k3", messages: hello,
        max_tokens: 2, temperature: 0, chat_template_kwargs: { thinking: false } });
      const chatMs = Date.now() - t0;
      assert.equal(r.object, "chat.completion");
      assert.ok(r.usage.completion_tokens >= 1);
      console.log(`# with 250 attackers: /health ${healthMs} ms, chat ${chatMs} ms`);
      assert.ok(healthMs < 1000, `/health took ${healthMs} ms`);
      assert.ok(chatMs < 1000, `the chat answer took ${chatMs} ms`);
      assert.ok(slow.every((s) => !s.destroyed && s.readyState === "open"), "the slow clients are still being read");
    } finally {
      clearInterval(drip);
    }
  } finally {
    for (const s of [...idle, ...slow]) s.destroy();
  }
});

test("--port already in use: exit 2 with one line; the first server keeps answering", async () => {
  const { code, stderr } = await refusedStart(["--port", String(port)]);
  assert.equal(code, 2, stderr);
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0], new RegExp(`127\\.0\\.0\\.1:${port} is already in use`));
  for (let i = 0; i < 4; ++i) assert.equal((await fetch(`${srv.url}/health`)).status, 200);
});

test("--host must be an IP address (a 127.-prefixed name is not loopback)", async () => {
  for (const host of ["127.example.com", "localhost", "127.0.0.1.nip.io"]) {
    const { code, stderr } = await refusedStart(["--host", host, "--port", "0"]);
    assert.equal(code, 2, stderr);
    assert.equal(stderr.trim().split("\n").length, 1, stderr);
    assert.match(stderr, new RegExp(`--host ${host.replace(/\./g, "\\.")} is not an IP address`));
  }
});

test("pipelined requests are answered in order on one connection", async () => {
  const tok = JSON.stringify({ content: "Hello" });
  const { data, closedByServer } = await exchange(port, [
    "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + post("/tokenize", tok) + post("/v1/chat/completions", chatBody()) +
      "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  ]);
  assert.ok(closedByServer, "closed after the request that asked for it");
  const rs = parseResponses(data);
  assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200], data.slice(0, 400));
  assert.deepEqual(JSON.parse(rs[0].body), { status: "ok" });
  assert.deepEqual(JSON.parse(rs[1].body).tokens, (await postJson(`${srv.url}/tokenize`, tok)).json.tokens);
  assert.equal(JSON.parse(rs[2].body).object, "chat.completion");
  assert.equal(JSON.parse(rs[3].body).object, "list");
  assert.equal(rs[3].headers.connection, "close");
});

test("a client that half-closes after its request still gets the whole answer (non-stream and stream)", async () => {
  const whole = await exchange(port, [post("/v1/chat/completions", chatBody())], { halfClose: true });
  const final = parseResponses(whole.data).filter((r) => r.status >= 200);
  assert.equal(final.length, 1, whole.data);
  assert.equal(final[0].status, 200);
  const body = JSON.parse(final[0].body);
  assert.equal(body.object, "chat.completion");
  assert.ok(body.usage.completion_tokens >= 1);
  assert.ok(body.choices[0].finish_reason, "finished");
  assert.ok(whole.closedByServer);

  const streamed = await exchange(port, [post("/v1/chat/completions", chatBody({ stream: true }))], { halfClose: true });
  const [sse] = parseResponses(streamed.data).filter((r) => r.status >= 200);
  assert.equal(sse.status, 200);
  assert.match(sse.headers["content-type"], /^text\/event-stream/);
  const events = sse.body.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
  assert.equal(events.at(-1), "[DONE]");
  assert.ok(JSON.parse(events.at(-2)).choices[0].finish_reason, "the last chunk before [DONE] finishes");
});

test("Expect: 100-continue is answered once, then the request", async () => {
  const s = await connect(port);
  const body = JSON.stringify({ content: "Hello" });
  let data = "";
  s.on("data", (d) => { data += d.toString("latin1"); });
  s.write(`POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
    "Expect: 100-continue\r\nConnection: close\r\n\r\n");
  for (let i = 0; i < 100 && !data.includes("\r\n\r\n"); ++i) await sleep(20);
  assert.equal(data, "HTTP/1.1 100 Continue\r\n\r\n", "100 Continue before the body is sent");
  s.write(body);
  await new Promise((r) => { s.on("end", r); setTimeout(r, 5000); });
  s.destroy();
  const rs = parseResponses(data);
  assert.deepEqual(rs.map((r) => r.status), [100, 200]);
  assert.ok(Array.isArray(JSON.parse(rs[1].body).tokens));
});

test("a chunked request body is read like a sized one; a body over the limit is refused before it is sent", async () => {
  const body = JSON.stringify({ content: "Hello there" });
  const chunked = `POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n` +
    `Connection: close\r\n\r\n${(5).toString(16)}\r\n${body.slice(0, 5)}\r\n${(body.length - 5).toString(16)}\r\n` +
    `${body.slice(5)}\r\n0\r\n\r\n`;
  const [r] = parseResponses((await exchange(port, [chunked])).data);
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body).tokens, (await postJson(`${srv.url}/tokenize`, body)).json.tokens);

  const big = await exchange(port, ["POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n{"]);
  const [t] = parseResponses(big.data);
  assert.equal(t.status, 413);
  assert.equal(t.headers.connection, "close");
  assert.match(JSON.parse(t.body).error.message, /exceeds 8388608 bytes/);
  assert.ok(big.closedByServer);
});

test("a prompt past --ctx is refused while it is being tokenized, naming the context", async () => {
  const words = "lorem ipsum dolor sit amet ".repeat(200000);  // 5.4 MB, about a million tokens
  const client = srv.client();
  for (const call of [
    () => client.chat.completions.create({ model: "k3", messages: [{ role: "user", content: words }], max_tokens: 2 }),
    () => client.completions.create({ model: "k3", prompt: words, max_tokens: 2 }),
    () => client.completions.create({ model: "k3", prompt: "x".repeat(5000000), max_tokens: 2 }),  // one huge piece
  ]) {
    await assert.rejects(call(), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.code, "context_length_exceeded");
      assert.match(e.message, /context is 256 tokens \(--ctx\); the prompt has more than 255 tokens/);
      return true;
    });
  }
  const tk = await postJson(`${srv.url}/tokenize`, { content: words });
  assert.equal(tk.status, 400);
  assert.equal(tk.json.error.code, "context_length_exceeded");
  assert.match(tk.json.error.message, /'content' has more than 256 tokens/);
  // A prompt that fits still runs.
  const ok = await client.completions.create({ model: "k3", prompt: "lorem ipsum ".repeat(20), max_tokens: 2 });
  assert.equal(ok.usage.completion_tokens, 2);
});

test("the connection cap answers 503 and closes; slow and idle clients are timed out and counted", async () => {
  const small = await startServer(["--max-connections", "6", "--request-timeout", "2", "--keep-alive-timeout", "1"]);
  const p = portOf(small.url);
  const held = [];
  try {
    for (let i = 0; i < 6; ++i) held.push(await connect(p));
    await sleep(200);
    const refused = await exchange(p, ["GET /health HTTP/1.1\r\nHost: x\r\n\r\n"]);
    const [r] = parseResponses(refused.data);
    assert.equal(r?.status, 503, refused.data);
    assert.equal(r.headers.connection, "close");
    assert.equal(r.headers["retry-after"], "1");
    assert.match(JSON.parse(r.body).error.message, /limit of 6 open connections \(--max-connections\)/);
    assert.ok(refused.closedByServer);
  } finally {
    for (const s of held) s.destroy();
  }
  await sleep(300);
  try {
    // A request line and no more: 408 once --request-timeout passes, then the close.
    const t0 = Date.now();
    const slow = await exchange(p, ["GET /health HTTP/1.1\r\nHost: x\r\n"], { ms: 6000 });
    const waited = Date.now() - t0;
    const [t] = parseResponses(slow.data);
    assert.equal(t?.status, 408, slow.data);
    assert.match(JSON.parse(t.body).error.message, /not complete within 2 s \(--request-timeout\)/);
    assert.ok(slow.closedByServer && waited >= 1900, `closed after ${waited} ms`);
    // An idle keep-alive connection is closed after --keep-alive-timeout, its answer intact.
    const idle = await exchange(p, ["GET /health HTTP/1.1\r\nHost: x\r\n\r\n"], { ms: 5000 });
    const [h] = parseResponses(idle.data);
    assert.equal(h.status, 200);
    assert.match(h.headers["keep-alive"], /timeout=1/);
    assert.ok(idle.closedByServer);
    assert.equal(await metricSoon(small.url, "k3_connections_refused_total"), 1);
    assert.equal(await metricSoon(small.url, "k3_requests_timed_out_total"), 1);
    assert.ok((await metricSoon(small.url, "k3_connections_idle_closed_total")) >= 1);
    assert.equal(await metricSoon(small.url, "k3_connections_limit"), 6);
  } finally {
    await small.stop();
  }
});

test("Bearer is matched in any letter case; the key is not", async () => {
  const keyed = await startServer(["--api-key", "Sk-Key"]);
  try {
    const models = (auth) => fetch(`${keyed.url}/v1/models`, { headers: auth ? { authorization: auth } : {} });
    for (const auth of ["Bearer Sk-Key", "bearer Sk-Key", "BEARER Sk-Key", "bEaReR  Sk-Key"])
      assert.equal((await models(auth)).status, 200, auth);
    for (const auth of [null, "Bearer sk-key", "Basic Sk-Key", "BearerSk-Key", "Sk-Key"])
      assert.equal((await models(auth)).status, 401, String(auth));
  } finally {
    await keyed.stop();
  }
});
