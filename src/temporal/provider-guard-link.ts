/**
 * A worker's link to the deployment's provider guard (workflows/provider-guard.ts): it reads the
 * guard every second (its memo, by describe: provider-guard-reading.ts), answers `admit` from
 * that reading without a round trip (but for a half-open breaker's trial, which it claims with the
 * `claimTrial` update), and reports the outcomes of this process's money-moving calls (the
 * `outcomes` signal, at most once a second, only when there is something to say; at once for a
 * call unanswered past `slow_ms`, and for an answer while a breaker is half-open).
 *
 * It fails closed: a reading older than `staleMs` (Temporal unreachable, the guard's workflow task
 * failing or waiting too long for a worker) holds every money-moving call, as a pause would, and says
 * why. The first reading starts the guard when there is none.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import {
  type BreakerSettings,
  CLASS_OF_ENDPOINT,
  closedGuardView,
  DEFAULT_BREAKER,
  type GuardView,
  holdReason,
  type MoneyClass,
  type OutcomeCounts,
  PROVIDER_GUARD_WORKFLOW_TYPE,
  providerGuardWorkflowId,
  trialClaimable,
} from '../contract/provider-guard';
import type { ProviderEndpoint } from '../contract/provider';
import { guardOutcomesSignal } from '../workflows/provider-guard';
import { claimGuardTrial, GuardClosedError, readGuard } from './provider-guard-reading';

/** What a provider call came to, as the guard counts it (from the provider client's observer). */
export interface GuardedCall {
  endpoint: ProviderEndpoint;
  status?: number;
  errorKind?: string;
  /** 'slow': the call is still unanswered after the slow notice (its final notice follows). */
  phase?: 'slow';
  /** The final notice of a call that had its slow notice. */
  slow?: boolean;
}

export interface ProviderGuardLinkOptions {
  client: Client;
  taskQueue: string;
  settings?: Partial<BreakerSettings>;
  pollMs?: number;
  /** A reading older than this holds every money-moving call (fail closed). */
  staleMs?: number;
  /** Told each new reading (metrics). */
  onView?: (view: GuardView | undefined) => void;
}

/** A reading older than this holds every money-moving call (the guard is read every second). */
export const STALE_MS = 5_000;

