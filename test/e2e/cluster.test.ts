/**
 * Issue 8: the production topology, natively. `mpf cluster up` is started ONCE for this file, as a
 * user starts it (a child process; its printed output is what the tests read): PostgreSQL, the
 * schema job, the Temporal server on PostgreSQL (persistence and visibility), the namespace job,
 * Temporal Web, the simulator, 2 workers and 2 gateways. Then both flows through each gateway, a
 * worker killed mid-flow, visibility in PostgreSQL, and `mpf cluster down` leaving nothing behind.
 * If the topology cannot be provisioned or started, every test here fails (never skips).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { payloadToJson } from '../../src/codec/codec-server';
import { isRunning, processesOfRun } from '../../src/cluster/processes';
import type { ClusterInfo } from '../../src/cluster/state';
import { SECRET_FILES } from '../../src/cluster/topology';
import { createControlClient } from '../../src/simulator/control-client';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { linkToPaid, swapToConfirmed, type FieldTarget } from '../helpers/field';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { http } from '../helpers/gateway';
import { runMpf, spawnMpf, type MpfProcess } from '../helpers/processes';
import { scrape, sumOf } from '../helpers/prometheus';
import { eventually } from '../helpers/stack';

/** A cold start builds the Go binaries first (about 8 minutes here); CI provisions them before `npm test`. */
const UP_TIMEOUT_MS = 15 * 60_000;

let stateDir: string;
let up: MpfProcess;
let upExit: Promise<number | null>;
let info: ClusterInfo;
let apiKey: string;
let startedIn: number;
/** Swaps the flows test confirmed. */
const swapIds: string[] = [];

const secret = (name: keyof typeof SECRET_FILES) => fs.readFileSync(path.join(info.secretsDir, SECRET_FILES[name]), 'utf8').trim();
const target = (gatewayUrl: string): FieldTarget => ({ gatewayUrl, apiKey, simulatorUrl: info.simulator!.url });
const api = (gatewayUrl: string, method: string, p: string, body?: unknown) => http(method, `${gatewayUrl}${p}`, { body, headers: { 'x-api-key': apiKey } });

/** The Temporal CLI against the cluster, as an operator runs it; JSON output parsed. */
function temporalCli(args: string[]): unknown {
  const out = execFileSync(provisionTemporalCli(), [...args, '--address', info.temporal!.address, '--namespace', 'default', '-o', 'json'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: stateDir },
  });
  return JSON.parse(out || 'null');
}

/** pid of the worker whose identity (pid@host, the SDK's default) completed the workflow's latest task. */
async function lastWorkflowTaskWorker(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const identities = (history.events ?? []).map((e) => e.workflowTaskCompletedEventAttributes?.identity).filter((x): x is string => Boolean(x));
  const last = identities.at(-1);
  assert.ok(last, `${workflowId} has no completed workflow task`);
  return Number(last.split('@')[0]);
}

