/**
 * The one list of live patches (src/workflows/patches.ts): every `patched(…)` and
 * `deprecatePatch(…)` in workflow code names an id of the list, through the list's constants.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import * as Patches from '../../src/workflows/patches';

const WORKFLOWS = path.resolve(__dirname, '..', '..', 'src', 'workflows');
const CALL = /\b(patched|deprecatePatch)\(\s*([^)]*?)\s*\)/g;

/** The patch ids a workflow source uses that are not in the list ("file: call"), from its text. */
export function unlistedPatchCalls(file: string, source: string): string[] {
  const listed = new Set(Patches.LIVE_PATCHES.map((p) => p.id));
  const constants = Patches as unknown as Record<string, unknown>;
  const out: string[] = [];
  for (const m of source.matchAll(CALL)) {
    const arg = m[2]!;
    const literal = /^['"`]([^'"`]+)['"`]$/.exec(arg)?.[1];
    const value = literal ?? (typeof constants[arg] === 'string' ? (constants[arg] as string) : undefined);
    if (value === undefined || !listed.has(value)) out.push(`${file}: ${m[0]}`);
  }
  return out;
}

describe('the live patches', () => {
  test('every patched/deprecatePatch call in workflow code names an id of src/workflows/patches.ts', () => {
    const files = fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith('.ts') && f !== 'patches.ts');
    const calls = files.flatMap((f) => [...fs.readFileSync(path.join(WORKFLOWS, f), 'utf8').matchAll(CALL)].map(() => f));
    assert.ok(calls.length >= 2, `found ${calls.length} patch calls: the scan sees nothing`);
    assert.deepEqual(files.flatMap((f) => unlistedPatchCalls(f, fs.readFileSync(path.join(WORKFLOWS, f), 'utf8'))), []);
  });

  test('an id not in the list is caught, by literal or by an unknown constant (the check can fail)', () => {
    assert.deepEqual(unlistedPatchCalls('x.ts', "if (patched('my-new-change')) {}"), ["x.ts: patched('my-new-change')"]);
    assert.deepEqual(unlistedPatchCalls('x.ts', 'deprecatePatch(SOME_OTHER_PATCH);'), ['x.ts: deprecatePatch(SOME_OTHER_PATCH)']);
    assert.deepEqual(unlistedPatchCalls('x.ts', 'patched(RESOLVE_PATCH)'), []);
  });

  test('each entry says why, which release added it and when it may be deprecated; ids are unique', () => {
    const ids = Patches.LIVE_PATCHES.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const p of Patches.LIVE_PATCHES) {
      assert.match(p.id, /^mpf-[a-z0-9-]+-v\d+$/);
      for (const k of ['why', 'addedIn', 'deprecateWhen'] as const) assert.ok(p[k].length > 10, `${p.id}.${k}`);
    }
  });
});
