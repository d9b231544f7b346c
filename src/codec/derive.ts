/**
 * The register of keys derived from PAYLOAD_ENCRYPTION_KEYS: every purpose a sub-key serves, with
 * its HKDF info string, listed once. Every derivation in the project goes through deriveKey or
 * deriveKeys (test/unit/key-purposes.test.ts fails on an info string used twice, and on a call to
 * hkdfSync anywhere else), so no two purposes can share a key by accident.
 *
 * HKDF-SHA256, empty salt, 32 bytes, from the payload key. A purpose's info string is part of the
 * data it protects (tokens handed out, records kept in Temporal): never change one in place; add a
 * new purpose (…-v2) and keep the old one while anything made under it lives.
 */
import { hkdfSync } from 'node:crypto';
import { type KeyRing, toKeyRing } from './keys';

export const KEY_PURPOSES = {
  /** Sealing the PIN and the provider's auth_token inside payloads (codec/seal.ts). */
  seal: 'mpf-seal-v1',
  /** Version 1 pin_tokens of swaps started before v2 (starter/client/pin-tokens.ts). */
  pin_token_v1: 'mpf-pin-token-v1',
  /** A swap's pin_token, version 2 (starter/client/flow-tokens.ts). */
  flow_token_pin: 'mpf-pin-token-v2',
  /** A flow's notification token in the notification_url, version 2 (flow-tokens.ts). */
  flow_token_notify: 'mpf-notify-token-v2',
  /** The MAC of list page tokens (starter/client/lists.ts). */
  page_token: 'mpf-page-token-v2',
  /** Fingerprints of an Idempotency-Key's request fields (starter/client/idempotency.ts). */
  idempotency: 'mpf-idempotency-v1',
  /** The workflow id of a user's wrong-PIN budget (starter/client/pin-budget.ts). */
  pin_budget: 'mpf-pin-budget-v1',
  /** The workflow id of a user's daily limit ledger (starter/client/limits.ts). */
  limit_ledger: 'mpf-limit-ledger-v1',
  /** The keyed hash of a flow's customer reference in its MpfCustomerRef search attribute (starter/client/lists.ts). */
  customer_ref: 'mpf-customer-ref-v1',
} as const;

export type KeyPurpose = keyof typeof KEY_PURPOSES;

const KEY_BYTES = 32;

/** The sub-key of `purpose` from one payload key. */
export function deriveKey(payloadKey: Buffer, purpose: KeyPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', payloadKey, Buffer.alloc(0), KEY_PURPOSES[purpose], KEY_BYTES));
}

/**
 * Derivations already made, so a caller on a hot path (a start hashes its customer reference, a
 * list its filter) neither parses PAYLOAD_ENCRYPTION_KEYS nor runs HKDF again: the sub-keys by
 * ring and purpose (a WeakMap: they go with their ring), and the rings of the last few raw values
 * (a process has one or two; the oldest is dropped past RINGS_KEPT). Both hold only what the
 * process already holds, and nothing of them is ever logged.
 */
const DERIVED = new WeakMap<KeyRing, Map<KeyPurpose, ReadonlyMap<string, Buffer>>>();
const RINGS = new Map<string, KeyRing>();
const RINGS_KEPT = 8;

function ringOf(keys: string | KeyRing): KeyRing {
  if (typeof keys !== 'string') return keys;
  let ring = RINGS.get(keys);
  if (!ring) {
    ring = toKeyRing(keys);
    if (RINGS.size >= RINGS_KEPT) RINGS.delete(RINGS.keys().next().value!);
    RINGS.set(keys, ring);
  }
  return ring;
}

/** The sub-keys of `purpose` for every key of the ring, by key id, the active key first (a new Map each call). */
export function deriveKeys(keys: string | KeyRing, purpose: KeyPurpose): { activeKeyId: string; keys: Map<string, Buffer> } {
  const ring = ringOf(keys);
  let byPurpose = DERIVED.get(ring);
  if (!byPurpose) DERIVED.set(ring, (byPurpose = new Map()));
  let derived = byPurpose.get(purpose);
  if (!derived) {
    const out = new Map<string, Buffer>([[ring.activeKeyId, deriveKey(ring.keys.get(ring.activeKeyId)!, purpose)]]);
    for (const [id, key] of ring.keys) if (!out.has(id)) out.set(id, deriveKey(key, purpose));
    byPurpose.set(purpose, (derived = out));
  }
  return { activeKeyId: ring.activeKeyId, keys: new Map(derived) };
}
