/**
 * The simulator's ledger: every provider request it received (headers and body masked) and every
 * side effect it committed, in one sequence. Secrets never enter it: the Authorization value
 * becomes 'Bearer ***', and wallet_pin / auth_token become '***' wherever they appear in a body.
 * Each list keeps the newest MAX_ENTRIES entries.
 */

export type EndpointKey = 'swap.init' | 'swap.confirm' | 'link.create' | 'categories';

export type EffectKind =
  | 'swap.initialized'
  | 'swap.confirmed'
  | 'swap.pin_rejected'
  | 'link.created'
  | 'link.paid'
  | 'link.failed'
  | 'link.abandoned'
  | 'notification.delivered'
  | 'notification.failed_attempt'
  | 'notification.refused'
  | 'notification.triggered';

export interface RequestEntry {
  seq: number;
  at: string;
  endpoint: EndpointKey;
  method: string;
  path: string;
  /** HTTP status sent; 'reset' when the socket was destroyed; 'hang' when never answered; 'pending' while in progress. */
  status: number | 'reset' | 'hang' | 'pending';
  /** The injected fault's kind ('latency' when only latency was added). */
  fault?: string;
  /** Injected latency before the request was handled. */
  latency_ms?: number;
  /** The transaction reference the request concerned, once known. */
  ref?: string;
  payment_ref?: string;
  headers: Record<string, string>;
  body: unknown;
}

export interface EffectEntry {
  seq: number;
  at: string;
  kind: EffectKind;
  ref: string;
  payment_ref?: string;
  details?: Record<string, unknown>;
}

export interface LedgerFilter {
  endpoint?: string;
  ref?: string;
}

const SECRET_FIELDS = new Set(['wallet_pin', 'auth_token', 'pin', 'secret_key', 'access_token', 'password']);
const MAX_ENTRIES = 10_000;

export function maskHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const value = Array.isArray(v) ? v.join(', ') : v;
    const key = k.toLowerCase();
    if (key === 'authorization') out[key] = /^bearer\s/i.test(value) ? 'Bearer ***' : '***';
    else if (key === 'cookie' || key === 'proxy-authorization') out[key] = '***';
    else out[key] = value;
  }
  return out;
}

export function maskBody(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(maskBody);
  if (body === null || typeof body !== 'object') return body;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    out[k] = SECRET_FIELDS.has(k.toLowerCase()) ? '***' : maskBody(v);
  }
  return out;
}

/** What a state file keeps of the ledger (persistence.ts). */
export interface LedgerSnapshot {
  seq: number;
  requests: RequestEntry[];
  effects: EffectEntry[];
}

export class Ledger {
  private seq = 0;
  private requests: RequestEntry[] = [];
  private effects: EffectEntry[] = [];
  /**
   * Called after every change: 'effect' (and 'clear') when the provider's records changed too
   * (every change of a swap or link records an effect in the same tick), 'request' for a request
   * received. A state file saves effects at once and requests soon after (persistence.ts).
   */
  onChange: (kind: 'request' | 'effect') => void = () => undefined;

  snapshot(): LedgerSnapshot {
    return { seq: this.seq, requests: this.requests, effects: this.effects };
  }

  restore(s: LedgerSnapshot): void {
    this.seq = s.seq;
    this.requests = s.requests;
    this.effects = s.effects;
  }

  recordRequest(e: Omit<RequestEntry, 'seq' | 'at' | 'status' | 'headers' | 'body'> & {
    headers: Record<string, string | string[] | undefined>;
    body: unknown;
  }): RequestEntry {
    const entry: RequestEntry = {
      seq: ++this.seq,
      at: new Date().toISOString(),
      endpoint: e.endpoint,
      method: e.method,
      path: e.path,
      status: 'pending',
      headers: maskHeaders(e.headers),
      body: maskBody(e.body),
    };
    this.requests.push(entry);
    if (this.requests.length > MAX_ENTRIES) this.requests.shift();
    this.onChange('request');
    return entry;
  }

  recordEffect(kind: EffectKind, ref: string, paymentRef?: string, details?: Record<string, unknown>): EffectEntry {
    const entry: EffectEntry = { seq: ++this.seq, at: new Date().toISOString(), kind, ref };
    if (paymentRef !== undefined) entry.payment_ref = paymentRef;
    if (details !== undefined) entry.details = maskBody(details) as Record<string, unknown>;
    this.effects.push(entry);
    if (this.effects.length > MAX_ENTRIES) this.effects.shift();
    this.onChange('effect');
    return entry;
  }

  /** `endpoint` filters requests only; `ref` matches an entry's ref or payment_ref. */
  query(filter: LedgerFilter = {}): { requests: RequestEntry[]; effects: EffectEntry[] } {
    const byRef = (e: { ref?: string; payment_ref?: string }): boolean =>
      filter.ref === undefined || e.ref === filter.ref || e.payment_ref === filter.ref;
    return {
      requests: this.requests.filter((r) => (filter.endpoint === undefined || r.endpoint === filter.endpoint) && byRef(r)),
      effects: this.effects.filter(byRef),
    };
  }

  clear(): void {
    this.requests = [];
    this.effects = [];
    this.onChange('effect');
  }
}
