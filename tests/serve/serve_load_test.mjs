// Load: 16 concurrent clients against --queue 4 — every request answered
// (200 or 429 with Retry-After), no stream lost or mixed up (each equals its
// own greedy reference), the server healthy after; then 300 sequential
// requests with the resident set measured (printed, and bounded; under ASan
// 30 requests, the bound not asserted).
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { APIError, rssKiB, sanitized, startServer } from "./serve_fixture.mjs";

let srv, client;
before(async () => {
  // A small state-cache budget: the store keeps every conversation's
  // checkpoints up to --state-cache-gb, so the warm-up fills it and the
  // resident set must then stay flat (the bound is the flag, not luck).
  srv = await startServer(["--queue", "4", "--ctx", "1024", "--state-cache-gb", "0.02"]);
  client = srv.client();
});
after(async () => {
  await srv.stop();
});

const prompt = (i) => `Client number ${i} asks about item ${i * 7 % 13}`;
const params = (i) => ({ model: "k3", prompt: prompt(i), max_tokens: 48, temperature: 0 });

async function streamText(i) {
  const st = await client.completions.create({ ...params(i), stream: true });
  let text = "", finish = null;
  for await (const c of st) {
    text += c.choices[0]?.text ?? "";
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish };
}

test("16 concurrent clients, queue 4: 200 or 429, none lost or mixed up", async () => {
  const refs = [];
  for (let i = 0; i < 16; ++i) refs.push((await client.completions.create(params(i))).choices[0].text);
  assert.equal(new Set(refs).size > 8, true, "the references differ from each other");
  const results = await Promise.all(refs.map((_, i) => streamText(i).then((r) => ({ ok: r }), (e) => ({ err: e }))));
  let ok = 0, busy = 0;
  results.forEach((r, i) => {
    if (r.ok) {
      assert.equal(r.ok.text, refs[i], `client ${i}: its own greedy text`);
      assert.ok(r.ok.finish === "length" || r.ok.finish === "stop");
      ++ok;
    } else {
      assert.ok(r.err instanceof APIError, String(r.err));
      assert.equal(r.err.status, 429);
      assert.equal(r.err.headers.get("retry-after"), "1");
      ++busy;
    }
  });
  console.log(`16 concurrent: ${ok} answered 200, ${busy} answered 429`);
  assert.equal(ok + busy, 16);
  assert.ok(ok >= 5, "at least the running one and the 4 queued are served");
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  if (busy) assert.match(metrics, new RegExp(`k3_requests_total\\{path="/v1/completions",status="429"\\} ${busy}$`, "m"));
  assert.match(metrics, /^k3_queue_depth 0$/m);
});

test("300 sequential requests (30 under ASan): resident set flat", async () => {
  // Under ASan freed memory sits in its quarantine (up to 256 MiB) before it is
  // reused, so RSS climbs whatever the code does; there LeakSanitizer at exit
  // is the leak check, the bound holds for the real (release) binary, and 30
  // requests run every path of the loop (300 would only add time).
  const asan = sanitized(srv.proc.pid);
  const n = asan ? 30 : 300;
  const chat = (i) => client.chat.completions.create({ model: "k3", max_tokens: 6, temperature: 0,
    messages: [{ role: "user", content: `request ${i}` }] });
  const comp = (i) => streamText(i % 16);
  for (let i = 0; i < 30; ++i) await (i % 2 ? chat(i) : comp(i));  // warm-up: caches, pools, allocator
  const rss = [rssKiB(srv.proc.pid)];
  for (let i = 0; i < n; ++i) {
    await (i % 2 ? chat(i) : comp(i));
    if ((i + 1) % 100 === 0) rss.push(rssKiB(srv.proc.pid));
  }
  console.log(`RSS KiB after warm-up and after each 100 of ${n} sequential requests: ${rss.join(" ")}`);
  if (!asan) assert.ok(rss.at(-1) - rss[0] < 8 * 1024, `RSS grew ${(rss.at(-1) - rss[0]) / 1024} MiB`);
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
});
