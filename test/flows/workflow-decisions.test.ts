/**
 * The flows' decisions, fast: the pure decision functions on their own, and the swap workflow on
 * the real Temporal server with stub activities (no provider, no HTTP) for branches the provider
 * simulator reaches only slowly. The end-to-end claims stay in the real-stack tests.
 */
import { versionWorker } from '../../src/temporal/deployment';
import { defaultVersioning } from '../../src/worker';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { ConfirmOutcome, ProviderActivities, SwapInitResult } from '../../src/activities/types';
import { generateDevKeys } from '../../src/codec/keys';
import { clientDataConverter, workerDataConverter } from '../../src/codec/data-converter';
import { createSealer } from '../../src/codec/seal';
import { flowMetricSinks } from '../../src/metrics/flow-metric-sink';
import { decideNotification } from '../../src/workflows/link-session';
import { cancelSwapUpdate, resolveSwapUpdate, submitPinUpdate, SWAP_WORKFLOW_TYPE, swapInitializedUpdate, type SwapView, type SwapWorkflowInput } from '../../src/workflows/messages';
import { decideConfirm } from '../../src/workflows/swap-session';
import { workflowBundle } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

const msg = (outcome: ConfirmOutcome['outcome'], message = 'x') => ({ outcome, message }) as ConfirmOutcome;

describe('decideConfirm: what the provider\'s answer to one confirmation means', () => {
  test('confirmed is final', () => {
    assert.deepEqual(decideConfirm(msg('confirmed'), 2, false), { kind: 'final', state: 'confirmed', outcome: 'confirmed' });
  });
  test('a wrong PIN returns to awaiting_pin while attempts and time remain, else fails or expires', () => {
    assert.equal((decideConfirm(msg('wrong_pin'), 2, false) as { state: string }).state, 'awaiting_pin');
    assert.equal((decideConfirm(msg('wrong_pin'), 0, false) as { state: string }).state, 'failed');
    assert.equal((decideConfirm(msg('wrong_pin'), 1, true) as { state: string }).state, 'expired');
  });
  test('"token used" on a retried confirmation is evidence to settle, not a failure', () => {
    assert.equal(decideConfirm(msg('token_used_on_retry', 'auth_token is invalid, expired or already used'), 2, false).kind, 'settle');
  });
  test('an invalid token on a first attempt fails, or expires past the window', () => {
    assert.equal((decideConfirm(msg('token_invalid'), 2, false) as { state: string }).state, 'failed');
    assert.equal((decideConfirm(msg('token_invalid'), 2, true) as { state: string }).state, 'expired');
  });
});

describe('decideNotification: what a provider notification does to a payment link', () => {
  const link = { payment_ref: 'P1', amount: 2500, currency: 'NGN' };
  const paid = (data: Record<string, unknown> = {}) => ({ outcome: 'paid' as const, payload: { data: { payment_ref: 'P1', amount: 2500, currency: 'NGN', ...data } } });
  test('a matching payment pays an awaiting link', () => {
    assert.deepEqual(decideNotification(paid(), 'awaiting_payment', link), { kind: 'move', state: 'paid' });
  });
  test('a payment for a link that failed, expired or was cancelled needs reconciliation', () => {
    for (const state of ['failed', 'expired', 'cancelled'] as const) {
      assert.equal((decideNotification(paid(), state, link) as { state: string }).state, 'needs_reconciliation', state);
    }
  });
  test('a payment of another amount needs reconciliation even while awaiting', () => {
    const d = decideNotification(paid({ amount: 25 }), 'awaiting_payment', link);
    assert.equal((d as { state: string }).state, 'needs_reconciliation');
  });
  test('a second success after paid changes nothing; a failure after paid changes nothing', () => {
    assert.deepEqual(decideNotification(paid(), 'paid', link), { kind: 'none' });
    assert.deepEqual(decideNotification({ outcome: 'failed', payload: {} }, 'paid', link), { kind: 'none' });
  });
});

