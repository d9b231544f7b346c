/**
 * Restarts of the production topology as an operator lives them (`mpf cluster up --keep-data`):
 * a crashed component is started again by `up` (compose's `restart: unless-stopped`), one is
 * restarted on demand (`mpf cluster restart`), and after `cluster down` / `cluster up --keep-data`
 * the flows parked before it still end true: the gateways and the simulator come back on their
 * ports (the notification URLs the provider holds and the pay_link the customer holds still point
 * somewhere), the simulator remembers the links it created, and PostgreSQL was stopped cleanly.
 * The cluster runs as users run it, every call to its Temporal API authorised by the identity
 * provider's tokens (the default): a worker or gateway started again fetches its own token again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ClusterInfo } from '../../tools/cluster/state';
import { apiKeyFile } from '../../tools/cluster/topology';
import { createControlClient } from '../../src/simulator/control-client';
import { linkBody, SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller } from '../helpers/gateway';
import { CLUSTER_READY, cleanUpCluster, runMpf, spawnMpf, type MpfProcess } from '../helpers/processes';
import { eventually } from '../helpers/stack';

const UP_TIMEOUT_MS = 15 * 60_000;
const READY = CLUSTER_READY;

let stateDir: string;
let up: MpfProcess | undefined;
let info: ClusterInfo;

const readInfo = (): ClusterInfo => JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo;
const apiKey = (): string => fs.readFileSync(path.join(stateDir, 'secrets', apiKeyFile('backend')), 'utf8').trim();
const environ = (pid: number): Record<string, string> =>
  Object.fromEntries(fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function clusterUp(): Promise<{ readyInS: number }> {
  up = spawnMpf(['cluster', 'up', '--workers', '1', '--gateways', '2', '--keep-data', '--app-env', 'SWAP_SETTLE_WAIT_SECONDS=7', '--state-dir', stateDir], {});
  const m = await up.waitFor(READY, UP_TIMEOUT_MS);
  info = readInfo();
  return { readyInS: Number(m[1]) };
}

async function clusterDown(): Promise<string> {
  const down = await runMpf(['cluster', 'down', '--state-dir', stateDir], { ...process.env }, { timeoutMs: 120_000 });
  assert.equal(down.code, 0, down.stdout + down.stderr);
  await up?.kill('SIGKILL');
  return down.stdout;
}

describe('mpf cluster restarts: crashes, `mpf cluster restart`, and down / up --keep-data with flows parked', () => {
  const link = uniqueRef('parked-link');
  const swap = uniqueRef('parked-swap');
  let paymentRef = '';
  let payLink = '';
  let pinToken = '';
  let first: ClusterInfo;

  before(
    async () => {
      stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-cluster-restart-'));
      process.once('exit', () => {
        if (up && up.child.exitCode === null) up.child.kill('SIGTERM');
      });
      await clusterUp();
      first = info;
    },
    { timeout: UP_TIMEOUT_MS + 60_000 },
  );

  after(() => cleanUpCluster(up, stateDir));

  test('cluster.json records each component with its command line, and --app-env and the token settings of each machine client reach every worker and gateway', () => {
    // Every call to Temporal is authorised by default: the IdP and Temporal Web's codec endpoint (people's tokens) are components too.
    assert.equal(info.auth, true, 'cluster.json says calls are authorised');
    const names = Object.keys(info.components ?? {}).sort();
    assert.deepEqual(names, ['codec', 'gateway-1', 'gateway-2', 'idp', 'postgresql', 'simulator', 'temporal', 'temporal-ui', 'worker-1']);
    assert.deepEqual(info.components!['gateway-1']!.command.slice(1), ['bin/mpf.cjs', 'gateway', '--port', new URL(info.gateways[0]!.url).port, '--host', '127.0.0.1']);
    for (const p of [...info.workers, ...info.gateways]) assert.equal(environ(p.pid).SWAP_SETTLE_WAIT_SECONDS, '7', p.name);
    for (const w of info.workers) assert.equal(environ(w.pid).TEMPORAL_OIDC_CLIENT_ID, 'mpf-worker', w.name);
    for (const g of info.gateways) assert.equal(environ(g.pid).TEMPORAL_OIDC_CLIENT_ID, 'mpf-gateway', g.name);
    assert.equal(environ(info.simulator!.pid).SIMULATOR_STATE_PATH, path.join(stateDir, 'simulator', 'state.json'));
  });

  test('flows are parked: a link awaiting payment and a swap awaiting its PIN', async () => {
    const gw = info.gateways[1]!.url; // the provider will notify gateway-2, which must come back on its port
    const l = await gatewayCaller(gw, apiKey()).api('POST', '/v1/payment-links', linkBody(link));
    assert.equal(l.status, 201, l.text);
    paymentRef = l.json.payment_ref;
    payLink = l.json.pay_link;
    const s = await gatewayCaller(gw, apiKey()).api('POST', '/v1/swaps', swapBody(swap));
    assert.equal(s.status, 201, s.text);
    pinToken = s.json.pin_token;
  });

  test('a crashed worker and a crashed simulator are started again by `up`, and the simulator remembers its links', async (t) => {
    const [worker, sim] = [info.workers[0]!.pid, info.simulator!.pid];
    process.kill(worker, 'SIGKILL');
    process.kill(sim, 'SIGKILL');
    const back = await eventually(async () => {
      const now = readInfo();
      const w = now.components?.['worker-1']?.pid;
      const s = now.components?.simulator?.pid;
      return w && s && w !== worker && s !== sim && alive(w) && alive(s) ? now : undefined;
    }, 90_000, 'worker-1 and the simulator restarted');
    t.diagnostic(`restarted: worker-1 ${worker} → ${back.components!['worker-1']!.pid}, simulator ${sim} → ${back.components!.simulator!.pid}`);
    assert.match(up!.output(), /worker-1 \(pid \d+\) exited \(SIGKILL\); restarting it/);
    assert.match(up!.output(), /simulator restarted \(pid \d+/);
    assert.equal(back.simulator!.url, first.simulator!.url, 'the simulator is back on its port');
    const ledger = await createControlClient(back.simulator!.url).ledger({ ref: link });
    assert.ok(ledger.effects.some((e) => e.kind === 'link.created'), 'the simulator still knows the parked link');
  });

  test('`mpf cluster restart gateway-1` starts it again on its own port, with its token settings', async () => {
    const before = readInfo().components!['gateway-1']!.pid;
    const r = await runMpf(['cluster', 'restart', 'gateway-1', '--state-dir', stateDir], { ...process.env }, { timeoutMs: 200_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /gateway-1 restarted in [\d.]+ s \(pid \d+\)/);
    const now = readInfo();
    assert.notEqual(now.components!['gateway-1']!.pid, before);
    assert.equal(now.gateways[0]!.url, first.gateways[0]!.url);
    assert.equal(environ(now.components!['gateway-1']!.pid).TEMPORAL_OIDC_CLIENT_ID, 'mpf-gateway', 'the restarted gateway fetches its own token');
    assert.equal((await gatewayCaller(now.gateways[0]!.url).call('GET', '/readyz')).status, 200);
    const unknown = await runMpf(['cluster', 'restart', 'gateway-9', '--state-dir', stateDir], { ...process.env }, { timeoutMs: 30_000 });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no component gateway-9; one of: .*gateway-1/);
  });

  test('after cluster down and up --keep-data, every port is the same, the parked link is paid and the parked swap confirmed', async (t) => {
    await clusterDown();
    assert.ok(!fs.existsSync(path.join(info.postgres!.dataDir, 'postmaster.pid')), 'PostgreSQL stopped cleanly');
    const { readyInS } = await clusterUp();
    t.diagnostic(`up --keep-data: ready in ${readyInS} s (same ports; with new ones the Temporal server waited ~50 s for the old run's members)`);
    assert.equal(info.temporal!.address, first.temporal!.address);
    assert.deepEqual(info.gateways.map((g) => g.url), first.gateways.map((g) => g.url));
    assert.equal(info.simulator!.checkoutUrl, first.simulator!.checkoutUrl);
    assert.ok(payLink.startsWith(info.simulator!.checkoutUrl), 'the pay_link the customer holds points at the checkout');
    assert.doesNotMatch(fs.readFileSync(path.join(info.logDir, 'postgres.log'), 'utf8'), /was interrupted|automatic recovery in progress/, 'no crash recovery');

    // The customer pays now; the provider notifies the URL it was given before the restart.
    await createControlClient(info.simulator!.url).completeLink(paymentRef);
    const gw = info.gateways[1]!.url;
    await eventually(async () => {
      const v = await gatewayCaller(gw, apiKey()).api('GET', `/v1/payment-links/paylink-${link}`);
      return v.json?.state === 'paid' ? v : undefined;
    }, 60_000, 'the parked link paid');
    const pin = await gatewayCaller(gw).call('POST', `/v1/swaps/swap-${swap}/pin`, { body: { wallet_pin: SIM_PIN }, headers: { authorization: `Bearer ${pinToken}` } });
    assert.equal(pin.status, 200, pin.text);
    assert.equal(pin.json.outcome, 'confirmed', pin.text);
    const sim = createControlClient(info.simulator!.url);
    assert.equal((await sim.ledger({ ref: link })).effects.filter((e) => e.kind === 'link.paid').length, 1);
    assert.equal((await sim.ledger({ ref: swap })).effects.filter((e) => e.kind === 'swap.confirmed').length, 1);
  });

  test('cluster down also stops a PostgreSQL an operator started by hand on its data directory, with a fast shutdown', async () => {
    await clusterDown();
    const pg = info.postgres!;
    const ctl = path.join(pg.binDir, 'pg_ctl');
    const root = path.dirname(pg.dataDir);
    const asUser = process.getuid?.() === 0 ? ['runuser', '-u', pg.user, '--'] : [];
    const [cmd, ...args] = [...asUser, ctl, '-D', pg.dataDir, '-o', `-p ${pg.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${root}`, '-l', path.join(root, 'by-hand.log'), '-w', 'start'];
    execFileSync(cmd!, args, { stdio: 'ignore' });
    assert.ok(fs.existsSync(path.join(pg.dataDir, 'postmaster.pid')), 'started by hand');
    const out = await clusterDown();
    assert.match(out, /stopping 1 process\(es\) left running on/);
    assert.ok(!fs.existsSync(path.join(pg.dataDir, 'postmaster.pid')), 'stopped');
    assert.match(fs.readFileSync(path.join(root, 'by-hand.log'), 'utf8'), /fast shutdown request/);
  });
});
