/**
 * On a REAL Temporal dev server: with our data converters on worker and client, the raw history
 * holds none of the marker strings we send through inputs, memos, signals, updates, queries,
 * activity inputs/results and failures — yet our client reads every value back correctly.
 * Control: decrypting that same raw history with our codec finds every marker, so the scan works.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, type Payload } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { clientDataConverter, workerDataConverter } from '../../src/codec/data-converter';
import { startCodecServer } from '../../src/codec/codec-server';
import { generateDevKeys } from '../../src/codec/keys';
import { createSealer } from '../../src/codec/seal';
import { provisionTemporalCli } from '../../src/temporal/provision';
import type { CodecActivities } from '../fixtures/codec-workflows';
import { getTestTemporal, uniqueTaskQueue, type TestTemporal } from '../helpers/temporal';

const INPUT_MARKER = 'PLAINTEXT-MARKER-1234';
const FAILURE_MARKER = 'FAILURE-MARKER-5678';
const ACTIVITY_FAILURE_MARKER = 'ACTIVITY-FAILURE-MARKER-9012';
const MEMO_MARKER = 'MEMO-MARKER-3456';
const SIGNAL_MARKER = 'SIGNAL-MARKER-7890';
const UPDATE_MARKER = 'UPDATE-MARKER-2468';
const PIN = 'PIN-4711!';
const CODEC_TOKEN = 'operator-codec-token-0123456789';
const ALL_MARKERS = [INPUT_MARKER, FAILURE_MARKER, ACTIVITY_FAILURE_MARKER, MEMO_MARKER, SIGNAL_MARKER, UPDATE_MARKER];

/**
 * JSON of a history with every byte field (payload data and metadata) shown as UTF-8 text, so a
 * plaintext JSON payload would be visible. Walks the messages itself: protobufjs' own toJSON
 * would turn bytes into base64 and hide plaintext from the scan.
 */
function historyText(history: unknown): string {
  const plain = (v: unknown): unknown => {
    if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
    if (Array.isArray(v)) return v.map(plain);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>)
          .filter(([, x]) => typeof x !== 'function')
          .map(([k, x]) => [k, plain(x)]),
      );
    }
    return v;
  };
  return JSON.stringify(plain(history));
}

