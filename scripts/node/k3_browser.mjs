// Headless Debian chromium driven by npm puppeteer-core (no browser download:
// the system's /usr/bin/chromium, or K3_CHROMIUM). --no-sandbox because CI
// runs as root, where chromium refuses its sandbox.
import puppeteer from "puppeteer-core";

export const CHROMIUM = process.env.K3_CHROMIUM ?? "/usr/bin/chromium";

export async function launchBrowser() {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--disable-extensions"],
    timeout: 30_000,
    protocolTimeout: 60_000,
  });
}

// close(), and SIGKILL if chromium does not go within a few seconds.
export async function closeBrowser(browser) {
  if (!browser) return;
  const proc = browser.process();
  await Promise.race([browser.close().catch(() => {}), new Promise((r) => setTimeout(r, 5_000))]);
  if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
}
