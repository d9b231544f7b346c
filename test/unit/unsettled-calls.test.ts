/**
 * A call to Temporal that never settles (seen once: a PIN budget's take sent in the background
 * as a gateway stopped) must neither hold the process open nor make its caller wait for ever.
 * Fake clients: what is under test is our bound around the SDK, not the SDK.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { KeyedRecords, OVERDUE_MARGIN_MS } from '../../src/starter/client/keyed-record';
import { TemporalUnavailableError, WorkerUnavailableError } from '../../src/starter/client/errors';
import { TemporalGate } from '../../src/starter/client/health';

const ROOT = path.resolve(__dirname, '..', '..');

/** A client whose every call hangs; its server answers every probe. */
const SCRIPT = `
const { TemporalGate } = require('./src/starter/client/health');
const answers = () => Promise.resolve({});
const client = {
  options: { namespace: 'default' },
  withAbortSignal: (_signal, fn) => fn(),
  connection: {
    withDeadline: (_d, fn) => fn(),
    withAbortSignal: (_s, fn) => fn(),
    workflowService: { getSystemInfo: answers, describeWorkflowExecution: answers },
  },
};
const gate = new TemporalGate(client, { temporalProbeIntervalMs: 200 });
void gate.guard(() => new Promise(() => {}), 'swap-never-answers');
setTimeout(() => console.log('probed while pending'), 700).unref();
`;

describe('a call to Temporal that never settles', () => {
  test('does not keep the process alive: a process with only such a call left exits', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', SCRIPT], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const timedOut = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000).unref());
    const outcome = await Promise.race([exited, timedOut]);
    if (outcome === 'still running') child.kill('SIGKILL');
    assert.equal(outcome, 0, `the process should have exited on its own (stderr: ${stderr.slice(0, 500)})`);
  });

  test('on a keyed record is refused as no worker answering, soon after its deadline', { timeout: 30_000 }, async (t) => {
    const client = { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() } as unknown as Client;
    const records = new KeyedRecords({ client, taskQueue: 'q', what: 'PIN budget', answerTimeoutMs: 100 });
    const started = Date.now();
    const keepAlive = setInterval(() => undefined, 1_000); // the bound's own timer holds nothing open
    t.after(() => clearInterval(keepAlive));
    await assert.rejects(
      records.within('pin-budget-x', () => new Promise(() => {})),
      (err: unknown) => err instanceof WorkerUnavailableError && /PIN budget pin-budget-x/.test(err.message),
    );
    const took = Date.now() - started;
    assert.ok(took >= 100 + OVERDUE_MARGIN_MS - 50 && took < 100 + OVERDUE_MARGIN_MS + 2_000, `refused after ${took} ms`);
  });

  test('on a client whose connection was closed ends as Temporal unavailable at the first probe', { timeout: 30_000 }, async (t) => {
    const shut = () => Promise.reject(new Error('Channel has been shut down'));
    const client = {
      options: { namespace: 'default' },
      withAbortSignal: (_signal: AbortSignal, fn: () => Promise<unknown>) => fn(),
      connection: {
        withDeadline: (_d: number, fn: () => Promise<unknown>) => fn(),
        withAbortSignal: (_s: AbortSignal, fn: () => Promise<unknown>) => fn(),
        workflowService: { getSystemInfo: shut, describeWorkflowExecution: shut },
      },
    } as unknown as Client;
    const keepAlive = setInterval(() => undefined, 1_000);
    t.after(() => clearInterval(keepAlive));
    const gate = new TemporalGate(client, { temporalProbeIntervalMs: 200 });
    const started = Date.now();
    await assert.rejects(gate.guard(() => new Promise(() => {}), 'swap-x'), TemporalUnavailableError);
    assert.ok(Date.now() - started < 5_000, `ended after ${Date.now() - started} ms`);
  });
});
