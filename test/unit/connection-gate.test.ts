/** The provider client's connection gate: permits in arrival order, given back once, waits that end on abort. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConnectionGate } from '../../src/provider/connection-gate';

describe('the connection gate', () => {
  test('gives its permits at once, then to the waiting calls in the order they came', async () => {
    const gate = new ConnectionGate(2);
    const a = await gate.acquire();
    const b = await gate.acquire();
    const order: string[] = [];
    const c = gate.acquire().then((release) => (order.push('c'), release));
    const d = gate.acquire().then((release) => (order.push('d'), release));
    assert.equal(gate.waiting, 2);
    b();
    (await c)();
    a();
    (await d)();
    assert.deepEqual(order, ['c', 'd']);
    assert.equal(gate.waiting, 0);
  });

  test('counts a permit given back twice once', async () => {
    const gate = new ConnectionGate(1);
    const a = await gate.acquire();
    a();
    a();
    const b = await gate.acquire();
    let third = false;
    const c = gate.acquire().then(() => (third = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false, 'one permit, held by b');
    b();
    await c;
  });

  test('a wait that is aborted ends with the reason and takes no permit', async () => {
    const gate = new ConnectionGate(1);
    const a = await gate.acquire();
    const abort = new AbortController();
    const waiting = gate.acquire(abort.signal);
    const reason = new Error('cancelled');
    abort.abort(reason);
    await assert.rejects(waiting, (e: unknown) => e === reason);
    assert.equal(gate.waiting, 0);
    a();
    (await gate.acquire())();
    await assert.rejects(gate.acquire(AbortSignal.abort(reason)), (e: unknown) => e === reason, 'already aborted');
  });

  test('refuses a size below one', () => {
    assert.throws(() => new ConnectionGate(0), RangeError);
    assert.throws(() => new ConnectionGate(1.5), RangeError);
  });
});
