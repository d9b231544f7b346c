/**
 * The switch of `mpf cluster up`'s authorisation, MPF_CLUSTER_AUTH (tools/cluster/main.ts
 * authFromEnvironment). Unset (or 1), every call to the Temporal API is authorised by the identity
 * provider's tokens: the default, on which the other cluster tests run. Any value but 0 or 1 is
 * refused before anything starts (exit 2, naming the variable). `0` turns authorisation off —
 * certificates only, the break-glass mode of docs/security.md, where any certificate of the
 * cluster's CA may do anything — and `up` says so in a warning line.
 *
 * This file is about the certificates-only mode, so its cluster (1 worker, 1 gateway) is started
 * with MPF_CLUSTER_AUTH=0, once; if it cannot start, every test of it fails (never skips).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ClusterInfo } from '../../tools/cluster/state';
import { apiKeyFile } from '../../tools/cluster/topology';
import { provisionTemporalCli } from '../../src/temporal/provision';
import { asOperator, clusterShellEnv, operatorCliEnv } from '../helpers/cluster-auth';
import { swapToConfirmed } from '../helpers/field';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, http } from '../helpers/gateway';
import { cleanUpCluster, runMpf, startClusterForTest, type MpfProcess } from '../helpers/processes';

const UP_TIMEOUT_MS = 15 * 60_000;

describe('MPF_CLUSTER_AUTH: a value other than 0 or 1 (or unset) is refused before mpf cluster up starts anything', () => {
  const stateDirs: string[] = [];
  after(() => {
    for (const d of stateDirs) fs.rmSync(d, { recursive: true, force: true });
  });

  /** `mpf cluster up` on a fresh state dir with `env` added to this process's environment. */
  async function upWith(env: Record<string, string>) {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-cluster-switch-refused-'));
    stateDirs.push(stateDir);
    const run = await runMpf(['cluster', 'up', '--workers', '1', '--gateways', '1', '--state-dir', stateDir], { ...process.env, ...env }, { timeoutMs: 60_000 });
    return { ...run, stateDir };
  }

  for (const value of ['bogus', 'true']) {
    test(`mpf cluster up with MPF_CLUSTER_AUTH=${value} exits 2 with a message naming MPF_CLUSTER_AUTH and what it takes, and starts nothing`, async () => {
      const r = await upWith({ MPF_CLUSTER_AUTH: value });
      assert.equal(r.code, 2, `exit code ${r.code}:\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^mpf cluster up: MPF_CLUSTER_AUTH: "${value}" is neither 1 \\(every call to Temporal authorised, the default\\) nor 0 \\(certificates only\\); nothing was started$`, 'm'));
      assert.doesNotMatch(r.stdout, /production topology|binaries|certificates/, 'nothing was begun');
      // Nothing was started or written: no cluster.json, no pid file, no logs, no certificates.
      assert.deepEqual(fs.readdirSync(r.stateDir), [], 'the state dir is left empty');
    });
  }

  test('mpf cluster up with MPF_CLUSTER_TOKEN_TTL_SECONDS below 10 exits 2 naming that setting, and starts nothing', async () => {
    const r = await upWith({ MPF_CLUSTER_TOKEN_TTL_SECONDS: '5' });
    assert.equal(r.code, 2, `exit code ${r.code}:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /^mpf cluster up: MPF_CLUSTER_TOKEN_TTL_SECONDS: "5" is not a whole number of seconds of at least 10; nothing was started$/m);
    assert.deepEqual(fs.readdirSync(r.stateDir), []);
  });
});

describe('mpf cluster up with MPF_CLUSTER_AUTH=0: certificates only, said in a warning line; the operator\'s certificate alone acts, recorded under the client\'s identity', () => {
  let stateDir: string;
  let up: MpfProcess;
  let info: ClusterInfo;

  before(
    async () => {
      // Off on purpose: this describe is about the certificates-only mode.
      const cluster = startClusterForTest({ prefix: 'cluster-switch-off', workers: 1, gateways: 1, env: { MPF_CLUSTER_AUTH: '0' }, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(() => cleanUpCluster(up, stateDir));

  test('up prints the warning line starting "MPF_CLUSTER_AUTH=0:" before its first step, and cluster.json, cluster.env and the server line say no call is authorised', () => {
    const output = up.output();
    const warning = /^ {2}MPF_CLUSTER_AUTH=0: the Temporal API authorises no call; any certificate of the cluster's CA may terminate, cancel or reset any flow, and Temporal Web has no sign-in$/m.exec(output);
    assert.ok(warning, `the warning line is printed:\n${output}`);
    const firstStep = output.search(/^ {2}binaries /m);
    assert.ok(firstStep > warning.index, 'the warning comes before the first step');
    assert.notEqual(info.auth, true, 'cluster.json does not say calls are authorised');
    assert.equal(info.codec, undefined, 'no codec endpoint for people\'s tokens');
    assert.match(output, /mTLS: client certificates required\)/);
    assert.doesNotMatch(output, /every call authorised by the IdP's JWTs/);
    const envText = fs.readFileSync(info.envFile, 'utf8');
    assert.doesNotMatch(envText, /TEMPORAL_API_KEY/, 'cluster.env asks for no token');
    // Workers and gateways fetch no token.
    const environ = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    for (const p of [...info.workers, ...info.gateways]) assert.ok(!environ(p.pid).some((kv) => kv.startsWith('TEMPORAL_OIDC_')), `${p.name} has no token settings`);
  });

  test("the operator's certificate alone describes a swap and `temporal workflow terminate` from cluster.env ends it, recorded under the CLI's own identity, not a person", async () => {
    const started = await gatewayCaller(info.gateways[0]!.url, fs.readFileSync(path.join(info.secretsDir, apiKeyFile('backend')), 'utf8').trim()).api('POST', '/v1/swaps', swapBody(uniqueRef('switch-off')));
    assert.equal(started.status, 201, started.text);
    const swapId = started.json.swap_id as string;
    // operatorCliEnv / asOperator give the certificate alone on a cluster that authorises no call.
    assert.deepEqual(Object.keys(await operatorCliEnv(info)).filter((k) => k === 'TEMPORAL_API_KEY'), []);
    const d = await asOperator(info, (c) => c.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: swapId } }));
    assert.equal(d.workflowExecutionInfo?.status, 1, 'running');
    const runId = d.workflowExecutionInfo?.execution?.runId ?? '';
    const env = clusterShellEnv(info);
    const terminate = spawnSync(provisionTemporalCli(), ['workflow', 'terminate', '--workflow-id', swapId, '--reason', 'break glass'], { encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(terminate.status, 0, `${terminate.stdout}\n${terminate.stderr}`);
    const events = await asOperator(info, async (c) => (await c.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId: swapId, runId } })).history?.events ?? []);
    const by = events.flatMap((e) => (e.workflowExecutionTerminatedEventAttributes ? [e.workflowExecutionTerminatedEventAttributes.identity ?? ''] : []));
    assert.equal(by.length, 1, 'one terminate in the history');
    assert.match(by[0]!, /^\d+@/, 'the CLI\'s own identity (pid@host): no signed-in person is named');
  });

  test('Temporal Web has no sign-in: its settings say so, its API lists flows without a token, and its codec endpoint is gateway-1\'s capability URL', async () => {
    const settings = await http('GET', `${info.ui!.url}/api/v1/settings`);
    assert.equal(settings.status, 200);
    assert.equal(settings.json.Auth.Enabled, false);
    assert.ok((settings.json.Codec.Endpoint as string).startsWith(`${info.gateways[0]!.url}/codec/web/`), 'the capability URL of gateway-1');
    const list = await http('GET', `${info.ui!.url}/api/v1/namespaces/default/workflows`);
    assert.equal(list.status, 200, list.text);
  });

  test('flows run with certificates only: a swap is confirmed through the gateway', async () => {
    await swapToConfirmed({ gatewayUrl: info.gateways[0]!.url, apiKey: fs.readFileSync(path.join(info.secretsDir, apiKeyFile('backend')), 'utf8').trim(), simulatorUrl: info.simulator!.url }, uniqueRef('switch-off-flow'));
  });
});
