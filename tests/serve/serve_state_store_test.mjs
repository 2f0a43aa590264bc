// The conversation-state store through the API (docs/STATE_CACHE.md), with
// the official `openai` client:
// - conversations A, B, C interleaved (A B C A B C ...): every later turn
//   reuses ≥ 99 % of the previous turn's prompt + reply, also when the reply
//   re-tokenizes differently (checked: the text rendering of some reply is
//   not the ids the server fed);
// - a restart on the same --state-cache-dir: the next turn resumes from disk
//   (cached_tokens > 0) and answers exactly as a server with no cache;
// - RSS stays bounded by the flags over many requests.
// The model: the tiny container whose special tokens are never picked, so
// replies are plain text running to max_tokens.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { metric, rssKiB, sanitized, startServer, tokenize } from "./serve_fixture.mjs";
import { chattyTinyModel } from "./web_chat_model.mjs";

process.env.K3_SERVE_MODEL ??= chattyTinyModel();  // what serve_fixture's startServer runs

const tmp = fs.mkdtempSync(path.join(process.env.K3_TEST_TMP ?? os.tmpdir(), "state-store-"));
const servers = [];
async function start(args, options = {}) {
  const s = await startServer(["--ctx", "4096", ...args], options);
  servers.push(s);
  return s;
}
let plainServer;
before(async () => {
  // No reuse: the reference. It remembers only the ids of replies it
  // generated itself, so the histories below render there as text.
  plainServer = await start(["--state-cache-gb", "0"]);
});
after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  fs.rmSync(tmp, { recursive: true, force: true });
});

// An agent-sized system prompt (~170 tokens): turns are long enough that one
// token (the reply's last, sampled but not yet fed) is under 1 %.
const SYSTEM = Array.from({ length: 12 }, (_, i) => `Rule ${i + 1}: answer the user's question about topic ${i} precisely and briefly.`).join(" ");

function conversation(name, thinking) {
  return { name, thinking, messages: [{ role: "system", content: SYSTEM }] };
}

async function turn(client, conv, k) {
  conv.messages.push({ role: "user", content: `Conversation ${conv.name}, question ${k}: tell me more.` });
  const r = await client.chat.completions.create({
    model: "k3", messages: conv.messages, max_tokens: 24, temperature: 0,
    chat_template_kwargs: { thinking: conv.thinking },
  });
  const m = r.choices[0].message;
  conv.messages.push({ role: "assistant", content: m.content ?? "", ...(m.reasoning_content ? { reasoning_content: m.reasoning_content } : {}) });
  return r;
}

test("interleaved conversations each resume ≥ 99 % of their previous turn", async () => {
  const srv = await start(["--state-cache-dir", path.join(tmp, "interleaved")]);
  const client = srv.client();
  const convs = [conversation("A", false), conversation("B", true), conversation("C", false)];
  const last = new Map();
  let retokenized = 0;
  for (let k = 1; k <= 4; ++k) {
    for (const c of convs) {
      const r = await turn(client, c, k);
      const cached = r.usage.prompt_tokens_details.cached_tokens;
      if (last.has(c.name)) {
        const prev = last.get(c.name);
        const held = prev.usage.prompt_tokens + prev.usage.completion_tokens;
        assert.ok(cached >= 0.99 * held, `${c.name} turn ${k}: cached ${cached} of the previous ${held}`);
        assert.ok(cached <= r.usage.prompt_tokens);
      } else {
        assert.equal(cached, 0, `${c.name} turn 1 starts cold`);
      }
      last.set(c.name, r);
      // The same history rendered as text (no memory of the ids): where it
      // differs from what the server feeds, the reply re-tokenized differently.
      const fed = await tokenize(srv.url, { messages: c.messages, chat_template_kwargs: { thinking: c.thinking } });
      const plain = await tokenize(plainServer.url, { messages: c.messages, chat_template_kwargs: { thinking: c.thinking } });
      if (JSON.stringify(fed) !== JSON.stringify(plain)) retokenized += 1;
    }
  }
  assert.ok(retokenized > 0, "some reply must re-tokenize differently, or this test does not cover that case");
  console.log(`# ${retokenized} of 12 histories re-tokenize differently as text`);
});

