/**
 * How every reader of ours decodes a keyword search attribute from a listing or a description
 * (timeline.ts keywordOf, used by lists, events and the timeline): its plaintext JSON payload.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keywordOf } from '../../src/starter/client/timeline';

const payload = (json: string) => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(json, 'utf8') });

test('a keyword search attribute reads as its string, a keyword list as its first string', () => {
  assert.equal(keywordOf(payload('"awaiting_pin"')), 'awaiting_pin');
  assert.equal(keywordOf(payload('["swap","ignored"]')), 'swap');
});

test('a missing, empty, unparsable or non-string search attribute reads as absent, never as a throw', () => {
  assert.equal(keywordOf(undefined), undefined);
  assert.equal(keywordOf(null), undefined);
  assert.equal(keywordOf({ metadata: {} }), undefined);
  assert.equal(keywordOf(payload('{not json')), undefined);
  assert.equal(keywordOf(payload('42')), undefined);
  assert.equal(keywordOf(payload('[]')), undefined);
  assert.equal(keywordOf(payload('[7]')), undefined);
});