describe('the production topology on loopback (mpf cluster up: PostgreSQL, Temporal, Temporal Web, simulator, 2 workers, 2 gateways)', () => {
  before(
    async () => {
      stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-cluster-test-'));
      const t0 = Date.now();
      up = spawnMpf(['cluster', 'up', '--workers', '2', '--gateways', '2', '--state-dir', stateDir], {});
      upExit = new Promise((resolve) => up.child.once('exit', (code) => resolve(code)));
      // Never leave the topology running behind a crashed test process: `up` stops it on SIGTERM.
      process.once('exit', () => {
        if (up.child.exitCode === null) up.child.kill('SIGTERM');
      });
      await up.waitFor(/cluster ready in [\d.]+ s\n[^]*stops everything\.\n/, UP_TIMEOUT_MS);
      startedIn = Date.now() - t0;
      info = JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo;
      apiKey = secret('gateway_api_key');
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(async () => {
    // Only when a test failed before `down` ran: stop it anyway.
    if (up && up.child.exitCode === null && up.child.signalCode === null) {
      await runMpf(['cluster', 'down', '--state-dir', stateDir], { ...process.env }, { timeoutMs: 120_000 }).catch(() => undefined);
      await up.kill('SIGKILL');
    }
    if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
  });

  test('mpf cluster up prints every address and "cluster ready", each service runs on 127.0.0.1 as compose runs it, and no secret is printed', (t) => {
    t.diagnostic(`mpf cluster up: ready in ${(startedIn / 1000).toFixed(1)} s (as measured by this test, node start included)`);
    const output = up.output();
    assert.equal(info.status, 'ready');
    assert.equal(info.workers.length, 2);
    assert.equal(info.gateways.length, 2);
    const lines: Array<[string, string]> = [
      ['Temporal gRPC', info.temporal!.address],
      ['Temporal Web', info.ui!.url],
      ['gateway-1', info.gateways[0]!.url],
      ['gateway-2', info.gateways[1]!.url],
      ['simulator API', info.simulator!.url],
      ['simulator checkout', info.simulator!.checkoutUrl],
      ['PostgreSQL', `127.0.0.1:${info.postgres!.port}`],
      ['worker-1', `pid ${info.workers[0]!.pid}`],
      ['worker-2', `pid ${info.workers[1]!.pid}`],
    ];
    for (const [label, value] of lines) {
      assert.match(output, new RegExp(`^ {2}${label} +${value.replace(/[.]/g, '\\.')}\\b`, 'm'), `${label} ${value} is printed`);
      if (label !== 'PostgreSQL' && !label.startsWith('worker')) assert.match(value, /^(http:\/\/)?127\.0\.0\.1:\d+$/, label);
    }
    // Every process of the topology runs.
    const pids = [info.postgres!.pid, info.temporal!.pid, info.ui!.pid, info.simulator!.pid, ...info.workers.map((w) => w.pid), ...info.gateways.map((g) => g.pid)];
    for (const pid of pids) assert.ok(isRunning(pid), `pid ${pid} runs`);
    // Workers and gateways run `node bin/mpf.cjs <role>` as compose's services do.
    const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1);
    for (const w of info.workers) assert.deepEqual(cmdline(w.pid), ['bin/mpf.cjs', 'worker']);
    for (const g of info.gateways) assert.deepEqual(cmdline(g.pid), ['bin/mpf.cjs', 'gateway', '--port', new URL(g.url).port, '--host', '127.0.0.1']);
    // PostgreSQL runs as a user other than root.
    const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${info.postgres!.pid}/status`, 'utf8'))?.[1]);
    assert.notEqual(uid, 0, 'PostgreSQL runs as root');
    // Secrets: 0600 files, never in the output.
    for (const name of Object.keys(SECRET_FILES) as Array<keyof typeof SECRET_FILES>) {
      const file = path.join(info.secretsDir, SECRET_FILES[name]);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600, `${name} is mode 0600`);
      const value = secret(name);
      assert.ok(value.length >= 32);
      assert.ok(!output.includes(value) && !output.includes(value.replace(/^k1:/, '')), `${name} appears in the output of mpf cluster up`);
    }
    assert.match(output, /4 history shards, persistence and visibility on PostgreSQL/);
  });

  test("the operator's shell from cluster.env works as the runbook writes it: mpf reads the *_FILE secrets, mpf sim and temporal are found", { timeout: 120_000 }, () => {
    const envFile = path.join(stateDir, 'cluster.env');
    const shell = (cmd: string) =>
      spawnSync('bash', ['-c', `set -a; . "$1"; set +a; ${cmd}`, 'sh', envFile], { cwd: path.resolve(__dirname, '..', '..'), env: { PATH: '/usr/bin:/bin', HOME: stateDir }, encoding: 'utf8', timeout: 90_000 });
    const text = fs.readFileSync(envFile, 'utf8');
    assert.match(text, new RegExp(`^MPF_SIMULATOR_URL=${info.simulator!.url.replace(/\./g, '\\.')}$`, 'm'));
    const cats = shell('node bin/mpf.cjs categories');
    assert.equal(cats.status, 0, `${cats.stdout}\n${cats.stderr}`);
    const wf = shell('temporal workflow list --limit 1 -o json');
    assert.equal(wf.status, 0, `${wf.stdout}\n${wf.stderr}`);
    const sim = shell('node bin/mpf.cjs sim --help');
    assert.equal(sim.status, 0, sim.stderr);
  });

  test('a swap is confirmed and a payment link paid through each of the two gateways; the provider saw one initialisation and one confirmation per swap', async () => {
    for (const [i, gw] of info.gateways.entries()) {
      const ref = uniqueRef(`cl-swap-gw${i + 1}`);
      await swapToConfirmed(target(gw.url), ref);
      swapIds.push(`swap-${ref}`);
      await linkToPaid(target(gw.url), uniqueRef(`cl-link-gw${i + 1}`));
    }
  });

  test("every worker and gateway serves /metrics (and the workers /readyz) on the loopback port `up` printed; together they counted the two gateways' flows", async () => {
    const output = up.output();
    let started = 0;
    let linksStarted = 0;
    for (const w of info.workers) {
      assert.match(w.metricsUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(output.includes(`pid ${w.pid}, metrics ${w.metricsUrl}/metrics`), `${w.name}'s metrics address is printed`);
      assert.deepEqual((await http('GET', `${w.metricsUrl}/readyz`)).json, { ok: true, state: 'RUNNING' });
      const m = await scrape(`${w.metricsUrl}/metrics`);
      started += sumOf(m.samples, 'mpf_flows_started_total', { flow_kind: 'swap' });
      linksStarted += sumOf(m.samples, 'mpf_flows_started_total', { flow_kind: 'payment_link' });
    }
    // One swap and one link per gateway (the worker killed later has not been killed yet).
    assert.equal(started, info.gateways.length);
    assert.equal(linksStarted, info.gateways.length);
    for (const g of info.gateways) {
      assert.ok(output.includes(`pid ${g.pid}, metrics ${g.metricsUrl}/metrics`), `${g.name}'s metrics address is printed`);
      const m = await scrape(`${g.metricsUrl}/metrics`);
      assert.equal(sumOf(m.samples, 'mpf_gateway_http_requests_total', { route: '/v1/swaps', method: 'POST', status_code: '201' }), 1, g.name);
      assert.equal(sumOf(m.samples, 'mpf_gateway_ready'), 1, g.name);
    }
  });

  test('Temporal Web (ui-server 2.42.1) serves the namespace and decodes through the codec endpoint of gateway-1', async () => {
    const settings = await http('GET', `${info.ui!.url}/api/v1/settings`);
    assert.equal(settings.status, 200);
    assert.equal(settings.json.Version, '2.42.1');
    const endpoint = settings.json.Codec.Endpoint as string;
    assert.ok(endpoint.startsWith(`${info.gateways[0]!.url}/codec/web/`), endpoint);
    const ns = await http('GET', `${info.ui!.url}/api/v1/namespaces/default`);
    assert.equal(ns.status, 200, ns.text);
    // The codec server answers Temporal Web's origin (CORS preflight) on the capability path.
    const preflight = await http('OPTIONS', `${endpoint}/decode`, {
      headers: { origin: info.ui!.url, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
    });
    assert.ok(preflight.status < 300, `preflight ${preflight.status}`);
    assert.equal(preflight.headers['access-control-allow-origin'], info.ui!.url);
    // …and decodes what the workers encrypted: a swap's input, as Temporal Web would ask for it.
    const swapId = swapIds[0];
    assert.ok(swapId, 'the flows test confirmed a swap');
    const connection = await Connection.connect({ address: info.temporal!.address });
    try {
      const history = await new Client({ connection, namespace: 'default' }).workflow.getHandle(swapId).fetchHistory();
      const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
      assert.ok(input, 'the swap has an input payload');
      const encoding = Buffer.from(input.metadata?.encoding ?? new Uint8Array()).toString();
      assert.notEqual(encoding, 'json/plain', 'history holds the input encrypted');
      const decoded = await http('POST', `${endpoint}/decode`, {
        body: { payloads: [payloadToJson(input as Payload)] },
        headers: { origin: info.ui!.url, 'x-namespace': 'default' },
      });
      assert.equal(decoded.status, 200, decoded.text);
      const plain = decoded.json.payloads[0];
      assert.equal(Buffer.from(plain.metadata.encoding, 'base64').toString(), 'json/plain');
      assert.match(Buffer.from(plain.data, 'base64').toString(), new RegExp(swapId.replace(/^swap-/, '')));
    } finally {
      await connection.close();
    }
  });

  test('the flows are in PostgreSQL visibility, found by the MpfState search attribute', async () => {
    const swapRef = uniqueRef('cl-vis');
    await swapToConfirmed(target(info.gateways[1]!.url), swapRef);
    const listed = await eventually(
      async () => {
        const rows = temporalCli(['workflow', 'list', '--query', `MpfState = 'confirmed' AND MpfFlowKind = 'swap' AND MpfTxnRef = '${swapRef}'`]) as Array<{ execution: { workflowId: string } }> | null;
        return rows?.length ? rows : undefined;
      },
      30_000,
      `swap-${swapRef} listed with MpfState = 'confirmed'`,
    );
    assert.deepEqual(listed.map((r) => r.execution.workflowId), [`swap-${swapRef}`]);
    // …and those rows are PostgreSQL's (temporal_visibility.executions_visibility).
    const psql = spawnSync(
      path.join(info.postgres!.binDir, 'psql'),
      ['-h', '127.0.0.1', '-p', String(info.postgres!.port), '-U', 'temporal', '-d', 'temporal_visibility', '-At', '-c', `SELECT workflow_id, status FROM executions_visibility WHERE workflow_id = 'swap-${swapRef}'`],
      { encoding: 'utf8', env: { PATH: process.env.PATH, PGPASSWORD: secret('postgres_password') } },
    );
    assert.equal(psql.status, 0, psql.stderr);
    assert.equal(psql.stdout.trim(), `swap-${swapRef}|2`, 'one completed execution (status 2) in PostgreSQL visibility');
  });

  test('a worker killed (SIGKILL) while a swap awaits its PIN and a link awaits payment: the other worker finishes both', async () => {
    const connection = await Connection.connect({ address: info.temporal!.address });
    try {
      const client = new Client({ connection, namespace: 'default' });
      const [gw1, gw2] = [info.gateways[0]!.url, info.gateways[1]!.url];
      const swapRef = uniqueRef('cl-kill-swap');
      const linkRef = uniqueRef('cl-kill-link');
      const started = await api(gw1, 'POST', '/v1/swaps', swapBody(swapRef));
      assert.equal(started.status, 201, started.text);
      assert.equal(started.json.state, 'awaiting_pin');
      const created = await api(gw2, 'POST', '/v1/payment-links', linkBody(linkRef));
      assert.equal(created.status, 201, created.text);
      assert.equal(created.json.state, 'awaiting_payment');

      // Kill the worker that ran the swap so far (it holds it in its cache).
      const victim = await lastWorkflowTaskWorker(client, started.json.swap_id);
      const survivor = info.workers.map((w) => w.pid).find((p) => p !== victim);
      assert.ok(info.workers.some((w) => w.pid === victim), `the swap ran on worker pid ${victim}, one of ${info.workers.map((w) => w.pid).join(', ')}`);
      process.kill(victim, 'SIGKILL');
      await eventually(async () => !isRunning(victim), 10_000, `worker ${victim} gone`);
      await up.waitFor(new RegExp(`worker-\\d \\(pid ${victim}\\) exited on its own \\(SIGKILL\\)`), 10_000);

      // The PIN through the other gateway; the surviving worker confirms.
      const outcome = await http('POST', `${gw2}/v1/swaps/${started.json.swap_id}/pin`, {
        body: { wallet_pin: SIM_PIN },
        headers: { authorization: `Bearer ${started.json.pin_token}` },
      });
      assert.equal(outcome.status, 200, outcome.text);
      assert.deepEqual(outcome.json, { outcome: 'confirmed', state: 'confirmed' });
      assert.equal(await lastWorkflowTaskWorker(client, started.json.swap_id), survivor, 'the surviving worker completed the swap');

      // The payment arrives; the surviving worker records it.
      const sim = createControlClient(info.simulator!.url);
      await sim.completeLink(created.json.payment_ref);
      await eventually(async () => (await api(gw1, 'GET', `/v1/payment-links/${created.json.link_id}`)).json?.state === 'paid', 60_000, `${created.json.link_id} paid`);
      assert.equal(await lastWorkflowTaskWorker(client, created.json.link_id), survivor);

      // Exactly once at the provider, the crash notwithstanding.
      const swapLedger = await sim.ledger({ ref: swapRef });
      assert.deepEqual(swapLedger.requests.map((r) => r.endpoint).sort(), ['swap.confirm', 'swap.init']);
      const linkLedger = await sim.ledger({ ref: linkRef });
      assert.equal(linkLedger.requests.filter((r) => r.endpoint === 'link.create').length, 1);
    } finally {
      await connection.close();
    }
  });

  test('mpf cluster down stops everything in reverse order and no process of the topology is left', async (t) => {
    const pids = [info.pid, info.postgres!.pid, info.temporal!.pid, info.ui!.pid, info.simulator!.pid, ...info.workers.map((w) => w.pid), ...info.gateways.map((g) => g.pid)];
    // PostgreSQL's backends and every other process of the run carry its marker.
    const before = processesOfRun(info.runId);
    assert.ok(before.length >= pids.length - 2, `processes of the run: ${before.join(', ')}`);
    const t0 = Date.now();
    const down = await runMpf(['cluster', 'down', '--state-dir', stateDir], { ...process.env }, { timeoutMs: 120_000 });
    t.diagnostic(`mpf cluster down: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.equal(down.code, 0, down.stdout + down.stderr);
    assert.match(down.stdout, /no process left/);
    assert.equal(await upExit, 0, up.output());
    const output = up.output();
    const order = ['gateways', 'workers', 'simulator', 'temporal-ui', 'temporal', 'postgresql'].map((n) => output.indexOf(`stopped ${n} (`));
    assert.ok(order.every((i) => i > 0), `every tier says it stopped:\n${output}`);
    assert.deepEqual([...order].sort((a, b) => a - b), order, 'stopped in reverse start order');
    assert.match(output, /stopped in [\d.]+ s; no process left/);
    for (const pid of [...pids, ...before]) assert.ok(!isRunning(pid), `pid ${pid} still runs`);
    assert.deepEqual(processesOfRun(info.runId), []);
    assert.ok(!fs.existsSync(info.secretsDir), 'the run’s secrets are removed with its data');
  });
});
