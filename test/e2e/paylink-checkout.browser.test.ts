/**
 * A payment link end to end in real headless Chromium: the merchant's backend creates it through
 * the gateway, the customer pays on the simulator's hosted checkout, lands on the merchant's
 * redirect_url, and the provider's notification to the gateway moves the workflow.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { type Receiver, startReceiver } from '../../src/simulator/receiver';
import type { LinkView } from '../../src/workflows/messages';
import { launchBrowser } from '../helpers/browser';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

describe('paying a payment link in a browser', () => {
  let h: GatewayHarness;
  let browser: Browser;
  let shop: Receiver; // the merchant's site: serves redirect_url

  before(async () => {
    browser = await launchBrowser();
    shop = await startReceiver(() => ({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<h1 id="thanks">Thank you for your order</h1>' }));
    h = await startGatewayStack();
  });
  after(async () => {
    await browser?.close();
    await shop?.close();
    await h?.stop();
    await stopOwnTemporal();
  });

  const createLink = async (ref: string) => {
    const r = await h.api('POST', '/v1/payment-links', linkBody(ref, { redirect_url: `${shop.url}/return?order=${ref}` }));
    assert.equal(r.status, 201, r.text);
    return r.json as LinkView;
  };
  const finalState = (id: string) => h.stack.client.workflow.getHandle(id).result() as Promise<LinkView>;

  for (const [label, button, status, state] of [
    ['I have completed the bank transfer', '#complete', 'successful', 'paid'],
    ['Payment failed', '#fail', 'failed', 'failed'],
  ] as const) {
    test(`the customer clicks "${label}" on the checkout, lands on redirect_url, and the link ends ${state}`, async () => {
      const ref = uniqueRef(`checkout-${state}`);
      const link = await createLink(ref);
      const page = await browser.newPage();
      try {
        const res = await page.goto(link.pay_link!);
        assert.equal(res?.status(), 200);
        assert.equal(await page.textContent('#amount'), 'NGN 25,000.00');
        assert.equal(await page.textContent('#payment-ref'), link.payment_ref);
        await Promise.all([page.waitForURL(`${shop.url}/return?**`), page.click(button)]);
        const landed = new URL(page.url());
        assert.equal(landed.searchParams.get('order'), ref);
        assert.equal(landed.searchParams.get('payment_ref'), link.payment_ref);
        assert.equal(landed.searchParams.get('status'), status);
        assert.equal(await page.textContent('#thanks'), 'Thank you for your order');
      } finally {
        await page.close();
      }
      const seen = await eventually(async () => {
        const r = await h.api('GET', `/v1/payment-links/${link.link_id}`);
        return r.json.state === state ? (r.json as LinkView) : undefined;
      }, 30_000, `link ${state}`);
      assert.equal(seen.notifications.filter((n) => n.applied).length, 1);
      assert.equal((await finalState(link.link_id)).state, state);
      const effects = (await h.stack.control.ledger({ ref })).effects;
      assert.deepEqual(
        effects.filter((e) => e.kind.startsWith('link.')).map((e) => [e.kind, e.details?.via]),
        [
          ['link.created', undefined],
          [state === 'paid' ? 'link.paid' : 'link.failed', 'checkout'],
        ],
      );
      const delivered = await h.stack.control.waitForEffect((e) => e.kind === 'notification.delivered' && e.ref === ref, 10_000);
      assert.equal(delivered.details?.http_status, 200);
    });
  }
});
