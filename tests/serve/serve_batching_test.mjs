// Continuous batching (issue 31) on the `small` preset: 8 requests at once
// (--parallel 8, prompts of different lengths fed in pieces beside the
// others' decode steps) each give exactly what they give alone — the same
// tokens and the same log-probabilities bit for bit (they come from the
// logits, so equal values mean equal logits), greedy and seeded sampling.
// /slots and /metrics show the sequences running together; a cancelled
// stream leaves its slot at once while the others go on unchanged.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { metric, startServer, tinyContainer } from "./serve_fixture.mjs";

let srv, client;
before(async () => {
  srv = await startServer(["--parallel", "8", "--batch-tokens", "16", "--ctx", "512", "--state-cache-gb", "0"],
    { model: tinyContainer("small-b8", () => {}, "small") });
  client = srv.client();
});
after(async () => {
  await srv.stop();
});

const words = ["river", "stone", "lamp", "cloud", "garden", "letter", "window", "bridge", "forest", "engine"];
const prompt = (i) => Array.from({ length: 3 + 7 * i }, (_, k) => words[(k * (i + 3)) % words.length]).join(" ");
const greedy = (i) => ({ model: "k3", prompt: prompt(i), max_tokens: 20, temperature: 0, logprobs: 1 });
const seeded = (i) => ({ model: "k3", prompt: prompt(i), max_tokens: 20, temperature: 0.9, top_p: 0.95, seed: 100 + i,
  logprobs: 1 });

function outcome(r) {
  const c = r.choices[0];
  return { text: c.text, tokens: c.logprobs.tokens, logprobs: c.logprobs.token_logprobs, finish: c.finish_reason };
}

async function batchMetric(name) {
  const v = await metric(srv.url, name);
  assert.ok(!Number.isNaN(v), `${name} in /metrics`);
  return v;
}

