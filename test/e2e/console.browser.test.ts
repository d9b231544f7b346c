/**
 * The merchant's console (/console/ on the gateway) on `mpf cluster up`, as its people use it: each
 * signs in at the topology's identity provider in real Chromium (Debian's, as the PIN-page and
 * Temporal Web tests) and sees and does what their role allows. Support reads a paid link with its
 * amount and its delivered event and has no control to act, and its session and its own token are
 * refused (403) when they try anyway; the operator resolves a needs_reconciliation link and the
 * audit names the person; an endpoint the operator adds in the console receives the next event of a
 * swap that started before it existed (a receiver on loopback: the cluster is started with
 * `--app-env MERCHANT_WEBHOOK_ALLOWED_HOSTS=127.0.0.1`, as production refuses loopback endpoints it
 * does not list); finance's CSV holds exactly the API's list with the same filters; and with every
 * worker stopped (SIGSTOP: `up` would start a killed one again) the payments list and a payment's
 * events still load. One cluster for the file (1 worker, 1 gateway); if it cannot start, every test
 * fails (never skips).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { verifyDelivery } from '../../src/merchant-events/signing';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { idpSecretFiles, type PersonId } from '../../tools/cluster/idp';
import { personLogin } from '../../tools/cluster/login';
import type { ClusterInfo } from '../../tools/cluster/state';
import { apiKeyFile } from '../../tools/cluster/topology';
import { launchBrowser } from '../helpers/browser';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, type GatewayCaller } from '../helpers/http';
import { cleanUpCluster, startClusterForTest, type MpfProcess } from '../helpers/processes';
import { eventually } from '../helpers/stack';

const UP_TIMEOUT_MS = 15 * 60_000;

let stateDir: string;
let up: MpfProcess;
let info: ClusterInfo;
let browser: Browser;
let control: SimulatorControl;
let backend: GatewayCaller;
let receiver: Receiver;
/** The paid link of the first test, read again with the workers stopped. */
let paidLinkId = '';

const secretOf = (file: string) => fs.readFileSync(path.join(info.secretsDir, file), 'utf8').trim();
const gatewayUrl = () => info.gateways[0]!.url;

interface Received {
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

interface Receiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** The merchant's endpoint: an HTTP server on loopback that keeps every POST and answers 200. */
async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const typeOf = (r: Received): { type?: string; data?: Record<string, unknown> } => {
  try {
    return JSON.parse(r.body) as { type?: string; data?: Record<string, unknown> };
  } catch {
    return {};
  }
};

/** The person signs in as a person does: the console's sign-in page, then the IdP's login form. */
async function signIn(who: PersonId): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${gatewayUrl()}/console/`);
  await page.waitForURL((u) => u.pathname === '/console/sign-in');
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.origin === info.idp!.issuer);
  await page.fill('input[name=login]', who);
  await page.fill('input[name=password]', secretOf(idpSecretFiles.password(who)));
  await page.click('button[type=submit]');
  await page.waitForURL((u) => u.href.startsWith(`${gatewayUrl()}/console/payments`), { timeout: 30_000 });
  return { ctx, page };
}

const textOf = (page: Page) => page.innerText('body');

/** The person's own access token from the IdP (as `mpf cluster login` gets it). */
async function tokenOf(who: PersonId): Promise<string> {
  return (await personLogin({ issuer: info.idp!.issuer, user: who, password: secretOf(idpSecretFiles.password(who)) })).accessToken;
}

/** A payment link created by the backend (its own endpoint: the receiver), then paid by the simulator's customer. */
async function paidLink(ref: string): Promise<{ linkId: string; paymentRef: string }> {
  const created = await backend.api('POST', '/v1/payment-links', linkBody(ref, { amount: 2500, webhook_url: receiver.url }));
  assert.equal(created.status, 201, created.text);
  const linkId = created.json.link_id as string;
  await control.completeLink(created.json.payment_ref as string);
  await eventually(async () => {
    const v = await backend.api('GET', `/v1/payment-links/${linkId}`);
    const paid = ((v.json.events ?? []) as Array<{ type: string; deliveries?: Array<{ state: string }> }>).find((e) => e.type === 'payment_link.paid');
    return v.json.state === 'paid' && paid?.deliveries?.some((d) => d.state === 'delivered');
  }, 90_000, `${linkId} paid and its payment_link.paid delivered`);
  return { linkId, paymentRef: created.json.payment_ref as string };
}

/** Every page of a list of the API, with the person's token. */
async function listAll(token: string, listPath: string, query: Record<string, string>): Promise<Array<Record<string, unknown>>> {
  const gw = gatewayCaller(gatewayUrl());
  const items: Array<Record<string, unknown>> = [];
  let pageToken = '';
  do {
    const q = new URLSearchParams({ ...query, limit: '100', ...(pageToken ? { page_token: pageToken } : {}) });
    const a = await gw.call('GET', `${listPath}?${q}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(a.status, 200, a.text);
    items.push(...(a.json.items as Array<Record<string, unknown>>));
    pageToken = typeof a.json.next_page_token === 'string' ? a.json.next_page_token : '';
  } while (pageToken);
  return items;
}

