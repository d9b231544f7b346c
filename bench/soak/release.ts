/**
 * The soak's release phase (`--release`): a second release of the worker started beside the
 * running one while flows wait at every wait, promoted to the deployment's Current Version, then
 * rolled back to the first, while the seeded provider faults fire (chaos.ts soakFaults; no worker
 * is killed in this phase).
 *
 * The second release is THIS code under another build id (`<first>-rel-b`, WORKER_PROMOTE=never):
 * the repository keeps no altered-but-compatible bundle of the current workflows (the fixture of
 * test/fixtures/altered-workflows.ts is incompatible on purpose, and test/upgrade holds an OLDER
 * release, to which a rollback would replay newer histories on older code: not a rollback a
 * release may make). What it exercises is the routing: pinned swaps stay on the release that
 * started them across the promotion and the rollback, auto-upgrading flows (links, the provider
 * guard, the ledgers) move to the Current release at their next task, both ways.
 *
 * Parked before the promotion (K each, `--release-flows K`): swaps awaiting their PIN; swaps
 * confirming (their PIN sent just before the promotion, the provider holding the answer 6-9 s);
 * links awaiting payment; a swap and a link in needs_reconciliation (the swap: its one confirmation,
 * sent before the faults are set, hangs past a window of 11 s of its own, then the settle wait
 * passes; the link: paid after a cancel). A flow the faults keep from its wait is cancelled and
 * another takes its place. While the second release is Current: new swaps and links start (on it), half the parked
 * swaps get their PIN, half the parked links are paid, the link in needs_reconciliation is
 * resolved (as the ledger says). After the rollback: more new flows (on the first release), the
 * rest of the PINs and payments, the swap in needs_reconciliation resolved as the ledger says.
 *
 * Then every workflow that ran in the phase (the visibility store: running, or closed since the
 * phase began) has its history read: WorkflowTaskFailed events since the phase began (with their
 * causes; UNHANDLED_COMMAND apart, see readHistories), and the build ids of its completed workflow
 * tasks (which flows ran on both releases, and that no pinned swap did); every worker's log is
 * searched for nondeterminism errors (those failing a legacy query apart: nondeterminismInLogs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { FaultSetInput } from '../../src/simulator/faults';
import type { SimulatorControl } from '../../src/simulator/control-client';
import { testGatewayClient, answerOf } from '../../test/helpers/http';
import { NAMESPACE } from '../../tools/cluster/topology';
import { api, awaitEnd, continueSwap, type Flow, type FlowEnv, makeFlow, readView, runFlow, start } from './flows';
import { Rng, sleep } from './http';
import type { GuardWatch } from './guard';
import type { SoakTopology } from './topology';

export const NONDETERMINISM = /TMPRL1100|[Nn]ondeterminism|nondeterministic/;
const DEPLOYMENT = 'merchant-payment-flows';

export interface ReleaseOptions {
  /** Flows parked at each wait, and new flows started under each release. */
  perWait: number;
  /** The simulator's swap window during the phase, s (long enough for the phase). */
  window: number;
  settleWait: number;
  seed: number;
  faults: FaultSetInput;
}

export interface ReleaseResult {
  deployment: string;
  first: string;
  second: string;
  flows: Flow[];
  /** The parked flows' states just before the promotion (state → count). */
  parked: Record<string, number>;
  promoteMs: number;
  rollbackMs: number;
  histories: number;
  /** WorkflowTaskFailed events since the phase began, but UNHANDLED_COMMAND (see readHistories). */
  failedTasks: number;
  failedCauses: Record<string, number>;
  /** Which workflows, with the cause (the first ten). */
  failedIn: string[];
  /** WorkflowTaskFailed of cause UNHANDLED_COMMAND: the server's, not the code's (see readHistories). */
  unhandledCommand: number;
  /** Workflows whose tasks in the phase completed on both releases (moved with the routing). */
  ranOnBoth: number;
  /** Swaps of the phase (PINNED) whose tasks ran on both releases: must be none. */
  pinnedMoved: number;
  /** Flows of the phase by the releases that ran their tasks. */
  byRelease: Record<string, number>;
  /** Nondeterminism errors the workers logged running workflow code (a workflow task's replay). */
  nondeterminismLines: number;
  /**
   * …and those they logged failing a legacy query (the SDK's "Failing legacy query request"):
   * counted apart, with the workflow and the message (see nondeterminismInLogs).
   */
  queryNondeterminism: string[];
  ms: number;
}

