/**
 * `npm run soak -- --swaps N --links N [--concurrency C] [--seed S] [--max-minutes M] [--incident] [--release]`:
 * a chaos soak on the production topology (tools/cluster, loopback only). Flows through every
 * gateway at a set concurrency, each a script; seeded provider faults; workers SIGKILLed and
 * restarted every few seconds (some while a provider POST is in flight), one gateway, the
 * Temporal server and the identity provider killed and restarted once; then every flow is checked against the simulator's
 * ledger. Bounded in count and time; stops by itself; stops every process it started, also on
 * failure and Ctrl-C. `--swaps 0 --links 0` skips this default phase (the phases below still run).
 *
 * Two optional phases follow it, on the same topology (each flow of every phase is checked with
 * the rest):
 *
 * - `--incident` (incident.ts): a provider incident in which confirmations time out (they hang,
 *   nothing applied) for --incident-seconds (60), run twice with the same seeded traffic
 *   (--incident-swaps right-PIN swaps, 30, spread over --incident-lead (10) + the incident's
 *   seconds; the simulator's swap window --incident-window, 30): first with the provider breaker
 *   effectively off (the workers restarted with PROVIDER_BREAKER_* no traffic reaches), then with
 *   it on (the defaults; `--breaker NAME=VALUE`, repeatable, sets PROVIDER_BREAKER_* of that run).
 *   Prints both counts of swaps ending in needs_reconciliation, when the confirm breaker opened and
 *   closed, how many confirmations it held and how those swaps ended. A swap held before its
 *   confirmation was ever sent must end expired or confirmed (else it counts as inconsistent).
 * - `--release` (release.ts): a second release of the worker (this code under another build id)
 *   started beside the running one while flows wait at every wait (--release-flows of each, 2),
 *   promoted, rolled back, while the seeded faults fire (the simulator's swap window
 *   --release-window, 180). Prints the failed workflow tasks of every history that ran in the
 *   phase and the nondeterminism errors in every worker's log.
 *
 * Last line, exactly: `soak: <N> flows, <L> lost, <D> duplicate side effects, <I> inconsistent`;
 * with --release it goes on `, <E> nondeterminism errors, <F> failed workflow tasks`, with
 * --incident `; needs_reconciliation in the incident: <A> without the breaker, <B> with it`.
 * Exit 0 when lost, duplicate, inconsistent, nondeterminism errors and failed workflow tasks are
 * all 0; 1 otherwise; 2 when the soak itself could not run; 130 on Ctrl-C.
 *
 * Other options: --swap-window S (the simulator's swap window, default 45), --link-lifetime S
 * (LINK_LIFETIME_SECONDS of the gateways, default 40), --settle-wait S (SWAP_SETTLE_WAIT_SECONDS of
 * the gateways, default 60; every phase's swaps in doubt wait this long), --kill-every MIN-MAX
 * seconds between worker kills (default 3-7), --in-flight-kills N (kills to time during a provider
 * POST, default 8), --workers / --gateways (default 2 / 2), --token-ttl S (the lifetime of the
 * workers' and gateways' tokens, default 60: they renew during the soak, also across the identity
 * provider's outage), --keep-state (keep the state dir and its logs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createControlClient } from '../../src/simulator/control-client';
import { Chaos, type ChaosStats, soakFaults } from './chaos';
import { type Flow, planFlows, runFlows, type FlowEnv } from './flows';
import { GuardWatch } from './guard';
import { call, Rng } from './http';
import { type IncidentOptions, type IncidentRun, runIncidentPhase } from './incident';
import { type ReleaseResult, runReleasePhase } from './release';
import { incidentReport, judgeHeld, nrOf, phasesLastLine, releaseReport, report, totals } from './report';
import { SoakTopology } from './topology';
import { verify } from './verify';

interface Options {
  swaps: number;
  links: number;
  concurrency: number;
  seed: number;
  maxMinutes: number;
  swapWindow: number;
  linkLifetime: number;
  settleWait: number;
  killEvery: [number, number];
  inFlightKills: number;
  workers: number;
  gateways: number;
  tokenTtl: number;
  keepState: boolean;
  incident?: Omit<IncidentOptions, 'settleWait' | 'seed'>;
  release?: { perWait: number; window: number };
}

const OPTIONS = {
  swaps: { type: 'string', default: '20' },
  links: { type: 'string', default: '20' },
  concurrency: { type: 'string', default: '12' },
  seed: { type: 'string' },
  'max-minutes': { type: 'string', default: '30' },
  'swap-window': { type: 'string', default: '45' },
  'link-lifetime': { type: 'string', default: '40' },
  'settle-wait': { type: 'string', default: '60' },
  'kill-every': { type: 'string', default: '3-7' },
  'in-flight-kills': { type: 'string', default: '8' },
  workers: { type: 'string', default: '2' },
  'token-ttl': { type: 'string', default: '60' },
  gateways: { type: 'string', default: '2' },
  'keep-state': { type: 'boolean', default: false },
  incident: { type: 'boolean', default: false },
  'incident-swaps': { type: 'string', default: '30' },
  'incident-seconds': { type: 'string', default: '60' },
  'incident-window': { type: 'string', default: '30' },
  'incident-lead': { type: 'string', default: '10' },
  breaker: { type: 'string', multiple: true },
  release: { type: 'boolean', default: false },
  'release-flows': { type: 'string', default: '2' },
  'release-window': { type: 'string', default: '180' },
} as const;

const int = (name: string, v: string | undefined, min: number, max: number): number => {
  const n = Number(v);
  if (!/^\d+$/.test(v ?? '') || n < min || n > max) throw new Error(`--${name} must be a whole number from ${min} to ${max}`);
  return n;
};

/** --breaker NAME=VALUE: the breaker's settings of the incident's run with it (PROVIDER_BREAKER_* only). */
function breakerEnv(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const p of pairs) {
    const m = /^(PROVIDER_BREAKER_[A-Z_]+)=(\S+)$/.exec(p);
    if (!m) throw new Error(`--breaker must be PROVIDER_BREAKER_<NAME>=<value> (got ${p})`);
    env[m[1]!] = m[2]!;
  }
  return env;
}

