/**
 * A worker's link to the deployment's provider guard (workflows/provider-guard.ts): it reads the
 * guard every second through the process's one GuardReader (its memo, by describe:
 * provider-guard-reading.ts; shared with a client in the same process), answers `admit` from
 * that reading without a round trip (but for a half-open breaker's trial, which it claims with the
 * `claimTrial` update), and reports the outcomes of this process's money-moving calls (the
 * `outcomes` signal, before a polled reading, only when there is something to say; at once for a
 * call unanswered past `slow_ms`, and for an answer while a breaker is half-open).
 *
 * It fails closed: a reading older than GUARD_FRESH_MS (Temporal unreachable, the guard's workflow
 * task failing or waiting too long for a worker) holds every money-moving call, as a pause would,
 * and says why. A reading that finds no guard, or a closed one, starts it.
 */
import type { Client } from '@temporalio/client';
import {
  type BreakerSettings,
  CLASS_OF_ENDPOINT,
  DEFAULT_BREAKER,
  type GuardView,
  type MoneyClass,
  type OutcomeCounts,
  PROVIDER_GUARD_WORKFLOW_TYPE,
  providerGuardWorkflowId,
} from '../contract/provider-guard';
import type { ProviderEndpoint } from '../contract/provider';
import { guardOutcomesSignal } from '../workflows/provider-guard';
import { GUARD_FRESH_MS, GuardReader } from './provider-guard-reading';

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
  /** Told each new reading (metrics). */
  onView?: (view: GuardView | undefined) => void;
}

/** A reading older than this holds every money-moving call (the guard is read every second). */
export const STALE_MS = GUARD_FRESH_MS;

export class ProviderGuardLink {
  readonly workflowId: string;
  readonly settings: BreakerSettings;
  private readonly reader: GuardReader;
  private pending: Partial<Record<MoneyClass, OutcomeCounts>> = {};
  private unsubscribe: (() => Promise<void>) | undefined;
  private stopped = false;

  constructor(private readonly opts: ProviderGuardLinkOptions) {
    this.workflowId = providerGuardWorkflowId(opts.taskQueue);
    this.settings = { ...DEFAULT_BREAKER, ...opts.settings };
    this.reader = GuardReader.of(opts.client.options.namespace, this.workflowId);
  }

  /** Starts reading (and reporting) every second, through the process's one reader; the first reading is awaited, bounded. */
  async start(): Promise<void> {
    this.unsubscribe = this.reader.subscribe({
      client: this.opts.client,
      beforeRead: () => this.flush(),
      onMissing: () => this.ensureStarted(),
      ...(this.opts.onView ? { onView: this.opts.onView } : {}),
    });
    await Promise.race([this.reader.read().catch(() => undefined), new Promise((r) => setTimeout(r, 5_000).unref())]);
  }

  async close(): Promise<void> {
    this.stopped = true;
    await this.unsubscribe?.();
    await this.flush().catch(() => undefined);
  }

  /** The last reading, when fresh. */
  current(): GuardView | undefined {
    return this.reader.current();
  }

  /** Why `key`'s call of `cls` may not be sent now; undefined when it may (fail closed: no fresh reading holds it). */
  holdReason(cls: MoneyClass, key?: string): string | undefined {
    return this.reader.holdReason(cls, key, 'fail-closed');
  }

  /**
   * Why `key`'s call of `cls` may not be sent now (undefined: send it). A half-open breaker whose
   * GET succeeded lets one call through: the first flow to claim it (an update, bounded to 3 s).
   */
  async admit(cls: MoneyClass, key: string | undefined): Promise<string | undefined> {
    if (key !== undefined) {
      try {
        await this.reader.claimTrial(this.opts.client, cls, key, 3_000);
      } catch (err) {
        return `the ${cls} breaker is half-open and its trial could not be claimed (${this.reader.noteError(err)})`;
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
    const b = this.reader.current()?.breakers[cls];
    if (call.phase === 'slow' || b?.state === 'half_open') this.flushSoon();
  };

  /** Reports now (and reads the guard's answer), instead of at the next tick. */
  private flushSoon(): void {
    if (this.stopped) return;
    void this.flush()
      .then(() => this.reader.read())
      .catch(() => undefined);
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
