/**
 * The soak's verdict on a swap that expired with its last confirmation held by the provider guard
 * (bench/soak/verify.ts): the provider must have received no request of *that* confirmation.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Flow } from '../../bench/soak/flows';
import { judge } from '../../bench/soak/verify';
import type { EffectEntry, RequestEntry } from '../../src/simulator/ledger';

const flow: Flow = { index: 0, phase: 'chaos', kind: 'swap', script: 'wrong_then_right', ref: 'r', id: 'swap-r', gateway: 0, notes: [], done: true };
const held = { state: 'expired', reason: 'the confirmation was held by the provider guard until the window closed, and never sent: no money moved (breaker open)' };
const confirm = (seq: number, status: RequestEntry['status']): RequestEntry => ({ seq, at: '', endpoint: 'swap.confirm', method: 'POST', path: '/swap/confirm', status, headers: {}, body: {} });
const effects: EffectEntry[] = [];

describe('the soak judges a swap whose last confirmation the guard held', () => {
  test('a wrong PIN whose first request hung and whose retry was refused is not the held confirmation: consistent', () => {
    const v = judge(flow, held, effects, [confirm(1, 'hang'), confirm(2, 400)]);
    assert.deepEqual(v.inconsistent, []);
  });

  test('a request after the last refusal that reached the provider contradicts "never sent"', () => {
    const v = judge(flow, held, effects, [confirm(1, 400), confirm(2, 'hang')]);
    assert.deepEqual(v.inconsistent, ['expired as never sent, but the provider received 1 confirmation(s)']);
  });
});
