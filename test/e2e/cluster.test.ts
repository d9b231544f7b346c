/**
 * The production topology, natively. `mpf cluster up` is started ONCE for this file, as a
 * user starts it (a child process; its printed output is what the tests read): PostgreSQL, the
 * schema job, the Temporal server on PostgreSQL (persistence and visibility), the namespace job,
 * Temporal Web, the simulator, 2 workers and 2 gateways, every connection to Temporal mutual TLS
 * with the certificates of the cluster's private CA. Then both flows through each gateway, a
 * worker killed mid-flow, visibility in PostgreSQL, and `mpf cluster down` leaving nothing behind.
 * The cluster runs as users run it now: every call to its Temporal API is authorised by the
 * identity provider's tokens (the default), so where this file acts as the operator — the SDK, the
 * `temporal` CLI, `mpf` from cluster.env, Temporal Web's API — the operator signs in as a person
 * (test/helpers/cluster-auth.ts) and sends the token beside the operator's certificate; a
 * certificate alone is refused. No token is printed.
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
import { Agent, request } from 'undici';
import { payloadToJson } from '../../src/codec/codec-server';
import { isRunning, processesOfRun } from '../../tools/cluster/processes';
import type { ClusterInfo } from '../../tools/cluster/state';
import { clientTls, issueCertificate, prepareTls } from '../../tools/cluster/tls';
import { API_KEYS, apiKeyFile, type ApiKeyRole, KEYRING_FILE, SECRET_FILES, TLS_FILES } from '../../tools/cluster/topology';
import { tlsDiagnosis } from '../../src/temporal/connection';
import { createControlClient } from '../../src/simulator/control-client';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { linkToPaid, swapToConfirmed, type FieldTarget } from '../helpers/field';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, http } from '../helpers/gateway';
import { asOperator, clusterShellEnv, connectAsOperator, JWT_PATTERN, operatorCliEnv, personToken, signInOperatorShell } from '../helpers/cluster-auth';
import { cleanUpCluster, runMpf, startClusterForTest, type MpfProcess } from '../helpers/processes';
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
const keyOf = (role: ApiKeyRole) => fs.readFileSync(path.join(info.secretsDir, apiKeyFile(role)), 'utf8').trim();
const target = (gatewayUrl: string): FieldTarget => ({ gatewayUrl, apiKey, simulatorUrl: info.simulator!.url });
const api = (gatewayUrl: string, method: string, p: string, body?: unknown) => gatewayCaller(gatewayUrl, apiKey).api(method, p, body);

/**
 * The wallet PIN, sent as a PIN page sends it. The user's wrong-PIN budget may have lived on a
 * worker that was just killed or restarted: until its workflow moves to a live worker (the sticky
 * queue's timeout) the PIN gate refuses the PIN with 503 pin_budget_unavailable and Retry-After,
 * having sent nothing, and the page sends it again.
 */
async function submitPin(gatewayUrl: string, swap: { swap_id: string; pin_token: string }) {
  const send = () => gatewayCaller(gatewayUrl).call('POST', `/v1/swaps/${swap.swap_id}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${swap.pin_token}` } });
  let answer = await send();
  for (let i = 0; i < 6 && answer.status === 503 && answer.json?.error === 'pin_budget_unavailable'; i++) {
    await new Promise((r) => setTimeout(r, Number(answer.headers['retry-after']) * 1000));
    answer = await send();
  }
  return answer;
}

/** cluster.env as `set -a; . cluster.env; set +a` loads it in a shell: the operator's settings (addresses, NAME_FILE and certificate paths, the signed-in operator's token). */
const clusterEnv = (): Record<string, string> => clusterShellEnv(info);
/** The operator's certificate of the cluster's CA, alone (no token). */
const operatorTls = () => clientTls(path.join(info.tlsDir, 'operator'));

/** The Temporal CLI against the cluster, as an operator runs it with cluster.env's settings (`cliEnv`: operatorCliEnv); JSON output parsed. */
function temporalCli(cliEnv: Record<string, string>, args: string[]): unknown {
  const out = execFileSync(provisionTemporalCli(), [...args, '--address', info.temporal!.address, '--namespace', 'default', '-o', 'json'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: stateDir, ...cliEnv },
  });
  return JSON.parse(out || 'null');
}

