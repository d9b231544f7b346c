/**
 * The record of one Idempotency-Key (`idem-<sha256(scope, key)>`), workflow-safe: the first
 * request that claims it, the fingerprint of its route and fields, and the answer it got. A key is
 * claimed atomically (one update at a time, update-with-start on a fixed id), so every gateway
 * process sees the same record: no shared memory, no eventually consistent visibility query.
 *
 * The fingerprint holds keyed hashes (HMAC) of each field, never the values: a PIN's body or a
 * token never reaches history. Stored answers hold no token either (a swap's pin_token is derived
 * again when the answer is replayed). The record lives `ttl_seconds` (24 h by default), then the
 * workflow completes and the key may be used again.
 */
import { condition, defineQuery, defineUpdate, setHandler } from '@temporalio/workflow';
import { runEntityLoop } from './entity-loop';
import { RECORD_FAILURE, recordRefusal } from './record-failures';

export const IDEMPOTENCY_WORKFLOW_TYPE = 'idempotencyWorkflow';

export interface IdempotencyInput {
  ttl_seconds: number;
}

export interface IdempotencyClaim {
  /** e.g. `POST /v1/swaps` */
  route: string;
  /** Field name -> keyed hash of its value (HMAC under the key `key_id`). */
  fields: Record<string, string>;
  key_id: string;
  claim_id: string;
  /** A claim in progress this long may be taken over (its gateway died or gave up). */
  stale_after_ms: number;
}

export interface StoredAnswer {
  status: number;
  body: unknown;
}

export type ClaimAnswer =
  | { kind: 'claimed'; takeover: boolean }
  | { kind: 'replay'; answer: StoredAnswer; first_at: string }
  | { kind: 'in_progress'; since: string }
  | { kind: 'mismatch'; route?: string; fields: string[] }
  /** The record's hashes use another key of the ring: hash again with `key_id`, then claim. */
  | { kind: 'rekey'; key_id: string };

interface KeyRecord {
  route: string;
  fields: Record<string, string>;
  key_id: string;
  claim_id: string;
  claimed_at_ms: number;
  /** False once released (the request ended without an answer worth keeping). */
  in_progress: boolean;
  first_at: string;
  answer?: StoredAnswer;
}

export const idempotencyClaimUpdate = defineUpdate<ClaimAnswer, [IdempotencyClaim]>('claim');
export const idempotencyCompleteUpdate = defineUpdate<void, [{ claim_id: string; answer: StoredAnswer }]>('complete');
export const idempotencyReleaseUpdate = defineUpdate<void, [{ claim_id: string }]>('release');
export const idempotencyRecordQuery = defineQuery<{ route?: string; answered: boolean; in_progress: boolean }>('record');

/** Fields whose hashes differ (present in one only, or with another value). Pure. */
export function differingFields(a: Record<string, string>, b: Record<string, string>): string[] {
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return names.filter((n) => a[n] !== b[n]);
}

/** What a claim gets from the record (and the record after it). Pure. */
export function decideClaim(record: KeyRecord | undefined, c: IdempotencyClaim, nowMs: number): { answer: ClaimAnswer; record: KeyRecord } {
  if (!record) {
    const fresh: KeyRecord = { route: c.route, fields: c.fields, key_id: c.key_id, claim_id: c.claim_id, claimed_at_ms: nowMs, in_progress: true, first_at: new Date(nowMs).toISOString() };
    return { answer: { kind: 'claimed', takeover: false }, record: fresh };
  }
  if (record.route !== c.route) return { answer: { kind: 'mismatch', route: record.route, fields: [] }, record };
  if (record.key_id !== c.key_id) return { answer: { kind: 'rekey', key_id: record.key_id }, record };
  const diff = differingFields(record.fields, c.fields);
  if (diff.length > 0) return { answer: { kind: 'mismatch', fields: diff }, record };
  if (record.answer) return { answer: { kind: 'replay', answer: record.answer, first_at: record.first_at }, record };
  if (record.in_progress && nowMs - record.claimed_at_ms < c.stale_after_ms) {
    return { answer: { kind: 'in_progress', since: new Date(record.claimed_at_ms).toISOString() }, record };
  }
  return { answer: { kind: 'claimed', takeover: true }, record: { ...record, claim_id: c.claim_id, claimed_at_ms: nowMs, in_progress: true } };
}

export async function idempotencyWorkflow(input: IdempotencyInput): Promise<void> {
  let record: KeyRecord | undefined;
  setHandler(idempotencyClaimUpdate, (c) => {
    const d = decideClaim(record, c, Date.now());
    record = d.record;
    return d.answer;
  });
  setHandler(
    idempotencyCompleteUpdate,
    ({ claim_id, answer }) => {
      if (record && !record.answer && record.claim_id === claim_id) record = { ...record, answer, in_progress: false };
    },
    { validator: (a) => checkAnswer(a?.answer) },
  );
  setHandler(idempotencyReleaseUpdate, ({ claim_id }) => {
    if (record && !record.answer && record.claim_id === claim_id) record = { ...record, in_progress: false };
  });
  setHandler(idempotencyRecordQuery, () => ({ route: record?.route, answered: record?.answer !== undefined, in_progress: record?.in_progress ?? false }));
  // One round: the record's lifetime (a handful of updates: it never grows long enough to continue as new).
  await runEntityLoop<typeof idempotencyWorkflow>({
    round: async () => {
      await condition(() => false, Math.max(1, input.ttl_seconds) * 1000);
      return 'end';
    },
    carryOver: () => [input],
  });
}

function checkAnswer(a: StoredAnswer | undefined): void {
  if (!a || typeof a.status !== 'number' || a.status < 100 || a.status > 599) throw recordRefusal(RECORD_FAILURE.invalidInput, 'answer.status: must be an HTTP status', { field: 'answer.status' });
}
