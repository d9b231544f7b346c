/**
 * Temporal Web tells the story: a flow started by the typed client carries a static summary and
 * details (user metadata) and keeps its current details up to date; all of it is encrypted by the
 * payload codec in history and decoded for operators through the codec server; the operator's
 * saved views filter the workflow list by MpfState with the MpfState column shown. Real dev server
 * with its Web UI, real simulator, worker and codec server over HTTP, real Chromium.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import type { StartedCodecServer } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { operatorViews, webSetupScript, workflowListUrl } from '../../src/starter/client/temporal-web';
import type { DevServer } from '../../src/temporal/dev-server';
import { launchBrowser } from '../helpers/browser';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { eventually, startStack, type Stack } from '../helpers/stack';
import { startDevServerWithCodec } from '../helpers/temporal';

const CODEC_TOKEN = 'temporal-web-story-codec-token-0123456789';
const CANARY_USER = 'canary-user-5e1f0a'; // a user reference: personal data that must not reach a summary
const WRONG_PIN = '9731';

/** The text of the page and of its frames (Temporal Web renders markdown in sandboxed iframes). */
async function shownText(page: Page): Promise<string> {
  const texts = await Promise.all(page.frames().map((f) => f.evaluate(() => document.body?.innerText ?? '').catch(() => '')));
  return texts.join('\n');
}

interface WorkflowMetadata {
  currentDetails?: string;
}

