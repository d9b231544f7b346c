/**
 * Temporal's database down under a running topology: `mpf cluster up` (PostgreSQL, Temporal with
 * mTLS, a worker, 2 gateways) is started once, and PostgreSQL stops answering: its processes are
 * frozen (SIGSTOP), as a hung or partitioned database would be — a killed one is started again by
 * `up` within seconds (its supervisor), too soon to observe an outage. Every gateway route answers
 * within ANSWER_BOUND_MS with 503 temporal_persistence_unavailable naming the database and
 * Retry-After (the frontend still answers; workers are healthy: neither is blamed). PostgreSQL then
 * answers again (SIGCONT), and every gateway serves again; how long that took is printed and
 * bounded by RECOVERY_BOUND_MS. Last, PostgreSQL is SIGKILLed: `up` starts it again and every
 * gateway serves within the same bound (docs/operations/temporal-outages.md). The cluster runs as
 * users run it, every call to its Temporal API authorised by the identity provider's tokens (the
 * default; the IdP does not depend on PostgreSQL, so the gateways keep their tokens through the
 * outage). If the topology cannot be started, every test fails.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { isRunning } from '../../tools/cluster/processes';
import type { ClusterInfo } from '../../tools/cluster/state';
import { apiKeyFile } from '../../tools/cluster/topology';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { swapToConfirmed } from '../helpers/field';
import { gatewayCaller, type HttpAnswer } from '../helpers/gateway';
import { cleanUpCluster, startClusterForTest, type MpfProcess } from '../helpers/processes';
import { eventually } from '../helpers/stack';

const UP_TIMEOUT_MS = 15 * 60_000;
/** What docs/operations/temporal-outages.md promises: every route answers within 5 s while Temporal's database is down. */
const ANSWER_BOUND_MS = 5_000;
/** Every gateway serves again within this long of PostgreSQL accepting connections (measured: see the diagnostics). */
const RECOVERY_BOUND_MS = 30_000;

let stateDir: string;
let up: MpfProcess;
let info: ClusterInfo;
let apiKey: string;
/** The frozen PostgreSQL processes (postmaster and its children), to thaw in `after` if a test failed. */
let frozen: number[] | undefined;
/** The postmaster and its children (each backend is a session of its own: a process group signal misses them). */
const postgresProcesses = (postmaster: number): number[] => [
  postmaster,
  ...fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after the last ')'.
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster ? [Number(d)] : [];
    } catch {
      return [];
    }
  }),
];
const signalAll = (pids: number[], sig: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  }
};

