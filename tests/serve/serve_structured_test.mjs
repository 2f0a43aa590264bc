// Enforced structure (issue 30) against an untrained model: the fixture's
// default random-weight `tiny` container (K3_SERVE_MODEL replaces it), whose
// text is noise unless decoding is constrained. Held-out schemas and tools; answers
// are checked by a JSON-schema validator written here (not the server's
// compiler) after JSON.parse. Plus the 400s for schemas outside the subset,
// /metrics, and the parser passing mistyped arguments of a non-strict tool.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, postJson } from "./serve_fixture.mjs";

let srv;
before(async () => {
  srv = await startServer(["--ctx", "4096"]);
});
after(async () => {
  await srv?.stop();
});

// --- an independent validator of the subset -------------------------------
function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;  // string, boolean, object
}
function hasType(v, t) {
  const k = typeOf(v);
  return k === t || (t === "number" && k === "integer");
}
function equal(a, b) {
  return JSON.stringify(a) === JSON.stringify(b) || (typeOf(a) === "object" && typeOf(b) === "object" &&
    Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k) => k in b && equal(a[k], b[k])));
}
// Returns "" when valid, else why not (with the path).
export function validate(s, v, at = "$") {
  if (s === true || Object.keys(s).length === 0) return "";
  if (s.anyOf) return s.anyOf.some((a) => validate(a, v, at) === "") ? "" : `${at}: no anyOf alternative fits`;
  if ("const" in s && !equal(s.const, v)) return `${at}: not the const`;
  if (s.enum && !s.enum.some((e) => equal(e, v))) return `${at}: ${JSON.stringify(v)} not in the enum`;
  if (s.type) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => hasType(v, t))) return `${at}: ${typeOf(v)} is not ${types.join("|")}`;
  }
  if (typeof v === "string") {
    const n = [...v].length;  // code points
    if (n < (s.minLength ?? 0) || n > (s.maxLength ?? Infinity)) return `${at}: length ${n}`;
  }
  if (Array.isArray(v)) {
    if (v.length < (s.minItems ?? 0) || v.length > (s.maxItems ?? Infinity)) return `${at}: ${v.length} items`;
    for (let i = 0; i < v.length; i++) {
      const e = s.items ? validate(s.items, v[i], `${at}[${i}]`) : "";
      if (e) return e;
    }
  }
  if (typeOf(v) === "object") {
    for (const r of s.required ?? []) if (!(r in v)) return `${at}: '${r}' missing`;
    for (const [k, x] of Object.entries(v)) {
      const ps = s.properties?.[k];
      if (ps !== undefined) {
        const e = validate(ps, x, `${at}.${k}`);
        if (e) return e;
      } else if (s.additionalProperties === false) {
        return `${at}: '${k}' is not allowed`;
      } else if (typeof s.additionalProperties === "object") {
        const e = validate(s.additionalProperties, x, `${at}.${k}`);
        if (e) return e;
      }
    }
  }
  return "";
}

test("the validator itself tells valid from invalid", () => {
  const s = { type: "object", properties: { a: { type: "integer" }, b: { enum: ["x", 1] } }, required: ["a"], additionalProperties: false };
  assert.equal(validate(s, { a: 1, b: "x" }), "");
  assert.notEqual(validate(s, { a: 1.5 }), "");
  assert.notEqual(validate(s, { b: 1 }), "");
  assert.notEqual(validate(s, { a: 1, c: 2 }), "");
  assert.notEqual(validate({ type: "string", maxLength: 2 }, "abc"), "");
  assert.equal(validate({ type: "string", maxLength: 2 }, "😀é"), "");
});

