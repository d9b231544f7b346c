/**
 * When a reading of the provider guard's memo is not trusted (src/temporal/provider-guard-reading.ts
 * guardStall): the guard must be deciding, or its memo may be behind what was reported to it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { msToTs } from '@temporalio/common/lib/time';
import { GUARD_TASK_STALE_MS } from '../../src/contract/provider-guard';
import { guardStall } from '../../src/temporal/provider-guard-reading';

const NOW = Date.parse('2026-11-26T20:00:00Z');

describe('trusting a reading of the provider guard', () => {
  test('a guard with no pending workflow task, or a fresh first attempt, is trusted', () => {
    assert.equal(guardStall(undefined, NOW), undefined);
    assert.equal(guardStall({ scheduledTime: msToTs(NOW - 2_000), attempt: 1 }, NOW), undefined);
  });

  test('a workflow task failing in a loop is not trusted, however young each attempt is', () => {
    assert.match(guardStall({ scheduledTime: msToTs(NOW - 100), attempt: 4 }, NOW) ?? '', /failing or timing out \(attempt 4\)/);
  });

  test('a workflow task waiting longer than the limit for a worker is not trusted', () => {
    assert.equal(guardStall({ scheduledTime: msToTs(NOW - GUARD_TASK_STALE_MS + 1), attempt: 1 }, NOW), undefined);
    assert.match(guardStall({ scheduledTime: msToTs(NOW - GUARD_TASK_STALE_MS - 1_000), attempt: 1 }, NOW) ?? '', /has waited 16 s for a worker/);
  });
});
