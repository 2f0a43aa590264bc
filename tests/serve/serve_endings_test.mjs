// Honest endings of `k3-run --serve`: a generation cut by SIGTERM ends with an
// error event (stream) or a 503 (non-stream), never a finish_reason; output
// that leaves the XTML grammar ends with finish_reason "malformed" (the
// untrained tiny model writes a special token the grammar does not allow
// within a few tokens); every 4xx/5xx request's log line gives its reason.
// Bounded: each server is killed if it has not exited 30 s after SIGTERM.
import test from "node:test";
import assert from "node:assert/strict";
import { postJson, startServer } from "./serve_fixture.mjs";

const long = { model: "k3", prompt: "Once upon a time", max_tokens: 100000, temperature: 0 };

async function stopped(srv) {
  const timer = setTimeout(() => srv.proc.kill("SIGKILL"), 30_000);
  const r = await srv.stop();
  clearTimeout(timer);
  return r;
}

// Reads an SSE response until it ends; calls onFirst() after the first event.
async function readEvents(res, onFirst) {
  const events = [];
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const line = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!line.startsWith("data: ")) continue;
      events.push(line === "data: [DONE]" ? "[DONE]" : JSON.parse(line.slice(6)));
      if (events.length === 1) onFirst();
    }
  }
  return events;
}

test("SIGTERM mid-stream: the stream ends with an error event, no finish_reason", async () => {
  const srv = await startServer(["--ctx", "100000"]);
  const res = await fetch(`${srv.url}/v1/completions`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...long, stream: true }),
  });
  assert.equal(res.status, 200);
  let exit;
  const events = await readEvents(res, () => { exit = stopped(srv); });
  const { code } = await exit;
  assert.equal(code, 0, "clean exit");
  const texts = events.filter((e) => e.choices?.length && e.choices[0].text);
  assert.ok(texts.length >= 1, "text arrived before the signal");
  const finishes = events.filter((e) => e.choices?.[0]?.finish_reason);
  assert.deepEqual(finishes, [], "no finish_reason: the answer was cut");
  const errors = events.filter((e) => e.error);
  assert.equal(errors.length, 1, JSON.stringify(events.slice(-3)));
  assert.equal(errors[0].error.type, "service_unavailable");
  assert.match(errors[0].error.message, /shutting down/);
  assert.match(srv.log(), /POST \/v1\/completions 200 .*error: the server is shutting down/);
});

test("SIGTERM during a non-stream generation: a 503, not a finished answer", async () => {
  const srv = await startServer(["--ctx", "100000"]);
  const pending = postJson(`${srv.url}/v1/completions`, long);
  // A second in, the engine is decoding it (100000 tokens take minutes on the tiny model).
  await new Promise((r) => setTimeout(r, 1000));
  const exit = stopped(srv);
  const r = await pending;
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json.error.type, "service_unavailable");
  assert.match(r.json.error.message, /shutting down/);
  assert.equal((await exit).code, 0);
  assert.match(srv.log(), /POST \/v1\/completions 503 .*shutting down/);
});

test("output off the XTML grammar: finish_reason malformed (stream and not), logged with the parser's reason", async () => {
  const srv = await startServer(["--ctx", "2048"]);
  try {
    const body = { model: "k3", messages: [{ role: "user", content: "Hello there" }], max_tokens: 1500, temperature: 0,
      chat_template_kwargs: { thinking: false } };
    const r = await postJson(`${srv.url}/v1/chat/completions`, body);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices[0].finish_reason, "malformed");
    assert.ok(r.json.usage.completion_tokens < 1500, "ended before the limit");
    const res = await fetch(`${srv.url}/v1/chat/completions`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body, stream: true }),
    });
    const events = await readEvents(res, () => {});
    const finishes = events.filter((e) => e.choices?.[0]?.finish_reason).map((e) => e.choices[0].finish_reason);
    assert.deepEqual(finishes, ["malformed"]);
    assert.match(srv.log(), /POST \/v1\/chat\/completions 200 .*finish=malformed: model output off the XTML grammar: \S/);
  } finally {
    await stopped(srv);
  }
});

test("every 4xx/5xx log line gives its reason", async () => {
  const srv = await startServer(["--ctx", "256", "--api-key", "sekrit"]);
  try {
    const auth = { authorization: "Bearer sekrit" };
    await postJson(`${srv.url}/v1/chat/completions`, { messages: [{ role: "user", content: "x" }], top_k: -5 }, auth);
    await postJson(`${srv.url}/v1/chat/completions`, { messages: [] });
    await postJson(`${srv.url}/v1/completions`, { prompt: "word ".repeat(400) }, auth);
    await fetch(`${srv.url}/v1/nowhere`, { headers: auth });
    await fetch(`${srv.url}/v1/models`, { method: "OPTIONS" });
    await new Promise((r) => setTimeout(r, 200));
    const lines = srv.log().split("\n").filter((l) => / [45]\d\d /.test(l) && l.startsWith("[k3-serve]"));
    assert.ok(lines.length >= 5, srv.log());
    for (const l of lines) assert.match(l, / ms — \S/, `reason on: ${l}`);
    assert.match(srv.log(), /400 .*top_k/);
    assert.match(srv.log(), /401 .*API key/);
    assert.match(srv.log(), /400 .*context is 256 tokens/);
    assert.match(srv.log(), /404 .*no route/);
  } finally {
    await stopped(srv);
  }
});