/** Replaces every Payload-shaped object of a history with its decoding by `codec` (the control). */
async function decodeAll(node: unknown, codec: AesGcmCodec): Promise<unknown> {
  if (Array.isArray(node)) return Promise.all(node.map((n) => decodeAll(n, codec)));
  if (!node || typeof node !== 'object' || node instanceof Uint8Array) return node;
  const obj = node as Record<string, unknown>;
  if (obj.metadata && typeof obj.metadata === 'object' && obj.data instanceof Uint8Array) {
    const [decoded] = await codec.decode([obj as Payload]);
    return decoded;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = await decodeAll(v, codec);
  return out;
}

describe('Temporal history with payload encryption', { timeout: 240_000 }, () => {
  const keys = generateDevKeys('history');
  const taskQueue = uniqueTaskQueue('codec-history');
  let temporal: TestTemporal;
  let connection: Connection;
  let client: Client;
  let echoWorkflowId: string | undefined;

  before(async () => {
    temporal = await getTestTemporal();
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
  });
  after(async () => {
    await connection?.close();
    await temporal?.shutdown();
  });

  test('stores no marker in plaintext while our client reads inputs, results, queries, updates and failures back', async () => {
    const activities: CodecActivities = {
      async echoActivity(input) {
        return { echoed: `echo ${input.marker}` };
      },
      async failingActivity(marker) {
        throw ApplicationFailure.nonRetryable(`activity failed: ${marker}`);
      },
    };
    const workerConnection = await NativeConnection.connect({ address: temporal.address });
    const worker = await Worker.create({
      connection: workerConnection,
      namespace: temporal.namespace,
      taskQueue,
      workflowsPath: require.resolve('../fixtures/codec-workflows'),
      activities,
      dataConverter: workerDataConverter(keys),
    });

    const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    const { echoHandle, failingHandle, queried, updated, result, failure } = await worker.runUntil(async () => {
      const echoHandle = await client.workflow.start('codecEchoWorkflow', {
        taskQueue,
        workflowId: `codec-echo-${suffix}`,
        args: [{ marker: INPUT_MARKER, sealedPin: createSealer(keys).seal(PIN) }],
        memo: { note: MEMO_MARKER },
      });
      await echoHandle.signal('poke', SIGNAL_MARKER);
      const queried = await echoHandle.query<{ marker: string; pokes: string[] }>('state');
      const updated = await echoHandle.executeUpdate<string, [string]>('note', { args: [UPDATE_MARKER] });
      const result = await echoHandle.result();

      const failingHandle = await client.workflow.start('codecFailingWorkflow', {
        taskQueue,
        workflowId: `codec-fail-${suffix}`,
        args: [{ activityMarker: ACTIVITY_FAILURE_MARKER, workflowMarker: FAILURE_MARKER }],
      });
      const failure = await failingHandle.result().then(
        () => assert.fail('the failing workflow succeeded'),
        (e: unknown) => e,
      );
      return { echoHandle, failingHandle, queried, updated, result, failure };
    });
    await workerConnection.close();
    echoWorkflowId = echoHandle.workflowId;

    // Our client decodes everything correctly.
    assert.deepEqual(result, { echoed: `echo ${INPUT_MARKER}`, pokes: [SIGNAL_MARKER], notes: [UPDATE_MARKER] });
    assert.deepEqual(queried.marker, INPUT_MARKER);
    assert.equal(updated, `noted ${UPDATE_MARKER}`);
    assert.deepEqual((await echoHandle.describe()).memo, { note: MEMO_MARKER });
    assert.ok(failure instanceof WorkflowFailedError);
    const cause = failure.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.message, `workflow failed: ${FAILURE_MARKER}`);
    assert.equal(cause.type, 'CodecTestFailure');
    assert.deepEqual(cause.details, [{ detail: FAILURE_MARKER }]);

    // The raw history (and the raw describe answer, memo included) holds no marker.
    const rawEcho = await echoHandle.fetchHistory();
    const rawFail = await failingHandle.fetchHistory();
    const rawDescribe = await client.workflowService.describeWorkflowExecution({
      namespace: temporal.namespace,
      execution: { workflowId: echoHandle.workflowId },
    });
    const raw = historyText({ rawEcho, rawFail, rawDescribe });
    assert.ok(raw.includes('binary/encrypted'), 'history payloads carry the encrypted encoding');
    for (const marker of [...ALL_MARKERS, PIN]) assert.ok(!raw.includes(marker), `raw history contains ${marker}`);
    // Search attributes (server-set BuildIds in describe) are indexed, never encrypted; history payloads all are.
    assert.ok(!historyText({ rawEcho, rawFail }).includes('json/plain'), 'a history payload was stored unencrypted');

    // Control: decrypting the same raw data reveals every marker, so the scan above can fail.
    const codec = new AesGcmCodec(keys);
    const decoded = historyText(await decodeAll({ rawEcho, rawFail, rawDescribe }, codec));
    for (const marker of ALL_MARKERS) assert.ok(decoded.includes(marker), `decoded history lacks ${marker}`);
  });

  test('lets an operator with the codec token read the history through the codec server, sealed PIN still sealed', async (t) => {
    assert.ok(echoWorkflowId, 'the previous test did not run its workflow');
    const codecServer = await startCodecServer({ port: 0, keys, authToken: CODEC_TOKEN, corsOrigins: [] });
    t.after(() => codecServer.close());
    const show = (extra: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          provisionTemporalCli(),
          ['workflow', 'show', '--address', temporal.address, '--namespace', temporal.namespace, '-w', echoWorkflowId as string,
            '--output', 'json', '--codec-endpoint', `${codecServer.url}/codec`, ...extra],
          { timeout: 60_000 },
          (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });

    // The CLI prints payload bytes as base64: show them as text before searching.
    const payloadText = (stdout: string): string => {
      if (!stdout.trim()) return '';
      const walk = (v: unknown): unknown => {
        if (Array.isArray(v)) return v.map(walk);
        if (!v || typeof v !== 'object') return v;
        const o = v as Record<string, unknown>;
        const out = Object.fromEntries(Object.entries(o).map(([k, x]) => [k, walk(x)]));
        if (typeof o.data === 'string' && o.metadata && typeof o.metadata === 'object') {
          out.data = Buffer.from(o.data, 'base64').toString('utf8');
        }
        return out;
      };
      return JSON.stringify(walk(JSON.parse(stdout)));
    };

    // (Wrong or missing tokens get 401: see test/unit/codec-server.test.ts.)
    const decoded = await show(['--codec-auth', `Bearer ${CODEC_TOKEN}`]);
    assert.equal(decoded.code, 0, decoded.stderr);
    const text = payloadText(decoded.stdout);
    assert.ok(text.includes(INPUT_MARKER), 'the decoded history lacks the workflow input');
    assert.ok(text.includes(UPDATE_MARKER), 'the decoded history lacks the update argument');
    assert.match(text, /sealed:v1:history:[A-Za-z0-9_-]+/);
    assert.ok(!text.includes(PIN), 'the codec server unsealed the PIN');
  });
});