function parseOptions(argv: string[]): Options {
  const { values: v } = parseArgs({ args: argv, options: OPTIONS, strict: true });
  const every = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(v['kill-every'] ?? '');
  if (!every || Number(every[1]) > Number(every[2])) throw new Error('--kill-every must be MIN-MAX seconds, e.g. 3-7');
  return {
    swaps: int('swaps', v.swaps, 0, 5_000),
    links: int('links', v.links, 0, 5_000),
    concurrency: int('concurrency', v.concurrency, 1, 200),
    seed: v.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int('seed', v.seed, 0, 2 ** 32 - 1),
    maxMinutes: int('max-minutes', v['max-minutes'], 1, 240),
    swapWindow: int('swap-window', v['swap-window'], 10, 3_600),
    linkLifetime: int('link-lifetime', v['link-lifetime'], 5, 86_400),
    settleWait: int('settle-wait', v['settle-wait'], 0, 3_600),
    killEvery: [Number(every[1]) * 1000, Number(every[2]) * 1000],
    inFlightKills: int('in-flight-kills', v['in-flight-kills'], 0, 1_000),
    workers: int('workers', v.workers, 1, 8),
    gateways: int('gateways', v.gateways, 1, 8),
    tokenTtl: int('token-ttl', v['token-ttl'], 20, 86_400),
    keepState: v['keep-state'] ?? false,
    ...(v.incident
      ? {
          incident: {
            swaps: int('incident-swaps', v['incident-swaps'], 1, 1_000),
            seconds: int('incident-seconds', v['incident-seconds'], 5, 600),
            window: int('incident-window', v['incident-window'], 10, 600),
            lead: int('incident-lead', v['incident-lead'], 0, 600),
            breakerEnv: breakerEnv(v.breaker ?? []),
          },
        }
      : {}),
    ...(v.release ? { release: { perWait: int('release-flows', v['release-flows'], 1, 50), window: int('release-window', v['release-window'], 60, 3_600) } } : {}),
  };
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Runs the planned flows through the gateways while the chaos kills processes, then waits until
 * every worker runs again (the checks need them). flowsMs: how long the flows took.
 */
async function runFlowsUnderChaos(
  o: Options,
  run: { topology: SoakTopology; sim: ReturnType<typeof createControlClient>; t0: number; deadline: number; stopping: () => boolean },
): Promise<{ env: FlowEnv; flows: ReturnType<typeof planFlows>; chaos: Chaos; flowsMs: number }> {
  const { topology, sim, t0, deadline, stopping } = run;
  const rng = new Rng(o.seed);
  const flows = planFlows({ swaps: o.swaps, links: o.links, gateways: o.gateways, rng, tag: `${o.seed.toString(36)}${Date.now().toString(36).slice(-4)}` });
  const env: FlowEnv = {
    gatewayUrls: topology.gateways.map((g) => g.url),
    apiKey: topology.apiKey(),
    sim,
    checkoutUrl: topology.checkoutUrl,
    deadline,
    stopping,
    seed: o.seed,
  };
  let started = 0;
  let flowsDone = false;
  const chaos = new Chaos({
    topology,
    sim,
    flows,
    rng: new Rng(o.seed ^ 0x5eed),
    killEveryMs: o.killEvery,
    inFlightTarget: o.inFlightKills,
    gatewayKillAt: 0.2,
    temporalKillAt: 0.45,
    idpKillAt: 0.3,
    finished: () => flows.filter((f) => f.done).length,
    done: () => flowsDone || stopping() || Date.now() > deadline,
    say: out,
  });
  const tf = Date.now();
  let lastProgress = 0;
  const progress = setInterval(() => {
    const done = flows.filter((f) => f.done).length;
    if (done !== lastProgress) out(`[soak +${secs(Date.now() - t0)}] ${started}/${flows.length} started, ${done} done`);
    lastProgress = done;
  }, 15_000);
  const chaosRun = chaos.run().catch((e: Error) => {
    out(`chaos stopped: ${e.message}`);
  });
  await runFlows(env, flows, o.concurrency, (n) => (started = n));
  flowsDone = true;
  clearInterval(progress);
  const flowsMs = Date.now() - tf;
  await chaosRun;
  out(`flows done in ${secs(flowsMs)}; every worker running again before the checks`);
  await chaos.settle();
  return { env, flows, chaos, flowsMs };
}

interface Ran {
  env: FlowEnv;
  flows: Flow[];
  chaos: ChaosStats;
  flowsMs: number;
  incident?: IncidentRun[];
  release?: ReleaseResult;
  watch: GuardWatch;
}

const NO_CHAOS: ChaosStats = { workerKills: 0, inFlight: [], workerRestarts: 0, workerRestartFailures: 0, gatewayKills: [], temporalKills: [], idpKills: [], log: [] };

/** The default soak (when it has flows), then the phases asked for, on one topology. */
async function runPhases(o: Options, topology: SoakTopology, sim: ReturnType<typeof createControlClient>, t0: number, stopping: () => boolean): Promise<Ran> {
  const watch = new GuardWatch(topology.gateways.map((g) => g.url), topology.apiKey('operator'));
  watch.start();
  const deadline = t0 + o.maxMinutes * 60_000;
  let ran: Ran;
  if (o.swaps + o.links > 0) {
    const r = await runFlowsUnderChaos(o, { topology, sim, t0, deadline, stopping });
    ran = { env: r.env, flows: r.flows, chaos: r.chaos.stats, flowsMs: r.flowsMs, watch };
  } else {
    const env: FlowEnv = { gatewayUrls: topology.gateways.map((g) => g.url), apiKey: topology.apiKey(), sim, checkoutUrl: topology.checkoutUrl, deadline, stopping, seed: o.seed };
    ran = { env, flows: [], chaos: NO_CHAOS, flowsMs: 0, watch };
  }
  await sim.clearFaults();
  const { deadline: _d, seed: _s, ...env } = ran.env;
  if (o.incident && !stopping()) {
    ran.incident = await runIncidentPhase({ topology, sim, watch, env, say: out }, { ...o.incident, settleWait: o.settleWait, seed: o.seed });
    ran.flows.push(...ran.incident.flatMap((r) => r.flows));
  }
  if (o.release && !stopping()) {
    ran.release = await runReleasePhase({ topology, sim, watch, env, say: out }, { ...o.release, settleWait: o.settleWait, seed: o.seed, faults: soakFaults() });
    ran.flows.push(...ran.release.flows);
  }
  await watch.stop();
  return ran;
}

/** How often each breaker opened over the whole soak (the guard as the soak read it). */
function guardLine(watch: GuardWatch): string {
  const opened = (cls: string) => watch.transitions.filter((t) => t.cls === cls && t.state === 'open').length;
  return `  provider guard over the whole soak: breakers opened initiate ${opened('initiate')}, confirm ${opened('confirm')}, create ${opened('create')} time(s)${watch.readFailures ? ` (${watch.readFailures} readings failed)` : ''}`;
}

/** Checks every flow, prints the report; returns the last line and whether the soak failed. */
/** The machine clients' tokens over the whole soak: every call to Temporal was authorised by one. */
function tokenLine(topology: SoakTopology): string {
  if (!topology.cluster.auth) return '  tokens: the cluster authorised no call (MPF_CLUSTER_AUTH=0)';
  const t = topology.tokenRenewals();
  return `  tokens: every call to Temporal authorised; workers and gateways renewed theirs ${t.renewed} time(s)${t.failedAttempts ? `, ${t.failedAttempts} renewal attempt(s) failed and were tried again` : ''}`;
}

async function check(o: Options, ran: Ran, run: { command: string; t0: number; simulatorSeed?: number; sim: ReturnType<typeof createControlClient>; graceMs: number; topology: SoakTopology }): Promise<{ line: string; failed: boolean }> {
  const verification = await verify(ran.env, run.sim, ran.flows, { graceMs: run.graceMs, say: out });
  if (ran.incident) judgeHeld(ran.incident, verification.verdicts);
  const t = totals(verification);
  const lines = report({
    command: run.command,
    seed: o.seed,
    simulatorSeed: run.simulatorSeed,
    concurrency: o.concurrency,
    settings: `swap window ${o.swapWindow} s, link lifetime ${o.linkLifetime} s, settle wait ${o.settleWait} s, ${o.workers} workers, ${o.gateways} gateways`,
    flows: ran.flows,
    chaos: ran.chaos,
    verification,
    wallMs: Date.now() - run.t0,
    flowsMs: ran.flowsMs,
  });
  const phases: string[] = [guardLine(ran.watch), tokenLine(run.topology)];
  if (ran.incident) phases.push(...incidentReport(ran.incident, verification.verdicts));
  if (ran.release) phases.push(...releaseReport(ran.release, verification.verdicts));
  // The phases' sections go before the list of flows that failed the check (the report's end).
  const at = lines.findIndex((l) => l === '-- flows that failed the check --');
  lines.splice(at >= 0 ? at - 1 : lines.length - 1, 0, ...phases);
  for (const line of lines) out(line);
  const incident = ran.incident ? { without: nrOf(ran.incident[0]!, verification.verdicts), with: nrOf(ran.incident[1]!, verification.verdicts) } : undefined;
  const failed = t.lost + t.duplicate + t.inconsistent > 0 || (ran.release !== undefined && ran.release.failedTasks + ran.release.nondeterminismLines > 0);
  return { line: phasesLastLine(t, { ...(ran.release ? { release: ran.release } : {}), ...(incident ? { incident } : {}) }), failed };
}

/** The watchdog's bound: the default soak's minutes, each phase's own time, 5 minutes more. */
function boundMs(o: Options): number {
  const i = o.incident;
  const incident = i ? 2 * ((i.lead + i.seconds + i.window + o.settleWait) * 1000 + 5 * 60_000) : 0;
  const release = o.release ? (o.release.window + o.settleWait) * 1000 + 8 * 60_000 : 0;
  return o.maxMinutes * 60_000 + incident + release + 5 * 60_000;
}

async function main(argv: string[]): Promise<number> {
  let o: Options;
  try {
    o = parseOptions(argv);
  } catch (e) {
    process.stderr.write(`soak: ${(e as Error).message}\n`);
    return 2;
  }
  const t0 = Date.now();
  const command = `npm run soak -- ${argv.join(' ')}`.trim();
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-soak-'));
  let stopRequested = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopRequested) {
      out(`${sig} again: killing everything now`);
      process.exit(130); // processes.ts's exit hook SIGKILLs every child still running
    }
    stopRequested = true;
    out(`${sig}: stopping the soak and everything it started…`);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, onSignal);
  // The time bound: flows end at their deadlines; a run that overstays its bound by far is stopped.
  const watchdog = setTimeout(() => {
    out('soak: the watchdog fired (the time bound was overstayed by 5 minutes): stopping');
    stopRequested = true;
    setTimeout(() => process.exit(3), 120_000).unref();
  }, boundMs(o));
  watchdog.unref();

  const phases = [o.incident ? 'incident' : '', o.release ? 'release' : ''].filter(Boolean);
  out(`soak: ${o.swaps} swaps + ${o.links} links, concurrency ${o.concurrency}, seed ${o.seed}, at most ${o.maxMinutes} min${phases.length ? `; phases: ${phases.join(', ')}` : ''}; state dir ${stateDir}`);
  let topology: SoakTopology | undefined;
  try {
    topology = await SoakTopology.start({
      stateDir,
      workers: o.workers,
      gateways: o.gateways,
      gatewayEnv: { SWAP_SETTLE_WAIT_SECONDS: String(o.settleWait), LINK_LIFETIME_SECONDS: String(o.linkLifetime) },
      tokenTtlSeconds: o.tokenTtl,
      say: (l) => out(`  ${l}`),
      aborted: () => stopRequested,
    });
    out(`topology ready in ${secs(Date.now() - t0)}: Temporal ${topology.temporalAddress}, simulator ${topology.simulatorUrl}, ` +
      `${topology.gateways.map((g) => `${g.name} ${g.url}`).join(', ')}, ${topology.workers.map((w) => `${w.name} pid ${w.child.pid}`).join(', ')}`);

    const sim = createControlClient(topology.simulatorUrl);
    await sim.setConfig({ swapExpiresInSeconds: o.swapWindow });
    await sim.setFaults(soakFaults());
    const simConfig = await call('GET', `${topology.simulatorUrl}/_sim/config`).catch(() => undefined);
    const simulatorSeed = simConfig?.json?.data?.seed as number | undefined;

    const ran = await runPhases(o, topology, sim, t0, () => stopRequested);
    const checked = await check(o, ran, { command, t0, simulatorSeed, sim, graceMs: stopRequested ? 5_000 : 60_000, topology });
    let failed = checked.failed;
    const left = await topology.stop();
    out(left.length ? `stopped, but ${left.length} process(es) remain: ${left.join(', ')}` : `stopped the topology; no process left (wall time ${secs(Date.now() - t0)})`);
    if (left.length) failed = true;
    if (!o.keepState && !failed) fs.rmSync(stateDir, { recursive: true, force: true });
    else out(`logs kept in ${path.join(stateDir, 'logs')}`);
    out(checked.line);
    if (stopRequested) return 130;
    return failed ? 1 : 0;
  } catch (e) {
    process.stderr.write(`soak: ${(e as Error).stack ?? String(e)}\n`);
    if (topology) {
      const left = await topology.stop().catch(() => []);
      if (left.length) process.stderr.write(`soak: ${left.length} process(es) remain: ${left.join(', ')}\n`);
    }
    process.stderr.write(`soak: logs kept in ${path.join(stateDir, 'logs')}\n`);
    return stopRequested ? 130 : 2;
  } finally {
    clearTimeout(watchdog);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: Error) => {
      process.stderr.write(`soak: ${e.stack ?? e.message}\n`);
      process.exit(2);
    },
  );
}
