/**
 * Every workflow type the worker registers names its Worker Deployment Versioning behavior
 * (src/workflows/versioning.ts), so no type falls to the worker's default by omission.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as Workflows from '../../src/workflows';
import { VERSIONING_BEHAVIORS } from '../../src/workflows/versioning';

describe('versioning behaviors', () => {
  test('every registered workflow type is PINNED or AUTO_UPGRADE by name, and swaps are pinned', () => {
    const registered = Object.entries(Workflows).filter(([, v]) => typeof v === 'function').map(([k]) => k).sort();
    assert.deepEqual(Object.keys(VERSIONING_BEHAVIORS).sort(), registered);
    for (const [name, fn] of Object.entries(Workflows)) {
      const options = (fn as { workflowDefinitionOptions?: { versioningBehavior?: string } }).workflowDefinitionOptions;
      assert.equal(options?.versioningBehavior, VERSIONING_BEHAVIORS[name as keyof typeof VERSIONING_BEHAVIORS], `${name}: the behavior set on the function`);
    }
    assert.equal(VERSIONING_BEHAVIORS.swapWorkflow, 'PINNED');
  });
});
