/**
 * The simulator's hosted checkout page driven in real headless Chromium: the customer completes,
 * fails or abandons the bank transfer; the browser lands on the merchant's redirect_url and the
 * notification reaches the merchant's receiver.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { request } from 'undici';
import { HostedLinkData, PROVIDER_PATHS, SimulatorNotification } from '../../src/contract/provider';
import { SimulatorControl } from '../../src/simulator/control-client';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index';
import { type Receiver, startReceiver } from '../../src/simulator/receiver';
import { launchBrowser } from '../helpers/browser';
import { providerLinkBody, uniqueRef } from '../helpers/fixtures';

let n = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hosted checkout in a browser', () => {
  let browser: Browser;
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let merchant: Receiver; // serves redirect_url (GET /return) and notification_url (POST /notify)

  before(async () => {
    browser = await launchBrowser();
    sim = await startSimulator({ seed: 11, merchantRef: 'acme-foods' });
    control = new SimulatorControl(sim.baseUrl);
    merchant = await startReceiver((r) =>
      r.method === 'GET'
        ? { status: 200, headers: { 'content-type': 'text/html' }, body: '<h1 id="thanks">Back at the merchant</h1>' }
        : { status: 200 },
    );
  });
  after(async () => {
    await browser?.close();
    await sim?.close();
    await merchant?.close();
  });

  async function createLink(): Promise<HostedLinkData> {
    const res = await request(`${sim.baseUrl}${PROVIDER_PATHS.hostedLink}`, {
      method: 'POST',
      headers: { authorization: 'Bearer sim-access-token', 'x-merchant-ref': 'acme-foods', 'content-type': 'application/json' },
      body: JSON.stringify(
        providerLinkBody(uniqueRef(`order-${++n}`), { redirect_url: `${merchant.url}/return?order=${n}`, notification_url: `${merchant.url}/notify` }),
      ),
    });
    assert.equal(res.statusCode, 200);
    return HostedLinkData.parse(((await res.body.json()) as { data: unknown }).data);
  }

  const notificationsFor = (paymentRef: string) =>
    merchant.received.filter((r) => r.method === 'POST' && (r.json as { data?: { payment_ref?: string } })?.data?.payment_ref === paymentRef);

  async function openPayLink(link: HostedLinkData): Promise<Page> {
    const page = await browser.newPage();
    const res = await page.goto(link.pay_link);
    assert.equal(res?.status(), 200);
    return page;
  }

  test('shows the amount, merchant and bank-transfer instruction, and completing it redirects and notifies', async () => {
    const link = await createLink();
    const page = await openPayLink(link);
    try {
      assert.equal(await page.textContent('#amount'), 'NGN 25,000.00');
      assert.equal(await page.textContent('#merchant'), 'acme-foods');
      assert.equal(await page.textContent('#txn-merchant-ref'), link.txn_merchant_ref);
      assert.match((await page.textContent('#instructions')) ?? '', /Account number: \d{10}/);

      await Promise.all([page.waitForURL(`${merchant.url}/return**`), page.click('#complete')]);
      const landed = new URL(page.url());
      assert.equal(landed.searchParams.get('order'), String(n));
      assert.equal(landed.searchParams.get('payment_ref'), link.payment_ref);
      assert.equal(landed.searchParams.get('status'), 'successful');
      assert.equal(await page.textContent('#thanks'), 'Back at the merchant');

      await merchant.waitFor(1, (r) => notificationsFor(link.payment_ref).includes(r));
      const note = SimulatorNotification.parse(notificationsFor(link.payment_ref)[0].json);
      assert.equal(note.event, 'collection.completed');
      assert.equal(note.data.status, 'successful');
      assert.equal(note.data.txn_merchant_ref, link.txn_merchant_ref);

      await page.goto(link.pay_link);
      assert.match((await page.textContent('#closed')) ?? '', /already been paid/);
      assert.equal(await page.$('#complete'), null, 'no way to pay twice');
    } finally {
      await page.close();
    }
  });

  test('reports a failed payment to the redirect and the notification', async () => {
    const link = await createLink();
    const page = await openPayLink(link);
    try {
      await Promise.all([page.waitForURL(`${merchant.url}/return**`), page.click('#fail')]);
      assert.equal(new URL(page.url()).searchParams.get('status'), 'failed');
      await merchant.waitFor(1, (r) => notificationsFor(link.payment_ref).includes(r));
      const note = SimulatorNotification.parse(notificationsFor(link.payment_ref)[0].json);
      assert.equal(note.event, 'collection.failed');
      assert.equal(note.data.status, 'failed');
      await page.goto(link.pay_link);
      assert.match((await page.textContent('#closed')) ?? '', /already failed/);
    } finally {
      await page.close();
    }
  });

  test('says the payment was abandoned on cancel, notifies nobody, and leaves the link payable', async () => {
    const link = await createLink();
    const page = await openPayLink(link);
    try {
      await Promise.all([page.waitForSelector('#abandoned'), page.click('#abandon')]);
      assert.equal(await page.textContent('#abandoned'), 'Payment abandoned');
      assert.ok(page.url().startsWith(sim.checkoutUrl), 'the customer stays on the checkout host');
      await sleep(300);
      assert.equal(notificationsFor(link.payment_ref).length, 0);
      const kinds = (await control.ledger({ ref: link.payment_ref })).effects.map((e) => e.kind);
      assert.deepEqual(kinds, ['link.created', 'link.abandoned']);

      await page.click('text=Return to the payment');
      await Promise.all([page.waitForURL(`${merchant.url}/return**`), page.click('#complete')]);
      assert.equal(new URL(page.url()).searchParams.get('status'), 'successful');
    } finally {
      await page.close();
    }
  });

  test('shows an unknown link as such', async () => {
    const page = await browser.newPage();
    try {
      const res = await page.goto(`${sim.checkoutUrl}/pay?payment_ref=nope`);
      assert.equal(res?.status(), 404);
      assert.equal(await page.textContent('#unknown'), 'Unknown payment link');
    } finally {
      await page.close();
    }
  });
});
