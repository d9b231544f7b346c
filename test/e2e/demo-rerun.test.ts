/**
 * The demo run again and again on the same data, as a user does: `mpf demo --once` twice, then
 * the interactive `mpf demo` stopped with Ctrl-C, each with its own Temporal dev server on one data
 * folder (MPF_DEMO_DATA_DIR, a temporary folder here; `.data/` by default). The flows of earlier
 * runs stay readable because the payload keys are kept with the data; a folder whose keys do not
 * open it is said to be so, with what to do, instead of a stack that holds every provider call.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { clientDataConverter } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { startDevServer } from '../../src/temporal/dev-server';
import { MPF_BIN, runMpf } from '../helpers/processes';

const ROOT = path.resolve(__dirname, '..', '..');
let dataDir: string;

/** Only what a user's shell has, plus the data folder; no TEMPORAL_ADDRESS: the demo runs its own server. */
function demoEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'CHROMIUM_PATH', 'TEMPORAL_CLI_PATH'];
  return { ...Object.fromEntries(keep.filter((k) => process.env[k]).map((k) => [k, process.env[k]])), MPF_DEMO_DATA_DIR: dataDir, ...extra };
}

/** The lines of a stack trace or an uncaught error. */
const TRACE = /^\s+at .+\(.+:\d+:\d+\)$|^\s+at .+:\d+:\d+$|Uncaught|UnhandledPromiseRejection|Channel has been shut down/m;

/** The result line of a demo run that drove both flows. */
const BOTH_OK = /\[demo\] swap confirmed, payment link paid: OK/;

