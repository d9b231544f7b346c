/**
 * The register of keys derived from PAYLOAD_ENCRYPTION_KEYS (src/codec/derive.ts): one info string
 * per purpose, every derivation through it, and each purpose's key fixed by a test vector (an info
 * string changed in place would orphan every token and record made under it).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { KEY_PURPOSES, deriveKey, deriveKeys, type KeyPurpose } from '../../src/codec/derive';

const SRC = path.resolve(__dirname, '..', '..', 'src');
const REGISTER = path.join(SRC, 'codec', 'derive.ts');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The first 8 bytes of each purpose's key from a payload key of 32 bytes of 7. */
const VECTORS: Record<KeyPurpose, string> = {
  seal: '26cf815272776694',
  pin_token_v1: '88fcbe4b52d0356a',
  flow_token_pin: '11577a5ab6f18a61',
  flow_token_notify: 'd353f9c5cfc3ce54',
  page_token: '49efc64f8ef99492',
  idempotency: '11094bece49d3e70',
  pin_budget: '3a19ad5b44c42c09',
  limit_ledger: '588909a65b66fd97',
  customer_ref: '36e0b9ffd0f74085',
};

const INFO_LITERALS = Object.values(KEY_PURPOSES).map((info) => new RegExp(`['"\`]${info}['"\`]`));
/** A call of Node's HKDF, or one of the register's info strings as a literal in code (not a comment). */
function derivesOrNamesInfo(line: string): boolean {
  const code = line.trim();
  if (code.startsWith('*') || code.startsWith('//') || code.startsWith('/*')) return false;
  return /\bhkdf(Sync)?\s*\(|\bhkdf(Sync)?\b.*from 'node:crypto'/.test(code) || INFO_LITERALS.some((re) => re.test(code));
}

describe('the register of derived keys', () => {
  test('no two purposes share an HKDF info string', () => {
    const infos = Object.values(KEY_PURPOSES);
    const twice = infos.filter((info, i) => infos.indexOf(info) !== i);
    assert.deepEqual(twice, [], `info strings used by more than one purpose: ${twice.join(', ')}`);
  });

  test("every purpose's key is the one it always was (an info string is never changed in place)", () => {
    assert.deepEqual(Object.keys(VECTORS).sort(), Object.keys(KEY_PURPOSES).sort(), 'a purpose without a test vector (add one)');
    for (const purpose of Object.keys(KEY_PURPOSES) as KeyPurpose[]) {
      assert.equal(deriveKey(Buffer.alloc(32, 7), purpose).toString('hex').slice(0, 16), VECTORS[purpose], purpose);
    }
  });

  test('no code in src derives a key from the payload keys except through the register', () => {
    const bypass = sourceFiles(SRC)
      .filter((f) => f !== REGISTER)
      .flatMap((f) =>
        fs
          .readFileSync(f, 'utf8')
          .split('\n')
          .flatMap((line, i) => (derivesOrNamesInfo(line) ? [`${path.relative(SRC, f)}:${i + 1}: ${line.trim()}`] : [])),
      );
    assert.deepEqual(bypass, [], 'derive keys with deriveKey/deriveKeys from src/codec/derive.ts');
  });

  test('deriveKeys gives every key of the ring its own sub-key, the active key first', () => {
    const a = Buffer.alloc(32, 1).toString('base64');
    const b = Buffer.alloc(32, 2).toString('base64');
    const { activeKeyId, keys } = deriveKeys(`new:${b},old:${a}`, 'pin_budget');
    assert.equal(activeKeyId, 'new');
    assert.deepEqual([...keys.keys()], ['new', 'old']);
    assert.notDeepEqual(keys.get('new'), keys.get('old'));
    assert.deepEqual(keys.get('old'), deriveKey(Buffer.alloc(32, 1), 'pin_budget'));
  });

  test('deriveKeys derives a purpose once per ring and answers a fresh Map the caller may change', () => {
    const raw = `k1:${Buffer.alloc(32, 3).toString('base64')},k0:${Buffer.alloc(32, 4).toString('base64')}`;
    const first = deriveKeys(raw, 'customer_ref');
    first.keys.delete('k0');
    const again = deriveKeys(raw, 'customer_ref');
    assert.deepEqual([...again.keys.keys()], ['k1', 'k0']);
    assert.equal(again.keys.get('k1'), first.keys.get('k1'), 'the same sub-key, not derived again');
    assert.deepEqual(again.keys.get('k0'), deriveKey(Buffer.alloc(32, 4), 'customer_ref'));
    assert.notDeepEqual(deriveKeys(raw, 'page_token').keys.get('k1'), again.keys.get('k1'));
  });
});
