import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startEventListener, type ReceivedDelivery, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import type { LinkView } from '../../src/workflows/messages';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, spawnMpf } from '../helpers/processes';
import { eventually, startStack, type Stack, workerProcessEnv } from '../helpers/stack';

const SECRET = generateSecret();

describe('merchant events survive a failing receiver and a worker SIGKILLed mid-delivery (mpf worker processes)', () => {
  let stack: Stack;
  let listener: RunningListener;
  let worker: MpfProcess | undefined;
  let held: () => void = () => undefined;
  const holding = new Promise<void>((resolve) => (held = resolve));
  let holdDone = false;

  const startWorker = async (): Promise<void> => {
    worker = spawnMpf(['worker'], {
      ...workerProcessEnv(stack),
      // Configured once for every flow, as an operator would; the schedule compressed for the test.
      MERCHANT_WEBHOOK_URL: listener.url,
      MERCHANT_WEBHOOK_SECRET: SECRET,
      MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.3',
      MERCHANT_WEBHOOK_TIMEOUT_SECONDS: '3',
    });
    await worker.waitFor(/worker: polling task queue/);
  };

  before(async () => {
    listener = await startEventListener({
      secrets: [SECRET],
      // Every event: the first two attempts fail (500, then 503). The first event's third attempt is
      // held until the worker sending it is killed (its connection closes), then answered too late.
      answer: async (d: ReceivedDelivery, closed) => {
        if (d.attempt === 1) return 500;
        if (d.attempt === 2) return 503;
        if (d.attempt === 3 && d.event?.type === 'payment_link.created' && !holdDone) {
          holdDone = true;
          held();
          await closed;
        }
        return 200;
      },
    });
    stack = await startStack({ noWorker: true });
  });
  after(async () => {
    await worker?.kill();
    await stack?.stop();
    await listener?.close();
  });

  test('each event id is delivered successfully exactly once, in order', async () => {
    await startWorker();
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('ev-kill')));
    assert.equal(link.state, 'awaiting_payment');

    await holding; // the third attempt of payment_link.created is in flight
    await worker!.kill('SIGKILL');
    // The customer pays on the hosted checkout while no worker runs.
    const paid = await request(`${stack.sim.checkoutUrl}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ payment_ref: link.payment_ref!, action: 'complete' }).toString(),
    });
    await paid.body.dump();
    assert.equal(paid.statusCode, 303);
    await startWorker();

    const final = (await stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.equal(final.state, 'paid');
    const mine = (): ReceivedDelivery[] => listener.deliveries.filter((d) => d.id.startsWith(`evt_${link.link_id}_`));
    await eventually(async () => mine().filter((d) => d.status === 200).length >= 2, 60_000, 'both events delivered');

    const all = mine();
    assert.ok(all.every((d) => d.verified), 'every attempt carried a valid signature');
    const ok = all.filter((d) => d.status !== undefined && d.status >= 200 && d.status < 300);
    assert.deepEqual(
      ok.map((d) => d.event!.type),
      ['payment_link.created', 'payment_link.paid'],
      'exactly one successful delivery of each event id, in order',
    );
    assert.deepEqual(ok.map((d) => d.id), [`evt_${link.link_id}_1`, `evt_${link.link_id}_2`]);
    const created = all.filter((d) => d.event!.type === 'payment_link.created');
    assert.deepEqual(
      created.map((d) => d.status ?? 'aborted'),
      [500, 503, 'aborted', 200],
      'two failures, the attempt cut by the SIGKILL, then the delivery',
    );
    // Nothing of payment_link.paid went out before payment_link.created was delivered.
    const firstPaid = all.findIndex((d) => d.event!.type === 'payment_link.paid');
    const createdOk = all.findIndex((d) => d.event!.type === 'payment_link.created' && d.status === 200);
    assert.ok(createdOk < firstPaid, 'in order per flow');
    // The same id on every attempt (the receiver deduplicates by it); the body never changes.
    assert.equal(new Set(created.map((d) => d.body)).size, 1);

    // The flow's view shows the attempts.
    const view = await eventually(async () => {
      const v = await stack.mpf.getLink(link.link_id);
      return v.events?.every((e) => e.deliveries?.[0]?.state === 'delivered') && v;
    }, 20_000, 'deliveries in the view');
    const [c, p] = view.events!.map((e) => e.deliveries![0]!);
    assert.equal(c!.attempts, 4);
    assert.equal(c!.last_status, 200);
    assert.equal(p!.attempts, 3);
    assert.equal(c!.endpoint, new URL(listener.url).host);
  });
});
