import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, type Stack } from './helpers/stack';

const swapBody = (txn_ref: string, extra: Record<string, unknown> = {}) => ({
  user_ref: 'user-1',
  from_currency: 'USD',
  to_currency: 'NGN',
  amount: 10.5,
  txn_ref,
  ...extra,
});
const ref = (p: string) => `${p}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;

describe('the swap workflow through the typed client', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ simulator: { pins: { 'user-1': '4321' } } });
  });
  after(async () => {
    await stack?.stop();
  });

  test('initialises, shows the rate, and confirms with the right PIN', async () => {
    const txn = ref('happy');
    const started = await stack.mpf.startSwap(swapBody(txn));
    assert.equal(started.swap.state, 'awaiting_pin');
    assert.equal(started.swap.swap_id, `swap-${txn}`);
    assert.ok(started.swap.rate_used! > 0 && started.swap.converted_amount! > 0);
    assert.ok(started.pin_token.length >= 43);
    assert.ok(!JSON.stringify(started.swap).includes('auth_token'));
    const outcome = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: ' 4321 ' });
    assert.deepEqual(outcome, { outcome: 'confirmed', state: 'confirmed' });
    const ledger = await stack.control.ledger({ ref: txn });
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
  });

  test('answers pin_rejected with attempts left, then confirms', async () => {
    const started = await stack.mpf.startSwap(swapBody(ref('wrongpin')));
    const first = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: '0000' });
    assert.deepEqual(first, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    const second = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: '4321' });
    assert.equal(second?.outcome, 'confirmed');
  });
});