/** The process and its descendants (the worker's, so that nothing of it runs). */
function withDescendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    out.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return out;
}

const signalAll = (pids: number[], sig: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  }
};

describe("the merchant's console on mpf cluster up: each person signs in at the identity provider and sees and does what their role allows", () => {
  before(
    async () => {
      receiver = await startReceiver();
      const cluster = startClusterForTest({ prefix: 'console', workers: 1, gateways: 1, appEnv: { MERCHANT_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
      control = createControlClient(info.simulator!.url);
      backend = gatewayCaller(gatewayUrl(), secretOf(apiKeyFile('backend')));
      browser = await launchBrowser();
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(async () => {
    await browser?.close();
    await cleanUpCluster(up, stateDir);
    await receiver?.close();
  });

  test('support signs in at the IdP, sees a paid link with its amount and its delivered event, has no resolve or pause control, and is refused by the API (403) when it tries', async () => {
    const ref = uniqueRef('console-paid');
    const { linkId } = await paidLink(ref);
    paidLinkId = linkId;
    const { ctx, page } = await signIn('support');
    try {
      assert.match(await textOf(page), /Sam Support · support/);
      const row = page.locator('tr', { hasText: ref });
      await eventually(async () => {
        await page.goto(`${gatewayUrl()}/console/payments?kind=payment_link&txn_ref=${ref}`);
        return (await row.count()) === 1 && /paid/.test(await row.innerText());
      }, 30_000, `${ref} paid in the console's list`);
      assert.match(await row.innerText(), /2,500\.00 NGN/, 'the amount in the list');
      await row.getByRole('link', { name: ref }).click();
      await page.waitForURL((u) => u.pathname === `/console/payments/${linkId}`);
      const text = await textOf(page);
      assert.match(text, /2,500\.00 NGN/, 'the amount in its currency');
      const event = page.locator('section.event', { hasText: 'payment_link.paid' });
      assert.equal(await event.count(), 1, text);
      const delivery = event.locator('tbody tr', { hasText: '127.0.0.1' });
      assert.match(await delivery.innerText(), /delivered[\s\S]*HTTP 200/, 'its delivery and the answer');
      // No control to act: no resolve form, no redeliver button, no pause.
      assert.equal(await page.getByRole('button', { name: /Redeliver|Resolve/ }).count(), 0);
      await page.goto(`${gatewayUrl()}/console/provider`);
      assert.match(await textOf(page), /Provider guard/);
      assert.equal(await page.getByRole('button', { name: /Pause|Resume/ }).count(), 0, 'no pause control');
      await page.goto(`${gatewayUrl()}/console/reconciliations`);
      assert.equal(await page.getByRole('button', { name: /Resolve/ }).count(), 0, 'no resolve control');
      assert.equal(await page.locator('nav a', { hasText: 'Webhooks' }).count(), 0, 'no webhooks page in the navigation');

      // The console's forms posted with support's own session and CSRF token: the API refuses them.
      const csrf = await page.locator('input[name=_csrf]').first().getAttribute('value');
      assert.ok(csrf, 'the page carries a CSRF token');
      const pause = await ctx.request.post(`${gatewayUrl()}/console/provider/pause`, { form: { _csrf: csrf, reason: 'support tries' } });
      assert.match(await pause.text(), /The API answered 403/);
      const resolve = await ctx.request.post(`${gatewayUrl()}/console/reconciliations/${linkId}/resolve`, {
        form: { _csrf: csrf, outcome: 'failed', provider_reference: 'X', note: 'support tries', back: '/console/reconciliations' },
      });
      assert.match(await resolve.text(), /The API answered 403/);
      // And the API itself, with support's own access token.
      const token = await tokenOf('support');
      const gw = gatewayCaller(gatewayUrl());
      const asSupport = { headers: { authorization: `Bearer ${token}` } };
      const apiPause = await gw.call('POST', '/v1/admin/provider/pause', { ...asSupport, body: { reason: 'support tries' } });
      assert.equal(apiPause.status, 403, apiPause.text);
      const apiResolve = await gw.call('POST', `/v1/admin/flows/${linkId}/resolve`, { ...asSupport, body: { outcome: 'failed', provider_reference: 'X', note: 'support tries' } });
      assert.equal(apiResolve.status, 403, apiResolve.text);
      const read = await gw.call('GET', `/v1/payment-links/${linkId}`, asSupport);
      assert.equal(read.status, 200, 'support reads with the same token');
      assert.equal(read.json.state, 'paid', 'nothing changed');
      const guard = await gw.call('GET', '/v1/admin/provider', asSupport);
      assert.equal(guard.status, 200, guard.text);
      assert.ok(!guard.json.paused, 'the provider guard is not paused');
    } finally {
      await ctx.close();
    }
  });

  test('an operator resolves a needs_reconciliation link in the console and the audit names the person', async () => {
    const ref = uniqueRef('console-recon');
    const created = await backend.api('POST', '/v1/payment-links', linkBody(ref, { amount: 4000 }));
    assert.equal(created.status, 201, created.text);
    const linkId = created.json.link_id as string;
    const paymentRef = created.json.payment_ref as string;
    // The provider failed the link, then notified it as paid: money may have moved, nothing settled it.
    await control.failLink(paymentRef);
    await control.notify(paymentRef, 'successful');
    await eventually(async () => (await backend.api('GET', `/v1/payment-links/${linkId}`)).json.state === 'needs_reconciliation', 60_000, `${linkId} in needs_reconciliation`);

    const { ctx, page } = await signIn('operator');
    try {
      const row = page.locator('tr', { hasText: ref });
      await eventually(async () => {
        await page.goto(`${gatewayUrl()}/console/reconciliations`);
        return (await row.count()) === 1;
      }, 30_000, `${ref} in the reconciliation queue`);
      await row.locator('summary', { hasText: 'Resolve' }).click();
      await row.locator('select[name=outcome]').selectOption('paid');
      await row.locator('input[name=provider_reference]').fill(paymentRef);
      await row.locator('textarea[name=note]').fill('the provider statement shows it paid');
      await row.getByRole('button', { name: /Resolve as/ }).click();
      await page.waitForURL((u) => u.pathname === '/console/reconciliations');
      assert.match(await textOf(page), new RegExp(`Resolved ${linkId} as paid; the audit names you`));

      const view = await backend.api('GET', `/v1/payment-links/${linkId}`);
      assert.equal(view.json.state, 'reconciled');
      const audit = view.json.reconciliation as { operator: string; outcome: string; provider_reference: string; note: string };
      assert.equal(audit.outcome, 'paid');
      assert.equal(audit.provider_reference, paymentRef);
      assert.equal(audit.operator, 'person operator', 'the audit record names the signed-in person (subject operator), not a key');
      await page.goto(`${gatewayUrl()}/console/payments/${linkId}`);
      assert.match(await textOf(page), /Resolved\s+paid by person operator/);
    } finally {
      await ctx.close();
    }
  });

  test('an endpoint the operator adds in the console receives the next event of a swap that started before it existed', { timeout: 240_000 }, async () => {
    const ref = uniqueRef('console-hook');
    const started = await backend.api('POST', '/v1/swaps', swapBody(ref));
    assert.equal(started.status, 201, started.text);
    const swapId = started.json.swap_id as string;
    const pinToken = started.json.pin_token as string;
    const endpointUrl = `${receiver.url}/${ref}`;

    const { ctx, page } = await signIn('operator');
    let secret: string;
    try {
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.waitForURL((u) => u.pathname === '/console/webhooks');
      await page.fill('input[name=url]', endpointUrl);
      await page.fill('input[name=enabled_events]', 'swap.confirmed');
      await page.fill('input[name=description]', 'added in the console');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.waitForURL((u) => u.pathname === '/console/webhooks');
      await page.locator('.secret, .flash.bad').first().waitFor();
      const refused = page.locator('.flash.bad');
      assert.equal(await refused.count(), 0, `the endpoint was refused: ${await refused.allInnerTexts()}`);
      secret = (await page.locator('.secret pre').innerText()).trim();
      assert.match(secret, /^whsec_/, `the signing secret shown once: ${(await textOf(page)).slice(0, 300)}`);
      assert.match(await page.locator('tr', { hasText: endpointUrl }).innerText(), /swap\.confirmed[\s\S]*enabled/);
      await page.goto(`${gatewayUrl()}/console/webhooks`);
      assert.equal(await page.locator('.secret').count(), 0, 'the secret is not shown again');
    } finally {
      await ctx.close();
    }

    // The swap, running since before the endpoint existed, is confirmed: its next event goes there.
    // Past the workers' 2-second reading of the endpoints (docs/integrating.md): an event in a new
    // endpoint's first 2 seconds may not be sent there.
    await new Promise((r) => setTimeout(r, 2_500));
    const pin = await gatewayCaller(gatewayUrl()).call('POST', `/v1/swaps/${swapId}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${pinToken}` } });
    assert.equal(pin.status, 200, pin.text);
    const mine = () => receiver.received.filter((r) => typeOf(r).type === 'swap.confirmed' && (typeOf(r).data as { swap_id?: string } | undefined)?.swap_id === swapId);
    await eventually(async () => mine().length > 0, 90_000, `swap.confirmed of ${swapId} at the new endpoint`);
    const delivery = mine()[0]!;
    const event = verifyDelivery([secret], delivery.body, delivery.headers) as { type: string };
    assert.equal(event.type, 'swap.confirmed', 'signed with the secret the console showed');
  });

  test("finance exports a CSV whose rows equal the API's list with the same filters", { timeout: 240_000 }, async () => {
    const { ctx, page } = await signIn('finance');
    try {
      const token = await tokenOf('finance');
      const filters = { kind: 'payment_link', state: 'paid' };
      await page.goto(`${gatewayUrl()}/console/payments?${new URLSearchParams(filters)}`);
      assert.equal(await page.locator('select[name=state]').inputValue(), 'paid');
      // The list is read before and after the export; a list that moved in between is read again.
      const { csv, items } = await eventually(async () => {
        const before_ = await listAll(token, '/v1/payment-links', { state: 'paid' });
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
        const file = await download.path();
        const text = fs.readFileSync(file!, 'utf8');
        const after_ = await listAll(token, '/v1/payment-links', { state: 'paid' });
        return JSON.stringify(before_) === JSON.stringify(after_) ? { csv: text, items: after_ } : undefined;
      }, 60_000, 'a CSV export while the list stood still');
      assert.ok(items.length >= 1, 'the paid link of the first test is listed');
      assert.ok(!csv.includes('"'), 'no cell needed quoting (this check reads the CSV as plain comma-separated lines)');
      const [header, ...rows] = csv.replace(/\r\n$/, '').split('\r\n');
      const columns = header!.split(',');
      assert.ok(['flow_id', 'amount', 'currency', 'state', 'created_at'].every((c) => columns.includes(c)), header);
      const expected = items.map((item) => columns.map((c) => (item[c] === undefined || item[c] === null ? '' : String(item[c]))).join(','));
      assert.deepEqual(rows, expected);
    } finally {
      await ctx.close();
    }
  });

  test("with every worker stopped, the payments list and a payment's events still load", { timeout: 240_000 }, async (t) => {
    assert.ok(paidLinkId, 'the first test left a paid link');
    const { ctx, page } = await signIn('support');
    const stopped = info.workers.flatMap((w) => withDescendants(w.pid));
    signalAll(stopped, 'SIGSTOP');
    t.diagnostic(`worker processes stopped (SIGSTOP): ${stopped.join(', ')}`);
    try {
      await page.goto(`${gatewayUrl()}/console/payments?kind=payment_link`);
      const row = page.locator('tr', { hasText: paidLinkId.replace(/^paylink-/, '') });
      assert.equal(await row.count(), 1, (await textOf(page)).slice(0, 500));
      assert.match(await row.innerText(), /paid/);
      // The link is paid and its flow still runs (it takes late notifications for a while): its view is a query no worker answers.
      const res = await page.goto(`${gatewayUrl()}/console/payments/${paidLinkId}`);
      assert.equal(res?.status(), 200, (await textOf(page)).slice(0, 500));
      const text = await textOf(page);
      assert.match(text, /No worker answers now/);
      assert.match(text, /2,500\.00 NGN/);
      assert.match(text, /\bpaid\b/);
      assert.equal(await page.locator('section.event', { hasText: 'payment_link.paid' }).count(), 1, text);
      assert.ok(info.workers.every((w) => fs.readFileSync(`/proc/${w.pid}/stat`, 'utf8').split(') ')[1]!.startsWith('T')), 'the workers were stopped all along');
    } finally {
      signalAll(stopped, 'SIGCONT');
      await ctx.close();
    }
  });
});
