import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type GatewayHarness, startGatewayStack, stopOwnTemporal, uniqueRef } from './helpers/gateway';
import { eventually } from './helpers/stack';

describe('starting a flow while no worker is running', () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack({ noWorker: true, client: { startAnswerTimeoutMs: 2_000 } });
  });
  after(async () => {
    await h?.stop();
    await stopOwnTemporal();
  });

  test('answers 504 with the swap id instead of hanging, and the swap goes on once a worker is back', async () => {
    const txn = uniqueRef('noworker');
    const started = Date.now();
    const res = await h.api('POST', '/v1/swaps', { user_ref: 'u', from_currency: 'USD', to_currency: 'NGN', amount: 3, txn_ref: txn });
    assert.equal(res.status, 504, res.text);
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
});
