import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { workerDataConverter } from '../../src/codec/data-converter';
import { WORKFLOWS_PATH } from '../../src/worker';
import { workflowBundle } from '../helpers/stack';

const dir = path.join(__dirname, '..', 'replay');
const keys = fs.readFileSync(path.join(dir, 'test-key.txt'), 'utf8').trim();
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

describe('recorded workflow histories (scripts/record-histories.ts)', () => {
  test('there are recorded swap and payment-link histories to replay', () => {
    assert.ok(files.some((f) => f.startsWith('swap-')) && files.some((f) => f.startsWith('paylink-')), files.join(','));
  });

  test('hold no plaintext PIN, sealed value or notification token', () => {
    for (const f of files) {
      const raw = fs.readFileSync(path.join(dir, f), 'utf8');
      // Every payload's bytes, as the server stores them (base64 in the JSON history).
      const payloads = [...raw.matchAll(/"data":\s*"([^"]+)"/g)].map((m) => Buffer.from(m[1], 'base64').toString('latin1'));
      assert.ok(payloads.length > 5, `${f} has payloads`);
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
        { workflowBundle: await workflowBundle(), dataConverter: workerDataConverter(keys), replayName: f },
        history,
        `replay-${f}`,
      );
    });
  }

  test('a replay fails when the workflow code changes incompatibly (the check can fail)', async () => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, 'swap-cancelled.json'), 'utf8')));
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
