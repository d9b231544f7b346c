/**
 * Reconciliation, lists and link cancel as an operator runs them: `mpf worker` as a process (from
 * environment variables) against the simulator, and `mpf swap|link|reconcile …` as processes.
 * A swap whose confirmation the provider applied but whose answer was lost, with the provider's
 * notification held back, is left in needs_reconciliation; `mpf reconcile list` shows it and
 * `mpf reconcile resolve` ends it with the audit record in its view, and the merchant's endpoint
 * (MERCHANT_WEBHOOK_URL on the worker, a loopback receiver here) gets the signed events.
 * `mpf reconcile resolve --gateway` goes through an `mpf gateway` process with a keyring: a backend
 * key is told it needs operator, naming where the key came from (MPF_API_KEY_FILE=<path>); beside a
 * person's access token in the environment it is refused before anything is sent (exit 2), naming
 * both; an operator key resolves and the audit record names that key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { newKey } from '../../src/auth/keyring';
import { generateDevKeys } from '../../src/codec/keys';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../../src/simulator/options';
import { startSimulator, type RunningSimulator } from '../../src/simulator';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { SIM_PIN, uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { scrape, sumOf } from '../helpers/prometheus';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

/**
 * Shaped like a person's access token (a compact JWS) but signed by no identity provider: the CLI
 * tells it from an API key by its shape, and the gateway here, with no IdP, takes no person's token.
 */
const PERSON_TOKEN = [{ alg: 'ES256', kid: 'k1' }, { sub: 'operator', permissions: ['default:admin'] }]
  .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url'))
  .concat('c2lnbmVkLWJ5LW5vLWlkZW50aXR5LXByb3ZpZGVy')
  .join('.');

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TEMPORAL_CLI_PATH'];
  return { ...Object.fromEntries(keep.filter((k) => process.env[k]).map((k) => [k, process.env[k]])), ...extra };
}

