/**
 * A full run the way users run it — `mpf simulator`, `mpf worker` and `mpf gateway` as separate
 * processes configured by environment variables — with canary values: a PIN, the swap's pin_token,
 * the notification tokens of a swap and of a payment link (read from the provider's ledger), and
 * a request id. No line any process wrote contains a canary secret; every line the worker wrote is
 * one JSON object, without task tokens or webpack statistics; the worker's lines about the swap
 * carry its workflowId and the request id, provider calls are logged with endpoint, status and
 * latency, and the gateway's line for POST /v1/swaps names the flow it created.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createControlClient, type SimulatorControl } from '../../src/simulator/control-client';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { gatewayCaller } from '../helpers/gateway';
import { MPF_BIN, mpfAppEnv } from '../helpers/processes';
import { SIM_CREDENTIALS } from '../helpers/provider';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

const API_KEY = 'redaction-test-api-key-0123456789';
const CANARY_PIN = 'CanaryPin7Qz4';
const CANARY_USER = 'canary-user';
const REQUEST_ID = `canary-req-${Date.now().toString(36)}`;

interface Proc {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

function start(args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [MPF_BIN, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const p: Proc = {
    child,
    stdout: '',
    stderr: '',
    waitFor(re, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${re} from mpf ${args[0]}:\n${p.stdout}\n${p.stderr}`)), timeoutMs);
        const check = (): void => {
          const m = p.stdout.match(re);
          if (m) {
            clearTimeout(timer);
            child.stdout!.off('data', check);
            resolve(m);
          }
        };
        child.stdout!.on('data', check);
        check();
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
    },
  };
  child.stdout!.on('data', (d: Buffer) => (p.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (p.stderr += d.toString()));
  return p;
}

const lastSegment = (url: string): string => decodeURIComponent(new URL(url).pathname.split('/').pop()!);

describe('logs of a full run with canary values', () => {
  const procs: Record<'simulator' | 'worker' | 'gateway', Proc | undefined> = { simulator: undefined, worker: undefined, gateway: undefined };
  let control: SimulatorControl;
  let gatewayUrl = '';
  const canaries = new Map<string, string>([['PIN', CANARY_PIN], ['API key', API_KEY]]);
  let swapId = '';
  let linkId = '';
  /** What the worker and the gateway exported (OTLP/HTTP JSON bodies), received on loopback. */
  const exported: string[] = [];
  let receiver: Server | undefined;

  before(async () => {
    const temporal = await getTestTemporal();
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        if (req.url === '/v1/traces') exported.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
    const otlp = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    procs.simulator = start(['simulator', '--port', '0'], { LOG_LEVEL: 'info' });
    const simulatorUrl = (await procs.simulator.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    control = createControlClient(simulatorUrl);
    await control.setConfig({ pins: { [CANARY_USER]: CANARY_PIN } });
    const env = {
      ...mpfAppEnv({ temporal, taskQueue: uniqueTaskQueue('redact'), simulatorUrl, apiKey: API_KEY }),
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    };
    procs.worker = start(['worker'], env);
    procs.gateway = start(['gateway', '--port', '0'], env);
    gatewayUrl = (await procs.gateway.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]!;
    await procs.worker.waitFor(/worker: polling task queue/);
    canaries.set('provider secret key', SIM_CREDENTIALS.secretKey);
    canaries.set('provider access token', SIM_CREDENTIALS.accessToken);

    // A swap with a wrong PIN, then the canary PIN; the provider's notification reaches the gateway.
    const txn = uniqueRef('canary');
    const gateway = gatewayCaller(gatewayUrl, API_KEY);
    const started = await gateway.api('POST', '/v1/swaps', swapBody(txn, { user_ref: CANARY_USER }), { 'x-request-id': REQUEST_ID });
    assert.equal(started.status, 201, started.text);
    assert.equal(started.headers['x-request-id'], REQUEST_ID);
    swapId = started.json.swap_id;
    canaries.set('pin_token', started.json.pin_token);
    const pinPath = `/v1/swaps/${swapId}/pin`;
    const auth = { authorization: `Bearer ${started.json.pin_token}` };
    const wrong = await gateway.call('POST', pinPath, { body: { wallet_pin: 'WrongCanary55' }, headers: auth });
    assert.equal(wrong.json.outcome, 'pin_rejected', wrong.text);
    canaries.set('wrong PIN', 'WrongCanary55');
    const right = await gateway.call('POST', pinPath, { body: { wallet_pin: CANARY_PIN }, headers: auth });
    assert.deepEqual(right.json, { outcome: 'confirmed', state: 'confirmed' });
    const init = (await control.ledger({ ref: txn, endpoint: 'swap.init' })).requests[0]!;
    canaries.set('swap notification token', lastSegment((init.body as { notification_url: string }).notification_url));
    await control.waitForEffect((e) => e.kind === 'notification.delivered', 30_000, { ref: txn });

    // A payment link paid at the provider; its notification reaches the gateway.
    const ref = uniqueRef('canary-link');
    const created = await gatewayCaller(gatewayUrl, API_KEY).api('POST', '/v1/payment-links', linkBody(ref));
    assert.equal(created.status, 201, created.text);
    linkId = created.json.link_id;
    const linkCreate = (await control.ledger({ ref, endpoint: 'link.create' })).requests[0]!;
    canaries.set('link notification token', lastSegment((linkCreate.body as { notification_url: string }).notification_url));
    await control.completeLink(created.json.payment_ref);
    await eventually(async () => {
      const v = await gatewayCaller(gatewayUrl, API_KEY).api('GET', `/v1/payment-links/${linkId}`);
      return v.json?.state === 'paid';
    }, 60_000, `${linkId} paid`);

    await procs.gateway.stop();
    await procs.worker.stop();
    await procs.simulator.stop();
  });

  after(async () => {
    await Promise.all(Object.values(procs).map((p) => p?.stop()));
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
  });

  test('with OTEL_EXPORTER_OTLP_ENDPOINT set, the worker and the gateway export one trace per request, without secrets', () => {
    interface OtlpSpan {
      traceId: string;
      name: string;
      attributes?: Array<{ key: string; value: { stringValue?: string } }>;
    }
    const spans: Array<OtlpSpan & { service: string }> = [];
    for (const body of exported) {
      const doc = JSON.parse(body) as {
        resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const rs of doc.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ ...span, service });
      }
    }
    const post = spans.find((s) => s.service === 'mpf-gateway' && s.name === 'POST /v1/swaps' && s.attributes?.some((a) => a.key === 'mpf.request_id' && a.value.stringValue === REQUEST_ID));
    assert.ok(post, `no gateway span of POST /v1/swaps among ${spans.length} exported`);
    const sameTrace = spans.filter((s) => s.traceId === post.traceId);
    const names = sameTrace.map((s) => `${s.service}:${s.name}`);
    for (const expected of ['mpf-worker:RunWorkflow:swapWorkflow', 'mpf-worker:RunActivity:initSwap', 'mpf-worker:RunActivity:confirmSwap']) {
      assert.ok(names.includes(expected), `${expected} not in the trace: ${names.join(', ')}`);
    }
    // The log lines join the trace: the gateway's line of the start and the worker's lines of the swap.
    const gatewayLines = procs.gateway!.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const startLine = gatewayLines.find((l) => l.reqId === REQUEST_ID && typeof l.msg === 'string' && l.msg.startsWith('flow started'));
    assert.equal(startLine?.trace_id, post.traceId, 'the gateway line of the start carries the trace id');
    const workerLines = procs.worker!.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const traced = workerLines.filter((l) => l.workflowId === swapId && l.trace_id === post.traceId);
    assert.ok(traced.some((l) => l.msg === 'provider call' && l.endpoint === 'swapInit'), 'the worker line of the provider call carries the trace id');
    const all = exported.join('\n');
    for (const [what, value] of canaries) assert.ok(!all.includes(value), `an exported span contains the ${what}`);
  });

  test('no line of the worker, the gateway or the simulator contains a canary secret', () => {
    for (const [name, proc] of Object.entries(procs)) {
      for (const [what, value] of canaries) {
        assert.ok(value.length >= 12, `${what} is a usable canary`);
        assert.ok(!proc!.stdout.includes(value), `${name}'s stdout contains the ${what}`);
        assert.ok(!proc!.stderr.includes(value), `${name}'s stderr contains the ${what}`);
      }
    }
  });

  test('every worker line is one JSON object, with no task token and no webpack statistics', () => {
    const lines = procs.worker!.stdout.split('\n').filter((l) => l !== '');
    assert.ok(lines.length > 10, `the worker logged ${lines.length} lines`);
    for (const line of lines) {
      let parsed: unknown;
      assert.doesNotThrow(() => (parsed = JSON.parse(line)), `not JSON: ${line}`);
      assert.ok(parsed && typeof parsed === 'object' && !Array.isArray(parsed), `not an object: ${line}`);
      assert.ok(!/taskToken/i.test(line), `a task token: ${line}`);
      assert.ok(!/webpack [\d.]+ compiled/.test(line), `webpack statistics: ${line.slice(0, 200)}`);
    }
    assert.equal(procs.worker!.stderr, '', 'the worker wrote nothing but JSON lines to stdout');
  });

  test("the worker's lines about the swap carry its workflowId and the request id; provider calls have endpoint, status and latency", () => {
    const lines = procs.worker!.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    const aboutSwap = lines.filter((l) => l.workflowId === swapId);
    assert.ok(aboutSwap.length >= 3, `lines about ${swapId}: ${aboutSwap.length}`);
    for (const l of aboutSwap) assert.equal(l.reqId, REQUEST_ID, `no request id on: ${JSON.stringify(l)}`);
    const calls = aboutSwap.filter((l) => l.msg === 'provider call');
    const confirm = calls.find((l) => l.endpoint === 'swapConfirm' && l.errorKind === undefined);
    assert.ok(confirm, `no provider call line for the confirmation: ${JSON.stringify(calls)}`);
    assert.equal(confirm.status, 200);
    assert.equal(typeof confirm.latencyMs, 'number');
    assert.ok(calls.some((l) => l.endpoint === 'swapInit' && l.status === 200));
    const rejected = aboutSwap.find((l) => l.endpoint === 'swapConfirm' && l.errorKind === 'rejected');
    assert.ok(rejected, 'the wrong PIN is logged as a rejected provider call');
    const linkLines = lines.filter((l) => l.workflowId === linkId);
    assert.ok(linkLines.some((l) => l.msg === 'provider call' && l.endpoint === 'hostedLink'));
  });

  test("the gateway's line for POST /v1/swaps names the flow it created, with the caller's request id", () => {
    const lines = procs.gateway!.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const started = lines.find((l) => l.reqId === REQUEST_ID && typeof l.msg === 'string' && l.msg.startsWith('flow started'));
    assert.ok(started, 'no flow started line');
    assert.equal(started.workflowId, swapId);
    const completed = lines.find((l) => l.reqId === REQUEST_ID && l.msg === 'request completed');
    assert.equal(completed?.workflowId, swapId);
  });
});
