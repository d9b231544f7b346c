import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, type Stack } from './helpers/stack';
import { type MpfProcess, spawnMpf } from './helpers/processes';
import type { LinkView, SwapView } from '../src/workflows/messages';

const ref = (p: string) => `${p}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;

describe('flows survive a worker process killed with SIGKILL', () => {
  let stack: Stack;
  let worker: MpfProcess | undefined;
  const startWorker = async () => {
    worker = spawnMpf(['worker'], {
      TEMPORAL_ADDRESS: stack.address,
      TEMPORAL_NAMESPACE: stack.namespace,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      MPS_BASE_URL: stack.sim.baseUrl,
      MPS_SECRET_KEY: 'sim-secret-key',
      MPS_ACCESS_TOKEN: 'sim-access-token',
      MPS_MERCHANT_REF: 'sim-merchant',
      PAYLOAD_ENCRYPTION_KEYS: stack.keys,
    });
    await worker.waitFor(/worker: polling task queue/);
  };

  before(async () => {
    stack = await startStack({ noWorker: true });
  });
  after(async () => {
    await worker?.kill();
    await stack?.stop();
  });

  test('a swap awaiting its PIN still confirms exactly once after the worker is killed and restarted', async () => {
    await startWorker();
    const { swap } = await stack.mpf.startSwap({
      user_ref: 'user-9',
      from_currency: 'USD',
      to_currency: 'NGN',
      amount: 5,
      txn_ref: ref('kill'),
    });
    assert.equal(swap.state, 'awaiting_pin');
    await worker!.kill('SIGKILL');
    await startWorker();
    const outcome = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '1234' });
    assert.equal(outcome?.outcome, 'confirmed');
    const final = (await stack.client.workflow.getHandle(swap.swap_id).result()) as SwapView;
    assert.equal(final.state, 'confirmed');
    const ledger = await stack.control.ledger({ ref: swap.txn_ref });
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.initialized').length, 1);
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
  });

  test('a payment link notified while no worker runs completes once a worker is back', async () => {
    await worker?.kill();
    await startWorker();
    const { link } = await stack.mpf.createLink({
      user_ref: 'cust-9',
      txn_merchant_ref: ref('kill-link'),
      amount: 1000,
      full_name: 'Ada Obi',
      email: 'ada@example.com',
      phone: '+2348012345678',
      redirect_url: 'http://127.0.0.1:9/thanks',
    });
    assert.equal(link.state, 'awaiting_payment');
    await worker!.kill('SIGKILL');
    const payload = { event: 'collection.completed', data: { payment_ref: link.payment_ref, status: 'successful', notification_id: 'n-1' } };
    await stack.mpf.deliverNotification(link.link_id, payload, JSON.stringify(payload));
    await startWorker();
    const final = (await stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.equal(final.state, 'paid');
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 1);
  });
});
