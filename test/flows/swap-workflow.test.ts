import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { startStack, type Stack } from '../helpers/stack';
import { payloadCodecs } from '../../src/codec/data-converter';
import type { SwapView } from '../../src/workflows/messages';

describe('the swap workflow through the typed client', () => {
  let stack: Stack;
  const confirmRequests = async () => (await stack.control.ledger({ endpoint: 'swap.confirm' })).requests.length;
  const result = (id: string) => stack.client.workflow.getHandle(id).result() as Promise<SwapView>;

  before(async () => {
    stack = await startStack({ simulator: { pins: { 'user-1': '4321' } } });
  });
  after(async () => {
    await stack?.stop();
  });
  beforeEach(async () => {
    await stack.control.reset();
    await stack.control.setConfig({ swapExpiresInSeconds: 300 });
  });

  test('initialises, shows the rate, and confirms with the right PIN', async () => {
    const txn = uniqueRef('happy');
    const started = await stack.mpf.startSwap(swapBody(txn));
    assert.equal(started.swap.state, 'awaiting_pin');
    assert.equal(started.swap.swap_id, `swap-${txn}`);
    assert.ok(started.swap.rate_used! > 0 && started.swap.converted_amount! > 0);
    assert.ok(started.pin_token.length >= 43);
    assert.ok(!JSON.stringify(started.swap).includes('auth_token'));
    const outcome = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: ' 4321 ' });
    assert.deepEqual(outcome, { outcome: 'confirmed', state: 'confirmed' });
    const final = await result(started.swap.swap_id);
    assert.equal(final.state, 'confirmed');
    const ledger = await stack.control.ledger({ ref: txn });
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
  });

  test('answers pin_rejected with attempts left, then confirms', async () => {
    const started = await stack.mpf.startSwap(swapBody(uniqueRef('wrongpin')));
    const first = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: '0000' });
    assert.deepEqual(first, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    const view = await stack.mpf.getSwap(started.swap.swap_id);
    assert.equal(view.pin_attempts_left, 2);
    const second = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: '4321' });
    assert.equal(second?.outcome, 'confirmed');
    assert.equal(await confirmRequests(), 2);
  });

  test('fails closed after three wrong PINs and makes no further confirm call', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('exhaust')));
    for (const left of [2, 1]) {
      assert.deepEqual(await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '1111' }), {
        outcome: 'pin_rejected',
        state: 'awaiting_pin',
        attempts_left: left,
      });
    }
    const last = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '1111' });
    assert.deepEqual(last, { outcome: 'pin_rejected', state: 'failed', attempts_left: 0 });
    const final = await result(swap.swap_id);
    assert.equal(final.state, 'failed');
    assert.match(final.reason!, /attempts exhausted/);
    await assert.rejects(stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' }));
    assert.equal(await confirmRequests(), 3);
  });

  test('expires when no PIN arrives inside a short provider window, with no confirm call', async () => {
    await stack.control.setConfig({ swapExpiresInSeconds: 2 });
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('expire')));
    assert.equal(swap.expires_in_seconds, 2);
    const final = await result(swap.swap_id);
    assert.equal(final.state, 'expired');
    assert.equal(await confirmRequests(), 0);
  });

  test('the expiry leaves a safety margin before the provider window', async () => {
    await stack.control.setConfig({ swapExpiresInSeconds: 60 });
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('margin')));
    const msLeft = Date.parse(swap.expires_at!) - Date.now();
    assert.ok(msLeft <= 55_000 && msLeft > 40_000, `expires_at is window less 5 s (left: ${msLeft} ms)`);
    await stack.mpf.cancelSwap(swap.swap_id);
  });

  test('cancel ends a swap awaiting its PIN, and a later PIN is refused', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('cancel')));
    await stack.mpf.cancelSwap(swap.swap_id, 'user changed their mind');
    const final = await result(swap.swap_id);
    assert.equal(final.state, 'cancelled');
    assert.equal(final.reason, 'user changed their mind');
    await assert.rejects(stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' }));
    assert.equal(await confirmRequests(), 0);
  });

  test('a second start with the same txn_ref is refused and never reaches the provider', async () => {
    const txn = uniqueRef('dup');
    await stack.mpf.startSwap(swapBody(txn));
    await assert.rejects(stack.mpf.startSwap(swapBody(txn, { amount: 99 })), (err: Error & { existing?: SwapView }) => {
      assert.equal(err.name, 'DuplicateFlowError');
      assert.equal(err.existing?.amount, 10.5);
      return true;
    });
    const ledger = await stack.control.ledger({ endpoint: 'swap.init' });
    assert.equal(ledger.requests.length, 1);
  });

  test('bad input names the field and starts nothing', async () => {
    const txn = uniqueRef('bad');
    await assert.rejects(stack.mpf.startSwap(swapBody(txn, { amount: -5 })), /amount: must be greater than 0/);
    await assert.rejects(stack.mpf.startSwap(swapBody(txn, { from_currency: 'usd' })), /from_currency/);
    await assert.rejects(stack.mpf.startSwap(swapBody(txn, { amount: 1.234 })), /amount: must have at most 2 decimal places/);
    await assert.rejects(stack.client.workflow.getHandle(`swap-${txn}`).describe(), /not found/i);
    assert.equal((await stack.control.ledger({ endpoint: 'swap.init' })).requests.length, 0);
  });

  test('a confirmation applied but unanswered is retried, told the token was used, and settled confirmed by the provider\'s notification', async () => {
    const txn = uniqueRef('ambiguous');
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 1 }] });
    const outcome = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' });
    assert.deepEqual(outcome, { outcome: 'confirmed', state: 'confirmed' });
    const final = await result(swap.swap_id);
    assert.equal(final.state, 'confirmed');
    assert.match(final.reason!, /retried confirmation was told .*already used.*the provider's notification confirmed it/);
    assert.ok(final.notifications.some((n) => n.outcome === 'paid' && n.applied), 'the settling notification is marked applied');
    const ledger = await stack.control.ledger({ ref: txn });
    assert.equal(ledger.requests.filter((r) => r.endpoint === 'swap.confirm').length, 2, 'retried once: the single-use token makes that safe');
    assert.equal(ledger.effects.filter((e) => e.kind === 'swap.confirmed').length, 1, 'one conversion at the provider');
  });

  test('a transient provider failure on confirm is retried inside the window and confirms once', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('retry')));
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'rate_limit', retryAfterSeconds: 1, times: 1 }] });
    const outcome = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' });
    assert.equal(outcome?.outcome, 'confirmed');
    assert.equal(await confirmRequests(), 2);
  });

  test('an initialization applied but unanswered is retried, meets the duplicate check, and ends failed saying no money moved', async () => {
    const txn = uniqueRef('initamb');
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'apply_then_fail', times: 1 }] });
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    assert.equal(swap.state, 'failed');
    assert.match(swap.reason!, /an earlier attempt was applied and its answer lost\. No money moved: the user never received an auth token/);
    const ledger = await stack.control.ledger({ ref: txn });
    assert.equal(ledger.requests.filter((r) => r.endpoint === 'swap.init').length, 2);
    assert.deepEqual(ledger.effects.map((e) => e.kind), ['swap.initialized']);
  });

  test('a 5xx on initialization that committed nothing is retried and the swap awaits its PIN', async () => {
    const txn = uniqueRef('init5xx');
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'status5xx', times: 1 }] });
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    assert.equal(swap.state, 'awaiting_pin');
    assert.equal((await stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests.length, 2);
  });

  test('a cancellation from Temporal (Temporal Web\'s button) ends a swap awaiting its PIN cancelled, truthfully in the view', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('wf-cancel')));
    await stack.client.workflow.getHandle(swap.swap_id).cancel();
    const final = await result(swap.swap_id);
    assert.equal(final.state, 'cancelled');
    assert.match(final.reason!, /cancelled through Temporal/);
    assert.equal((await stack.mpf.getSwap(swap.swap_id)).state, 'cancelled');
    assert.equal(await confirmRequests(), 0);
  });
  test('the notification token is sealed in the workflow input: decoded history shows sealed:v1, never the token the provider got', async () => {
    const txn = uniqueRef('sealed-url');
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    const sent = (await stack.control.ledger({ ref: txn, endpoint: 'swap.init' })).requests[0]!.body as { notification_url: string };
    const token = sent.notification_url.split('/').pop()!;
    assert.match(token, /^[A-Za-z0-9_-]{64}$/, 'the provider got the real token');
    const history = await stack.client.workflow.getHandle(swap.swap_id).fetchHistory();
    const payloads = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const [codec] = payloadCodecs(stack.keys);
    const decoded = (await codec!.decode(payloads)).map((p) => Buffer.from(p.data!).toString('utf8')).join('');
    assert.match(decoded, /notifications\/swap\/[^"]+\/sealed:v1:/);
    assert.ok(!decoded.includes(token), 'the decoded input holds the notification token');
  });

  test('a PIN signal (fire and forget) confirms too, and the query never shows PIN or token', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('signal')));
    await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' }, { wait: false });
    const final = await result(swap.swap_id);
    assert.equal(final.state, 'confirmed');
    const json = JSON.stringify(await stack.mpf.getSwap(swap.swap_id));
    assert.ok(!json.includes('4321') && !json.includes('sealed') && !json.includes('auth_token'));
  });

  test('two PINs submitted at once lead to exactly one confirmation call', async () => {
    const { swap } = await stack.mpf.startSwap(swapBody(uniqueRef('race')));
    const results = await Promise.allSettled([
      stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' }),
      stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' }),
    ]);
    const outcomes = results.map((r) => (r.status === 'fulfilled' ? r.value?.outcome : (r.reason as Error).name));
    assert.ok(outcomes.includes('confirmed'), outcomes.join(','));
    for (const o of outcomes) assert.ok(o === 'confirmed' || o === 'PinNotAcceptedError', o);
    assert.equal(await confirmRequests(), 1);
    assert.equal((await result(swap.swap_id)).state, 'confirmed');
  });
});