export interface ReleaseContext {
  topology: SoakTopology;
  watch: GuardWatch;
  sim: SimulatorControl;
  env: Omit<FlowEnv, 'deadline' | 'seed'>;
  say: (line: string) => void;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function currentBuildId(conn: Connection): Promise<string | undefined> {
  const d = await conn.workflowService.describeWorkerDeployment({ namespace: NAMESPACE, deploymentName: DEPLOYMENT });
  return d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}

/** set-current-version, repeated while the server has not seen the version's pollers on every task queue. */
async function setCurrent(conn: Connection, buildId: string): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    try {
      await conn.workflowService.setWorkerDeploymentCurrentVersion({ namespace: NAMESPACE, deploymentName: DEPLOYMENT, buildId, identity: 'soak' });
      if ((await currentBuildId(conn)) === buildId) return Date.now() - t0;
    } catch (e) {
      if (Date.now() - t0 > 90_000) throw new Error(`set-current-version ${buildId}: ${(e as Error).message}`, { cause: e });
    }
    await sleep(1_000);
  }
}

/** A PIN or payment that was held back, then sent (drives the flow to its end). */
async function finishSwap(env: FlowEnv, f: Flow): Promise<void> {
  try {
    await continueSwap(env, f, new Rng((env.seed ^ Math.imul(f.index + 7, 0x9e3779b1)) >>> 0));
  } finally {
    f.done = true;
  }
}

async function payLink(env: FlowEnv, f: Flow): Promise<void> {
  try {
    if (f.paymentRef) await env.sim.completeLink(f.paymentRef).catch((e: Error) => f.notes.push(`pay: ${e.message.slice(0, 100)}`));
    await awaitEnd(env, f);
  } finally {
    f.done = true;
  }
}

/** The operator's resolution, as the provider's ledger says: what an operator checks before resolving. */
async function resolveAsLedger(ctx: ReleaseContext, env: FlowEnv, f: Flow, operatorKey: string): Promise<void> {
  if ((await readView(env, f))?.state !== 'needs_reconciliation') {
    await awaitEnd(env, f);
    f.done = true;
    return;
  }
  const { effects } = await ctx.sim.ledger({ ref: f.ref });
  const applied = effects.some((e) => e.kind === (f.kind === 'swap' ? 'swap.confirmed' : 'link.paid'));
  const outcome = applied ? (f.kind === 'swap' ? 'confirmed' : 'paid') : 'failed';
  const gw = testGatewayClient(env.gatewayUrls[f.gateway]!, { apiKey: operatorKey, timeoutMs: 30_000 });
  for (let i = 0; i < 30; i++) {
    try {
      const a = answerOf(
        await gw.POST('/v1/admin/flows/{flow_id}/resolve', {
          params: { path: { flow_id: f.id } },
          body: { outcome, provider_reference: f.paymentRef ?? f.ref, operator: 'soak', note: `the provider's ledger shows ${applied ? 'it applied' : 'nothing applied'}` },
        }),
      );
      if (a.status === 200) break;
      if (a.status === 409) f.notes.push(`resolve: 409 ${String(a.json?.message ?? '').slice(0, 80)}`);
      if (a.status === 409) break;
    } catch {
      /* a gateway away: again */
    }
    await sleep(1_000);
  }
  await awaitEnd(env, f);
  f.done = true;
}

/** Waits until `f`'s view is in one of `states` (bounded); returns the state seen last. */
async function until(env: FlowEnv, f: Flow, states: string[], ms: number): Promise<string | undefined> {
  const end = Date.now() + ms;
  let state: string | undefined;
  while (Date.now() < end) {
    state = (await readView(env, f))?.state as string | undefined;
    if (state && states.includes(state)) return state;
    await sleep(500);
  }
  return state;
}

interface Parked {
  awaitingPin: Flow[];
  confirming: Flow[];
  awaitingPayment: Flow[];
  nrSwap: Flow;
  nrLink: Flow;
}