describe('the swap workflow with stub activities on the real Temporal server', () => {
  const keys = generateDevKeys();
  const sealer = createSealer(keys);
  const taskQueue = uniqueTaskQueue('mpf-stub');
  let client: Client;
  let connection: Connection;
  let native: NativeConnection;
  let worker: Worker;
  let running: Promise<void>;
  let confirmAnswers: Array<() => Promise<ConfirmOutcome>> = [];
  const activities: ProviderActivities = {
    async initSwap(req): Promise<SwapInitResult> {
      return {
        payment_ref: `P-${req.txn_ref}`,
        txn_ref: req.txn_ref,
        from_currency: req.from_currency,
        to_currency: req.to_currency,
        amount: req.amount,
        converted_amount: req.amount * 1500,
        rate_used: 1500,
        expires_in_seconds: 300,
        sealed_auth_token: sealer.seal('tok'),
        initialized_at_ms: Date.now(),
      };
    },
    async confirmSwap() {
      const next = confirmAnswers.shift();
      if (!next) throw new Error('no stub answer left');
      return next();
    },
    async createPaymentLink() {
      throw new Error('not used');
    },
    async listCategories() {
      return [];
    },
  };

  before(async () => {
    const temporal = await getTestTemporal();
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
    native = await NativeConnection.connect({ address: temporal.address });
    // Versioned like every worker of ours: workflows that name a versioning behavior are refused
    // by the server from an unversioned worker.
    const version = await versionWorker(native, temporal.namespace, { ...defaultVersioning(), promote: 'always' }, 'workflow-decisions-test');
    worker = await Worker.create({
      workerDeploymentOptions: version.workerDeploymentOptions,
      connection: native,
      namespace: temporal.namespace,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities,
      sinks: flowMetricSinks(),
      dataConverter: workerDataConverter(keys),
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await native?.close();
    await connection?.close();
  });

  const start = async (ref: string, settle = 1) => {
    const input: SwapWorkflowInput = {
      request: { user_ref: 'u', from_currency: 'USD', to_currency: 'NGN', amount: 1, txn_ref: ref, notification_url: 'http://127.0.0.1:9/n' },
      pin_max_attempts: 3,
      notification_wait_seconds: 0,
      settle_wait_seconds: settle,
    };
    const handle = await client.workflow.start(SWAP_WORKFLOW_TYPE, { taskQueue, workflowId: `swap-${ref}-${Date.now()}`, args: [input] });
    await handle.executeUpdate(swapInitializedUpdate);
    return handle;
  };
  const pin = { sealed_pin: sealer.seal('1111'), submission_id: 's1' };

  test('an ambiguous confirmation retried until the window budget ends settles to needs_reconciliation when no notification comes', async () => {
    const ambiguous = async (): Promise<ConfirmOutcome> => {
      throw ApplicationFailure.create({ type: 'ProviderAmbiguousError', message: 'no answer', nonRetryable: true });
    };
    confirmAnswers = [ambiguous];
    const handle = await start('stub-amb');
    const outcome = await handle.executeUpdate(submitPinUpdate, { args: [pin] });
    assert.equal(outcome.outcome, 'needs_reconciliation');
    // It stays open, waiting for an operator's resolution (the workflow no longer completes here).
    const resolved = await handle.executeUpdate(resolveSwapUpdate, { args: [{ outcome: 'failed', provider_reference: 'stmt-1', operator: 'ops', note: 'not converted' }] });
    assert.equal(resolved.state, 'reconciled');
    const view = (await handle.result()) as SwapView;
    assert.equal(view.state, 'reconciled');
    assert.match(view.reconciliation!.reason_before!, /may have reached the provider without an answer.*no notification from the provider settled it/);
  });

  test('the cancel update refuses a swap whose PIN is being confirmed, and answers the cancelled view otherwise', async () => {
    confirmAnswers = [async () => (await new Promise((r) => setTimeout(r, 2_000)), { outcome: 'confirmed', message: 'ok' })];
    const busy = await start('stub-busy');
    const confirming = busy.executeUpdate(submitPinUpdate, { args: [pin] });
    await new Promise((r) => setTimeout(r, 500));
    await assert.rejects(busy.executeUpdate(cancelSwapUpdate, { args: [{}] }), (e: Error) => /cannot be cancelled in state confirming/.test(String((e.cause as Error | undefined)?.message)));
    assert.equal((await confirming).outcome, 'confirmed');

    const handle = await start('stub-cancel');
    const view = await handle.executeUpdate(cancelSwapUpdate, { args: [{ reason: 'user left' }] });
    assert.equal(view.state, 'cancelled');
    assert.equal(view.reason, 'user left');
  });
});
