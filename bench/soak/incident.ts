/**
 * The soak's provider-incident phase (`--incident`): the same seeded traffic twice, first with the
 * provider breaker effectively off, then with it on, while the provider's confirmations time out
 * for a while (the simulator's `hang` on swap.confirm: nothing is applied, no answer comes, the
 * provider client gives up after its 10 s headers timeout: an ambiguous outcome).
 *
 * Each run: the cluster's workers restarted with the run's PROVIDER_BREAKER_* settings (off:
 * thresholds no traffic reaches; on: the defaults, or --breaker NAME=VALUE); every breaker closed
 * first; the simulator's swap window set, no other fault; swaps with the right PIN started at
 * seeded, evenly spread times, so PINs arrive before, during and after the incident; the hang set
 * `lead` seconds in and cleared `seconds` later; every swap driven to its end (confirmed,
 * expired, needs_reconciliation…). No worker is killed in this phase.
 *
 * What it keeps for the report: the confirm breaker's changes (GuardWatch), which swaps had their
 * confirmation held (the workers' log lines "held by the provider guard" of confirmSwap), whether
 * the provider received a confirmation of each before its first hold, only after it, or never (the
 * simulator's ledger), and how many confirmations the
 * provider received in the incident before the breaker first opened (the calls a breaker cannot
 * stop: it needs the threshold's ambiguous outcomes first, each counted once the call has been
 * unanswered for PROVIDER_BREAKER_SLOW_SECONDS).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { SimulatorControl } from '../../src/simulator/control-client';
import type { RequestEntry } from '../../src/simulator/ledger';
import { type Flow, type FlowEnv, makeFlow, runFlow } from './flows';
import type { BreakerTransition, GuardWatch } from './guard';
import { Rng, sleep } from './http';
import type { SoakTopology } from './topology';

/** Thresholds no soak's traffic reaches: the breaker never opens. */
export const BREAKER_OFF: Record<string, string> = {
  PROVIDER_BREAKER_AMBIGUOUS_COUNT: '100000',
  PROVIDER_BREAKER_THROTTLED_COUNT: '100000',
  PROVIDER_BREAKER_AMBIGUOUS_SHARE: '1',
  PROVIDER_BREAKER_MIN_CALLS: '100000',
};

/** The incident: every confirmation hangs (nothing applied) past the provider client's 10 s headers timeout. */
export const INCIDENT_FAULTS = { rules: [{ endpoint: 'swap.confirm' as const, kind: 'hang' as const, maxMs: 20_000 }] };

export interface IncidentOptions {
  swaps: number;
  /** How long confirmations hang, s. */
  seconds: number;
  /** The simulator's swap window during the phase, s. */
  window: number;
  /** Seconds of traffic before the incident starts. */
  lead: number;
  /** The gateways' SWAP_SETTLE_WAIT_SECONDS (a swap in doubt waits this long before needs_reconciliation). */
  settleWait: number;
  seed: number;
  /** The workers' environment of the run with the breaker (PROVIDER_BREAKER_*; empty: the defaults). */
  breakerEnv: Record<string, string>;
}

export interface HeldSwap {
  /** When its confirmation was first held (ms). */
  firstAt: number;
  /** How it went at the provider: a confirmation received before the first hold, only after it, or none at all. */
  sent: 'before' | 'after' | 'never';
}

export interface IncidentRun {
  label: 'without the breaker' | 'with the breaker';
  phase: 'incident-without' | 'incident-with';
  env: Record<string, string>;
  flows: Flow[];
  t0: number;
  incidentAt: number;
  incidentEnd: number;
  /** The confirm breaker's changes during the run. */
  confirm: BreakerTransition[];
  /** Thresholds the guard held during the run (as the workers reported them). */
  settings?: string;
  held: Map<string, HeldSwap>;
  /** Swaps whose PIN was sent while confirmations hung. */
  pinsInIncident: number;
  /** Confirmations the provider received in the incident before the confirm breaker first opened (all of it when it never opened). */
  sentBeforeOpen: number;
  /**
   * …and while it was open or half-open: a worker trusts a reading of the guard up to a few
   * seconds old (it reads it every second), so a confirmation can still go out just after it opened.
   */
  sentWhileOpen: number;
  ms: number;
}