describe('Temporal Web tells the story of a flow', () => {
  const keys = generateDevKeys('story');
  let server: DevServer | undefined;
  let codec: StartedCodecServer;
  let stack: Stack;
  let browser: Browser;
  const waiting = uniqueRef('story-wait');
  const done = uniqueRef('story-done');
  const waitingId = `swap-${waiting}`;
  const doneId = `swap-${done}`;

  before(async () => {
    ({ server, codec } = await startDevServerWithCodec(keys, CODEC_TOKEN));
    stack = await startStack({ keys, temporal: { address: server.address, namespace: server.namespace } });
    browser = await launchBrowser();

    // One swap awaiting its PIN after a wrong one, one confirmed.
    await stack.mpf.startSwap(swapBody(waiting, { user_ref: CANARY_USER, amount: 100 }));
    const rejected = await stack.mpf.submitPin(waitingId, { wallet_pin: WRONG_PIN });
    assert.equal(rejected?.outcome, 'pin_rejected');
    await stack.mpf.startSwap(swapBody(done, { user_ref: CANARY_USER, amount: 100 }));
    assert.equal((await stack.mpf.submitPin(doneId, { wallet_pin: SIM_PIN }))?.outcome, 'confirmed');
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
    await codec?.close();
    await server?.stop();
  });

  test('the summary is given at start and the current details follow the swap, in words and without personal data', async () => {
    const handle = stack.client.workflow.getHandle(waitingId);
    const desc = await handle.describe();
    assert.equal(await desc.staticSummary(), `swap USD 100 → NGN · ref ${waiting}`);
    const details = (await desc.staticDetails()) ?? '';
    assert.match(details, /at most 3 PIN attempts/);
    const current = (await handle.query<WorkflowMetadata>('__temporal_workflow_metadata')).currentDetails ?? '';
    assert.match(current, /^\*\*swap USD 100 → NGN, awaiting PIN, 2 attempts left\*\*/);
    assert.match(current, /PIN window closes \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    for (const text of [await desc.staticSummary(), details, current]) assert.ok(!text?.includes(CANARY_USER), text);

    const confirmed = (await stack.client.workflow.getHandle(doneId).query<WorkflowMetadata>('__temporal_workflow_metadata')).currentDetails;
    assert.match(confirmed ?? '', /^\*\*swap USD 100 → NGN, confirmed\*\*/);
  });

  test('summary, details and current details are ciphertext on the server: no canary, no summary text, no PIN in plaintext', async () => {
    const raw = new Client({ connection: stack.client.connection, namespace: server!.namespace });
    const history = await raw.workflow.getHandle(waitingId).fetchHistory();
    const meta = history.events?.[0]?.userMetadata;
    for (const p of [meta?.summary, meta?.details]) {
      assert.equal(Buffer.from(p?.metadata?.encoding ?? new Uint8Array()).toString(), 'binary/encrypted');
    }
    const answer = await raw.workflowService.queryWorkflow({
      namespace: server!.namespace,
      execution: { workflowId: waitingId },
      query: { queryType: '__temporal_workflow_metadata' },
    });
    const queryPayload = answer.queryResult?.payloads?.[0];
    assert.equal(Buffer.from(queryPayload?.metadata?.encoding ?? new Uint8Array()).toString(), 'binary/encrypted');

    // Every byte the server holds for the flow (events and the query's answer), payloads included.
    const blobs: string[] = [];
    const bytes = (o: unknown): string =>
      JSON.stringify(o, (_k, v: unknown) => {
        if (!(v instanceof Uint8Array)) return v;
        const text = Buffer.from(v).toString('latin1');
        blobs.push(text);
        return text;
      });
    const stored = bytes(history) + bytes(answer) + bytes(await raw.workflowService.describeWorkflowExecution({ namespace: server!.namespace, execution: { workflowId: waitingId } }));
    for (const secret of [CANARY_USER, 'swap USD 100', 'awaiting PIN', 'PIN attempts']) {
      assert.ok(!stored.includes(secret), `the server holds "${secret}" in plaintext`);
    }
    // The 4-digit PIN is looked for in the stored bytes (payloads, memo, metadata), not in ids and
    // timestamps, whose digits can contain it by chance (one did, once, in CI).
    assert.ok(!blobs.some((b) => b.includes(WRONG_PIN)), `the server holds "${WRONG_PIN}" in plaintext`);
  });

  test('an operator filters the workflow list by MpfState with the saved view, sees the MpfState column and the decoded summary', async () => {
    const ui = server!.uiUrl!;
    const page = await browser.newPage();
    try {
      // What `mpf web views --setup-script` prints, run on Temporal Web's origin.
      await page.goto(`${ui}/namespaces/${server!.namespace}/workflows`);
      const said = await page.evaluate(webSetupScript(server!.namespace));
      assert.match(String(said), /5 saved views and the MpfState column/);

      const awaitingPin = operatorViews().find((v) => v.id === 'mpf-awaiting-pin')!;
      await page.goto(workflowListUrl(ui, server!.namespace, awaitingPin.query));
      await page.waitForFunction((id) => document.body.innerText.includes(id), waitingId, { timeout: 60_000 });
      const list = await page.innerText('body');
      assert.ok(!list.includes(doneId), 'the confirmed swap is not in the "awaiting PIN" view');
      const headers = await page.locator('th').allInnerTexts();
      assert.ok(headers.some((h) => h.trim() === 'MpfState'), `MpfState column shown: ${headers.join(' | ')}`);
      const row = page.locator('tr', { hasText: waitingId }).filter({ hasNotText: `events-${waitingId}` }); // not its events-<id> delivery workflow
      assert.match(await row.innerText(), /awaiting_pin/);
      assert.ok(list.includes('Needs reconciliation') && list.includes('Failed today'), 'the saved views are listed');

      // The same list with the confirmed state's filter shows the other swap.
      await page.goto(workflowListUrl(ui, server!.namespace, 'MpfState = "confirmed"'));
      await page.waitForFunction((id) => document.body.innerText.includes(id), doneId, { timeout: 60_000 });

      // The flow's page: the summary (user metadata, decoded by the codec server) and the current details.
      const { runId } = await stack.client.workflow.getHandle(waitingId).describe();
      await page.goto(`${ui}/namespaces/${server!.namespace}/workflows/${waitingId}/${runId}/user-metadata`);
      await eventually(async () => (await shownText(page)).includes(`swap USD 100 → NGN · ref ${waiting}`), 60_000, 'the decoded summary');
      await eventually(async () => (await shownText(page)).includes('swap USD 100 → NGN, awaiting PIN, 2 attempts left'), 60_000, 'the current details');
      assert.match(await shownText(page), /at most 3 PIN attempts/, 'the static details');
      assert.ok(!(await shownText(page)).includes(CANARY_USER));
    } finally {
      await page.close();
    }
  });
});
