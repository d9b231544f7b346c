/**
 * From the worker's CPU profile: the Temporal worker evaluates a workflow's modules anew for every workflow it
 * starts or replays (a module cache per workflow), so whatever the workflow bundle carries costs
 * CPU on every flow. Building zod's schemas there took about a fifth of the workflow thread's CPU
 * per swap; the bundle must not carry a schema library again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bundleWorkflowCode } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../../src/codec/data-converter';
import { WORKFLOWS_PATH } from '../../src/worker';

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

test('the workflow bundle carries no zod (nor any other schema library)', { timeout: 120_000 }, async () => {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, failureConverterPath: FAILURE_CONVERTER_PATH, logger: quietLogger });
  const modules = [...code.matchAll(/^\/\*\*\*\/ "([^"]+)"/gm)].map((m) => m[1]!);
  assert.ok(modules.some((m) => m.includes('src/workflows/swap.ts')), 'the bundle lists its modules');
  const heavy = modules.filter((m) => /node_modules\/(zod|ajv|yup|joi)\//.test(m) || m.endsWith('src/contract/provider.ts'));
  assert.deepEqual(heavy, []);
});
