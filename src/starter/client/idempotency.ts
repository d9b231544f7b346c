/**
 * Idempotency-Key records, kept in Temporal (one small workflow per key, idempotencyWorkflow), so
 * that any number of gateway processes without shared memory give a retried request the first
 * request's answer. A key is scoped (the gateway's choice: the merchant for the API-key routes, the
 * swap for a PIN) and its workflow id is `idem-<sha256(scope, key)>`: the key itself never appears in Temporal.
 *
 * Fields are fingerprinted with an HMAC under a key derived from the payload key (HKDF, like the
 * sealing key), so the record holds no field value (a PIN, a name) and a mismatch can still be
 * named field by field. The records stand on keyed-record.ts (id, update-with-start, bounded wait).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { deriveKeys } from '../../codec/derive';
import type { KeyRing } from '../../codec/keys';
import {
  type ClaimAnswer,
  IDEMPOTENCY_WORKFLOW_TYPE,
  idempotencyClaimUpdate,
  idempotencyCompleteUpdate,
  idempotencyReleaseUpdate,
  type StoredAnswer,
} from '../../workflows/idempotency';
import { API_KEY_ID } from '../../workflows/search-attributes';
import type { TemporalAvailability } from './health';
import { KeyedRecords, recordId } from './keyed-record';
/** Keys are 1-255 visible ASCII characters (a UUID is the usual choice). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

export interface IdempotencyOptions {
  client: Client;
  taskQueue: string;
  keys: string | KeyRing;
  /** How long a key's record is kept (default 24 h). */
  ttlSeconds?: number;
  /** A claim still in progress after this long may be taken over by a retry (default 60 s: longer than any route waits). */
  staleAfterMs?: number;
  /**
   * Runs each call bounded by the client's TemporalGate (health.ts): Temporal or its persistence
   * down is TemporalUnavailableError within seconds, not a WorkerUnavailableError at the deadline.
   */
  guard?: <T>(fn: () => Promise<T>, flowId?: string) => Promise<T>;
  /** How long a claim waits for a worker to answer (default 10 s). */
  answerTimeoutMs?: number;
  /** Whether Temporal and its database answer (health.ts): a call cut by its deadline is then their outage, not a missing worker. */
  availability?: () => Promise<TemporalAvailability>;
  /** Live records one API key id may hold (GATEWAY_IDEMPOTENCY_MAX_LIVE_PER_KEY, default 1000). */
  maxLivePerKey?: number;
  /** How long a count of an API key's live records is used before it is counted again (default 1 s). */
  countCacheMs?: number;
}

export const DEFAULT_IDEMPOTENCY_MAX_LIVE_PER_KEY = 1000;

/** A new key past the API key id's cap of live records: answered 429 (nothing started). */
export class IdempotencyCapError extends Error {
  override name = 'IdempotencyCapError';
  constructor(
    readonly apiKeyId: string,
    readonly max: number,
  ) {
    super(`Idempotency-Key: this API key already holds ${max} live idempotency records (the most allowed); each is kept ${DEFAULT_IDEMPOTENCY_TTL_SECONDS / 3600} h — reuse keys only for retries, or retry later`);
  }
}

export type Claimed = Exclude<ClaimAnswer, { kind: 'rekey' }> & { workflowId: string; claimId: string };

/** The workflow id of a key in a scope. */
export function idempotencyWorkflowId(scope: string, key: string): string {
  return recordId.hashed('idem', scope, key);
}

