/**
 * Deny by default on the way out, through the gateway on a real Temporal: a flow's webhook_url
 * reaches only hosts and addresses the deployment allows (checked at the API and again when the
 * worker connects), and a list's page_token is accepted only when this deployment made it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { parseAllowedHosts } from '../../src/config/webhook-egress';
import { NO_MERCHANT_EVENTS } from '../../src/merchant-events/config';
import { startEventListener, type RunningListener } from '../../src/merchant-events/listener';
import { generateSecret } from '../../src/merchant-events/signing';
import { PageTokens, visibilityQuery } from '../../src/starter/client/lists';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { eventually } from '../helpers/stack';

const SECRET = generateSecret();
/** The deployment's list: any public host, and the one loopback address the merchant's test listener is on. */
const ALLOWED = '*,127.0.0.2';

describe("a flow's webhook_url: only where the deployment allows", () => {
  let h: GatewayHarness;
  /** Stands for everything inside: it must never receive a byte. */
  let trap: RunningListener;
  /** The merchant's allowed endpoint. */
  let allowed: RunningListener;

  before(async () => {
    trap = await startEventListener({ secrets: [SECRET], host: '127.0.0.1' });
    allowed = await startEventListener({ secrets: [SECRET], host: '127.0.0.2' });
    h = await startGatewayStack({
      client: {
        webhookEgress: parseAllowedHosts(ALLOWED),
        // The API's resolver: `internal.shop.test` resolves inside; `localhost` answers a public
        // address at the API (as a name an attacker controls would) and loopback when the worker connects.
        resolveHost: async (name) => (name === 'internal.shop.test' ? ['10.0.0.5'] : name === 'localhost' ? ['93.184.216.34'] : (await lookup(name, { all: true })).map((a) => a.address)),
      },
      events: {
        ...NO_MERCHANT_EVENTS,
        secrets: [SECRET],
        egress: parseAllowedHosts(ALLOWED),
        schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200, max_interval_ms: 400, retry_for_ms: 1_500 },
      },
    });
  });
  after(async () => {
    await h?.stop();
    await trap?.close();
    await allowed?.close();
  });

  test('a webhook_url to a loopback, private, link-local, unspecified or IPv4-mapped address, by literal or by name, is a 400 naming webhook_url; nothing starts, nothing is dialled', async () => {
    const port = new URL(trap.url).port;
    const inside = [
      `http://127.0.0.1:${port}/hooks`,
      `http://[::1]:${port}/hooks`,
      `http://[::ffff:127.0.0.1]:${port}/hooks`,
      `http://0.0.0.0:${port}/hooks`,
      `http://2130706433:${port}/hooks`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/hooks',
      'http://192.168.1.10/hooks',
      'http://[fd00::1]/hooks',
      `http://internal.shop.test:${port}/hooks`,
    ];
    for (const url of inside) {
      const txn = uniqueRef('ssrf');
      const r = await h.api('POST', '/v1/swaps', swapBody(txn, { webhook_url: url }));
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.equal(r.json.field, 'webhook_url', url);
      assert.match(r.json.message, /^webhook_url: /, url);
      assert.ok(!r.text.includes('10.0.0.5'), 'the resolved address is not echoed');
      assert.equal((await h.api('GET', `/v1/swaps/swap-${txn}`)).status, 404, `${url}: nothing started`);
    }
    assert.equal(trap.deliveries.length, 0, 'the loopback listener received nothing');
  });

  test('an allowed host still receives the signed events', async () => {
    const created = await h.api('POST', '/v1/payment-links', linkBody(uniqueRef('ssrf-ok'), { webhook_url: `${allowed.url}hooks` }));
    assert.equal(created.status, 201, created.text);
    const linkId = created.json.link_id as string;
    const got = await eventually(async () => allowed.deliveries.find((d) => d.id.startsWith(`evt_${linkId}_`)), 20_000, 'payment_link.created delivered');
    assert.equal(got.event?.type, 'payment_link.created');
    assert.ok(got.verified, 'signed with the deployment secret');
  });

  test('a name that passed the API but resolves to loopback when the worker connects is never dialled; the view says refused_address and nothing more', async () => {
    const port = new URL(trap.url).port;
    const started = await h.api('POST', '/v1/swaps', swapBody(uniqueRef('rebind'), { webhook_url: `http://localhost:${port}/hooks` }));
    assert.equal(started.status, 201, started.text);
    const swapId = started.json.swap_id as string;
    const delivery = await eventually(async () => {
      const v = await h.api('GET', `/v1/swaps/${swapId}`);
      const d = v.json.events?.[0]?.deliveries?.[0];
      return d?.attempts >= 1 && d.last_error !== undefined && d;
    }, 20_000, 'a failed attempt in the view');
    assert.equal(delivery.last_error, 'refused_address');
    assert.equal(delivery.last_status, undefined);
    assert.equal(delivery.endpoint, `localhost:${port}`);
    assert.equal(trap.deliveries.length, 0, 'the loopback listener received nothing');
  });
});

describe('page_token on GET /v1/swaps', () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack();
  });
  after(async () => {
    await h?.stop();
  });

  test('a forged page token is a 400 naming page_token (not a 500); a token this gateway made pages on', async () => {
    const since = new Date(Date.now() - 1_000).toISOString();
    for (let i = 0; i < 3; i++) assert.equal((await h.api('POST', '/v1/swaps', swapBody(uniqueRef(`page-${i}`)))).status, 201);
    const q = `created_from=${encodeURIComponent(since)}&limit=1`;
    const first = await eventually(async () => {
      const r = await h.api('GET', `/v1/swaps?${q}`);
      return r.status === 200 && r.json.next_page_token && r.json;
    }, 15_000, 'a first page with a next page');
    const second = await h.api('GET', `/v1/swaps?${q}&page_token=${encodeURIComponent(first.next_page_token)}`);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.items.length, 1);
    assert.notEqual(second.json.items[0].flow_id, first.items[0].flow_id, 'the next page');

    const query = visibilityQuery(['swap'], h.stack.taskQueue, { created_from: since });
    const tag = createHash('sha256').update(query).digest('base64url').slice(0, 16);
    const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const [body, sig] = first.next_page_token.split('.') as [string, string];
    const inner = JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>;
    const forged = [
      // The former shape: its tag is a plain hash anyone can compute, and the rest went to Temporal.
      b64({ v: 1, q: tag, t: randomBytes(24).toString('base64') }),
      // The current shape with Temporal's token changed and the MAC kept, or a MAC made up.
      `${b64({ ...inner, t: randomBytes(24).toString('base64') })}.${sig}`,
      `${body}.${randomBytes(32).toString('base64url')}`,
      `${body}.${sig}.extra`,
      // Made with another deployment's payload keys.
      new PageTokens(`other:${randomBytes(32).toString('base64')}`).encode(query, randomBytes(24)),
    ];
    for (const token of forged) {
      const r = await h.api('GET', `/v1/swaps?${q}&page_token=${encodeURIComponent(token)}`);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.field, 'page_token');
    }
    // Authentic (made with this deployment's keys) but not a token Temporal takes: 400 as well.
    const refused = new PageTokens(h.stack.keys).encode(query, randomBytes(24));
    const r = await h.api('GET', `/v1/swaps?${q}&page_token=${encodeURIComponent(refused)}`);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.field, 'page_token');
  });
});