/** A started flow (start() with the flow's own seeded amounts); keeps its payment_ref. */
async function started(env: FlowEnv, f: Flow): Promise<void> {
  const s = await start(env, f, new Rng((env.seed ^ Math.imul(f.index + 1, 0x9e3779b1)) >>> 0));
  f.paymentRef = (s?.payment_ref as string | undefined) ?? f.paymentRef;
}

type Mk = (kind: 'swap' | 'link', script: Flow['script']) => Flow;

const ENDS = ['confirmed', 'paid', 'failed', 'expired', 'cancelled', 'needs_reconciliation', 'reconciled'];

/** A flow that did not reach the wait it was meant for: cancelled (if it can be) and driven to its end. */
async function abandon(env: FlowEnv, f: Flow): Promise<void> {
  const body = { reason: 'soak: not parked' };
  await api(env, f, `cancel ${f.id}`, (gw) =>
    f.kind === 'swap'
      ? gw.POST('/v1/swaps/{swap_id}/cancel', { params: { path: { swap_id: f.id } }, body })
      : gw.POST('/v1/payment-links/{link_id}/cancel', { params: { path: { link_id: f.id } }, body }),
  ).catch(() => undefined);
  await awaitEnd(env, f);
  f.done = true;
}

/**
 * Starts flows (`make`) until `k` of them wait in `state` (with their pin_token, for a swap): under
 * the faults a start may fail or lose its answer. At most 3k tries; the others are ended.
 */
async function parkAt(env: FlowEnv, k: number, make: () => Flow, state: string): Promise<Flow[]> {
  const parked: Flow[] = [];
  for (let tries = 0; parked.length < k && tries < 3 * k; ) {
    const batch = Array.from({ length: k - parked.length }, make);
    tries += batch.length;
    await Promise.all(batch.map((f) => started(env, f)));
    for (const f of batch) {
      const seen = await until(env, f, [state, ...ENDS], 30_000);
      if (seen === state && (f.kind === 'link' || f.pinToken)) parked.push(f);
      else await abandon(env, f);
    }
  }
  return parked;
}

/**
 * A swap left in needs_reconciliation: its own window of 11 s, and its confirmation hangs. Set
 * before the seeded faults: its one confirmation is sent and hangs past the window (the one
 * ambiguous outcome it adds to the guard's count), then the settle wait passes. Resolves once the
 * provider holds that confirmation; `ended` once the swap is in needs_reconciliation.
 */
async function parkSwapInDoubt(ctx: ReleaseContext, env: FlowEnv, mk: Mk): Promise<{ flow: Flow; ended: Promise<void> }> {
  const f = mk('swap', 'right');
  await ctx.sim.setConfig({ swapExpiresInSecondsFor: { [f.ref]: 11 } });
  await ctx.sim.setRefFaults(f.ref, [{ endpoint: 'swap.confirm', kind: 'hang', maxMs: 20_000 }]);
  const ended = runFlow(env, f).then(() => {
    f.done = false; // resolved later
  });
  for (const until = Date.now() + 60_000; Date.now() < until && !f.done; ) {
    if ((await ctx.sim.ledger({ ref: f.ref, endpoint: 'swap.confirm' })).requests.length > 0) break;
    await sleep(250);
  }
  return { flow: f, ended };
}

/** A link left in needs_reconciliation: cancelled, then paid at the provider (at most two tries). */
async function parkLinkInDoubt(ctx: ReleaseContext, env: FlowEnv, mk: Mk, created?: Flow): Promise<Flow> {
  for (let attempt = 1; ; attempt++) {
    const f = attempt === 1 && created ? created : (await parkAt(env, 1, () => mk('link', 'cancelled'), 'awaiting_payment'))[0];
    if (!f) throw new Error('no payment link could be created for the release phase');
    await api(env, f, `cancel ${f.id}`, (gw) => gw.POST('/v1/payment-links/{link_id}/cancel', { params: { path: { link_id: f.id } }, body: { reason: 'soak: release phase' } })).catch(() => undefined);
    await until(env, f, ['cancelled'], 30_000);
    if (f.paymentRef) await ctx.sim.completeLink(f.paymentRef).catch((e: Error) => f.notes.push(`pay: ${e.message.slice(0, 100)}`));
    if ((await until(env, f, ['needs_reconciliation'], 30_000)) === 'needs_reconciliation' || attempt >= 2) return f;
    await awaitEnd(env, f);
    f.done = true;
  }
}

