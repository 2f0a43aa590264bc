// The web chat page on the trained k3-mini (the main browser test runs a
// tiny synthetic model tuned to stream long answers): a real question gets
// the model's own thinking in the collapsible panel and its answer below it.
// Screenshot: $K3_TEST_TMP/screens/web_chat-k3mini.png.
import test, { before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { launchBrowser, closeBrowser } from "../../scripts/node/k3_browser.mjs";
import { SOURCE_DIR, k3MiniContainer, sanitized, startServer } from "./serve_fixture.mjs";
import { chatView } from "./web_chat_view.mjs";

const TMP = process.env.K3_TEST_TMP ?? path.join(SOURCE_DIR, "build/release/testdata");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let server, browser, page;
const pageErrors = [];
const watchdog = setTimeout(async () => {
  console.error("web_chat_k3mini_test: watchdog fired, cleaning up");
  await closeBrowser(browser);
  server?.proc.kill("SIGKILL");
  process.exit(2);
}, 900_000);
watchdog.unref();

before(async () => {
  process.env.K3_SERVE_MODEL = k3MiniContainer();
  server = await startServer(["--model-name", "k3-mini"]);
  browser = await launchBrowser();
  page = await browser.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.setViewport({ width: 1100, height: 760 });
  await page.goto(server.url + "/", { waitUntil: "load" });
  await page.waitForSelector('#model-chip[data-state="ready"]');
}, { timeout: 120_000 });

after(async () => {
  clearTimeout(watchdog);
  await closeBrowser(browser);
  if (server) assert.equal((await server.stop()).code, 0);
});

test("k3-mini answers a definition question with thinking, then the answer", async () => {
  assert.equal(await page.$eval("#thinking-toggle", (e) => e.checked), true, "thinking is on by default");
  // Greedy: the server's default samples with a drawn seed, and a draw that
  // thinks for its whole budget made this test's time depend on luck.
  await page.click("#open-settings");
  await page.waitForSelector("#settings[open]");
  await page.$eval("#temperature-num", (e) => { e.value = ""; });
  await page.type("#temperature-num", "0");
  await page.click("#settings .dlg-foot .btn.primary");
  await page.waitForSelector("#settings:not([open])");
  await page.focus("#prompt");
  await page.type("#prompt", 'What does "house" mean?');
  await page.keyboard.press("Enter");
  // k3-mini thinks for a few hundred tokens: seconds in Release, minutes
  // under ASan+UBSan (the suite runs there too).
  const asan = sanitized(server.proc.pid);
  const seconds = asan ? 600 : 60;
  const end = Date.now() + seconds * 1000;
  let v;
  for (;;) {
    v = await chatView(page);
    assert.equal(v.banner, "", "the request failed");
    if (v.answer && !v.streaming) break;
    assert.ok(Date.now() < end, `the answer did not finish within ${seconds} s`);
    await sleep(100);
  }
  assert.ok(v.thinkingShown, "the thinking panel is shown");
  assert.match(v.thinking, /The user asks/, `the model's own think channel: ${v.thinking}`);
  assert.ok(v.answer.length > 5, `answer: ${v.answer}`);
  assert.doesNotMatch(v.answer, /<\|open\|>|<\|close\|>|think<\|sep\|>/, "no XTML structure in the visible answer");
  fs.mkdirSync(path.join(TMP, "screens"), { recursive: true });
  await page.screenshot({ path: path.join(TMP, "screens", "web_chat-k3mini.png") });
  assert.deepEqual(pageErrors, []);
});
