/**
 * The worker and gateway as users run them (`mpf worker`, `mpf gateway`, configured only
 * by environment variables) fail closed on bad configuration, name what they cannot reach, and work
 * against a plain Temporal dev server on which nobody registered our search attributes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Connection } from '@temporalio/client';
import { generateDevKeys } from '../../src/codec/keys';
import { checkPublicAddresses } from '../../src/starter/gateway/public-address';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { freePort } from '../../src/temporal/ports';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { linkToPaid, swapToConfirmed } from '../helpers/field';
import { uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { SIM_CREDENTIALS } from '../helpers/provider';

const API_KEY = 'field-test-api-key-0123456789';

/** Only what a user's shell would have: PATH and HOME, nothing of the test runner's. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...extra };
}

describe('configuration that fails closed', () => {
  let deadTemporal: string;
  before(async () => {
    deadTemporal = `127.0.0.1:${await freePort()}`; // nothing listens there
  });

  test('mpf worker with no provider configured exits non-zero, names MPS_BASE_URL and MPS_PROVIDER, and never starts the simulator', async () => {
    const r = await runMpf(['worker'], userEnv({ PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(), TEMPORAL_ADDRESS: deadTemporal }));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /MPS_BASE_URL: no provider is configured/);
    assert.match(r.stderr, /MPS_PROVIDER=simulator/);
    assert.doesNotMatch(r.stdout + r.stderr, /simulator at http|polling task queue/);
  });

  test('under NODE_ENV=production the worker refuses the simulator even when asked for it', async () => {
    for (const extra of [{}, { MPS_PROVIDER: 'simulator' }] as Array<Record<string, string>>) {
      const r = await runMpf(['worker'], userEnv({ NODE_ENV: 'production', PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(), TEMPORAL_ADDRESS: deadTemporal, ...extra }));
      assert.notEqual(r.code, 0, JSON.stringify(extra));
      assert.match(r.stderr, extra.MPS_PROVIDER ? /MPS_PROVIDER: is simulator, which NODE_ENV=production never runs/ : /MPS_BASE_URL: no provider is configured/);
      assert.doesNotMatch(r.stdout + r.stderr, /simulator at http|polling task queue/);
    }
  });

  test('a gateway on a public interface with loopback notification URLs is refused under NODE_ENV=production', async () => {
    const r = await runMpf(
      ['gateway', '--host', '0.0.0.0', '--port', '0'],
      userEnv({ NODE_ENV: 'production', PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(), GATEWAY_API_KEY: API_KEY, TEMPORAL_ADDRESS: deadTemporal }),
    );
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /listens on 0\.0\.0\.0, a non-loopback interface/);
    assert.match(r.stderr, /GATEWAY_PUBLIC_URL: is not set/);
    assert.match(r.stderr, /no payment notification would ever arrive/);
    assert.doesNotMatch(r.stdout, /listening on/);
  });

  test('compose\'s gateway (0.0.0.0, production, pin_url on localhost, notifications to gateway:8080) starts with a warning only; loopback notification URLs are refused', () => {
    const compose = { NODE_ENV: 'production', GATEWAY_PUBLIC_URL: 'http://localhost:8080', GATEWAY_NOTIFICATION_BASE_URL: 'http://gateway:8080' };
    assert.match(checkPublicAddresses('0.0.0.0', compose) ?? '', /^WARNING: .*pin_url opens only in a browser on this machine/);
    assert.equal(checkPublicAddresses('0.0.0.0', { ...compose, GATEWAY_PUBLIC_URL: 'https://pay.example.com' }), undefined);
    assert.equal(checkPublicAddresses('127.0.0.1', { NODE_ENV: 'production' }), undefined);
    assert.throws(() => checkPublicAddresses('0.0.0.0', { ...compose, GATEWAY_NOTIFICATION_BASE_URL: 'http://127.0.0.1:8080' }), /no payment notification would ever arrive.*refused under NODE_ENV=production/);
  });

  test('the worker, the gateway and the CLI name the Temporal address they cannot reach, without a raw transport dump', async () => {
    const base = { PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(), TEMPORAL_ADDRESS: deadTemporal };
    const [worker, gateway, cli] = await Promise.all([
      runMpf(['worker'], userEnv({ ...base, MPS_BASE_URL: 'http://127.0.0.1:9', ...providerCreds() }), { timeoutMs: 90_000 }),
      runMpf(['gateway', '--port', '0'], userEnv({ ...base, GATEWAY_API_KEY: API_KEY }), { timeoutMs: 90_000 }),
      runMpf(['swap', 'status', 'swap-x'], userEnv(base), { timeoutMs: 90_000 }),
    ]);
    for (const [name, r] of [['worker', worker], ['gateway', gateway], ['cli', cli]] as const) {
      assert.notEqual(r.code, 0, name);
      assert.match(r.stderr, new RegExp(`cannot connect to Temporal at ${deadTemporal.replace(/\./g, '\\.')} \\(from TEMPORAL_ADDRESS\\)`), `${name}: ${r.stderr}`);
      assert.match(r.stderr, /Check that the Temporal frontend is running/, name);
      assert.doesNotMatch(r.stderr, /tonic::transport::Error\(/, name);
    }
  });
});

function providerCreds(): Record<string, string> {
  return { MPS_SECRET_KEY: SIM_CREDENTIALS.secretKey, MPS_ACCESS_TOKEN: SIM_CREDENTIALS.accessToken, MPS_MERCHANT_REF: SIM_CREDENTIALS.merchantRef };
}

describe('a plain Temporal dev server on which nobody registered our search attributes', () => {
  let server: DevServer;
  const procs: MpfProcess[] = [];
  let gatewayUrl = '';
  let simulatorUrl = '';
  let worker: MpfProcess;

  before(async () => {
    server = await startDevServer({ searchAttributes: false });
    const sim = spawnMpf(['simulator', '--port', '0'], userEnv({}));
    procs.push(sim);
    simulatorUrl = (await sim.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    const env = userEnv({
      TEMPORAL_ADDRESS: server.address,
      PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(),
      MPS_BASE_URL: simulatorUrl,
      ...providerCreds(),
      GATEWAY_API_KEY: API_KEY,
      LOG_LEVEL: 'info',
    });
    worker = spawnMpf(['worker'], env);
    procs.push(worker);
    const gateway = spawnMpf(['gateway', '--port', '0'], env);
    procs.push(gateway);
    gatewayUrl = (await gateway.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    await worker.waitFor(/worker: polling task queue/, 120_000);
  });

  after(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
    await server?.stop();
  });

  test('outside production a gateway on a public interface warns loudly on stderr and still serves', async () => {
    const gw = spawnMpf(['gateway', '--host', '0.0.0.0', '--port', '0'], userEnv({ TEMPORAL_ADDRESS: server.address, PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(), GATEWAY_API_KEY: API_KEY }));
    procs.push(gw);
    await gw.waitFor(/listening on http/);
    assert.match(gw.output(), /gateway: WARNING: the gateway listens on 0\.0\.0\.0, a non-loopback interface, but GATEWAY_NOTIFICATION_BASE_URL \/ GATEWAY_PUBLIC_URL: is not set/);
    await gw.kill('SIGTERM');
  });

  test('mpf worker registers them at start-up, then a swap confirms and a link is paid through mpf gateway', async () => {
    assert.match(worker.output(), /registered search attributes MpfFlowKind, MpfState, MpfTxnRef, MpfApiKeyId, MpfCustomerRef in namespace default/);
    const conn = await Connection.connect({ address: server.address });
    try {
      const listed = await conn.operatorService.listSearchAttributes({ namespace: 'default' });
      for (const k of Object.keys(CUSTOM_SEARCH_ATTRIBUTES)) assert.ok(k in (listed.customAttributes ?? {}), k);
    } finally {
      await conn.close();
    }
    const target = { gatewayUrl, apiKey: API_KEY, simulatorUrl };
    await swapToConfirmed(target, uniqueRef('field-swap'));
    await linkToPaid(target, uniqueRef('field-link'));
  });

  test('a second worker starting on the same namespace finds them registered and starts quietly', async () => {
    const again = spawnMpf(['worker'], {
      ...userEnv({}),
      TEMPORAL_ADDRESS: server.address,
      PAYLOAD_ENCRYPTION_KEYS: generateDevKeys(),
      MPS_BASE_URL: simulatorUrl,
      ...providerCreds(),
    });
    procs.push(again);
    await again.waitFor(/worker: polling task queue/, 120_000);
    assert.doesNotMatch(again.output(), /registered search attributes/);
  });
});
