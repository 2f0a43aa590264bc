// The OpenAI API of `k3-run --serve`, through the official `openai` npm client
// against a live server on a container built in the test: models, chat
// (non-stream and stream), usage and cached_tokens, stop, max_tokens,
// abort mid-stream, completions, errors as APIErrors, and greedy output equal
// to `k3-run --prompt-ids` on the same rendered prompt.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { APIError, K3_RUN, SOURCE_DIR, metric, modelDir, postJson, startServer, streamChat, tokenize } from "./serve_fixture.mjs";

let srv, client;
before(async () => {
  srv = await startServer(["--model-name", "k3-test", "--ctx", "1024"]);
  client = srv.client();
});
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, "clean exit on SIGTERM");
});

const noThink = { chat_template_kwargs: { thinking: false } };
const hello = [{ role: "user", content: "Hello there" }];
const greedy = (messages, n, extra = {}) =>
  ({ model: "k3-test", messages, max_tokens: n, temperature: 0, ...noThink, ...extra });

test("GET / serves the page embedded at build time, byte for byte", async () => {
  const res = await fetch(`${srv.url}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/html/);
  const page = Buffer.from(await res.arrayBuffer());
  assert.ok(page.equals(fs.readFileSync(path.join(SOURCE_DIR, "libs/k3/serve/web/index.html"))));
});

test("health and models.list", async () => {
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ["k3-test"]);
});

// The untrained tiny model soon writes a special token the XTML grammar does
// not allow there, which ends the message (finish_reason malformed, logged); its
// first two tokens are text, so max_tokens 2 ends on the limit.
test("non-stream chat: message, max_tokens -> finish_reason length, usage = the rendered prompt", async () => {
  const r = await client.chat.completions.create(greedy(hello, 2));
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.completion_tokens, 2);
  const ids = await tokenize(srv.url, { messages: hello, ...noThink });
  assert.equal(r.usage.prompt_tokens, ids.length);
  assert.equal(r.usage.total_tokens, ids.length + 2);
  assert.ok(r.choices[0].message.content.length > 0);
  const longer = await client.chat.completions.create(greedy(hello, 50));
  assert.ok(longer.choices[0].message.content.startsWith(r.choices[0].message.content));
  // The untrained model leaves the XTML grammar within 50 tokens: said as such.
  assert.equal(longer.choices[0].finish_reason, "malformed");
});

test("stream chat: role first, same text as non-stream, final finish_reason, usage chunk", async () => {
  for (const thinking of [false, true]) {
    const p = greedy(hello, 12, { chat_template_kwargs: { thinking } });
    const ref = await client.chat.completions.create(p);
    const s = await streamChat(client, { ...p, stream_options: { include_usage: true } });
    assert.equal(s.chunks[0].choices[0].delta.role, "assistant");
    assert.equal(s.content, ref.choices[0].message.content ?? "");
    assert.equal(s.reasoning, ref.choices[0].message.reasoning_content ?? "");
    assert.equal(s.finish, ref.choices[0].finish_reason);
    assert.equal(s.usage.prompt_tokens, ref.usage.prompt_tokens);
    assert.equal(s.usage.completion_tokens, ref.usage.completion_tokens);
    assert.equal(s.usage.prompt_tokens_details.cached_tokens, ref.usage.prompt_tokens, "the same prompt again: all reused");
    if (thinking) assert.ok(s.reasoning.length > 0, "thinking on: the reply starts in reasoning_content");
  }
  const ref = await client.chat.completions.create(greedy(hello, 2));
  const s = await streamChat(client, { ...greedy(hello, 2), stream_options: { include_usage: true } });
  assert.equal(s.finish, "length");
  assert.equal(s.usage.completion_tokens, 2);
  assert.equal(s.usage.prompt_tokens, ref.usage.prompt_tokens);
  assert.equal(s.chunks.at(-1).choices.length, 0, "the usage chunk has no choices");
  // Without include_usage there is no usage chunk.
  const s2 = await streamChat(client, greedy(hello, 3));
  assert.equal(s2.usage, null);
});

test("second turn reuses the first turn's state: cached_tokens", async () => {
  const first = [{ role: "user", content: "Tell me about turn reuse" }];
  const r1 = await client.chat.completions.create(greedy(first, 6, { chat_template_kwargs: { thinking: true } }));
  const m = r1.choices[0].message;
  const second = [...first, { role: "assistant", content: m.content, reasoning_content: m.reasoning_content },
    { role: "user", content: "And then?" }];
  const r2 = await client.chat.completions.create(greedy(second, 4, { chat_template_kwargs: { thinking: true } }));
  const cached = r2.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached >= r1.usage.prompt_tokens, `cached ${cached} ≥ first prompt ${r1.usage.prompt_tokens}`);
  assert.ok(cached < r2.usage.prompt_tokens);
});

test("stop strings: matched across tokens, never emitted, finish_reason stop", async () => {
  const base = { model: "k3-test", prompt: "Once upon a time", max_tokens: 40, temperature: 0 };
  const ref = (await client.completions.create(base)).choices[0].text;
  // Stops that span token boundaries: pieces of the greedy text, 2 to 6 characters, at several offsets.
  let checked = 0;
  for (const [start, len] of [[5, 2], [9, 4], [14, 6], [20, 3]]) {
    const stop = ref.slice(start, start + len);
    if (stop.includes("\ufffd")) continue;  // a byte the JSON writer replaced: not the bytes the server matches
    const want = ref.slice(0, ref.indexOf(stop));
    const r = await client.completions.create({ ...base, stop: [stop, "never-in-the-output-zz"] });
    assert.equal(r.choices[0].text, want, `stop ${JSON.stringify(stop)}`);
    assert.equal(r.choices[0].finish_reason, "stop");
    const st = await client.completions.create({ ...base, stop, stream: true });
    let text = "", finish = null;
    for await (const c of st) {
      text += c.choices[0]?.text ?? "";
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, want);
    assert.equal(finish, "stop");
    ++checked;
  }
  assert.ok(checked >= 2, "enough plain-text stops in the greedy output");
  // Chat: the same matcher on the content channel.
  const chatRef = (await client.chat.completions.create(greedy(hello, 2))).choices[0].message.content;
  const r = await client.chat.completions.create(greedy(hello, 2, { stop: chatRef.slice(-1) }));
  assert.equal(r.choices[0].message.content, chatRef.slice(0, chatRef.indexOf(chatRef.slice(-1))));
  assert.equal(r.choices[0].finish_reason, "stop");
});

test("abort mid-stream stops the generation; the next request is served at once", async () => {
  const before = await metric(srv.url, "k3_generations_cancelled_total");
  const ac = new AbortController();
  let seen = 0;
  // The openai client ends the iteration quietly on abort (or throws an AbortError).
  let finish = null;
  try {
    const st = await client.completions.create({ model: "k3-test", prompt: "Once upon a time", max_tokens: 900,
      temperature: 0, stream: true }, { signal: ac.signal });
    for await (const c of st) {
      finish = c.choices[0]?.finish_reason ?? finish;
      if (++seen === 3) ac.abort();
    }
  } catch (e) {
    assert.equal(e.name, "AbortError");
  }
  assert.equal(finish, null, "the stream did not run to its end");
  const t0 = Date.now();
  const r = await client.chat.completions.create(greedy(hello, 2));
  assert.equal(r.choices[0].finish_reason, "length");
  assert.ok(Date.now() - t0 < 3000, "not stuck behind the aborted generation");
  let cancelled = before;
  for (let i = 0; i < 40 && cancelled === before; ++i) {
    await new Promise((res) => setTimeout(res, 50));
    cancelled = await metric(srv.url, "k3_generations_cancelled_total");
  }
  assert.equal(cancelled, before + 1);
  // A non-stream request whose client goes away is cancelled too (the server polls the socket).
  const ac2 = new AbortController();
  setTimeout(() => ac2.abort(), 60);
  await assert.rejects(client.completions.create({ model: "k3-test", prompt: "Once upon a time", max_tokens: 900,
    temperature: 0 }, { signal: ac2.signal }));
  for (let i = 0; i < 40 && cancelled === before + 1; ++i) {
    await new Promise((res) => setTimeout(res, 50));
    cancelled = await metric(srv.url, "k3_generations_cancelled_total");
  }
  assert.equal(cancelled, before + 2, "the non-stream generation stopped early");
});

// Values are checked against k3-run --logits-out in serve_logprobs_test.py;
// here the shape the official client sees, and greedy's defining relation:
// the sampled token is the most likely one.
test("logprobs through the official client: chat entries with bytes, completions' arrays, stream = whole", async () => {
  const p = greedy(hello, 4, { logprobs: true, top_logprobs: 2 });
  const r = await client.chat.completions.create(p);
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const e of content) {
    assert.equal(typeof e.token, "string");
    assert.ok(Array.isArray(e.bytes) && e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
    if (!e.token.includes("\ufffd")) assert.equal(Buffer.from(e.bytes).toString("utf8"), e.token);
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 2);
    assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob);
    assert.equal(e.logprob, e.top_logprobs[0].logprob, "greedy samples the most likely token");
  }
  const s = await streamChat(client, p);
  const streamed = s.chunks.flatMap((c) => c.choices?.[0]?.logprobs?.content ?? []);
  assert.deepEqual(streamed, content);
  assert.equal((await client.chat.completions.create(greedy(hello, 2))).choices[0].logprobs, null, "not asked: null");

  const comp = await client.completions.create({ model: "k3-test", prompt: "Once upon a time", max_tokens: 5, temperature: 0, logprobs: 3 });
  const lp = comp.choices[0].logprobs;
  assert.equal(lp.tokens.length, 5);
  assert.equal(lp.token_logprobs.length, 5);
  assert.equal(lp.top_logprobs.length, 5);
  assert.deepEqual(lp.text_offset.slice(0, 1), [0]);
  for (let i = 0; i < 5; ++i) {
    assert.ok(Object.keys(lp.top_logprobs[i]).length <= 4, "the 3 best and the sampled one");
    assert.equal(Math.max(...Object.values(lp.top_logprobs[i])), lp.token_logprobs[i]);
    if (i) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + [...lp.tokens[i - 1]].length);
  }
});

test("completions: prompt text and the same prompt as ids give the same greedy text", async () => {
  const a = await client.completions.create({ model: "k3-test", prompt: "Once upon a time", max_tokens: 10, temperature: 0 });
  assert.equal(a.object, "text_completion");
  assert.equal(a.choices[0].finish_reason, "length");
  assert.equal(a.usage.completion_tokens, 10);
  const ids = await tokenize(srv.url, { content: "Once upon a time" });
  // Text prompts get the config's BOS first (as `k3-run -p`): one more id than /tokenize.
  assert.ok(a.usage.prompt_tokens === ids.length || a.usage.prompt_tokens === ids.length + 1);
});

test("greedy through the server equals k3-run --prompt-ids on the rendered prompt", async () => {
  const ids = await tokenize(srv.url, { messages: hello, ...noThink });
  const run = JSON.parse(execFileSync(K3_RUN, [modelDir(), "--prompt-ids", ids.join(","), "-n", "16", "--json",
    "--threads", "1", "--temp", "0"]).toString());
  assert.deepEqual(run.prompt_ids, ids);
  const viaApi = await client.completions.create({ model: "k3-test", prompt: ids, max_tokens: 16, temperature: 0 });
  const stopAt = run.stopped ? run.tokens.length - 1 : run.tokens.length;
  const expected = await postJson(`${srv.url}/detokenize`, { tokens: run.tokens.slice(0, stopAt) });
  assert.equal(viaApi.choices[0].text, expected.json.content);
  assert.equal(viaApi.usage.completion_tokens, run.tokens.length);
});

test("errors are APIErrors with OpenAI's status codes and envelope", async () => {
  const expectApiError = async (p, status, code) => {
    await assert.rejects(p, (e) => {
      assert.ok(e instanceof APIError, String(e));
      assert.equal(e.status, status);
      if (code) assert.equal(e.code, code);
      assert.equal(typeof e.message, "string");
      return true;
    });
  };
  await expectApiError(client.chat.completions.create({ ...greedy(hello, 2), n: 2 }), 400, "unsupported_parameter");
  await expectApiError(client.chat.completions.create({ ...greedy(hello, 2), logprobs: true, top_logprobs: 21 }), 400);
  await expectApiError(client.chat.completions.create({ ...greedy(hello, 2), temperature: 7 }), 400);
  const long = [{ role: "user", content: "word ".repeat(3000) }];
  await expectApiError(client.chat.completions.create(greedy(long, 2)), 400, "context_length_exceeded");
  await expectApiError(client.completions.create({ model: "k3-test", prompt: [1, 2, 99999999], max_tokens: 2 }), 400);
  const r = await postJson(`${srv.url}/v1/nowhere`, {});
  assert.equal(r.status, 404);
  assert.ok(r.json.error.message.includes("/v1/nowhere"));
});
