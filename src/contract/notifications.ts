/**
 * The one reader of the provider's notifications (payload, signing, retries and ordering are not
 * documented): the body parsed, the tolerant mapping of a payload to an outcome, the id it is
 * deduplicated by, the facts a flow cross-checks (payment_ref, amount, currency), and the compaction
 * of large payloads. Every part of the project that looks inside a notification uses this module.
 * Part of the provider contract
 * (re-exported by provider.ts) but zod-free: the workflow bundle imports it, and the Temporal
 * worker evaluates a workflow's modules anew for every workflow it starts or replays, so a
 * schema library there costs CPU on every flow (measured by the bench's profile).
 */

export type NotificationOutcome = 'paid' | 'failed' | 'pending' | 'unknown';

const PAID_WORDS = ['success', 'successful', 'succeeded', 'paid', 'completed', 'complete', 'approved', 'settled'];
const FAILED_WORDS = ['failed', 'failure', 'declined', 'rejected', 'reversed', 'cancelled', 'canceled', 'error', 'abandoned'];
const PENDING_WORDS = ['pending', 'processing', 'initiated', 'in_progress', 'awaiting_payment', 'created'];

/** The fields, in order, where a status-like value is looked for (top level, then under `data`). */
export const NOTIFICATION_STATUS_FIELDS = ['transaction_status', 'payment_status', 'status', 'event'] as const;

function classifyWord(value: unknown): NotificationOutcome | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  const tail = v.split(/[.:/]/).pop() ?? v; // "collection.completed" -> "completed"
  for (const w of [v, tail]) {
    if (PAID_WORDS.includes(w)) return 'paid';
    if (FAILED_WORDS.includes(w)) return 'failed';
    if (PENDING_WORDS.includes(w)) return 'pending';
  }
  return undefined;
}

/**
 * Tolerant mapping of an undocumented notification payload to an outcome. Looks at `data.*` first
 * (the transaction), then the top level; unknown shapes map to 'unknown' and never move a flow.
 */
export function mapNotificationOutcome(payload: unknown): NotificationOutcome {
  if (payload === null || typeof payload !== 'object') return 'unknown';
  const top = payload as Record<string, unknown>;
  const inner = top.data && typeof top.data === 'object' ? (top.data as Record<string, unknown>) : undefined;
  for (const scope of [inner, top]) {
    if (!scope) continue;
    for (const f of NOTIFICATION_STATUS_FIELDS) {
      const c = classifyWord(scope[f]);
      if (c) return c;
    }
  }
  return 'unknown';
}

/**
 * A notification payload as flows keep it (signal input and state): itself when its JSON is at
 * most NOTIFICATION_KEPT_PAYLOAD_CHARS, else only the fields the flows read (status words,
 * references, amount, currency, id), so a flood of large deliveries cannot fill a flow's history.
 */
export const NOTIFICATION_KEPT_PAYLOAD_CHARS = 4_096;
const KEPT_NOTIFICATION_FIELDS = ['event', 'status', 'transaction_status', 'payment_status', 'payment_ref', 'txn_ref', 'txn_merchant_ref', 'amount', 'currency', 'notification_id', 'id', 'sequence', 'occurred_at'];
export function compactNotificationPayload(payload: unknown): unknown {
  let size: number;
  try {
    size = JSON.stringify(payload)?.length ?? 0;
  } catch {
    return { kept: 'unserialisable payload' };
  }
  if (size <= NOTIFICATION_KEPT_PAYLOAD_CHARS) return payload;
  const top = payload && typeof payload === 'object' ? (payload as Record<string, unknown>) : {};
  const data = top.data && typeof top.data === 'object' ? (top.data as Record<string, unknown>) : {};
  const pick = (o: Record<string, unknown>) =>
    Object.fromEntries(
      KEPT_NOTIFICATION_FIELDS.filter((k) => typeof o[k] === 'string' || typeof o[k] === 'number').map((k) => [k, typeof o[k] === 'string' ? (o[k] as string).slice(0, 200) : o[k]]),
    );
  return { truncated_from_chars: size, ...pick(top), data: pick(data) };
}

/** A notification body as received: JSON when it parses as an object or array, else the text itself. */
export function parseNotificationBody(raw: string): unknown {
  const t = raw.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      /* not JSON after all: kept as text */
    }
  }
  return raw;
}

const scopes = (payload: unknown): { top: Record<string, unknown>; data: Record<string, unknown> } | undefined => {
  if (!payload || typeof payload !== 'object') return undefined;
  const top = payload as Record<string, unknown>;
  const data = top.data && typeof top.data === 'object' ? (top.data as Record<string, unknown>) : top;
  return { top, data };
};

/**
 * The payload's own id, when it names one (data.notification_id, notification_id, event_id, id; at
 * most 200 characters): duplicates of one delivery share it. Without one, the receiver
 * deduplicates by a hash of the raw body.
 */
export function notificationIdOf(payload: unknown): string | undefined {
  const s = scopes(payload);
  if (!s) return undefined;
  const inner = s.data === s.top ? {} : s.data;
  for (const v of [inner.notification_id, s.top.notification_id, s.top.event_id, s.top.id]) {
    if (typeof v === 'string' && v.length > 0 && v.length <= 200) return v;
  }
  return undefined;
}

/** What a notification says about the payment, from `data` first, then the top level. */
export interface NotificationFacts {
  payment_ref?: string;
  amount?: number;
  currency?: string;
}

export function notificationFacts(payload: unknown): NotificationFacts {
  const s = scopes(payload);
  if (!s) return {};
  const pick = <T>(k: string, t: 'string' | 'number'): T | undefined =>
    typeof s.data[k] === t ? (s.data[k] as T) : typeof s.top[k] === t ? (s.top[k] as T) : undefined;
  return { payment_ref: pick<string>('payment_ref', 'string'), amount: pick<number>('amount', 'number'), currency: pick<string>('currency', 'string') };
}

/** A notification read whole: what the receiver and the flows need of it. */
export interface ReadNotification extends NotificationFacts {
  payload: unknown;
  outcome: NotificationOutcome;
  /** The payload's own id, if any (see notificationIdOf). */
  id?: string;
}

export function readNotification(raw: string): ReadNotification {
  const payload = parseNotificationBody(raw);
  return { payload, outcome: mapNotificationOutcome(payload), id: notificationIdOf(payload), ...notificationFacts(payload) };
}
