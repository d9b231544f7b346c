/**
 * What one gateway process lets a notification flood do to a flow: a notification this process
 * already signalled to a flow (same dedup key) is not signalled again, and a flow gets at most
 * `maxSignalsPerFlow` signals from this process (more answer 429 with Retry-After, so the provider
 * retries later). Both are per process and bounded in memory (LRU): several gateways each keep
 * their own, and the workflow deduplicates on its own anyway — this only keeps floods out of the
 * flow's history.
 */

export interface NotificationGuardOptions {
  /** Signals one flow may receive from this process (default 500). */
  maxSignalsPerFlow?: number;
  /** Flows remembered (LRU; default 10,000). */
  maxFlows?: number;
  /** Dedup keys remembered per flow (LRU; default 200). */
  maxKeysPerFlow?: number;
}

interface FlowEntry {
  signals: number;
  /** dedup key -> 'in_flight' while its signal is being sent, 'sent' after. */
  keys: Map<string, 'in_flight' | 'sent'>;
}

export type GuardVerdict = 'signal' | 'duplicate' | 'over_limit';

export class NotificationGuard {
  private readonly flows = new Map<string, FlowEntry>();
  readonly maxSignalsPerFlow: number;
  private readonly maxFlows: number;
  private readonly maxKeysPerFlow: number;

  constructor(opts: NotificationGuardOptions = {}) {
    this.maxSignalsPerFlow = opts.maxSignalsPerFlow ?? 500;
    this.maxFlows = opts.maxFlows ?? 10_000;
    this.maxKeysPerFlow = opts.maxKeysPerFlow ?? 200;
  }

  private entry(flowId: string): FlowEntry {
    let e = this.flows.get(flowId);
    if (e) {
      this.flows.delete(flowId); // most recently used goes last
    } else {
      e = { signals: 0, keys: new Map() };
    }
    this.flows.set(flowId, e);
    while (this.flows.size > this.maxFlows) this.flows.delete(this.flows.keys().next().value as string);
    return e;
  }

  /**
   * Whether to signal this delivery. 'signal' reserves the key and a signal slot: call settle()
   * with the signal's result.
   */
  admit(flowId: string, dedupKey: string): GuardVerdict {
    const e = this.entry(flowId);
    if (e.keys.has(dedupKey)) {
      const state = e.keys.get(dedupKey)!;
      e.keys.delete(dedupKey);
      e.keys.set(dedupKey, state);
      return 'duplicate';
    }
    if (e.signals >= this.maxSignalsPerFlow) return 'over_limit';
    e.signals++;
    e.keys.set(dedupKey, 'in_flight');
    while (e.keys.size > this.maxKeysPerFlow) e.keys.delete(e.keys.keys().next().value as string);
    return 'signal';
  }

  /** The signal of an admitted delivery was sent (ok) or failed (the key may be signalled again). */
  settle(flowId: string, dedupKey: string, ok: boolean): void {
    const e = this.flows.get(flowId);
    if (!e) return;
    if (ok) {
      if (e.keys.has(dedupKey)) e.keys.set(dedupKey, 'sent');
    } else {
      e.keys.delete(dedupKey);
      e.signals = Math.max(0, e.signals - 1);
    }
  }
}
