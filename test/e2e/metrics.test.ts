/**
 * Metrics and health, the way users run them: `mpf simulator`, `mpf gateway` and `mpf
 * worker` as child processes configured only by environment variables (GATEWAY_METRICS_ADDRESS,
 * WORKER_METRICS_ADDRESS), on a task queue of their own. The gateway is not ready while no worker
 * polls and is once one does; after a confirmed swap, a rejected PIN and a paid link, both /metrics
 * show the flow, PIN, provider, notification and HTTP counters with the right values; the
 * committed Grafana dashboard and Prometheus alert rules reference only metrics these endpoints expose.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { METRICS } from '../../src/observability/metric-catalog';
import { createControlClient } from '../../src/simulator/control-client';
import { freePort } from '../../src/temporal/ports';
import { linkToPaid, swapToConfirmed } from '../helpers/field';
import { swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller, gatewayUrlCall, http } from '../helpers/gateway';
import { referencedMetricNames, ALWAYS_EXPOSED } from '../helpers/ops-files';
import { type MpfProcess, mpfAppEnv, spawnMpf } from '../helpers/processes';
import { namesOf, scrape, sumOf } from '../helpers/prometheus';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

const API_KEY = 'metrics-test-api-key-0123456789';
const WRONG_PIN = '9999';

function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...extra };
}

describe('metrics and health of `mpf worker` and `mpf gateway` started from environment variables', () => {
  const procs: MpfProcess[] = [];
  let env: NodeJS.ProcessEnv;
  let simulatorUrl = '';
  let gatewayUrl = '';
  let gatewayMetricsUrl = '';
  let workerUrl = '';
  let worker: MpfProcess | undefined;
  let gateway: MpfProcess;
  const refs = { confirmed: uniqueRef('m-ok'), rejected: uniqueRef('m-bad'), link: uniqueRef('m-link') };

  before(async () => {
    const temporal = await getTestTemporal();
    const sim = spawnMpf(['simulator', '--port', '0'], userEnv({}));
    procs.push(sim);
    simulatorUrl = (await sim.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    env = userEnv(mpfAppEnv({ temporal, taskQueue: uniqueTaskQueue('metrics'), simulatorUrl, apiKey: API_KEY }));
    const metricsPort = await freePort();
    gateway = spawnMpf(['gateway', '--port', '0'], { ...env, GATEWAY_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` });
    procs.push(gateway);
    gatewayUrl = (await gateway.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    gatewayMetricsUrl = (await gateway.waitFor(/gateway: metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/))[1]!;
    assert.equal(gatewayMetricsUrl, `http://127.0.0.1:${metricsPort}`);
  });

  after(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  });

  test('the gateway answers /readyz 503 no_worker_polling while no worker polls its task queue, and serves no /metrics on the API port', async () => {
    const r = await gatewayCaller(gatewayUrl).call('GET', '/readyz');
    assert.equal(r.status, 503, r.text);
    assert.equal(r.json.error, 'no_worker_polling');
    assert.match(r.json.message, new RegExp(`no worker polled task queue ${String(env.TEMPORAL_TASK_QUEUE)}`));
    assert.equal((await gatewayCaller(gatewayUrl).call('GET', '/healthz')).status, 200);
    assert.equal((await gatewayCaller(gatewayUrl).call('GET', '/metrics')).status, 404);
    const m = await scrape(`${gatewayMetricsUrl}/metrics`);
    assert.equal(sumOf(m.samples, METRICS.gatewayReady.name), 0);
    assert.equal(sumOf(m.samples, METRICS.taskQueuePollers.name, { task_queue_type: 'workflow' }), 0);
  });

  test('once `mpf worker` polls, the worker answers /healthz and /readyz 200 and the gateway becomes ready', async () => {
    worker = spawnMpf(['worker'], { ...env, WORKER_METRICS_ADDRESS: '127.0.0.1:0' });
    procs.push(worker);
    workerUrl = (await worker.waitFor(/worker: metrics and health on (http:\/\/127\.0\.0\.1:\d+)/, 120_000))[1]!;
    assert.equal((await http('GET', `${workerUrl}/healthz`)).status, 200);
    await worker.waitFor(/worker: polling task queue/, 120_000);
    await eventually(async () => (await http('GET', `${workerUrl}/readyz`)).status === 200, 30_000, 'worker /readyz 200');
    assert.deepEqual((await http('GET', `${workerUrl}/readyz`)).json, { ok: true, state: 'RUNNING' });
    await eventually(async () => (await gatewayCaller(gatewayUrl).call('GET', '/readyz')).status === 200, 30_000, 'gateway /readyz 200');
    assert.deepEqual((await gatewayCaller(gatewayUrl).call('GET', '/readyz')).json, { ok: true });
    assert.equal((await http('GET', `${workerUrl}/nothing`)).status, 404);
  });

  test('after a confirmed swap, a rejected PIN and a paid link, the worker and the gateway count them exactly', async () => {
    assert.ok(worker, 'the worker runs');
    const t = { gatewayUrl, apiKey: API_KEY, simulatorUrl };
    await swapToConfirmed(t, refs.confirmed);

    // A wrong PIN (the provider rejects it), then the swap is cancelled.
    const started = await gatewayCaller(gatewayUrl, API_KEY).api('POST', '/v1/swaps', swapBody(refs.rejected));
    assert.equal(started.status, 201, started.text);
    const wrong = await gatewayCaller(gatewayUrl).call('POST', `/v1/swaps/${started.json.swap_id}/pin`, {
      body: { wallet_pin: WRONG_PIN },
      headers: { authorization: `Bearer ${started.json.pin_token}` },
    });
    assert.deepEqual(wrong.json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    const cancelled = await gatewayCaller(gatewayUrl, API_KEY).api('POST', `/v1/swaps/${started.json.swap_id}/cancel`, {});
    assert.equal(cancelled.json?.state, 'cancelled', cancelled.text);

    await linkToPaid(t, refs.link);

    // Notifications of our own to the paid link (still open for late ones): one new, the same again, one with a forged token.
    const control = createControlClient(simulatorUrl);
    const linkInit = (await control.ledger({ ref: refs.link, endpoint: 'link.create' })).requests[0]!.body as { notification_url: string };
    const notifyUrl = linkInit.notification_url;
    const note = { notification_id: `late-${refs.link}`, status: 'pending' };
    assert.deepEqual((await gatewayUrlCall('POST', notifyUrl, { body: note })).json, { received: true });
    assert.deepEqual((await gatewayUrlCall('POST', notifyUrl, { body: note })).json, { received: true, duplicate: true });
    const forged = notifyUrl.replace(/\/[^/]+$/, `/${'A'.repeat(43)}`);
    assert.equal((await gatewayUrlCall('POST', forged, { body: note })).status, 404);

    // The simulator's own deliveries (each answered 2xx once): the link's payment, the confirmed swap's success.
    const delivered = async (ref: string) => (await control.ledger({ ref })).effects.filter((e) => e.kind === 'notification.delivered').length;
    await eventually(async () => (await delivered(refs.confirmed)) >= 1, 20_000, 'the swap notification delivered');
    const linkDeliveries = await delivered(refs.link);
    const swapDeliveries = await delivered(refs.confirmed);
    assert.ok(linkDeliveries >= 1);

    // ---- the worker ----
    const w = (await eventually(async () => {
      const m = await scrape(`${workerUrl}/metrics`);
      return sumOf(m.samples, 'mpf_flows_finished_total', { flow_kind: 'swap' }) >= 2 ? m : undefined;
    }, 20_000, 'the worker counted both swaps finished'))!;
    assert.match(w.contentType, /^text\/plain/);
    const expectWorker: Array<[string, Record<string, string>, number]> = [
      ['mpf_flows_started_total', { flow_kind: 'swap' }, 2],
      ['mpf_flows_started_total', { flow_kind: 'payment_link' }, 1],
      ['mpf_flows_finished_total', { flow_kind: 'swap', state: 'confirmed' }, 1],
      ['mpf_flows_finished_total', { flow_kind: 'swap', state: 'cancelled' }, 1],
      ['mpf_flows_finished_total', { flow_kind: 'payment_link', state: 'paid' }, 1],
      ['mpf_flows_finished_total', { state: 'failed' }, 0],
      ['mpf_reconciliations_total', {}, 0],
      ['mpf_pin_attempts_total', { outcome: 'confirmed' }, 1],
      ['mpf_pin_attempts_total', { outcome: 'pin_rejected' }, 1],
      ['mpf_provider_calls_total', { endpoint: 'swapInit', error_kind: 'none' }, 2],
      ['mpf_provider_calls_total', { endpoint: 'swapConfirm', error_kind: 'none' }, 1],
      ['mpf_provider_calls_total', { endpoint: 'swapConfirm', error_kind: 'rejected' }, 1],
      ['mpf_provider_calls_total', { endpoint: 'hostedLink', error_kind: 'none' }, 1],
      ['mpf_provider_calls_total', {}, 5],
      ['mpf_provider_call_duration_seconds_count', { endpoint: 'swapInit' }, 2],
      ['mpf_provider_call_duration_seconds_count', { endpoint: 'swapConfirm', error_kind: 'rejected' }, 1],
      ['mpf_provider_call_duration_seconds_bucket', { endpoint: 'swapInit', error_kind: 'none', le: '+Inf' }, 2],
    ];
    for (const [name, labels, value] of expectWorker) assert.equal(sumOf(w.samples, name, labels), value, `${name}${JSON.stringify(labels)}`);
    assert.ok(sumOf(w.samples, 'mpf_provider_call_duration_seconds_sum', { endpoint: 'swapInit' }) > 0);
    // The provider latency histogram has its own buckets (seconds), from 5 ms to 30 s.
    const les = w.samples.filter((s) => s.name === 'mpf_provider_call_duration_seconds_bucket' && s.labels.endpoint === 'swapInit').map((s) => s.labels.le);
    assert.deepEqual(les, ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '30', '+Inf']);
    // The SDK's own metrics share the endpoint (counters with _total, durations in seconds), and the Node process's.
    assert.equal(sumOf(w.samples, 'temporal_workflow_completed_total', { workflow_type: 'swapWorkflow' }), 2);
    assert.ok(sumOf(w.samples, 'temporal_activity_execution_latency_count', { activity_type: 'initSwap' }) >= 2);
    assert.ok(w.samples.some((s) => s.name === 'process_resident_memory_bytes'));

    // ---- the gateway ----
    const g = await scrape(`${gatewayMetricsUrl}/metrics`);
    assert.match(g.contentType, /^text\/plain/);
    const expectGateway: Array<[string, Record<string, string>, number]> = [
      ['mpf_gateway_http_requests_total', { method: 'POST', route: '/v1/swaps', status_code: '201' }, 2],
      // Counted per API key id (the public id, never the secret); a route without a key is "none".
      ['mpf_gateway_http_requests_total', { method: 'POST', route: '/v1/swaps', status_code: '201', key_id: 'gateway-api-key' }, 2],
      ['mpf_gateway_http_requests_total', { method: 'POST', route: '/v1/swaps/:swap_id/pin', status_code: '200' }, 2],
      ['mpf_gateway_http_requests_total', { method: 'POST', route: '/v1/swaps/:swap_id/cancel', status_code: '200' }, 1],
      ['mpf_gateway_http_requests_total', { method: 'POST', route: '/v1/payment-links', status_code: '201' }, 1],
      ['mpf_gateway_http_request_duration_seconds_count', { method: 'POST', route: '/v1/swaps' }, 2],
      ['mpf_gateway_notifications_total', { flow_kind: 'payment_link', result: 'signalled' }, linkDeliveries + 1],
      ['mpf_gateway_notifications_total', { flow_kind: 'payment_link', result: 'duplicate' }, 1],
      ['mpf_gateway_notifications_total', { flow_kind: 'payment_link', result: 'not_found' }, 1],
      ['mpf_gateway_notifications_total', { result: 'refused' }, 0],
      // The confirmed swap's notification may arrive before or after the swap's workflow closed.
      ['mpf_gateway_notifications_total', { flow_kind: 'swap' }, swapDeliveries],
      ['mpf_gateway_ready', {}, 1],
    ];
    for (const [name, labels, value] of expectGateway) assert.equal(sumOf(g.samples, name, labels), value, `${name}${JSON.stringify(labels)}`);
    // The provider's notifications carry no API key: counted under key_id "none".
    assert.ok(sumOf(g.samples, 'mpf_gateway_http_requests_total', { method: 'POST', key_id: 'none' }) >= linkDeliveries + 1);
    assert.ok(sumOf(g.samples, 'mpf_gateway_task_queue_pollers', { task_queue_type: 'workflow' }) >= 1);
    assert.ok(sumOf(g.samples, 'mpf_gateway_task_queue_pollers', { task_queue_type: 'activity' }) >= 1);
    assert.ok(g.samples.some((s) => s.name === 'process_resident_memory_bytes'));
    // No reference, id or token is a label: routes are patterns.
    for (const ref of Object.values(refs)) assert.ok(!g.text.includes(ref) && !w.text.includes(ref), `${ref} appears in /metrics`);

    // ---- the committed dashboard and alert rules reference only what these endpoints expose ----
    const exposed = new Set([...namesOf(w.samples), ...namesOf(g.samples), ...ALWAYS_EXPOSED]);
    const missing = [...referencedMetricNames()].filter((n) => !exposed.has(n));
    assert.deepEqual(missing, [], `referenced by ops/ but not exposed: ${missing.join(', ')}`);
  });
});

