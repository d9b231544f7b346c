import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmCodec, ENCRYPTED_ENCODING, METADATA_KEY_ID } from '../../src/codec/aes-gcm-codec';
import { generateDevKeys, parseEncryptionKeys } from '../../src/codec/keys';
import { clientDataConverter, FAILURE_CONVERTER_PATH, workerDataConverter } from '../../src/codec/data-converter';

const key = (id: string): string => `${id}:${randomBytes(32).toString('base64')}`;
const str = (b: Uint8Array | null | undefined): string => Buffer.from(b ?? new Uint8Array()).toString('utf8');
const MARKER = 'PLAINTEXT-MARKER-codec-unit';

describe('PAYLOAD_ENCRYPTION_KEYS parsing', () => {
  test('takes the first key as the active one and keeps every key for decryption', () => {
    const ring = parseEncryptionKeys(`${key('new')}, ${key('old')}`);
    assert.equal(ring.activeKeyId, 'new');
    assert.deepEqual([...ring.keys.keys()], ['new', 'old']);
    assert.equal(ring.keys.get('old')?.length, 32);
  });

  test('accepts base64url key material', () => {
    const ring = parseEncryptionKeys(`k1:${randomBytes(32).toString('base64url')}`);
    assert.equal(ring.keys.get('k1')?.length, 32);
  });

  test('rejects a key of the wrong length naming the variable and key id but not the key', () => {
    const material = randomBytes(16).toString('base64');
    assert.throws(
      () => parseEncryptionKeys(`good:${randomBytes(32).toString('base64')},short:${material}`),
      (e: Error) =>
        e.message.includes('PAYLOAD_ENCRYPTION_KEYS') &&
        e.message.includes('"short"') &&
        e.message.includes('16 bytes') &&
        !e.message.includes(material),
    );
  });

  test('rejects an empty value, a missing colon, a duplicate id and non-base64 material', () => {
    assert.throws(() => parseEncryptionKeys(''), /PAYLOAD_ENCRYPTION_KEYS: is empty/);
    assert.throws(() => parseEncryptionKeys(undefined), /PAYLOAD_ENCRYPTION_KEYS/);
    const bare = randomBytes(32).toString('base64');
    assert.throws(
      () => parseEncryptionKeys(bare),
      (e: Error) => /entry 1 is not of the form keyId:base64key/.test(e.message) && !e.message.includes(bare),
    );
    assert.throws(() => parseEncryptionKeys(`a:${randomBytes(32).toString('base64')},${key('a')}`), /"a" appears more than once/);
    assert.throws(() => parseEncryptionKeys('bad:not base64 at all!'), /key "bad" is not valid base64/);
    assert.throws(() => parseEncryptionKeys(`${key('ok')},`), /entry 2 is empty/);
    assert.throws(() => parseEncryptionKeys(`has space:${randomBytes(32).toString('base64')}`), /entry 1 has an invalid key id/);
  });

  test('generates dev keys that parse, differ each time and carry the requested id', () => {
    const a = generateDevKeys();
    const b = generateDevKeys('demo');
    assert.notEqual(a, generateDevKeys());
    assert.equal(parseEncryptionKeys(a).keys.size, 1);
    assert.equal(parseEncryptionKeys(b).activeKeyId, 'demo');
  });
});

