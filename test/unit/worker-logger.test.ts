/**
 * The worker's pino adapter for the SDK's Runtime logger, and request id acceptance, without
 * Temporal: one JSON object per line, task tokens removed, webpack statistics only at debug; the
 * flow a request's line names.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptRequestId, REQUEST_ID_MEMO_FIELD, type RequestContext, runWithRequest } from '../../src/observability/request-context';
import { tagged } from '../../src/observability/temporal-client';
import { createWorkerPino, PinoTemporalLogger, type WorkerLogLevel } from '../../src/observability/worker-logger';

function capture(level: WorkerLogLevel): { logger: PinoTemporalLogger; lines: string[] } {
  const lines: string[] = [];
  const pino = createWorkerPino({ level, destination: { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) } });
  return { logger: new PinoTemporalLogger(pino), lines };
}

const WEBPACK_STATS = 'asset workflow-bundle-abc.js 1.2 MiB [emitted]\nruntime modules 1 KiB\nwebpack 5.101.0 compiled successfully in 2345 ms';

describe('worker logs', () => {
  test('are one JSON object per line, without task tokens, with the attributes the SDK passes', () => {
    const { logger, lines } = capture('info');
    logger.info('Activity completed', { workflowId: 'swap-1', taskToken: 'CiQ0secretTaskToken==', activityType: 'confirmSwap', reqId: 'r-1' });
    logger.error('Error while processing ActivityTask.start', { task: '{"taskToken":"x"}', taskEncoded: 'AAAA', base64TaskToken: 'QQ==', error: new Error('multi\nline') });
    assert.equal(lines.length, 2);
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.equal(first.msg, 'Activity completed');
    assert.equal(first.workflowId, 'swap-1');
    assert.equal(first.reqId, 'r-1');
    assert.equal(first.level, 30);
    assert.ok(!('taskToken' in first));
    const second = JSON.parse(lines[1]!) as Record<string, { message?: string }>;
    assert.equal(second.error?.message, 'multi\nline');
    assert.ok(!/taskToken|taskEncoded|QQ==/.test(lines[1]!), lines[1]);
  });

  test("log webpack's bundle statistics only when asked (LOG_LEVEL=debug), as one line", () => {
    const info = capture('info');
    info.logger.info(WEBPACK_STATS, { sdkComponent: 'worker' });
    info.logger.info('Workflow bundle created', { size: '1.2MB' });
    assert.deepEqual(info.lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['Workflow bundle created']);
    const debug = capture('debug');
    debug.logger.info(WEBPACK_STATS, { sdkComponent: 'worker' });
    assert.equal(debug.lines.length, 1);
    assert.equal((JSON.parse(debug.lines[0]!) as { level: number }).level, 20);
  });

  test('x-request-id is kept when it is a bounded token, else replaced by a random UUID', () => {
    assert.equal(acceptRequestId('abc-123_X.y:z'), 'abc-123_X.y:z');
    for (const bad of ['', 'has space', 'a'.repeat(129), 'x\ny', '<script>', undefined]) {
      const id = acceptRequestId(bad);
      assert.notEqual(id, bad);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }
    assert.notEqual(acceptRequestId(undefined), acceptRequestId(undefined));
  });

  test("a request's line names the flow it started, never the PIN budget or another record it started beside it", () => {
    const ctx: RequestContext = { requestId: 'req-1' };
    runWithRequest(ctx, () => {
      const budget = tagged('pinBudgetWorkflow', { workflowId: 'pin-budget-abc' } as { workflowId: string; memo?: Record<string, unknown> });
      assert.equal(budget.memo?.[REQUEST_ID_MEMO_FIELD], 'req-1', 'the record still carries the request id');
      assert.equal(ctx.startedFlow, undefined, 'a swap refused after its budget was reserved names no flow');
      tagged('swapWorkflow', { workflowId: 'swap-r1' });
      tagged('idempotencyWorkflow', { workflowId: 'idem-x' });
    });
    assert.deepEqual(ctx.startedFlow, { workflowId: 'swap-r1', workflowType: 'swapWorkflow' });
  });
});
