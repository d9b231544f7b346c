/**
 * Reconciliation, lists and link cancel as an operator runs them: `mpf worker` as a process (from
 * environment variables) against the simulator, and `mpf swap|link|reconcile …` as processes.
 * A swap whose confirmation the provider applied but whose answer was lost, with the provider's
 * notification held back, is left in needs_reconciliation; `mpf reconcile list` shows it and
 * `mpf reconcile resolve` ends it with the audit record in its view.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateDevKeys } from '../src/codec/keys';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../src/simulator/options';
import { startSimulator, type RunningSimulator } from '../src/simulator';
import { createControlClient, type SimulatorControl } from '../src/simulator/control-client';
import { SIM_PIN, uniqueRef } from './helpers/fixtures';
import { type MpfProcess, runMpf, spawnMpf } from './helpers/processes';
import { eventually } from './helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from './helpers/temporal';

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TEMPORAL_CLI_PATH'];
  return { ...Object.fromEntries(keep.filter((k) => process.env[k]).map((k) => [k, process.env[k]])), ...extra };
}

describe('mpf reconcile, lists and link cancel against a worker process', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let worker: MpfProcess;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    const temporal = await getTestTemporal();
    sim = await startSimulator();
    control = createControlClient(sim.baseUrl);
    env = baseEnv({
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('mpf-reconcile'),
      PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(),
      MPS_BASE_URL: sim.baseUrl,
      MPS_SECRET_KEY: SIMULATOR_DEFAULT_CREDENTIALS.secretKey,
      MPS_ACCESS_TOKEN: SIMULATOR_DEFAULT_CREDENTIALS.accessToken,
      MPS_MERCHANT_REF: SIMULATOR_DEFAULT_CREDENTIALS.merchantRef,
      GATEWAY_PUBLIC_URL: 'http://127.0.0.1:9/gateway-not-running',
      SWAP_SETTLE_WAIT_SECONDS: '2',
    });
    worker = spawnMpf(['worker'], env);
    await worker.waitFor(/worker: polling task queue /, 120_000);
  });
  after(async () => {
    await worker?.kill('SIGTERM');
    await sim?.close();
    await (await getTestTemporal()).shutdown();
  });

  const mpf = (args: string[], input?: string) => runMpf(args, env, { input, timeoutMs: 90_000 });

  test('a swap left in needs_reconciliation is listed by `mpf reconcile list` and ended by `mpf reconcile resolve` with the audit record in its view', async () => {
    const txn = uniqueRef('cli-recon');
    const swapId = `swap-${txn}`;
    await control.setConfig({ swapExpiresInSeconds: 300 });
    const started = await mpf(['swap', 'start', '--user-ref', 'user-recon', '--from', 'USD', '--to', 'NGN', '--amount', '10', '--txn-ref', txn, '--json']);
    assert.equal(started.code, 0, started.stderr);
    const paymentRef = JSON.parse(started.stdout).swap.payment_ref as string;

    // The provider converts but its answer is lost, and its notification is held back.
    await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 1 }], notifications: { delayMs: 600_000 } });
    const pin = await mpf(['swap', 'pin', swapId, '--json'], `${SIM_PIN}\n`);
    assert.equal(JSON.parse(pin.stdout).outcome, 'needs_reconciliation', pin.stdout + pin.stderr);
    await control.clearFaults();

    const listed = await eventually(async () => {
      const r = await mpf(['reconcile', 'list']);
      return r.code === 0 && r.stdout.includes(swapId) && r.stdout;
    }, 30_000, 'listed by mpf reconcile list');
    assert.match(listed, new RegExp(`${swapId}\\s+needs_reconciliation`));

    const bad = await mpf(['reconcile', 'resolve', swapId, '--outcome', 'paid', '--provider-reference', paymentRef, '--operator', 'Ada (ops)', '--note', 'x']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /outcome: must be one of confirmed, failed/);

    const resolved = await mpf([
      'reconcile', 'resolve', swapId,
      '--outcome', 'confirmed',
      '--provider-reference', paymentRef,
      '--operator', 'Ada (ops)',
      '--note', 'provider statement shows the conversion; credited the user',
    ]);
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.match(resolved.stdout, new RegExp(`^${swapId}: reconciled`));
    assert.match(resolved.stdout, /operator\s+Ada \(ops\)/);

    const status = await mpf(['swap', 'status', swapId, '--json']);
    const view = JSON.parse(status.stdout);
    assert.equal(view.state, 'reconciled');
    assert.equal(view.reconciliation.outcome, 'confirmed');
    assert.equal(view.reconciliation.provider_reference, paymentRef);
    assert.equal(view.reconciliation.operator, 'Ada (ops)');
    assert.equal(view.reconciliation.note, 'provider statement shows the conversion; credited the user');
    assert.match(view.reconciliation.reason_before, /no notification from the provider settled it/);
    assert.ok(Date.parse(view.reconciliation.resolved_at) > 0);

    const again = await mpf(['reconcile', 'resolve', swapId, '--outcome', 'failed', '--provider-reference', paymentRef, '--operator', 'Bo', '--note', 'second try']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /cannot be resolved: it was already reconciled by Ada \(ops\) at .* \(confirmed\)/);

    const reconciled = await eventually(async () => {
      const r = await mpf(['swap', 'list', '--state', 'reconciled', '--json']);
      return r.code === 0 && (JSON.parse(r.stdout).items as Array<{ flow_id: string }>).some((i) => i.flow_id === swapId) && r;
    }, 30_000, 'listed as reconciled');
    assert.ok(reconciled);
    assert.ok(!(await mpf(['reconcile', 'list'])).stdout.includes(swapId), 'no longer waiting');
    // The provider did convert, once.
    assert.equal((await control.ledger({ ref: txn })).effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
  });

  test('`mpf link cancel` cancels a link awaiting payment, `mpf link list` finds it, and bad list options are named', async () => {
    const ref = uniqueRef('cli-cancel');
    const created = await mpf([
      'link', 'create', '--user-ref', 'c-1', '--txn-merchant-ref', ref, '--amount', '2500', '--full-name', 'Ada Obi',
      '--email', 'ada@example.com', '--phone', '+2348012345678', '--redirect-url', 'http://127.0.0.1:9/thanks',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const cancelled = await mpf(['link', 'cancel', `paylink-${ref}`, '--reason', 'order void']);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.match(cancelled.stdout, new RegExp(`payment link paylink-${ref}: cancelled`));
    const twice = await mpf(['link', 'cancel', `paylink-${ref}`]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /is cancelled: only a link awaiting payment can be cancelled/);

    const listed = await eventually(async () => {
      const r = await mpf(['link', 'list', '--state', 'cancelled']);
      return r.code === 0 && r.stdout.includes(`paylink-${ref}`) && r.stdout;
    }, 30_000, 'listed as cancelled');
    assert.match(listed, new RegExp(`paylink-${ref}\\s+cancelled`));

    const badState = await mpf(['link', 'list', '--state', 'confirmed']);
    assert.equal(badState.code, 1);
    assert.match(badState.stderr, /state: must be one of creating, awaiting_payment/);
    const badTime = await mpf(['swap', 'list', '--from', 'last tuesday']);
    assert.equal(badTime.code, 1);
    assert.match(badTime.stderr, /created_from: must be an ISO 8601 date-time/);
  });
});
