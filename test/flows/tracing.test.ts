/**
 * One trace from the caller's `traceparent` on POST /v1/swaps through the gateway, the Temporal
 * client, the swap workflow and the confirm activity to the provider's confirm HTTP request, on
 * the real dev server, simulator, worker and gateway (one process, an in-memory span exporter).
 * Also: x-request-id is kept when valid, replaced when not, echoed, and put in the flow's memo.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { bundleWorkflowCode, NativeConnection, type Worker } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { PROVIDER_PATHS } from '../../src/contract/provider';
import { REQUEST_ID_MEMO_FIELD } from '../../src/observability/names';
import { installTracing, type Tracing } from '../../src/observability/tracing';
import { mpfWorkflowInterceptorModules } from '../../src/observability/worker-interceptors';
import { ProviderClient } from '../../src/provider/client';
import { SIMULATOR_DEFAULT_CREDENTIALS, startSimulator, type RunningSimulator } from '../../src/simulator';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { startGateway, type RunningGateway } from '../../src/starter/gateway/main';
import { connectClient } from '../../src/temporal/connection';
import { createMpfWorker, WORKFLOWS_PATH } from '../../src/worker';
import { SIM_PIN, swapBody, uniqueRef } from '../helpers/fixtures';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

const API_KEY = 'tracing-test-api-key-0123456789';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: Record<string, unknown>;
}

/** node:http, not undici: the test's own requests must not be instrumented. */
function call(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      new URL(path, base),
      { method, headers: { ...headers, ...(data ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('tracing', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let sim: RunningSimulator;
  let provider: ProviderClient;
  let native: NativeConnection;
  let worker: Worker;
  let running: Promise<void>;
  let mpf: MpfClient;
  let gw: RunningGateway;

  before(async () => {
    tracing = installTracing({ serviceName: 'mpf-test', spanProcessor: new SimpleSpanProcessor(exporter) });
    const temporal = await getTestTemporal();
    const keys = generateDevKeys();
    const taskQueue = uniqueTaskQueue('trace');
    sim = await startSimulator();
    provider = new ProviderClient({ baseUrl: sim.baseUrl, ...SIMULATOR_DEFAULT_CREDENTIALS });
    native = await NativeConnection.connect({ address: temporal.address });
    const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      failureConverterPath: FAILURE_CONVERTER_PATH,
      workflowInterceptorModules: mpfWorkflowInterceptorModules(),
      logger: quiet,
    });
    worker = await createMpfWorker({ connection: native, namespace: temporal.namespace, taskQueue, keys, provider, workflowBundle });
    running = worker.run();
    const client = await connectClient({ address: temporal.address, namespace: temporal.namespace }, keys);
    mpf = new MpfClient({ client, taskQueue, keys, publicUrl: 'http://127.0.0.1:9' });
    gw = await startGateway({ mpf, apiKey: API_KEY, port: 0 });
  });

  after(async () => {
    await gw?.close();
    await mpf?.temporal.connection.close();
    worker?.shutdown();
    await running;
    await native?.close();
    await provider?.close();
    await sim?.close();
    await tracing?.shutdown();
  });

  test("one trace spans the caller's POST /v1/swaps, the workflow, the confirm activity and the provider's confirm request", async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const traceparent = `00-${traceId}-${callerSpanId}-01`;
    const txn = uniqueRef('trace');
    const started = await call(gw.url, 'POST', '/v1/swaps', { 'x-api-key': API_KEY, traceparent }, swapBody(txn));
    assert.equal(started.status, 201, JSON.stringify(started.json));
    const swapId = started.json.swap_id as string;
    const pin = await call(gw.url, 'POST', `/v1/swaps/${swapId}/pin`, { authorization: `Bearer ${started.json.pin_token as string}` }, { wallet_pin: SIM_PIN });
    assert.equal(pin.status, 200, JSON.stringify(pin.json));
    assert.equal(pin.json.state, 'confirmed');

    // The workflow's own span is exported when the workflow ends.
    const spans = await eventually(
      async () => {
        const all = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
        return all.some((s) => s.name === 'RunWorkflow:swapWorkflow') ? all : undefined;
      },
      20_000,
      'the workflow span',
    );
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const confirmPath = PROVIDER_PATHS.swapConfirm;
    const confirmHttp = spans.find((s) => String(s.attributes['url.full'] ?? '').endsWith(confirmPath));
    assert.ok(confirmHttp, `no span of the provider's confirm request in the trace: ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(confirmHttp.attributes['http.response.status_code'], 200);

    // Walk from the provider's confirm request up to the caller's span.
    const chain: ReadableSpan[] = [];
    let cursor: ReadableSpan | undefined = confirmHttp;
    while (cursor) {
      chain.push(cursor);
      if (!cursor.parentSpanId) break;
      if (cursor.parentSpanId === callerSpanId) break;
      cursor = byId.get(cursor.parentSpanId);
    }
    const names = chain.map((s) => s.name);
    assert.equal(chain.at(-1)?.parentSpanId, callerSpanId, `the chain does not reach the caller's span: ${names.join(' <- ')}`);
    const order = ['POST /v1/swaps', 'RunWorkflow:swapWorkflow', 'StartActivity:confirmSwap', 'RunActivity:confirmSwap'];
    const positions = order.map((n) => names.indexOf(n));
    assert.ok(positions.every((p) => p >= 0), `missing spans in ${names.join(' <- ')}`);
    assert.deepEqual([...positions].sort((a, b) => b - a), positions, `out of order: ${names.join(' <- ')}`);

    // No secret in any span: not the PIN, the pin_token, the API key.
    const dump = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));
    for (const secret of [started.json.pin_token as string, API_KEY, SIMULATOR_DEFAULT_CREDENTIALS.secretKey]) {
      assert.ok(!dump.includes(secret), 'a span carries a secret');
    }
  });

  test('x-request-id: a valid one is kept, echoed and stored in the flow; an invalid one is replaced by a random id', async () => {
    const requestId = `req-${randomBytes(6).toString('hex')}`;
    const txn = uniqueRef('reqid');
    const started = await call(gw.url, 'POST', '/v1/swaps', { 'x-api-key': API_KEY, 'x-request-id': requestId }, swapBody(txn));
    assert.equal(started.status, 201);
    assert.equal(started.headers['x-request-id'], requestId);
    const desc = await mpf.temporal.workflow.getHandle(started.json.swap_id as string).describe();
    assert.equal(desc.memo?.[REQUEST_ID_MEMO_FIELD], requestId);

    const bad = await call(gw.url, 'GET', '/healthz', { 'x-request-id': 'has spaces and <html>' });
    const echoed = bad.headers['x-request-id'] as string;
    assert.match(echoed, /^[0-9a-f-]{36}$/);
    const other = await call(gw.url, 'GET', '/healthz', {});
    assert.notEqual(other.headers['x-request-id'], echoed);
    assert.match(other.headers['x-request-id'] as string, /^[0-9a-f-]{36}$/);
  });
});
