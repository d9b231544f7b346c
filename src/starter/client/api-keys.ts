/**
 * The gateway's API keys made through its API (`/v1/api_keys`, `mpf keys create|revoke|rotate`),
 * kept in Temporal as one keyed record per task queue (workflows/api-keys.ts), beside the keyring
 * file's keys (auth/keyring.ts):
 *
 *  - a key is generated here with node:crypto (auth/keyring.ts newKey: 256 random bits), answered
 *    once (by the create and by a rotation) and never again; the record keeps its SHA-256 digest
 *    only, in payloads the codec encrypts;
 *  - every gateway reads the record into an ApiKeyCache, refreshed every few seconds and at once
 *    after a change it made, which its authentication checks: a revoke reaches every gateway within
 *    the refresh interval; a gateway whose last reading is older than the stale bound refuses the
 *    record's keys (503, fail closed) while the keyring file's keep working.
 *
 * Bad input is an InputError naming the field; an unknown id is FlowNotFoundError (404); what the
 * record's state forbids (one key too many, a revoked key rotated) is RecordConflictError (409).
 */
import { createHash, randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import {
  API_KEY_ID,
  API_KEY_PREFIX,
  API_KEY_ROLES,
  API_KEYS_WORKFLOW_TYPE,
  type ApiKeyRecord,
  type ApiKeyView,
  apiKeysWorkflowId,
  apiKeyView,
  DEFAULT_ROTATE_OVERLAP_SECONDS,
  MAX_ROTATE_OVERLAP_SECONDS,
} from '../../contract/api-keys';
import { generateKey, type KeyEntry, Keyring, type KeyVerdict } from '../../auth/keyring';
import { apiKeysQuery, createApiKeyUpdate, revokeApiKeyUpdate, rotateApiKeyUpdate } from '../../workflows/api-keys';
import { RECORD_FAILURE } from '../../workflows/record-failures';
import { FlowNotFoundError, InputError, RecordConflictError } from './errors';
import type { TemporalGate } from './health';
import { KeyedRecords, refusalOf } from './keyed-record';
import { parseOrThrow } from './requests';

export type { ApiKeyView };

export const ApiKeyCreateBody = z
  .strictObject({
    role: z.enum(API_KEY_ROLES).describe('what the key may do: read_only (GETs and lists), backend (+ start and cancel flows), operator (+ the operator routes)'),
    label: z
      .string()
      .min(1, 'must not be empty')
      .max(100, 'must be at most 100 characters')
      .regex(/^[^\n\r]*$/, 'must be one line')
      .optional()
      .describe('who or what holds it, e.g. "checkout service"'),
    expires_at: z.iso
      .datetime({ offset: true, message: 'must be an ISO 8601 time, e.g. 2027-01-31T00:00:00Z' })
      .refine((t) => Date.parse(t) > Date.now(), 'must be in the future')
      .optional()
      .describe('after this time the key is refused (401 key_expired)'),
  })
  .meta({ id: 'ApiKeyCreate' });

export const ApiKeyRotateBody = z
  .strictObject({
    overlap_seconds: z
      .number()
      .int('must be a whole number of seconds')
      .min(0, 'must be 0 or more')
      .max(MAX_ROTATE_OVERLAP_SECONDS, `must be at most ${MAX_ROTATE_OVERLAP_SECONDS} (7 days)`)
      .optional()
      .describe(`how long the rotated key keeps working beside its successor (default ${DEFAULT_ROTATE_OVERLAP_SECONDS}: 24 hours; 0: it stops at once)`),
  })
  .meta({ id: 'ApiKeyRotate' });

/** A key with the key itself: the answer of a create and of a rotation, the only ones that hold it. */
export type ApiKeyWithKey = ApiKeyView & { key: string };

export interface ApiKeysOptions {
  gate: TemporalGate;
  taskQueue: string;
  answerTimeoutMs?: number;
}

/** Refuses a malformed key id (400 naming it) before anything is asked of Temporal. */
export function checkApiKeyId(id: string, field = 'key_id'): void {
  if (!API_KEY_ID.test(id)) throw new InputError('must be ak_ followed by 24 lowercase hex digits', field);
}

export class ApiKeys {
  private readonly records: KeyedRecords;
  private readonly id: string;

  constructor(private readonly opts: ApiKeysOptions) {
    this.id = apiKeysWorkflowId(opts.taskQueue);
    this.records = new KeyedRecords({
      client: opts.gate.temporal,
      taskQueue: opts.taskQueue,
      guard: (fn, flowId) => opts.gate.guard(fn, flowId),
      availability: () => opts.gate.availability(),
      what: 'API keys record',
      answerTimeoutMs: opts.answerTimeoutMs ?? 10_000,
    });
  }

  /** A key's id: random, or derived from the Idempotency-Key so that a retry meets the key the first request made. */
  private keyId(idempotencyKey: string | undefined, purpose: string): string {
    return idempotencyKey !== undefined ? `ak_${createHash('sha256').update(`${this.id}\n${purpose}\n${idempotencyKey}`).digest('hex').slice(0, 24)}` : `ak_${randomBytes(12).toString('hex')}`;
  }

  /**
   * Creates a key; the key is in this answer only. With an Idempotency-Key a retry meets the key
   * the first request made and answers it without the key (`key` absent: revoke it and create another if the first answer was lost).
   */
  async create(body: unknown, opts: { by: string; idempotencyKey?: string }): Promise<ApiKeyView & { key?: string }> {
    const req = parseOrThrow(ApiKeyCreateBody, body);
    const id = this.keyId(opts.idempotencyKey, 'create');
    const expires = req.expires_at ? new Date(req.expires_at).toISOString() : undefined;
    const made = generateKey(API_KEY_PREFIX);
    const args = { id, role: req.role, ...(req.label ? { label: req.label } : {}), ...(expires ? { expires_at: expires } : {}), sha256: made.sha256, created_by: opts.by };
    const r = await this.refused(id, this.records.updateWithStart(this.id, createApiKeyUpdate, [args], { workflowType: API_KEYS_WORKFLOW_TYPE, args: [{}] }));
    return r.created ? { ...r.key, key: made.key } : r.key;
  }

  /** Every key kept, with its digest (the gateways' cache); none when no key was ever made. */
  async keyRecords(): Promise<ApiKeyRecord[]> {
    try {
      return await this.records.within(this.id, () => this.opts.gate.temporal.workflow.getHandle(this.id).query(apiKeysQuery));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return [];
      throw err;
    }
  }

  /** Every key kept (revoked and expired ones for 30 days after they ended), newest first, without digests. */
  async list(): Promise<ApiKeyView[]> {
    return (await this.keyRecords()).map(apiKeyView).sort((a, b) => b.created_at.localeCompare(a.created_at));
  }

  /** Revokes a key: every gateway refuses it within the refresh interval. Revoking it again answers it as it is. */
  async revoke(id: string, opts: { by: string }): Promise<ApiKeyView> {
    checkApiKeyId(id);
    return this.change(id, () => this.records.update(this.id, revokeApiKeyUpdate, [{ id, by: opts.by }]));
  }

  /**
   * A successor of the same role and label (its key in this answer only); the rotated key keeps
   * working for overlap_seconds (default 24 h), then is refused. With an Idempotency-Key a retry
   * meets the successor the first request made and answers it without the key.
   */
  async rotate(id: string, body: unknown, opts: { by: string; idempotencyKey?: string }): Promise<ApiKeyView & { key?: string }> {
    checkApiKeyId(id);
    const req = parseOrThrow(ApiKeyRotateBody, body ?? {});
    const newId = this.keyId(opts.idempotencyKey, `rotate ${id}`);
    const made = generateKey(API_KEY_PREFIX);
    const args = { id, new_id: newId, sha256: made.sha256, overlap_seconds: req.overlap_seconds ?? DEFAULT_ROTATE_OVERLAP_SECONDS, by: opts.by };
    const r = await this.change(id, () => this.records.update(this.id, rotateApiKeyUpdate, [args]));
    return r.created ? { ...r.key, key: made.key } : r.key;
  }

  /** A change of an existing key: no record yet is an unknown id too. */
  private async change<T>(id: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await this.refused(id, fn());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError('API key', id);
      throw err;
    }
  }

  /** The record's refusals as the client's errors: an unknown id (404), a conflict (409). */
  private async refused<T>(id: string, p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (err) {
      if (refusalOf(err, RECORD_FAILURE.entryNotFound)) throw new FlowNotFoundError('API key', id);
      if (refusalOf(err, RECORD_FAILURE.conflict)) throw new RecordConflictError((err as { cause?: Error }).cause?.message ?? 'refused by the API keys record');
      throw err;
    }
  }
}

