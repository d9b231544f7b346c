/** The soak's table and its last line. */
import type { ChaosStats } from './chaos';
import { LINK_SCRIPTS, SWAP_SCRIPTS, type Flow } from './flows';
import type { HeldSwap, IncidentRun } from './incident';
import type { ReleaseResult } from './release';
import type { Verdict, Verification } from './verify';

export interface ReportInput {
  command: string;
  seed: number;
  simulatorSeed?: number;
  concurrency: number;
  settings: string;
  flows: Flow[];
  chaos: ChaosStats;
  verification: Verification;
  wallMs: number;
  flowsMs: number;
}

export interface Totals {
  flows: number;
  lost: number;
  duplicate: number;
  inconsistent: number;
}

const pct = (xs: number[], p: number): number | undefined => {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const secs = (ms: number | undefined) => (ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`);

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => `  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}`.trimEnd());
}

export function totals(v: Verification): Totals {
  return {
    flows: v.verdicts.length,
    lost: v.verdicts.filter((x) => x.lost).length,
    duplicate: v.verdicts.reduce((n, x) => n + x.duplicate.length, 0),
    inconsistent: v.verdicts.filter((x) => x.inconsistent.length > 0).length,
  };
}

export function lastLine(t: Totals): string {
  return `soak: ${t.flows} flows, ${t.lost} lost, ${t.duplicate} duplicate side effects, ${t.inconsistent} inconsistent`;
}

export function report(r: ReportInput): string[] {
  const out: string[] = [];
  const { chaos, verification: v } = r;
  out.push('', '== soak ==', `  ${r.command}`, `  seed ${r.seed}${r.simulatorSeed !== undefined ? ` (simulator ${r.simulatorSeed})` : ''}; concurrency ${r.concurrency}; ${r.settings}`);
  out.push(`  wall time ${secs(r.wallMs)} (flows ${secs(r.flowsMs)})`);

  out.push('', '-- kills --');
  const byEndpoint = new Map<string, number>();
  for (const k of chaos.inFlight) byEndpoint.set(k.endpoint, (byEndpoint.get(k.endpoint) ?? 0) + 1);
  out.push(
    ...table([
      ['kind', 'kills', 'during a provider POST', 'restarts', 'down'],
      [
        'worker (SIGKILL)',
        String(chaos.workerKills),
        `${chaos.inFlight.length}${byEndpoint.size ? ` (${[...byEndpoint].map(([e, n]) => `${e} ${n}`).join(', ')})` : ''}`,
        `${chaos.workerRestarts}${chaos.workerRestartFailures ? ` (+${chaos.workerRestartFailures} failed tries)` : ''}`,
        '',
      ],
      ['gateway (SIGKILL)', String(chaos.gatewayKills.length), '', String(chaos.gatewayKills.filter((g) => g.downMs >= 0).length), chaos.gatewayKills.map((g) => secs(g.downMs)).join(', ')],
      ['Temporal server (SIGKILL)', String(chaos.temporalKills.length), '', String(chaos.temporalKills.filter((g) => g.downMs >= 0).length), chaos.temporalKills.map((g) => secs(g.downMs)).join(', ')],
      ['identity provider (SIGKILL)', String(chaos.idpKills.length), '', String(chaos.idpKills.filter((g) => g.downMs >= 0).length), chaos.idpKills.map((g) => secs(g.downMs)).join(', ')],
    ]),
  );

  out.push('', '-- provider faults injected (simulator ledger: requests by endpoint and fault) --');
  const kinds = ['latency', 'status5xx', 'reset', 'rate_limit', 'garbage', 'apply_then_fail', 'hang'];
  const endpoints = ['swap.init', 'swap.confirm', 'link.create'];
  const rows: string[][] = [['endpoint', 'requests', ...kinds]];
  for (const e of endpoints) {
    const reqs = v.ledger.requests.filter((q) => q.endpoint === e);
    rows.push([e, String(reqs.length), ...kinds.map((k) => String(reqs.filter((q) => q.fault === k).length))]);
  }
  const withLatency = v.ledger.requests.filter((q) => (q.latency_ms ?? 0) > 0).length;
  out.push(...table(rows));
  out.push(`  (latency column: requests with latency only; ${withLatency} requests had latency added in all)`);
  const eff = (k: string) => v.ledger.effects.filter((e) => e.kind === k).length;
  out.push(
    `  notifications: ${eff('notification.delivered')} deliveries (duplicates and reordered stale copies included), ` +
      `${eff('notification.failed_attempt')} failed attempts, ${eff('notification.refused')} refused`,
  );

  // The default soak's flows (the phases report their own below).
  const chaosVerdicts = v.verdicts.filter((x) => x.flow.phase === 'chaos');
  out.push('', '-- final states (script → state) --');
  for (const [kind, scripts, states] of [
    ['swap', SWAP_SCRIPTS, ['confirmed', 'failed', 'expired', 'cancelled', 'needs_reconciliation', 'lost']],
    ['link', LINK_SCRIPTS, ['paid', 'failed', 'expired', 'cancelled', 'needs_reconciliation', 'lost']],
  ] as const) {
    const mine = chaosVerdicts.filter((x) => x.flow.kind === kind);
    const rows2: string[][] = [[`${kind} script`, 'flows', ...states]];
    for (const s of [...scripts, 'all'] as const) {
      const xs = mine.filter((x) => s === 'all' || x.flow.script === s);
      rows2.push([s, String(xs.length), ...states.map((st) => String(xs.filter((x) => (st === 'lost' ? x.lost : !x.lost && x.state === st)).length))]);
    }
    out.push(...table(rows2));
  }

  out.push('', '-- reconciliations --');
  for (const kind of ['swap', 'link'] as const) {
    const recs = chaosVerdicts.filter((x) => x.flow.kind === kind && x.reconciliation);
    const applied = recs.filter((x) => x.reconciliation!.providerApplied).length;
    out.push(`  ${kind}: ${recs.length} needs_reconciliation, the provider had applied ${applied} (${kind === 'swap' ? 'a committed confirm' : 'a payment'}), ${recs.length - applied} not`);
    for (const x of recs.filter((y) => !y.reconciliation!.providerApplied).slice(0, 10)) {
      out.push(`    not applied: ${x.flow.id} (${x.flow.script}): ${x.reason ?? ''}`.slice(0, 300));
    }
  }

  const lat = r.flows.filter((f) => f.phase === 'chaos').filter((f) => f.pinAt !== undefined && f.outcomeAt !== undefined).map((f) => f.outcomeAt! - f.pinAt!);
  out.push('', '-- PIN → outcome (the script\'s last PIN sent → the swap\'s end seen) --');
  out.push(`  n ${lat.length}, p50 ${secs(pct(lat, 50))}, p99 ${secs(pct(lat, 99))}, max ${secs(pct(lat, 100))}`);

  const lostToken = r.flows.filter((f) => f.kind === 'swap' && f.notes.some((n) => n.startsWith('no pin_token'))).length;
  const startPending = r.flows.filter((f) => f.notes.some((n) => /start (pending|answer lost)/.test(n))).length;
  out.push('', '-- driver notes --');
  out.push(`  starts whose answer was lost (504 or 409 on retry): ${startPending}; swaps whose PIN script could not run for want of the pin_token: ${lostToken}`);
  const noteKinds = new Map<string, number>();
  for (const f of r.flows) for (const n of new Set(f.notes.map((x) => x.replace(/soak-[\w-]+/g, '<ref>').replace(/\d+ ms/g, 'N ms').slice(0, 110)))) noteKinds.set(n, (noteKinds.get(n) ?? 0) + 1);
  for (const [n, k] of [...noteKinds].sort((a, b) => b[1] - a[1]).slice(0, 8)) out.push(`    ${String(k).padStart(4)} flows: ${n}`);

  const bad = v.verdicts.filter((x) => x.lost || x.duplicate.length || x.inconsistent.length);
  if (bad.length) {
    out.push('', '-- flows that failed the check --');
    for (const x of bad) {
      const what = [x.lost ? `lost (state ${x.state ?? 'unknown'})` : '', ...x.duplicate, ...x.inconsistent].filter(Boolean).join('; ');
      out.push(`  ${x.flow.id} [${x.flow.phase} ${x.flow.kind} ${x.flow.script}] ${what}`);
      out.push(`    view: state ${x.state ?? '—'}; reason: ${x.reason ?? '—'}`);
      out.push(`    ledger: effects ${JSON.stringify(x.effects)}; requests ${JSON.stringify(x.requests)}`);
      if (x.flow.notes.length) out.push(`    driver: ${x.flow.notes.slice(0, 5).join(' | ')}`);
    }
  }
  out.push('');
  return out;
}

// ---- the phases ------------------------------------------------------------------------------

const rel = (ms: number, from: number) => `+${((ms - from) / 1000).toFixed(1)} s`;

/** The confirm breaker's changes in one incident run, relative to the incident's start. */
function breakerLine(run: IncidentRun): string {
  if (run.confirm.length === 0) return 'never opened';
  const parts = run.confirm.map((t) => `${t.state.replace('_', '-')} at ${rel(t.at, run.incidentAt)}${t.state === 'open' && t.reason ? ` (${t.reason})` : ''}`);
  const reopenedInIncident = run.confirm.some((t) => t.state === 'closed' && t.at < run.incidentEnd);
  return `${parts.join(', ')}${reopenedInIncident ? '; it closed while confirmations still hung (its probe, the categories GET, succeeded)' : ''}`;
}

/** needs_reconciliation of a run's flows (final views). */
export const nrOf = (run: IncidentRun, verdicts: Verdict[]) => verdicts.filter((v) => v.flow.phase === run.phase && v.state === 'needs_reconciliation').length;

export function incidentReport(runs: IncidentRun[], verdicts: Verdict[]): string[] {
  const out: string[] = ['', '-- provider incident (confirmations hang; the same seeded traffic without and with the breaker) --'];
  const states = ['confirmed', 'expired', 'needs_reconciliation', 'failed', 'reconciled', 'lost'];
  const rows: string[][] = [['run', 'swaps', 'PIN in incident', ...states, 'held', 'held, then sent', 'held, never sent']];
  for (const run of runs) {
    const mine = verdicts.filter((v) => v.flow.phase === run.phase);
    const held = (sent: HeldSwap['sent']) => String([...run.held.values()].filter((h) => h.sent === sent).length);
    rows.push([run.label, String(mine.length), String(run.pinsInIncident), ...states.map((s) => String(mine.filter((v) => (s === 'lost' ? v.lost : !v.lost && v.state === s)).length)), String(run.held.size), held('after'), held('never')]);
  }
  out.push(...table(rows));
  for (const run of runs) {
    out.push(`  ${run.label}: incident ${((run.incidentEnd - run.incidentAt) / 1000).toFixed(1)} s; thresholds ${run.settings ?? 'unknown'}`);
    out.push(`    confirm breaker: ${breakerLine(run)}`);
    out.push(`    confirmations the provider received in the incident before the breaker opened: ${run.sentBeforeOpen}, while it was open: ${run.sentWhileOpen}; needs_reconciliation: ${nrOf(run, verdicts)}`);
    const heldEnds = new Map<string, number>();
    for (const [id, h] of run.held) {
      const v = verdicts.find((x) => x.flow.id === id);
      const key = `${v?.state ?? 'unknown'} (${{ before: 'sent before it was held', after: 'sent after it was held', never: 'never sent' }[h.sent]})`;
      heldEnds.set(key, (heldEnds.get(key) ?? 0) + 1);
    }
    if (run.held.size) out.push(`    held confirmations ended: ${[...heldEnds].map(([k, n]) => `${n} ${k}`).join(', ')}`);
  }
  return out;
}

/**
 * The rule of the guard the incident phase checks: a swap whose confirmation was held and never
 * reached the provider (held on every attempt) ends expired — also when its window closed while a
 * held retry waited for a worker (mpf-held-timeout-expires-v1) — never confirmed, failed or in
 * doubt. (One held, then sent when the breaker let it go, and held again keeps its doubt: that is
 * the guard's rule too.)
 */
export function judgeHeld(runs: IncidentRun[], verdicts: Verdict[]): void {
  for (const run of runs) {
    for (const [id, h] of run.held) {
      const v = verdicts.find((x) => x.flow.id === id);
      if (v && h.sent === 'never' && !v.lost && v.state !== 'expired') v.inconsistent.push(`held on every attempt, never sent, yet ${v.state}`);
    }
  }
}

export function releaseReport(r: ReleaseResult, verdicts: Verdict[]): string[] {
  const mine = verdicts.filter((v) => v.flow.phase === 'release');
  const ends = new Map<string, number>();
  for (const v of mine) ends.set(`${v.flow.kind} ${v.lost ? 'lost' : v.state}`, (ends.get(`${v.flow.kind} ${v.lost ? 'lost' : v.state}`) ?? 0) + 1);
  const causes = Object.entries(r.failedCauses).map(([c, n]) => `${n} ${c}`).join(', ');
  return [
    '',
    '-- release (a second release beside the first, promoted, rolled back; seeded faults) --',
    `  deployment ${r.deployment}: ${r.first} → ${r.second} (same code, another build id) in ${secs(r.promoteMs)}, back to ${r.first} in ${secs(r.rollbackMs)}; phase ${secs(r.ms)}`,
    `  parked at the promotion: ${Object.entries(r.parked).map(([s, n]) => `${n} ${s}`).join(', ')}`,
    `  ${mine.length} flows ended: ${[...ends].sort().map(([k, n]) => `${n} ${k}`).join(', ')}`,
    `  tasks by release (flows of the phase): ${Object.entries(r.byRelease).map(([b, n]) => `${n} on ${b}`).join('; ')}; workflows that ran on both: ${r.ranOnBoth}; pinned swaps that moved: ${r.pinnedMoved}`,
    `  ${r.histories} histories read: ${r.failedTasks} failed workflow tasks${causes ? ` (${causes})` : ''}; worker logs: ${r.nondeterminismLines} nondeterminism errors`,
    ...(r.unhandledCommand
      ? [`  and ${r.unhandledCommand} workflow task(s) refused as UNHANDLED_COMMAND (a signal came as the task completed the workflow; redone with it: not a failure of the code)`]
      : []),
    ...(r.failedIn.length ? [`  in: ${r.failedIn.join(', ')}`] : []),
    ...(r.queryNondeterminism.length
      ? [
          `  and ${r.queryNondeterminism.length} nondeterminism error(s) logged failing a legacy query (the query failed, not the workflow: its tasks are above):`,
          ...r.queryNondeterminism.slice(0, 5).map((l) => `    ${l}`.slice(0, 300)),
        ]
      : []),
  ];
}

/** The last line with the phases' figures after it (the plain soak's last line is unchanged). */
export function phasesLastLine(t: Totals, p: { release?: ReleaseResult; incident?: { without: number; with: number } }): string {
  let line = lastLine(t);
  if (p.release) line += `, ${p.release.nondeterminismLines} nondeterminism errors, ${p.release.failedTasks} failed workflow tasks`;
  if (p.incident) line += `; needs_reconciliation in the incident: ${p.incident.without} without the breaker, ${p.incident.with} with it`;
  return line;
}
