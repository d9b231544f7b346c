/**
 * Per-flow tokens, version 2: the swap's pin_token and every flow's notification token carry their
 * own nonce, so a gateway checks them with the payload keys alone, without asking Temporal:
 *
 *   token = base64url(nonce (16 bytes) || HMAC-SHA256(HKDF(payload key, 'mpf-<purpose>-token-v2'), flow_id \n nonce))
 *
 * 48 bytes, 64 characters, purpose `pin` or `notify`. The nonce's first 4 bytes are the issue time
 * (seconds since 1970, big-endian), the other 12 random. A token is not a function of the flow id
 * alone: a workflow id can be used again once the namespace's retention dropped the old flow, and
 * the old flow's links must not open the new one. Verification:
 *
 *  - a 64-character token issued less than `localWindowSeconds` ago (default 1 hour, far below
 *    Temporal's minimum retention of 1 day, so within the window the id cannot have been reused)
 *    whose MAC one key of PAYLOAD_ENCRYPTION_KEYS reproduces (constant-time) is genuine: no RPC;
 *  - anything else (v1 tokens of flows started before, older tokens, tokens under a key that left
 *    the ring, forged ones) is for the caller to compare with the SHA-256 kept in the flow's memo,
 *    as before — that comparison also tells a new flow of the same id from the old one.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { deriveKeys, type KeyPurpose } from '../../codec/derive';
import { toKeyRing, type KeyRing } from '../../codec/keys';

export type TokenPurpose = 'pin' | 'notify';

/** The derived key's purpose of each token (codec/derive.ts). */
const TOKEN_V2_KEY: Readonly<Record<TokenPurpose, KeyPurpose>> = { pin: 'flow_token_pin', notify: 'flow_token_notify' };
const NONCE_BYTES = 16;
const MAC_BYTES = 32;
/** Characters of a v2 token (48 bytes in base64url). */
export const TOKEN_V2_LENGTH = 64;
const TOKEN_V2_PATTERN = /^[A-Za-z0-9_-]{64}$/;
/** How long after its issue a token is checked locally (default); older ones are checked against the memo. */
export const TOKEN_LOCAL_WINDOW_SECONDS = 3_600;
/** Issue times this far ahead of this process's clock are still taken (gateways' clocks differ a little). */
const CLOCK_SKEW_SECONDS = 300;

/** What the memo keeps to derive a token again: its nonce (base64url) and the payload key's id. */
export interface TokenSeed {
  nonce: string;
  key: string;
}

export interface FlowTokensOptions {
  /** How long after its issue a token is accepted without a lookup (default TOKEN_LOCAL_WINDOW_SECONDS). */
  localWindowSeconds?: number;
}

export class FlowTokens {
  private readonly ring: KeyRing;
  private readonly derived: Record<TokenPurpose, Map<string, Buffer>>;
  private readonly windowSeconds: number;

  constructor(keys: string | KeyRing, opts: FlowTokensOptions = {}) {
    this.ring = toKeyRing(keys);
    this.derived = { pin: deriveKeys(this.ring, TOKEN_V2_KEY.pin).keys, notify: deriveKeys(this.ring, TOKEN_V2_KEY.notify).keys };
    this.windowSeconds = opts.localWindowSeconds ?? TOKEN_LOCAL_WINDOW_SECONDS;
  }

  /** A new token of a flow under the active key, with the seed that derives it again. */
  issue(purpose: TokenPurpose, flowId: string, now = Date.now()): { token: string; seed: TokenSeed } {
    const nonce = Buffer.alloc(NONCE_BYTES);
    nonce.writeUInt32BE(Math.floor(now / 1000) >>> 0, 0);
    randomBytes(NONCE_BYTES - 4).copy(nonce, 4);
    const key = this.ring.activeKeyId;
    return { token: tokenOf(this.derived[purpose].get(key)!, flowId, nonce), seed: { nonce: nonce.toString('base64url'), key } };
  }

  /** The token of a seed again; undefined when the seed's key left the ring or the seed is not a v2 one. */
  derive(purpose: TokenPurpose, flowId: string, seed: TokenSeed): string | undefined {
    const key = this.derived[purpose].get(seed.key);
    const nonce = Buffer.from(seed.nonce, 'base64url');
    if (!key || nonce.length !== NONCE_BYTES) return undefined;
    return tokenOf(key, flowId, nonce);
  }

  /**
   * Whether `token` is a v2 token of `flowId` for `purpose`, made by a key of the ring and issued
   * within the local window. False says nothing: the caller checks the memo's hash then.
   */
  verifyLocally(purpose: TokenPurpose, flowId: string, token: string, now = Date.now()): boolean {
    if (typeof token !== 'string' || !TOKEN_V2_PATTERN.test(token)) return false;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length !== NONCE_BYTES + MAC_BYTES) return false;
    const nonce = raw.subarray(0, NONCE_BYTES);
    const age = now / 1000 - nonce.readUInt32BE(0);
    if (age > this.windowSeconds || age < -CLOCK_SKEW_SECONDS) return false;
    const presented = raw.subarray(NONCE_BYTES);
    let match = false;
    for (const key of this.derived[purpose].values()) {
      if (timingSafeEqual(mac(key, flowId, nonce), presented)) match = true;
    }
    return match;
  }
}

function mac(key: Buffer, flowId: string, nonce: Buffer): Buffer {
  return createHmac('sha256', key).update(flowId, 'utf8').update('\n').update(nonce).digest();
}

function tokenOf(key: Buffer, flowId: string, nonce: Buffer): string {
  return Buffer.concat([nonce, mac(key, flowId, nonce)]).toString('base64url');
}