/** How often a gateway reads the record, unless told (a revoke reaches it within this). */
export const DEFAULT_API_KEYS_REFRESH_MS = 5_000;
/** How old a gateway's last reading may be before it refuses the record's keys (503), unless told. */
export const DEFAULT_API_KEYS_STALE_MS = 15_000;

export type RecordKeyVerdict = KeyVerdict | { kind: 'unavailable'; reason: string };

export interface ApiKeyCacheOptions {
  /** How often the record is read (default DEFAULT_API_KEYS_REFRESH_MS). */
  refreshMs?: number;
  /** Past this age of the last good reading, the record's keys are refused 503 (default DEFAULT_API_KEYS_STALE_MS). */
  staleMs?: number;
  /** Told of a reading that failed (never a key). */
  onReadFailed?: (err: unknown) => void;
}

/**
 * One gateway's reading of the API keys record: taken when a key of the API's shape (`mpfa_…`) is
 * first presented or a key route first used, then refreshed every `refreshMs` (and at once by
 * `refreshAfterChange()` after this gateway changed it); a presented key is checked against the
 * keys that are not revoked, in constant time (auth/keyring.ts Keyring). Fails closed: when the
 * first reading fails, and once the last good one is older than `staleMs`, such a key is refused
 * as unavailable rather than guessed. A key of another shape never waits on the record.
 */