// --- held-out schemas --------------------------------------------------------
const str = (max, min = 0) => ({ type: "string", minLength: min, maxLength: max });
const obj = (properties, required = Object.keys(properties)) => ({ type: "object", properties, required, additionalProperties: false });
const SCHEMAS = [
  obj({ name: str(10), age: { type: "integer" } }),
  obj({ ok: { type: "boolean" }, why: { anyOf: [str(8), { type: "null" }] } }),
  obj({ tags: { type: "array", items: str(5, 1), minItems: 1, maxItems: 3 } }),
  obj({ color: { enum: ["red", "green", "blue"] }, alpha: { type: "number" } }),
  obj({ point: obj({ x: { type: "number" }, y: { type: "number" } }) }),
  obj({ kind: { const: "event" }, at: str(12, 4) }),
  obj({ a: { type: "integer" }, b: { type: "integer" }, c: { type: "integer" } }, ["b"]),
  obj({ items: { type: "array", items: obj({ id: { type: "integer" }, done: { type: "boolean" } }), maxItems: 2 } }),
  obj({ v: { type: ["string", "null"], maxLength: 6 } }),
  obj({ unit: { enum: ["C", "F", 0, null, true] }, n: { type: "integer" } }),
  { type: "array", items: { type: "integer" }, minItems: 2, maxItems: 4 },
  { type: "string", minLength: 3, maxLength: 9 },
  { enum: ["yes", "no", "maybe"] },
  obj({ matrix: { type: "array", items: { type: "array", items: { type: "number" }, maxItems: 2 }, maxItems: 2 } }),
  obj({ title: str(20), pages: { type: "integer" }, isbn: { anyOf: [{ type: "integer" }, str(13, 10)] } }, ["title"]),
  obj({ meta: { type: "object", additionalProperties: { type: "integer" } } }),
  obj({ nested: obj({ deeper: obj({ deepest: { type: "boolean" } }) }) }),
  obj({ score: { type: "number" }, label: str(4), extra: { type: "null" } }, ["score"]),
  obj({ list: { type: "array", items: { enum: [1, 2, 3] }, minItems: 3, maxItems: 3 } }),
  obj({ answer: { anyOf: [{ type: "integer" }, { type: "boolean" }, obj({ text: str(5) })] } }),
];

const chat = (extra) => ({ model: "k3", messages: [{ role: "user", content: "Answer." }], max_tokens: 200, temperature: 1,
  chat_template_kwargs: { thinking: false }, ...extra });

test("20 json_schema (strict) answers parse and validate", async () => {
  assert.equal(SCHEMAS.length, 20);
  const client = srv.client();
  for (const [i, schema] of SCHEMAS.entries()) {
    const r = await client.chat.completions.create(chat({
      seed: 100 + i, response_format: { type: "json_schema", json_schema: { name: `s${i}`, strict: true, schema } } }));
    const c = r.choices[0];
    assert.equal(c.finish_reason, "stop", `schema ${i}: ${JSON.stringify(c)}`);
    let v;
    assert.doesNotThrow(() => { v = JSON.parse(c.message.content); }, `schema ${i}: ${c.message.content}`);
    assert.equal(validate(schema, v), "", `schema ${i}: ${c.message.content}`);
  }
});

test("json_object answers are objects, also streamed and with a tight max_tokens", async () => {
  const client = srv.client();
  for (const [seed, max] of [[1, 300], [2, 40], [3, 25]]) {
    const r = await client.chat.completions.create(chat({ seed, max_tokens: max, response_format: { type: "json_object" } }));
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(r.usage.completion_tokens <= max);
    const v = JSON.parse(r.choices[0].message.content);
    assert.equal(typeOf(v), "object", r.choices[0].message.content);
  }
  const stream = await client.chat.completions.create(chat({ seed: 4, stream: true, response_format: { type: "json_object" } }));
  let text = "";
  let finish = null;
  for await (const ch of stream) {
    text += ch.choices[0]?.delta?.content ?? "";
    finish = ch.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, "stop");
  assert.equal(typeOf(JSON.parse(text)), "object", text);
});

