/**
 * The Temporal API of `mpf cluster up` authorises every call by the identity provider's tokens
 * (its default), with the project's authorizer built into the server
 * (tools/cluster/temporal-server/authz.go): the viewer reads but cannot terminate, cancel, signal,
 * reset or update; the operator can, and the flow's history names the operator; a gateway's token
 * starts, signals and queries but cannot terminate, cancel or poll (each PERMISSION_DENIED naming
 * what it needs); a token of another issuer, a forged, an expired one, one for another audience
 * and no token are refused as UNAUTHENTICATED with a message naming what is wrong; workers and
 * gateways run flows through more than two token lifetimes (20 s here) with none failing. `mpf cluster up` is started once for this file
 * (1 worker, 1 gateway); if it cannot start, every test fails (never skips). No token is printed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { parse as parseYaml } from 'yaml';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { renewingToken } from '../../src/temporal/tokens';
import { swapStateQuery } from '../../src/workflows/messages';
import { idpSecretFiles, TEMPORAL_AUDIENCE, type MachineClientId, type PersonId } from '../../tools/cluster/idp';
import { personLogin } from '../../tools/cluster/login';
import type { ClusterInfo } from '../../tools/cluster/state';
import { clientTls } from '../../tools/cluster/tls';
import { apiKeyFile, temporalClientTlsEnv } from '../../tools/cluster/topology';
import { linkToPaid, swapToConfirmed, type FieldTarget } from '../helpers/field';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller } from '../helpers/http';
import { cleanUpCluster, startClusterForTest, type MpfProcess } from '../helpers/processes';
import type * as JoseNs from 'jose' with { 'resolution-mode': 'import' };

type Jose = typeof JoseNs;
const UP_TIMEOUT_MS = 15 * 60_000;
/** Every token's lifetime in this file (people's and machines'): renewal is exercised within a minute. */
const TOKEN_TTL_S = 20;
const PERMISSION_DENIED = 7;
const UNAUTHENTICATED = 16;

let stateDir: string;
let up: MpfProcess;
let info: ClusterInfo;

const secretOf = (file: string) => fs.readFileSync(path.join(info.secretsDir, file), 'utf8').trim();
const personToken = async (p: PersonId) => (await personLogin({ issuer: info.idp!.issuer, user: p, password: secretOf(idpSecretFiles.password(p)) })).accessToken;
async function machineToken(c: MachineClientId): Promise<string> {
  const t = await renewingToken({ issuer: info.idp!.issuer, clientId: c, clientSecret: secretOf(idpSecretFiles.clientSecret(c)), audience: TEMPORAL_AUDIENCE });
  t.stop();
  return t.current();
}
const field = (): FieldTarget => ({ gatewayUrl: info.gateways[0]!.url, apiKey: secretOf(apiKeyFile('backend')), simulatorUrl: info.simulator!.url });

/** A connection with the operator's certificate (transport, component identity) and `token` (or none) as the bearer token. */
async function connect(token: string | undefined): Promise<Connection> {
  return Connection.connect({ address: info.temporal!.address, tls: clientTls(path.join(info.tlsDir, 'operator')), ...(token !== undefined ? { apiKey: token } : {}) });
}

/** Runs `call` with a connection holding `token`, closed after. */
async function as<T>(token: string | undefined, call: (c: Connection) => Promise<T>): Promise<T> {
  const c = await connect(token);
  try {
    return await call(c);
  } finally {
    await c.close();
  }
}

/**
 * `call` is refused with gRPC PERMISSION_DENIED (a known caller without the role) or, for
 * `code` UNAUTHENTICATED, a caller whose token is missing or refused — never INTERNAL, UNKNOWN or
 * UNAVAILABLE — and a message matching `why`.
 */
async function refused(call: Promise<unknown>, why: RegExp, what: string, code = PERMISSION_DENIED): Promise<void> {
  const e = await call.then(
    () => assert.fail(`${what}: allowed, but it must be refused`),
    (x: unknown) => x as { code?: number; details?: string; message?: string },
  );
  assert.equal(e.code, code, `${what}: gRPC code ${e.code} (${e.message}), not ${code === PERMISSION_DENIED ? 'PERMISSION_DENIED' : 'UNAUTHENTICATED'}`);
  assert.match(e.details ?? e.message ?? '', why, what);
}