before(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-demo-data-'));
});
after(() => {
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the demo run again on the same data', () => {
  test('mpf demo --once twice in a row: both flows succeed each time, the second on the first run\'s data and keys', { timeout: 600_000 }, async () => {
    const first = await runMpf(['demo', '--once'], demoEnv(), { timeoutMs: 280_000 });
    assert.equal(first.code, 0, `first run: exit ${first.code}\n${first.stdout}\n${first.stderr}`);
    assert.match(first.stdout, BOTH_OK);
    assert.match(first.stdout, /payload encryption keys: kept in \S*demo-keys\.env with the data \(mode 0600\)/);
    const keysFile = path.join(dataDir, 'demo-keys.env');
    assert.equal(fs.statSync(keysFile).mode & 0o777, 0o600);
    const kept = fs.readFileSync(keysFile, 'utf8');
    // The secrets are in the file only, never on the console.
    const keys = /^PAYLOAD_ENCRYPTION_KEYS='([^']+)'$/m.exec(kept)?.[1];
    assert.ok(keys, kept.replace(/'[^']*'/g, "'…'"));
    assert.ok(!first.stdout.includes(keys.split(':')[1]!), 'the payload key was printed');
    const firstSwap = /swap (swap-demo-swap-\S+): confirmed/.exec(first.stdout)?.[1];
    assert.ok(firstSwap, first.stdout);

    const second = await runMpf(['demo', '--once'], demoEnv(), { timeoutMs: 280_000 });
    assert.equal(second.code, 0, `second run: exit ${second.code}\n${second.stdout}\n${second.stderr}`);
    assert.match(second.stdout, /database \S*demo-temporal\.db, with the flows of earlier runs\)/);
    assert.match(second.stdout, /rate 1 USD = 1500\.25 NGN/);
    assert.match(second.stdout, BOTH_OK);
    assert.equal(fs.readFileSync(keysFile, 'utf8'), kept, 'the same keys, not new ones');
    assert.doesNotMatch(`${second.stdout}\n${second.stderr}`, TRACE);

    // The first run's swap is still there and readable with the kept keys.
    const server = await startDevServer({ dbFile: path.join(dataDir, 'demo-temporal.db'), searchAttributes: false });
    try {
      const connection = await Connection.connect({ address: server.address });
      try {
        const client = new Client({ connection, namespace: server.namespace, dataConverter: clientDataConverter(keys) });
        assert.equal(((await client.workflow.getHandle(firstSwap).result()) as { state: string }).state, 'confirmed');
      } finally {
        await connection.close();
      }
    } finally {
      await server.stop();
    }
  });

  test('then the interactive demo on the same data drives both flows, and Ctrl-C stops it within seconds, exit 0, no stack trace', { timeout: 400_000 }, async (t) => {
    // In a process group of its own, as in a terminal: Ctrl-C is sent to the whole group.
    const child = spawn(process.execPath, [MPF_BIN, 'demo'], { cwd: ROOT, env: demoEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      const deadline = Date.now() + 300_000;
      while (!/\[demo\] checkout: /.test(stdout)) {
        if (child.exitCode !== null) assert.fail(`the demo exited (${child.exitCode}) before it was running:\n${stdout}\n${stderr}`);
        if (Date.now() > deadline) assert.fail(`the demo did not come up:\n${stdout}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.match(stdout, BOTH_OK);
      const pinSwap = /PIN page: +http:\/\/[^ ]+\/pin\/(swap-[^#\s]+)#/.exec(stdout)?.[1];
      assert.ok(pinSwap, stdout);

      const sent = Date.now();
      process.kill(-child.pid!, 'SIGINT');
      const { code, signal } = await exited;
      const tookMs = Date.now() - sent;
      t.diagnostic(`Ctrl-C to exit: ${tookMs} ms`);
      assert.ok(code === 0 || code === 130, `exit ${code} ${signal ?? ''}\n${stdout}\n${stderr}`);
      // "A few seconds": the flows' cancels are bounded at 5 s and the rest stops at once; the margin is for a loaded machine.
      assert.ok(tookMs < 20_000, `Ctrl-C took ${tookMs} ms:\n${stdout}`);
      assert.match(stdout, new RegExp(`cancelled ${pinSwap} \\(the demo stopped\\)`));
      assert.match(stdout, /\[demo\] stopped\n$/);
      assert.doesNotMatch(`${stdout}\n${stderr}`, TRACE);
      assert.doesNotMatch(stdout, /stopping .* failed/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
      await exited;
    }
  });

  test('Ctrl-C while the demo is still starting stops it within seconds too: exit 130, no stack trace, its dev server gone', { timeout: 300_000 }, async (t) => {
    const child = spawn(process.execPath, [MPF_BIN, 'demo'], { cwd: ROOT, env: demoEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 240_000;
      while (!/\[demo\] worker: bundling the workflows/.test(out)) {
        if (child.exitCode !== null || Date.now() > deadline) assert.fail(`the demo did not reach its worker:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const serverPid = Number(/Temporal dev server at \S+ \(pid (\d+)\)/.exec(out)?.[1]);
      assert.ok(serverPid > 0, out);
      const sent = Date.now();
      process.kill(-child.pid!, 'SIGINT');
      const code = await exited;
      const tookMs = Date.now() - sent;
      t.diagnostic(`Ctrl-C to exit: ${tookMs} ms`);
      assert.equal(code, 130, out);
      assert.ok(tookMs < 20_000, `Ctrl-C took ${tookMs} ms:\n${out}`);
      assert.match(out, /\[demo\] stopping before the demo was done …\n[^]*\[demo\] stopped\n$/);
      assert.doesNotMatch(out, TRACE);
      assert.throws(() => process.kill(serverPid, 0), /ESRCH/, 'the dev server was stopped');
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
      await exited;
    }
  });

  test('data whose keys were replaced is not run half-working: the demo says so and how to start afresh, exit 1, nothing started', { timeout: 300_000 }, async () => {
    const keysFile = path.join(dataDir, 'demo-keys.env');
    const before = fs.readFileSync(keysFile, 'utf8');
    fs.writeFileSync(keysFile, `PAYLOAD_ENCRYPTION_KEYS='${generateDevKeys()}'\n`, { mode: 0o600 });
    try {
      const r = await runMpf(['demo', '--once'], demoEnv(), { timeoutMs: 280_000 });
      assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /\[demo\] failed: the data of task queue \S+ on \S+ is sealed under payload keys this run does not have \(its provider guard cannot be read: payload was encrypted with key id "dev-[0-9a-f]+", which is not in PAYLOAD_ENCRYPTION_KEYS/);
      assert.match(r.stdout, /nothing was started\. run with the PAYLOAD_ENCRYPTION_KEYS it was written with, or start afresh: remove \S*demo-temporal\.db and \S*demo-keys\.env/);
      assert.doesNotMatch(r.stdout, /POST \/v1\/swaps/, 'no flow was started');
      assert.doesNotMatch(`${r.stdout}\n${r.stderr}`, TRACE);
    } finally {
      fs.writeFileSync(keysFile, before, { mode: 0o600 });
    }
  });
});