describe("the gateways while Temporal's database is down (mpf cluster up, PostgreSQL frozen then thawed, then killed and restarted by up)", () => {
  before(
    async () => {
      const cluster = startClusterForTest({ prefix: 'cluster-dbdown', workers: 1, gateways: 2, timeoutMs: UP_TIMEOUT_MS });
      ({ up, stateDir } = cluster);
      info = await cluster.ready;
      assert.equal(info.auth, true, 'the cluster authorises every Temporal call (the default)');
      apiKey = fs.readFileSync(path.join(info.secretsDir, apiKeyFile('operator')), 'utf8').trim();
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(async () => {
    if (frozen) signalAll(frozen, 'SIGCONT');
    await cleanUpCluster(up, stateDir);
  });

  const api = (gw: string, method: string, p: string, body?: unknown, headers?: Record<string, string>) => gatewayCaller(gw, apiKey).api(method, p, body, headers);

  let swapId: string;
  let pinToken: string;
  let linkId: string;
  let confirmedId: string;

  test('with PostgreSQL not answering, every route of every gateway answers within 5 s: 503 temporal_persistence_unavailable naming the database, with Retry-After', { timeout: 300_000 }, async (t) => {
    const gw1 = info.gateways[0]!.url;
    // A swap awaiting its PIN, a link awaiting payment and a confirmed swap, made while all is well.
    const swap = await api(gw1, 'POST', '/v1/swaps', swapBody(uniqueRef('dbd-swap')));
    assert.equal(swap.status, 201, swap.text);
    swapId = swap.json.swap_id;
    pinToken = swap.json.pin_token;
    const link = await api(gw1, 'POST', '/v1/payment-links', linkBody(uniqueRef('dbd-link')));
    assert.equal(link.status, 201, link.text);
    linkId = link.json.link_id;
    const confirmedRef = uniqueRef('dbd-done');
    await swapToConfirmed({ gatewayUrl: gw1, apiKey, simulatorUrl: info.simulator!.url }, confirmedRef);
    confirmedId = `swap-${confirmedRef}`;
    for (const g of info.gateways) assert.equal((await gatewayCaller(g.url).call('GET', '/readyz')).status, 200, `${g.name} ready before the outage`);

    const pgPid = info.postgres!.pid;
    frozen = postgresProcesses(pgPid);
    signalAll(frozen, 'SIGSTOP');
    t.diagnostic(`PostgreSQL (pid ${pgPid} and its ${frozen.length - 1} children) frozen with SIGSTOP`);

    const routes = (gw: string): Array<[string, () => Promise<HttpAnswer>]> => [
      ['GET swap', () => api(gw, 'GET', `/v1/swaps/${swapId}`)],
      ['GET confirmed swap', () => api(gw, 'GET', `/v1/swaps/${confirmedId}`)],
      ['GET link', () => api(gw, 'GET', `/v1/payment-links/${linkId}`)],
      ['list swaps', () => api(gw, 'GET', '/v1/swaps?limit=1')],
      ['list links', () => api(gw, 'GET', '/v1/payment-links?limit=1')],
      ['POST swap', () => api(gw, 'POST', '/v1/swaps', swapBody(uniqueRef('dbd-new')))],
      ['POST swap with Idempotency-Key', () => api(gw, 'POST', '/v1/swaps', swapBody(uniqueRef('dbd-idem')), { 'idempotency-key': uniqueRef('k') })],
      ['POST link', () => api(gw, 'POST', '/v1/payment-links', linkBody(uniqueRef('dbd-newlink')))],
      ['PIN', () => gatewayCaller(gw).call('POST', `/v1/swaps/${swapId}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${pinToken}` } })],
      ['cancel swap', () => api(gw, 'POST', `/v1/swaps/${swapId}/cancel`, {})],
      ['cancel link', () => api(gw, 'POST', `/v1/payment-links/${linkId}/cancel`, {})],
      ['PIN page summary', () => gatewayCaller(gw).call('GET', `/v1/swaps/${swapId}/summary`, { headers: { authorization: `Bearer ${pinToken}` } })],
      ['notification', () => gatewayCaller(gw).call('POST', `/v1/notifications/swap/${swapId}/${'t'.repeat(43)}`, { body: { status: 'successful' } })],
      ['reconciliations', () => api(gw, 'GET', '/v1/admin/reconciliations')],
      ['categories', () => api(gw, 'GET', '/v1/categories')],
      ['readyz', () => gatewayCaller(gw).call('GET', '/readyz')],
    ];
    // Every route of both gateways at once, as traffic would arrive.
    const answers = await Promise.all(
      info.gateways.flatMap((g) =>
        routes(g.url).map(async ([name, call]) => {
          const t0 = Date.now();
          const res = await call();
          return { gateway: g.name, name, res, took: Date.now() - t0 };
        }),
      ),
    );
    t.diagnostic(`answers with PostgreSQL down: ${answers.map((a) => `${a.gateway} ${a.name} ${a.res.status} in ${a.took} ms`).join('; ')}`);
    // A request alone shares no probe with others: the longest wait (the gate's interval, then its probes).
    const gw2 = info.gateways[1]!;
    for (const name of ['GET swap', 'list swaps', 'POST swap', 'readyz']) {
      const [, call] = routes(gw2.url).find(([n]) => n === name)!;
      const t0 = Date.now();
      const res = await call();
      answers.push({ gateway: `${gw2.name} (alone)`, name, res, took: Date.now() - t0 });
    }
    t.diagnostic(`alone: ${answers.filter((a) => a.gateway.endsWith('(alone)')).map((a) => `${a.name} ${a.res.status} in ${a.took} ms`).join('; ')}`);
    for (const { gateway, name, res, took } of answers) {
      const what = `${gateway} ${name}: ${res.status} ${res.text}`;
      assert.equal(res.status, 503, what);
      assert.equal(res.json.error, 'temporal_persistence_unavailable', what);
      assert.match(res.json.message, /Temporal's persistence \(its database\) is unavailable/, what);
      assert.equal(res.headers['retry-after'], '5', what);
      assert.ok(took <= ANSWER_BOUND_MS, `${gateway} ${name} answered in ${took} ms (bound ${ANSWER_BOUND_MS} ms)`);
    }
  });

  test('once PostgreSQL is back, every gateway serves again (reads, lists, starts, readiness) within 30 s', { timeout: 300_000 }, async (t) => {
    assert.ok(swapId, 'the outage test ran');
    signalAll(frozen!, 'SIGCONT');
    frozen = undefined;
    const back = Date.now();
    t.diagnostic(`PostgreSQL answering again (SIGCONT)`);

    const recovered = await Promise.all(
      info.gateways.map(async (g) => {
        await eventually(async () => {
          const checks = await Promise.all([
            api(g.url, 'GET', `/v1/swaps/${confirmedId}`),
            api(g.url, 'GET', `/v1/payment-links/${linkId}`),
            api(g.url, 'GET', '/v1/swaps?limit=1'),
            gatewayCaller(g.url).call('GET', '/readyz'),
          ]);
          return checks.every((c) => c.status === 200);
        }, RECOVERY_BOUND_MS + 30_000, `${g.name} serving again`);
        return { name: g.name, ms: Date.now() - back };
      }),
    );
    t.diagnostic(`serving again after PostgreSQL was back: ${recovered.map((r) => `${r.name} in ${r.ms} ms`).join(', ')}`);
    for (const r of recovered) assert.ok(r.ms <= RECOVERY_BOUND_MS, `${r.name} served again ${r.ms} ms after PostgreSQL (bound ${RECOVERY_BOUND_MS} ms)`);
    // New flows start again through every gateway; the confirmed swap's view is its final one.
    for (const g of info.gateways) {
      const started = await api(g.url, 'POST', '/v1/swaps', swapBody(uniqueRef('dbd-after')));
      assert.equal(started.status, 201, `${g.name}: ${started.text}`);
      const done = await api(g.url, 'GET', `/v1/swaps/${confirmedId}`);
      assert.equal(done.json.state, 'confirmed', done.text);
    }
  });

  test('PostgreSQL SIGKILLed is started again by `up`, and every gateway serves again within the same bound', { timeout: 300_000 }, async (t) => {
    const clusterJson = () => JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo;
    const pgPid = clusterJson().components!.postgresql!.pid;
    const killed = Date.now();
    process.kill(pgPid, 'SIGKILL');
    const restartedPid = await eventually(async () => {
      const p = clusterJson().components?.postgresql?.pid;
      return p && p !== pgPid && isRunning(p) ? p : undefined;
    }, 60_000, 'PostgreSQL started again by up');
    t.diagnostic(`PostgreSQL ${pgPid} SIGKILLed; up started it again (pid ${restartedPid}) in ${Date.now() - killed} ms`);
    const recovered = await Promise.all(
      info.gateways.map(async (g) => {
        await eventually(async () => {
          const checks = await Promise.all([api(g.url, 'GET', `/v1/swaps/${confirmedId}`), api(g.url, 'GET', '/v1/swaps?limit=1'), gatewayCaller(g.url).call('GET', '/readyz')]);
          return checks.every((c) => c.status === 200);
        }, RECOVERY_BOUND_MS + 30_000, `${g.name} serving again`);
        return { name: g.name, ms: Date.now() - killed };
      }),
    );
    t.diagnostic(`serving again after the kill: ${recovered.map((r) => `${r.name} in ${r.ms} ms`).join(', ')}`);
    for (const r of recovered) assert.ok(r.ms <= RECOVERY_BOUND_MS, `${r.name} served again ${r.ms} ms after the kill (bound ${RECOVERY_BOUND_MS} ms)`);
    const started = await api(info.gateways[1]!.url, 'POST', '/v1/swaps', swapBody(uniqueRef('dbd-after-kill')));
    assert.equal(started.status, 201, started.text);
  });
});