/** The provisioned `temporal` CLI with the operator's certificate and `token` in TEMPORAL_API_KEY, as cluster.env sets them. */
function cli(token: string, args: string[]): { code: number | null; out: string } {
  const r = spawnSync(provisionTemporalCli(), [...args, '--address', info.temporal!.address, '--namespace', 'default'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: stateDir, TEMPORAL_API_KEY: token, ...temporalClientTlsEnv(path.join(info.tlsDir, 'operator')) },
    timeout: 60_000,
  });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

/** A swap started through the gateway (its workflow waits for the PIN). */
async function startSwap(): Promise<string> {
  const t = field();
  const started = await gatewayCaller(t.gatewayUrl, t.apiKey).api('POST', '/v1/swaps', swapBody(uniqueRef('authz')));
  assert.equal(started.status, 201, started.text);
  return started.json.swap_id as string;
}

const exec = (workflowId: string) => ({ namespace: 'default', execution: { workflowId } });

async function historyIdentities(
  workflowId: string,
  attr: 'workflowExecutionTerminatedEventAttributes' | 'workflowExecutionCancelRequestedEventAttributes' | 'workflowExecutionSignaledEventAttributes',
  runId?: string,
): Promise<string[]> {
  const token = await personToken('viewer');
  // A terminated flow's run (its next run, which the workers start to carry it on, has no terminate).
  const h = await as(token, (c) => c.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, ...(runId ? { runId } : {}) } }));
  return (h.history?.events ?? []).flatMap((e) => (e[attr]?.identity ? [e[attr]!.identity!] : []));
}

/** The run id a flow has now (read by the viewer). */
async function runIdOf(workflowId: string): Promise<string> {
  const d = await as(await personToken('viewer'), (c) => c.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId } }));
  return d.workflowExecutionInfo?.execution?.runId ?? '';
}

/** A JWT for the Temporal API's audience, signed by `key` (kid `kid`), as an attacker or another IdP would make one. */
async function signedToken(o: { key: JoseNs.CryptoKey | Uint8Array | JoseNs.KeyObject; kid: string; issuer: string; audience?: string; expiresIn: string | number; sub?: string }): Promise<string> {
  const jose = (await import('jose')) as Jose;
  return new jose.SignJWT({ permissions: ['default:admin', 'temporal-system:admin'] })
    .setProtectedHeader({ alg: 'ES256', kid: o.kid })
    .setSubject(o.sub ?? 'mallory')
    .setIssuer(o.issuer)
    .setAudience(o.audience ?? TEMPORAL_AUDIENCE)
    .setIssuedAt(Math.floor(Date.now() / 1000) - 3600)
    .setExpirationTime(o.expiresIn)
    .sign(o.key);
}

