/**
 * Debian's Chromium driven by playwright-core. The test tools may not download a browser here, so
 * `scripts/chromium.sh` finds (or installs) the distribution's package and prints its path.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

const script = fileURLToPath(new URL("../../../scripts/chromium.sh", import.meta.url));

/** The Chromium executable, installed first when missing (the script explains on stderr why it cannot). */
export function chromiumPath(): string {
  return execFileSync("bash", [script], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 600_000 }).trim();
}

/**
 * A headless Chromium with a fresh throwaway profile (playwright-core makes one per launch).
 * The flags keep it quiet and offline: no QUIC, sync, component updates or background requests,
 * so the only traffic is the test's own, on 127.0.0.1.
 */
export function launchChromium(executablePath = chromiumPath()): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
