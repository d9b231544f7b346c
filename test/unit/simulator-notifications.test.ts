/**
 * The simulator's notifications, delivered over real HTTP to a local receiver: payload shape,
 * retry until acknowledged, giving up, duplicates, stale out-of-order deliveries, delays,
 * refusal of non-loopback URLs, and cancellation on reset.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { PROVIDER_PATHS, SimulatorNotification, mapNotificationOutcome } from '../../src/contract/provider';
import { SimulatorControl } from '../../src/simulator/control-client';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index';
import { notificationHostAllowed } from '../../src/simulator/notifier';
import { type Receiver, startReceiver } from '../../src/simulator/receiver';
import { providerLinkBody, providerSwapBody, SIM_PIN, uniqueRef } from '../helpers/fixtures';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createLink(sim: RunningSimulator, notificationUrl: string): Promise<{ payment_ref: string; txn_merchant_ref: string }> {
  const txn_merchant_ref = uniqueRef('link');
  const res = await request(`${sim.baseUrl}${PROVIDER_PATHS.hostedLink}`, {
    method: 'POST',
    headers: { authorization: 'Bearer sim-access-token', 'x-merchant-ref': 'sim-merchant', 'content-type': 'application/json' },
    body: JSON.stringify(providerLinkBody(txn_merchant_ref, { amount: 1500.5, notification_url: notificationUrl })),
  });
  assert.equal(res.statusCode, 200);
  const body = (await res.body.json()) as { data: { payment_ref: string } };
  return { payment_ref: body.data.payment_ref, txn_merchant_ref };
}

const parse = (r: { json?: unknown }) => SimulatorNotification.parse(r.json);

describe('simulator notifications', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };

  before(async () => {
    sim = await startSimulator({ seed: 5, notificationRetryScheduleMs: [0, 100, 100] });
    control = new SimulatorControl(sim.baseUrl);
  });
  after(async () => {
    await sim.close();
    await Promise.all(receivers.map((r) => r.close()));
  });
  beforeEach(async () => {
    await control.reset();
    await control.setConfig({ notificationRetryScheduleMs: [0, 100, 100] });
    await Promise.all(receivers.map((r) => r.close()));
    receivers = [];
  });

  test('posts a collection.completed notification when a link is paid', async () => {
    const rx = await receiver();
    const link = await createLink(sim, `${rx.url}/hooks/abc`);
    await control.completeLink(link.payment_ref);
    const [got] = await rx.waitFor(1);
    assert.equal(got.method, 'POST');
    assert.equal(got.path, '/hooks/abc');
    assert.match(String(got.headers['content-type']), /application\/json/);
    const note = parse(got);
    assert.equal(note.event, 'collection.completed');
    assert.equal(note.data.status, 'successful');
    assert.equal(note.data.payment_ref, link.payment_ref);
    assert.equal(note.data.txn_merchant_ref, link.txn_merchant_ref);
    assert.equal(note.data.amount, 1500.5);
    assert.equal(note.data.currency, 'NGN');
    assert.equal(note.data.sequence, 2);
    assert.equal(mapNotificationOutcome(note), 'paid');
    const delivered = await control.waitForEffect((e) => e.kind === 'notification.delivered', 2000, { ref: link.payment_ref });
    assert.equal(delivered.details?.notification_id, note.data.notification_id);
  });

  test('posts collection.failed when a link fails', async () => {
    const rx = await receiver();
    const link = await createLink(sim, `${rx.url}/hook`);
    await control.failLink(link.payment_ref);
    const note = parse((await rx.waitFor(1))[0]);
    assert.equal(note.event, 'collection.failed');
    assert.equal(note.data.status, 'failed');
    assert.equal(mapNotificationOutcome(note), 'failed');
  });

  test('posts swap.completed to the swap notification_url after confirmation', async () => {
    const rx = await receiver();
    const txn_ref = uniqueRef('swap');
    const headers = { authorization: 'Bearer sim-secret-key', 'content-type': 'application/json' };
    const init = await request(`${sim.baseUrl}${PROVIDER_PATHS.swapInit}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(providerSwapBody(txn_ref, { notification_url: `${rx.url}/swap` })),
    });
    const data = ((await init.body.json()) as { data: { auth_token: string; payment_ref: string } }).data;
    const conf = await request(`${sim.baseUrl}${PROVIDER_PATHS.swapConfirm}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ user_ref: 'user-1', auth_token: data.auth_token, wallet_pin: SIM_PIN }),
    });
    assert.equal(conf.statusCode, 200);
    await conf.body.dump();
    const note = parse((await rx.waitFor(1))[0]);
    assert.equal(note.event, 'swap.completed');
    assert.equal(note.data.status, 'successful');
    assert.equal(note.data.txn_ref, txn_ref);
    assert.equal(note.data.payment_ref, data.payment_ref);
    assert.ok(!JSON.stringify(note).includes(data.auth_token), 'the notification does not carry the auth_token');
  });

  test('retries on the schedule until the receiver acknowledges with a 2xx', async () => {
    const rx = await receiver((_r, i) => ({ status: i === 0 ? 500 : 200 }));
    const link = await createLink(sim, `${rx.url}/hook`);
    await control.completeLink(link.payment_ref);
    const [a, b] = await rx.waitFor(2);
    assert.equal(parse(a).data.notification_id, parse(b).data.notification_id);
    await control.waitForEffect((e) => e.kind === 'notification.delivered', 2000, { ref: link.payment_ref });
    const effects = (await control.ledger({ ref: link.payment_ref })).effects.filter((e) => e.kind.startsWith('notification.'));
    assert.deepEqual(
      effects.map((e) => [e.kind, e.details?.attempt, e.details?.http_status]),
      [
        ['notification.failed_attempt', 1, 500],
        ['notification.delivered', 2, 200],
      ],
    );
    await sleep(300);
    assert.equal(rx.received.length, 2, 'no attempt after the acknowledgement');
  });

  test('gives up after the last attempt of the schedule', async () => {
    const rx = await receiver(() => ({ status: 503 }));
    const link = await createLink(sim, `${rx.url}/hook`);
    await control.completeLink(link.payment_ref);
    await rx.waitFor(3);
    const last = await control.waitForEffect((e) => e.kind === 'notification.failed_attempt' && e.details?.gave_up === true, 2000, {
      ref: link.payment_ref,
    });
    assert.equal(last.details?.attempt, 3);
    await sleep(300);
    assert.equal(rx.received.length, 3);
    const kinds = (await control.ledger({ ref: link.payment_ref })).effects.map((e) => e.kind);
    assert.ok(!kinds.includes('notification.delivered'));
  });

  test('delivers extra copies of the same notification under the duplicate fault', async () => {
    await control.setFaults({ rules: [], notifications: { duplicate: 2 } });
    const rx = await receiver();
    const link = await createLink(sim, `${rx.url}/hook`);
    await control.completeLink(link.payment_ref);
    const got = await rx.waitFor(3);
    const ids = got.map((r) => parse(r).data.notification_id);
    assert.equal(new Set(ids).size, 1);
    await sleep(200);
    assert.equal(rx.received.length, 3);
  });

  test('delivers a stale pending notification after the final one under the reorder fault', async () => {
    await control.setFaults({ notifications: { reorder: true } });
    const rx = await receiver();
    const link = await createLink(sim, `${rx.url}/hook`);
    await control.completeLink(link.payment_ref);
    const [first, second] = (await rx.waitFor(2)).map(parse);
    assert.equal(first.data.status, 'successful');
    assert.equal(second.data.status, 'pending');
    assert.equal(mapNotificationOutcome(second), 'pending');
    assert.ok(second.data.sequence < first.data.sequence, 'the stale one carries the lower sequence');
    assert.ok(second.data.occurred_at <= first.data.occurred_at);
    assert.equal(second.data.payment_ref, link.payment_ref);
  });

  test('delays the first delivery under the delay fault', async () => {
    await control.setFaults({ notifications: { delayMs: 400 } });
    const rx = await receiver();
    const link = await createLink(sim, `${rx.url}/hook`);
    const started = Date.now();
    await control.completeLink(link.payment_ref);
    await sleep(150);
    assert.equal(rx.received.length, 0, 'not delivered yet');
    const [got] = await rx.waitFor(1);
    assert.ok(got.at - started >= 390);
  });

  test('refuses to deliver to a non-loopback notification_url and records the refusal', async () => {
    const link = await createLink(sim, 'http://notifications.example.invalid/hook');
    await control.completeLink(link.payment_ref);
    const refused = await control.waitForEffect((e) => e.kind === 'notification.refused', 2000, { ref: link.payment_ref });
    assert.equal(refused.details?.host, 'notifications.example.invalid');
    await sleep(100);
    const kinds = (await control.ledger({ ref: link.payment_ref })).effects.map((e) => e.kind);
    assert.deepEqual(kinds, ['link.created', 'link.paid', 'notification.refused']);
  });

  test('allows loopback notification hosts, and other hosts only when listed at start', () => {
    for (const h of ['127.0.0.1', '127.3.2.1', 'localhost', '[::1]', '::1']) assert.equal(notificationHostAllowed(h, []), true, h);
    for (const h of ['gateway', '10.0.0.1', '192.168.1.1', 'example.com', '128.0.0.1']) assert.equal(notificationHostAllowed(h, []), false, h);
    assert.equal(notificationHostAllowed('gateway', ['gateway']), true);
    assert.equal(notificationHostAllowed('Gateway', ['gateway']), true);
    assert.equal(notificationHostAllowed('gateway.evil', ['gateway']), false);
  });

  test('stops pending retries on reset', async () => {
    await control.setConfig({ notificationRetryScheduleMs: [0, 400, 400] });
    const rx = await receiver(() => ({ status: 500 }));
    const link = await createLink(sim, `${rx.url}/hook`);
    await control.completeLink(link.payment_ref);
    await rx.waitFor(1);
    await control.reset();
    await sleep(1000);
    assert.equal(rx.received.length, 1);
  });
});