export interface IncidentContext {
  topology: SoakTopology;
  sim: SimulatorControl;
  watch: GuardWatch;
  env: Omit<FlowEnv, 'deadline' | 'seed'>;
  say: (line: string) => void;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The seeded traffic of one run: `swaps` right-PIN swaps and when each starts (ms after the run's start). */
function plan(o: IncidentOptions, phase: IncidentRun['phase'], gateways: number): Array<{ flow: Flow; atMs: number }> {
  const rng = new Rng(o.seed ^ 0x1c1d);
  const spanMs = (o.lead + o.seconds) * 1000;
  const tag = `${phase === 'incident-without' ? 'iw' : 'ib'}${o.seed.toString(36)}${Date.now().toString(36).slice(-4)}`;
  return Array.from({ length: o.swaps }, (_, index) => ({
    flow: makeFlow({ index, kind: 'swap', script: 'right', tag, gateways, phase }),
    atMs: Math.round(((index + rng.float()) * spanMs) / Math.max(1, o.swaps)),
  }));
}

/** The swaps of `ids` whose confirmation a worker held, from the workers' JSON log lines. */
export function heldFromLogs(logDir: string, ids: Set<string>): Map<string, number> {
  const firstAt = new Map<string, number>();
  for (const file of fs.readdirSync(logDir).filter((f) => /^(worker|release)-[\w-]+\.log$/.test(f))) {
    for (const line of fs.readFileSync(path.join(logDir, file), 'utf8').split('\n')) {
      if (!line.includes('held by the provider guard') || !line.includes('"confirmSwap"')) continue;
      let rec: { workflowId?: string; time?: string; activityType?: string };
      try {
        rec = JSON.parse(line) as typeof rec;
      } catch {
        continue;
      }
      if (rec.activityType !== 'confirmSwap' || !rec.workflowId || !ids.has(rec.workflowId)) continue;
      const at = Date.parse(rec.time ?? '');
      if (Number.isFinite(at) && at < (firstAt.get(rec.workflowId) ?? Infinity)) firstAt.set(rec.workflowId, at);
    }
  }
  return firstAt;
}

/** Whether the breaker whose changes are `changes` was open or half-open at `at` (ms). */
function openAt(changes: BreakerTransition[], at: number): boolean {
  const last = changes.filter((t) => t.at <= at).at(-1);
  return last !== undefined && last.state !== 'closed';
}

/** Drives the planned swaps, each from its start time, and sets then clears the incident. */
async function drive(ctx: IncidentContext, o: IncidentOptions, planned: ReturnType<typeof plan>, env: FlowEnv, t0: number): Promise<{ incidentAt: number; incidentEnd: number }> {
  const times = { incidentAt: 0, incidentEnd: 0 };
  const incident = (async () => {
    await sleep(t0 + o.lead * 1000 - Date.now());
    await ctx.sim.setFaults(INCIDENT_FAULTS);
    times.incidentAt = Date.now();
    ctx.say(`  [incident +${secs(times.incidentAt - t0)}] confirmations hang from now, for ${o.seconds} s`);
    await sleep(times.incidentAt + o.seconds * 1000 - Date.now());
    await ctx.sim.clearFaults();
    times.incidentEnd = Date.now();
    ctx.say(`  [incident +${secs(times.incidentEnd - t0)}] confirmations answered again`);
  })();
  await Promise.all([
    incident,
    ...planned.map(async ({ flow, atMs }) => {
      await sleep(t0 + atMs - Date.now());
      await runFlow(env, flow);
    }),
  ]);
  return times;
}

/**
 * Waits until every breaker is closed and the guard's window holds no outcome of the incident
 * that ended at `incidentEnd`: it counts outcomes whatever settings they came with, and the last
 * hung calls time out up to 10 s after the incident.
 */
async function quiet(ctx: IncidentContext, incidentEnd: number): Promise<void> {
  const windowMs = ctx.watch.settings?.window_ms ?? 60_000;
  await sleep(incidentEnd + 12_000 + windowMs - Date.now());
  if (!(await ctx.watch.waitAllClosed(180_000))) ctx.say('  warning: a breaker was still open after 3 min; going on');
}

async function runOnce(ctx: IncidentContext, o: IncidentOptions, which: 'without' | 'with', previous?: IncidentRun): Promise<IncidentRun> {
  const phase = which === 'without' ? 'incident-without' : 'incident-with';
  const label = which === 'without' ? 'without the breaker' : 'with the breaker';
  const workerEnv = which === 'without' ? BREAKER_OFF : o.breakerEnv;
  const tr = Date.now();
  await ctx.topology.restartWorkersWith(workerEnv);
  if (previous) await quiet(ctx, previous.incidentEnd);
  else if (!(await ctx.watch.waitAllClosed(180_000))) ctx.say('  warning: a breaker was still open after 3 min; the run starts anyway');
  await ctx.sim.clearFaults();
  await ctx.sim.setConfig({ swapExpiresInSeconds: o.window });
  const planned = plan(o, phase, ctx.env.gatewayUrls.length);
  const t0 = Date.now();
  ctx.say(`incident phase, ${label}: ${o.swaps} swaps over ${o.lead + o.seconds} s; workers restarted with ${Object.keys(workerEnv).length ? Object.entries(workerEnv).map(([k, v]) => `${k}=${v}`).join(' ') : 'the default breaker'} (${secs(t0 - tr)})`);
  const deadline = t0 + (o.lead + o.seconds + o.window + o.settleWait) * 1000 + 120_000;
  const env: FlowEnv = { ...ctx.env, deadline, seed: o.seed };
  const { incidentAt, incidentEnd } = await drive(ctx, o, planned, env, t0);
  const flows = planned.map((p) => p.flow);
  // With the breaker: until the guard is quiet again (what it did after the incident belongs to the
  // run). Without it, the next run waits for that after restarting the workers.
  if (which === 'with') await quiet(ctx, incidentEnd);
  const confirm = ctx.watch.of('confirm', t0);
  const firstOpen = confirm.find((t) => t.state === 'open')?.at ?? incidentEnd;
  const refs = new Set(flows.map((f) => f.ref));
  const confirms: RequestEntry[] = (await ctx.sim.ledger({ endpoint: 'swap.confirm' })).requests.filter((r) => r.ref !== undefined && refs.has(r.ref));
  const heldAt = heldFromLogs(ctx.topology.logDir, new Set(flows.map((f) => f.id)));
  const held = new Map<string, HeldSwap>();
  for (const f of flows) {
    const at = heldAt.get(f.id);
    if (at === undefined) continue;
    const mine = confirms.filter((r) => r.ref === f.ref);
    held.set(f.id, { firstAt: at, sent: mine.some((r) => Date.parse(r.at) < at) ? 'before' : mine.length ? 'after' : 'never' });
  }
  const s = ctx.watch.settings;
  return {
    label,
    phase,
    env: workerEnv,
    flows,
    t0,
    incidentAt,
    incidentEnd,
    confirm,
    ...(s ? { settings: `${s.ambiguous_count} ambiguous or ${Math.round(s.ambiguous_share * 100)}% of ${s.min_calls}+ calls or ${s.throttled_count} × 429 in ${s.window_ms / 1000} s, cool-down ${s.cooldown_ms / 1000} s` } : {}),
    held,
    pinsInIncident: flows.filter((f) => f.pinAt !== undefined && f.pinAt >= incidentAt && f.pinAt < incidentEnd).length,
    sentBeforeOpen: confirms.filter((r) => Date.parse(r.at) >= incidentAt && Date.parse(r.at) < firstOpen).length,
    sentWhileOpen: confirms.filter((r) => Date.parse(r.at) < incidentEnd && openAt(confirm, Date.parse(r.at))).length,
    ms: Date.now() - t0,
  };
}

/** Both runs, without then with the breaker; the workers keep the last run's settings afterwards. */
export async function runIncidentPhase(ctx: IncidentContext, o: IncidentOptions): Promise<IncidentRun[]> {
  const runs: IncidentRun[] = [];
  for (const which of ['without', 'with'] as const) {
    const run = await runOnce(ctx, o, which, runs.at(-1));
    runs.push(run);
    const nr = run.flows.filter((f) => f.seenState === 'needs_reconciliation').length;
    ctx.say(`incident phase, ${run.label}: done in ${secs(run.ms)}; ${nr} swaps seen in needs_reconciliation; confirm breaker: ${run.confirm.map((t) => `${t.state} at +${secs(t.at - run.incidentAt)}`).join(', ') || 'never opened'}`);
  }
  return runs;
}
