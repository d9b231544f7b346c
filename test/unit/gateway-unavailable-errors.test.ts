import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { FlowPendingError, TemporalCredentialsRefusedError, TemporalPersistenceUnavailableError, TemporalUnavailableError, WorkerUnavailableError } from '../../src/starter/client/errors';
import { installErrorHandlers } from '../../src/starter/gateway/errors';
import { PayloadDecryptionError } from '../../src/codec/aes-gcm-codec';

/** A gateway's error handler behind one route that throws `err`. */
async function answerTo(err: Error) {
  const app = Fastify();
  installErrorHandlers(app);
  app.get('/x', async () => {
    throw err;
  });
  try {
    const res = await app.inject({ method: 'GET', url: '/x' });
    return { status: res.statusCode, retryAfter: res.headers['retry-after'], body: res.json() as Record<string, unknown> };
  } finally {
    await app.close();
  }
}

describe('the 503 answers name what is unavailable', () => {
  test("Temporal's database down is 503 temporal_persistence_unavailable naming the database, with Retry-After and the flow id", async () => {
    const r = await answerTo(new TemporalPersistenceUnavailableError('swap-r-1'));
    assert.equal(r.status, 503);
    assert.equal(r.retryAfter, '5');
    assert.equal(r.body.error, 'temporal_persistence_unavailable');
    assert.equal(r.body.flow_id, 'swap-r-1');
    assert.match(String(r.body.message), /^Temporal's persistence \(its database\) is unavailable: the Temporal frontend answers/);
    assert.deepEqual(Object.keys(r.body).sort(), ['error', 'flow_id', 'message']);
  });

  test('the frontend down is 503 temporal_unavailable naming the frontend; no worker is 503 worker_unavailable', async () => {
    const frontend = await answerTo(new TemporalUnavailableError());
    assert.equal(frontend.status, 503);
    assert.equal(frontend.retryAfter, '5');
    assert.deepEqual(frontend.body, { error: 'temporal_unavailable', message: 'the Temporal server (its frontend) cannot be reached; try again shortly' });
    const worker = await answerTo(new WorkerUnavailableError('swap', 'swap-r-2', 10_000, 'awaiting_pin'));
    assert.equal(worker.status, 503);
    assert.equal(worker.body.error, 'worker_unavailable');
    assert.match(String(worker.body.message), /no worker answered/);
  });

  test("the gateway's token refused by Temporal (its IdP down past the token's life) is 503 temporal_unavailable with Retry-After, not a 500, and the answer carries no server detail", async () => {
    const r = await answerTo(new TemporalCredentialsRefusedError('swap-r-3', 'access token refused (expired): sign in again'));
    assert.equal(r.status, 503);
    assert.equal(r.retryAfter, '5');
    assert.equal(r.body.error, 'temporal_unavailable');
    assert.equal(r.body.flow_id, 'swap-r-3');
    assert.match(String(r.body.message), /refused this process's credentials .*try again shortly/);
    assert.doesNotMatch(JSON.stringify(r.body), /sign in again/);
  });

  test('an update past its RPC deadline that no route classified is 503 worker_unavailable with Retry-After naming the update and the route, not a 500', async () => {
    const cause = Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'), { code: 4 });
    const r = await answerTo(new WorkflowUpdateRPCTimeoutOrCancelledError('Timeout or cancellation waiting for update', { cause }));
    assert.equal(r.status, 503);
    assert.equal(r.retryAfter, '5');
    assert.equal(r.body.error, 'worker_unavailable');
    assert.match(String(r.body.message), /^an update sent to Temporal for GET \/x did not answer within its deadline/);
  });

  test('a flow started (or sent a PIN) that did not answer in time is 504 pending with Retry-After and its flow id', async () => {
    const r = await answerTo(new FlowPendingError('swap', 'swap-r-4', 30_000));
    assert.equal(r.status, 504);
    assert.equal(r.retryAfter, '5');
    assert.equal(r.body.error, 'pending');
    assert.equal(r.body.flow_id, 'swap-r-4');
  });

  test("a flow's data sealed under a key the gateway does not hold (directly or as a cause) is 503 payload_key_missing with Retry-After, not a 500", async () => {
    for (const err of [new PayloadDecryptionError('no key "k-old" in the ring'), new Error('Failed to decode memo', { cause: new PayloadDecryptionError('no key "k-old"') })]) {
      const r = await answerTo(err);
      assert.equal(r.status, 503);
      assert.equal(r.retryAfter, '60');
      assert.equal(r.body.error, 'payload_key_missing');
      assert.match(String(r.body.message), /PAYLOAD_ENCRYPTION_KEYS/);
    }
  });
});