// --- tools --------------------------------------------------------------------
const fn = (name, parameters, strict = true) => ({ type: "function", function: { name, strict, parameters } });
const TOOLS = [
  fn("get_weather", obj({ city: str(12, 1), days: { type: "integer" }, unit: { enum: ["C", "F"] } }, ["city", "unit"])),
  fn("search", obj({ query: str(16, 1), limit: { type: "integer" }, filters: obj({ lang: { enum: ["en", "fr"] } }, []) }, ["query"])),
  fn("set_alarm", obj({ at: str(8, 5), repeat: { type: "array", items: { enum: ["mon", "tue", "wed"] }, maxItems: 3 },
    loud: { type: "boolean" } })),
  fn("note", obj({ text: str(20), pinned: { anyOf: [{ type: "boolean" }, { type: "null" }] } }, ["text"]), false),
];
const schemaOf = (name) => TOOLS.find((t) => t.function.name === name).function.parameters;

test("20 tool_choice required/named answers make the call asked for, with schema-valid arguments", async () => {
  const client = srv.client();
  for (let i = 0; i < 20; i++) {
    const named = i % 2 === 1 ? TOOLS[i % TOOLS.length].function.name : null;
    const tool_choice = named ? { type: "function", function: { name: named } } : "required";
    const r = await client.chat.completions.create(chat({ seed: 200 + i, tools: TOOLS, tool_choice, max_tokens: 160 }));
    const c = r.choices[0];
    assert.equal(c.finish_reason, "tool_calls", `request ${i}: ${JSON.stringify(c)}`);
    const calls = c.message.tool_calls;
    assert.ok(calls?.length >= 1, `request ${i}`);
    if (named) assert.equal(calls.length, 1);
    for (const call of calls) {
      if (named) assert.equal(call.function.name, named);
      const args = JSON.parse(call.function.arguments);
      assert.equal(validate(schemaOf(call.function.name), args), "", `request ${i}: ${call.function.name} ${call.function.arguments}`);
    }
    assert.equal(c.message.content ?? "", "");
  }
});

test("schemas outside the subset and impossible limits are 400s naming the field", async () => {
  const bad = [
    [{ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "^a" } } } },
      "response_format.json_schema.schema.pattern", /keyword 'pattern' is not supported/],
    [{ response_format: { type: "json_schema", json_schema: { name: "x", schema: obj({ d: { type: "string", format: "date" } }) } } },
      "response_format.json_schema.schema.properties.d.format", /'format'/],
    [{ tools: [fn("f", { type: "object", properties: { a: { type: "integer", minimum: 0 } } })], tool_choice: "required" },
      "tools", /function 'f' parameters\.properties\.a\.minimum: keyword 'minimum'/],
  ];
  for (const [extra, param, message] of bad) {
    const r = await postJson(`${srv.url}/v1/chat/completions`, chat(extra));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param, r.text);
    assert.match(r.json.error.message, message);
  }
  // max_tokens below the shortest answer: an honest cut, not a 400 (nor a finished answer).
  const cut = await postJson(`${srv.url}/v1/chat/completions`,
    chat({ max_tokens: 3, response_format: { type: "json_schema", json_schema: { name: "x", schema: obj({ a: str(5) }) } } }));
  assert.equal(cut.status, 200, cut.text);
  assert.equal(cut.json.choices[0].finish_reason, "length");
  assert.ok('{"a":"'.startsWith(cut.json.choices[0].message.content.replace(/\s/g, "").slice(0, 6)), cut.text);
  // A non-strict tool outside the subset is not refused: its arguments are free.
  const r = await postJson(`${srv.url}/v1/chat/completions`, chat({ seed: 9, tool_choice: "required",
    tools: [fn("f", { type: "object", properties: { a: { type: "integer", minimum: 0 } } }, false)] }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].finish_reason, "tool_calls");
  assert.equal(typeOf(JSON.parse(r.json.choices[0].message.tool_calls[0].function.arguments)), "object");
});

test("/metrics counts constrained generations and mask time", async () => {
  const m = await (await fetch(`${srv.url}/metrics`)).text();
  const value = (name) => Number(m.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1]);
  assert.ok(value("k3_constrained_generations_total") >= 44, m);
  assert.ok(value("k3_grammar_masked_tokens_total") > 0);
  assert.ok(value("k3_grammar_mask_seconds_total") > 0);
  assert.ok(value("k3_grammar_mask_seconds_total") < value("k3_decode_seconds_total"));
});
