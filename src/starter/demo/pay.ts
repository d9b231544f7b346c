/**
 * Pays a payment link the way a customer would: its checkout page in real headless Chromium
 * (playwright-core driving Debian's chromium) when one is available, else through the
 * simulator's control API (the same state change, no browser). Says which it used.
 */
import { existsSync } from 'node:fs';
import type * as Playwright from 'playwright-core';
import { request } from 'undici';
import { cliSetting } from '../../config/cli-env';
import { createControlClient } from '../../simulator/control-client';

const DEMO_CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

export interface PaymentResult {
  via: 'browser' | 'control-api';
  /** Why the browser was not used (control-api only). */
  why?: string;
  /** Where the customer's browser was sent after paying. */
  landedOn: string;
  /** What the landing page said (its #status, or the HTTP status of a plain GET). */
  landingStatus: string;
}

function chromiumPath(): string {
  return cliSetting('CHROMIUM_PATH');
}

export async function payLink(opts: {
  payLink: string;
  paymentRef: string;
  simulatorUrl: string;
  redirectPrefix: string;
  say: (line: string) => void;
}): Promise<PaymentResult> {
  const executablePath = chromiumPath();
  let why: string;
  if (!existsSync(executablePath)) {
    why = `no Chromium at ${executablePath}; set CHROMIUM_PATH to use one`;
  } else {
    let chromium: typeof Playwright.chromium | undefined;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      chromium = (require('playwright-core') as typeof Playwright).chromium;
    } catch {
      chromium = undefined;
    }
    if (!chromium) {
      why = 'playwright-core is not installed';
    } else {
      try {
        opts.say(`paying in headless Chromium (${executablePath}): opening pay_link and clicking "I have completed the bank transfer"`);
        return await payInBrowser(chromium, executablePath, opts);
      } catch (e) {
        why = `the browser failed: ${(e as Error).message.split('\n')[0]}`;
      }
    }
  }
  opts.say(`paying through the simulator's control API instead of a browser (${why})`);
  const outcome = await createControlClient(opts.simulatorUrl).completeLink(opts.paymentRef);
  // Follow the redirect a browser would have followed, to show the merchant page answers.
  const res = await request(outcome.redirect_to, { method: 'GET' });
  await res.body.dump();
  return { via: 'control-api', why, landedOn: outcome.redirect_to, landingStatus: `HTTP ${res.statusCode}` };
}

async function payInBrowser(
  chromium: typeof Playwright.chromium,
  executablePath: string,
  opts: { payLink: string; redirectPrefix: string },
): Promise<PaymentResult> {
  const browser = await chromium.launch({ executablePath, args: DEMO_CHROMIUM_ARGS, timeout: 30_000 });
  try {
    const page = await browser.newPage();
    await page.goto(opts.payLink, { timeout: 30_000 });
    await Promise.all([
      page.waitForURL((u) => u.toString().startsWith(opts.redirectPrefix), { timeout: 30_000 }),
      page.click('#complete'),
    ]);
    const landingStatus = (await page.locator('#status').textContent({ timeout: 10_000 }))?.trim() ?? '';
    return { via: 'browser', landedOn: page.url(), landingStatus };
  } finally {
    await browser.close();
  }
}
