/**
 * "A flow is never lost" when the Temporal server itself crashes: a dev server of the test's own,
 * SQLite on a file, killed with SIGKILL while a swap awaits its PIN and a payment link awaits its
 * payment, then started again on the same database and port. The in-process worker and the
 * client reconnect by themselves; the flows go on from where they were, with exactly one provider
 * call of each kind. (SQLite runs with synchronous=OFF: a killed process loses nothing, since its
 * writes are in the OS page cache; a power cut could, which is why production uses PostgreSQL.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import type { LinkView, SwapView } from '../../src/workflows/messages';
import { eventually, startStack, type Stack } from '../helpers/stack';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';

describe('flows survive the Temporal server killed with SIGKILL', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-crash-'));
  const dbFile = path.join(dir, 'temporal.db');
  let port: number;
  let server: DevServer;
  let stack: Stack;

  before(async () => {
    server = await startDevServer({ dbFile, unref: true });
    port = Number(server.address.split(':').pop()); // the restart comes back on the same address
    stack = await startStack({ temporal: { address: server.address, namespace: server.namespace } });
  });
  after(async () => {
    await stack?.stop();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a swap awaiting its PIN and a link awaiting payment both finish once after the server restarts on its database', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('crash')));
    assert.equal(swap.state, 'awaiting_pin');
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('crash-link')));
    assert.equal(link.state, 'awaiting_payment');

    const crashed = server.pid;
    await server.kill();
    assert.throws(() => process.kill(crashed, 0), 'the first server process is gone');
    server = await startDevServer({ dbFile, port, unref: true });
    assert.notEqual(server.pid, crashed);

    // The worker polls again by itself: the swap answers its state query once it does.
    const before = await eventually(() => stack.mpf.getSwap(swap.swap_id).catch(() => undefined), 60_000, 'the worker to answer after the restart');
    assert.equal(before.state, 'awaiting_pin');
    const outcome = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: SIM_PIN });
    assert.equal(outcome?.outcome, 'confirmed');
    assert.equal(((await stack.client.workflow.getHandle(swap.swap_id).result()) as SwapView).state, 'confirmed');

    // The provider's notification, as the gateway's receiver hands it on.
    const payload = { event: 'collection.completed', data: { payment_ref: link.payment_ref, status: 'successful', notification_id: 'n-crash' } };
    await stack.mpf.deliverNotification(link.link_id, payload, JSON.stringify(payload));
    assert.equal(((await stack.client.workflow.getHandle(link.link_id).result()) as LinkView).state, 'paid');

    const swapLedger = await stack.control.ledger({ ref: swap.txn_ref });
    assert.equal(swapLedger.effects.filter((e) => e.kind === 'swap.initialized').length, 1);
    assert.equal(swapLedger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
    const linkLedger = await stack.control.ledger({ ref: link.txn_merchant_ref });
    assert.equal(linkLedger.requests.filter((r) => r.endpoint === 'link.create').length, 1);
  });
});
