/**
 * The provider guard of a deployment (`provider-guard-<task queue>`, one per deployment): the
 * kill switch and the circuit breakers of contract/provider-guard.ts, one truth for every worker
 * and gateway. Workers report the outcomes of their money-moving calls (the `outcomes` signal,
 * batched) and read the guard (the `guard` query, every second) before each such call; operators
 * pause and resume through updates that record who did it. An open breaker waits its cool-down,
 * then half-opens and sends the categories GET as a probe: success closes it, failure opens it
 * again. It continues as new when its history grows, carrying its state.
 */
import { allHandlersFinished, condition, continueAsNew, defineQuery, defineSignal, defineUpdate, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ProviderActivities } from '../activities/types';
import {
  type BreakerSettings,
  type ClassState,
  DEFAULT_BREAKER,
  type GuardView,
  MONEY_CLASSES,
  type MoneyClass,
  type OutcomeReport,
} from '../contract/provider-guard';

export const guardQuery = defineQuery<GuardView>('guard');
export const guardOutcomesSignal = defineSignal<[OutcomeReport]>('outcomes');
export const guardPauseUpdate = defineUpdate<GuardView, [{ by: string; reason: string }]>('pause');
export const guardResumeUpdate = defineUpdate<GuardView, [{ by: string }]>('resume');

export interface ProviderGuardInput {
  /** Carried over by continue-as-new. */
  view?: GuardView;
  window?: WindowEntry[];
}

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
    const closed = (): ClassState => ({ state: 'closed', since: iso(now) });
    this.view = input.view ?? { breakers: { initiate: closed(), confirm: closed(), create: closed() }, settings: DEFAULT_BREAKER, audit: [] };
    this.window = input.window ?? [];
  }

  /** Adds a worker's report; opens the breakers it pushes over a threshold. */
  report(r: OutcomeReport, now: number): void {
    if (r?.settings) this.view.settings = { ...DEFAULT_BREAKER, ...r.settings };
    for (const cls of MONEY_CLASSES) {
      const c = r?.counts?.[cls];
      if (c && c.ok + c.ambiguous + c.throttled > 0) this.window.push({ at: now, cls, ok: c.ok, ambiguous: c.ambiguous, throttled: c.throttled });
    }
    this.prune(now);
    for (const cls of MONEY_CLASSES) if (this.view.breakers[cls].state === 'closed') this.evaluate(cls, now);
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

  /** The earliest probe time of an open breaker (ms), if any. */
  nextProbeAt(): number | undefined {
    const times = MONEY_CLASSES.map((c) => this.view.breakers[c]).filter((b) => b.state === 'open' && b.probe_at).map((b) => Date.parse(b.probe_at!));
    return times.length ? Math.min(...times) : undefined;
  }

  /** The open breakers whose cool-down is over become half-open (answers them). */
  halfOpen(now: number): MoneyClass[] {
    const due = MONEY_CLASSES.filter((c) => this.view.breakers[c].state === 'open' && Date.parse(this.view.breakers[c].probe_at ?? '') <= now);
    for (const c of due) this.view.breakers[c] = { state: 'half_open', since: iso(now), reason: this.view.breakers[c].reason };
    return due;
  }

  /** The probe's answer: closes the half-open breakers, or opens them for another cool-down. */
  probed(classes: readonly MoneyClass[], ok: boolean, now: number, why: string): void {
    for (const c of classes) {
      if (this.view.breakers[c].state !== 'half_open') continue;
      if (ok) this.view.breakers[c] = { state: 'closed', since: iso(now) };
      else this.open(c, `probe failed (${why})`, now);
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

/** The pause update's input check (synchronous: an update validator). */
function checkActor(input: { by?: unknown; reason?: unknown }, needReason: boolean): void {
  if (typeof input?.by !== 'string' || input.by.length === 0 || input.by.length > 200) throw new Error('by: must name who acts (1-200 characters)');
  if (needReason && (typeof input.reason !== 'string' || input.reason.length === 0 || input.reason.length > 500)) throw new Error('reason: must say why (1-500 characters)');
}

export async function providerGuardWorkflow(input: ProviderGuardInput = {}): Promise<void> {
  const book = new GuardBook(input, Date.now());
  let changes = 0;
  setHandler(guardQuery, () => book.view);
  setHandler(guardOutcomesSignal, (r) => {
    book.report(r, Date.now());
    changes++;
  });
  setHandler(
    guardPauseUpdate,
    ({ by, reason }) => {
      book.pause(by, reason, Date.now());
      changes++;
      return book.view;
    },
    { validator: (i) => checkActor(i, true) },
  );
  setHandler(
    guardResumeUpdate,
    ({ by }) => {
      book.resume(by, Date.now());
      changes++;
      return book.view;
    },
    { validator: (i) => checkActor(i, false) },
  );
  const { listCategories } = proxyActivities<ProviderActivities>({ startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 1 } });

  for (;;) {
    const probeAt = book.nextProbeAt();
    const seen = changes;
    await condition(() => changes !== seen || workflowInfo().continueAsNewSuggested || changes > 1000, probeAt === undefined ? undefined : Math.max(1, probeAt - Date.now()));
    if (workflowInfo().continueAsNewSuggested || changes > 1000) break;
    const due = book.halfOpen(Date.now());
    if (due.length === 0) continue;
    // The probe: a GET that moves no money; only its success lets money move again.
    const answer = await listCategories().then(
      () => ({ ok: true, why: 'ok' }),
      (err: unknown) => ({ ok: false, why: err instanceof Error ? err.message.slice(0, 200) : 'failed' }),
    );
    book.probed(due, answer.ok, Date.now(), answer.why);
    changes++;
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof providerGuardWorkflow>({ view: book.view, window: book.window });
}
