/**
 * Live or simulator by what answers, never by the URL (src/provider/identity.ts): a worker with
 * MPS_LIVE=1 refuses the real simulator, a worker without it refuses a loopback stand-in that does
 * not answer as the simulator, and neither sends a credential or a money-moving call to find out.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../../src/config/env';
import { ProviderClient } from '../../src/provider/client';
import { assertProviderIdentity } from '../../src/provider/identity';
import { SIMULATOR_DEFAULT_CREDENTIALS, startSimulator, type RunningSimulator } from '../../src/simulator';

const CREDS = SIMULATOR_DEFAULT_CREDENTIALS;

describe('the provider identity check', () => {
  let sim: RunningSimulator;
  let standIn: Server;
  let standInUrl = '';
  const seen: { url?: string; method?: string; headers: IncomingHttpHeaders }[] = [];

  before(async () => {
    sim = await startSimulator();
    // A provider that is not the simulator (as the live one would be), on loopback all the same.
    standIn = createServer((req, res) => {
      seen.push({ url: req.url, method: req.method, headers: req.headers });
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"error","message":"Not found"}');
    });
    await new Promise<void>((r) => standIn.listen(0, '127.0.0.1', r));
    standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
  });
  after(async () => {
    await sim.close();
    await new Promise((r) => standIn.close(r));
  });

  const check = async (baseUrl: string, live: boolean): Promise<void> => {
    const client = new ProviderClient({ baseUrl, ...CREDS, live });
    try {
      await assertProviderIdentity(client, { attempts: 1 });
    } finally {
      await client.close();
    }
  };

  test('a worker without MPS_LIVE runs against the simulator', async () => {
    await check(sim.baseUrl, false);
  });

  test('a worker with MPS_LIVE=1 pointed at the simulator refuses to start, saying why', async () => {
    await assert.rejects(check(sim.baseUrl, true), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /^MPS_LIVE: is 1 but the provider at http:\/\/127\.0\.0\.1:\d+ answers as the simulator \(x-mpf-simulator\)/);
      assert.match(e.message, /unset MPS_LIVE to run against the simulator/);
      return true;
    });
  });

  test('a worker without MPS_LIVE refuses a loopback provider that does not answer as the simulator (a loopback URL proves nothing)', async () => {
    seen.length = 0;
    await assert.rejects(check(standInUrl, false), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /^MPS_LIVE: is not set but the provider at http:\/\/127\.0\.0\.1:\d+ does not answer as the simulator/);
      assert.match(e.message, /every call moves real money/);
      return true;
    });
    // One GET of the identity path: no money-moving call, no credential.
    assert.deepEqual(seen.map((s) => [s.method, s.url]), [['GET', '/_sim/identity']]);
    const h = seen[0]?.headers ?? {};
    assert.equal(h.authorization, undefined);
    assert.equal(h['x-merchant-ref'], undefined);
    assert.ok(!JSON.stringify(h).includes(CREDS.secretKey));
  });

  test('a worker with MPS_LIVE=1 runs against a provider that does not answer as the simulator', async () => {
    await check(standInUrl, true);
  });

  test('the simulator marks every answer of its provider API, errors and unknown paths included', async () => {
    for (const p of ['/_sim/identity', '/no/such/path', '/api/v1/utility/categories']) {
      const res = await fetch(`${sim.baseUrl}${p}`);
      await res.arrayBuffer();
      assert.equal(res.headers.get('x-mpf-simulator'), 'merchant-payment-flows simulator; no money moves', p);
    }
  });

  test('a provider that cannot be reached is named, after the attempts asked for', async () => {
    const client = new ProviderClient({ baseUrl: 'http://127.0.0.1:9', ...CREDS });
    try {
      await assert.rejects(assertProviderIdentity(client, { attempts: 2, pauseMs: 10 }), /could not be reached .*\(2 attempt\(s\); last: /);
    } finally {
      await client.close();
    }
  });
});
