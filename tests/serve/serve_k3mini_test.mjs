// The server on a trained model (models/k3-mini, repacked here): reasoning,
// content and tool calls come from the model itself, through the official
// `openai` client, streamed and not. The tiny synthetic model leaves the chat
// grammar within a few tokens, so only a trained one shows these paths whole.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { k3MiniContainer, startServer, streamChat } from "./serve_fixture.mjs";

const TOOLS = [{ type: "function", function: {
  name: "get_weather", description: "Get the current weather for a city.",
  parameters: { type: "object", required: ["city"], properties: {
    city: { type: "string", description: "City name" },
    days: { type: "integer", description: "Forecast length in days" } } } } }];

let srv, client;
before(async () => {
  process.env.K3_SERVE_MODEL = k3MiniContainer();
  srv = await startServer(["--model-name", "k3-mini", "--ctx", "2048"]);
  client = srv.client();
});
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, "clean exit on SIGTERM");
});

const weather = [{ role: "user", content: "What's the weather in Paris?" }];

// A tool result as k3-mini's training chats write it (Python's json.dumps
// spacing, scripts/k3_mini_chat.py): a 2 M-parameter model answers that
// form, and leaves the response empty for JavaScript's spaceless one.
const toolResult = (city) => `{"city": ${JSON.stringify(city)}, "temperature_c": 21, "condition": "sunny"}`;

test("a tool-use request gets a parsed get_weather call with a string city, after reasoning", async () => {
  const r = await client.chat.completions.create({ model: "k3-mini", messages: weather, tools: TOOLS,
    temperature: 0, max_tokens: 200 });
  const ch = r.choices[0];
  assert.equal(ch.finish_reason, "tool_calls");
  assert.ok(ch.message.reasoning_content.length > 10, `reasoning: ${ch.message.reasoning_content}`);
  assert.equal(ch.message.tool_calls.length, 1);
  const call = ch.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  assert.match(call.id, /^call_[0-9a-z]+_1$/);
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args.city, "string");
  assert.equal(args.city, "Paris", "the city is copied from the user's message");
  assert.ok(r.usage.completion_tokens > 5 && r.usage.prompt_tokens > 50, JSON.stringify(r.usage));

  // Streamed: the same greedy reply arrives as reasoning deltas, then one tool-call delta.
  const s = await streamChat(client, { model: "k3-mini", messages: weather, tools: TOOLS, temperature: 0,
    max_tokens: 200 });
  assert.equal(s.finish, "tool_calls");
  assert.equal(s.reasoning, ch.message.reasoning_content);
  const deltas = s.chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
  assert.ok(deltas.length >= 1);
  assert.equal(deltas[0].index, 0);
  assert.equal(deltas[0].function.name, "get_weather");
  assert.equal(deltas.map((d) => d.function.arguments ?? "").join(""), call.function.arguments);
  assert.notEqual(deltas[0].id, call.id, "call ids are unique per response");

  // The tool's result goes back; the model answers in the response channel.
  const turn2 = [...weather,
    { role: "assistant", content: null, reasoning_content: ch.message.reasoning_content, tool_calls: [call] },
    { role: "tool", tool_call_id: call.id, content: toolResult(args.city) }];
  const r2 = await client.chat.completions.create({ model: "k3-mini", messages: turn2, tools: TOOLS,
    temperature: 0, max_tokens: 200 });
  assert.equal(r2.choices[0].finish_reason, "stop");
  assert.ok(r2.choices[0].message.content.length > 5, `answer: ${r2.choices[0].message.content}`);
  assert.ok(r2.usage.prompt_tokens_details.cached_tokens > 0, "the first turn's prefix is reused");
});

// The definition family is not learned (models/k3-mini/README.md: the answer
// names another word and often loops), so the streamed reasoning-then-answer
// path is checked on the answer after a tool result.
test("an answer after a tool result streams thinking and then content, ending at stop", async () => {
  const messages = [...weather,
    { role: "assistant", content: null, reasoning_content: "The user wants the weather in Paris. I call get_weather.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } }] },
    { role: "tool", tool_call_id: "call_1", content: toolResult("Paris") }];
  const s = await streamChat(client, { model: "k3-mini", messages, tools: TOOLS,
    temperature: 0, max_tokens: 200, stream_options: { include_usage: true } });
  assert.equal(s.finish, "stop");
  assert.ok(s.reasoning.length > 10, s.reasoning);
  assert.ok(s.content.length > 5, s.content);
  assert.match(s.content, /Paris/, "the answer names the city of the tool result");
  const firstContent = s.chunks.findIndex((c) => c.choices?.[0]?.delta?.content);
  const lastReasoning = s.chunks.findLastIndex((c) => c.choices?.[0]?.delta?.reasoning_content);
  assert.ok(lastReasoning < firstContent, "reasoning streams before the answer");
  assert.ok(s.usage.completion_tokens > 10);
});
