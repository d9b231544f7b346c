import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NotificationGuard } from '../../src/starter/gateway/notification-guard';

describe("the gateway's notification guard", () => {
  test('signals a dedup key once per flow and answers later deliveries of it as duplicates', () => {
    const g = new NotificationGuard();
    assert.equal(g.admit('paylink-a', 'id:n1'), 'signal');
    g.settle('paylink-a', 'id:n1', true);
    assert.equal(g.admit('paylink-a', 'id:n1'), 'duplicate');
    assert.equal(g.admit('paylink-b', 'id:n1'), 'signal', 'another flow is another key space');
  });

  test('a key whose signal failed may be signalled again', () => {
    const g = new NotificationGuard();
    assert.equal(g.admit('paylink-a', 'id:n1'), 'signal');
    g.settle('paylink-a', 'id:n1', false);
    assert.equal(g.admit('paylink-a', 'id:n1'), 'signal');
  });

  test('bounds the signals one flow receives from this process', () => {
    const g = new NotificationGuard({ maxSignalsPerFlow: 3 });
    const verdicts = Array.from({ length: 5 }, (_, i) => g.admit('paylink-a', `id:${i}`));
    assert.deepEqual(verdicts, ['signal', 'signal', 'signal', 'over_limit', 'over_limit']);
    assert.equal(g.admit('paylink-a', 'id:0'), 'duplicate', 'a known duplicate is still acknowledged');
    assert.equal(g.admit('paylink-other', 'id:0'), 'signal');
  });

  test('forgets the least recently used flows and keys beyond its bounds', () => {
    const g = new NotificationGuard({ maxFlows: 2, maxKeysPerFlow: 2 });
    for (const k of ['k1', 'k2', 'k3']) g.settle('f', k, g.admit('f', k) === 'signal');
    assert.equal(g.admit('f', 'k1'), 'signal', 'k1 was evicted');
    g.admit('g', 'x');
    g.admit('h', 'x');
    assert.equal(g.admit('f', 'k3'), 'signal', 'flow f was evicted');
  });
});