/**
 * The flows that wait across the promotion (but the links awaiting payment: created once the
 * second release runs, so that their lifetime, LINK_LIFETIME_SECONDS, outlasts the promotion).
 * The seeded faults are set once the swap meant for needs_reconciliation has sent its confirmation.
 */
async function park(ctx: ReleaseContext, env: FlowEnv, o: ReleaseOptions, mk: Mk): Promise<Omit<Parked, 'awaitingPayment'>> {
  const k = o.perWait;
  const [doubt, [link]] = await Promise.all([parkSwapInDoubt(ctx, env, mk), parkAt(env, 1, () => mk('link', 'cancelled'), 'awaiting_payment')]);
  await ctx.sim.setFaults(o.faults);
  const [nrLink, awaitingPin, confirming] = await Promise.all([
    parkLinkInDoubt(ctx, env, mk, link),
    parkAt(env, k, () => mk('swap', 'right'), 'awaiting_pin'),
    parkAt(env, k, () => mk('swap', 'right'), 'awaiting_pin'),
    doubt.ended,
  ]);
  // setFaults replaced the rules: the provider holds each answer of the confirming ones 6-9 s.
  for (const f of confirming) await ctx.sim.setRefFaults(f.ref, [{ endpoint: 'swap.confirm', kind: 'latency', latencyMs: [6_000, 9_000] }]);
  ctx.say(`  release phase: the swap in doubt is ${doubt.flow.seenState ?? 'unknown'}, the link paid after its cancel is ${(await readView(env, nrLink))?.state ?? 'unknown'}`);
  return { awaitingPin, confirming, nrSwap: doubt.flow, nrLink };
}

/** The promotion, the work done while the second release is Current, the rollback, and the rest. */
async function promoteAndRollBack(
  ctx: ReleaseContext,
  env: FlowEnv,
  conn: Connection,
  p: Parked,
  r: { first: string; second: string; mk: Mk; k: number },
): Promise<{ parked: Record<string, number>; promoteMs: number; rollbackMs: number; pending: Array<Promise<void>> }> {
  const operatorKey = ctx.topology.apiKey('operator');
  const pending: Array<Promise<void>> = [];
  const half = <T>(xs: T[]) => [xs.slice(0, Math.ceil(xs.length / 2)), xs.slice(Math.ceil(xs.length / 2))] as const;
  // The confirming ones: their PINs now, the provider holding each answer 6-9 s.
  pending.push(...p.confirming.map((f) => finishSwap(env, f)));
  await Promise.all(p.confirming.map((f) => until(env, f, ['confirming', 'confirmed', 'failed', 'expired', 'needs_reconciliation'], 8_000)));
  const all = [...p.awaitingPin, ...p.confirming, ...p.awaitingPayment, p.nrSwap, p.nrLink];
  const parked: Record<string, number> = {};
  for (const f of all) {
    const s = ((await readView(env, f))?.state as string | undefined) ?? 'unknown';
    parked[s] = (parked[s] ?? 0) + 1;
  }
  const promoteMs = await setCurrent(conn, r.second);
  ctx.say(`  release phase: ${r.second} made Current at ${new Date().toISOString()} (${secs(promoteMs)}); parked then: ${Object.entries(parked).map(([s, n]) => `${n} ${s}`).join(', ')}`);
  const fresh = (): Flow[] => [...Array.from({ length: r.k }, () => r.mk('swap', 'right')), ...Array.from({ length: r.k }, () => r.mk('link', 'paid'))];
  pending.push(...fresh().map((f) => runFlow(env, f)));
  const [pins1, pins2] = half(p.awaitingPin);
  const [pay1, pay2] = half(p.awaitingPayment);
  pending.push(...pins1.map((f) => finishSwap(env, f)), ...pay1.map((f) => payLink(env, f)), resolveAsLedger(ctx, env, p.nrLink, operatorKey));
  await sleep(8_000);
  const rollbackMs = await setCurrent(conn, r.first);
  ctx.say(`  release phase: rolled back, ${r.first} Current again at ${new Date().toISOString()} (${secs(rollbackMs)})`);
  pending.push(...fresh().map((f) => runFlow(env, f)));
  pending.push(...pins2.map((f) => finishSwap(env, f)), ...pay2.map((f) => payLink(env, f)), resolveAsLedger(ctx, env, p.nrSwap, operatorKey));
  return { parked, promoteMs, rollbackMs, pending };
}

