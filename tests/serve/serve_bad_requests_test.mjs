// A table of bad requests, each answered 400 (413 for the body limit, 401
// without the key) with OpenAI's envelope and a one-line message; the server
// stays healthy after all of them. Also: a non-loopback --host without a key
// refuses to start, CORS is off unless asked.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { K3_RUN, modelDir, postJson, startServer } from "./serve_fixture.mjs";

let srv;
const KEY = "sk-test-0123456789";
before(async () => {
  srv = await startServer(["--api-key", KEY, "--ctx", "512", "--cors", "http://example.test"]);
});
after(async () => {
  await srv.stop();
});

const auth = { authorization: `Bearer ${KEY}` };
const user = [{ role: "user", content: "hi" }];
const deep = (n) => "[".repeat(n) + "]".repeat(n);
const CHAT = "/v1/chat/completions", COMP = "/v1/completions";

const table = [
  ["broken JSON", CHAT, '{"messages": [', "JSON"],
  ["not an object", CHAT, "[1,2]", "object"],
  ["empty body", CHAT, "", "JSON"],
  ["no messages", CHAT, { model: "k3" }, "messages"],
  ["empty messages", CHAT, { messages: [] }, "messages"],
  ["messages not an array", CHAT, { messages: "hi" }, "messages"],
  ["unknown role", CHAT, { messages: [{ role: "wizard", content: "x" }] }, "messages[0]"],
  ["content wrong type", CHAT, { messages: [{ role: "user", content: 5 }] }, "messages[0]"],
  ["image content", CHAT, { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x/y.png" } }] }] }, "messages[0]"],
  ["audio", CHAT, { messages: user, audio: { voice: "alloy", format: "wav" } }, "audio"],
  ["modalities audio", CHAT, { messages: user, modalities: ["text", "audio"] }, "modalities"],
  ["n > 1", CHAT, { messages: user, n: 3 }, "'n'"],
  ["logprobs a number in chat", CHAT, { messages: user, logprobs: 2 }, "logprobs"],
  ["top_logprobs without logprobs", CHAT, { messages: user, top_logprobs: 2 }, "top_logprobs"],
  ["top_logprobs > 20", CHAT, { messages: user, logprobs: true, top_logprobs: 21 }, "top_logprobs"],
  ["completion logprobs a boolean", COMP, { prompt: "x", logprobs: true }, "logprobs"],
  ["temperature string", CHAT, { messages: user, temperature: "hot" }, "temperature"],
  ["temperature huge", CHAT, { messages: user, temperature: 1e308 }, "temperature"],
  ["max_tokens float", CHAT, { messages: user, max_tokens: 1.5 }, "max_tokens"],
  ["max_tokens zero", CHAT, { messages: user, max_tokens: 0 }, "max_tokens"],
  ["max_tokens negative huge", CHAT, '{"messages":[{"role":"user","content":"hi"}],"max_tokens":-99999999999999999999}', "number"],
  ["seed float", CHAT, { messages: user, seed: 0.5 }, "seed"],
  ["top_p > 1", CHAT, { messages: user, top_p: 1.5 }, "top_p"],
  ["top_k below -1", CHAT, { messages: user, top_k: -2 }, "top_k"],
  ["five stops", CHAT, { messages: user, stop: ["a", "b", "c", "d", "e"] }, "stop"],
  ["empty stop", CHAT, { messages: user, stop: [""] }, "stop"],
  ["stop number", CHAT, { messages: user, stop: 7 }, "stop"],
  ["stream not bool", CHAT, { messages: user, stream: "yes" }, "stream"],
  ["stream_options without stream", CHAT, { messages: user, stream_options: { include_usage: true } }, "stream"],
  ["unknown field", CHAT, { messages: user, frobnicate: 1 }, "frobnicate"],
  ["presence_penalty > 2", CHAT, { messages: user, presence_penalty: 2.5 }, "presence_penalty"],
  ["repetition_penalty 0", CHAT, { messages: user, repetition_penalty: 0 }, "repetition_penalty"],
  ["min_p > 1", CHAT, { messages: user, min_p: 2 }, "min_p"],
  ["logit_bias id outside the vocabulary", CHAT, { messages: user, logit_bias: { 99999999: 1 } }, "vocabulary"],
  ["logit_bias > 100", CHAT, { messages: user, logit_bias: { 5: 150 } }, "logit_bias"],
  ["ignore_eos true (vLLM)", CHAT, { messages: user, ignore_eos: true }, "ignore_eos"],
  ["tools not an array", CHAT, { messages: user, tools: {} }, "tools"],
  ["tool without function", CHAT, { messages: user, tools: [{ type: "function" }] }, "tools[0]"],
  ["tool with bad name", CHAT, { messages: user, tools: [{ type: "function", function: { name: 5 } }] }, "tools[0]"],
  ["tool_choice unknown tool", CHAT, { messages: user, tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } }], tool_choice: { type: "function", function: { name: "g" } } }, "tool_choice"],
  ["tool message without id", CHAT, { messages: [...user, { role: "tool", content: "x" }] }, "messages[1]"],
  ["reasoning_effort unknown", CHAT, { messages: user, reasoning_effort: "extreme" }, "reasoning_effort"],
  ["deep nesting", CHAT, `{"messages":[{"role":"user","content":"hi"}],"metadata":${deep(200)}}`, "nested"],
  ["invalid UTF-8", CHAT, Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]), "UTF-8"],
  ["context exceeded", CHAT, { messages: [{ role: "user", content: "many words ".repeat(600) }] }, "context"],
  ["completion prompt missing", COMP, { max_tokens: 2 }, "prompt"],
  ["completion prompt batch", COMP, { prompt: ["a", "b"] }, "prompt"],
  ["completion id out of vocab", COMP, { prompt: [1, 2, 1e9] }, "prompt"],
  ["completion negative id", COMP, { prompt: [1, -2] }, "prompt"],
  ["completion echo", COMP, { prompt: "x", echo: true }, "echo"],
  ["tokenize nothing", "/tokenize", {}, "content"],
  ["detokenize bad id", "/detokenize", { tokens: [1, 99999999] }, "vocabulary"],
];