for (const [kind, params] of [["greedy", greedy], ["seeded", seeded]]) {
  test(`8 concurrent ${kind} requests each equal their solo run, token for token and logprob for logprob`, async () => {
    const solo = [];
    for (let i = 0; i < 8; ++i) solo.push(outcome(await client.completions.create(params(i))));
    assert.ok(new Set(solo.map((s) => s.text)).size >= 6, "the prompts give different outputs");
    const steps0 = await batchMetric("k3_batch_steps_total"), rows0 = await batchMetric("k3_batch_decode_rows_total");
    let busyMost = 0;
    const watching = (async () => {  // how many slots run at once, seen from /slots
      for (let k = 0; k < 200 && busyMost < 8; ++k) {
        const s = await (await fetch(`${srv.url}/slots`)).json();
        busyMost = Math.max(busyMost, s.slots.filter((x) => x.state !== "idle").length);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const together = (await Promise.all(solo.map((_, i) => client.completions.create(params(i))))).map(outcome);
    await watching;
    together.forEach((t, i) => {
      assert.equal(t.tokens.length, 20, `request ${i}: 20 tokens`);
      assert.deepEqual(t, solo[i], `request ${i}: the same as alone`);
    });
    const steps = (await batchMetric("k3_batch_steps_total")) - steps0;
    const decodeRows = (await batchMetric("k3_batch_decode_rows_total")) - rows0;
    console.log(`${kind}: ${decodeRows} decode rows in ${steps} steps; up to ${busyMost} slots busy at once`);
    // 8 × 19 decode rows (the last token is not fed) in steps that also carry
    // the prompts: alone they would take a step each.
    assert.ok(decodeRows / steps > 1.5, `decode tokens batched: ${decodeRows} rows in ${steps} steps`);
    assert.ok(busyMost >= 4, `/slots saw ${busyMost} busy slots at once`);
  });
}

test("/slots reports each slot; a cancelled stream leaves at once, the others go on unchanged", async () => {
  const long = (i) => ({ model: "k3", prompt: prompt(i), max_tokens: 120, temperature: 0 });
  const alone = [];
  const cancelled0 = await batchMetric("k3_generations_cancelled_total");
  for (const i of [1, 2]) alone.push((await client.completions.create(long(i))).choices[0].text);
  const ctl = new AbortController();
  const streams = [1, 2, 3].map(async (i, n) => {
    const st = await client.completions.create({ ...long(i), stream: true }, n === 2 ? { signal: ctl.signal } : {});
    let text = "";
    try {
      for await (const c of st) {
        text += c.choices[0]?.text ?? "";
        if (n === 2 && text.length > 10) ctl.abort();
      }
    } catch (e) {
      if (n !== 2) throw e;
    }
    return text;
  });
  const [a, b] = await Promise.all(streams.slice(0, 2));
  await streams[2];
  assert.equal(a, alone[0]);
  assert.equal(b, alone[1]);
  // The aborted client's promise settles as soon as it hangs up; the server
  // sees the hang-up at its next write or poll, within a step, so /slots is
  // read until every slot is idle (a slow sanitizer build takes a few steps).
  // The cancelled counter below proves the stream stopped early rather than
  // running its 120 tokens out.
  let s;
  for (const t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 20))) {
    s = await (await fetch(`${srv.url}/slots`)).json();
    if (s.slots.every((x) => x.state === "idle") || Date.now() - t0 > 30000) break;
  }
  assert.equal(s.slots.length, 8);
  for (const slot of s.slots) {
    assert.equal(slot.state, "idle");
    for (const k of ["prompt_tokens", "fed_tokens", "cached_tokens", "generated_tokens", "tokens_per_second"])
      assert.equal(typeof slot[k], "number", k);
  }
  assert.equal((await batchMetric("k3_generations_cancelled_total")) - cancelled0, 1, "the aborted stream was cancelled");
  assert.equal(await batchMetric("k3_slots"), 8);
  assert.equal(await batchMetric("k3_slots_busy"), 0);
});

test("--parallel x --ctx that does not fit is one line naming the sizes; --parallel is 1-256", async () => {
  const { spawnSync } = await import("node:child_process");
  const { K3_RUN, modelDir } = await import("./serve_fixture.mjs");
  const run = (args) => spawnSync(K3_RUN, [modelDir(), "--serve", "--port", "0", ...args], { encoding: "utf8", timeout: 60000 });
  // tiny at --ctx 1048576: each sequence's MLA caches take hundreds of MB, 256 of them far more than this machine.
  const big = run(["--parallel", "256", "--ctx", "1048576"]);
  assert.equal(big.status, 2, big.stderr);
  const lines = big.stderr.trim().split("\n");
  assert.equal(lines.length, 1, big.stderr);
  assert.match(lines[0], /^k3-run: --parallel 256 x --ctx 1048576: 256 sequences of [\d.]+ GiB each .* would need [\d.]+ GiB of memory, more than this machine's [\d.]+ GiB$/);
  const many = run(["--parallel", "100000"]);
  assert.equal(many.status, 2, many.stderr);
  assert.match(many.stderr, /--parallel/);
  // The state cache's RAM (its tier, and as much again queued for the
  // directory) is part of the start check; a bad directory is refused
  // before the model is even opened (here: a model path that is not one).
  const cache = run(["--state-cache-gb", "100000"]);
  assert.equal(cache.status, 2, cache.stderr);
  assert.match(cache.stderr.trim(), /^k3-run: --state-cache-gb: up to [\d.]+ GiB of checkpoints in RAM .* more than this machine's [\d.]+ GiB$/);
  const notDir = path.join(os.tmpdir(), `k3-state-file-${process.pid}`);
  fs.writeFileSync(notDir, "a file, not a directory");
  const badDir = spawnSync(K3_RUN, [path.join(os.tmpdir(), "no-such-model"), "--serve", "--port", "0", "--state-cache-dir", notDir],
                           { encoding: "utf8", timeout: 60000 });
  fs.rmSync(notDir);
  assert.equal(badDir.status, 2, badDir.stderr);
  assert.equal(badDir.stderr, `k3-run: --state-cache-dir ${notDir}: not a directory\n`);
});
