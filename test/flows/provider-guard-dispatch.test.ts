/**
 * The provider guard admits a money-moving call when the call gets its connection, not before it
 * waits for one: on a real stack (dev server, simulator, in-process worker), more confirmations in
 * flight than the provider client has connections, against a provider that answers them slowly
 * (6-8 s), late (11-14 s, past the client's 10 s timeout; every call applied) or never (hang).
 * Once the confirm breaker opened, nothing of it reaches the provider's ledger but what a worker
 * could still send before its next reading of the guard (docs/operations/provider-outages.md: "the
 * one call that can still go out in the second after it opened") and the half-open trials; and
 * every swap ends as the ledger says.
 */
import { after, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { FaultRuleInput } from '../../src/simulator/faults';
import { DEFAULT_BREAKER, type GuardView, providerGuardWorkflowId } from '../../src/contract/provider-guard';
import { readGuard } from '../../src/temporal/provider-guard-reading';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { eventually, startStack, type Stack } from '../helpers/stack';
import { stopOwnTemporal } from '../helpers/gateway';

/** The worker's provider client: fewer connections than the swaps confirming at once (12). */
const CONNECTIONS = 3;
const SWAPS = 12;
const PIN_EVERY_MS = 400;
const THRESHOLD = DEFAULT_BREAKER.ambiguous_count;
/**
 * How late after the breaker opened a worker may still send: its reading of the guard is taken
 * every second (the documented second), and one reading (a describe, after the worker's report)
 * may take a while on a loaded machine. Generous on purpose; a call that waited for its connection
 * while the breaker opened is sent when a slow call frees one, seconds later (6-8 s, 10 s).
 */
const LAST_READING_MS = 2_500;
const FINAL = new Set(['confirmed', 'expired', 'needs_reconciliation', 'failed', 'cancelled', 'pin_attempts_exhausted']);

interface Trial {
  key: string;
  claimedAt: number;
}

/** Reads the guard (its memo, as the workers do) every 200 ms: when the confirm breaker first opened, and every trial claimed. */
function watchGuard(stack: Stack): { stop(): Promise<void>; openedAt(): number | undefined; trials: Trial[]; last(): GuardView | undefined } {
  const workflowId = providerGuardWorkflowId(stack.taskQueue);
  const trials: Trial[] = [];
  let opened: number | undefined;
  let last: GuardView | undefined;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const view = await readGuard(stack.client, workflowId, 3_000);
        last = view;
        const b = view.breakers.confirm;
        if (b.state === 'open' && opened === undefined) opened = Date.parse(b.since);
        if (b.trial?.key && b.trial.claimed_at && !trials.some((t) => t.key === b.trial!.key && t.claimedAt === Date.parse(b.trial!.claimed_at!))) {
          trials.push({ key: b.trial.key, claimedAt: Date.parse(b.trial.claimed_at) });
        }
      } catch {
        // not started yet, or a slow describe: the next reading
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
    openedAt: () => opened,
    trials,
    last: () => last,
  };
}

interface Incident {
  /** Each swap: its ref, id, final state, the confirmations the provider received, and how many it applied. */
  swaps: Array<{ ref: string; id: string; state: string; reason?: string; sent: number[]; applied: number }>;
  openedAt: number;
  trials: Trial[];
  /** Confirmations received after the open (ms after it), and whether each was a trial's. */
  afterOpen: Array<{ ref: string; afterMs: number; trial: boolean }>;
}

/**
 * One incident: SWAPS swaps initialised, then `fault` on every confirmation, then a PIN for each,
 * PIN_EVERY_MS apart; waits until every swap ends and reads the ledger.
 */