test("bad requests: each a 400 with a one-line message in OpenAI's envelope", async () => {
  for (const [name, route, body, mention] of table) {
    const r = await postJson(`${srv.url}${route}`, body, auth);
    assert.equal(r.status, 400, `${name}: ${r.text}`);
    const e = r.json?.error;
    assert.ok(e, `${name}: envelope: ${r.text}`);
    assert.equal(e.type, "invalid_request_error", name);
    assert.ok(!e.message.includes("\n") && e.message.length > 0 && e.message.length < 400, `${name}: one line: ${e.message}`);
    assert.ok(e.message.toLowerCase().includes(mention.toLowerCase()), `${name}: '${e.message}' names ${mention}`);
    assert.ok("param" in e && "code" in e, name);
  }
  const health = await fetch(`${srv.url}/health`);
  assert.equal(health.status, 200);
  const ok = await postJson(`${srv.url}${CHAT}`, { messages: user, max_tokens: 2 }, auth);
  assert.equal(ok.status, 200, ok.text);
});

test("the body limit is 413 and the server stays up", async () => {
  const big = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(9 << 20) }] });
  const r = await postJson(`${srv.url}${CHAT}`, big, auth).catch(() => ({ status: 413 }));  // it may close early
  assert.equal(r.status, 413);
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
});

test("API key: 401 without or with a wrong key, in constant-time compare; health stays public", async () => {
  for (const h of [{}, { authorization: "Bearer sk-wrong" }, { authorization: `Bearer ${KEY}x` }, { authorization: KEY }]) {
    const r = await postJson(`${srv.url}${CHAT}`, { messages: user, max_tokens: 1 }, h);
    assert.equal(r.status, 401);
    assert.equal(r.json.error.type, "authentication_error");
  }
  const models = await fetch(`${srv.url}/v1/models`);
  assert.equal(models.status, 401);
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
  const client = srv.client({ apiKey: KEY });
  assert.equal((await client.models.list()).data.length, 1);
});

test("CORS: the configured origin only", async () => {
  const pre = await fetch(`${srv.url}${CHAT}`, { method: "OPTIONS" });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get("access-control-allow-origin"), "http://example.test");
  assert.match(pre.headers.get("access-control-allow-headers"), /Authorization/);
});

test("refuses to serve a non-loopback address without a key; CORS off by default", async () => {
  const r = spawnSync(K3_RUN, [modelDir(), "--serve", "--host", "0.0.0.0", "--port", "0"], { encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--api-key/);
  assert.equal(r.stderr.trim().split("\n").length, 1);
  const plain = await startServer();
  try {
    const res = await fetch(`${plain.url}/health`);
    assert.equal(res.headers.get("access-control-allow-origin"), null);
    assert.equal((await fetch(`${plain.url}/v1/models`, { method: "OPTIONS" })).status, 405);
  } finally {
    await plain.stop();
  }
});
