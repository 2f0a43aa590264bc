// XTML chat prompts from `k3-tokgen chat` (our renderChat) against
// sequences composed here from the spec 7.6 layout and tiktoken encodings of
// each segment (special tokens as their ids, each text segment on its own).
// Requests use the legacy form {"messages", "thinking"}: no effort turn. The
// CLI reads role `developer` as `system`, as an OpenAI server does.
import test from "node:test";
import assert from "node:assert/strict";
import { kimiPaths, loadTiktoken } from "../../scripts/node/k3_oracle.mjs";
import { tokgen } from "./oracle_common.mjs";

const { model, config } = kimiPaths();
const { enc, specials } = loadTiktoken(model, config);

const seg = (text) => Array.from(enc.encode_ordinary(text));  // «text»
const sp = (name) => {
  assert.ok(name in specials, name);
  return [specials[name]];
};
const OPEN = (tag, role) =>
  role === undefined
    ? [...sp("<|open|>"), ...seg(tag), ...sp("<|sep|>")]
    : [...sp("<|open|>"), ...seg(tag), ...seg(" role"), ...seg('="'), ...seg(role), ...seg('"'), ...sp("<|sep|>")];
const CLOSE = (tag) => [...sp("<|close|>"), ...seg(tag), ...sp("<|sep|>")];
const EOM = () => sp("<|end_of_msg|>");

function expected(messages, { thinking = true, add_generation_prompt = true } = {}) {
  const out = [];
  for (const m of messages) {
    const role = m.role === "developer" ? "system" : m.role;
    // An empty system message is still a turn (spec 7.6: body = content, and
    // empty segments emit nothing); the peer's builder skipped it.
    if (role === "system" || role === "user") {
      out.push(...OPEN("message", role), ...seg(m.content ?? ""), ...CLOSE("message"), ...EOM());
    } else {
      out.push(...OPEN("message", "assistant"));
      if (thinking) out.push(...OPEN("think"), ...seg(m.reasoning ?? ""), ...CLOSE("think"));
      out.push(...OPEN("response"), ...seg(m.content ?? ""), ...CLOSE("response"), ...CLOSE("message"), ...EOM());
    }
  }
  if (add_generation_prompt) out.push(...OPEN("message", "assistant"), ...OPEN(thinking ? "think" : "response"));
  return out;
}

function ours(messages, opts = {}) {
  const req = JSON.stringify({ messages, ...opts });
  return JSON.parse(tokgen(["chat", model, config, "--json"], req).toString());
}

const conversations = {
  single: [{ role: "user", content: "Hello!" }],
  withSystem: [
    { role: "system", content: "Be precise." },
    { role: "user", content: "What is 2+2?" },
  ],
  developerRole: [
    { role: "developer", content: "Answer in French." },
    { role: "user", content: "Bonjour" },
  ],
  emptySystem: [
    { role: "system", content: "" },
    { role: "user", content: "hi" },
  ],
  // The peer's wire fixture (spec 7.7), non-ASCII, multi-turn with reasoning.
  peerFixture: [
    { role: "system", content: "Be precise." },
    { role: "user", content: "你好\nKimi" },
    { role: "assistant", reasoning: "because", content: "你好。" },
    { role: "user", content: "Continue" },
  ],
  multiTurn: [
    { role: "user", content: "Привет! Как дела?" },
    { role: "assistant", content: "Хорошо, спасибо. 😊" },
    { role: "user", content: "日本語で答えてください。" },
    { role: "assistant", reasoning: "The user wants Japanese.\n\nOK.", content: "はい、わかりました。" },
    { role: "user", content: "  leading spaces and trailing\n" },
  ],
  markersInText: [{ role: "user", content: "Print <|open|>message<|sep|> and <|end_of_msg|> literally" }],
  codeAndCrlf: [{ role: "user", content: "def f(x):\r\n    return x ** 2\r\n" }],
};

for (const [name, messages] of Object.entries(conversations)) {
  for (const thinking of [true, false]) {
    test(`${name}, thinking ${thinking ? "on" : "off"}`, () => {
      assert.deepEqual(ours(messages, { thinking }), expected(messages, { thinking }));
    });
  }
}

test("no generation prompt", () => {
  const m = conversations.peerFixture;
  const opts = { thinking: true, add_generation_prompt: false };
  assert.deepEqual(ours(m, opts), expected(m, opts));
});

test("message role=user is five text segments (spec 7.6)", () => {
  const ids = ours([{ role: "user", content: "x" }], { thinking: true, add_generation_prompt: false });
  const head = [...sp("<|open|>"), ...seg("message"), ...seg(" role"), ...seg('="'), ...seg("user"), ...seg('"'), ...sp("<|sep|>")];
  assert.deepEqual(ids.slice(0, head.length), head);
});