export class ProviderGuardLink {
  readonly workflowId: string;
  readonly settings: BreakerSettings;
  private view: GuardView | undefined;
  private readAt = 0;
  private lastError = 'not read yet';
  private pending: Partial<Record<MoneyClass, OutcomeCounts>> = {};
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: ProviderGuardLinkOptions) {
    this.workflowId = providerGuardWorkflowId(opts.taskQueue);
    this.settings = { ...DEFAULT_BREAKER, ...opts.settings };
  }

  /** Starts reading (and reporting) every pollMs; the first reading is awaited, bounded. */
  async start(): Promise<void> {
    const tick = async (): Promise<void> => {
      await this.flush();
      await this.read();
    };
    const loop = (): void => {
      if (this.stopped) return;
      this.polling = tick().catch(() => undefined).finally(() => {
        if (!this.stopped) this.timer = setTimeout(loop, this.opts.pollMs ?? 1_000).unref();
      });
    };
    await Promise.race([this.read().catch(() => undefined), new Promise((r) => setTimeout(r, 5_000).unref())]);
    this.timer = setTimeout(loop, this.opts.pollMs ?? 1_000).unref();
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.polling?.catch(() => undefined);
    await this.flush().catch(() => undefined);
  }

  /** The last reading, when fresh. */
  current(): GuardView | undefined {
    return Date.now() - this.readAt <= (this.opts.staleMs ?? STALE_MS) ? this.view : undefined;
  }

  /** Why `key`'s call of `cls` may not be sent now; undefined when it may. */
  holdReason(cls: MoneyClass, key?: string): string | undefined {
    const view = this.current();
    if (!view) {
      const since = this.readAt === 0 ? 'has not been read yet' : `has not answered for ${Math.round((Date.now() - this.readAt) / 1000)} s`;
      return `the provider guard ${this.workflowId} ${since} (${this.lastError}): held until it answers`;
    }
    return holdReason(view, cls, key);
  }

  /**
   * Why `key`'s call of `cls` may not be sent now (undefined: send it). A half-open breaker whose
   * GET succeeded lets one call through: the first flow to claim it (an update, bounded to 3 s).
   */
  async admit(cls: MoneyClass, key: string | undefined): Promise<string | undefined> {
    const view = this.current();
    if (view && key !== undefined && trialClaimable(view, cls)) {
      try {
        const claim = await claimGuardTrial(this.opts.client, this.workflowId, cls, key, 3_000);
        [this.view, this.readAt] = [claim.view, Date.now()]; // the other held calls see it claimed at once
      } catch (err) {
        this.lastError = err instanceof Error ? err.message.slice(0, 200) : String(err);
        return `the ${cls} breaker is half-open and its trial could not be claimed (${this.lastError})`;
      }
    }
    return this.holdReason(cls, key);
  }

  /** The provider client's observer: counts the money-moving calls' outcomes. */
  readonly record = (call: GuardedCall): void => {
    const cls = CLASS_OF_ENDPOINT[call.endpoint];
    if (!cls) return;
    const c = (this.pending[cls] ??= { ok: 0, ambiguous: 0, throttled: 0 });
    // Unanswered past slow_ms: ambiguous now (the breaker need not wait for the client's timeout);
    // its final notice then counts only an answer.
    if (call.phase === 'slow') c.ambiguous++;
    else if (call.errorKind === 'ambiguous') {
      if (!call.slow) c.ambiguous++;
    } else if (call.errorKind === 'rate_limited' || call.status === 429) c.throttled++;
    else if (call.errorKind === undefined || call.errorKind === 'rejected') c.ok++; // an answer: the provider works
    const b = this.view?.breakers[cls];
    if (call.phase === 'slow' || b?.state === 'half_open') this.flushSoon();
  };

  /** Reports now (and reads the guard's answer), instead of at the next tick. */
  private flushSoon(): void {
    if (this.stopped) return;
    void this.flush()
      .then(() => this.read())
      .catch(() => undefined);
  }

  private async read(): Promise<void> {
    try {
      this.view = await readGuard(this.opts.client, this.workflowId, 3_000);
      this.readAt = Date.now();
      this.tell(this.view);
    } catch (err) {
      this.lastError = err instanceof Error ? err.message.slice(0, 200) : String(err);
      if (err instanceof WorkflowNotFoundError) {
        // No guard at all: nobody ever paused (a pause starts it) and no breaker ever opened. That
        // is a reading too, so a new deployment's first calls are not held; then start it.
        this.view = closedGuardView(this.settings, Date.now());
        this.readAt = Date.now();
        this.tell(this.view);
        await this.ensureStarted();
        return;
      }
      if (!this.current()) this.tell(undefined);
      if (err instanceof GuardClosedError || /completed|closed/i.test(this.lastError)) await this.ensureStarted();
    }
  }

  /** Tells the observer (metrics) a reading; an observer's failure never touches the guard. */
  private tell(view: GuardView | undefined): void {
    try {
      this.opts.onView?.(view);
    } catch {
      /* a metric is not worth a held payment */
    }
  }

  /** Starts the guard when there is none (every process may; the first wins). */
  private async ensureStarted(): Promise<void> {
    await this.opts.client.workflow
      .start(PROVIDER_GUARD_WORKFLOW_TYPE, { workflowId: this.workflowId, taskQueue: this.opts.taskQueue, args: [{}], workflowIdConflictPolicy: 'USE_EXISTING' })
      .catch(() => undefined);
  }

  private async flush(): Promise<void> {
    const counts = this.pending;
    if (Object.keys(counts).length === 0) return;
    this.pending = {};
    try {
      await this.opts.client.workflow.signalWithStart(PROVIDER_GUARD_WORKFLOW_TYPE, {
        workflowId: this.workflowId,
        taskQueue: this.opts.taskQueue,
        args: [{}],
        signal: guardOutcomesSignal,
        signalArgs: [{ counts, settings: this.settings }],
      });
    } catch {
      // Not counted this time: put back for the next flush.
      for (const [cls, c] of Object.entries(counts) as Array<[MoneyClass, OutcomeCounts]>) {
        const p = (this.pending[cls] ??= { ok: 0, ambiguous: 0, throttled: 0 });
        p.ok += c.ok;
        p.ambiguous += c.ambiguous;
        p.throttled += c.throttled;
      }
    }
  }
}
