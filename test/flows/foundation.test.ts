import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { startDevServer } from '../../src/temporal/dev-server';
import { connectTest, uniqueTaskQueue } from '../helpers/temporal';
import * as activities from '../fixtures/hello-activities';

describe('a real Temporal dev server', () => {
  let env: Awaited<ReturnType<typeof connectTest>>;
  before(async () => {
    env = await connectTest();
  });
  after(async () => {
    await env?.close();
  });

  test('answers as a real server with its own version and namespace', async () => {
    const info = await env.connection.workflowService.getSystemInfo({});
    assert.ok(info.serverVersion && /^\d+\.\d+/.test(info.serverVersion), `server version: ${info.serverVersion}`);
    const ns = await env.connection.workflowService.describeNamespace({ namespace: env.temporal.namespace });
    assert.equal(ns.namespaceInfo?.name, env.temporal.namespace);
    const pid = Number(process.env.MPF_TEST_TEMPORAL_PID ?? env.temporal.server?.pid);
    if (Number.isFinite(pid) && pid > 0) {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      assert.match(cmdline[0], /temporal$/, 'the server is a temporal process');
      assert.deepEqual(cmdline.slice(1, 3), ['server', 'start-dev']);
    }
  });

  test('has the project search attributes registered', async () => {
    const res = await env.connection.operatorService.listSearchAttributes({ namespace: env.temporal.namespace });
    for (const name of ['MpfFlowKind', 'MpfState', 'MpfTxnRef']) {
      assert.ok(name in (res.customAttributes ?? {}), `${name} registered`);
    }
  });

  test('runs a workflow and its activity on a real worker and records them in history', async () => {
    const taskQueue = uniqueTaskQueue('hello');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.temporal.namespace,
      taskQueue,
      workflowsPath: require.resolve('../fixtures/hello-workflows'),
      activities,
    });
    const handle = await worker.runUntil(async () => {
      const h = await env.client.workflow.start('helloWorkflow', {
        taskQueue,
        workflowId: `hello-${taskQueue}`,
        args: ['merchant'],
      });
      assert.equal(await h.result(), 'Hello, merchant!');
      return h;
    });
    const history = await handle.fetchHistory();
    const E = temporal.api.enums.v1.EventType;
    const seen = (history.events ?? []).map((e) => e.eventType);
    for (const expected of [
      E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
      E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
      E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    ]) {
      assert.ok(seen.includes(expected), `history has ${E[expected]} (saw ${seen.map((t) => E[t!]).join(', ')})`);
    }
    const scheduled = history.events!.find((e) => e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    assert.equal(scheduled?.activityTaskScheduledEventAttributes?.activityType?.name, 'greet');
  });
});

describe('starting a dev server on a busy machine', () => {
  test('a port another process holds fails with the server\'s own reason, not a bare panic', async () => {
    // Holds the port and accepts connections without ever speaking gRPC (the readiness probe's too).
    const sockets = new Set<net.Socket>();
    const holder = net.createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      await assert.rejects(startDevServer({ port, unref: true }), (e: Error) => {
        assert.match(e.message, /exited \(\d+\) before it was ready/);
        assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${port}: bind: address already in use`));
        return true;
      });
    } finally {
      for (const socket of sockets) socket.destroy();
      holder.close();
    }
  });
});
