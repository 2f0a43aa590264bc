// A stand-in for `k3-run --serve` while developing the web chat page: serves
// libs/k3/serve/web/index.html at GET / and fakes the OpenAI endpoints the page
// uses (GET /v1/models, streamed POST /v1/chat/completions) with slow chunks,
// reasoning first, then a markdown answer. Stops a stream when the client goes
// away, answers 429 while busy and 401 without the key when started with one.
// Not a test of the server: the browser test runs against the real binary.
//
//   node tests/serve/mock_openai_server.mjs [--port 8089] [--delay-ms 40] [--api-key KEY]
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const PAGE = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../libs/k3/serve/web/index.html");

const REASONING = "The user wants a short demo. I should show a heading, a list, some inline `code` and a fenced block, " +
  "then close with a sentence. Keep it brief and friendly.";
const ANSWER = "## Hello from the mock\n\nHere is what the page renders:\n\n- **bold** and *italic* text\n" +
  "- inline `code` and a [safe link](https://example.org)\n- a nested list:\n  1. first\n  2. second\n\n" +
  "```python\ndef greet(name):\n    return f\"hello, {name}\"\n```\n\n| token | id |\n|---|--:|\n| hello | 15339 |\n\n" +
  "That is all <b>escaped</b> HTML stays text.";

function pieces(text) { return text.match(/\s*\S+|\s+/g) || []; }

function sendJson(res, status, body, extra = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...extra });
  res.end(JSON.stringify(body));
}
const envelope = (message, type, code) => ({ error: { message, type, param: null, code } });

export function startMock({ port = 0, delayMs = 40, apiKey = "", model = "k3-mock", ctx = 2048 } = {}) {
  let busy = false;
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && (req.url === "/" || req.url === "/index.html")) {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end(fs.readFileSync(PAGE));
      return;
    }
    if (apiKey && req.headers.authorization !== "Bearer " + apiKey) {
      sendJson(res, 401, envelope("missing or wrong API key", "invalid_request_error", "invalid_api_key"));
      return;
    }
    if (req.method === "GET" && req.url === "/v1/models") {
      sendJson(res, 200, { object: "list", data: [{ id: model, object: "model", created: 0, owned_by: "k3kit" }] });
      return;
    }
    if (req.method === "POST" && req.url === "/v1/chat/completions") {
      let raw = "";
      req.on("data", (d) => { raw += d; });
      req.on("end", () => {
        let body;
        try { body = JSON.parse(raw); } catch { sendJson(res, 400, envelope("body is not JSON", "invalid_request_error", null)); return; }
        if (busy) { sendJson(res, 429, envelope("queue full", "server_error", "queue_full"), { "Retry-After": "2" }); return; }
        const words = JSON.stringify(body.messages ?? []).split(/\s+/).length;
        if (words > ctx) {
          sendJson(res, 400, envelope(`prompt is ${words} tokens, more than the context of ${ctx}`, "invalid_request_error", "context_length_exceeded"));
          return;
        }
        if (!body.stream) {
          sendJson(res, 200, { id: "chatcmpl-mock", object: "chat.completion", model, choices: [{ index: 0,
            message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: words, completion_tokens: 1, total_tokens: words + 1 } });
          return;
        }
        stream(body, res);
      });
      return;
    }
    sendJson(res, 404, envelope("no route " + req.url, "invalid_request_error", null));
  });

  function stream(body, res) {
    busy = true;
    const id = "chatcmpl-mock" + Date.now();
    const thinking = body.chat_template_kwargs?.thinking !== false;
    const last = body.messages?.[body.messages.length - 1]?.content ?? "";
    const steps = [{ role: "assistant", content: "" }];
    if (thinking) for (const p of pieces(REASONING)) steps.push({ reasoning_content: p });
    let finish = "stop";
    if (/weather/i.test(last)) {  // a tool call, its arguments in fragments
      const args = JSON.stringify({ city: "Paris", unit: "celsius" });
      steps.push({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }] });
      for (let k = 0; k < args.length; k += 6) steps.push({ tool_calls: [{ index: 0, function: { arguments: args.slice(k, k + 6) } }] });
      finish = "tool_calls";
    } else for (const p of pieces(/long/i.test(last) ? (ANSWER + "\n\n").repeat(20) : ANSWER)) steps.push({ content: p });
    const max = body.max_tokens ?? Infinity;
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
    const chunk = (delta, finish = null) => JSON.stringify({
      id, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model,
      choices: [{ index: 0, delta, finish_reason: finish }] });
    let i = 0;
    const timer = setInterval(() => {
      if (i < steps.length && i <= max) { res.write("data: " + chunk(steps[i++]) + "\n\n"); return; }
      clearInterval(timer);
      res.write("data: " + chunk({}, i > max ? "length" : finish) + "\n\n");
      if (body.stream_options?.include_usage)
        res.write("data: " + JSON.stringify({ id, object: "chat.completion.chunk", model, choices: [],
          usage: { prompt_tokens: 40, completion_tokens: i - 1, total_tokens: 39 + i, prompt_tokens_details: { cached_tokens: 12 } } }) + "\n\n");
      res.end("data: [DONE]\n\n");
      busy = false;
    }, delayMs);
    res.on("close", () => { clearInterval(timer); busy = false; });
  }

  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, dflt) => { const k = process.argv.indexOf(name); return k > 0 ? process.argv[k + 1] : dflt; };
  const server = await startMock({ port: Number(arg("--port", 8089)), delayMs: Number(arg("--delay-ms", 40)), apiKey: arg("--api-key", "") });
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
}
