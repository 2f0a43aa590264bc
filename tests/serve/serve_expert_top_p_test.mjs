// k3-run --serve --expert-top-p P: the server's sessions drop low-weight
// routed experts like every other mode (SessionOptions), which /metrics
// shows as fewer experts kept per token and MoE layer than top-k; without
// the flag it is top-k exactly. The tiny model routes 4 of 16.
import test from "node:test";
import assert from "node:assert/strict";
import { startServer } from "./serve_fixture.mjs";

async function keptAfterOneCompletion(args) {
  const srv = await startServer(["--model-name", "k3-test", ...args]);
  try {
    const r = await srv.client().completions.create({ model: "k3-test", prompt: "Once upon a time", max_tokens: 4,
      temperature: 0 });
    assert.equal(r.usage.completion_tokens > 0, true);
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    const m = text.match(/^k3_experts_kept_per_token_layer (\S+)$/m);
    assert.ok(m, `no k3_experts_kept_per_token_layer in:\n${text}`);
    return Number(m[1]);
  } finally {
    const { code } = await srv.stop();
    assert.equal(code, 0, "clean exit on SIGTERM");
  }
}

test("--expert-top-p 0.5 keeps fewer experts per token than the default's top-4", async () => {
  assert.equal(await keptAfterOneCompletion([]), 4);
  const kept = await keptAfterOneCompletion(["--expert-top-p", "0.5"]);
  assert.ok(kept >= 1 && kept < 4, `kept ${kept}`);
});