/** A stable JSON text of a value (object keys sorted), for fingerprints. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export class IdempotencyStore {
  private readonly activeKeyId: string;
  private readonly hmacKeys: Map<string, Buffer>;
  private readonly records: KeyedRecords;
  /** Per API key id: live records as last counted (plus the new ones claimed here since), and when. */
  private readonly counts = new Map<string, { live: number; at: number }>();

  constructor(private readonly opts: IdempotencyOptions) {
    ({ activeKeyId: this.activeKeyId, keys: this.hmacKeys } = deriveKeys(opts.keys, 'idempotency'));
    const { client, taskQueue, guard, availability } = opts;
    this.records = new KeyedRecords({ client, taskQueue, guard, availability, what: 'idempotency record', answerTimeoutMs: opts.answerTimeoutMs ?? 10_000 });
  }

  /** Field name -> HMAC of its canonical JSON under key `keyId`. */
  fingerprint(fields: Record<string, unknown>, keyId: string): Record<string, string> | undefined {
    const k = this.hmacKeys.get(keyId);
    if (!k) return undefined;
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(fields)) {
      if (value === undefined) continue;
      out[name] = createHmac('sha256', k).update(canonicalJson(value)).digest('hex').slice(0, 32);
    }
    return out;
  }

  /**
   * Claims `key` in `scope` for this request: 'claimed' (run it, then complete or release),
   * 'replay' (the first answer), 'in_progress' (the first request still runs), 'mismatch'.
   */
  async claim(scope: string, key: string, route: string, fields: Record<string, unknown>, apiKeyId?: string): Promise<Claimed> {
    const workflowId = idempotencyWorkflowId(scope, key);
    const claimId = randomUUID();
    if (apiKeyId !== undefined) await this.checkCap(apiKeyId, workflowId);
    let keyId = this.activeKeyId;
    for (let round = 0; round < 2; round++) {
      const hashed = this.fingerprint(fields, keyId);
      // The record was hashed under a key no longer in the ring: it cannot be compared.
      if (!hashed) return { kind: 'mismatch', fields: Object.keys(fields), workflowId, claimId };
      const answer = await this.update(workflowId, claimId, route, hashed, keyId, apiKeyId);
      if (answer.kind === 'claimed' && !answer.takeover && apiKeyId !== undefined) {
        const c = this.counts.get(apiKeyId);
        if (c) c.live++; // a new record, most likely: counted here until the next count
      }
      if (answer.kind !== 'rekey') return { ...answer, workflowId, claimId };
      keyId = answer.key_id;
    }
    return { kind: 'mismatch', fields: Object.keys(fields), workflowId, claimId };
  }

  async complete(workflowId: string, claimId: string, answer: StoredAnswer): Promise<void> {
    await this.records.update(workflowId, idempotencyCompleteUpdate, [{ claim_id: claimId, answer }]);
  }

  async release(workflowId: string, claimId: string): Promise<void> {
    await this.records.update(workflowId, idempotencyReleaseUpdate, [{ claim_id: claimId }]);
  }

  /** The visibility query of an API key id's live records (the key id is public; the query is built from validated parts). */
  liveQuery(apiKeyId: string): string {
    const q = (v: string): string => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    return `WorkflowType = ${q(IDEMPOTENCY_WORKFLOW_TYPE)} AND ExecutionStatus = 'Running' AND MpfApiKeyId = ${q(apiKeyId)} AND TaskQueue = ${q(this.opts.taskQueue)}`;
  }

  /** The API key id's live records, counted in visibility (shared by every gateway; seconds behind at most). */
  async countLive(apiKeyId: string): Promise<number> {
    const res = await this.records.within('idempotency count', () =>
      this.opts.client.workflowService.countWorkflowExecutions({ namespace: this.opts.client.options.namespace, query: this.liveQuery(apiKeyId) }),
    );
    return Number(res.count ?? 0);
  }

  /**
   * Throws IdempotencyCapError when `apiKeyId` holds the most live records allowed and `workflowId`
   * is not one of them (a retry of a live key still gets its answer). The count is cached for
   * countCacheMs and counted again whenever it reaches the cap, so the cap holds within the
   * visibility store's lag across gateways.
   */
  private async checkCap(apiKeyId: string, workflowId: string): Promise<void> {
    const max = this.opts.maxLivePerKey ?? DEFAULT_IDEMPOTENCY_MAX_LIVE_PER_KEY;
    const now = Date.now();
    let c = this.counts.get(apiKeyId);
    if (!c || now - c.at > (this.opts.countCacheMs ?? 1_000) || c.live >= max) {
      c = { live: await this.countLive(apiKeyId), at: Date.now() };
      this.counts.set(apiKeyId, c);
      if (this.counts.size > 10_000) this.counts.delete(this.counts.keys().next().value as string);
    }
    if (c.live < max) return;
    const existing = await this.records.within(workflowId, () => this.opts.client.workflow.getHandle(workflowId).describe()).catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
    if (existing?.status.name === 'RUNNING') return;
    throw new IdempotencyCapError(apiKeyId, max);
  }

  private update(workflowId: string, claimId: string, route: string, fields: Record<string, string>, keyId: string, apiKeyId?: string): Promise<ClaimAnswer> {
    const claim = { route, fields, key_id: keyId, claim_id: claimId, stale_after_ms: this.opts.staleAfterMs ?? 60_000 };
    // Once a record's time is up (its run ended), the key may start a new one.
    return this.records.updateWithStart(workflowId, idempotencyClaimUpdate, [claim], {
      workflowType: IDEMPOTENCY_WORKFLOW_TYPE,
      args: [{ ttl_seconds: this.opts.ttlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS }],
      ...(apiKeyId !== undefined ? { typedSearchAttributes: [{ key: API_KEY_ID, value: apiKeyId }] } : {}),
    });
  }
}
