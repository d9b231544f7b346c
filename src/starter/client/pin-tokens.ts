/**
 * Version 1 of a swap's pin_token (swaps started before v2, flow-tokens.ts, which new swaps get):
 * kept so pinTokenOf can still hand out the token of such a swap. A swap's pin_token, derived rather than random, so it can be handed out again (a retried start
 * with the same Idempotency-Key, on any gateway) while no plaintext token is ever stored:
 *
 *   pin_token = base64url(HMAC-SHA256(HKDF(payload key <key_id>, 'mpf-pin-token-v1'), swap_id \n nonce))
 *
 * The swap's encrypted memo keeps the nonce (random, 128 bits) and the key id, plus the token's
 * SHA-256 that the gateway checks as before; only a holder of PAYLOAD_ENCRYPTION_KEYS can derive
 * the token from them. Swaps started before derivation (random tokens, no nonce in the memo) keep
 * working: their hash is checked as before; their token just cannot be handed out again.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { deriveKeys } from '../../codec/derive';
import { toKeyRing, type KeyRing } from '../../codec/keys';

export interface PinTokenSeed {
  pin_token_nonce: string;
  pin_token_key: string;
}

export class PinTokens {
  private readonly ring: KeyRing;
  private readonly derived: Map<string, Buffer>;

  constructor(keys: string | KeyRing) {
    this.ring = toKeyRing(keys);
    this.derived = deriveKeys(this.ring, 'pin_token_v1').keys;
  }

  /** A fresh seed for a new swap (under the active key). */
  newSeed(): PinTokenSeed {
    return { pin_token_nonce: randomBytes(16).toString('base64url'), pin_token_key: this.ring.activeKeyId };
  }

  /** The token of a swap from its seed; undefined when the seed's key is no longer in the ring. */
  derive(swapId: string, seed: PinTokenSeed): string | undefined {
    const key = this.derived.get(seed.pin_token_key);
    if (!key) return undefined;
    return createHmac('sha256', key).update(`${swapId}\n${seed.pin_token_nonce}`).digest('base64url');
  }
}