async function incident(t: TestContext, stack: Stack, fault: FaultRuleInput, windowSeconds: number): Promise<Incident> {
  await stack.control.setConfig({ swapExpiresInSeconds: windowSeconds });
  const swaps: Array<{ ref: string; id: string }> = [];
  for (let i = 0; i < SWAPS; i += 1) {
    const ref = uniqueRef(`dispatch-${i}`);
    swaps.push({ ref, id: (await stack.mpf.startSwap(swapBody(ref))).swap.swap_id });
  }
  const guard = watchGuard(stack);
  await stack.control.setFaults({ rules: [fault] });
  try {
    for (const s of swaps) {
      await stack.mpf.submitPin(s.id, { wallet_pin: SIM_PIN }, { wait: false });
      await new Promise((r) => setTimeout(r, PIN_EVERY_MS));
    }
    const states = new Map<string, { state: string; reason?: string }>();
    await eventually(
      async () => {
        for (const s of swaps) {
          if (states.has(s.id)) continue;
          const v = await stack.mpf.getSwap(s.id);
          if (FINAL.has(v.state)) states.set(s.id, { state: v.state, ...(v.reason ? { reason: v.reason } : {}) });
        }
        return states.size === swaps.length;
      },
      windowSeconds * 1000 + 90_000,
      'every swap ends',
    );
    await guard.stop();
    const openedAt = guard.openedAt();
    assert.ok(openedAt !== undefined, `the confirm breaker opened (last reading: ${JSON.stringify(guard.last()?.breakers.confirm)})`);
    const refs = new Set(swaps.map((s) => s.ref));
    const ledger = await stack.control.ledger({ endpoint: 'swap.confirm' });
    const confirmations = ledger.requests.filter((r) => r.ref !== undefined && refs.has(r.ref));
    const result: Incident = { swaps: [], openedAt, trials: guard.trials, afterOpen: [] };
    for (const s of swaps) {
      const { effects } = await stack.control.ledger({ ref: s.ref });
      const sent = confirmations.filter((r) => r.ref === s.ref).map((r) => Date.parse(r.at));
      result.swaps.push({ ...s, ...states.get(s.id)!, sent, applied: effects.filter((e) => e.kind === 'swap.confirmed').length });
      for (const at of sent.filter((at) => at > openedAt)) {
        // A trial's call is the claiming flow's first confirmation sent once it claimed.
        const trial = guard.trials.some((tr) => tr.key === s.id && at >= tr.claimedAt - 250 && !sent.some((o) => o >= tr.claimedAt - 250 && o < at));
        result.afterOpen.push({ ref: s.ref, afterMs: at - openedAt, trial });
      }
    }
    result.afterOpen.sort((x, y) => x.afterMs - y.afterMs);
    const firstSent = Math.min(...confirmations.map((r) => Date.parse(r.at)));
    t.diagnostic(
      `opened ${openedAt - firstSent} ms after the first confirmation; sent before it ${confirmations.filter((r) => Date.parse(r.at) <= openedAt).length}; ` +
        `after it (ms, trial marked *): [${result.afterOpen.map((a) => `${a.afterMs}${a.trial ? '*' : ''}`).join(', ')}]; ` +
        `outcomes: ${JSON.stringify(countBy(result.swaps.map((s) => s.state)))}`,
    );
    return result;
  } finally {
    await guard.stop();
    await stack.control.clearFaults();
  }
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}

/** Nothing but the trials reached the provider later than a worker could still have read the guard closed. */
function assertHeldAfterOpen(r: Incident): void {
  const leaked = r.afterOpen.filter((a) => !a.trial && a.afterMs > LAST_READING_MS);
  assert.deepEqual(leaked, [], `confirmations sent after the breaker opened, neither in its first ${LAST_READING_MS} ms nor a trial`);
}

/** Each swap's end agrees with the provider's ledger. */
function assertOutcomesMatchLedger(r: Incident): void {
  for (const s of r.swaps) {
    const what = `${s.ref}: ${s.state} (${s.reason ?? ''}), ${s.sent.length} confirmation(s) received, applied ${s.applied}`;
    if (s.sent.length === 0) {
      assert.equal(s.state, 'expired', what);
      assert.match(s.reason ?? '', /held by the provider guard/, what);
    } else {
      assert.ok(s.state === 'confirmed' || s.state === 'needs_reconciliation', what);
    }
    if (s.state === 'confirmed') assert.equal(s.applied, 1, what);
    assert.ok(s.applied <= 1, what);
  }
}

/** A stack of its own per incident (its own guard), with fewer provider connections than swaps. */
async function withStack<T>(cooldownMs: number, fn: (stack: Stack) => Promise<T>): Promise<T> {
  const stack = await startStack({
    providerConnections: CONNECTIONS,
    breaker: { cooldown_ms: cooldownMs },
    client: { swapSettleWaitSeconds: 5 },
  });
  try {
    return await fn(stack);
  } finally {
    await stack.stop();
  }
}

describe('the provider guard admits a confirmation when it gets its connection', { timeout: 600_000 }, () => {
  test('answered in 6-8 s: after the breaker opened only the trials reach the provider, and every swap ends as the ledger says', async (t) => {
    const r = await withStack(10_000, (stack) => incident(t, stack, { endpoint: 'swap.confirm', kind: 'latency', latencyMs: [6_000, 8_000] }, 40));
    assertHeldAfterOpen(r);
    assertOutcomesMatchLedger(r);
  });

  test('answered in 11-14 s, past the client\'s timeout: after the breaker opened only the trials reach the provider, and every swap ends as the ledger says', async (t) => {
    const r = await withStack(10_000, (stack) => incident(t, stack, { endpoint: 'swap.confirm', kind: 'latency', latencyMs: [11_000, 14_000] }, 40));
    assertHeldAfterOpen(r);
    assertOutcomesMatchLedger(r);
  });

  test('never answered (hang): at most the threshold plus one swap needs reconciliation', async (t) => {
    // A cool-down of 15 s in a 30 s window: at most one trial, which hangs too.
    const r = await withStack(15_000, (stack) => incident(t, stack, { endpoint: 'swap.confirm', kind: 'hang', maxMs: 60_000 }, 30));
    assertHeldAfterOpen(r);
    assertOutcomesMatchLedger(r);
    const inDoubt = r.swaps.filter((s) => s.state === 'needs_reconciliation').length;
    assert.ok(inDoubt <= THRESHOLD + 1, `${inDoubt} swaps need reconciliation (threshold ${THRESHOLD})`);
    for (const s of r.swaps) assert.equal(s.applied, 0, `${s.ref}: a hung provider applies nothing`);
  });

  after(stopOwnTemporal);
});
