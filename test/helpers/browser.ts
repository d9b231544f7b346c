/**
 * Headless Chromium for browser tests (playwright-core drives the Debian chromium package).
 * A missing browser is an error, never a skip.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    throw new Error(
      `Chromium not found at ${executablePath}: run \`apt-get install -y chromium\` (or set CHROMIUM_PATH to a Chromium binary)`,
    );
  }
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}
