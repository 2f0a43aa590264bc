// Tool declarations and results reach the prompt exactly as the chat encoder
// renders them (`k3-tokgen chat`), and results are identical with and
// without state reuse (a second server with --state-cache-gb 0).
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { BIN_DIR, modelDir, startServer, tokenize } from "./serve_fixture.mjs";

let reuse, fresh;
before(async () => {
  [reuse, fresh] = await Promise.all([startServer(["--ctx", "2048"]), startServer(["--ctx", "2048", "--state-cache-gb", "0"])]);
});
after(async () => {
  await Promise.all([reuse.stop(), fresh.stop()]);
});

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
  },
}];
const toolConversation = [
  { role: "developer", content: "Use tools when they help." },
  { role: "user", content: "Weather in Paris?" },
  { role: "assistant", content: null, reasoning_content: "The user wants the weather.",
    tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\",\"days\":2}" } }] },
  { role: "tool", tool_call_id: "call_1", content: "{\"temp_c\": 21, \"sky\": \"clear\"}" },
  { role: "user", content: "And tomorrow? Ünïcode ✓" },
];

function tokgenChat(request) {
  return JSON.parse(execFileSync(path.join(BIN_DIR, "k3-tokgen"), ["chat", modelDir(), "--json"],
    { input: JSON.stringify(request) }).toString());
}

test("tool declarations and results reach the prompt as the encoder renders them", async () => {
  const client = reuse.client();
  for (const tool_choice of ["auto", "required", { type: "function", function: { name: "get_weather" } }]) {
    const body = { messages: toolConversation, tools, tool_choice, chat_template_kwargs: { thinking: true } };
    const r = await client.chat.completions.create({ model: "k3", max_tokens: 1, temperature: 0, ...body });
    // developer -> system is the server's mapping (documented); k3-tokgen reads the mapped request.
    const mapped = { ...body, messages: toolConversation.map((m) => (m.role === "developer" ? { ...m, role: "system" } : m)) };
    const expected = tokgenChat(mapped);
    assert.equal(r.usage.prompt_tokens, expected.length);
    assert.deepEqual(await tokenize(reuse.url, body), expected);
  }
  // Without the tools the prompt is shorter: they are really in it.
  const bare = await tokenize(reuse.url, { messages: toolConversation.slice(0, 2) });
  const withTools = await tokenize(reuse.url, { messages: toolConversation.slice(0, 2), tools });
  assert.ok(withTools.length > bare.length);
});

// A conversation in turns, a regenerate, a client dropping reasoning from history, a new topic.
async function scenario(srv) {
  const client = srv.client();
  const out = [];
  const ask = async (messages, extra = {}) => {
    const r = await client.chat.completions.create({ model: "k3", messages, max_tokens: 6, temperature: 0, ...extra });
    out.push({ message: r.choices[0].message, finish: r.choices[0].finish_reason, usage: r.usage });
    return r.choices[0].message;
  };
  const u1 = [{ role: "system", content: "Be brief." }, { role: "user", content: "Name a colour" }];
  const a1 = await ask(u1);
  const u2 = [...u1, { role: "assistant", content: a1.content, reasoning_content: a1.reasoning_content },
    { role: "user", content: "Another one" }];
  await ask(u2);
  await ask(u2);  // regenerate
  const dropped = [...u1, { role: "assistant", content: a1.content }, { role: "user", content: "Another one" }];
  await ask(dropped);
  await ask([{ role: "user", content: "Something else entirely" }]);
  await ask(u2, { temperature: 0.8, seed: 42 });  // sampling with a seed: same draw either way
  const c = await client.completions.create({ model: "k3", prompt: "Be brief.", max_tokens: 8, temperature: 0 });
  out.push({ text: c.choices[0].text, usage: c.usage });
  return out;
}

test("identical results with and without state reuse; cached_tokens only with it", async () => {
  const a = await scenario(reuse), b = await scenario(fresh);
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; ++i) {
    assert.deepEqual(a[i].message, b[i].message, `answer ${i}`);
    assert.equal(a[i].text, b[i].text);
    assert.equal(a[i].finish, b[i].finish);
    assert.equal(a[i].usage.prompt_tokens, b[i].usage.prompt_tokens);
    assert.equal(a[i].usage.completion_tokens, b[i].usage.completion_tokens);
    assert.equal(b[i].usage.prompt_tokens_details.cached_tokens, 0, "no reuse without the cache");
  }
  const cached = a.map((x) => x.usage.prompt_tokens_details.cached_tokens);
  assert.ok(cached[1] >= a[0].usage.prompt_tokens, `second turn reuses the first prompt (${cached})`);
  assert.equal(cached[2], a[2].usage.prompt_tokens, "regenerate: the whole prompt is held");
  assert.ok(cached[3] >= a[0].usage.prompt_tokens, "dropped reasoning falls back to the checkpoint before that reply");
  assert.ok(cached[3] < a[3].usage.prompt_tokens);
});