describe('AES-256-GCM payload codec', () => {
  const keys = generateDevKeys('k1');
  const codec = new AesGcmCodec(keys);
  const original = (): Payload => defaultPayloadConverter.toPayload({ secret: MARKER, n: 42 });

  test('round-trips a payload and hides its content, metadata included', async () => {
    const [encoded] = await codec.encode([original()]);
    assert.ok(encoded);
    assert.equal(str(encoded.metadata?.[METADATA_ENCODING_KEY]), ENCRYPTED_ENCODING);
    assert.equal(str(encoded.metadata?.[METADATA_KEY_ID]), 'k1');
    const wire = JSON.stringify(encoded) + Buffer.from(encoded.data ?? []).toString('latin1');
    assert.ok(!wire.includes(MARKER));
    assert.ok(!wire.includes('json/plain'));
    const [decoded] = await codec.decode([encoded]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decoded as Payload), { secret: MARKER, n: 42 });
    assert.equal(str(decoded?.metadata?.[METADATA_ENCODING_KEY]), 'json/plain');
  });

  test('uses a fresh IV for each payload so equal values encrypt differently', async () => {
    const [a, b] = await codec.encode([original(), original()]);
    assert.notDeepEqual(Buffer.from(a?.data ?? []), Buffer.from(b?.data ?? []));
    // iv (12) | ciphertext (same length as the protobuf-encoded payload) | tag (16)
    assert.equal(a?.data?.length, temporal.api.common.v1.Payload.encode(original()).finish().length + 12 + 16);
  });

  test('refuses a payload whose ciphertext was altered', async () => {
    const [encoded] = await codec.encode([original()]);
    const data = Buffer.from(encoded?.data ?? []);
    data[20] = (data[20] as number) ^ 0x01;
    await assert.rejects(codec.decode([{ ...encoded, data }]), /key id "k1".*failed authentication/);
  });

  test('refuses a payload relabelled with another known key id', async () => {
    const ring = `k1:${keys.split(':')[1]},k2:${keys.split(':')[1]}`;
    const both = new AesGcmCodec(ring);
    const [encoded] = await both.encode([original()]);
    const relabelled = { ...encoded, metadata: { ...encoded?.metadata, [METADATA_KEY_ID]: Buffer.from('k2') } };
    await assert.rejects(both.decode([relabelled]), /failed authentication/);
  });

  test('names the unknown key id when a payload was encrypted with a key it does not hold', async () => {
    const [encoded] = await new AesGcmCodec(generateDevKeys('retired')).encode([original()]);
    await assert.rejects(codec.decode([encoded as Payload]), (e: Error) => {
      assert.match(e.message, /key id "retired", which is not in PAYLOAD_ENCRYPTION_KEYS \(known ids: k1\)/);
      return true;
    });
  });

  test('passes payloads that are not encrypted through decode unchanged', async () => {
    const plain = original();
    const [out] = await codec.decode([plain]);
    assert.equal(out, plain);
  });

  test("writes iv | ciphertext | tag under the key id's AAD, each payload in arrays of its own, as Node's crypto alone reads it", async () => {
    const [a, b] = await codec.encode([original(), original()]);
    assert.ok(a && b);
    const data = a.data!;
    assert.equal(data.byteOffset, 0, 'the data is not a slice of a shared pool');
    assert.equal(data.buffer.byteLength, data.byteLength);
    a.metadata![METADATA_KEY_ID]![0] = 0;
    a.metadata![METADATA_ENCODING_KEY]![0] = 0;
    assert.equal(str(b.metadata![METADATA_KEY_ID]), 'k1', "changing one payload's metadata changes no other's");
    assert.equal(str(b.metadata![METADATA_ENCODING_KEY]), ENCRYPTED_ENCODING);
    const raw = Buffer.from(data);
    const decipher = createDecipheriv('aes-256-gcm', parseEncryptionKeys(keys).keys.get('k1')!, raw.subarray(0, 12), { authTagLength: 16 });
    decipher.setAAD(Buffer.from('mpf-payload-v1:k1', 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
    assert.equal(str(temporal.api.common.v1.Payload.decode(plain).data), str(original().data));
  });

  test("decrypts a payload Node's crypto alone encrypted, and passes through one whose encoding only resembles ours", async () => {
    const plain = temporal.api.common.v1.Payload.encode(original()).finish();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', parseEncryptionKeys(keys).keys.get('k1')!, iv, { authTagLength: 16 });
    cipher.setAAD(Buffer.from('mpf-payload-v1:k1', 'utf8'));
    const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
    const byHand: Payload = {
      metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING), [METADATA_KEY_ID]: Buffer.from('k1') },
      data: Buffer.concat([iv, ct, cipher.getAuthTag()]),
    };
    const [decoded] = await codec.decode([byHand]);
    assert.equal(str(decoded!.data), str(original().data));
    for (const encoding of [`${ENCRYPTED_ENCODING}2`, ENCRYPTED_ENCODING.slice(0, -1), ENCRYPTED_ENCODING.toUpperCase()]) {
      const alike: Payload = { ...byHand, metadata: { ...byHand.metadata, [METADATA_ENCODING_KEY]: Buffer.from(encoding) } };
      const [passed] = await codec.decode([alike]);
      assert.equal(passed, alike, encoding);
    }
  });

  test('after rotation encrypts with the new key and still decrypts history written with the old key', async () => {
    const oldKeys = generateDevKeys('2024');
    const [oldPayload] = await new AesGcmCodec(oldKeys).encode([original()]);
    const rotated = new AesGcmCodec(`${generateDevKeys('2025')},${oldKeys}`);
    const [decodedOld] = await rotated.decode([oldPayload as Payload]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decodedOld as Payload), { secret: MARKER, n: 42 });
    const [fresh] = await rotated.encode([original()]);
    assert.equal(str(fresh?.metadata?.[METADATA_KEY_ID]), '2025');
    await assert.rejects(new AesGcmCodec(oldKeys).decode([fresh as Payload]), /key id "2025"/);
  });
});

describe('data converters', () => {
  test('encrypt failure messages and stack traces for the client', async () => {
    const dc = clientDataConverter(generateDevKeys());
    const failure = dc.failureConverter.errorToFailure(new Error(MARKER), dc.payloadConverter);
    assert.equal(failure.message, 'Encoded failure');
    assert.equal(failure.stackTrace, '');
    const [encoded] = await (dc.payloadCodecs[0] as AesGcmCodec).encode([failure.encodedAttributes as Payload]);
    assert.ok(!Buffer.from(encoded?.data ?? []).toString('latin1').includes(MARKER));
  });

  test('give the worker a loadable failure converter path and the same codec', async () => {
    const dc = workerDataConverter(generateDevKeys());
    assert.equal(dc.failureConverterPath, FAILURE_CONVERTER_PATH);
    // The SDK loads it with require(), as here.
    const mod = createRequire(__filename)(FAILURE_CONVERTER_PATH) as { failureConverter: { errorToFailure: unknown } };
    assert.equal(typeof mod.failureConverter.errorToFailure, 'function');
    assert.equal(dc.payloadCodecs?.length, 1);
  });
});
