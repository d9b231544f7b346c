/**
 * The simulator's category list is exactly the one docs/provider-api.md shows: same 77 codes and
 * names, in the same order (codes compared as strings).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildCategoryTree } from '../../src/contract/categories';
import { CATEGORIES } from '../../src/simulator/categories-data';

/** The provider's document, kept in the repository (docs/provider-api.md). */
const DOC = resolve(__dirname, '..', '..', 'docs', 'provider-api.md');

function documentedCategories(): { code: string; name: string }[] {
  const text = readFileSync(DOC, 'utf8');
  const start = text.indexOf('Categories returned (code = name):');
  const end = text.indexOf('Hierarchy:', start);
  assert.ok(start >= 0 && end > start, 'provider-api.md has the category list');
  return text
    .slice(start, end)
    .split('\n')
    .map((l) => /^- (\d+\.\d+) (.+)$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ code: m[1], name: m[2] }));
}

describe('simulator categories', () => {
  test('serves the same 77 codes and names as provider-api.md, in the same order', () => {
    const doc = documentedCategories();
    assert.equal(doc.length, 77);
    assert.deepEqual(
      CATEGORIES.map((c) => ({ code: c.code, name: c.name })),
      doc,
    );
  });

  test('keeps codes as distinct strings and repeated names as separate entries', () => {
    const codes = CATEGORIES.map((c) => c.code);
    assert.equal(new Set(codes).size, 77);
    assert.ok(codes.every((c) => typeof c === 'string'));
    assert.equal(CATEGORIES.filter((c) => c.name === 'eVouchers > Electronics').length, 2);
  });

  test('forms the documented hierarchy with no orphans', () => {
    const tree = buildCategoryTree(CATEGORIES);
    assert.equal(tree.orphans.length, 0);
    const childrenOf = (code: string) => tree.parents.find((p) => p.code === code)?.children.length;
    assert.equal(childrenOf('4.0'), 6);
    assert.equal(childrenOf('8.0'), 3);
    assert.equal(childrenOf('10.0'), 2);
    assert.equal(childrenOf('11.0'), 3);
    assert.equal(childrenOf('13.0'), 50);
    assert.equal(tree.parents.length, 13);
  });
});
