/**
 * `npm run soak -- --swaps N --links N [--concurrency C] [--seed S] [--max-minutes M]`: a chaos
 * soak on the production topology (tools/cluster, loopback only). Flows through every gateway at a
 * set concurrency, each a script; seeded provider faults; workers SIGKILLed and restarted every few
 * seconds (some while a provider POST is in flight), one gateway and the Temporal server killed and
 * restarted once; then every flow is checked against the simulator's ledger. Bounded in count and
 * time; stops by itself; stops every process it started, also on failure and Ctrl-C.
 *
 * Last line, exactly: `soak: <N> flows, <L> lost, <D> duplicate side effects, <I> inconsistent`.
 * Exit 0 when all three are 0; 1 otherwise; 2 when the soak itself could not run; 130 on Ctrl-C.
 *
 * Other options: --swap-window S (the simulator's swap window, default 45), --link-lifetime S
 * (LINK_LIFETIME_SECONDS of the gateways, default 40), --settle-wait S (SWAP_SETTLE_WAIT_SECONDS of
 * the gateways, default 60), --kill-every MIN-MAX seconds between worker kills (default 3-7),
 * --in-flight-kills N (kills to time during a provider POST, default 8), --workers / --gateways
 * (default 2 / 2), --keep-state (keep the state dir and its logs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createControlClient } from '../../src/simulator/control-client';
import type { FaultSetInput } from '../../src/simulator/faults';
import { Chaos } from './chaos';
import { planFlows, runFlows, type FlowEnv } from './flows';
import { call, Rng } from './http';
import { lastLine, report, totals } from './report';
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
  keepState: boolean;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
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
      gateways: { type: 'string', default: '2' },
      'keep-state': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const int = (name: string, v: string | undefined, min: number, max: number): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v ?? '') || n < min || n > max) throw new Error(`--${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
  const every = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(values['kill-every'] ?? '');
  if (!every || Number(every[1]) > Number(every[2])) throw new Error('--kill-every must be MIN-MAX seconds, e.g. 3-7');
  return {
    swaps: int('swaps', values.swaps, 0, 5_000),
    links: int('links', values.links, 0, 5_000),
    concurrency: int('concurrency', values.concurrency, 1, 200),
    seed: values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int('seed', values.seed, 0, 2 ** 32 - 1),
    maxMinutes: int('max-minutes', values['max-minutes'], 1, 240),
    swapWindow: int('swap-window', values['swap-window'], 10, 3_600),
    linkLifetime: int('link-lifetime', values['link-lifetime'], 5, 86_400),
    settleWait: int('settle-wait', values['settle-wait'], 0, 3_600),
    killEvery: [Number(every[1]) * 1000, Number(every[2]) * 1000],
    inFlightKills: int('in-flight-kills', values['in-flight-kills'], 0, 1_000),
    workers: int('workers', values.workers, 1, 8),
    gateways: int('gateways', values.gateways, 1, 8),
    keepState: values['keep-state'] ?? false,
  };
}

/** Provider faults on every POST endpoint, and notification faults (the simulator's seeded stream). */
export function soakFaults(): FaultSetInput {
  const rules: FaultSetInput['rules'] = [];
  for (const endpoint of ['swap.init', 'swap.confirm', 'link.create'] as const) {
    rules.push(
      { endpoint, kind: 'latency', probability: 0.2, latencyMs: [1_500, 4_000] },
      { endpoint, kind: 'status5xx', probability: 0.05, status: 503 },
      { endpoint, kind: 'reset', probability: 0.05 },
      { endpoint, kind: 'rate_limit', probability: 0.05, retryAfterSeconds: 1 },
      { endpoint, kind: 'garbage', probability: 0.04 },
      { endpoint, kind: 'apply_then_fail', probability: 0.05 },
      { endpoint, kind: 'hang', probability: 0.03, maxMs: 8_000 },
    );
  }
  return { rules, notifications: { duplicate: 1, reorder: true, delayMs: 300 } };
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
  // The time bound: flows end at the deadline; a run that overstays it by far is stopped.
  const deadline = t0 + o.maxMinutes * 60_000;
  const watchdog = setTimeout(() => {
    out('soak: the watchdog fired (the time bound was overstayed by 5 minutes): stopping');
    stopRequested = true;
    setTimeout(() => process.exit(3), 120_000).unref();
  }, o.maxMinutes * 60_000 + 5 * 60_000);
  watchdog.unref();

  out(`soak: ${o.swaps} swaps + ${o.links} links, concurrency ${o.concurrency}, seed ${o.seed}, at most ${o.maxMinutes} min; state dir ${stateDir}`);
  let topology: SoakTopology | undefined;
  try {
    topology = await SoakTopology.start({
      stateDir,
      workers: o.workers,
      gateways: o.gateways,
      gatewayEnv: { SWAP_SETTLE_WAIT_SECONDS: String(o.settleWait), LINK_LIFETIME_SECONDS: String(o.linkLifetime) },
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

    const { env, flows, chaos, flowsMs } = await runFlowsUnderChaos(o, { topology, sim, t0, deadline, stopping: () => stopRequested });
    await sim.clearFaults();

    const verification = await verify(env, sim, flows, { graceMs: stopRequested ? 5_000 : 60_000, say: out });
    const t = totals(verification);
    for (const line of report({
      command,
      seed: o.seed,
      simulatorSeed,
      concurrency: o.concurrency,
      settings: `swap window ${o.swapWindow} s, link lifetime ${o.linkLifetime} s, settle wait ${o.settleWait} s, ${o.workers} workers, ${o.gateways} gateways`,
      flows,
      chaos: chaos.stats,
      verification,
      wallMs: Date.now() - t0,
      flowsMs,
    })) out(line);
    let failed = t.lost + t.duplicate + t.inconsistent > 0;
    const left = await topology.stop();
    out(left.length ? `stopped, but ${left.length} process(es) remain: ${left.join(', ')}` : `stopped the topology; no process left (wall time ${secs(Date.now() - t0)})`);
    if (left.length) failed = true;
    if (!o.keepState && !failed) fs.rmSync(stateDir, { recursive: true, force: true });
    else out(`logs kept in ${path.join(stateDir, 'logs')}`);
    out(lastLine(t));
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
