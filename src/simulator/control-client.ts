/**
 * A small typed client of the simulator's /_sim control API (undici), for tests and tools.
 *   const sim = new SimulatorControl(running.baseUrl);
 *   await sim.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'apply_then_fail', times: 1 }] });
 *   const { effects } = await sim.ledger({ ref: 'txn-1' });
 */
import { request } from 'undici';
import type { FaultRuleInput, FaultSetInput } from './faults';
import type { EffectEntry, LedgerFilter, RequestEntry } from './ledger';
import type { ConfigPatch } from './options';

export interface LedgerView {
  requests: RequestEntry[];
  effects: EffectEntry[];
}

export interface LinkOutcome {
  payment_ref: string;
  state: 'paid' | 'failed';
  redirect_to: string;
}

export class SimulatorControlError extends Error {
  override name = 'SimulatorControlError';
  constructor(
    message: string,
    readonly statusCode: number,
  ) {
    super(message);
  }
}

export class SimulatorControl {
  private readonly base: string;

  constructor(baseUrl: string) {
    this.base = baseUrl.replace(/\/+$/, '');
  }

  private async call<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const res = await request(`${this.base}/_sim${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const msg = (parsed as { message?: string } | undefined)?.message ?? text.slice(0, 200);
      throw new SimulatorControlError(`simulator control ${method} ${path} failed (${res.statusCode}): ${msg}`, res.statusCode);
    }
    return parsed as T;
  }

  /** Requests and effects; `endpoint` filters requests, `ref` matches a ref or a payment_ref. */
  ledger(filter: LedgerFilter = {}): Promise<LedgerView> {
    const q = new URLSearchParams();
    if (filter.endpoint) q.set('endpoint', filter.endpoint);
    if (filter.ref) q.set('ref', filter.ref);
    const qs = q.toString();
    return this.call<LedgerView>('GET', `/ledger${qs ? `?${qs}` : ''}`);
  }

  async reset(): Promise<void> {
    await this.call('POST', '/reset');
  }

  async setFaults(faults: FaultSetInput): Promise<void> {
    await this.call('PUT', '/faults', faults);
  }

  async clearFaults(): Promise<void> {
    await this.call('DELETE', '/faults');
  }

  /** The current rules (each with how often it fired) and notification faults. */
  async faults(): Promise<{ rules: Array<FaultRuleInput & { fired: number }>; notifications: Record<string, unknown> }> {
    return (await this.call<{ data: { rules: Array<FaultRuleInput & { fired: number }>; notifications: Record<string, unknown> } }>('GET', '/faults')).data;
  }

  /** Replaces the rules of one transaction (txn_ref or txn_merchant_ref; each rule gets that ref); every other rule stays as it is. */
  async setRefFaults(ref: string, rules: FaultRuleInput[]): Promise<void> {
    await this.call('PUT', `/faults/refs/${encodeURIComponent(ref)}`, { rules });
  }

  /** Removes the rules of one transaction. */
  async clearRefFaults(ref: string): Promise<void> {
    await this.call('DELETE', `/faults/refs/${encodeURIComponent(ref)}`);
  }

  async setConfig(patch: ConfigPatch): Promise<void> {
    await this.call('PUT', '/config', patch);
  }

  /** The configuration without secrets (PINs and credentials are never shown). */
  async config(): Promise<Record<string, unknown>> {
    return (await this.call<{ data: Record<string, unknown> }>('GET', '/config')).data;
  }

  async completeLink(paymentRef: string): Promise<LinkOutcome> {
    return (await this.call<{ data: LinkOutcome }>('POST', `/links/${encodeURIComponent(paymentRef)}/complete`)).data;
  }

  async failLink(paymentRef: string): Promise<LinkOutcome> {
    return (await this.call<{ data: LinkOutcome }>('POST', `/links/${encodeURIComponent(paymentRef)}/fail`)).data;
  }

  /** Sends the link's or swap's notification again (a fresh id), with `status` or the one its state implies. */
  async notify(paymentRef: string, status?: 'successful' | 'failed' | 'pending'): Promise<{ payment_ref: string; ref: string; status: string; notification_id: string }> {
    return (await this.call<{ data: { payment_ref: string; ref: string; status: string; notification_id: string } }>('POST', `/notify/${encodeURIComponent(paymentRef)}`, status ? { status } : {})).data;
  }

  /** Waits until the ledger has an effect matching `pred` (polling), or throws after `timeoutMs`. */
  async waitForEffect(pred: (e: EffectEntry) => boolean, timeoutMs = 5_000, filter: LedgerFilter = {}): Promise<EffectEntry> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = (await this.ledger(filter)).effects.find(pred);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching simulator effect within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

export function createControlClient(baseUrl: string): SimulatorControl {
  return new SimulatorControl(baseUrl);
}
