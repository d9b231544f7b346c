/**
 * A Temporal PayloadCodec that encrypts whole payloads (metadata and data) with AES-256-GCM.
 *
 * Encoded payload: metadata `encoding: binary/encrypted`, `encryption-key-id: <keyId>`;
 * data = iv (12 random bytes) | ciphertext | tag (16 bytes) of the protobuf-encoded original
 * payload. The key id is bound as additional authenticated data, so relabelling a payload with
 * another key id fails authentication. Decode accepts every key of the ring (rotation) and passes
 * payloads that are not encrypted through unchanged.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec, ValueError } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { KEYS_ENV, type KeyRing, toKeyRing } from './keys';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const AAD_PREFIX = 'mpf-payload-v1:';

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const text = (b: Uint8Array | null | undefined): string | undefined =>
  b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8') : undefined;

export class PayloadDecryptionError extends ValueError {}

export class AesGcmCodec implements PayloadCodec {
  private readonly ring: KeyRing;

  constructor(keys: string | KeyRing) {
    this.ring = toKeyRing(keys);
  }

  get activeKeyId(): string {
    return this.ring.activeKeyId;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.encryptOne(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.decryptOne(p));
  }

  encryptOne(payload: Payload): Payload {
    const keyId = this.ring.activeKeyId;
    const key = this.ring.keys.get(keyId) as Buffer;
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(utf8(AAD_PREFIX + keyId));
    const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING),
        [METADATA_KEY_ID]: utf8(keyId),
      },
      data: new Uint8Array(Buffer.concat([iv, ct, cipher.getAuthTag()])),
    };
  }

  decryptOne(payload: Payload): Payload {
    if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
    const keyId = text(payload.metadata?.[METADATA_KEY_ID]);
    if (!keyId) throw new PayloadDecryptionError('encrypted payload carries no encryption-key-id metadata');
    const key = this.ring.keys.get(keyId);
    if (!key) {
      throw new PayloadDecryptionError(
        `payload was encrypted with key id "${keyId.slice(0, 64)}", which is not in ${KEYS_ENV} ` +
          `(known ids: ${[...this.ring.keys.keys()].join(', ')})`,
      );
    }
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES) {
      throw new PayloadDecryptionError(`encrypted payload (key id "${keyId}") is too short to be valid`);
    }
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const iv = buf.subarray(0, IV_BYTES);
    const tag = buf.subarray(buf.length - TAG_BYTES);
    const ct = buf.subarray(IV_BYTES, buf.length - TAG_BYTES);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(utf8(AAD_PREFIX + keyId));
      decipher.setAuthTag(tag);
      plain = Buffer.concat([decipher.update(ct), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(
        `encrypted payload (key id "${keyId}") failed authentication: it was altered or the key is wrong`,
      );
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

/** Convenience factory: `createPayloadCodec(process.env.PAYLOAD_ENCRYPTION_KEYS)`. */
export function createPayloadCodec(keys: string | KeyRing): AesGcmCodec {
  return new AesGcmCodec(keys);
}
