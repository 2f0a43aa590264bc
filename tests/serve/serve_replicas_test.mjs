// Two `k3-run --serve` replicas sharing one --state-cache-dir behind Debian's
// nginx (round robin; scripts/install_deps.sh installs it): a 6-turn
// conversation alternates between them and every turn after the first
// resumes from state the other replica (or itself) published. nginx runs as
// a non-daemon child with its own prefix and config in a temp dir, bound to
// 127.0.0.1 on a port this test picks.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { OpenAI, startServer } from "./serve_fixture.mjs";
import { chattyTinyModel } from "./web_chat_model.mjs";

process.env.K3_SERVE_MODEL ??= chattyTinyModel();

const NGINX = "/usr/sbin/nginx";
const tmp = fs.mkdtempSync(path.join(process.env.K3_TEST_TMP ?? os.tmpdir(), "replicas-"));
const stateDir = path.join(tmp, "state");
let replicas = [], nginx, proxyUrl;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startNginx(backends) {
  if (!fs.existsSync(NGINX)) throw new Error(`${NGINX} is missing: run scripts/install_deps.sh (Debian package nginx)`);
  const prefix = path.join(tmp, "nginx");
  fs.mkdirSync(prefix, { recursive: true });
  const port = await freePort();
  const conf = `daemon off;
master_process off;
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log;
events { worker_connections 64; }
http {
  access_log ${prefix}/access.log;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  upstream k3 {
${backends.map((u) => `    server ${new URL(u).host};`).join("\n")}
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://k3;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
  fs.writeFileSync(path.join(prefix, "nginx.conf"), conf);
  const proc = spawn(NGINX, ["-p", prefix, "-c", path.join(prefix, "nginx.conf"), "-e", path.join(prefix, "error.log")],
    { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  proc.stderr.on("data", (d) => { log += d; });
  const exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; ++i) {  // until it accepts connections
    const up = await new Promise((resolve) => {
      const c = net.connect(port, "127.0.0.1", () => { c.destroy(); resolve(true); });
      c.on("error", () => resolve(false));
    });
    if (up) break;
    if (proc.exitCode !== null || i > 100) throw new Error(`nginx did not start: ${log}${fs.readFileSync(path.join(prefix, "error.log"), "utf8")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, proc, stop: () => { proc.kill("SIGTERM"); return exited; } };
}

before(async () => {
  replicas = await Promise.all([0, 1].map(() => startServer(["--ctx", "4096", "--state-cache-dir", stateDir])));
  nginx = await startNginx(replicas.map((r) => r.url));
  proxyUrl = nginx.url;
});
after(async () => {
  await Promise.all([...replicas.map((r) => r.stop()), nginx?.stop()]);
  fs.rmSync(tmp, { recursive: true, force: true });
});

const chatLines = (log) => log.split("\n").filter((l) => l.includes("POST /v1/chat/completions 200"));

test("a conversation round-robined over two replicas reuses state on every turn after the first", async () => {
  const client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: "none", maxRetries: 0 });
  const system = Array.from({ length: 8 }, (_, i) => `Rule ${i + 1}: be precise about topic ${i}.`).join(" ");
  const messages = [{ role: "system", content: system }];
  const seen = [];
  for (let k = 1; k <= 6; ++k) {
    messages.push({ role: "user", content: `Question ${k}: go on.` });
    const r = await client.chat.completions.create({ model: "k3", messages, max_tokens: 16, temperature: 0,
      chat_template_kwargs: { thinking: false } });
    messages.push({ role: "assistant", content: r.choices[0].message.content ?? "" });
    seen.push({ k, prompt: r.usage.prompt_tokens, cached: r.usage.prompt_tokens_details.cached_tokens });
    if (k === 1) assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0);
    else assert.ok(r.usage.prompt_tokens_details.cached_tokens > 0, `turn ${k} reused nothing: ${JSON.stringify(seen)}`);
  }
  console.log(`# ${JSON.stringify(seen)}`);
  // Round robin: each replica served half the turns, so turns really moved
  // between them. (A request's log line may follow its response: wait for it.)
  const served = () => replicas.map((rep) => chatLines(rep.log()).length);
  for (let i = 0; i < 100 && served()[0] + served()[1] < 6; ++i) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(served(), [3, 3], JSON.stringify(seen));
  // And a replica resumed from files the other wrote.
  assert.ok(replicas.every((rep) => /cached=[1-9]/.test(chatLines(rep.log()).join("\n"))));
});
