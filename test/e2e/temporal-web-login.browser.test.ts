/**
 * Temporal Web behind single sign-on, on `mpf cluster up` with every call authorised
 * (its default): nobody sees a flow before signing in at the identity provider; the viewer
 * signs in, sees the swaps with their state and their payloads decoded (by the codec endpoint that
 * authorises the person's own token), and is refused (the server's message shown) when cancelling
 * or terminating one, which keeps running; the operator cancels a swap and its history names the
 * operator; a session ends when the person's token
 * expires (30 s here) and Temporal Web asks them to sign in again. Real Chromium (Debian's, as the
 * PIN-page test), real ui-server, IdP and Temporal server. If the cluster cannot start, every test
 * fails (never skips).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Agent, request } from 'undici';
import { idpSecretFiles, type PersonId } from '../../tools/cluster/idp';
import { personLogin } from '../../tools/cluster/login';
import type { ClusterInfo } from '../../tools/cluster/state';
import { clientTls } from '../../tools/cluster/tls';
import { apiKeyFile } from '../../tools/cluster/topology';
import { CHROMIUM_ARGS } from '../helpers/browser';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller } from '../helpers/http';
import { cleanUpCluster, startClusterForTest, type MpfProcess } from '../helpers/processes';
import { eventually } from '../helpers/stack';

const UP_TIMEOUT_MS = 15 * 60_000;
const TOKEN_TTL_S = 30;

let stateDir: string;
let up: MpfProcess;
let info: ClusterInfo;
let browser: Browser;

/**
 * Debian's Chromium as test/helpers/browser.ts launches it, told to accept exactly one more
 * certificate: the codec endpoint's, of the cluster's private CA (by its public key's SHA-256), as
 * an operator's browser that trusts that CA would. Every other certificate is checked as usual.
 */
async function launchTrustingCodec(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) throw new Error(`Chromium not found at ${executablePath}: run \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`);
  const cert = fs.readFileSync(path.join(info.tlsDir, 'codec', 'cert.pem'));
  const spki = createHash('sha256').update(createPublicKey(cert).export({ type: 'spki', format: 'der' })).digest('base64');
  return chromium.launch({ executablePath, args: [...CHROMIUM_ARGS, `--ignore-certificate-errors-spki-list=${spki}`] });
}

const secretOf = (file: string) => fs.readFileSync(path.join(info.secretsDir, file), 'utf8').trim();

async function startSwap(): Promise<string> {
  const started = await gatewayCaller(info.gateways[0]!.url, secretOf(apiKeyFile('backend'))).api('POST', '/v1/swaps', swapBody(uniqueRef('web-login')));
  assert.equal(started.status, 201, started.text);
  return started.json.swap_id as string;
}

/** The person signs in as a person does: Temporal Web's sign-in page, then the IdP's login form. */
async function signIn(who: PersonId): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${info.ui!.url}/namespaces/default/workflows`);
  await page.getByRole('button', { name: 'Continue to SSO' }).click();
  await page.waitForURL((u) => u.origin === info.idp!.issuer);
  await page.fill('input[name=login]', who);
  await page.fill('input[name=password]', secretOf(idpSecretFiles.password(who)));
  await page.click('button[type=submit]');
  await page.waitForURL((u) => u.origin === info.ui!.url && u.pathname.startsWith('/namespaces/default/workflows'), { timeout: 30_000 });
  return { ctx, page };
}

const bodyText = (page: Page) => page.innerText('body');

/** The workflow list shows `workflowId` (visibility may lag the start by a moment: the list is loaded again). */
async function seeInList(page: Page, workflowId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await page.goto(`${info.ui!.url}/namespaces/default/workflows`);
    try {
      await page.waitForFunction((id) => document.body.innerText.includes(id), workflowId, { timeout: 10_000 });
      return;
    } catch (e) {
      if (attempt === 3) throw new Error(`${workflowId} not in Temporal Web's list: ${(await bodyText(page)).slice(0, 400)}`, { cause: e });
    }
  }
}

