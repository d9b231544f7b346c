/**
 * A flow that has completed needs no worker to be looked up: its final view is its result, kept
 * by the server. With no worker polling, the lookup answers at once instead of waiting out the
 * query's deadline (here a minute; without this, about 29 s here, longer than the 15 s the test allows).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { startStack, type Stack } from '../helpers/stack';

let stack: Stack;

before(async () => {
  stack = await startStack({ client: { queryAnswerTimeoutMs: 60_000, linkLateNotificationGraceSeconds: 0 } });
});
after(async () => {
  await stack?.stop();
});

describe('the view of a flow that has completed, with no worker running', () => {
  test('comes from its result without waiting for a worker', { timeout: 15_000 }, async () => {
    const { link } = await stack.mpf.createLink(linkBody(uniqueRef('closed-view')));
    await stack.mpf.cancelLink(link.link_id, 'closed before the worker stops');
    await stack.client.workflow.getHandle(link.link_id).result();
    await stack.stopWorker();
    const view = await stack.mpf.getLink(link.link_id);
    assert.equal(view.state, 'cancelled');
    assert.equal(view.link_id, link.link_id);
    assert.equal(view.execution, undefined, 'it completed on its own');
  });
});
