import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { credentialsRefusal, isAlreadyStarted, isDeadlineExceeded, isNoPoller, isPersistenceUnavailable, isTemporalUnavailable } from '../../src/starter/client/temporal-errors';

/** The shape @grpc/grpc-js gives a failed call: an Error with a numeric status code and details. */
const grpcError = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });

describe('reading the Temporal client failures', () => {
  test('a deadline the SDK reports as DEADLINE_EXCEEDED counts as no answer in time', () => {
    const cause = grpcError(4, 'Deadline exceeded after 1.983s');
    assert.equal(isDeadlineExceeded(new WorkflowUpdateRPCTimeoutOrCancelledError(cause.details, { cause })), true);
    assert.equal(isDeadlineExceeded(cause), true);
  });

  test('a deadline that fires while the call is set up (CANCELLED "Call cancelled") counts too', () => {
    const cause = grpcError(1, 'Call cancelled');
    assert.equal(isDeadlineExceeded(new WorkflowUpdateRPCTimeoutOrCancelledError('Call cancelled', { cause })), true);
    assert.equal(isDeadlineExceeded(cause), true);
  });

  test('other failures are not mistaken for a timeout', () => {
    assert.equal(isDeadlineExceeded(grpcError(14, 'No connection established')), false);
    assert.equal(isDeadlineExceeded(grpcError(10, 'MultiOperation could not be executed.')), false);
    assert.equal(isDeadlineExceeded(new Error('boom')), false);
    assert.equal(isDeadlineExceeded(undefined), false);
  });

  test('a taken workflow id is recognised directly or as a cause', () => {
    const taken = new WorkflowExecutionAlreadyStartedError('Workflow execution already started', 'swap-x', 'swapWorkflow');
    assert.equal(isAlreadyStarted(taken), true);
    assert.equal(isAlreadyStarted(new Error('wrapped', { cause: taken })), true);
    assert.equal(isAlreadyStarted(grpcError(6, 'already exists')), false);
  });

  test('the server\'s "no poller seen" FAILED_PRECONDITION counts as no worker, directly or as a cause', () => {
    const noPoller = grpcError(9, 'no poller seen for task queue recently');
    assert.equal(isNoPoller(noPoller), true);
    assert.equal(isNoPoller(new Error('query failed', { cause: noPoller })), true);
    assert.equal(isNoPoller(grpcError(9, 'workflow is not running')), false);
    assert.equal(isNoPoller(grpcError(4, 'Deadline exceeded')), false);
  });

  test('a server that cannot be reached (UNAVAILABLE, refused connections) counts as Temporal unavailable', () => {
    assert.equal(isTemporalUnavailable(grpcError(14, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7233')), true);
    assert.equal(isTemporalUnavailable(new Error('wrapped', { cause: grpcError(14, 'Connection dropped') })), true);
    assert.equal(isTemporalUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:7233'), { code: 'ECONNREFUSED' })), true);
    assert.equal(isTemporalUnavailable(grpcError(9, 'no poller seen for task queue recently')), false);
    assert.equal(isTemporalUnavailable(grpcError(5, 'workflow not found')), false);
    assert.equal(isTemporalUnavailable(new Error('boom')), false);
  });

  test("a frontend that answers UNAVAILABLE naming its database counts as Temporal's persistence unavailable, a refused connection does not", () => {
    // What a Temporal server on PostgreSQL answered about 27 s into a describe with its database killed.
    const db = grpcError(14, 'GetCurrentExecution operation failed. Error: no usable database connection found');
    assert.equal(isPersistenceUnavailable(db), true);
    assert.equal(isPersistenceUnavailable(new Error('wrapped', { cause: db })), true);
    assert.equal(isPersistenceUnavailable(grpcError(14, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7233')), false);
    assert.equal(isPersistenceUnavailable(grpcError(4, 'Deadline exceeded')), false);
    assert.equal(isPersistenceUnavailable(grpcError(9, 'persistence is fine, the workflow is not running')), false);
  });

  test("a token the frontend refuses (UNAUTHENTICATED) gives the server's reason, directly or as a cause; other refusals give none", () => {
    const expired = grpcError(16, 'access token refused (expired): sign in again or renew the token');
    assert.match(credentialsRefusal(expired) ?? '', /access token refused \(expired\)/);
    assert.match(credentialsRefusal(new Error('Update-With-Start failed', { cause: expired })) ?? '', /expired/);
    assert.equal(credentialsRefusal(grpcError(7, 'PERMISSION_DENIED: default:write needed')), undefined);
    assert.equal(credentialsRefusal(grpcError(14, 'Connection dropped')), undefined);
    assert.equal(credentialsRefusal(new Error('boom')), undefined);
  });
});
