/**
 * `mpf events trigger <type>` as a user runs it, every piece an `mpf` process: the simulator, a
 * worker and a gateway (with a keyring) from environment variables, `mpf events listen` as the
 * worker's MERCHANT_WEBHOOK_URL with the signing secret, and one `mpf events trigger` per event
 * type, which drives a real flow through the gateway and the simulator until it emits that event.
 * The listener must then receive a verified delivery of it; the simulator is left as found.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newKey } from '../../src/auth/keyring';
import { generateDevKeys } from '../../src/codec/keys';
import { EVENT_TYPES } from '../../src/contract/merchant-events';
import { generateSecret } from '../../src/merchant-events/signing';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { SIM_PIN } from '../helpers/fixtures';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

interface Triggered {
  type: string;
  kind: string;
  flow_id: string;
  event_id: string;
  state: string;
  steps: string[];
}

interface ListenedDelivery {
  id: string;
  verified: boolean;
  status?: number;
  event?: { id: string; type: string; data: Record<string, unknown> };
}

describe('mpf events trigger, as a user runs it against a worker, a gateway and the simulator', () => {
  const secret = generateSecret();
  const keys = generateDevKeys();
  const backend = newKey({ id: 'trigger-backend', role: 'backend' });
  const operator = newKey({ id: 'trigger-ops', role: 'operator', label: 'Trigger ops' });
  const procs: MpfProcess[] = [];
  let listener: MpfProcess;
  let control: SimulatorControl;
  let simUrl = '';
  let gatewayUrl = '';
  let simulatorBefore: { faults: unknown; config: unknown };

  const start = async (args: string[], extra: NodeJS.ProcessEnv, ready: RegExp): Promise<RegExpMatchArray> => {
    const p = spawnMpf(args, extra);
    procs.push(p);
    if (args[0] === 'events') listener = p;
    return p.waitFor(ready, 120_000);
  };
  /** Only what a developer's shell needs for the trigger: the gateway, a key and the simulator. */
  const triggerEnv = (key: string): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: gatewayUrl, MPF_API_KEY: key, MPF_SIMULATOR_URL: simUrl });
  /** What an operator's shell adds for the *.terminated triggers: direct access to Temporal, as for Temporal Web's Terminate. */
  let operatorTemporal: NodeJS.ProcessEnv = {};
  const trigger = (args: string[], key = backend.key) =>
    runMpf(['events', 'trigger', ...args], { ...triggerEnv(key), ...(args[0]?.endsWith('.terminated') ? operatorTemporal : {}) }, { timeoutMs: 150_000 });
  const deliveries = (): ListenedDelivery[] =>
    listener
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as ListenedDelivery);

  before(async () => {
    const temporal = await getTestTemporal();
    simUrl = (await start(['simulator'], {}, /listening on (http:\S+)/))[1]!;
    control = createControlClient(simUrl);
    const listenUrl = (await start(['events', 'listen', '--port', '0', '--json'], { MERCHANT_WEBHOOK_SECRET: secret }, /listening on (http:\S+) /))[1]!;
    const app = { TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace, TEMPORAL_TASK_QUEUE: uniqueTaskQueue('ev-trigger'), PAYLOAD_ENCRYPTION_KEYS: keys };
    operatorTemporal = app;
    await start(
      ['worker'],
      {
        ...app,
        MPS_BASE_URL: simUrl,
        MPS_SECRET_KEY: 'sim-secret-key',
        MPS_ACCESS_TOKEN: 'sim-access-token',
        MPS_MERCHANT_REF: 'sim-merchant',
        MERCHANT_WEBHOOK_URL: listenUrl,
        MERCHANT_WEBHOOK_SECRET: secret,
        MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
        // provider.breaker_closed waits for the confirm breaker's probe: a short cool-down.
        PROVIDER_BREAKER_COOLDOWN_SECONDS: '3',
      },
      /worker: polling task queue/,
    );
    // Short enough for the triggers that wait for them: a doubt settles after 2 s, a link lives 20 s.
    const gatewayEnv = { ...app, GATEWAY_API_KEYS: JSON.stringify([backend.entry, operator.entry]), SWAP_SETTLE_WAIT_SECONDS: '2', LINK_LIFETIME_SECONDS: '20' };
    gatewayUrl = (await start(['gateway', '--port', '0'], gatewayEnv, /listening on (http:\S+)/))[1]!;
    // Someone else's fault and window, which the triggers must leave as they are.
    // (scoped to another transaction: the breaker's probe, a categories GET, must not make it fire)
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'latency', latencyMs: [0, 1], ref: 'someone-elses-swap' }] });
    await control.setConfig({ swapExpiresInSecondsFor: { 'someone-elses-swap': 42 } });
    simulatorBefore = { faults: await control.faults(), config: await control.config() };
  });
  after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
  });

  describe('every merchant event type, triggered concurrently', { concurrency: 5 }, () => {
    for (const type of EVENT_TYPES) {
      test(`mpf events trigger ${type} drives a flow until it emits ${type}, and mpf events listen receives it verified`, async () => {
        const key = type.endsWith('.reconciled') || type.startsWith('provider.') ? operator.key : backend.key;
        const r = await trigger([type, '--json', '--timeout', '120'], key);
        assert.equal(r.code, 0, `mpf events trigger ${type}: ${r.stderr}${r.stdout}`);
        const out = JSON.parse(r.stdout) as Triggered;
        assert.equal(out.type, type);
        assert.equal(out.kind, type.split('.')[0]);
        assert.match(out.event_id, new RegExp(`^evt_${out.flow_id}_\\d+$`));
        assert.ok(out.steps.length > 0, 'it says what it did');
        for (const secretish of ['pin_token', 'pin_url', 'wallet_pin', backend.key, operator.key, SIM_PIN]) {
          assert.ok(!r.stdout.includes(secretish) && !r.stderr.includes(secretish), `the output carries ${secretish.slice(0, 8)}…`);
        }
        const got = await eventually(
          async () => deliveries().find((d) => d.id === out.event_id && d.verified && d.status === 200),
          60_000,
          `${out.event_id} at mpf events listen`,
        );
        assert.equal(got.event?.type, type);
        if (type.startsWith('provider.')) assert.equal(got.event?.data.object, 'provider_guard');
        else assert.equal(got.event?.data[type.startsWith('swap.') ? 'swap_id' : 'link_id'], out.flow_id);
      });
    }
  });

  test('mpf events trigger --list, and with no type, lists every event type with what it does; an unknown type is refused naming them', async () => {
    for (const args of [['--list'], []]) {
      const r = await trigger(args);
      assert.equal(r.code, 0, r.stderr);
      for (const type of EVENT_TYPES) assert.match(r.stdout, new RegExp(`^${type.replace('.', '\\.')}\\s+\\S`, 'm'));
    }
    const json = await trigger(['--list', '--json']);
    assert.deepEqual((JSON.parse(json.stdout) as { types: Array<{ type: string }> }).types.map((t) => t.type), [...EVENT_TYPES]);
    assert.ok(!json.stdout.includes('no trigger for this type'), 'every type has a trigger');
    const unknown = await trigger(['swap.teleported']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /unknown event type "swap\.teleported": it is one of swap\.awaiting_pin, .*payment_link\.reconciled/);
  });

  test('a *.reconciled trigger with a backend key is told it needs an operator key, and starts nothing', async () => {
    const inits = (await control.ledger({ endpoint: 'swap.init' })).requests.length;
    const r = await trigger(['swap.reconciled']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /answered 403 forbidden to GET \/v1\/admin\/reconciliations .*needs an operator key in MPF_API_KEY/);
    assert.ok(!r.stderr.includes(backend.key), 'the key is not echoed');
    assert.equal((await control.ledger({ endpoint: 'swap.init' })).requests.length, inits, 'no swap was started');
  });

  test('a simulator address that is not loopback is refused before anything is sent', async () => {
    const r = await runMpf(['events', 'trigger', 'payment_link.paid', '--sim-url', 'http://simulator.example.com:8090'], triggerEnv(backend.key));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /the simulator address simulator\.example\.com:8090 is not loopback: .*never the live provider/);
  });

  test('the simulator is left as the triggers found it: their faults and windows are gone, others untouched', async () => {
    assert.deepEqual({ faults: await control.faults(), config: await control.config() }, simulatorBefore);
  });
});
