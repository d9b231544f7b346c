/**
 * The gateway's API keys made through its API (`/v1/api_keys`, `mpf keys create`), the data (pure
 * and workflow-safe): what a key is as kept (its SHA-256 digest, never the key), what is shown of
 * it (never the digest), and when it is refused. They are kept in one record workflow per
 * deployment (workflows/api-keys.ts), beside the keyring file's keys (auth/keyring.ts), and every
 * gateway reads the record into a cache (starter/client/api-keys.ts).
 */

export const API_KEYS_WORKFLOW_TYPE = 'apiKeysWorkflow';

/** The deployment's record of API keys: every gateway of the task queue meets it by this id. */
export const apiKeysWorkflowId = (taskQueue: string): string => `api-keys-${taskQueue}`;

/** At most this many keys a deployment holds that are neither revoked nor expired. */
export const MAX_API_KEYS = 100;

/** How long a rotated key keeps working beside its successor, unless told (24 hours). */
export const DEFAULT_ROTATE_OVERLAP_SECONDS = 86_400;
/** The longest overlap a rotation may ask for (7 days). */
export const MAX_ROTATE_OVERLAP_SECONDS = 7 * 86_400;

/** How long a revoked or expired key stays in the record (and its list) before it is dropped: 30 days. */
export const ENDED_KEY_KEPT_MS = 30 * 86_400_000;

/** A key's id: `ak_` and 24 lowercase hex digits. */
export const API_KEY_ID = /^ak_[0-9a-f]{24}$/;

/**
 * How every key made through the API begins (the keyring file's begin `mpfk_`): a gateway consults
 * the record only for a presented key of this shape, so no other key waits on Temporal.
 */
export const API_KEY_PREFIX = 'mpfa_';

export const API_KEY_ROLES = ['read_only', 'backend', 'operator'] as const;
export type ApiKeyRole = (typeof API_KEY_ROLES)[number];

/** What is kept and shown of a key. */
export interface ApiKeyView {
  id: string;
  role: ApiKeyRole;
  label?: string;
  created_at: string;
  /** Who created it: `key <id>` or `person <name> (sub <subject>)`. */
  created_by: string;
  /** After this time it is refused (401 key_expired); a rotation sets it to the end of the overlap. */
  expires_at?: string;
  /** When it was revoked: refused from then on (401). */
  revoked_at?: string;
  /** Who revoked it. */
  revoked_by?: string;
  /** The id of the key a rotation made to replace it. */
  rotated_to?: string;
}

/** A key as the record keeps it: its view and the SHA-256 of the key (hex), only ever in encrypted payloads. */
export interface ApiKeyRecord extends ApiKeyView {
  sha256: string;
}

/** When a key stopped (or stops) working: its revocation or its expiry, whichever is first. */
export function keyEnd(k: Pick<ApiKeyView, 'expires_at' | 'revoked_at'>): number | undefined {
  const ends = [k.revoked_at, k.expires_at].filter((t): t is string => t !== undefined).map((t) => Date.parse(t));
  return ends.length ? Math.min(...ends) : undefined;
}

/** Whether a key still counts against MAX_API_KEYS at `now` (not revoked, not expired). */
export function keyLive(k: Pick<ApiKeyView, 'expires_at' | 'revoked_at'>, now: number): boolean {
  const end = keyEnd(k);
  return end === undefined || end > now;
}

/** What is shown of a key: everything but its digest. */
export function apiKeyView(k: ApiKeyRecord): ApiKeyView {
  const { sha256: _digest, ...view } = k;
  return view;
}