/** A swap's state as the server has it (the operator's token; the certificate for transport). */
async function describe_(workflowId: string) {
  const token = (await personLogin({ issuer: info.idp!.issuer, user: 'operator', password: secretOf(idpSecretFiles.password('operator')) })).accessToken;
  const c = await Connection.connect({ address: info.temporal!.address, tls: clientTls(path.join(info.tlsDir, 'operator')), apiKey: token });
  try {
    const d = await c.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId } });
    const h = await c.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId } });
    return { status: d.workflowExecutionInfo?.status, events: h.history?.events ?? [] };
  } finally {
    await c.close();
  }
}

/** The flow's page once its history holds a completed activity (a result for the codec to decode). */
async function openWithResult(page: Page, workflowId: string): Promise<void> {
  await eventually(async () => (await describe_(workflowId)).events.some((e) => e.activityTaskCompletedEventAttributes), 30_000, `an activity result in ${workflowId}`);
  for (let attempt = 1; ; attempt++) {
    await page.goto(`${info.ui!.url}/namespaces/default/workflows/${workflowId}`);
    try {
      await page.waitForFunction(() => /"payment_ref":\s*"SIMSWP-/.test(document.body.innerText), undefined, { timeout: 15_000 });
      return;
    } catch (e) {
      if (attempt === 2) throw new Error(`no decoded activity result on ${workflowId}'s page`, { cause: e });
    }
  }
}

/** Opens a modal action of the flow's page and confirms it; returns the page's text after. */
async function act(page: Page, workflowId: string, action: 'cancel' | 'terminate'): Promise<string> {
  await page.goto(`${info.ui!.url}/namespaces/default/workflows/${workflowId}`);
  if (action === 'cancel') {
    await page.getByRole('button', { name: 'Request Cancellation' }).first().click();
    await page.getByRole('button', { name: 'Confirm' }).filter({ visible: true }).first().click();
  } else {
    await page.getByRole('button', { name: 'More Actions' }).first().click();
    await page.getByRole('menuitem', { name: 'Terminate' }).filter({ visible: true }).first().click();
    await page.getByRole('button', { name: 'Terminate' }).filter({ visible: true }).last().click();
  }
  await page.waitForTimeout(2_000);
  return bodyText(page);
}

describe('Temporal Web behind single sign-on at the identity provider, every action by the signed-in person', () => {
  before(
    async () => {
      const cluster = startClusterForTest({ prefix: 'web-login', workers: 1, gateways: 1, env: { MPF_CLUSTER_TOKEN_TTL_SECONDS: String(TOKEN_TTL_S) }, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
      browser = await launchTrustingCodec();
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(async () => {
    await browser?.close();
    await cleanUpCluster(up, stateDir);
  });

  test('before signing in, Temporal Web shows only its sign-in page, and its API answers 401 without a token', async () => {
    const swapId = await startSwap();
    const ctx = await browser.newContext();
    try {
      const page = await ctx.newPage();
      await page.goto(`${info.ui!.url}/namespaces/default/workflows`);
      await page.waitForURL(/\/login/);
      const text = await bodyText(page);
      assert.match(text, /Continue to SSO/);
      assert.ok(!text.includes(swapId), 'no flow is shown before signing in');
      const api = await ctx.request.get(`${info.ui!.url}/api/v1/namespaces/default/workflows`);
      assert.equal(api.status(), 401, await api.text());
    } finally {
      await ctx.close();
    }
  });

  test('the viewer signs in at the IdP, sees the swaps with their state and decoded payloads, and is refused cancelling or terminating one, which keeps running', async () => {
    const swapId = await startSwap();
    const { ctx, page } = await signIn('viewer');
    try {
      await seeInList(page, swapId);
      const row = page.locator('tr', { hasText: swapId }).filter({ hasNotText: `events-${swapId}` }); // not its events-<id> delivery workflow
      assert.match(await row.innerText(), /Running/);
      // The flow's history, its payloads decoded through the codec endpoint with the viewer's token.
      await openWithResult(page, swapId);
      const cancelled = await act(page, swapId, 'cancel');
      assert.match(cancelled, /RequestCancelWorkflowExecution refused to viewer \(namespace "default": read\)/);
      const terminated = await act(page, swapId, 'terminate');
      assert.match(terminated, /TerminateWorkflowExecution refused to viewer \(namespace "default": read\)/);
      const d = await describe_(swapId);
      assert.equal(d.status, 1, 'the swap is still running');
      assert.ok(!d.events.some((e) => e.workflowExecutionCancelRequestedEventAttributes || e.workflowExecutionTerminatedEventAttributes), 'no cancel or terminate reached the history');
    } finally {
      await ctx.close();
    }
  });

  test("the operator signs in and cancels a swap in Temporal Web; the flow's history names the operator", async () => {
    const swapId = await startSwap();
    const { ctx, page } = await signIn('operator');
    try {
      // The operator's payloads are decoded too, through the same token-authorised codec endpoint.
      await openWithResult(page, swapId);
      const text = await act(page, swapId, 'cancel');
      assert.doesNotMatch(text, /refused/);
      const identities = await eventually(async () => {
        const d = await describe_(swapId);
        const ids = d.events.flatMap((e) => (e.workflowExecutionCancelRequestedEventAttributes ? [e.workflowExecutionCancelRequestedEventAttributes.identity ?? ''] : []));
        return ids.length ? ids : undefined;
      }, 30_000, 'the cancel request in the history');
      assert.equal(identities.length, 1);
      assert.match(identities[0]!, /^operator( \(.*\))?$/, 'the cancel request is recorded under the operator');
      await page.goto(`${info.ui!.url}/namespaces/default/workflows/${swapId}`);
      await eventually(async () => /Workflow Execution Cancel Requested/i.test(await bodyText(page)), 30_000, 'the cancel request shown in Temporal Web');
    } finally {
      await ctx.close();
    }
  });

  test("Temporal Web's codec endpoint decoded for the viewer and the operator by their own tokens, and refuses a call without one", async () => {
    assert.ok(info.codec, 'cluster.json names the codec endpoint of Temporal Web');
    const log = fs.readFileSync(path.join(info.logDir, 'codec.log'), 'utf8');
    for (const who of ['viewer', 'operator']) assert.match(log, new RegExp(`"codecPerson":"${who}"`), `the codec endpoint decoded for ${who}`);
    assert.doesNotMatch(log, /eyJ[\w-]{10,}\./, 'no token in the codec log');
    assert.match(info.codec.url, /^https:\/\/127\.0\.0\.1:\d+\/codec$/, 'https: Temporal Web sends a token to no other');
    const dispatcher = new Agent({ connect: { ca: fs.readFileSync(path.join(info.tlsDir, 'codec', 'ca.pem')) } });
    try {
      const res = await request(`${info.codec.url}/decode`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default' }, body: '{"payloads":[]}', dispatcher });
      assert.equal(res.statusCode, 401, await res.body.text());
    } finally {
      await dispatcher.close();
    }
  });

  test(`a session ends with the person's token (${TOKEN_TTL_S} s here): Temporal Web then asks them to sign in again`, { timeout: 3 * 60_000 }, async () => {
    const swapId = await startSwap();
    const { ctx, page } = await signIn('viewer');
    try {
      await seeInList(page, swapId);
      await page.waitForTimeout((TOKEN_TTL_S + 5) * 1000);
      await page.goto(`${info.ui!.url}/namespaces/default/workflows`);
      await eventually(async () => /\/login/.test(page.url()) || /Continue to SSO/.test(await bodyText(page)), 30_000, 'the sign-in page again');
      assert.ok(!(await bodyText(page)).includes(swapId), 'no flow is shown once the session has ended');
    } finally {
      await ctx.close();
    }
  });
});
