/**
 * The provider guard of a deployment (`provider-guard-<task queue>`, one per deployment): the
 * kill switch and the circuit breakers of contract/provider-guard.ts, one truth for every worker
 * and gateway. Workers report the outcomes of their money-moving calls (the `outcomes` signal,
 * batched); every worker and gateway reads the guard's view from its memo (a describe, every
 * second, which needs no worker; the `guard` query only for a run that keeps no memo yet) and
 * workers check it when each such call gets its connection; operators
 * pause and resume through updates that record who did it. An open breaker waits its cool-down,
 * then half-opens and sends the categories GET as a probe: failure opens it again; success lets
 * one real call of the class through as the trial (claimed by the first flow that asks, the
 * `claimTrial` update), and that call's outcome closes or re-opens it (unanswered in time: it
 * re-opens). It continues as new when its history grows, carrying its state.
 */
import {
  condition,
  defineQuery,
  defineSignal,
  defineUpdate,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { EventActivities, EventSettings } from '../activities/event-types';
import { EVENT_DELIVERY_WORKFLOW_TYPE, eventDeliveryWorkflowId, eventsClosedSignal, type FlowEvent } from './event-types';
import type { ProviderActivities } from '../activities/types';
import {
  type BreakerSettings,
  type ClassState,
  closedGuardView,
  GUARD_MEMO_KEY,
  DEFAULT_BREAKER,
  type GuardView,
  MONEY_CLASSES,
  type MoneyClass,
  type OutcomeReport,
  type TrialClaim,
  trialClaimable,
} from '../contract/provider-guard';
import { runEntityLoop } from './entity-loop';
import { GUARD_MEMO_PATCH, GUARD_TRIAL_PATCH } from './patches';
import { RECORD_FAILURE, recordRefusal } from './record-failures';

export const guardQuery = defineQuery<GuardView>('guard');
export const guardOutcomesSignal = defineSignal<[OutcomeReport]>('outcomes');
export const guardPauseUpdate = defineUpdate<GuardView, [{ by: string; reason: string }]>('pause');
export const guardResumeUpdate = defineUpdate<GuardView, [{ by: string }]>('resume');
/** A flow (its workflow id, `key`) asks to be a half-open breaker's one trial call. */
export const guardClaimTrialUpdate = defineUpdate<TrialClaim, [{ cls: MoneyClass; key: string }]>('claimTrial');
/**
 * The flow `key` gives back the trial it claimed without sending the call (a gateway's start that
 * started nothing: a reference already used, a field refused, a limit): the next caller may claim it.
 */
export const guardReleaseTrialUpdate = defineUpdate<TrialClaim, [{ cls: MoneyClass; key: string }]>('releaseTrial');

/** How long a claimed trial may go without an outcome (past the slow notice) before it counts as failed. */
export const TRIAL_SLACK_MS = 15_000;

export interface ProviderGuardInput {
  /** Carried over by continue-as-new. */
  view?: GuardView;
  window?: WindowEntry[];
  /** Merchant events emitted so far (their ids count on across runs). */
  event_seq?: number;
}

/** What the merchant is told of a change: the breakers that opened or closed, a pause or a resume. */
export function guardChanges(before: GuardView, after: GuardView): Array<{ type: string; data: Record<string, unknown> }> {
  const out: Array<{ type: string; data: Record<string, unknown> }> = [];
  if (!before.paused && after.paused) out.push({ type: 'provider.paused', data: { state: 'paused', by: after.paused.by, reason: after.paused.reason } });
  if (before.paused && !after.paused) out.push({ type: 'provider.resumed', data: { state: 'resumed', by: after.audit.at(-1)?.by } });
  for (const cls of MONEY_CLASSES) {
    const [was, now] = [before.breakers[cls], after.breakers[cls]];
    if (was.state === 'closed' && now.state !== 'closed') out.push({ type: 'provider.breaker_opened', data: { state: 'open', class: cls, reason: now.reason, probe_at: now.probe_at } });
    if (was.state !== 'closed' && now.state === 'closed') out.push({ type: 'provider.breaker_closed', data: { state: 'closed', class: cls } });
  }
  return out;
}

const snapshot = (v: GuardView): GuardView => ({ ...v, breakers: { ...v.breakers } });

interface WindowEntry {
  at: number;
  cls: MoneyClass;
  ok: number;
  ambiguous: number;
  throttled: number;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The guard's state and decisions (pure: time is passed in). */
export class GuardBook {
  readonly view: GuardView;
  window: WindowEntry[];

  constructor(input: ProviderGuardInput, now: number) {
    this.view = input.view ?? closedGuardView(DEFAULT_BREAKER, now);
    this.view.settings = { ...DEFAULT_BREAKER, ...this.view.settings }; // a view carried from before a setting existed
    this.window = input.window ?? [];
  }

  /** Adds a worker's report; opens the breakers it pushes over a threshold. */
  report(r: OutcomeReport, now: number): void {
    if (r?.settings) this.view.settings = { ...DEFAULT_BREAKER, ...r.settings };
    for (const cls of MONEY_CLASSES) {
      const c = r?.counts?.[cls];
      // Outcomes of calls that were in flight when the breaker opened say nothing of the provider
      // after its probe: only a closed breaker counts (the soak saw them re-open it at once).
      if (c && c.ok + c.ambiguous + c.throttled > 0 && this.view.breakers[cls].state === 'closed') {
        this.window.push({ at: now, cls, ok: c.ok, ambiguous: c.ambiguous, throttled: c.throttled });
      }
    }
    this.prune(now);
    for (const cls of MONEY_CLASSES) if (this.view.breakers[cls].state === 'closed') this.evaluate(cls, now);
    // A claimed trial's outcome decides a half-open breaker (only the trial is sent while it is half-open).
    for (const cls of MONEY_CLASSES) {
      const [b, c] = [this.view.breakers[cls], r?.counts?.[cls]];
      if (b.state !== 'half_open' || b.trial?.key === undefined || !c) continue;
      if (c.ambiguous > 0 || c.throttled > 0) this.open(cls, `its trial call was ${c.ambiguous > 0 ? 'ambiguous (no answer in time)' : 'answered 429'}`, now);
      else if (c.ok > 0) this.close(cls, now);
    }
  }

  /** The flow `key` claims the half-open class's trial: granted to the first (again to the same flow). */
  claimTrial(cls: MoneyClass, key: string, now: number): boolean {
    const b = this.view.breakers[cls];
    if (b.state === 'half_open' && b.trial?.key === key) return true;
    if (!trialClaimable(this.view, cls)) return false;
    this.view.breakers[cls] = { ...b, trial: { since: b.trial!.since, key, claimed_at: iso(now), until: iso(now + this.view.settings.slow_ms + TRIAL_SLACK_MS) } };
    return true;
  }

  /**
   * The flow `key` gives back the half-open class's trial it holds (it will send no call of it):
   * unclaimed again, its cool-down counted from now, as when the probe half-opened it. False when
   * `key` does not hold it (another flow's claim, or an outcome decided it already).
   */
  releaseTrial(cls: MoneyClass, key: string, now: number): boolean {
    const b = this.view.breakers[cls];
    if (b.state !== 'half_open' || b.trial?.key !== key) return false;
    this.view.breakers[cls] = { ...b, trial: { since: iso(now) } };
    return true;
  }

  /**
   * When a trial is over without an outcome: a claimed one at its `until`; one nobody claimed
   * after a cool-down, and never before TRIAL_SLACK_MS (held calls retry and readers read every
   * second or so: a call that was waiting has claimed it by then), when nothing was waiting.
   */
  private trialEndsAt(t: NonNullable<ClassState['trial']>): number {
    return t.until !== undefined ? Date.parse(t.until) : Date.parse(t.since) + Math.max(this.view.settings.cooldown_ms, TRIAL_SLACK_MS);
  }

  /** The half-open classes whose trial is over without an outcome. */
  expiredTrials(now: number): MoneyClass[] {
    return MONEY_CLASSES.filter((c) => {
      const b = this.view.breakers[c];
      return b.state === 'half_open' && b.trial !== undefined && this.trialEndsAt(b.trial) <= now;
    });
  }

  /**
   * A claimed trial no outcome decided in time (the worker sending it died?) counts as failed:
   * open again. An unclaimed one closes the breaker: its GET succeeded and no call of the class
   * waited or came for a cool-down, so closing releases nothing at once, and the next calls are
   * counted as usual (three slow ones open it again within seconds).
   */
  expireTrials(now: number): void {
    for (const c of this.expiredTrials(now)) {
      if (this.view.breakers[c].trial?.key !== undefined) this.open(c, 'its trial call was not answered in time', now);
      else this.close(c, now);
    }
  }

  private close(cls: MoneyClass, now: number): void {
    this.view.breakers[cls] = { state: 'closed', since: iso(now) };
    this.window = this.window.filter((e) => e.cls !== cls); // a closed breaker counts afresh
  }

  private prune(now: number): void {
    this.window = this.window.filter((e) => now - e.at < this.view.settings.window_ms);
  }

  private evaluate(cls: MoneyClass, now: number): void {
    const s: BreakerSettings = this.view.settings;
    const mine = this.window.filter((e) => e.cls === cls);
    const sum = (k: 'ok' | 'ambiguous' | 'throttled'): number => mine.reduce((n, e) => n + e[k], 0);
    const [ok, ambiguous, throttled] = [sum('ok'), sum('ambiguous'), sum('throttled')];
    const calls = ok + ambiguous + throttled;
    const seconds = Math.round(s.window_ms / 1000);
    let reason: string | undefined;
    if (ambiguous >= s.ambiguous_count) reason = `${ambiguous} ambiguous outcomes in ${seconds} s`;
    else if (calls >= s.min_calls && ambiguous / calls >= s.ambiguous_share) reason = `${ambiguous} of ${calls} calls ambiguous in ${seconds} s`;
    else if (throttled >= s.throttled_count) reason = `${throttled} answers 429 in ${seconds} s`;
    if (reason) this.open(cls, reason, now);
  }

  open(cls: MoneyClass, reason: string, now: number): void {
    this.view.breakers[cls] = { state: 'open', since: iso(now), reason, probe_at: iso(now + this.view.settings.cooldown_ms) };
    this.window = this.window.filter((e) => e.cls !== cls);
  }

  /** The earliest probe time of an open breaker, or end of a claimed trial (ms), if any. */
  nextWakeAt(): number | undefined {
    const probes = MONEY_CLASSES.map((c) => this.view.breakers[c]).filter((b) => b.state === 'open' && b.probe_at).map((b) => Date.parse(b.probe_at!));
    const trials = MONEY_CLASSES.map((c) => this.view.breakers[c]).filter((b) => b.state === 'half_open' && b.trial).map((b) => this.trialEndsAt(b.trial!));
    const times = [...probes, ...trials];
    return times.length ? Math.min(...times) : undefined;
  }

  /** The open breakers whose cool-down is over become half-open (answers them). */
  halfOpen(now: number): MoneyClass[] {
    const due = MONEY_CLASSES.filter((c) => this.view.breakers[c].state === 'open' && Date.parse(this.view.breakers[c].probe_at ?? '') <= now);
    for (const c of due) this.view.breakers[c] = { state: 'half_open', since: iso(now), reason: this.view.breakers[c].reason };
    return due;
  }

  /**
   * The probe's answer: a failure opens the half-open breakers for another cool-down; a success
   * lets one real call through as the trial (`trial`), or closes them (guards from before the trial).
   */
  probed(classes: readonly MoneyClass[], ok: boolean, now: number, why: string, trial = false): void {
    for (const c of classes) {
      const b = this.view.breakers[c];
      if (b.state !== 'half_open') continue;
      if (!ok) this.open(c, `probe failed (${why})`, now);
      else if (trial) this.view.breakers[c] = { ...b, trial: { since: iso(now) } };
      else this.close(c, now);
    }
  }

  pause(by: string, reason: string, now: number): void {
    this.view.paused = { by, at: iso(now), reason };
    this.audit({ action: 'pause', by, at: iso(now), reason });
  }

  resume(by: string, now: number): void {
    this.view.paused = undefined;
    this.audit({ action: 'resume', by, at: iso(now) });
  }

  private audit(entry: GuardView['audit'][number]): void {
    this.view.audit = [...this.view.audit, entry].slice(-20);
  }
}

/**
 * An update's argument the guard does not take: refused by the update's validator (the update is
 * never accepted, nothing is recorded) as a record's typed refusal (record-failures.ts), naming
 * the field in its details, so a client reads the field, never the message.
 */
function refuseField(field: string, rule: string): never {
  throw recordRefusal(RECORD_FAILURE.invalidInput, `${field}: ${rule}`, { field });
}

/** The pause and resume updates' input check (synchronous: an update validator). */
function checkActor(input: { by?: unknown; reason?: unknown }, needReason: boolean): void {
  if (typeof input?.by !== 'string' || input.by.length === 0 || input.by.length > 200) refuseField('by', 'must name who acts (1-200 characters)');
  if (needReason && (typeof input.reason !== 'string' || input.reason.length === 0 || input.reason.length > 500)) refuseField('reason', 'must say why (1-500 characters)');
}

/** The trial claim's input check (synchronous: an update validator). */
function checkClaim(input: { cls?: unknown; key?: unknown }): void {
  if (!MONEY_CLASSES.includes(input?.cls as MoneyClass)) refuseField('cls', `must be one of ${MONEY_CLASSES.join(', ')}`);
  if (typeof input.key !== 'string' || input.key.length === 0 || input.key.length > 300) refuseField('key', 'must name the flow (1-300 characters)');
}

export async function providerGuardWorkflow(input: ProviderGuardInput = {}): Promise<void> {
  const book = new GuardBook(input, Date.now());
  const outbox = new GuardEvents(input.event_seq ?? 0);
  let changes = 0;
  // Since mpf-guard-memo-v1 the view is also in the memo, for readers that have no worker to ask.
  let memoized = '';
  const memo = (): void => {
    const now = JSON.stringify(book.view);
    if (now === memoized || !patched(GUARD_MEMO_PATCH)) return;
    memoized = now;
    upsertMemo({ [GUARD_MEMO_KEY]: book.view });
  };
  memo();
  /** Runs a change of the guard's state and queues the merchant events it makes. */
  const change = <T>(fn: () => T): T => {
    const before = snapshot(book.view);
    const result = fn();
    for (const c of guardChanges(before, book.view)) book.view.events = [...(book.view.events ?? []), outbox.add(c.type, c.data)].slice(-20);
    changes++;
    memo();
    return result;
  };
  setHandler(guardQuery, () => book.view);
  setHandler(guardOutcomesSignal, (r) => change(() => book.report(r, Date.now())));
  setHandler(guardPauseUpdate, ({ by, reason }) => change(() => (book.pause(by, reason, Date.now()), book.view)), { validator: (i) => checkActor(i, true) });
  setHandler(guardResumeUpdate, ({ by }) => change(() => (book.resume(by, Date.now()), book.view)), { validator: (i) => checkActor(i, false) });
  setHandler(guardClaimTrialUpdate, ({ cls, key }) => change(() => ({ granted: book.claimTrial(cls, key, Date.now()), view: book.view })), { validator: checkClaim });
  setHandler(guardReleaseTrialUpdate, ({ cls, key }) => change(() => ({ granted: book.releaseTrial(cls, key, Date.now()), view: book.view })), { validator: checkClaim });
  const { listCategories } = proxyActivities<ProviderActivities>({ startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 1 } });

  // The loop of every keyed record (entity-loop.ts): it continues as new when Temporal suggests it
  // or after 1000 changes (never by history length alone: the guard never did), after every
  // handler finished, delivering its queued events first, and carries its view, window and count
  // of events over.
  await runEntityLoop<typeof providerGuardWorkflow>({
    maxHistory: Infinity,
    alsoLong: () => changes > 1000,
    round: async (long) => {
      const wakeAt = book.nextWakeAt();
      const seen = changes;
      await condition(() => changes !== seen || long(), wakeAt === undefined ? undefined : Math.max(1, wakeAt - Date.now()));
      await outbox.deliver();
      if (long()) return 'continue-as-new';
      if (book.expiredTrials(Date.now()).length > 0) change(() => book.expireTrials(Date.now()));
      const due = book.halfOpen(Date.now()); // open -> half-open is no news for the merchant
      if (due.length === 0) return 'again';
      // The probe: a GET that moves no money; only its success lets money move again.
      const answer = await listCategories().then(
        () => ({ ok: true, why: 'ok' }),
        (err: unknown) => ({ ok: false, why: err instanceof Error ? err.message.slice(0, 200) : 'failed' }),
      );
      // Since mpf-guard-trial-v1 a successful GET lets one real call decide (a GET can succeed while confirmations hang).
      const trial = answer.ok && patched(GUARD_TRIAL_PATCH);
      change(() => book.probed(due, answer.ok, Date.now(), answer.why, trial));
      await outbox.deliver();
      return 'again';
    },
    beforeClose: () => outbox.deliver(),
    carryOver: () => [{ view: book.view, window: book.window, event_seq: outbox.seq }],
  });
}

/**
 * The guard's merchant events (provider.*): each batch goes to the worker's configured endpoints
 * (MERCHANT_WEBHOOK_URL) through the ordinary delivery workflow, one per batch
 * (`events-provider-guard-<task queue>-<first seq>`), abandoned to finish on its own. No endpoint
 * (or settings that cannot be read): dropped, as a flow's are. Never fails the guard.
 */
class GuardEvents {
  private pending: FlowEvent[] = [];
  private settings: EventSettings | undefined;
  private readonly eventSettings = proxyLocalActivities<EventActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } }).eventSettings;

  constructor(public seq: number) {}

  add(type: string, data: Record<string, unknown>): { id: string; type: string; timestamp: string } {
    this.seq++;
    const e: FlowEvent = { id: `evt_${workflowInfo().workflowId}_${this.seq}`, type, timestamp: new Date().toISOString(), data: { object: 'provider_guard', ...data } };
    this.pending.push(e);
    return { id: e.id, type: e.type, timestamp: e.timestamp };
  }

  async deliver(): Promise<void> {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    try {
      this.settings ??= await this.eventSettings({});
      if (this.settings.endpoints.length === 0) return;
      const guardId = workflowInfo().workflowId;
      const child = await startChild(EVENT_DELIVERY_WORKFLOW_TYPE, {
        workflowId: `${eventDeliveryWorkflowId(guardId)}-${batch[0]!.id.split('_').at(-1)}`,
        args: [{ flow_id: guardId, endpoints: this.settings.endpoints, schedule: this.settings.schedule, events: batch }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: 'ABANDON',
      });
      await child.signal(eventsClosedSignal);
    } catch (err) {
      log.warn('provider guard: events not delivered', { error: String(err), events: batch.map((e) => e.id) });
    }
  }
}
