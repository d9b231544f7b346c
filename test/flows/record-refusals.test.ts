/**
 * A keyed record refuses with a typed failure (src/workflows/record-failures.ts): the daily limit
 * ledger says which limit, its day, its maximum, the day's use and what is left; a ledger whose day
 * is over says its day; the wrong-PIN budget says the seconds to wait. The client reads them by
 * type and details (refusalOf), so its errors carry what the ledger said, not what a message spelt.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure, WorkflowUpdateFailedError, WithStartWorkflowOperation } from '@temporalio/client';
import { LimitExceededError } from '../../src/starter/client/errors';
import { TemporalGate } from '../../src/starter/client/health';
import { DailyLimitLedgers, utcDay } from '../../src/starter/client/limits';
import { RESERVED_SLOT_HOLD_MS, SharedPinBudget } from '../../src/starter/client/pin-budget';
import { LIMIT_LEDGER_WORKFLOW_TYPE, type LedgerReservation, limitReserveUpdate } from '../../src/workflows/limit-ledger';
import { RECORD_FAILURE } from '../../src/workflows/record-failures';
import { uniqueRef } from '../helpers/fixtures';
import { type Stack, startStack } from '../helpers/stack';

describe('the keyed records refuse with a type and details', () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  /** Reserves `r` in the ledger `workflowId` of `day` (starting it), straight through Temporal. */
  const reserve = (workflowId: string, day: string, r: LedgerReservation): Promise<void> =>
    stack.client.workflow.executeUpdateWithStart(limitReserveUpdate, {
      args: [r],
      startWorkflowOperation: new WithStartWorkflowOperation(LIMIT_LEDGER_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: stack.taskQueue,
        args: [{ day }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });

  /** The ApplicationFailure an update was refused with. */
  const refusal = async (p: Promise<unknown>): Promise<ApplicationFailure> => {
    const err = await p.then(
      () => assert.fail('the update was not refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowUpdateFailedError, `not an update refusal: ${String(err)}`);
    assert.ok(err.cause instanceof ApplicationFailure, `the refusal is not an ApplicationFailure: ${String(err.cause)}`);
    return err.cause;
  };

  test('a reservation past an amount limit is refused LimitExceeded, naming the limit, its day, the day\'s use and what is left', async () => {
    const day = utcDay(Date.now());
    const id = `${uniqueRef('limits-refusal')}-${day}`;
    const limit = { name: 'swap_amount_per_user_day', max: '3000' };
    const base = { holder: 'h1', kind: 'swap' as const, currency: 'USD', amount_limit: limit };
    await reserve(id, day, { ...base, flow_id: 'swap_a', amount: '2500' });
    const failure = await refusal(reserve(id, day, { ...base, flow_id: 'swap_b', amount: '1000' }));
    assert.equal(failure.type, RECORD_FAILURE.limitExceeded);
    assert.equal(failure.nonRetryable, true);
    assert.deepEqual(failure.details?.[0], { limit: 'swap_amount_per_user_day', day, measure: 'amount', max: '3000', used: '2500', requested: '1000', remaining: '500' });
  });

  test('a reservation past a count limit is refused LimitExceeded with the count left (none)', async () => {
    const day = utcDay(Date.now());
    const id = `${uniqueRef('limits-refusal')}-${day}`;
    const base = { holder: 'h1', kind: 'payment_link' as const, currency: 'NGN', amount: '100', count_limit: { name: 'link_count_per_user_day', max: '1' } };
    await reserve(id, day, { ...base, flow_id: 'link_a' });
    const failure = await refusal(reserve(id, day, { ...base, flow_id: 'link_b' }));
    assert.equal(failure.type, RECORD_FAILURE.limitExceeded);
    assert.deepEqual(failure.details?.[0], { limit: 'link_count_per_user_day', day, measure: 'count', max: '1', used: '1', requested: '1', remaining: '0' });
  });

  test('a reservation in the ledger of a day that is over is refused LedgerClosed, with that day and its window', async () => {
    const day = '2020-01-01';
    const failure = await refusal(reserve(`${uniqueRef('limits-closed')}-${day}`, day, { flow_id: 'swap_a', holder: 'h1', kind: 'swap', currency: 'USD', amount: '100' }));
    assert.equal(failure.type, RECORD_FAILURE.ledgerClosed);
    assert.deepEqual(failure.details?.[0], { day, opens_at: '2019-12-31T23:45:00.000Z', closes_at: '2020-01-02T00:15:00.000Z' });
  });

  test('the client maps a limit refusal by its type and details: LimitExceededError names the limit, resets at the end of the ledger\'s day and says what is left', async () => {
    const user = uniqueRef('user-refusal');
    const ledgers = new DailyLimitLedgers({
      client: stack.client,
      taskQueue: stack.taskQueue,
      keys: stack.keys,
      limits: { swap_amount_per_user_day: { USD: '30' } },
      gate: new TemporalGate(stack.client, {}),
    });
    const started = { state: 'awaiting_pin' };
    const req = { user_ref: user, amount: 25.5, from_currency: 'USD' };
    assert.deepEqual(await ledgers.around('swap', uniqueRef('swap'), req, async () => started), started);
    const day = utcDay(Date.now());
    const err = await ledgers.around('swap', uniqueRef('swap'), { ...req, amount: 10 }, async () => assert.fail('started past the limit')).then(
      () => assert.fail('not refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof LimitExceededError, String(err));
    assert.equal(err.limit, 'swap_amount_per_user_day');
    assert.equal(err.field, 'amount');
    assert.equal(err.resetsAt, new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString());
    assert.deepEqual(err.refusal, { limit: 'swap_amount_per_user_day', day, measure: 'amount', max: '3000', used: '2550', requested: '1000', remaining: '450' });
    assert.match(err.message, /30\.00 USD a UTC day, 4\.50 USD left/);
  });

  test('a take from a spent PIN budget is refused PinBudgetExhausted with the seconds to wait, and the client answers them', async () => {
    const budget = new SharedPinBudget({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, max: 1, timeWindowMs: 60_000, answerTimeoutMs: 10_000 });
    const user = uniqueRef('user-budget');
    const first = await budget.take(user);
    assert.ok('slot' in first, JSON.stringify(first));
    const second = await budget.take(user);
    assert.ok('retryAfterSeconds' in second, JSON.stringify(second));
    assert.ok(second.retryAfterSeconds >= 1 && second.retryAfterSeconds <= 120, String(second.retryAfterSeconds));

    const failure = await refusal(stack.client.workflow.getHandle(budget.workflowId(user)).executeUpdate('take', { args: [{ attempt_id: 'another' }] }));
    assert.equal(failure.type, RECORD_FAILURE.pinBudgetExhausted);
    const details = failure.details?.[0] as { retry_after_seconds: number; max: number };
    assert.equal(details.max, 1);
    assert.ok(details.retry_after_seconds >= 1 && details.retry_after_seconds <= 120, String(details.retry_after_seconds));
  });

  test('a reservation is refused unless it leaves half the budget free, while a PIN\'s take uses the whole budget', async () => {
    const budget = new SharedPinBudget({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, max: 2, timeWindowMs: 60_000, answerTimeoutMs: 10_000 });
    const user = uniqueRef('user-reserve');
    assert.ok('slot' in (await budget.take(user, budget.reservation)), 'the first reservation leaves one slot of two free');
    assert.ok('retryAfterSeconds' in (await budget.take(user, budget.reservation)), 'a second would leave none');
    assert.ok('slot' in (await budget.take(user)), "a PIN's take has the slot the reservation left");
    assert.ok('retryAfterSeconds' in (await budget.take(user)), 'then the budget is spent');
  });

  test("a reserved slot counts for its own hold, not the budget's 120 s, and a take with a bad hold is refused naming the field", async () => {
    const budget = new SharedPinBudget({ client: stack.client, taskQueue: stack.taskQueue, keys: stack.keys, max: 1, timeWindowMs: 60_000, answerTimeoutMs: 10_000 });
    const user = uniqueRef('user-hold');
    assert.ok('slot' in (await budget.take(user, { holdMs: RESERVED_SLOT_HOLD_MS })));
    const spent = await budget.take(user);
    assert.ok('retryAfterSeconds' in spent, JSON.stringify(spent));
    assert.ok(spent.retryAfterSeconds > 300, `the reserved slot frees in ${spent.retryAfterSeconds} s`);

    const failure = await refusal(stack.client.workflow.getHandle(budget.workflowId(user)).executeUpdate('take', { args: [{ attempt_id: 'bad', hold_ms: -1 }] }));
    assert.equal(failure.type, RECORD_FAILURE.invalidInput);
    assert.deepEqual(failure.details?.[0], { field: 'hold_ms' });
  });
});