export class ApiKeyCache {
  private ring: { at: number; keys: Keyring } | undefined;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly refreshMs: number;
  private readonly staleMs: number;

  constructor(
    private readonly source: Pick<ApiKeys, 'keyRecords'>,
    private readonly opts: ApiKeyCacheOptions = {},
  ) {
    this.refreshMs = opts.refreshMs ?? DEFAULT_API_KEYS_REFRESH_MS;
    this.staleMs = opts.staleMs ?? DEFAULT_API_KEYS_STALE_MS;
  }

  private stopped = false;

  /** Reads now and then every refreshMs, until close(). */
  start(): Promise<void> {
    if (!this.timer && !this.stopped) {
      this.timer = setInterval(() => void this.refresh(), this.refreshMs);
      this.timer.unref();
    }
    return this.refresh();
  }

  /** Stops reading, once the reading in flight (if any) has ended. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  /** Reads the record again after this gateway changed it: a reading already in flight may predate the change. */
  async refreshAfterChange(): Promise<void> {
    await this.inFlight;
    await (this.timer ? this.refresh() : this.start());
  }

  /** Reads the record now (one reading in flight at a time); a failure keeps the last good reading and is reported. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async read(): Promise<void> {
    const at = Date.now();
    try {
      const records = await this.source.keyRecords();
      const entries: KeyEntry[] = records
        .filter((k) => !k.revoked_at)
        .map((k) => ({ id: k.id, role: k.role, sha256: k.sha256, ...(k.label ? { label: k.label } : {}), ...(k.expires_at ? { expires_at: k.expires_at } : {}) }));
      this.ring = { at, keys: new Keyring(entries) };
    } catch (err) {
      this.opts.onReadFailed?.(err);
    }
  }

  /**
   * The verdict on a key the keyring file does not hold: unknown unless it has the API's shape;
   * else the record's, or unavailable when its reading failed or is stale.
   */
  async check(presented: string): Promise<RecordKeyVerdict> {
    if (!presented.startsWith(API_KEY_PREFIX)) return { kind: 'unknown' };
    if (!this.timer) await this.start(); // the first key of the API's shape this gateway sees
    const now = Date.now();
    if (!this.ring) return { kind: 'unavailable', reason: 'the API keys record could not be read' };
    const age = now - this.ring.at;
    if (age > this.staleMs) return { kind: 'unavailable', reason: `the API keys record was last read ${Math.round(age / 1000)} s ago` };
    return this.ring.keys.check(presented, now);
  }
}
