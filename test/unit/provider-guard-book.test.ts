/**
 * The provider guard's decisions (workflows/provider-guard.ts GuardBook, pure): when a breaker
 * opens, half-opens and closes, what a pause records, and what the activities and gateway are told.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BREAKER, holdReason, retryAfterSeconds, trialClaimable } from '../../src/contract/provider-guard';
import { GuardBook, guardChanges, TRIAL_SLACK_MS } from '../../src/workflows/provider-guard';

const T0 = Date.parse('2026-11-26T12:00:00Z');
const report = (cls: 'initiate' | 'confirm' | 'create', c: Partial<{ ok: number; ambiguous: number; throttled: number }>) => ({
  counts: { [cls]: { ok: 0, ambiguous: 0, throttled: 0, ...c } },
  settings: DEFAULT_BREAKER,
});

describe('the provider guard book', () => {
  test('a breaker opens at the ambiguous count within the window, and only its own class', () => {
    const b = new GuardBook({}, T0);
    b.report(report('confirm', { ambiguous: 2, ok: 10 }), T0);
    assert.equal(b.view.breakers.confirm.state, 'closed');
    b.report(report('confirm', { ambiguous: 1 }), T0 + 1_000);
    assert.equal(b.view.breakers.confirm.state, 'open');
    assert.match(b.view.breakers.confirm.reason!, /3 ambiguous outcomes in 60 s/);
    assert.equal(b.view.breakers.initiate.state, 'closed');
    assert.match(holdReason(b.view, 'confirm')!, /confirm breaker is open/);
    assert.equal(holdReason(b.view, 'initiate'), undefined);
    assert.equal(retryAfterSeconds(b.view, 'confirm', T0 + 1_000), 31);
  });

  test('outcomes older than the window no longer count', () => {
    const b = new GuardBook({}, T0);
    b.report(report('initiate', { ambiguous: 2 }), T0);
    b.report(report('initiate', { ambiguous: 1 }), T0 + 61_000);
    assert.equal(b.view.breakers.initiate.state, 'closed');
  });

  test('a share of ambiguous outcomes opens it once enough calls were made, and so do sustained 429s', () => {
    const share = new GuardBook({}, T0);
    share.report({ counts: { create: { ok: 3, ambiguous: 2, throttled: 0 } }, settings: { ...DEFAULT_BREAKER, ambiguous_count: 10 } }, T0);
    assert.equal(share.view.breakers.create.state, 'closed', '5 calls: below min_calls');
    share.report({ counts: { create: { ok: 0, ambiguous: 1, throttled: 0 } }, settings: { ...DEFAULT_BREAKER, ambiguous_count: 10 } }, T0);
    assert.equal(share.view.breakers.create.state, 'open');
    const throttled = new GuardBook({}, T0);
    throttled.report(report('initiate', { throttled: 10 }), T0);
    assert.match(throttled.view.breakers.initiate.reason!, /10 answers 429/);
  });

  test('after the cool-down it half-opens; a good probe closes it, a failed one opens it again', () => {
    const b = new GuardBook({}, T0);
    b.report(report('confirm', { ambiguous: 3 }), T0);
    assert.equal(b.nextWakeAt(), T0 + 30_000);
    assert.deepEqual(b.halfOpen(T0 + 29_000), []);
    assert.deepEqual(b.halfOpen(T0 + 30_000), ['confirm']);
    assert.match(holdReason(b.view, 'confirm')!, /half-open/);
    b.probed(['confirm'], false, T0 + 30_500, 'HTTP 503');
    assert.equal(b.view.breakers.confirm.state, 'open');
    assert.match(b.view.breakers.confirm.reason!, /probe failed \(HTTP 503\)/);
    b.halfOpen(T0 + 61_000);
    b.probed(['confirm'], true, T0 + 61_100, 'ok');
    assert.equal(b.view.breakers.confirm.state, 'closed');
    assert.equal(holdReason(b.view, 'confirm'), undefined);
  });

  test('outcomes reported while a breaker is open do not re-open it once its probe closed it', () => {
    const b = new GuardBook({}, T0);
    b.report(report('confirm', { ambiguous: 3 }), T0);
    b.report(report('confirm', { ambiguous: 5 }), T0 + 5_000); // calls that were in flight when it opened
    b.halfOpen(T0 + 30_000);
    b.probed(['confirm'], true, T0 + 30_100, 'ok');
    b.report(report('confirm', { ambiguous: 1, ok: 2 }), T0 + 31_000);
    assert.equal(b.view.breakers.confirm.state, 'closed');
  });

  test('a good probe lets exactly one flow send the trial call, and only its answer closes the breaker', () => {
    const b = new GuardBook({}, T0);
    b.report(report('confirm', { ambiguous: 3 }), T0);
    b.halfOpen(T0 + 30_000);
    b.probed(['confirm'], true, T0 + 30_100, 'ok', true);
    assert.equal(b.view.breakers.confirm.state, 'half_open', 'a GET succeeding is not enough');
    assert.ok(trialClaimable(b.view, 'confirm'));
    assert.match(holdReason(b.view, 'confirm', 'swap-a')!, /trial call is not claimed yet/);
    assert.equal(b.claimTrial('confirm', 'swap-a', T0 + 31_000), true);
    assert.equal(b.claimTrial('confirm', 'swap-b', T0 + 31_000), false, 'a second flow is refused');
    assert.equal(b.claimTrial('confirm', 'swap-a', T0 + 31_500), true, 'the same flow again (a retry) keeps it');
    assert.equal(holdReason(b.view, 'confirm', 'swap-a'), undefined);
    assert.match(holdReason(b.view, 'confirm', 'swap-b')!, /one trial call is with the provider/);
    assert.match(holdReason(b.view, 'confirm')!, /half-open/);
    b.report(report('confirm', { ok: 1 }), T0 + 32_000);
    assert.equal(b.view.breakers.confirm.state, 'closed');
    assert.equal(holdReason(b.view, 'confirm', 'swap-b'), undefined);
  });

  test('a trial that is slow, answered 429 or not answered in time opens the breaker for another cool-down', () => {
    for (const outcome of [{ ambiguous: 1 }, { throttled: 1 }]) {
      const b = new GuardBook({}, T0);
      b.report(report('confirm', { ambiguous: 3 }), T0);
      b.halfOpen(T0 + 30_000);
      b.probed(['confirm'], true, T0 + 30_100, 'ok', true);
      b.claimTrial('confirm', 'swap-a', T0 + 31_000);
      b.report(report('confirm', outcome), T0 + 34_000);
      assert.equal(b.view.breakers.confirm.state, 'open');
      assert.match(b.view.breakers.confirm.reason!, /trial call was/);
      assert.equal(b.nextWakeAt(), T0 + 64_000);
    }
    const silent = new GuardBook({}, T0);
    silent.report(report('initiate', { ambiguous: 3 }), T0);
    silent.halfOpen(T0 + 30_000);
    silent.probed(['initiate'], true, T0 + 30_100, 'ok', true);
    assert.equal(silent.nextWakeAt(), T0 + 60_100, 'an unclaimed trial waits a cool-down for traffic');
    silent.claimTrial('initiate', 'swap-a', T0 + 40_000);
    const until = T0 + 40_000 + DEFAULT_BREAKER.slow_ms + TRIAL_SLACK_MS;
    assert.equal(silent.nextWakeAt(), until);
    assert.deepEqual(silent.expiredTrials(until - 1), []);
    silent.expireTrials(until);
    assert.equal(silent.view.breakers.initiate.state, 'open');
    assert.match(silent.view.breakers.initiate.reason!, /not answered in time/);
  });

  test('a trial given back by the flow that claimed it is claimable again, with a fresh wait; another flow cannot give it back', () => {
    const b = new GuardBook({}, T0);
    b.report(report('initiate', { ambiguous: 3 }), T0);
    b.halfOpen(T0 + 30_000);
    b.probed(['initiate'], true, T0 + 30_100, 'ok', true);
    b.claimTrial('initiate', 'swap-dup', T0 + 31_000);
    assert.equal(b.releaseTrial('initiate', 'swap-other', T0 + 31_100), false, 'not the holder');
    assert.match(holdReason(b.view, 'initiate', 'swap-new')!, /one trial call is with the provider/);
    assert.equal(b.releaseTrial('initiate', 'swap-dup', T0 + 31_200), true);
    assert.equal(b.view.breakers.initiate.state, 'half_open', 'still half-open: no call decided it');
    assert.ok(trialClaimable(b.view, 'initiate'));
    assert.equal(b.nextWakeAt(), T0 + 31_200 + Math.max(DEFAULT_BREAKER.cooldown_ms, TRIAL_SLACK_MS), 'waits for traffic from the release, not from the probe');
    assert.equal(b.claimTrial('initiate', 'swap-new', T0 + 31_300), true, 'the next start is the trial');
    assert.equal(b.releaseTrial('initiate', 'swap-dup', T0 + 31_400), false, 'a late release of an old claim changes nothing');
    assert.equal(b.view.breakers.initiate.trial?.key, 'swap-new');
    b.report(report('initiate', { ok: 1 }), T0 + 32_000);
    assert.equal(b.view.breakers.initiate.state, 'closed');
    assert.equal(b.releaseTrial('initiate', 'swap-new', T0 + 32_100), false, 'decided: nothing to give back');
  });

  test('a trial nobody claims for a cool-down (at least the slack) closes the breaker: no call of its class was waiting', () => {
    const b = new GuardBook({}, T0);
    b.report(report('create', { ambiguous: 3 }), T0);
    b.halfOpen(T0 + 30_000);
    b.probed(['create'], true, T0 + 30_000, 'ok', true);
    assert.deepEqual(b.expiredTrials(T0 + 59_999), []);
    b.expireTrials(T0 + 60_000);
    assert.equal(b.view.breakers.create.state, 'closed');
    const quick = new GuardBook({}, T0);
    quick.report({ counts: { create: { ok: 0, ambiguous: 3, throttled: 0 } }, settings: { ...DEFAULT_BREAKER, cooldown_ms: 2_000 } }, T0);
    quick.halfOpen(T0 + 2_000);
    quick.probed(['create'], true, T0 + 2_000, 'ok', true);
    assert.deepEqual(quick.expiredTrials(T0 + 2_000 + TRIAL_SLACK_MS - 1), [], 'a short cool-down still leaves waiting calls time to claim it');
    assert.deepEqual(quick.expiredTrials(T0 + 2_000 + TRIAL_SLACK_MS), ['create']);
  });

  test('a pause holds every class and is recorded with who and why; resume clears it', () => {
    const b = new GuardBook({}, T0);
    b.pause('key ops-1 (on call)', 'provider incident', T0);
    for (const cls of ['initiate', 'confirm', 'create'] as const) assert.match(holdReason(b.view, cls)!, /paused by key ops-1/);
    b.resume('key ops-2', T0 + 5_000);
    assert.equal(b.view.paused, undefined);
    assert.deepEqual(b.view.audit.map((a) => [a.action, a.by]), [['pause', 'key ops-1 (on call)'], ['resume', 'key ops-2']]);
  });
});

describe('what the guard tells the merchant', () => {
  test('a breaker opening or closing and a pause or resume are one event each; a half-open breaker is none', () => {
    const b = new GuardBook({}, T0);
    const before = structuredClone(b.view);
    b.report(report('create', { ambiguous: 3 }), T0);
    b.pause('key ops-1', 'incident', T0);
    assert.deepEqual(guardChanges(before, b.view).map((c) => c.type), ['provider.paused', 'provider.breaker_opened']);
    const open = structuredClone(b.view);
    b.halfOpen(T0 + 30_000);
    assert.deepEqual(guardChanges(open, b.view), []);
    const half = structuredClone(b.view);
    b.probed(['create'], true, T0 + 30_100, 'ok');
    b.resume('key ops-2', T0 + 31_000);
    assert.deepEqual(guardChanges(half, b.view).map((c) => [c.type, c.data.class ?? c.data.by]), [['provider.resumed', 'key ops-2'], ['provider.breaker_closed', 'create']]);
  });
});
