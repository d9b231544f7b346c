/**
 * The reference PIN-entry page in real headless Chromium, served by the gateway on the real
 * stack: the user opens pin_url, sees what they confirm, types the PIN and reads the outcome;
 * the PIN never stays in the page and the pin_token leaves the address bar at once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import type { SwapView } from '../../src/workflows/messages';
import { launchBrowser } from '../helpers/browser';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';

const PIN = '908172';
const WRONG_PIN = '111333';

describe('the PIN-entry page in a browser', () => {
  let h: GatewayHarness;
  let browser: Browser;

  before(async () => {
    browser = await launchBrowser();
    h = await startGatewayStack({ simulator: { pins: { 'user-7': PIN } } });
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
    await stopOwnTemporal();
  });

  const startSwap = async (txn: string) => {
    const r = await h.api('POST', '/v1/swaps', swapBody(txn, { user_ref: 'user-7' }));
    assert.equal(r.status, 201, r.text);
    return r.json as SwapView & { pin_url: string; pin_token: string };
  };

  /** Opens a page that records console errors and CSP violations. */
  async function open(url: string): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(url);
    return { page, problems };
  }
  const outcome = (page: Page, pattern: RegExp) =>
    page.waitForFunction((src) => new RegExp(src).test(document.getElementById('outcome')?.textContent ?? ''), pattern.source, { timeout: 30_000 });

  test('shows the amounts, takes a wrong then the right PIN, says "confirmed", and keeps no trace of the PIN', async () => {
    const txn = uniqueRef('page-happy');
    const s = await startSwap(txn);
    const { page, problems } = await open(s.pin_url);
    try {
      await page.waitForFunction(() => document.getElementById('amount')?.textContent?.startsWith('USD'));
      assert.equal(await page.textContent('#amount'), 'USD 10.50');
      assert.match((await page.textContent('#rate')) ?? '', /^1 USD = [\d,.]+ NGN$/);
      assert.match((await page.textContent('#converted')) ?? '', /^NGN [\d,]+\.\d\d$/);
      assert.match((await page.textContent('#time-left')) ?? '', /^[45]:\d\d$/);
      assert.equal(await page.textContent('#attempts'), '3');
      // The pin_token left the address bar (and the history entry) at once.
      assert.ok(!page.url().includes('#'), page.url());
      assert.ok(!page.url().includes(s.pin_token));
      assert.equal(await page.getAttribute('#pin', 'type'), 'password');
      assert.equal(await page.getAttribute('#pin', 'autocomplete'), 'off');

      await page.fill('#pin', WRONG_PIN);
      await page.click('#submit');
      await outcome(page, /Wrong PIN/);
      assert.equal(await page.textContent('#outcome'), 'Wrong PIN \u2014 2 attempts left');
      assert.equal(await page.inputValue('#pin'), '');

      await page.fill('#pin', PIN);
      await page.press('#pin', 'Enter');
      await outcome(page, /confirmed/);
      assert.equal(await page.textContent('#outcome'), 'Swap confirmed');
      assert.equal(await page.inputValue('#pin'), '');
      assert.equal(await page.isDisabled('#submit'), true);

      const html = await page.content();
      for (const secret of [PIN, WRONG_PIN, s.pin_token]) assert.ok(!html.includes(secret), 'a secret is in the DOM');
      assert.ok(!page.url().includes(PIN));
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
    assert.equal(((await h.stack.client.workflow.getHandle(s.swap_id).result()) as SwapView).state, 'confirmed');
    const kinds = (await h.stack.control.ledger({ ref: txn })).effects.map((e) => e.kind).filter((k) => k.startsWith('swap.'));
    assert.deepEqual(kinds, ['swap.initialized', 'swap.pin_rejected', 'swap.confirmed']);
  });

  test('says the swap has expired when its window closes while the page is open', async () => {
    await h.stack.control.setConfig({ swapExpiresInSeconds: 2 });
    try {
      const txn = uniqueRef('page-expire');
      const s = await startSwap(txn);
      const { page, problems } = await open(s.pin_url);
      try {
        await outcome(page, /expired/);
        assert.equal(await page.textContent('#outcome'), 'This swap has expired');
        assert.equal(await page.isDisabled('#submit'), true);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
      assert.equal(((await h.stack.client.workflow.getHandle(s.swap_id).result()) as SwapView).state, 'expired');
      assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.confirm' })).requests.length, 0);
    } finally {
      await h.stack.control.setConfig({ swapExpiresInSeconds: 300 });
    }
  });

  test("refuses to work without the link's token, or with another swap's", async () => {
    const a = await startSwap(uniqueRef('page-a'));
    const b = await startSwap(uniqueRef('page-b'));
    const bare = await open(`${h.gw.url}/pin/${a.swap_id}`);
    try {
      await outcome(bare.page, /incomplete/);
      assert.equal(await bare.page.isDisabled('#pin'), true);
    } finally {
      await bare.page.close();
    }
    const crossed = await open(`${h.gw.url}/pin/${a.swap_id}#token=${b.pin_token}`);
    try {
      await outcome(crossed.page, /not valid/);
      assert.equal(await crossed.page.isDisabled('#submit'), true);
      assert.equal(await crossed.page.textContent('#amount'), '\u2026');
    } finally {
      await crossed.page.close();
    }
    for (const s of [a, b]) await h.api('POST', `/v1/swaps/${s.swap_id}/cancel`);
    assert.equal((await h.stack.control.ledger({ ref: a.txn_ref, endpoint: 'swap.confirm' })).requests.length, 0);
  });
});