describe('a swap confirmation in doubt that no notification settles', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ simulator: { pins: { 'user-1': '4321' } }, client: { swapSettleWaitSeconds: 3 } });
  });
  after(async () => {
    await stack?.stop();
  });

  test('waits the settle period for the provider\'s notification, then needs reconciliation, with a reason saying what to check', async () => {
    const txn = uniqueRef('nonotify');
    await stack.control.setConfig({ swapExpiresInSeconds: 300 });
    const { swap } = await stack.mpf.startSwap(swapBody(txn));
    // The provider confirms but its answer is lost, and its notification is held back for 10 minutes.
    await stack.control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 1 }], notifications: { delayMs: 600_000 } });
    const outcome = await stack.mpf.submitPin(swap.swap_id, { wallet_pin: '4321' });
    assert.equal(outcome?.outcome, 'needs_reconciliation');
    // It stays open in needs_reconciliation until an operator resolves it.
    const waiting = await stack.mpf.getSwap(swap.swap_id);
    assert.equal(waiting.state, 'needs_reconciliation');
    assert.match(waiting.reason!, /no notification from the provider settled it: check the swap at the provider/);
    assert.equal((await stack.client.workflow.getHandle(swap.swap_id).describe()).status.name, 'RUNNING');
    await stack.mpf.resolveFlow(swap.swap_id, { outcome: 'confirmed', provider_reference: swap.payment_ref!, operator: 'ops', note: 'converted at the provider' });
    const final = (await stack.client.workflow.getHandle(swap.swap_id).result()) as SwapView;
    assert.equal(final.state, 'reconciled');
    assert.equal(final.reconciliation?.outcome, 'confirmed');
    assert.equal((await stack.control.ledger({ ref: txn })).effects.filter((e) => e.kind === 'swap.confirmed').length, 1, 'the provider did convert');
  });
});
