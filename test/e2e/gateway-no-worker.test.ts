import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser';
import { eventually } from '../helpers/stack';

describe('starting a flow while no worker is running', () => {
  let h: GatewayHarness;
  let browser: Browser | undefined;
  before(async () => {
    h = await startGatewayStack({ noWorker: true, client: { startAnswerTimeoutMs: 2_000, pinAnswerTimeoutMs: 2_000, queryAnswerTimeoutMs: 2_000, categoriesAnswerTimeoutMs: 2_000 } });
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
    await stopOwnTemporal();
  });

  test('answers the category list with 503 worker_unavailable and Retry-After instead of hanging', async () => {
    await h.stack.stopWorker();
    const started = Date.now();
    const res = await h.api('GET', '/v1/categories');
    assert.equal(res.status, 503, res.text);
    assert.equal(res.json.error, 'worker_unavailable');
    assert.ok(res.headers['retry-after']);
    assert.ok(Date.now() - started < 10_000, 'answered within the configured bound (not a hang)');
  });

  test('answers 504 with the swap id instead of hanging, and the swap goes on once a worker is back', async () => {
    const txn = uniqueRef('noworker');
    const started = Date.now();
    const res = await h.api('POST', '/v1/swaps', swapBody(txn));
    assert.equal(res.status, 504, `${res.text}\n${h.logs.filter((l) => l.includes('request failed')).join('\n')}`);
    assert.equal(res.json.error, 'pending');
    assert.equal(res.json.flow_id, `swap-${txn}`);
    assert.ok(Date.now() - started < 20_000, 'answered within the configured bound (not a hang)');
    assert.equal((await h.stack.control.ledger({ endpoint: 'swap.init' })).requests.length, 0, 'no provider call yet');
    await h.stack.startWorker();
    const view = await eventually(async () => {
      const v = await h.api('GET', `/v1/swaps/swap-${txn}`);
      return v.json?.state === 'awaiting_pin' && v.json;
    }, 30_000, 'the swap to initialise');
    assert.equal(view.txn_ref, txn);
    assert.equal((await h.stack.control.ledger({ endpoint: 'swap.init' })).requests.length, 1);
  });

  test('a PIN sent while the worker is down is refused 503 with Retry-After before it reaches the swap, and goes through once the worker is back', async () => {
    await h.stack.startWorker();
    const txn = uniqueRef('noworker-pin');
    const started = await h.api('POST', '/v1/swaps', swapBody(txn));
    assert.equal(started.status, 201, started.text);
    await h.stack.stopWorker();
    const sent = Date.now();
    const pin = () =>
      h.call('POST', `/v1/swaps/swap-${txn}/pin`, {
        body: { wallet_pin: SIM_PIN },
        headers: { authorization: `Bearer ${started.json.pin_token}` },
      });
    // No worker answers for the user's wrong-PIN budget: the gate fails closed.
    const res = await pin();
    assert.equal(res.status, 503, res.text);
    assert.equal(res.json.error, 'pin_budget_unavailable');
    assert.equal(res.json.flow_id, `swap-${txn}`);
    assert.match(String(res.headers['retry-after']), /^\d+$/);
    assert.ok(!res.text.includes(SIM_PIN), 'the PIN is not echoed');
    assert.ok(Date.now() - sent < 20_000, 'answered within the configured bound (not a hang)');

    const looked = Date.now();
    const down = await h.api('GET', `/v1/swaps/swap-${txn}`);
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json.error, 'worker_unavailable');
    assert.equal(down.json.flow_id, `swap-${txn}`);
    assert.equal(down.json.last_known_state, 'awaiting_pin');
    assert.equal(down.headers['retry-after'], '5');
    assert.ok(Date.now() - looked < 20_000, 'a state lookup is bounded too');

    await h.stack.startWorker();
    const view = await eventually(async () => {
      const v = await h.api('GET', `/v1/swaps/swap-${txn}`);
      return v.status === 200 && v.json;
    }, 30_000, 'the worker to answer');
    assert.equal(view.state, 'awaiting_pin', 'the refused PIN was never applied');
    assert.equal(view.pin_attempts_left, 3, 'and spent no attempt');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.confirm' })).requests.length, 0, 'nothing reached the provider');
    // A restarted worker holds money-moving calls until it has read the provider guard (it reads it
    // every second once the guard answers): this test's 2 s PIN bound leaves no room for that wait.
    await eventually(async () => (await h.api('GET', '/v1/admin/provider')).status === 200, 30_000, 'the provider guard to answer');
    await new Promise((r) => setTimeout(r, 1_500));
    const again = await pin();
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.outcome, 'confirmed');
    assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.confirm' })).requests.length, 1, 'one confirmation');

    // A finished swap's final view is its result, which the server keeps: no worker needed.
    await eventually(async () => (await h.stack.client.workflow.getHandle(`swap-${txn}`).describe()).status.name === 'COMPLETED', 30_000, 'the swap to close');
    await h.stack.stopWorker();
    const closed = await h.api('GET', `/v1/swaps/swap-${txn}`);
    assert.equal(closed.status, 200, closed.text);
    assert.equal(closed.json.state, 'confirmed');
    assert.equal(closed.json.txn_ref, txn);
    assert.ok(!closed.text.includes('auth_token') && !closed.text.includes('sealed:'), 'the same allow-listed view');
  });

  test('the PIN page says the PIN was not sent while the worker is down, and confirms when typed again once it is back', async () => {
    browser = await launchBrowser();
    await h.stack.startWorker();
    const txn = uniqueRef('noworker-page');
    const started = await h.api('POST', '/v1/swaps', swapBody(txn));
    assert.equal(started.status, 201, started.text);
    const page = await browser.newPage();
    try {
      await page.goto(started.json.pin_url);
      await page.waitForFunction(() => !(document.getElementById('pin') as HTMLInputElement).disabled);
      await h.stack.stopWorker(); // the worker goes down while the user types
      await page.fill('#pin', SIM_PIN);
      await page.click('#submit');
      await page.waitForFunction(() => /PIN was not sent/.test(document.getElementById('outcome')?.textContent ?? ''), undefined, { timeout: 20_000 });
      assert.equal(await page.isDisabled('#pin'), false, 'the PIN field opens again: nothing was spent');
      assert.equal(await page.inputValue('#pin'), '', 'the PIN is not kept in the page');
      assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.confirm' })).requests.length, 0, 'nothing reached the provider');
      await h.stack.startWorker();
      await eventually(async () => (await h.api('GET', `/v1/swaps/swap-${txn}`)).status === 200, 30_000, 'the worker to answer');
      await page.fill('#pin', SIM_PIN);
      await page.click('#submit');
      await page.waitForFunction(() => document.getElementById('outcome')?.textContent === 'Swap confirmed', undefined, { timeout: 30_000 });
      assert.equal((await h.stack.control.ledger({ ref: txn, endpoint: 'swap.confirm' })).requests.length, 1, 'one confirmation');
    } finally {
      await page.close();
    }
  });
});