/** Every workflow execution the visibility store lists for `query` (raw: their memos are encrypted). */
async function listExecutions(conn: Connection, query: string): Promise<Array<{ workflowId: string; runId: string }>> {
  const out: Array<{ workflowId: string; runId: string }> = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await conn.workflowService.listWorkflowExecutions({ namespace: NAMESPACE, query, pageSize: 500, ...(nextPageToken ? { nextPageToken } : {}) });
    for (const e of page.executions ?? []) if (e.execution?.workflowId && e.execution.runId) out.push({ workflowId: e.execution.workflowId, runId: e.execution.runId });
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return out;
}

/** One execution's history events (every page). */
async function historyOf(conn: Connection, execution: { workflowId: string; runId: string }): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await conn.workflowService.getWorkflowExecutionHistory({ namespace: NAMESPACE, execution, ...(nextPageToken ? { nextPageToken } : {}) });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return events;
}

type HistoryFigures = Pick<ReleaseResult, 'histories' | 'failedTasks' | 'failedCauses' | 'failedIn' | 'unhandledCommand' | 'ranOnBoth' | 'pinnedMoved' | 'byRelease'>;

const UNHANDLED_COMMAND = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

/**
 * Failed workflow tasks and the releases that ran each workflow, since `since`, from the histories.
 * A WorkflowTaskFailed of cause UNHANDLED_COMMAND is counted apart: the server refuses a task that
 * completes the workflow when a new event (a signal: a duplicate notification) arrived meanwhile,
 * and has the worker run the workflow again with it; no code failed. Every other cause is a task
 * the workflow code could not complete (nondeterminism among them).
 */
async function readHistories(conn: Connection, since: number, phaseIds: Set<string>): Promise<HistoryFigures> {
  const out: HistoryFigures = { histories: 0, failedTasks: 0, failedCauses: {}, failedIn: [], unhandledCommand: 0, ranOnBoth: 0, pinnedMoved: 0, byRelease: {} };
  const query = `ExecutionStatus = "Running" OR CloseTime >= "${new Date(since).toISOString()}"`;
  for (const wf of await listExecutions(conn, query)) {
    const events = await historyOf(conn, wf);
    out.histories++;
    const builds = new Set<string>();
    for (const e of events) {
      if (!e.eventTime || tsToMs(e.eventTime) < since) continue;
      const failed = e.workflowTaskFailedEventAttributes;
      const cause = failed ? (temporal.api.enums.v1.WorkflowTaskFailedCause[failed.cause ?? 0] ?? String(failed.cause)).replace('WORKFLOW_TASK_FAILED_CAUSE_', '') : '';
      if (failed && failed.cause === UNHANDLED_COMMAND) out.unhandledCommand++;
      else if (failed) {
        out.failedTasks++;
        out.failedCauses[cause] = (out.failedCauses[cause] ?? 0) + 1;
      }
      if (failed && out.failedIn.length < 10) out.failedIn.push(`${wf.workflowId} (${cause})`);
      const b = e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId;
      if (b) builds.add(b);
    }
    if (builds.size > 1) out.ranOnBoth++;
    if (phaseIds.has(wf.workflowId)) {
      if (builds.size > 1 && wf.workflowId.startsWith('swap-')) out.pinnedMoved++;
      const key = [...builds].sort().join(' + ') || 'none';
      out.byRelease[key] = (out.byRelease[key] ?? 0) + 1;
    }
  }
  return out;
}

/**
 * Nondeterminism errors in every worker's log (both releases, every restart). Those logged while
 * failing a legacy query are kept apart, with their run and message: a query is answered by a
 * worker from its cached copy of the workflow, and a failure there fails the query, not the
 * workflow (the workflow tasks' own failures are in the histories, readHistories).
 */
