/**
 * Operators in Temporal Web: the dev server's Web UI, handed the gateway codec's capability URL,
 * shows a workflow's encrypted input decoded, while the server itself holds only ciphertext and
 * the values sealed inside the payload (a PIN) stay sealed. Real dev server with its UI, real
 * codec server over HTTP, real Chromium.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import type { StartedCodecServer } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { connectClient } from '../../src/temporal/connection';
import type { DevServer } from '../../src/temporal/dev-server';
import { Client } from '@temporalio/client';
import { createSealer } from '../../src/codec/seal';
import { launchBrowser } from '../helpers/browser';
import { startDevServerWithCodec, uniqueTaskQueue } from '../helpers/temporal';

const CODEC_TOKEN = 'temporal-web-codec-token-0123456789';
const MARKER = 'WEBUI-MARKER-7f3a';
const PIN = '5551!'; // '!' is outside base64url: it can only show if the PIN leaked

describe('Temporal Web with the codec server', () => {
  const keys = generateDevKeys('web');
  let server: DevServer | undefined;
  let codec: StartedCodecServer;
  let client: Client;
  let browser: Browser;

  before(async () => {
    // The codec server must know the UI's origin (CORS) and the UI the codec's URL.
    ({ server, codec } = await startDevServerWithCodec(keys, CODEC_TOKEN));
    client = await connectClient({ address: server.address, namespace: server.namespace }, keys);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await client?.connection.close();
    await codec?.close();
    await server?.stop();
  });

  test('shows the decoded workflow input to an operator, sealed values still sealed, while the server stores only ciphertext', async () => {
    const workflowId = `webui-${Date.now().toString(36)}`;
    // No worker needed: the input is in the WorkflowExecutionStarted event.
    const input = { note: MARKER, wallet_pin: createSealer(keys).seal(PIN) };
    await client.workflow.start('swapWorkflow', { workflowId, taskQueue: uniqueTaskQueue('webui'), args: [input] });

    // What the server holds: an encrypted payload, no marker.
    const raw = new Client({ connection: client.connection, namespace: server!.namespace });
    const history = await raw.workflow.getHandle(workflowId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    assert.equal(Buffer.from(started?.metadata?.encoding ?? new Uint8Array()).toString(), 'binary/encrypted');
    assert.ok(!Buffer.from(started?.data ?? new Uint8Array()).toString('latin1').includes(MARKER));

    const page = await browser.newPage();
    const codecCalls: string[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(codec.url)) codecCalls.push(`${r.status()} ${r.url()}`);
    });
    try {
      await page.goto(`${server!.uiUrl}/namespaces/default/workflows/${workflowId}`);
      await page.waitForFunction((m) => document.body.innerText.includes(m), MARKER, { timeout: 60_000 });
      const text = await page.innerText('body');
      assert.match(text, /sealed:v1:web:/, 'the PIN stays sealed: the codec server holds no sealing key');
      assert.ok(!text.includes(PIN));
      assert.ok(codecCalls.length > 0 && codecCalls.every((c) => /^200 .*\/codec\/web\/[A-Za-z0-9_-]{43}\/decode$/.test(c)), codecCalls.join('\n'));
      assert.ok(!codecCalls.some((c) => c.includes(CODEC_TOKEN)), 'the Bearer token never travels in a URL');
    } finally {
      await page.close();
    }
  });
});
