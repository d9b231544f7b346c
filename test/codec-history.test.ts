/**
 * On a REAL Temporal dev server: with our data converters on worker and client, the raw history
 * holds none of the marker strings we send through inputs, memos, signals, updates, queries,
 * activity inputs/results and failures — yet our client reads every value back correctly.
 * Control: decrypting that same raw history with our codec finds every marker, so the scan works.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, type Payload } from '@temporalio/common';
import { NativeConnection, Runtime, Worker, DefaultLogger } from '@temporalio/worker';
import { AesGcmCodec } from '../src/codec/aes-gcm-codec';
import { clientDataConverter, workerDataConverter } from '../src/codec/data-converter';
import { generateDevKeys } from '../src/codec/keys';
import type { CodecActivities } from './fixtures/codec-workflows';

const INPUT_MARKER = 'PLAINTEXT-MARKER-1234';
const FAILURE_MARKER = 'FAILURE-MARKER-5678';
const ACTIVITY_FAILURE_MARKER = 'ACTIVITY-FAILURE-MARKER-9012';
const MEMO_MARKER = 'MEMO-MARKER-3456';
const SIGNAL_MARKER = 'SIGNAL-MARKER-7890';
const UPDATE_MARKER = 'UPDATE-MARKER-2468';
const ALL_MARKERS = [INPUT_MARKER, FAILURE_MARKER, ACTIVITY_FAILURE_MARKER, MEMO_MARKER, SIGNAL_MARKER, UPDATE_MARKER];

interface TestTemporal {
  address: string;
  namespace: string;
  shutdown(): Promise<void>;
}

/** The project's helper when present; until then a dev server started here. */
async function testTemporal(): Promise<TestTemporal> {
  const helper = path.join(__dirname, 'helpers', 'temporal.ts');
  if (existsSync(helper)) {
    const mod = require(helper) as { getTestTemporal(): Promise<TestTemporal> };
    return mod.getTestTemporal();
  }
  return startOwnDevServer();
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function findCli(): string {
  const cacheRoot = path.join(__dirname, '..', '.cache', 'temporal-cli');
  const cached = existsSync(cacheRoot)
    ? readdirSync(cacheRoot).map((d) => path.join(cacheRoot, d, 'temporal'))
    : [];
  const candidates = [process.env.TEMPORAL_CLI_PATH, ...cached, '/tmp/tbuild/bin/temporal'].filter(Boolean) as string[];
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error('no Temporal CLI found (set TEMPORAL_CLI_PATH or run npm run provision:temporal)');
  return found;
}

async function startOwnDevServer(): Promise<TestTemporal> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'mpf-codec-temporal-'));
  const child: ChildProcess = spawn(
    findCli(),
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--db-filename', path.join(dir, 'db.sqlite'), '--log-level', 'error'],
    { stdio: 'ignore' },
  );
  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const c = await Connection.connect({ address, connectTimeout: 1000 });
      await c.workflowService.describeNamespace({ namespace: 'default' });
      await c.close();
      break;
    } catch (e) {
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`Temporal dev server did not become ready on ${address}: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    address,
    namespace: 'default',
    async shutdown() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

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
  const taskQueue = `codec-history-${process.pid}`;
  let temporal: TestTemporal;
  let connection: Connection;
  let client: Client;

  before(async () => {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    temporal = await testTemporal();
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
      workflowsPath: require.resolve('./fixtures/codec-workflows'),
      activities,
      dataConverter: workerDataConverter(keys),
    });

    const suffix = `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    const { echoHandle, failingHandle, queried, updated, result, failure } = await worker.runUntil(async () => {
      const echoHandle = await client.workflow.start('codecEchoWorkflow', {
        taskQueue,
        workflowId: `codec-echo-${suffix}`,
        args: [{ marker: INPUT_MARKER }],
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
    for (const marker of ALL_MARKERS) assert.ok(!raw.includes(marker), `raw history contains ${marker}`);
    // Search attributes (server-set BuildIds in describe) are indexed, never encrypted; history payloads all are.
    assert.ok(!historyText({ rawEcho, rawFail }).includes('json/plain'), 'a history payload was stored unencrypted');

    // Control: decrypting the same raw data reveals every marker, so the scan above can fail.
    const codec = new AesGcmCodec(keys);
    const decoded = historyText(await decodeAll({ rawEcho, rawFail, rawDescribe }, codec));
    for (const marker of ALL_MARKERS) assert.ok(decoded.includes(marker), `decoded history lacks ${marker}`);
  });
});