export function nondeterminismInLogs(logDir: string): { inTasks: number; inQueries: string[] } {
  const out = { inTasks: 0, inQueries: [] as string[] };
  const files = fs.readdirSync(logDir).filter((f) => /^(worker|release)-[\w-]+\.log$/.test(f));
  const texts = files.map((f) => fs.readFileSync(path.join(logDir, f), 'utf8'));
  // The workflow of a run, from any other line of it (the query's line names the run only).
  const workflowOf = (runId: string | undefined): string =>
    (runId && texts.map((t) => new RegExp(`"workflowId":"([^"]+)","(?:workflowR|r)unId":"${runId}"`).exec(t)?.[1]).find(Boolean)) || 'unknown workflow';
  for (const [i, file] of files.entries()) {
    for (const line of texts[i]!.split('\n')) {
      if (!NONDETERMINISM.test(line)) continue;
      let rec: { msg?: string; runId?: string; time?: string; failure?: string } = {};
      try {
        rec = JSON.parse(line) as typeof rec;
      } catch {
        /* not a JSON line: counted as a task's */
      }
      if (/query/i.test(rec.msg ?? '')) {
        const what = /\[TMPRL1100\][^"\\]*/.exec(rec.failure ?? line)?.[0] ?? 'nondeterminism';
        out.inQueries.push(`${file.replace(/\.log$/, '')} ${rec.time ?? ''} ${workflowOf(rec.runId)} (run ${rec.runId ?? '?'}): ${rec.msg}: ${what}`);
      } else out.inTasks++;
    }
  }
  return out;
}

export async function runReleasePhase(ctx: ReleaseContext, o: ReleaseOptions): Promise<ReleaseResult> {
  const t0 = Date.now();
  const { topology, sim } = ctx;
  const conn = await Connection.connect({ address: topology.temporalAddress, ...topology.operatorConnection() });
  try {
    const first = await currentBuildId(conn);
    if (!first) throw new Error(`the deployment ${DEPLOYMENT} has no Current Version`);
    const second = `${first}-rel-b`;
    const env: FlowEnv = { ...ctx.env, deadline: t0 + (o.window + o.settleWait) * 1000 + 6 * 60_000, seed: o.seed };
    const flows: Flow[] = [];
    const tag = `rl${o.seed.toString(36)}${Date.now().toString(36).slice(-4)}`;
    const mk = (kind: 'swap' | 'link', script: Flow['script']): Flow => {
      const f = makeFlow({ index: flows.length, kind, script, tag, gateways: env.gatewayUrls.length, phase: 'release' });
      flows.push(f);
      return f;
    };
    if (!(await ctx.watch.waitAllClosed(180_000))) ctx.say('  warning: a breaker was still open after 3 min; the release phase starts anyway');
    await sim.setConfig({ swapExpiresInSeconds: o.window });
    ctx.say(`release phase: ${first} Current; parking ${o.perWait} flow(s) at each wait while the seeded faults fire`);
    const parked = await park(ctx, env, o, mk);
    const w = await topology.startReleaseWorker('release-b-1', { WORKER_BUILD_ID: second, WORKER_PROMOTE: 'never' });
    ctx.say(`  release phase: ${second} started beside it (pid ${w.child.pid}), registered, not Current`);
    const awaitingPayment = await parkAt(env, o.perWait, () => mk('link', 'paid'), 'awaiting_payment');
    const moved = await promoteAndRollBack(ctx, env, conn, { ...parked, awaitingPayment }, { first, second, mk, k: o.perWait });
    await Promise.all(moved.pending);
    await sim.clearFaults();
    const histories = await readHistories(conn, t0, new Set(flows.map((f) => f.id)));
    const nd = nondeterminismInLogs(topology.logDir);
    return { deployment: DEPLOYMENT, first, second, flows, parked: moved.parked, promoteMs: moved.promoteMs, rollbackMs: moved.rollbackMs, ...histories, nondeterminismLines: nd.inTasks, queryNondeterminism: nd.inQueries, ms: Date.now() - t0 };
  } finally {
    await conn.close();
  }
}
