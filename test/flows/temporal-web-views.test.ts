/**
 * The operator's saved views (`mpf web views`): each query is accepted by a real server's
 * visibility store and finds the flows it names — a swap awaiting its PIN, a swap that failed
 * today — and the CLI prints them as Temporal Web list links. Real dev server, simulator, worker.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { operatorViews, startOfDayUtc, workflowListUrl } from '../../src/starter/client/temporal-web';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { runMpf } from '../helpers/processes';
import { eventually, startStack, type Stack } from '../helpers/stack';

describe('operator views on MpfState / MpfFlowKind', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ client: { pinMaxAttempts: 1 } });
  });
  after(async () => stack?.stop());

  const ids = async (query: string, mine: string[]): Promise<string[]> => {
    const found: string[] = [];
    for await (const w of stack.client.workflow.list({ query: `(${query}) AND WorkflowId IN (${mine.map((m) => `"${m}"`).join(', ')})` })) found.push(w.workflowId);
    return found.sort();
  };

  test('"awaiting PIN" finds the waiting swap and "failed today" the failed one; every view is a valid visibility query', async () => {
    const waiting = (await stack.mpf.startSwap(swapBody(uniqueRef('views-wait')))).swap.swap_id;
    const failed = (await stack.mpf.startSwap(swapBody(uniqueRef('views-fail')))).swap.swap_id;
    assert.equal((await stack.mpf.submitPin(failed, { wallet_pin: '0000' }))?.state, 'failed');
    const mine = [waiting, failed];
    const view = (id: string) => operatorViews().find((v) => v.id === id)!.query;
    await eventually(async () => (await ids(view('mpf-awaiting-pin'), mine)).join() === waiting, 20_000, 'the awaiting-PIN view');
    await eventually(async () => (await ids(view('mpf-failed-today'), mine)).join() === failed, 20_000, 'the failed-today view');
    assert.deepEqual(await ids(view('mpf-needs-reconciliation'), mine), []);
    for (const v of operatorViews()) await stack.client.workflow.count(v.query); // the server accepts each query
    // The date matters: tomorrow's "failed today" (closed flows only) holds none of today's. Once
    // the failed swap has closed: a flow hands its events to its delivery workflow before it
    // closes, and the dev server's visibility matches a running flow's empty CloseTime to any date.
    await stack.client.workflow.getHandle(failed).result();
    const tomorrow = operatorViews(Date.now() + 86_400_000).find((v) => v.id === 'mpf-failed-today')!.query;
    assert.deepEqual(await ids(tomorrow.replace(/ExecutionStatus = "Running" OR /, ''), mine), []);
  });

  test('a list link carries the query URL-encoded and the day starts at midnight UTC', () => {
    assert.equal(startOfDayUtc(Date.parse('2026-11-23T23:59:59+05:00')), '2026-11-23T00:00:00Z');
    assert.equal(
      workflowListUrl('http://127.0.0.1:8233/', 'default', 'MpfState = "awaiting_pin"'),
      'http://127.0.0.1:8233/namespaces/default/workflows?query=MpfState%20%3D%20%22awaiting_pin%22',
    );
  });

  test('`mpf web views --json` prints the views with their Temporal Web links', async () => {
    const run = await runMpf(['web', 'views', '--json', '--ui-url', 'http://127.0.0.1:8233'], { PATH: process.env.PATH, HOME: process.env.HOME });
    assert.equal(run.code, 0, run.stderr);
    const views = JSON.parse(run.stdout) as { name: string; url: string }[];
    assert.deepEqual(
      views.map((v) => v.name),
      ['Swaps awaiting PIN', 'Links awaiting payment', 'Needs reconciliation', 'Failed today', 'Swaps confirming (in doubt?)'],
    );
    assert.ok(views.every((v) => v.url.startsWith('http://127.0.0.1:8233/namespaces/default/workflows?query=')));
  });
});
