/**
 * Where a flow's own webhook_url may point: the allow-list, the address classes, and the worker's
 * connect-time check (a name that resolves inside is never dialled). No Temporal server: the
 * guarded agent against a listener on loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { request } from 'undici';
import { loadEnv } from '../../src/config/env';
import { addressAllowed, addressListed, hostRefusal, parseAllowedHosts, webhookEgressFromEnv } from '../../src/config/webhook-egress';
import { isLoopbackEndpoint } from '../../src/merchant-events/env';
import { guardedAgent, type LookupFunction, REFUSED_ADDRESS_CODE } from '../../src/activities/egress-agent';
import { createEventActivities } from '../../src/activities/events';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import type { DeliverEventInput } from '../../src/activities/event-types';
import type { FlowEvent } from '../../src/workflows/event-types';

const SECRET = generateSecret();

/** A resolver that answers every name with one address (a name the attacker controls, rebound). */
const answering = (address: string): LookupFunction => (_host, _opts, cb) => cb(null, [{ address, family: address.includes(':') ? 6 : 4 }]);

describe('the webhook host allow-list', () => {
  test('production without MERCHANT_WEBHOOK_ALLOWED_HOSTS accepts no per-flow endpoint; elsewhere any public host and loopback', () => {
    const prod = webhookEgressFromEnv({ NODE_ENV: 'production' });
    assert.equal(hostRefusal(prod, 'https://hooks.shop.example/x'), 'disabled');
    const dev = webhookEgressFromEnv({});
    assert.equal(hostRefusal(dev, 'https://hooks.shop.example/x'), undefined);
    assert.equal(hostRefusal(dev, 'http://127.0.0.1:9/x'), undefined, 'the demo and tests listen on loopback');
    for (const inside of ['http://10.0.0.1/', 'http://192.168.1.1/', 'http://169.254.169.254/latest/meta-data/', 'http://0.0.0.0:9/', 'http://[::ffff:127.0.0.1]:9/', 'http://[fd00::1]/', 'http://100.64.0.1/']) {
      assert.equal(hostRefusal(dev, inside), 'address', inside);
    }
  });

  test('exact hosts and *.suffix are allowed, others are not; addresses inside only when an address entry covers them', () => {
    const p = parseAllowedHosts('hooks.shop.example, *.merchant.example, 10.1.0.0/16');
    assert.equal(hostRefusal(p, 'https://hooks.shop.example/a'), undefined);
    assert.equal(hostRefusal(p, 'https://HOOKS.shop.example./a'), undefined, 'case and the trailing dot do not matter');
    assert.equal(hostRefusal(p, 'https://a.b.merchant.example/'), undefined);
    assert.equal(hostRefusal(p, 'https://merchant.example/'), 'not_listed', '*.suffix is below the suffix only');
    assert.equal(hostRefusal(p, 'https://evilmerchant.example/'), 'not_listed');
    assert.equal(hostRefusal(p, 'https://other.example/'), 'not_listed');
    assert.equal(hostRefusal(p, 'http://10.1.2.3/'), undefined);
    assert.equal(hostRefusal(p, 'http://10.2.0.1/'), 'address');
    assert.equal(hostRefusal(p, 'http://203.0.113.9/'), 'address', 'documentation range: reserved');
    assert.equal(hostRefusal(p, 'http://8.8.8.8/'), 'not_listed', 'a public literal needs * or an address entry');
    assert.equal(hostRefusal(p, 'http://2130706433/'), 'address', 'a decimal loopback literal is normalised by the URL parser');
    assert.ok(addressAllowed(p, '10.1.9.9'));
    assert.ok(!addressAllowed(p, '127.0.0.1'));
    assert.ok(!addressAllowed(p, '::ffff:10.1.9.9'), 'IPv4-mapped is its own range: covered only by an IPv6 entry');
    assert.ok(addressAllowed(p, '8.8.8.8'));
  });

  test('a loopback endpoint counts as listed only when an address entry covers the literal the URL names, and localhost. is loopback too', () => {
    const p = parseAllowedHosts('*, 127.0.0.1');
    assert.ok(addressListed(p, 'http://127.0.0.1:8080/hooks'));
    assert.ok(!addressListed(p, 'http://127.0.0.2:8080/hooks'), 'another loopback address is not listed');
    assert.ok(!addressListed(p, 'http://localhost:8080/hooks'), 'a name is never listed as an address');
    assert.ok(!addressListed(parseAllowedHosts('*'), 'http://127.0.0.1:8080/hooks'));
    assert.ok(!addressListed(webhookEgressFromEnv({ NODE_ENV: 'production' }), 'http://127.0.0.1:8080/hooks'), 'production without a list lists nothing');
    for (const url of ['http://localhost:9/', 'http://LOCALHOST.:9/', 'http://hooks.localhost:9/', 'http://127.0.0.1:9/', 'http://[::1]:9/']) assert.ok(isLoopbackEndpoint(url), url);
    assert.ok(!isLoopbackEndpoint('http://localhost.shop.example/'), 'a name that only starts with localhost');
  });

  test('a malformed entry stops start-up naming the variable and the entry', () => {
    assert.throws(
      () => loadEnv({ PAYLOAD_ENCRYPTION_KEYS: 'k1:x', MERCHANT_WEBHOOK_ALLOWED_HOSTS: 'hooks.shop.example, 10.0.0.0/99' }),
      /MERCHANT_WEBHOOK_ALLOWED_HOSTS: entry "10\.0\.0\.0\/99" is not an address range/,
    );
    assert.throws(() => loadEnv({ PAYLOAD_ENCRYPTION_KEYS: 'k1:x', MERCHANT_WEBHOOK_ALLOWED_HOSTS: 'http://x/' }), /MERCHANT_WEBHOOK_ALLOWED_HOSTS: entry "http:\/\/x\/"/);
  });
});