describe('mpf reconcile, lists and link cancel against a worker process', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let worker: MpfProcess;
  let env: NodeJS.ProcessEnv;
  let receiver: RunningListener;
  let workerUrl = '';
  let gateway: MpfProcess;
  let gatewayUrl = '';
  const secret = generateSecret();
  const ops = newKey({ id: 'ops-ada', role: 'operator', label: 'Ada (ops)' });
  const backend = newKey({ id: 'shop-backend', role: 'backend' });
  let keyDir: string;

  before(async () => {
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-reconcile-keys-'));
    const temporal = await getTestTemporal();
    receiver = await startEventListener({ secrets: [secret] });
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
      MERCHANT_WEBHOOK_URL: receiver.url,
      MERCHANT_WEBHOOK_SECRET: secret,
      MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
    });
    worker = spawnMpf(['worker'], { ...env, WORKER_METRICS_ADDRESS: '127.0.0.1:0' });
    workerUrl = (await worker.waitFor(/worker: metrics and health on (http:\/\/127\.0\.0\.1:\d+)/, 120_000))[1]!;
    await worker.waitFor(/worker: polling task queue /, 120_000);
    gateway = spawnMpf(['gateway', '--port', '0'], { ...env, GATEWAY_API_KEYS: JSON.stringify([ops.entry, backend.entry]) });
    gatewayUrl = (await gateway.waitFor(/listening on (http:\/\/\S+)/, 120_000))[1]!;
  });
  after(async () => {
    await gateway?.kill('SIGTERM');
    await worker?.kill('SIGTERM');
    await sim?.close();
    await receiver?.close();
    await (await getTestTemporal()).shutdown();
    if (keyDir) fs.rmSync(keyDir, { recursive: true, force: true });
  });

  const mpf = (args: string[], input?: string) => runMpf(args, env, { input, timeoutMs: 90_000 });

  /** `key` in a 0600 file of the test's own directory (as `mpf keys new --key-file` leaves one). */
  const keyFile = (key: string, name: string): string => {
    const file = path.join(keyDir, name);
    fs.writeFileSync(file, key, { mode: 0o600 });
    return file;
  };

  /**
   * The runbook's refusals, with the credential's source named in each and nothing resolved: a
   * backend key from MPF_API_KEY_FILE is answered 403 naming that file; beside a person's access
   * token in the environment (the operator's shell after `mpf cluster login`) the same command is
   * refused before anything is sent, exit 2, naming both; `--as key` sends the key (403 again);
   * `--api-key-file` on the command line wins over both.
   */
  async function credentialsAsTheRunbookShows(resolveArgs: string[]): Promise<void> {
    const backendFile = keyFile(backend.key, 'shop-backend.key');
    const run = (args: string[], extra: Record<string, string>) => runMpf(args, { ...env, ...extra }, { timeoutMs: 90_000 });
    const noSecret = (r: { stdout: string; stderr: string }, what: string) => {
      for (const secret of [backend.key, ops.key, PERSON_TOKEN]) assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), `${what}: no credential echoed`);
    };

    const fromFile = await run([...resolveArgs, '--note', 'x'], { MPF_API_KEY_FILE: backendFile });
    assert.equal(fromFile.code, 1, fromFile.stderr);
    assert.equal(
      fromFile.stderr.trim(),
      `mpf: the gateway answered 403 forbidden: mpf reconcile resolve needs an API key of role operator; the key sent came from MPF_API_KEY_FILE=${backendFile} (this route needs a key of role operator or above; key shop-backend has role backend)`,
    );
    noSecret(fromFile, 'MPF_API_KEY_FILE');

    const both = await run([...resolveArgs, '--note', 'x'], { MPF_API_KEY_FILE: backendFile, MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(both.code, 2, both.stderr);
    assert.equal(
      both.stderr.trim(),
      `mpf: two credentials for the gateway's operator routes: MPF_ACCESS_TOKEN (a person's access token) and MPF_API_KEY_FILE=${backendFile} (an API key); nothing was sent. ` +
        'Pick one: mpf --as person … or mpf --as key … (or unset MPF_ACCESS_TOKEN or MPF_API_KEY_FILE; or name the key on the command line: mpf --api-key-file <path> …)',
    );
    noSecret(both, 'two credentials');

    const asKey = await run(['--as', 'key', ...resolveArgs, '--note', 'x'], { MPF_API_KEY_FILE: backendFile, MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(asKey.code, 1, asKey.stderr);
    assert.ok(asKey.stderr.startsWith('mpf: the gateway answered 403 forbidden: ') && asKey.stderr.includes(`the key sent came from MPF_API_KEY_FILE=${backendFile} (`), asKey.stderr);
    noSecret(asKey, '--as key');

    // NAME and NAME_FILE of one credential: two values, refused the same way.
    const twoKeys = await run([...resolveArgs, '--note', 'x'], { MPF_API_KEY: ops.key, MPF_API_KEY_FILE: backendFile });
    assert.equal(twoKeys.code, 2, twoKeys.stderr);
    assert.match(twoKeys.stderr, new RegExp(`^mpf: MPF_API_KEY and MPF_API_KEY_FILE=\\S+shop-backend\\.key are both set`));
    noSecret(twoKeys, 'NAME and NAME_FILE');

    // The command line wins over the environment: the operator key from --api-key-file lists,
    // where the person's token (not one this gateway takes) would have been refused.
    const listed = await run(['--api-key-file', keyFile(ops.key, 'ops-list.key'), 'reconcile', 'list'], { MPF_GATEWAY_URL: gatewayUrl, MPF_API_KEY_FILE: backendFile, MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(listed.code, 0, listed.stderr);
    const asPerson = await run(['--as', 'person', 'reconcile', 'list'], { MPF_GATEWAY_URL: gatewayUrl, MPF_API_KEY_FILE: backendFile, MPF_ACCESS_TOKEN: PERSON_TOKEN });
    assert.equal(asPerson.code, 1, asPerson.stderr);
    assert.match(asPerson.stderr, /answered 401 \w+: .*\(sent MPF_ACCESS_TOKEN: sign in again/);
    noSecret(asPerson, '--as person');
  }

  test('a swap left in needs_reconciliation is listed by `mpf reconcile list` and ended by `mpf reconcile resolve` with the audit record in its view and the signed events', async () => {
    const txn = uniqueRef('cli-recon');
    const swapId = `swap-${txn}`;
    await control.setConfig({ swapExpiresInSeconds: 300 });
    const started = await mpf(['swap', 'start', '--user-ref', 'user-recon', '--from', 'USD', '--to', 'NGN', '--amount', '10', '--txn-ref', txn, '--json']);
    assert.equal(started.code, 0, started.stderr);
    const paymentRef = JSON.parse(started.stdout).swap.payment_ref as string;
    const pinToken = JSON.parse(started.stdout).pin_token as string;
    assert.ok(pinToken.length >= 20, 'the pin_token was printed');

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

    const resolveArgs = ['reconcile', 'resolve', swapId, '--outcome', 'confirmed', '--provider-reference', paymentRef, '--gateway', gatewayUrl];
    // Through the gateway, a backend key may not resolve: told which role it needs, nothing changes.
    const asBackend = await runMpf([...resolveArgs, '--note', 'checked'], { ...env, MPF_API_KEY: backend.key }, { timeoutMs: 90_000 });
    assert.equal(asBackend.code, 1);
    assert.match(asBackend.stderr, /403 forbidden: mpf reconcile resolve needs an API key of role operator; the key sent came from MPF_API_KEY \(/);
    assert.ok(!asBackend.stderr.includes(backend.key) && !asBackend.stdout.includes(backend.key), 'the key is never echoed');
    const noKey = await mpf([...resolveArgs, '--note', 'checked']);
    assert.equal(noKey.code, 1);
    assert.match(noKey.stderr, /MPF_API_KEY: is required to resolve through the gateway/);
    await credentialsAsTheRunbookShows(resolveArgs);
    assert.equal(JSON.parse((await mpf(['swap', 'status', swapId, '--json'])).stdout).state, 'needs_reconciliation', 'untouched');

    // An operator key resolves (from its file, as the runbook exports it); the audit record names
    // the key (its id and label), the words go in the note.
    const resolved = await runMpf(
      [...resolveArgs, '--operator', 'Ada on call', '--note', 'provider statement shows the conversion; credited the user'],
      { ...env, MPF_API_KEY_FILE: keyFile(ops.key, 'ops-ada.key') },
      { timeoutMs: 90_000 },
    );
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.match(resolved.stdout, new RegExp(`^${swapId}: reconciled`));
    assert.match(resolved.stdout, /operator\s+key ops-ada \(Ada \(ops\)\)/);
    assert.ok(!resolved.stdout.includes(ops.key) && !resolved.stderr.includes(ops.key), 'the key is never echoed');

    const status = await mpf(['swap', 'status', swapId, '--json']);
    const view = JSON.parse(status.stdout);
    assert.equal(view.state, 'reconciled');
    assert.equal(view.reconciliation.outcome, 'confirmed');
    assert.equal(view.reconciliation.provider_reference, paymentRef);
    assert.equal(view.reconciliation.operator, 'key ops-ada (Ada (ops))');
    assert.match(view.reconciliation.note, /provider statement shows the conversion; credited the user/);
    assert.match(view.reconciliation.note, /Ada on call/);
    assert.match(view.reconciliation.reason_before, /no notification from the provider settled it/);
    assert.ok(Date.parse(view.reconciliation.resolved_at) > 0);

    // Straight to Temporal (the holder of Temporal credentials), the record says so.
    const again = await mpf(['reconcile', 'resolve', swapId, '--outcome', 'failed', '--provider-reference', paymentRef, '--operator', 'Bo', '--note', 'second try']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /cannot be resolved: it was already reconciled by key ops-ada \(Ada \(ops\)\) at .* \(confirmed\)/);
    const direct = await mpf(['reconcile', 'resolve', swapId, '--outcome', 'failed', '--provider-reference', paymentRef, '--note', 'no operator']);
    assert.equal(direct.code, 1);
    assert.match(direct.stderr, /--operator: is required without a gateway/);

    const reconciled = await eventually(async () => {
      const r = await mpf(['swap', 'list', '--state', 'reconciled', '--json']);
      return r.code === 0 && (JSON.parse(r.stdout).items as Array<{ flow_id: string }>).some((i) => i.flow_id === swapId) && r;
    }, 30_000, 'listed as reconciled');
    assert.ok(reconciled);
    assert.ok(!(await mpf(['reconcile', 'list'])).stdout.includes(swapId), 'no longer waiting');
    // The provider did convert, once.
    assert.equal((await control.ledger({ ref: txn })).effects.filter((e) => e.kind === 'swap.confirmed').length, 1);

    // The merchant's endpoint got swap.needs_reconciliation and then swap.reconciled, signed.
    const ofSwap = () => receiver.deliveries.filter((d) => d.event?.id.startsWith(`evt_${swapId}_`));
    const got = await eventually(async () => {
      const ds = ofSwap();
      return ds.some((d) => d.event?.type === 'swap.reconciled') && ds;
    }, 30_000, 'swap.reconciled at the receiver');
    assert.ok(got.every((d) => d.verified && d.status === 200), 'every delivery verified and answered 200');
    const events = got.map((d) => new Webhook(secret).verify(d.body, d.headers) as { id: string; type: string; data: Record<string, unknown> });
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(-2), ['swap.needs_reconciliation', 'swap.reconciled']);
    assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'each event delivered once');
    const [stuck, ended] = events.slice(-2) as [(typeof events)[number], (typeof events)[number]];
    assert.equal(stuck.data.swap_id, swapId);
    assert.equal(ended.data.swap_id, swapId);
    assert.equal(ended.data.previous_state, 'needs_reconciliation');
    const rec = ended.data.reconciliation as Record<string, unknown>;
    assert.equal(rec.outcome, 'confirmed');
    assert.equal(rec.provider_reference, paymentRef);
    assert.equal(rec.operator, 'key ops-ada (Ada (ops))');
    // No secret value in any of them: the pin_token, the notification token the provider was
    // handed, the provider credentials, the signing secret, a sealed value.
    const init = (await control.ledger({ endpoint: 'swap.init' })).requests.find((r) => (r.body as { txn_ref?: string }).txn_ref === txn);
    const notificationToken = String((init!.body as { notification_url: string }).notification_url).split('/').pop()!;
    assert.ok(notificationToken.length >= 40, 'the notification token was found');
    for (const d of got) {
      for (const c of [pinToken, notificationToken, secret, secret.slice(6), SIMULATOR_DEFAULT_CREDENTIALS.secretKey, SIMULATOR_DEFAULT_CREDENTIALS.accessToken, 'sealed:v1', 'notification_url']) {
        assert.ok(!d.body.includes(c), `${d.event!.type} carries ${c.slice(0, 8)}…`);
      }
    }
    // The worker's /metrics counts each delivery attempt by event type and result.
    const m = await scrape(`${workerUrl}/metrics`);
    assert.equal(sumOf(m.samples, 'mpf_event_deliveries_total', { event_type: 'swap.reconciled', result: 'delivered' }), 1);
    assert.equal(sumOf(m.samples, 'mpf_event_deliveries_total', { event_type: 'swap.needs_reconciliation', result: 'delivered' }), 1);
    assert.equal(sumOf(m.samples, 'mpf_event_deliveries_total', { result: 'failed' }), 0);
    assert.ok(sumOf(m.samples, 'mpf_event_delivery_duration_seconds_count', { event_type: 'swap.reconciled' }) >= 1);
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
