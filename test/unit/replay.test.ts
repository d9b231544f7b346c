import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { workerDataConverter } from '../../src/codec/data-converter';
import { WORKFLOWS_PATH } from '../../src/worker';
import { workflowBundle } from '../helpers/stack';
import { CORPUS_PATHS } from '../../scripts/record-histories';

const dir = path.join(__dirname, '..', 'replay');
const keys = fs.readFileSync(path.join(dir, 'test-key.txt'), 'utf8').trim();
/** One directory per release: test/replay/<version>-<commit>/ with release.json and its histories. */
const releases = fs
  .readdirSync(dir, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const files = releases.flatMap((r) =>
  fs
    .readdirSync(path.join(dir, r))
    .filter((f) => f.endsWith('.json') && f !== 'release.json')
    .sort()
    .map((f) => path.join(r, f)),
);
const releaseInfo = (r: string) =>
  JSON.parse(fs.readFileSync(path.join(dir, r, 'release.json'), 'utf8')) as { release: string; commit: string; recorded_at: string; paths: string[]; workflow_ids?: Record<string, string> };
/** The workflow id a history was recorded under (child workflow ids derive from it), else a made-up one. */
const workflowIdOf = (f: string): string => {
  const [r, name] = f.split(path.sep) as [string, string];
  return releaseInfo(r).workflow_ids?.[name.replace(/\.json$/, '')] ?? `replay-${f}`;
};

describe('recorded workflow histories, one corpus per release (npm run record-histories)', () => {
  test('every release kept names itself and holds histories; the newest covers every path a flow can take', () => {
    assert.ok(releases.length >= 2, releases.join(','));
    for (const r of releases) {
      const info = releaseInfo(r);
      assert.equal(info.release, r);
      const here = files.filter((f) => f.startsWith(`${r}${path.sep}`));
      assert.ok(here.length > 0, `${r} holds no history`);
      for (const p of info.paths) assert.ok(here.includes(path.join(r, `${p}.json`)), `${r}: ${p}.json is listed but missing`);
    }
    const newest = releases.map(releaseInfo).sort((a, b) => a.recorded_at.localeCompare(b.recorded_at)).at(-1)!;
    const missing = CORPUS_PATHS.filter((p) => !newest.paths.includes(p));
    assert.deepEqual(missing, [], `the newest corpus (${newest.release}) lacks these paths`);
  });

  test('hold no plaintext PIN, sealed value or notification token', () => {
    for (const f of files) {
      const raw = fs.readFileSync(path.join(dir, f), 'utf8');
      // Every payload's bytes, as the server stores them (base64 in the JSON history).
      const payloads = [...raw.matchAll(/"data":\s*"([^"]+)"/g)].map((m) => Buffer.from(m[1], 'base64').toString('latin1'));
      assert.ok(payloads.length > 0, `${f} has payloads`);
      for (const text of [raw, ...payloads]) {
        for (const secret of ['"2468"', 'wallet_pin', 'sealed:v1', '/v1/notifications/', 'auth_token', 'Ada Obi']) {
          assert.ok(!text.includes(secret), `${f} contains ${secret}`);
        }
      }
    }
  });

  for (const f of files) {
    test(`${f} replays deterministically against the current workflow code`, async () => {
      const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
      await Worker.runReplayHistory(
        { workflowBundle: await workflowBundle(), dataConverter: workerDataConverter(keys), replayName: f.replace(path.sep, '/') },
        history,
        workflowIdOf(f),
      );
    });
  }

  test('a replay fails when the workflow code changes incompatibly (the check can fail)', async () => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, '0.1.0-3c56ec6', 'swap-cancelled.json'), 'utf8')));
    // Replay the swap history against the payment-link workflow registered under the swap's name.
    const { bundleWorkflowCode } = await import('@temporalio/worker');
    const altered = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, '..', 'fixtures', 'altered-workflows.ts'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: altered, dataConverter: workerDataConverter(keys) }, history, 'altered'),
      /Nondeterminism|DeterminismViolation|nondeterministic/i,
    );
    void WORKFLOWS_PATH;
  });
});
