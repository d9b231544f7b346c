import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateDevKeys } from '../../src/codec/keys';
import { generateSecret } from '../../src/merchant-events/signing';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

/**
 * The developer tooling as a user runs it, every piece an `mpf` process: the simulator, a worker
 * and a gateway from environment variables, `mpf events listen` printing deliveries, and
 * `mpf link create` / `mpf sim pay|fail|notify` from the terminal.
 */
describe('mpf events listen and mpf sim, as a user runs them', () => {
  const secret = generateSecret();
  const keys = generateDevKeys();
  const taskQueue = uniqueTaskQueue('ev-cli');
  const apiKey = 'events-cli-test-api-key-0123456789';
  const procs: MpfProcess[] = [];
  let simUrl = '';
  let gatewayUrl = '';
  let listener: MpfProcess;
  let env: NodeJS.ProcessEnv;

  const start = async (args: string[], extra: NodeJS.ProcessEnv, ready: RegExp): Promise<[MpfProcess, RegExpMatchArray]> => {
    const p = spawnMpf(args, extra);
    procs.push(p);
    return [p, await p.waitFor(ready, 90_000)];
  };
  const mpf = async (args: string[]): Promise<string> => {
    const r = await runMpf(args, env, { timeoutMs: 90_000 });
    assert.equal(r.code, 0, `mpf ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };

  before(async () => {
    const temporal = await getTestTemporal();
    const [, sim] = await start(['simulator'], {}, /listening on (http:\S+)/);
    simUrl = sim[1]!;
    let m: RegExpMatchArray;
    [listener, m] = await start(['events', 'listen', '--port', '0', '--fail', '1'], { MERCHANT_WEBHOOK_SECRET: secret }, /listening on (http:\S+) /);
    const listenUrl = m[1]!;
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PAYLOAD_ENCRYPTION_KEYS: keys,
      MPF_SIMULATOR_URL: simUrl,
    };
    await start(
      ['worker'],
      {
        ...env,
        MPS_BASE_URL: simUrl,
        MPS_SECRET_KEY: 'sim-secret-key',
        MPS_ACCESS_TOKEN: 'sim-access-token',
        MPS_MERCHANT_REF: 'sim-merchant',
        MERCHANT_WEBHOOK_URL: listenUrl,
        MERCHANT_WEBHOOK_SECRET: secret,
        MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
      },
      /worker: polling task queue/,
    );
    const [, gw] = await start(['gateway', '--port', '0'], { ...env, GATEWAY_API_KEY: apiKey }, /listening on (http:\S+)/);
    gatewayUrl = gw[1]!;
    env.GATEWAY_PUBLIC_URL = gatewayUrl; // the CLI's links are notified through the gateway
  });
  after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
  });

  const createLink = async (ref: string): Promise<{ link_id: string; payment_ref: string }> => {
    const b = linkBody(ref);
    const out = await mpf(['link', 'create', '--user-ref', b.user_ref, '--txn-merchant-ref', ref, '--amount', '2500', '--full-name', b.full_name, '--email', b.email, '--phone', b.phone, '--redirect-url', b.redirect_url, '--json']);
    return JSON.parse(out) as { link_id: string; payment_ref: string };
  };
  const printed = (re: RegExp): Promise<RegExpMatchArray> => listener.waitFor(re, 60_000);

  test('mpf sim pay: the listener prints the verified payment_link.paid delivery (after the retry it asked for with --fail 1)', async () => {
    const link = await createLink(uniqueRef('cli-pay'));
    const created = await printed(new RegExp(`payment_link\\.created  evt_${link.link_id}_1  ${link.link_id} -> awaiting_payment  attempt 2  answered 200`));
    assert.ok(created);
    assert.match(listener.output(), new RegExp(`payment_link\\.created  evt_${link.link_id}_1 .* attempt 1  answered 503`));
    const out = await mpf(['sim', 'pay', link.payment_ref]);
    assert.match(out, new RegExp(`payment ${link.payment_ref}: paid`));
    await printed(new RegExp(`payment_link\\.paid  evt_${link.link_id}_2  ${link.link_id} -> paid  attempt 2  answered 200`));
    assert.doesNotMatch(listener.output(), /INVALID SIGNATURE/);
    // The link's status shows its events with their deliveries.
    const status = JSON.parse(await mpf(['link', 'status', link.link_id, '--json'])) as { state: string; events: Array<{ type: string; deliveries: Array<{ state: string; attempts: number }> }> };
    assert.equal(status.state, 'paid');
    assert.deepEqual(status.events.map((e) => [e.type, e.deliveries[0]?.state, e.deliveries[0]?.attempts]), [
      ['payment_link.created', 'delivered', 2],
      ['payment_link.paid', 'delivered', 2],
    ]);
  });

  test('mpf sim fail, then mpf sim notify with a late success: payment_link.failed, then payment_link.needs_reconciliation', async () => {
    const link = await createLink(uniqueRef('cli-fail'));
    assert.match(await mpf(['sim', 'fail', link.payment_ref]), /: failed/);
    await printed(new RegExp(`payment_link\\.failed  evt_${link.link_id}_2  ${link.link_id} -> failed  attempt 2  answered 200`));
    // The provider notifies a success for the failed link (the link keeps listening for an hour).
    assert.match(await mpf(['sim', 'notify', link.payment_ref, '--status', 'successful']), /\(successful\) for .* sent/);
    await printed(new RegExp(`payment_link\\.needs_reconciliation  evt_${link.link_id}_3  ${link.link_id} -> needs_reconciliation  attempt 2  answered 200`));
  });

  test('mpf sim refuses an unknown payment_ref and a bad --status, naming them', async () => {
    const unknown = await runMpf(['sim', 'pay', 'SIMPL-nope'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /Unknown payment_ref/);
    const bad = await runMpf(['sim', 'notify', 'SIMPL-nope', '--status', 'maybe'], env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--status.*must be one of successful, failed, pending/);
  });
});