/** An https request to Temporal Web's codec endpoint, trusting the cluster's CA (as an operator's browser that trusts it). */
async function codecCall(url: string, o: { method: 'OPTIONS' | 'POST'; headers: Record<string, string>; body?: unknown }): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const dispatcher = new Agent({ connect: { ca: fs.readFileSync(path.join(info.tlsDir, 'operator', 'ca.pem')) } });
  try {
    const res = await request(url, {
      method: o.method, dispatcher,
      headers: { ...o.headers, ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  } finally {
    await dispatcher.close();
  }
}

const UNAUTHENTICATED = 16;

/** The identities (pid@host, the SDK's default) of the workers that completed the workflow's tasks, in order. */
async function workflowTaskWorkers(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((e) => e.workflowTaskCompletedEventAttributes?.identity).filter((x): x is string => Boolean(x));
}

/** pid of the worker whose identity (pid@host, the SDK's default) completed the workflow's latest task. */
async function lastWorkflowTaskWorker(client: Client, workflowId: string): Promise<number> {
  const identities = await workflowTaskWorkers(client, workflowId);
  const last = identities.at(-1);
  assert.ok(last, `${workflowId} has no completed workflow task`);
  return Number(last.split('@')[0]);
}

describe('the production topology on loopback (mpf cluster up: PostgreSQL, Temporal with mTLS, Temporal Web, simulator, 2 workers, 2 gateways)', () => {
  before(
    async () => {
      const t0 = Date.now();
      // As users run it: MPF_CLUSTER_AUTH unset (every call authorised by the IdP's tokens).
      const cluster = startClusterForTest({ prefix: 'cluster-test', workers: 2, gateways: 2, env: { MPF_CLUSTER_AUTH: undefined }, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      upExit = new Promise((resolve) => up.child.once('exit', (code) => resolve(code)));
      info = await cluster.ready;
      startedIn = Date.now() - t0;
      apiKey = keyOf('backend');
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(() => cleanUpCluster(up, stateDir));

  test('mpf cluster up prints every address and "cluster ready", each service runs on 127.0.0.1 as compose runs it, every Temporal call is authorised by default, and no secret or token is printed', (t) => {
    t.diagnostic(`mpf cluster up: ready in ${(startedIn / 1000).toFixed(1)} s (as measured by this test, node start included)`);
    const output = up.output();
    assert.equal(info.status, 'ready');
    // Without MPF_CLUSTER_AUTH: every call authorised by the IdP's tokens, and no warning of the certificates-only mode.
    assert.equal(info.auth, true, 'cluster.json says every call is authorised');
    assert.match(output, /mTLS: client certificates required; every call authorised by the IdP's JWTs/);
    assert.doesNotMatch(output, /MPF_CLUSTER_AUTH=0/);
    assert.doesNotMatch(output, JWT_PATTERN, 'no token is printed');
    assert.equal(info.workers.length, 2);
    assert.equal(info.gateways.length, 2);
    const lines: Array<[string, string]> = [
      ['Temporal gRPC', info.temporal!.address],
      ['Temporal Web', info.ui!.url],
      ['identity provider', info.idp!.issuer],
      ['codec (Temporal Web)', info.codec!.url],
      ['gateway-1', info.gateways[0]!.url],
      ['gateway-2', info.gateways[1]!.url],
      ['simulator API', info.simulator!.url],
      ['simulator checkout', info.simulator!.checkoutUrl],
      ['PostgreSQL', `127.0.0.1:${info.postgres!.port}`],
      ['worker-1', `pid ${info.workers[0]!.pid}`],
      ['worker-2', `pid ${info.workers[1]!.pid}`],
    ];
    for (const [label, value] of lines) {
      const quoted = (x: string) => x.replace(/[.()/]/g, '\\$&');
      assert.match(output, new RegExp(`^ {2}${quoted(label)} +${quoted(value)}\\b`, 'm'), `${label} ${value} is printed`);
      if (label !== 'PostgreSQL' && !label.startsWith('worker')) assert.match(value, /^(https?:\/\/)?127\.0\.0\.1:\d+(\/codec)?$/, label);
    }
    // Every process of the topology runs.
    const pids = [info.postgres!.pid, info.temporal!.pid, info.ui!.pid, info.idp!.pid, info.codec!.pid, info.simulator!.pid, ...info.workers.map((w) => w.pid), ...info.gateways.map((g) => g.pid)];
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

  test('mpf cluster up ships least privilege: a keyring of a backend, a read-only and an operator key, each in its own 0600 file; the backend key is refused /v1/admin/*, the read-only key a start, the operator key resolves', async () => {
    const files = [KEYRING_FILE, ...API_KEYS.map((k) => k.file)];
    for (const f of files) assert.equal(fs.statSync(path.join(info.secretsDir, f)).mode & 0o777, 0o600, `${f} is mode 0600`);
    assert.ok(!fs.existsSync(path.join(info.secretsDir, 'gateway_api_key')), 'no single key of every right is made');
    const keyring = JSON.parse(fs.readFileSync(path.join(info.secretsDir, KEYRING_FILE), 'utf8')) as Array<{ id: string; role: string }>;
    assert.deepEqual(keyring.map((e) => [e.id, e.role]), API_KEYS.map((k) => [k.id, k.role]));
    const output = up.output();
    for (const k of API_KEYS) assert.ok(!output.includes(keyOf(k.role)), `the ${k.role} key appears in the output of mpf cluster up`);
    // No gateway was given the legacy single key: the keyring file only.
    const environ = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    for (const g of info.gateways) {
      const e = environ(g.pid);
      assert.ok(e.includes(`GATEWAY_API_KEYS_FILE=${path.join(info.secretsDir, KEYRING_FILE)}`), g.name);
      assert.ok(!e.some((kv) => kv.startsWith('GATEWAY_API_KEY=') || kv.startsWith('GATEWAY_API_KEY_FILE=')), `${g.name} has a legacy key`);
    }
    const gw = info.gateways[1]!.url;
    const as = (role: ApiKeyRole) => gatewayCaller(gw, keyOf(role));
    const resolve = { outcome: 'confirmed', provider_reference: 'SIM-NONE', note: 'checked on the provider' };
    // The backend key: flows yes, /v1/admin/* no.
    const list = await as('backend').api('GET', '/v1/admin/reconciliations');
    assert.equal(list.status, 403, JSON.stringify(list.json));
    assert.match(String(list.json?.message), /role operator/);
    const backendResolve = await as('backend').api('POST', '/v1/admin/flows/swap-no-such-flow/resolve', resolve);
    assert.equal(backendResolve.status, 403, JSON.stringify(backendResolve.json));
    // The read-only key: reads yes, a start no.
    const start = await as('read_only').api('POST', '/v1/swaps', swapBody(uniqueRef('ro')));
    assert.equal(start.status, 403, JSON.stringify(start.json));
    assert.match(String(start.json?.message), /role backend/);
    assert.equal((await as('read_only').api('GET', '/v1/swaps?limit=1')).status, 200);
    // The operator key: lists reconciliations, and a resolve passes the role check (404: no such flow).
    const opList = await as('operator').api('GET', '/v1/admin/reconciliations');
    assert.equal(opList.status, 200, JSON.stringify(opList.json));
    const opResolve = await as('operator').api('POST', '/v1/admin/flows/swap-no-such-flow/resolve', resolve);
    assert.equal(opResolve.status, 404, JSON.stringify(opResolve.json));
  });

  test("the operator's shell from cluster.env works as the runbook writes it: the operator signs in (login.ts), then mpf reads the *_FILE secrets, mpf sim and temporal are found and carry the operator's token", { timeout: 120_000 }, (t) => {
    const envFile = path.join(stateDir, 'cluster.env');
    const shell = (cmd: string) =>
      spawnSync('bash', ['-c', `set -a; . "$1"; set +a; ${cmd}`, 'sh', envFile], { cwd: path.resolve(__dirname, '..', '..'), env: { PATH: '/usr/bin:/bin', HOME: stateDir }, encoding: 'utf8', timeout: 90_000 });
    const text = fs.readFileSync(envFile, 'utf8');
    assert.match(text, new RegExp(`^MPF_SIMULATOR_URL=${info.simulator!.url.replace(/\./g, '\\.')}$`, 'm'));
    // cluster.env reads the operator's token from the file login.ts writes; it holds no token itself.
    assert.ok(text.includes(`TEMPORAL_API_KEY="$(cat '${path.join(stateDir, 'tokens', 'operator')}' 2>/dev/null)"`), 'cluster.env reads the operator\'s token file into TEMPORAL_API_KEY');
    assert.doesNotMatch(text, JWT_PATTERN, 'cluster.env holds no token');
    // Before signing in, the certificate alone is refused, `temporal` naming the missing token.
    const refused = shell('temporal workflow list --limit 1 -o json');
    assert.notEqual(refused.status, 0, 'temporal with the operator\'s certificate alone was let in');
    assert.match(refused.stderr, /no access token/);
    const catsRefused = shell('node bin/mpf.cjs categories');
    assert.notEqual(catsRefused.status, 0, 'mpf with the operator\'s certificate alone was let in');
    t.diagnostic(`mpf categories before signing in: ${catsRefused.stderr.trim().split('\n').at(-1)}`);
    signInOperatorShell(info);
    const cats = shell('node bin/mpf.cjs categories');
    assert.equal(cats.status, 0, `${cats.stdout}\n${cats.stderr}`);
    const wf = shell('temporal workflow list --limit 1 -o json');
    assert.equal(wf.status, 0, `${wf.stdout}\n${wf.stderr}`);
    const sim = shell('node bin/mpf.cjs sim --help');
    assert.equal(sim.status, 0, sim.stderr);
    // The operator's key, as the README's curl line uses it.
    const curl = shell('curl -s -o /dev/null -w "%{http_code}" -H "x-api-key: $GATEWAY_API_KEY" "$GATEWAY_PUBLIC_URL/v1/admin/reconciliations"');
    assert.equal(curl.stdout, '200', curl.stderr);
    assert.doesNotMatch(text, /mpfk_/, 'cluster.env holds no key');
    // The operator key is mpf's credential only while no one signed in: the shell holds one credential.
    assert.ok(text.includes(`MPF_API_KEY_FILE="$([ -s '${path.join(stateDir, 'tokens', 'operator')}' ] || printf %s '${path.join(info.secretsDir, apiKeyFile('operator'))}')"`), 'cluster.env sets MPF_API_KEY_FILE while no one signed in');
    assert.equal(shell('printf %s "$MPF_API_KEY_FILE"').stdout, '', 'signed in: no API key beside the person\'s token');
  });

  test('mpf cluster up makes a private CA and one certificate per component with openssl: files 0600 in 0700 directories, each signed by the CA, the CA key only in ca/', () => {
    assert.match(up.output(), /certificates +private CA and 8 new certificate\(s\) in /);
    assert.equal(fs.statSync(info.tlsDir).mode & 0o777, 0o700);
    // …and, with calls authorised, a server certificate for Temporal Web's codec endpoint (https), issued once the IdP is up.
    const components = ['frontend', 'internode', 'worker-1', 'worker-2', 'gateway-1', 'gateway-2', 'temporal-ui', 'operator', 'codec'];
    assert.deepEqual(fs.readdirSync(info.tlsDir).sort(), ['ca', ...components].sort());
    const caCert = path.join(info.tlsDir, 'ca', 'cert.pem');
    for (const c of components) {
      const dir = path.join(info.tlsDir, c);
      assert.equal(fs.statSync(dir).mode & 0o777, 0o700, `${c}/ is mode 0700`);
      assert.deepEqual(fs.readdirSync(dir).sort(), Object.values(TLS_FILES).sort(), `${c}/ holds its key, its certificate and the CA's`);
      for (const f of fs.readdirSync(dir)) assert.equal(fs.statSync(path.join(dir, f)).mode & 0o777, 0o600, `${c}/${f} is mode 0600`);
      const verify = spawnSync('openssl', ['verify', '-CAfile', caCert, path.join(dir, TLS_FILES.cert)], { encoding: 'utf8' });
      assert.equal(verify.stdout.trim(), `${path.join(dir, TLS_FILES.cert)}: OK`, verify.stderr);
      const subject = execFileSync('openssl', ['x509', '-in', path.join(dir, TLS_FILES.cert), '-noout', '-subject'], { encoding: 'utf8' });
      assert.match(subject, new RegExp(`CN ?= ?${c}\\b`));
      assert.ok(!fs.readFileSync(path.join(dir, TLS_FILES.cert), 'utf8').includes('PRIVATE KEY'));
    }
    // The temporal server's config names the frontend's and the internode certificates and requires client certificates.
    const config = fs.readFileSync(path.join(stateDir, 'temporal', 'config', 'mpf-cluster.yaml'), 'utf8');
    assert.match(config, /requireClientAuth: true/);
    assert.ok(config.includes(path.join(info.tlsDir, 'frontend', 'cert.pem')) && config.includes(path.join(info.tlsDir, 'internode', 'cert.pem')));
    // Each app process was given its own certificate through the envconfig settings.
    const environ = (pid: number) => Object.fromEntries(fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    for (const p of [...info.workers, ...info.gateways]) {
      const e = environ(p.pid);
      assert.equal(e.TEMPORAL_TLS_CLIENT_CERT_PATH, path.join(info.tlsDir, p.name, 'cert.pem'), p.name);
      assert.equal(e.TEMPORAL_TLS_CLIENT_KEY_PATH, path.join(info.tlsDir, p.name, 'key.pem'), p.name);
      assert.equal(e.TEMPORAL_TLS_SERVER_CA_CERT_PATH, path.join(info.tlsDir, p.name, 'ca.pem'), p.name);
      assert.equal(e.TEMPORAL_TLS_SERVER_NAME, 'temporal', p.name);
    }
  });

  test('the frontend refuses a plain-text gRPC client and a client whose certificate comes from another CA, and says which TLS setting to fix; a client of the cluster\'s CA connects', async (t) => {
    const address = info.temporal!.address;
    // A raw plain-text gRPC client: refused.
    await assert.rejects(Connection.connect({ address, connectTimeout: 3_000 }));
    // A certificate from another CA (made the same way, by openssl, in a directory of its own).
    const otherState = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-other-ca-'));
    try {
      const other = await prepareTls(otherState, [{ name: 'rogue', kind: 'client' }], false, { logDir: otherState, runId: 'other-ca' });
      const rogue = path.join(other.dir, 'rogue');
      // Trusting our frontend (the cluster's CA file), but presenting the other CA's certificate.
      const rogueTls = { ...clientTls(rogue), serverRootCACertificate: fs.readFileSync(path.join(info.tlsDir, 'operator', 'ca.pem')) };
      await assert.rejects(Connection.connect({ address, connectTimeout: 3_000, tls: rogueTls }));
      assert.match((await tlsDiagnosis(address, rogueTls)) ?? '', /refused this client's certificate.*TEMPORAL_TLS_CLIENT_CERT_PATH/);

      // What a user sees: `mpf swap list` with cluster.env but without its TLS settings, then with another CA's certificate.
      // Without the token either: TEMPORAL_API_KEY alone (even empty, as cluster.env sets it before signing in) makes
      // the SDK's envconfig turn TLS on, so the client is no longer plain text (below).
      const base = Object.fromEntries(Object.entries(clusterEnv()).filter(([k]) => !k.startsWith('TEMPORAL_TLS_') && k !== 'TEMPORAL_API_KEY'));
      const plain = await runMpf(['swap', 'list'], { PATH: process.env.PATH, HOME: stateDir, ...base }, { timeoutMs: 120_000 });
      t.diagnostic(`plain text: ${plain.stderr.trim()}`);
      assert.notEqual(plain.code, 0);
      assert.match(plain.stderr, /the frontend requires TLS with a client certificate and this client has no TLS settings: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/);
      assert.doesNotMatch(plain.stderr, /tonic|hyper::|transport::Error|Failed to connect before the deadline/);
      // With TEMPORAL_API_KEY but no TLS settings: TLS with the system's CAs, which do not know the cluster's.
      const tokenOnly = await runMpf(['swap', 'list'], { PATH: process.env.PATH, HOME: stateDir, ...base, TEMPORAL_API_KEY: 'not-a-token' }, { timeoutMs: 120_000 });
      t.diagnostic(`a token, no TLS settings: ${tokenOnly.stderr.trim().split('\n').at(-1)}`);
      assert.notEqual(tokenOnly.code, 0);
      assert.match(tokenOnly.stderr, /this client does not trust the frontend's certificate: set TEMPORAL_TLS_SERVER_CA_CERT_PATH/);
      const foreign = await runMpf(['swap', 'list'], {
        PATH: process.env.PATH, HOME: stateDir, ...clusterEnv(),
        TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(rogue, 'cert.pem'), TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(rogue, 'key.pem'),
      }, { timeoutMs: 120_000 });
      t.diagnostic(`another CA: ${foreign.stderr.trim()}`);
      assert.notEqual(foreign.code, 0);
      assert.match(foreign.stderr, /the frontend refused this client's certificate .*check TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/);
      // A certificate path that names no file: refused before any connection, naming the setting.
      const missing = await runMpf(['swap', 'list'], { PATH: process.env.PATH, HOME: stateDir, ...clusterEnv(), TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(rogue, 'nope.pem') }, { timeoutMs: 60_000 });
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read .*nope\.pem \(ENOENT\)/);
      // The Temporal CLI without a certificate is refused too.
      const cli = spawnSync(provisionTemporalCli(), ['workflow', 'list', '--address', address, '--namespace', 'default'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: stateDir }, timeout: 60_000 });
      assert.notEqual(cli.status, 0, 'the Temporal CLI without a certificate was let in');
    } finally {
      fs.rmSync(otherState, { recursive: true, force: true });
    }
    // A certificate of the cluster's CA without a token: the TLS handshake passes, every call is refused (UNAUTHENTICATED, naming the missing token).
    const certOnly = await Connection.connect({ address, connectTimeout: 10_000, tls: operatorTls() });
    try {
      const e = await certOnly.workflowService.describeNamespace({ namespace: 'default' }).then(
        () => assert.fail("the operator's certificate alone was let in: every call needs a token"),
        (x: unknown) => x as { code?: number; details?: string; message?: string },
      );
      assert.equal(e.code, UNAUTHENTICATED, `a certificate alone: gRPC code ${e.code} (${e.message})`);
      assert.match(e.details ?? e.message ?? '', /DescribeNamespace refused: no access token/);
    } finally {
      await certOnly.close();
    }
    // The positive control: the operator's certificate and the operator's token (signed in as a person).
    const described = await asOperator(info, (c) => c.workflowService.describeNamespace({ namespace: 'default' }));
    assert.equal(described.namespaceInfo?.name, 'default');
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

  test("Temporal Web (ui-server 2.42.1) requires sign-in, serves the namespace to a signed-in person's token, and decodes through the codec endpoint that authorises that token", async () => {
    const settings = await http('GET', `${info.ui!.url}/api/v1/settings`);
    assert.equal(settings.status, 200);
    assert.equal(settings.json.Version, '2.42.1');
    assert.equal(settings.json.Auth.Enabled, true, 'Temporal Web signs people in');
    // Its codec endpoint is the https process that checks the person's token (not a gateway's capability URL), and it is sent the token.
    const endpoint = settings.json.Codec.Endpoint as string;
    assert.equal(endpoint, info.codec!.url);
    assert.match(endpoint, /^https:\/\/127\.0\.0\.1:\d+\/codec$/);
    assert.equal(settings.json.Codec.PassAccessToken, true);
    // Its API: 401 without a token; with a person's access token (what its page sends once signed in), the server's answer.
    const anonymous = await http('GET', `${info.ui!.url}/api/v1/namespaces/default`);
    assert.equal(anonymous.status, 401, anonymous.text);
    const viewer = await personToken(info, 'viewer');
    const ns = await http('GET', `${info.ui!.url}/api/v1/namespaces/default`, { headers: { authorization: `Bearer ${viewer}` } });
    assert.equal(ns.status, 200, ns.text);
    // The header is passed on to the frontend, whose authorizer decides: a token it refuses is refused here too.
    const forged = await http('GET', `${info.ui!.url}/api/v1/namespaces/default`, { headers: { authorization: 'Bearer not-a-token' } });
    assert.equal(forged.status, 401, forged.text);
    assert.match(forged.text, /DescribeNamespace refused: access token refused/);
    // The codec endpoint answers Temporal Web's origin (CORS preflight), the Authorization header included.
    const preflight = await codecCall(`${endpoint}/decode`, {
      method: 'OPTIONS',
      headers: { origin: info.ui!.url, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-namespace' },
    });
    assert.ok(preflight.status < 300, `preflight ${preflight.status}`);
    assert.equal(preflight.headers['access-control-allow-origin'], info.ui!.url);
    // …and decodes what the workers encrypted, for a person who may read the namespace: a swap's input, as Temporal Web would ask for it.
    const swapId = swapIds[0];
    assert.ok(swapId, 'the flows test confirmed a swap');
    const history = await asOperator(info, (connection) => new Client({ connection, namespace: 'default' }).workflow.getHandle(swapId).fetchHistory());
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    assert.ok(input, 'the swap has an input payload');
    const encoding = Buffer.from(input.metadata?.encoding ?? new Uint8Array()).toString();
    assert.notEqual(encoding, 'json/plain', 'history holds the input encrypted');
    const body = { payloads: [payloadToJson(input as Payload)] };
    const noToken = await codecCall(`${endpoint}/decode`, { method: 'POST', headers: { origin: info.ui!.url, 'x-namespace': 'default' }, body });
    assert.equal(noToken.status, 401, 'the codec endpoint decodes nothing without a token');
    const decoded = await codecCall(`${endpoint}/decode`, { method: 'POST', headers: { origin: info.ui!.url, 'x-namespace': 'default', authorization: `Bearer ${viewer}` }, body });
    assert.equal(decoded.status, 200, decoded.text);
    const plain = (JSON.parse(decoded.text) as { payloads: Array<{ metadata: { encoding: string }; data: string }> }).payloads[0]!;
    assert.equal(Buffer.from(plain.metadata.encoding, 'base64').toString(), 'json/plain');
    assert.match(Buffer.from(plain.data, 'base64').toString(), new RegExp(swapId.replace(/^swap-/, '')));
  });

  test("the operator's mpf and temporal commands work with cluster.env loaded once the operator signed in (its certificate and token), and Temporal Web lists the flows for the same token", async () => {
    const swapId = swapIds[0];
    assert.ok(swapId, 'the flows test confirmed a swap');
    // As the runbook writes it: sign in (the token lasts 15 minutes), then source cluster.env.
    signInOperatorShell(info);
    const env: Record<string, string | undefined> = clusterEnv();
    assert.equal(env.TEMPORAL_TLS_CLIENT_CERT_PATH, path.join(info.tlsDir, 'operator', 'cert.pem'));
    assert.ok(/^eyJ/.test(env.TEMPORAL_API_KEY ?? ''), "cluster.env put the operator's token in TEMPORAL_API_KEY");
    const list = await runMpf(['swap', 'list', '--json'], env, { timeoutMs: 120_000 });
    assert.equal(list.code, 0, list.stderr);
    assert.ok(list.stdout.includes(swapId), `mpf swap list shows ${swapId}:\n${list.stdout}`);
    const status = await runMpf(['swap', 'status', swapId, '--json'], env, { timeoutMs: 120_000 });
    assert.equal(status.code, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).state, 'confirmed');
    // `temporal workflow list` with only cluster.env's settings: the address, the TLS ones and the token.
    const out = execFileSync(provisionTemporalCli(), ['workflow', 'list', '-o', 'json', '--query', `WorkflowId = '${swapId}'`], { encoding: 'utf8', env });
    assert.deepEqual((JSON.parse(out) as Array<{ execution: { workflowId: string } }>).map((r) => r.execution.workflowId), [swapId]);
    // Temporal Web's server reaches the frontend with its own certificate, and the person's token (sent as its page sends it) decides what it may list.
    const query = `${info.ui!.url}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(`WorkflowId = '${swapId}'`)}`;
    const anonymous = await http('GET', query);
    assert.equal(anonymous.status, 401, 'Temporal Web lists nothing before signing in');
    const web = await http('GET', query, { headers: { authorization: `Bearer ${env.TEMPORAL_API_KEY}` } });
    assert.equal(web.status, 200, web.text);
    assert.deepEqual((web.json.executions as Array<{ execution: { workflowId: string } }>).map((e) => e.execution.workflowId), [swapId]);
  });

  test('the flows are in PostgreSQL visibility, found by the MpfState search attribute', async () => {
    const swapRef = uniqueRef('cl-vis');
    await swapToConfirmed(target(info.gateways[1]!.url), swapRef);
    const cliEnv = await operatorCliEnv(info);
    const listed = await eventually(
      async () => {
        const rows = temporalCli(cliEnv, ['workflow', 'list', '--query', `MpfState = 'confirmed' AND MpfFlowKind = 'swap' AND MpfTxnRef = '${swapRef}'`]) as Array<{ execution: { workflowId: string } }> | null;
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

  test('a worker killed (SIGKILL) while a swap awaits its PIN and a link awaits payment: the flows finish on a live worker, and up starts the killed one again', async () => {
    const connection = await connectAsOperator(info);
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
      assert.ok(info.workers.some((w) => w.pid === victim), `the swap ran on worker pid ${victim}, one of ${info.workers.map((w) => w.pid).join(', ')}`);
      process.kill(victim, 'SIGKILL');
      await eventually(async () => !isRunning(victim), 10_000, `worker ${victim} gone`);
      await up.waitFor(new RegExp(`worker-\\d \\(pid ${victim}\\) exited \\(SIGKILL\\); restarting it`), 10_000);

      // The PIN through the other gateway; a live worker (the other one, or the killed one started again) confirms.
      const outcome = await submitPin(gw2, started.json);
      assert.equal(outcome.status, 200, outcome.text);
      assert.deepEqual(outcome.json, { outcome: 'confirmed', state: 'confirmed' });
      assert.notEqual(await lastWorkflowTaskWorker(client, started.json.swap_id), victim, `a live worker completed the swap (workflow tasks completed by: ${(await workflowTaskWorkers(client, started.json.swap_id)).join(', ')}; killed ${victim})`);

      // The payment arrives; the surviving worker records it.
      const sim = createControlClient(info.simulator!.url);
      await sim.completeLink(created.json.payment_ref);
      await eventually(async () => (await api(gw1, 'GET', `/v1/payment-links/${created.json.link_id}`)).json?.state === 'paid', 60_000, `${created.json.link_id} paid`);
      assert.notEqual(await lastWorkflowTaskWorker(client, created.json.link_id), victim);
      await up.waitFor(/worker-\d restarted \(pid \d+/, 60_000);

      // Exactly once at the provider, the crash notwithstanding.
      const swapLedger = await sim.ledger({ ref: swapRef });
      assert.deepEqual(swapLedger.requests.map((r) => r.endpoint).sort(), ['swap.confirm', 'swap.init']);
      const linkLedger = await sim.ledger({ ref: linkRef });
      assert.equal(linkLedger.requests.filter((r) => r.endpoint === 'link.create').length, 1);
    } finally {
      await connection.close();
    }
  });

  test('the CA is rotated without a restart of the server: a certificate of a new CA is refused until the frontend\'s CA file holds both CAs, then accepted, and the gateways keep answering', async (t) => {
    const address = info.temporal!.address;
    const nextState = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-next-ca-'));
    try {
      const next = await prepareTls(nextState, [{ name: 'operator', kind: 'client' }], false, { logDir: nextState, runId: 'next-ca' });
      const nextTls = { ...clientTls(path.join(next.dir, 'operator')), serverRootCACertificate: fs.readFileSync(path.join(info.tlsDir, 'operator', 'ca.pem')) };
      assert.match((await tlsDiagnosis(address, nextTls)) ?? '', /refused this client's certificate/);
      // The frontend's client CA file: the new CA, then the old one (read again every refreshInterval, 30 s;
      // Temporal notices a changed CA file by its first certificate, so the new CA goes first).
      const bundle = path.join(info.tlsDir, 'frontend', 'ca.pem');
      fs.writeFileSync(`${bundle}.new`, fs.readFileSync(path.join(next.dir, 'ca', 'cert.pem'), 'utf8') + fs.readFileSync(bundle, 'utf8'), { mode: 0o600 });
      fs.renameSync(`${bundle}.new`, bundle);
      const t0 = Date.now();
      await eventually(async () => (await tlsDiagnosis(address, nextTls)) === undefined || undefined, 120_000, 'a certificate of the new CA accepted');
      // The new CA's certificate carries the operator's token as any client does: the call is authorised.
      const conn = await Connection.connect({ address, connectTimeout: 10_000, tls: nextTls, apiKey: await personToken(info, 'operator') });
      try {
        await conn.workflowService.getSystemInfo({});
        assert.equal((await conn.workflowService.describeNamespace({ namespace: 'default' })).namespaceInfo?.name, 'default');
      } finally {
        await conn.close();
      }
      t.diagnostic(`the frontend accepted the new CA ${((Date.now() - t0) / 1000).toFixed(1)} s after its CA file changed, with no restart (pid ${info.temporal!.pid} still running)`);
      assert.ok(isRunning(info.temporal!.pid));
      // …and the old CA's certificates still work: flows go on.
      const swapRef = uniqueRef('cl-ca-rotate');
      await swapToConfirmed(target(info.gateways[1]!.url), swapRef);
    } finally {
      fs.rmSync(nextState, { recursive: true, force: true });
    }
  });

  test("workers' certificates are rotated without stopping flows: a new key and certificate from the same CA for each, then `mpf cluster restart` one at a time", async (t) => {
    info = JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo;
    const gw = info.gateways[0]!.url;
    // A swap in flight across the rotation.
    const ref = uniqueRef('cl-rotate');
    const started = await api(gw, 'POST', '/v1/swaps', swapBody(ref));
    assert.equal(started.status, 201, started.text);
    const newPids: number[] = [];
    for (const w of info.workers) {
      const before = fs.readFileSync(path.join(info.tlsDir, w.name, 'cert.pem'), 'utf8');
      await issueCertificate(info.tlsDir, { name: w.name, kind: 'client' }, { logDir: info.logDir, runId: info.runId });
      assert.notEqual(fs.readFileSync(path.join(info.tlsDir, w.name, 'cert.pem'), 'utf8'), before, `a new certificate for ${w.name}`);
      const t0 = Date.now();
      const r = await runMpf(['cluster', 'restart', w.name, '--state-dir', stateDir], { ...process.env }, { timeoutMs: 200_000 });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const now = (JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo).components![w.name]!.pid;
      t.diagnostic(`${w.name}: new certificate, restarted in ${Date.now() - t0} ms (pid ${now})`);
      newPids.push(now);
    }
    const outcome = await submitPin(gw, started.json);
    assert.equal(outcome.status, 200, outcome.text);
    assert.deepEqual(outcome.json, { outcome: 'confirmed', state: 'confirmed' });
    const connection = await connectAsOperator(info);
    try {
      assert.ok(newPids.includes(await lastWorkflowTaskWorker(new Client({ connection, namespace: 'default' }), started.json.swap_id)), 'a worker with a new certificate confirmed it');
    } finally {
      await connection.close();
    }
  });

  test('mpf cluster down stops everything in reverse order and no process of the topology is left', async (t) => {
    const pids = [info.pid, info.postgres!.pid, info.temporal!.pid, info.ui!.pid, info.idp!.pid, info.codec!.pid, info.simulator!.pid, ...info.workers.map((w) => w.pid), ...info.gateways.map((g) => g.pid)];
    // PostgreSQL's backends and every other process of the run carry its marker.
    const before = processesOfRun(info.runId);
    assert.ok(before.length >= pids.filter(isRunning).length - 2, `processes of the run: ${before.join(', ')}`);
    const t0 = Date.now();
    const down = await runMpf(['cluster', 'down', '--state-dir', stateDir], { ...process.env }, { timeoutMs: 120_000 });
    t.diagnostic(`mpf cluster down: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.equal(down.code, 0, down.stdout + down.stderr);
    assert.match(down.stdout, /no process left/);
    assert.equal(await upExit, 0, up.output());
    const output = up.output();
    const order = ['gateways', 'workers', 'simulator', 'temporal-ui', 'temporal', 'codec', 'idp', 'postgresql'].map((n) => output.indexOf(`stopped ${n} (`));
    assert.ok(order.every((i) => i > 0), `every tier says it stopped:\n${output}`);
    assert.deepEqual([...order].sort((a, b) => a - b), order, 'stopped in reverse start order');
    assert.match(output, /stopped in [\d.]+ s; no process left/);
    for (const pid of [...pids, ...before]) assert.ok(!isRunning(pid), `pid ${pid} still runs`);
    assert.deepEqual(processesOfRun(info.runId), []);
    assert.ok(!fs.existsSync(info.secretsDir), 'the run’s secrets are removed with its data');
    assert.ok(!fs.existsSync(info.tlsDir), 'the run’s CA and certificates are removed with its data');
    // The operator signed in earlier in this file: the person's token goes with the run too.
    assert.ok(!fs.existsSync(path.join(stateDir, 'tokens')), 'people’s tokens are removed with the run’s data');
  });
});