describe("the worker's connect-time check", () => {
  let listener: RunningListener;
  before(async () => {
    listener = await startEventListener({ secrets: [SECRET] });
  });
  after(async () => {
    await listener?.close();
  });

  test('a name that resolves to loopback, link-local or an IPv4-mapped address when the worker connects is never dialled', async () => {
    const port = new URL(listener.url).port;
    const policy = parseAllowedHosts('*');
    for (const inside of ['127.0.0.1', '169.254.169.254', '::ffff:127.0.0.1', '0.0.0.0', '10.0.0.5']) {
      const agent = guardedAgent(policy, { connectTimeoutMs: 2_000, lookup: answering(inside) });
      await assert.rejects(
        request(`http://hooks.rebound.example:${port}/`, { method: 'POST', body: '{}', dispatcher: agent }),
        (err: Error & { code?: string; cause?: { code?: string } }) => (err.code ?? err.cause?.code) === REFUSED_ADDRESS_CODE,
        inside,
      );
      await agent.close();
    }
    assert.equal(listener.deliveries.length, 0, 'the loopback listener received nothing');
  });

  test('the delivery activity refuses it with the class refused_address, and an allowed address still gets the signed event', async () => {
    // The class the delivery workflow shows travels in the failure's details (its message says the same).
    const classOf = (err: Error): unknown => (err as { details?: Array<{ error?: unknown }> }).details?.[0]?.error;
    const port = new URL(listener.url).port;
    const event: FlowEvent = { id: 'evt_swap-x_1', type: 'swap.confirmed', timestamp: new Date().toISOString(), data: {} };
    // The activity context only (its logger); the HTTP is real.
    const env = new MockActivityEnvironment();
    const run = (acts: ReturnType<typeof createEventActivities>, input: DeliverEventInput) => env.run(acts.deliverEvent, input);
    const strict = createEventActivities({ ...NO_MERCHANT_EVENTS, secrets: [SECRET], egress: parseAllowedHosts('*') }, { lookup: answering('127.0.0.1') });
    await assert.rejects(run(strict, { event, url: `http://hooks.rebound.example:${port}/`, attempt: 1 }), (err: Error) => err.message === 'refused_address' && classOf(err) === 'refused_address');
    await assert.rejects(run(strict, { event, url: `http://[::ffff:127.0.0.1]:${port}/`, attempt: 1 }), (err: Error) => err.message === 'refused_address' && classOf(err) === 'refused_address');
    await strict.close();
    assert.equal(listener.deliveries.length, 0);

    const allowed = createEventActivities({ ...NO_MERCHANT_EVENTS, secrets: [SECRET], egress: parseAllowedHosts('hooks.shop.example,127.0.0.1') }, { lookup: answering('127.0.0.1') });
    const res = await run(allowed, { event, url: `http://hooks.shop.example:${port}/`, attempt: 1 });
    assert.equal((res as { status: number }).status, 200);
    // The connection went to the address the lookup answered; the request named the host.
    assert.equal(listener.deliveries.length, 1);
    assert.ok(listener.deliveries[0]!.verified, 'signed');
    // A closed port: a coarse class, not the raw error (which would name the address and the errno).
    await assert.rejects(run(allowed, { event, url: 'http://hooks.shop.example:1/', attempt: 1 }), (err: Error) => err.message === 'connection_failed' && classOf(err) === 'connection_failed');
    await allowed.close();
  });
});
