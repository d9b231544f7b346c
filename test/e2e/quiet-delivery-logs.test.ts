/**
 * An expected failure is one line: `mpf worker`, run from environment variables as users run it,
 * delivers a flow's events to a merchant endpoint that answers 503 (routine for webhooks). Each
 * failed attempt is one JSON line naming the endpoint, the status, the attempt and the next try —
 * no "Activity failed" warning, no stack.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { clientDataConverter } from '../../src/codec/data-converter';
import { generateSecret } from '../../src/merchant-events/signing';
import { startSimulator, type RunningSimulator } from '../../src/simulator';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { MPF_BIN, mpfAppEnv } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

describe("a merchant endpoint's expected failures in the worker's log", () => {
  let sim: RunningSimulator;
  let endpoint: Server;
  let worker: ChildProcess;
  let connection: Connection;
  let stdout = '';
  let stderr = '';
  const received: string[] = [];

  before(async () => {
    sim = await startSimulator();
    endpoint = createServer((req, res) => {
      received.push(String(req.headers['webhook-id']));
      req.resume();
      res.writeHead(503, { 'retry-after': '1' }).end('busy');
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    worker?.kill('SIGKILL');
    await connection?.close();
    await new Promise((resolve) => endpoint?.close(resolve));
    await sim?.close();
  });

  test('are one line per attempt, with endpoint, status, attempt and next try, and no stack', { timeout: 180_000 }, async () => {
    const temporal = await getTestTemporal();
    const taskQueue = uniqueTaskQueue('quiet');
    const env: Record<string, string> = {
      ...mpfAppEnv({ temporal, taskQueue, simulatorUrl: sim.baseUrl, apiKey: 'quiet-logs-api-key-0123456789' }),
      MERCHANT_WEBHOOK_URL: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/events`,
      MERCHANT_WEBHOOK_SECRET: generateSecret(),
      MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '1',
      LOG_LEVEL: 'info',
    };
    worker = spawn(process.execPath, [MPF_BIN, 'worker'], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    worker.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    worker.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await eventually(async () => /worker: polling task queue/.test(stdout), 120_000, `the worker to poll:\n${stdout}\n${stderr}`);

    connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(env.PAYLOAD_ENCRYPTION_KEYS!) });
    const mpf = new MpfClient({ client, taskQueue, keys: env.PAYLOAD_ENCRYPTION_KEYS!, publicUrl: 'http://127.0.0.1:9' });
    const txn = uniqueRef('quiet');
    await mpf.startSwap(swapBody(txn));
    const eventId = `evt_swap-${txn}_1`;
    // Three attempts: at once, after 1 s, after 2 s.
    await eventually(async () => received.filter((id) => id === eventId).length >= 3, 60_000, 'three attempts at the endpoint');
    await new Promise((resolve) => setTimeout(resolve, 500)); // the third attempt's line

    const lines = stdout.split('\n').filter(Boolean);
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `one JSON object per line: ${line}`);
    const about = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event_id === eventId || JSON.stringify(l).includes(eventId));
    const attempts = received.filter((id) => id === eventId).length;
    assert.equal(about.length, attempts, `one line per attempt:\n${about.map((l) => JSON.stringify(l)).join('\n')}`);
    const host = `127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
    for (const [i, l] of about.entries()) {
      assert.equal(l.status, 503);
      assert.equal(l.endpoint, host);
      assert.equal(l.attempt, i + 1);
      assert.equal(l.level, 40, 'a warning');
      assert.match(String(l.msg), new RegExp(`^deliverEvent: attempt ${i + 1} to ${host.replace(/\./g, '\\.')} answered 503; next try in \\d+ s$`));
    }
    assert.ok(!lines.some((l) => /Activity failed/.test(l)), 'no "Activity failed" warning');
    assert.ok(!lines.some((l) => /"stack"/.test(l)), 'no stack');
  });
});
