/**
 * The deployment's API keys made through the gateway's API: one keyed record (`api-keys-<task
 * queue>`) that every gateway changes by update (starter/client/api-keys.ts) and reads by query
 * into the cache its authentication checks. Updates are handled one at a time; a refused one (an
 * unknown id, one key too many, a revoked key rotated) leaves no trace in history.
 *
 * The record holds each key's SHA-256 digest, never the key (made by the gateway with
 * node:crypto and answered once), and only in payloads (arguments, update arguments, query
 * answers), which the payload codec encrypts; never in its memo or search attributes. A revoked or
 * expired key stays listed for ENDED_KEY_KEPT_MS, then is dropped.
 */
import { condition, defineQuery, defineUpdate, setHandler } from '@temporalio/workflow';
import { type ApiKeyRecord, type ApiKeyRole, type ApiKeyView, apiKeyView, ENDED_KEY_KEPT_MS, keyEnd, keyLive, MAX_API_KEYS } from '../contract/api-keys';
import { runEntityLoop } from './entity-loop';
import { RECORD_FAILURE, recordRefusal } from './record-failures';

export { API_KEYS_WORKFLOW_TYPE, apiKeysWorkflowId } from '../contract/api-keys';

export interface ApiKeysInput {
  /** Carried over by continue-as-new. */
  keys?: ApiKeyRecord[];
}

export interface CreateApiKeyArgs {
  /** Chosen by the client (`ak_…`), so a retried create meets the key it made. */
  id: string;
  role: ApiKeyRole;
  label?: string;
  expires_at?: string;
  sha256: string;
  created_by: string;
}

export interface RotateApiKeyArgs {
  /** The key rotated. */
  id: string;
  /** Its successor (same role and label), chosen by the client. */
  new_id: string;
  sha256: string;
  /** How long the rotated key keeps working beside its successor (0: it stops at once). */
  overlap_seconds: number;
  by: string;
}

/** The key, and whether this update made it (false: a retried create or rotation met the one it made). */
export const createApiKeyUpdate = defineUpdate<{ key: ApiKeyView; created: boolean }, [CreateApiKeyArgs]>('createApiKey');
/** The revoked key (revoking it again answers it as it is). */
export const revokeApiKeyUpdate = defineUpdate<ApiKeyView, [{ id: string; by: string }]>('revokeApiKey');
/** The successor, and whether this update made it. */
export const rotateApiKeyUpdate = defineUpdate<{ key: ApiKeyView; created: boolean }, [RotateApiKeyArgs]>('rotateApiKey');
/** Every key with its digest (an encrypted payload): the gateways' cache and lists read it. */
export const apiKeysQuery = defineQuery<ApiKeyRecord[]>('apiKeys');

/** Changes after which the record continues as new (its state is small; its history is not). */
const CHANGES_PER_RUN = 500;

/** The keys still kept at `now`: those ended more than ENDED_KEY_KEPT_MS ago are dropped. Pure. */
function kept(keys: readonly ApiKeyRecord[], now: number): ApiKeyRecord[] {
  return keys.filter((k) => {
    const end = keyEnd(k);
    return end === undefined || end > now - ENDED_KEY_KEPT_MS;
  });
}

export async function apiKeysWorkflow(input: ApiKeysInput = {}): Promise<void> {
  let keys: ApiKeyRecord[] = input.keys ?? [];
  let changes = 0;

  const known = (id: string): ApiKeyRecord => {
    const k = keys.find((x) => x.id === id);
    if (!k) throw recordRefusal(RECORD_FAILURE.entryNotFound, `no API key ${id}`, { id });
    return k;
  };
  const save = (next: ApiKeyRecord[]): void => {
    keys = kept(next, Date.now());
    changes++;
  };

  setHandler(
    createApiKeyUpdate,
    (a) => {
      const existing = keys.find((k) => k.id === a.id);
      if (existing) return { key: apiKeyView(existing), created: false }; // a retried create
      const k: ApiKeyRecord = {
        id: a.id,
        role: a.role,
        ...(a.label ? { label: a.label } : {}),
        created_at: new Date().toISOString(),
        created_by: a.created_by,
        ...(a.expires_at ? { expires_at: a.expires_at } : {}),
        sha256: a.sha256,
      };
      save([...keys, k]);
      return { key: apiKeyView(k), created: true };
    },
    {
      validator: (a) => {
        if (keys.some((k) => k.id === a.id)) return;
        const live = keys.filter((k) => keyLive(k, Date.now())).length;
        if (live >= MAX_API_KEYS) {
          throw recordRefusal(RECORD_FAILURE.conflict, `a deployment has at most ${MAX_API_KEYS} API keys that are neither revoked nor expired: revoke one first`, {});
        }
      },
    },
  );

  setHandler(
    revokeApiKeyUpdate,
    (a) => {
      const k = known(a.id);
      if (k.revoked_at) return apiKeyView(k); // revoking twice changes nothing
      const revoked: ApiKeyRecord = { ...k, revoked_at: new Date().toISOString(), revoked_by: a.by };
      save(keys.map((x) => (x.id === a.id ? revoked : x)));
      return apiKeyView(revoked);
    },
    { validator: (a) => void known(a.id) },
  );

  setHandler(
    rotateApiKeyUpdate,
    (a) => {
      const old = known(a.id);
      const existing = keys.find((k) => k.id === a.new_id);
      if (existing && old.rotated_to === a.new_id) return { key: apiKeyView(existing), created: false }; // a retried rotation
      const now = Date.now();
      const at = new Date(now).toISOString();
      const overlapEnd = now + a.overlap_seconds * 1000;
      const ends = old.expires_at && Date.parse(old.expires_at) < overlapEnd ? old.expires_at : new Date(overlapEnd).toISOString();
      const successor: ApiKeyRecord = { id: a.new_id, role: old.role, ...(old.label ? { label: old.label } : {}), created_at: at, created_by: a.by, sha256: a.sha256 };
      save([...keys.map((x) => (x.id === a.id ? { ...old, expires_at: ends, rotated_to: a.new_id } : x)), successor]);
      return { key: apiKeyView(successor), created: true };
    },
    {
      validator: (a) => {
        const old = known(a.id);
        if (old.rotated_to === a.new_id) return; // a retried rotation
        if (old.rotated_to) throw recordRefusal(RECORD_FAILURE.conflict, `API key ${a.id} was rotated already (to ${old.rotated_to}): rotate that one`, { id: a.id });
        if (!keyLive(old, Date.now())) throw recordRefusal(RECORD_FAILURE.conflict, `API key ${a.id} is ${old.revoked_at ? 'revoked' : 'expired'}: create a new key instead`, { id: a.id });
        if (keys.some((k) => k.id === a.new_id)) throw recordRefusal(RECORD_FAILURE.conflict, `an API key ${a.new_id} exists already`, { id: a.new_id });
      },
    },
  );

  setHandler(apiKeysQuery, () => keys);

  await runEntityLoop<typeof apiKeysWorkflow>({
    round: async (long) => {
      await condition(long);
      return 'continue-as-new';
    },
    alsoLong: () => changes >= CHANGES_PER_RUN,
    carryOver: () => [{ keys: kept(keys, Date.now()) }],
  });
}