test("a restart on the same directory resumes from disk, answering as a server without cache", async () => {
  const dir = path.join(tmp, "restart");
  const first = await start(["--state-cache-dir", dir]);
  const conv = conversation("R", false);
  await turn(first.client(), conv, 1);
  await first.stop();  // an orderly stop writes what is queued
  assert.ok(fs.readdirSync(dir).some((f) => f.endsWith(".k3state")), "checkpoints were published");
  const again = await start(["--state-cache-dir", dir]);
  conv.messages.push({ role: "user", content: "And after the restart?" });
  const body = { model: "k3", messages: conv.messages, max_tokens: 24, temperature: 0, chat_template_kwargs: { thinking: false } };
  const resumed = await again.client().chat.completions.create(body);
  const cold = await plainServer.client().chat.completions.create(body);
  assert.ok(resumed.usage.prompt_tokens_details.cached_tokens > 0, "resumed from disk");
  assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(resumed.usage.prompt_tokens, cold.usage.prompt_tokens);
  assert.deepEqual(resumed.choices[0].message, cold.choices[0].message, "identical to a cold run");
  assert.match(again.log(), /cached=[1-9]/);
});

test("RSS stays bounded by the flags over many requests", async () => {
  // A RAM budget of a few checkpoints of these conversations; 80 requests
  // over 8 conversations cycle through far more than that.
  const srv = await start(["--state-cache-gb", "0.002", "--state-cache-dir", path.join(tmp, "rss"), "--state-cache-disk-gb", "0.004"]);
  // Under ASan freed blocks wait in a quarantine and the allocator keeps
  // warming up long after the release binary's RSS is flat, so there the RSS
  // bound is not asserted (LeakSanitizer at exit is the leak check) and 3
  // rounds, which already evict from both tiers, are enough (as serve_load_test).
  const asan = sanitized(srv.proc.pid);
  const client = srv.client();
  const convs = Array.from({ length: 8 }, (_, i) => conversation(`N${i}`, false));
  const samples = [];
  for (let k = 1; k <= (asan ? 3 : 10); ++k) {
    for (const c of convs) {
      await turn(client, c, k);
      c.messages.splice(1, Math.max(0, c.messages.length - 7));  // keep the prompt from outgrowing --ctx
    }
    samples.push(rssKiB(srv.proc.pid));
  }
  const ramBytes = await metric(srv.url, "k3_state_cache_bytes");
  const written = await metric(srv.url, "k3_state_files_written_total");
  const removed = await metric(srv.url, "k3_state_files_removed_total");
  await srv.stop();  // an orderly stop: the files queued are written and the budget held
  const files = fs.readdirSync(path.join(tmp, "rss")).map((f) => fs.statSync(path.join(tmp, "rss", f)).size);
  const disk = files.reduce((a, b) => a + b, 0);
  console.log(`# RSS KiB after each 8 requests: ${samples.join(" ")}; RAM tier ${ramBytes} bytes; ` +
              `files: ${written} written, ${removed} removed (by then), ${files.length} left, ${disk} bytes`);
  assert.ok(ramBytes > 0 && ramBytes <= 0.002e9, `RAM budget: ${ramBytes}`);
  assert.ok(disk <= 0.004e9, `disk budget: ${disk}`);
  assert.ok(removed > 0 && written > files.length, "the directory evicted files to hold its budget");
  if (asan) return;
  // After warm-up (48 requests: the RAM tier is full, the allocator's pools
  // have their working size) the rest may not grow beyond noise.
  const warm = samples[5], end = samples[samples.length - 1];
  assert.ok(end - warm < 4096, `RSS grew ${end - warm} KiB after warm-up (${samples.join(" ")})`);
});
