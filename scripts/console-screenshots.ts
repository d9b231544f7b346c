/**
 * The console's screenshots in docs/img/console-*.png, taken from a real stack (Temporal dev
 * server, simulator, worker, gateway; test/helpers/stack.ts) with a few flows of each kind, one
 * payment link in needs_reconciliation and a webhook endpoint receiving the events, through
 * headless Chromium (playwright-core, test/helpers/browser.ts) signed in with the local sign-in.
 *
 *   npx tsx scripts/console-screenshots.ts [--out docs/img]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { KeyringSource, newKey } from '../src/auth/keyring';
import { NO_MERCHANT_EVENTS } from '../src/merchant-events/config';
import { startEventListener } from '../src/merchant-events/listener';
import { LocalSignIn } from '../src/starter/console/local-sign-in';
import type { ConsoleRole } from '../src/starter/console/roles';
import { launchBrowser } from '../test/helpers/browser';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../test/helpers/fixtures';
import { gatewayCaller, startGatewayStack, stopOwnTemporal, type GatewayHarness } from '../test/helpers/gateway';
import { eventually } from '../test/helpers/stack';

const backend = newKey({ id: 'shop-backend', role: 'backend', label: 'shop' });
const operator = newKey({ id: 'ops-key', role: 'operator', label: 'on call' });

/** A few flows of each kind: confirmed, awaiting, paid, one needing reconciliation. */
async function seed(h: GatewayHarness): Promise<{ paidLink: string; stop: () => Promise<void> }> {
  const as = (key: string) => gatewayCaller(h.gw.url, key);
  const secrets: string[] = [];
  const rx = await startEventListener({ secrets });
  const ep = await as(operator.key).api('POST', '/v1/webhook_endpoints', { url: rx.url, enabled_events: ['*'], description: 'order service' });
  if (ep.status !== 201) throw new Error(`endpoint: ${ep.text}`);
  secrets.push(ep.json.secret as string);
  for (const [i, amount] of [25, 120, 8].entries()) {
    const s = await as(backend.key).api('POST', '/v1/swaps', swapBody(uniqueRef(`order-${1001 + i}`), { user_ref: `customer-${42 + i}`, amount }));
    if (s.status !== 201) throw new Error(`swap: ${s.text}`);
    if (i === 0) await h.call('POST', `/v1/swaps/${s.json.swap_id}/pin`, { body: { pin: SIM_PIN }, headers: { authorization: `Bearer ${s.json.pin_token}` } });
  }
  let paidLink = '';
  for (const [i, wrongAmount] of [undefined, 1, undefined].entries()) {
    const l = await as(backend.key).api('POST', '/v1/payment-links', linkBody(uniqueRef(`invoice-${2001 + i}`), { user_ref: `customer-${7 + i}` }));
    if (l.status !== 201) throw new Error(`link: ${l.text}`);
    const linkId = l.json.link_id as string;
    if (i === 2) continue;
    const n = { event: 'collection.successful', data: { payment_ref: l.json.payment_ref, status: 'successful', notification_id: `n-${i}`, amount: wrongAmount ?? l.json.amount } };
    await h.stack.mpf.deliverNotification(linkId, n, JSON.stringify(n));
    if (i === 0) paidLink = linkId;
  }
  await eventually(async () => (await as(operator.key).api('GET', '/v1/admin/reconciliations')).json.items?.length > 0, 20_000, 'the queue');
  await eventually(async () => ((await as(backend.key).api('GET', `/v1/payment-links/${paidLink}`)).json.events ?? []).some((e: { deliveries?: Array<{ state: string }> }) => e.deliveries?.some((d) => d.state === 'delivered')), 30_000, 'a delivered event');
  return { paidLink, stop: () => rx.close() };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/img' } } });
  const out = path.resolve(values.out!);
  const local = new LocalSignIn('default');
  const h = await startGatewayStack({
    client: { dailyLimits: { swap_count_per_user_day: 20, swap_amount_per_user_day: { USD: '1000' }, link_count_per_deployment_day: 500 } },
    events: { ...NO_MERCHANT_EVENTS, schedule: { ...NO_MERCHANT_EVENTS.schedule, initial_interval_ms: 200, max_interval_ms: 1_000 } },
    webhookEndpointsTtlMs: 0,
    gateway: { keyring: new KeyringSource({ json: JSON.stringify([backend.entry, operator.entry]) }), console: { local } },
  });
  const browser = await launchBrowser();
  try {
    const { paidLink, stop } = await seed(h);
    const shoot = async (role: ConsoleRole, pages: Array<[string, string]>, viewport = { width: 1280, height: 860 }) => {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      await page.goto(`${h.gw.url}/console/local-sign-in?code=${local.issueCode(role)}`);
      for (const [name, p] of pages) {
        await page.goto(`${h.gw.url}${p}`);
        await page.screenshot({ path: path.join(out, `console-${name}.png`), fullPage: true });
        process.stdout.write(`wrote docs/img/console-${name}.png\n`);
      }
      await context.close();
    };
    const signIn = await browser.newContext({ viewport: { width: 1280, height: 500 } });
    const p = await signIn.newPage();
    await p.goto(`${h.gw.url}/console/sign-in`);
    await p.screenshot({ path: path.join(out, 'console-sign-in.png') });
    await signIn.close();
    await shoot('operator', [
      ['payments', '/console/payments?kind=payment_link'],
      ['payment', `/console/payments/${paidLink}`],
      ['reconciliations', '/console/reconciliations'],
      ['webhooks', '/console/webhooks'],
      ['api-keys', '/console/api-keys'],
      ['provider', '/console/provider'],
      ['limits', '/console/limits?user_ref=customer-42'],
    ]);
    await shoot('support', [['payments-phone', '/console/payments?kind=swap']], { width: 390, height: 800 });
    await stop();
  } finally {
    await browser.close();
    await h.stop();
    await stopOwnTemporal();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`console-screenshots: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
