/**
 * Injected faults of the provider simulator, each observed over a real socket, and their
 * reproducibility under a seed.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { PROVIDER_PATHS } from '../../src/contract/provider';
import { SimulatorControl } from '../../src/simulator/control-client';
import { type FaultRule, type RunningSimulator, startSimulator } from '../../src/simulator/index';
import { providerSwapBody, SIM_PIN, uniqueRef } from '../helpers/fixtures';

const AUTH = { authorization: 'Bearer sim-secret-key', 'content-type': 'application/json' };

function initSwap(base: string, ref = uniqueRef('fault'), opts: { headersTimeout?: number } = {}) {
  return request(`${base}${PROVIDER_PATHS.swapInit}`, {
    method: 'POST',
    headers: AUTH,
    body: JSON.stringify(providerSwapBody(ref)),
    ...opts,
  });
}

async function categoriesStatus(base: string): Promise<number> {
  const res = await request(`${base}${PROVIDER_PATHS.categories}`, { headers: { 'x-merchant-ref': 'sim-merchant' } });
  await res.body.dump();
  return res.statusCode;
}

describe('simulator faults', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;

  before(async () => {
    sim = await startSimulator({ seed: 1234 });
    control = new SimulatorControl(sim.baseUrl);
  });
  after(async () => {
    await sim.close();
  });
  beforeEach(async () => {
    await control.reset();
  });

  const effectsFor = async (ref: string) => (await control.ledger({ ref })).effects.map((e) => e.kind);

  test('delays a request by the injected latency and still answers it', async () => {
    await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'latency', latencyMs: [250, 250] }] });
    const started = Date.now();
    assert.equal(await categoriesStatus(sim.baseUrl), 200);
    assert.ok(Date.now() - started >= 240, 'the answer came after the injected delay');
    const [entry] = (await control.ledger({ endpoint: 'categories' })).requests;
    assert.equal(entry.fault, 'latency');
    assert.equal(entry.latency_ms, 250);
  });

  test('answers 503 with a JSON error body and commits nothing', async () => {
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'status5xx' }] });
    const ref = uniqueRef('fault');
    const res = await initSwap(sim.baseUrl, ref);
    assert.equal(res.statusCode, 503);
    assert.match(String(res.headers['content-type']), /application\/json/);
    assert.deepEqual(await res.body.json(), { status: 'error', message: 'Service Unavailable' });
    assert.deepEqual(await effectsFor(ref), []);
  });

  test('answers a chosen 5xx status with an HTML body when asked to', async () => {
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'status5xx', status: 500, body: 'html' }] });
    const res = await initSwap(sim.baseUrl);
    assert.equal(res.statusCode, 500);
    assert.match(String(res.headers['content-type']), /text\/html/);
    assert.match(await res.body.text(), /<html>/);
  });

  test('commits the side effect behind a 5xx when the rule says commit', async () => {
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'status5xx', commit: true }] });
    const ref = uniqueRef('fault');
    const res = await initSwap(sim.baseUrl, ref);
    assert.equal(res.statusCode, 503);
    await res.body.dump();
    assert.deepEqual(await effectsFor(ref), ['swap.initialized']);
  });

  test('rate-limits with 429 and a Retry-After header', async () => {
    await control.setFaults({ rules: [{ endpoint: '*', kind: 'rate_limit', retryAfterSeconds: 7 }] });
    const ref = uniqueRef('fault');
    const res = await initSwap(sim.baseUrl, ref);
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['retry-after'], '7');
    await res.body.dump();
    assert.deepEqual(await effectsFor(ref), []);
  });

  test('resets the connection before answering and commits nothing', async () => {
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'reset' }] });
    const ref = uniqueRef('fault');
    await assert.rejects(initSwap(sim.baseUrl, ref), (e: Error & { code?: string }) => /SOCKET|ECONNRESET/.test(e.code ?? e.name));
    const { requests, effects } = await control.ledger({ ref });
    assert.deepEqual(effects, []);
    assert.equal(requests[0].status, 'reset');
    assert.equal(requests[0].fault, 'reset');
  });

  test('answers 200 with a body that is not JSON', async () => {
    await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'garbage' }] });
    const res = await request(`${sim.baseUrl}${PROVIDER_PATHS.categories}`, { headers: { 'x-merchant-ref': 'sim-merchant' } });
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    assert.ok(text.length > 0);
    assert.throws(() => JSON.parse(text));
  });

  test('answers 502 with an HTML error page', async () => {
    await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'html_error' }] });
    const res = await request(`${sim.baseUrl}${PROVIDER_PATHS.categories}`, { headers: { 'x-merchant-ref': 'sim-merchant' } });
    assert.equal(res.statusCode, 502);
    assert.match(String(res.headers['content-type']), /text\/html/);
    assert.match(await res.body.text(), /502 Bad Gateway/);
  });

  test('commits a swap initialization and then drops the connection (apply_then_fail)', async () => {
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'apply_then_fail', times: 1 }] });
    const ref = uniqueRef('fault');
    await assert.rejects(initSwap(sim.baseUrl, ref), (e: Error & { code?: string }) => /SOCKET|ECONNRESET/.test(e.code ?? e.name));
    assert.deepEqual(await effectsFor(ref), ['swap.initialized']);
    const retry = await initSwap(sim.baseUrl, ref);
    assert.equal(retry.statusCode, 409, 'the retry meets the committed swap');
    await retry.body.dump();
    const { requests } = await control.ledger({ ref });
    assert.deepEqual(
      requests.map((r) => [r.status, r.fault]),
      [
        ['reset', 'apply_then_fail'],
        [409, undefined],
      ],
    );
  });

  test('commits a swap confirmation and then drops the connection, so a retry finds the token used', async () => {
    const ref = uniqueRef('fault');
    const init = await initSwap(sim.baseUrl, ref);
    const token = ((await init.body.json()) as { data: { auth_token: string } }).data.auth_token;
    await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 1 }] });
    const confirm = () =>
      request(`${sim.baseUrl}${PROVIDER_PATHS.swapConfirm}`, {
        method: 'POST',
        headers: AUTH,
        body: JSON.stringify({ user_ref: 'user-1', auth_token: token, wallet_pin: SIM_PIN }),
      });
    await assert.rejects(confirm());
    assert.ok((await effectsFor(ref)).includes('swap.confirmed'));
    const retry = await confirm();
    assert.equal(retry.statusCode, 400);
    assert.equal(((await retry.body.json()) as { message: string }).message, 'auth_token is invalid, expired or already used');
  });

  test('hangs without answering until the client gives up, committing nothing', async () => {
    await control.setFaults({ rules: [{ endpoint: 'swap.init', kind: 'hang' }] });
    const ref = uniqueRef('fault');
    await assert.rejects(initSwap(sim.baseUrl, ref, { headersTimeout: 300 }), (e: Error & { code?: string }) => e.code === 'UND_ERR_HEADERS_TIMEOUT');
    const { requests, effects } = await control.ledger({ ref });
    assert.deepEqual(effects, []);
    assert.equal(requests[0].status, 'hang');
  });

  test('drops a hanging request after its maxMs', async () => {
    await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'hang', maxMs: 200 }] });
    await assert.rejects(categoriesStatus(sim.baseUrl), (e: Error & { code?: string }) => /SOCKET|ECONNRESET/.test(e.code ?? e.name));
  });

  test('closes promptly while a request hangs', async () => {
    const local = await startSimulator();
    const c = new SimulatorControl(local.baseUrl);
    await c.setFaults({ rules: [{ endpoint: 'categories', kind: 'hang' }] });
    const pending = categoriesStatus(local.baseUrl);
    for (let i = 0; i < 100 && !(await c.ledger()).requests.some((r) => r.status === 'hang'); i++) await new Promise((r) => setTimeout(r, 10));
    await local.close();
    await assert.rejects(pending);
  });

  test('applies a rule at most `times` times', async () => {
    await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'status5xx', times: 2 }] });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push(await categoriesStatus(sim.baseUrl));
    assert.deepEqual(statuses, [503, 503, 200, 200]);
  });

  test('matches every endpoint with "*" and only its own endpoint otherwise', async () => {
    await control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'status5xx' }] });
    assert.equal(await categoriesStatus(sim.baseUrl), 200);
    await control.setFaults({ rules: [{ endpoint: '*', kind: 'status5xx', status: 504 }] });
    assert.equal(await categoriesStatus(sim.baseUrl), 504);
    await control.clearFaults();
    assert.equal(await categoriesStatus(sim.baseUrl), 200);
  });

  test('repeats the same fault sequence for the same seed and rules', async () => {
    const rules: FaultRule[] = [
      { endpoint: 'categories', kind: 'status5xx', probability: 0.5 },
      { endpoint: 'categories', kind: 'rate_limit', probability: 0.3 },
    ];
    const run = async (seed: number): Promise<number[]> => {
      const s = await startSimulator({ seed });
      try {
        await new SimulatorControl(s.baseUrl).setFaults({ rules });
        const out: number[] = [];
        for (let i = 0; i < 24; i++) out.push(await categoriesStatus(s.baseUrl));
        return out;
      } finally {
        await s.close();
      }
    };
    const a = await run(42);
    const b = await run(42);
    assert.deepEqual(a, b);
    assert.ok(a.includes(200) && a.includes(503) && a.includes(429), `a mixed sequence: ${a.join(',')}`);
    assert.notDeepEqual(await run(43), a, 'another seed gives another sequence');

    // Replacing the rules re-seeds the fault stream: the same sequence again on the same simulator.
    await control.setFaults({ rules });
    const first: number[] = [];
    for (let i = 0; i < 24; i++) first.push(await categoriesStatus(sim.baseUrl));
    await control.setFaults({ rules });
    const second: number[] = [];
    for (let i = 0; i < 24; i++) second.push(await categoriesStatus(sim.baseUrl));
    assert.deepEqual(first, second);
  });

  test('generates the same references for the same seed', async () => {
    const refs = async (): Promise<string[]> => {
      const s = await startSimulator({ seed: 99 });
      try {
        const out: string[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await initSwap(s.baseUrl);
          out.push(((await res.body.json()) as { data: { payment_ref: string } }).data.payment_ref);
        }
        return out;
      } finally {
        await s.close();
      }
    };
    const a = await refs();
    assert.deepEqual(await refs(), a);
    assert.equal(new Set(a).size, 3);
  });
});