describe('the Temporal API of mpf cluster up authorises every call by the IdP\'s tokens: viewers read, operators act, gateways never terminate', () => {
  before(
    async () => {
      const cluster = startClusterForTest({ prefix: 'cluster-authz', workers: 1, gateways: 1, env: { MPF_CLUSTER_TOKEN_TTL_SECONDS: String(TOKEN_TTL_S) }, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
      assert.equal(info.auth, true, 'cluster.json says calls are authorised');
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(() => cleanUpCluster(up, stateDir));

  test("the viewer's token lists, describes, queries and reads a swap's history, but `temporal workflow terminate` with it is refused, naming the operator's role", async () => {
    const swapId = await startSwap();
    const viewer = await personToken('viewer');
    const described = cli(viewer, ['workflow', 'describe', '--workflow-id', swapId]);
    assert.equal(described.code, 0, `viewer describes: ${described.out}`);
    assert.match(described.out, new RegExp(swapId));
    const listed = cli(viewer, ['workflow', 'list', '--query', `WorkflowId = '${swapId}'`]);
    assert.equal(listed.code, 0, `viewer lists: ${listed.out}`);
    assert.match(listed.out, new RegExp(swapId));
    await as(viewer, async (c) => {
      const h = await c.workflowService.getWorkflowExecutionHistory(exec(swapId));
      assert.ok((h.history?.events ?? []).length > 0, 'the viewer reads the history');
      const q = await c.workflowService.queryWorkflow({ ...exec(swapId), query: { queryType: swapStateQuery.name } });
      assert.ok(q.queryResult?.payloads?.length, 'the viewer queries the swap');
    });
    const terminate = cli(viewer, ['workflow', 'terminate', '--workflow-id', swapId, '--reason', 'a viewer tries']);
    assert.notEqual(terminate.code, 0, 'the viewer must not terminate');
    // The CLI prints the server's message (its quotes escaped).
    assert.match(terminate.out, /TerminateWorkflowExecution refused to viewer \(namespace \\?"default\\?": read\).*default:admin/);
    const d = await as(viewer, (c) => c.workflowService.describeWorkflowExecution(exec(swapId)));
    assert.equal(d.workflowExecutionInfo?.status, 1, 'the swap is still running');
  });

  test('the viewer cannot cancel, signal, reset or update a swap either: each refused with PERMISSION_DENIED naming what it needs', async () => {
    const swapId = await startSwap();
    const viewer = await personToken('viewer');
    await as(viewer, async (c) => {
      const s = c.workflowService;
      await refused(s.requestCancelWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, requestId: randomUUID() }), /RequestCancelWorkflowExecution refused to viewer.*"default:admin"/, 'viewer cancel');
      await refused(s.signalWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, signalName: 'pin', requestId: randomUUID() }), /SignalWorkflowExecution refused to viewer.*"default:write"/, 'viewer signal');
      await refused(s.resetWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, reason: 'viewer', requestId: randomUUID() }), /ResetWorkflowExecution refused to viewer.*"default:admin"/, 'viewer reset');
      await refused(
        s.updateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, request: { meta: { updateId: randomUUID() }, input: { name: 'anything' } } }),
        /UpdateWorkflowExecution refused to viewer.*"default:write"/,
        'viewer update',
      );
      await refused(s.startWorkflowExecution({ namespace: 'default', workflowId: `viewer-${randomUUID()}`, workflowType: { name: 'swap' }, taskQueue: { name: 'mpf' }, requestId: randomUUID() }), /StartWorkflowExecution refused to viewer/, 'viewer start');
      const d = await s.describeWorkflowExecution(exec(swapId));
      assert.equal(d.workflowExecutionInfo?.status, 1, 'the swap is still running');
    });
  });

  test("the operator's token cancels one swap and terminates another, and each flow's history names the operator whatever identity the client claimed", async () => {
    const [toCancel, toTerminate] = [await startSwap(), await startSwap()];
    const terminatedRun = await runIdOf(toTerminate);
    const operator = await personToken('operator');
    // A client that claims to be someone else: the history still names who signed in.
    await as(operator, (c) => c.workflowService.requestCancelWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: toCancel }, identity: 'administrator', requestId: randomUUID() }));
    const terminate = cli(operator, ['workflow', 'terminate', '--workflow-id', toTerminate, '--reason', 'operator test']);
    assert.equal(terminate.code, 0, `operator terminates: ${terminate.out}`);
    const cancelledBy = await historyIdentities(toCancel, 'workflowExecutionCancelRequestedEventAttributes');
    assert.equal(cancelledBy.length, 1, 'one cancel request in the history');
    assert.equal(cancelledBy[0], 'operator (administrator)', 'the signed-in subject first, the claimed identity only in brackets');
    const terminatedBy = await historyIdentities(toTerminate, 'workflowExecutionTerminatedEventAttributes', terminatedRun);
    assert.equal(terminatedBy.length, 1);
    assert.match(terminatedBy[0]!, /^operator \(.+\)$/, "the CLI's own identity (pid@host) follows the operator's subject");
  });

  test("the operator's shell signs in as a person (login.ts) and cluster.env hands the token to `temporal`: without it terminate is refused, with it done under the operator", async () => {
    const swapId = await startSwap();
    const run = await runIdOf(swapId);
    const inShell = (command: string) => spawnSync('bash', ['--norc', '--noprofile', '-c', `set -a; . '${info.envFile}'; set +a; ${command}`], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: stateDir }, timeout: 60_000 });
    const terminate = `temporal workflow terminate --workflow-id '${swapId}' --reason 'from the operator shell'`;
    const before = inShell(terminate);
    assert.notEqual(before.status, 0, 'no token before signing in');
    assert.match(before.stderr, /no access token/);
    const login = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'tools', 'cluster', 'login.ts'), '--user', 'operator', '--state-dir', stateDir, '--password-file', path.join(info.secretsDir, idpSecretFiles.password('operator'))], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(login.status, 0, login.stderr);
    assert.match(login.stdout, /signed in as operator until/);
    assert.doesNotMatch(`${login.stdout}${login.stderr}`, /eyJ[\w-]{10,}\./, 'login prints no token');
    const after = inShell(terminate);
    assert.equal(after.status, 0, after.stderr);
    const terminatedBy = await historyIdentities(swapId, 'workflowExecutionTerminatedEventAttributes', run);
    assert.deepEqual(terminatedBy.map((i) => i.split(' ')[0]), ['operator']);
  });

  test("a gateway's token starts, signals and queries, but cannot terminate, cancel, reset or poll a task queue; a worker's cannot terminate", async () => {
    const swapId = await startSwap();
    const gateway = await machineToken('mpf-gateway');
    await as(gateway, async (c) => {
      const s = c.workflowService;
      const q = await s.queryWorkflow({ ...exec(swapId), query: { queryType: swapStateQuery.name } });
      assert.ok(q.queryResult?.payloads?.length, 'the gateway queries');
      await refused(s.terminateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, reason: 'gateway' }), /TerminateWorkflowExecution refused to mpf-gateway \(namespace "default": write\).*"default:admin"/, 'gateway terminate');
      await refused(s.requestCancelWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, requestId: randomUUID() }), /refused to mpf-gateway/, 'gateway cancel');
      await refused(s.resetWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, reason: 'gateway', requestId: randomUUID() }), /refused to mpf-gateway/, 'gateway reset');
      await refused(s.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: info.temporal!.taskQueue }, identity: 'gateway' }), /PollWorkflowTaskQueue refused to mpf-gateway.*"default:worker"/, 'gateway poll');
    });
    const worker = await machineToken('mpf-worker');
    await as(worker, (c) => refused(c.workflowService.terminateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, reason: 'worker' }), /refused to mpf-worker/, 'worker terminate'));
    // The gateway's own routes (start, signal the PIN, query) work with its token: the swap confirms.
    await swapToConfirmed(field(), uniqueRef('authz-gw'));
  });

  test("the server's internode listeners (its internal frontend, history) refuse a gateway's and the operator's certificates, which would skip every token check there; the server's own internode certificate is taken", async () => {
    const swapId = await startSwap();
    // The ports of the server's own services, from the config `mpf cluster up` wrote for it.
    const config = parseYaml(fs.readFileSync(path.join(stateDir, 'temporal', 'config', 'mpf-cluster.yaml'), 'utf8')) as { services: Record<string, { rpc: { grpcPort: number } }> };
    const port = (service: string) => {
      const p = config.services[service]?.rpc.grpcPort;
      assert.ok(p, `${service}'s port in the server's config`);
      return p;
    };
    const internalFrontend = `127.0.0.1:${port('internal-frontend')}`;
    const history = `127.0.0.1:${port('history')}`;
    const internodeTls = (cert: string) => ({
      serverNameOverride: 'temporal-internode',
      serverRootCACertificate: fs.readFileSync(path.join(info.tlsDir, 'internode', 'ca.pem')),
      clientCertPair: { crt: fs.readFileSync(path.join(info.tlsDir, cert, 'cert.pem')), key: fs.readFileSync(path.join(info.tlsDir, cert, 'key.pem')) },
    });
    for (const cert of ['gateway-1', 'operator']) {
      for (const [what, address] of [['internal frontend', internalFrontend], ['history', history]] as const) {
        const attempt = Connection.connect({ address, connectTimeout: 5_000, tls: internodeTls(cert) }).then(async (c) => {
          try {
            // The internal frontend makes every caller an admin: a terminate here would be done.
            await c.workflowService.terminateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, reason: `${cert} at the ${what}` });
          } finally {
            await c.close();
          }
        });
        await assert.rejects(attempt, (e: Error) => !/terminat/i.test(e.message), `${cert}'s certificate at the ${what} was let in`);
      }
    }
    // The positive control: the internode certificate reaches the internal frontend (the server's own worker uses it).
    const own = await Connection.connect({ address: internalFrontend, connectTimeout: 10_000, tls: internodeTls('internode') });
    try {
      const d = await own.workflowService.describeWorkflowExecution(exec(swapId));
      assert.equal(d.workflowExecutionInfo?.execution?.workflowId, swapId);
    } finally {
      await own.close();
    }
    // Nothing of the above terminated the swap.
    const state = await as(await personToken('viewer'), (c) => c.workflowService.describeWorkflowExecution(exec(swapId)));
    assert.equal(state.workflowExecutionInfo?.status, 1, 'the swap is still running');
  });

  test('a token of another issuer, a forged one, an expired one, one for another audience and none are refused as UNAUTHENTICATED with the reason, never let through', async () => {
    const jose = (await import('jose')) as Jose;
    const swapId = await startSwap();
    const idpKey = JSON.parse(secretOf(idpSecretFiles.signingKey)) as JoseNs.JWK & { kid: string };
    const ours = await jose.importJWK(idpKey, 'ES256');
    const { privateKey: theirs } = await jose.generateKeyPair('ES256');
    const cases: Array<[string, string | undefined, RegExp]> = [
      ['another issuer', await signedToken({ key: theirs, kid: 'elsewhere-1', issuer: 'https://idp.elsewhere.invalid', expiresIn: '5m' }), /not signed by a key of this cluster's identity provider/],
      ['forged (our key id, another key)', await signedToken({ key: theirs, kid: idpKey.kid, issuer: info.idp!.issuer, expiresIn: '5m' }), /signature does not verify/],
      ['expired (signed by our IdP an hour ago)', await signedToken({ key: ours, kid: idpKey.kid, issuer: info.idp!.issuer, expiresIn: Math.floor(Date.now() / 1000) - 60, sub: 'operator' }), /expired/],
      ['for another audience', await signedToken({ key: ours, kid: idpKey.kid, issuer: info.idp!.issuer, audience: 'urn:something-else', expiresIn: '5m', sub: 'operator' }), /another audience/],
      ['not a JWT', 'not-a-token', /access token refused/],
      ['no token', undefined, /no access token/],
    ];
    for (const [what, token, why] of cases) {
      await as(token, async (c) => {
        await refused(c.workflowService.terminateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: swapId }, reason: what }), new RegExp(`TerminateWorkflowExecution refused: .*${why.source}`), `${what}: terminate`, UNAUTHENTICATED);
        await refused(c.workflowService.describeWorkflowExecution(exec(swapId)), why, `${what}: describe`, UNAUTHENTICATED);
      });
    }
    const stillRunning = await as(await personToken('viewer'), (c) => c.workflowService.describeWorkflowExecution(exec(swapId)));
    assert.equal(stillRunning.workflowExecutionInfo?.status, 1, 'no refused token terminated it');
  });

  test(`workers and gateways renew their tokens through more than two lifetimes (${TOKEN_TTL_S} s each) with 0 failed flows, while a person's token of the start has expired`, { timeout: 5 * 60_000 }, async (t) => {
    const early = await personToken('viewer');
    const t0 = Date.now();
    let flows = 0;
    const failures: string[] = [];
    while (Date.now() - t0 < (2 * TOKEN_TTL_S + 10) * 1000) {
      const ref = uniqueRef(`renew-${flows}`);
      try {
        await (flows % 2 === 0 ? swapToConfirmed(field(), ref) : linkToPaid(field(), ref));
      } catch (e) {
        failures.push(`${ref}: ${(e as Error).message.split('\n')[0]}`);
      }
      flows++;
    }
    t.diagnostic(`${flows} flows over ${((Date.now() - t0) / 1000).toFixed(0)} s, ${failures.length} failed`);
    assert.deepEqual(failures, [], 'no flow failed');
    assert.ok(flows >= 4, `${flows} flows ran`);
    for (const name of ['worker-1', 'gateway-1']) {
      const log = fs.readFileSync(path.join(info.logDir, `${name}.log`), 'utf8');
      const renewals = log.match(/temporal token: renewed for client/g)?.length ?? 0;
      assert.ok(renewals >= 2, `${name} renewed its token ${renewals} time(s), at least 2 expected`);
      assert.doesNotMatch(log, /eyJ[\w-]{10,}\.[\w-]{10,}/, `${name}'s log holds no token`);
    }
    await as(early, (c) => refused(c.workflowService.describeNamespace({ namespace: 'default' }), /DescribeNamespace refused: access token refused \(expired\)/, 'the token of the start', UNAUTHENTICATED));
    assert.doesNotMatch(up.output(), /eyJ[\w-]{10,}\.[\w-]{10,}/, 'mpf cluster up printed no token');
  });
});
