import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack, workerProcessEnv, workflowBundle } from '../helpers/stack';
import { type MpfProcess, spawnMpf } from '../helpers/processes';
import type { LinkView, SwapView } from '../../src/workflows/messages';
import { WorkerUnavailableError } from '../../src/starter/client/errors';


describe('flows survive a worker process killed with SIGKILL', () => {
  let stack: Stack;
  let worker: MpfProcess | undefined;
  const startWorker = async () => {
    worker = spawnMpf(['worker'], workerProcessEnv(stack));
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
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('kill')));
    assert.equal(swap.state, 'awaiting_pin');
    await worker!.kill('SIGKILL');
    await startWorker();
    const outcome = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: SIM_PIN });
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
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('kill-link')));
    assert.equal(link.state, 'awaiting_payment');
    await worker!.kill('SIGKILL');
    const payload = { event: 'collection.completed', data: { payment_ref: link.payment_ref, status: 'successful', notification_id: 'n-1' } };
    await stack.mpf.deliverNotification(link.link_id, payload, JSON.stringify(payload));
    await startWorker();
    const final = (await stack.client.workflow.getHandle(link.link_id).result()) as LinkView;
    assert.equal(final.state, 'paid');
    assert.equal((await stack.control.ledger({ endpoint: 'link.create' })).requests.length, 1);
  });

  test('a worker SIGKILLed while the confirm POST is in flight: the retried confirm is told the token was used, and the swap settles confirmed', async () => {
    await worker?.kill();
    await startWorker();
    const txn = uniqueRef('kill-confirm');
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    // The provider takes 7 s to answer the first confirmation; the worker dies 2 s into it.
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'latency', latencyMs: [7000, 7000], times: 1 }] });
    await stack.mpf.submitPin(swap.swap_id, { wallet_pin: SIM_PIN }, { wait: false });
    await new Promise((r) => setTimeout(r, 2_500)); // the PIN reached the worker and the POST is in flight
    await worker!.kill('SIGKILL');
    await startWorker();
    // Once the dead worker's heartbeats stop (8 s) Temporal runs the confirmation again.
    const final = (await stack.client.workflow.getHandle(swap.swap_id).result()) as SwapView;
    const ledger = await stack.control.ledger({ ref: txn });
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1, 'the provider converted once');
    assert.equal(ledger.requests.filter((r) => r.endpoint === 'swap.confirm').length, 2, 'the confirmation was sent again after the crash');
    assert.equal(final.state, 'confirmed', final.reason);
    assert.match(final.reason!, /the provider's notification confirmed it/);
  });
});

describe('a worker killed mid-call is noticed by its heartbeat, inside the swap window', () => {
  let stack: Stack;
  let worker: MpfProcess | undefined;
  before(async () => {
    // A short provider window (25 s) and settle wait (2 s): a crash that is only noticed after the
    // activity's 30 s start-to-close would leave the swap in doubt.
    stack = await startStack({ noWorker: true, simulator: { swapExpiresInSeconds: 25 }, client: { swapSettleWaitSeconds: 2 } });
  });
  after(async () => {
    await worker?.kill();
    await stack?.stop();
  });

  test('a confirm POST left unanswered by a SIGKILLed worker is sent again within the window, and the swap confirms without reconciliation', { timeout: 240_000 }, async () => {
    // The workflows prebuilt (WORKER_WORKFLOW_BUNDLE), as an image ships them: the restarted
    // worker polls in seconds, not after a bundling that on a loaded machine outlasts the window.
    const bundleFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-durability-')), 'workflow-bundle.js');
    fs.writeFileSync(bundleFile, (await workflowBundle()).code);
    const start = async () => {
      worker = spawnMpf(['worker'], { ...workerProcessEnv(stack), WORKER_WORKFLOW_BUNDLE: bundleFile });
      await worker.waitFor(/worker: polling task queue/);
    };
    await start();
    const txn = uniqueRef('kill-hang');
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    // The first confirmation is never answered and never applied (the provider hangs on it).
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'hang', maxMs: 20_000, times: 1 }] });
    await stack.mpf.submitPin(swap.swap_id, { wallet_pin: SIM_PIN }, { wait: false });
    await new Promise((r) => setTimeout(r, 2_500)); // the POST is in flight
    await worker!.kill('SIGKILL');
    await start();
    // Until it ends, or parks in needs_reconciliation (which waits for an operator, so result() would not return).
    let final: SwapView | undefined;
    for (const until = Date.now() + 180_000; Date.now() < until; await new Promise((r) => setTimeout(r, 500))) {
      // Right after the restart a query may wait on the killed worker's sticky queue: asked again.
      const v = await stack.mpf.getSwap(swap.swap_id).catch((e: unknown) => {
        if (e instanceof WorkerUnavailableError) return undefined;
        throw e;
      });
      if (v && (['confirmed', 'failed', 'expired', 'cancelled', 'needs_reconciliation'].includes(v.state))) {
        final = v as unknown as SwapView;
        break;
      }
    }
    assert.ok(final, 'the swap neither ended nor parked within 180 s');
    const ledger = await stack.control.ledger({ ref: txn });
    assert.equal(ledger.requests.filter((r) => r.endpoint === 'swap.confirm').length, 2, `the confirmation was sent again after the crash (swap ${final.state}: ${final.reason ?? ''})`);
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1, 'the provider converted once');
    assert.equal(final.state, 'confirmed', final.reason);
  });
});

