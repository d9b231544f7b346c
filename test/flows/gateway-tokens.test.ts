/**
 * The gateway checks pin_tokens and notification tokens (v2) without a Temporal call, over real
 * HTTP on the real Temporal dev server, simulator and worker. The gateways under test have their
 * own Temporal connection whose gRPC calls are counted, so "no describe" is seen on the wire.
 * Tokens the keys cannot vouch for (v1 tokens of flows started by the previous release, a key that
 * left the ring, forgeries) take the memo-hash path as before; closed flows answer as before.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { InterceptingCall } from '@grpc/grpc-js';
import { Client, Connection, type ConnectionOptions, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { clientDataConverter } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { MpfClient, type MpfClientOptions } from '../../src/starter/client/mpf-client';
import { PinTokens } from '../../src/starter/client/pin-tokens';
import { startGateway } from '../../src/starter/gateway/main';
import type { LinkView, SwapView } from '../../src/workflows/messages';
import { linkBody, swapBody, uniqueRef } from '../helpers/fixtures';
import { eventually } from '../helpers/stack';
import { API_KEY, gatewayCaller, type GatewayHarness, historyMessages, startGatewayStack, stopOwnTemporal } from '../helpers/gateway';

const PIN = '650217';
const WRONG_PIN = '111333';
const k1 = generateDevKeys('k1');
const k2 = generateDevKeys('k2');

type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];
type StartedSwap = SwapView & { pin_url: string; pin_token: string };

/** A gateway on its own Temporal connection, counting the gRPC calls it makes by method. */
interface CountingGateway {
  url: string;
  mpf: MpfClient;
  calls: Map<string, number>;
  count(method: string): number;
  close(): Promise<void>;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
/** `token` with the character at `i` replaced by another base64url character. */
const flip = (token: string, i: number): string => token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);

describe('the gateway: self-verifying tokens', () => {
  let h: GatewayHarness;
  const gateways: CountingGateway[] = [];

  /** tokenKeys: the MpfClient's PAYLOAD_ENCRYPTION_KEYS; codecKeys: its data converter's (default the same). */
  const countingGateway = async (tokenKeys: string, codecKeys = tokenKeys, client: Partial<MpfClientOptions> = {}): Promise<CountingGateway> => {
    const calls = new Map<string, number>();
    const counter: Interceptor = (options, nextCall) => {
      const method = options.method_definition.path.split('/').pop() ?? '';
      // Counted by the request, leaving out the gateway's reading of the provider guard (every second, not per request).
      return new InterceptingCall(nextCall(options) as unknown as InterceptingCall, {
        // The request's bytes (the client encodes the protobuf itself): a reading of the guard names its workflow id.
        sendMessage: (message: Buffer, next: (m: unknown) => void) => {
          if (!(Buffer.isBuffer(message) && message.includes('provider-guard-'))) calls.set(method, (calls.get(method) ?? 0) + 1);
          next(message);
        },
      }) as unknown as ReturnType<Interceptor>;
    };
    const connection = await Connection.connect({
      address: h.stack.address,
      interceptors: [counter, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
    });
    const mpf = new MpfClient({
      client: new Client({ connection, namespace: h.stack.namespace, dataConverter: clientDataConverter(codecKeys) }),
      taskQueue: h.stack.taskQueue,
      keys: tokenKeys,
      publicUrl: 'http://127.0.0.1:9',
      ...client,
    });
    const gw = await startGateway({ mpf, apiKey: API_KEY, port: 0, logger: false });
    const g: CountingGateway = {
      url: gw.url,
      mpf,
      calls,
      count: (method) => calls.get(method) ?? 0,
      async close() {
        await gw.close();
        await connection.close();
      },
    };
    gateways.push(g);
    return g;
  };

  let gw: CountingGateway;

  before(async () => {
    // k1 is active; the worker knows k2 too, so gateways that rotated to k2 can seal PINs for it.
    h = await startGatewayStack({ keys: `${k1},${k2}`, simulator: { pins: { 'user-1': PIN } } });
    gw = await countingGateway(`${k1},${k2}`);
  });
  after(async () => {
    for (const g of gateways) await g.close();
    await h?.stop();
    await stopOwnTemporal();
  });
  beforeEach(async () => {
    await h.stack.control.clearFaults();
    await h.stack.control.setConfig({ swapExpiresInSeconds: 300 });
    gw.calls.clear();
  });

  const api = (base: string, method: string, path: string, body?: unknown) => gatewayCaller(base, API_KEY).api(method, path, body);
  const startSwap = async (base = gw.url, extra: Record<string, unknown> = {}): Promise<StartedSwap> => {
    const r = await api(base, 'POST', '/v1/swaps', swapBody(uniqueRef('tok'), extra));
    assert.equal(r.status, 201, r.text);
    return r.json as StartedSwap;
  };
  const createLink = async (base = gw.url): Promise<LinkView> => {
    const r = await api(base, 'POST', '/v1/payment-links', linkBody(uniqueRef('tok-link')));
    assert.equal(r.status, 201, r.text);
    return r.json as LinkView;
  };
  const pin = (base: string, swapId: string, token: string | undefined, wallet_pin: string) =>
    gatewayCaller(base).call('POST', `/v1/swaps/${swapId}/pin`, { body: { wallet_pin }, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const summary = (base: string, swapId: string, token: string) =>
    gatewayCaller(base).call('GET', `/v1/swaps/${swapId}/summary`, { headers: { authorization: `Bearer ${token}` } });
  /** The notification_url the provider was given (from the simulator's request ledger). */
  const notificationUrlOf = async (ref: string, endpoint: 'swap.init' | 'link.create') =>
    ((await h.stack.control.ledger({ ref, endpoint })).requests[0]!.body as { notification_url: string }).notification_url;
  const notificationToken = async (ref: string, endpoint: 'swap.init' | 'link.create') => (await notificationUrlOf(ref, endpoint)).split('/').pop()!;
  const notify = (base: string, kind: 'swap' | 'paylink', flowId: string, token: string, payload: unknown) =>
    gatewayCaller(base).call('POST', `/v1/notifications/${kind}/${flowId}/${token}`, { body: payload });
  /** A notification as the simulator sends it (a link's collection.*, a swap's swap.*). */
  const notification = (kind: 'collection' | 'swap', paymentRef: string, status: 'pending' | 'successful', id = `n-${Math.random().toString(36).slice(2)}`) => ({
    event: `${kind}.${status === 'pending' ? 'pending' : 'completed'}`,
    data: { payment_ref: paymentRef, status, notification_id: id, sequence: status === 'pending' ? 1 : 2, occurred_at: new Date().toISOString() },
  });
  const linkNotification = (paymentRef: string, status: 'pending' | 'successful', id?: string) => notification('collection', paymentRef, status, id);
  const closed = (flowId: string) => h.stack.client.workflow.getHandle(flowId).result();

  test('a swap gets 64-character tokens, and its PIN is checked and applied without a describe, its reserved slot waiting for one query of the swap', async () => {
    const s = await startSwap();
    assert.match(s.pin_token, /^[A-Za-z0-9_-]{64}$/);
    assert.match(await notificationToken(s.txn_ref, 'swap.init'), /^[A-Za-z0-9_-]{64}$/);
    assert.deepEqual(await h.stack.mpf.pinTokenOf(s.swap_id), { pin_token: s.pin_token, pin_url: `${h.gw.url}/pin/${s.swap_id}#token=${s.pin_token}` });

    // A wrong PIN first: no confirmation, so no provider notification of the swap reaches this
    // gateway (and its calls) while they are counted.
    gw.calls.clear();
    const r = await pin(gw.url, s.swap_id, s.pin_token, WRONG_PIN);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    assert.equal(gw.count('DescribeWorkflowExecution'), 0, 'no describe for the token');
    // The user_ref of a swap this gateway started is known; the one query is the swap answering
    // before a PIN goes on with its reserved slot (a worker runs now, or the PIN is refused 503).
    assert.equal(gw.count('QueryWorkflow'), 1, 'one query: the reserved slot waits for the swap to answer');
    // The PIN's update, and the user's wrong-PIN budget shared by every gateway: a budget per key
    // of the ring (two here: k1, k2), in each a slot taken with an update-with-start
    // (ExecuteMultiOperation) and settled with an update (which the answer does not wait for).
    await eventually(async () => gw.count('UpdateWorkflowExecution') === 3, 5_000, 'the PIN update and the two settles');
    assert.equal(gw.count('UpdateWorkflowExecution'), 3);
    assert.equal(gw.count('ExecuteMultiOperation'), 2);
    assert.deepEqual((await pin(gw.url, s.swap_id, s.pin_token, PIN)).json, { outcome: 'confirmed', state: 'confirmed' });
  });

  test("a swap started elsewhere costs one state query for its user_ref, and still no describe", async () => {
    // Its first PIN takes a slot (this gateway reserved none); the next PIN's slot is reserved after
    // the wrong one, and waits for the swap to answer a query, as every reserved slot does.
    const s = await startSwap(h.gw.url);
    gw.calls.clear();
    const r = await pin(gw.url, s.swap_id, s.pin_token, WRONG_PIN);
    assert.deepEqual(r.json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    assert.equal(gw.count('DescribeWorkflowExecution'), 0);
    assert.equal(gw.count('QueryWorkflow'), 1);
    assert.equal((await pin(gw.url, s.swap_id, s.pin_token, PIN)).json.outcome, 'confirmed');
    assert.equal(gw.count('QueryWorkflow'), 2, "the user_ref remembered; one query more: the reserved slot's");
  });

  test("a link's notification token is checked without a describe, and its notification reaches the link", async () => {
    const link = await createLink();
    const token = await notificationToken(link.txn_merchant_ref, 'link.create');
    assert.equal(token.length, 64);
    gw.calls.clear();
    const r = await notify(gw.url, 'paylink', link.link_id, token, linkNotification(link.payment_ref!, 'pending'));
    assert.deepEqual(r.json, { received: true });
    assert.equal(gw.count('DescribeWorkflowExecution'), 0);
    assert.equal(gw.count('SignalWorkflowExecution'), 1);
    assert.deepEqual((await historyMessages(h.stack, link.link_id)).signals, ['notification']);
    await api(gw.url, 'POST', `/v1/payment-links/${link.link_id}/cancel`);
  });

  test('a notification to a closed flow takes the closed-flow path as before: 409 for money to an unpaid flow, else 200 applied false, duplicates included', async () => {
    const link = await createLink();
    const token = await notificationToken(link.txn_merchant_ref, 'link.create');
    const seen = linkNotification(link.payment_ref!, 'pending');
    assert.deepEqual((await notify(gw.url, 'paylink', link.link_id, token, seen)).json, { received: true });
    const cancelled = await api(gw.url, 'POST', `/v1/payment-links/${link.link_id}/cancel`);
    assert.equal(cancelled.json.state, 'cancelled');
    await closed(link.link_id);

    const paid = await notify(gw.url, 'paylink', link.link_id, token, linkNotification(link.payment_ref!, 'successful'));
    assert.equal(paid.status, 409, paid.text);
    assert.deepEqual(paid.json, { error: 'flow_closed', message: paid.json.message, flow_id: link.link_id, state: 'cancelled' });
    const late = await notify(gw.url, 'paylink', link.link_id, token, linkNotification(link.payment_ref!, 'pending'));
    assert.deepEqual([late.status, late.json], [200, { received: true, applied: false }]);
    const again = await notify(gw.url, 'paylink', link.link_id, token, seen);
    assert.deepEqual([again.status, again.json], [200, { received: true, applied: false }], 'a duplicate of a closed flow is still a closed-flow answer');

    // A swap's notification token, once the swap closed.
    const s = await startSwap();
    const swapToken = await notificationToken(s.txn_ref, 'swap.init');
    assert.equal((await pin(gw.url, s.swap_id, s.pin_token, PIN)).json.outcome, 'confirmed');
    await closed(s.swap_id);
    const afterSwap = await notify(gw.url, 'swap', s.swap_id, swapToken, notification('swap', s.payment_ref!, 'successful'));
    assert.deepEqual([afterSwap.status, afterSwap.json], [200, { received: true, applied: false }]);
  });

  test('a PIN with the right token for a closed swap answers 410, and the PIN page summary still shows the swap', async () => {
    const s = await startSwap();
    const cancelled = await api(gw.url, 'POST', `/v1/swaps/${s.swap_id}/cancel`);
    assert.equal(cancelled.json.state, 'cancelled');
    await closed(s.swap_id);
    const late = await pin(gw.url, s.swap_id, s.pin_token, PIN);
    assert.equal(late.status, 410, late.text);
    assert.equal(late.json.error, 'gone');
    const sum = await summary(gw.url, s.swap_id, s.pin_token);
    assert.equal(sum.status, 200, sum.text);
    assert.equal(sum.json.state, 'cancelled');
    assert.equal((await h.stack.control.ledger({ ref: s.txn_ref, endpoint: 'swap.confirm' })).requests.length, 0);
  });

  test("another flow's, a truncated, a tampered or a made-up token gets the same 404 as an unknown flow, and nothing reaches the flow", async () => {
    const a = await startSwap();
    const b = await startSwap();
    const ghost = `swap-${uniqueRef('ghost')}`;
    const bad = [b.pin_token, a.pin_token.slice(0, 63), a.pin_token.slice(0, 43), flip(a.pin_token, 63), flip(a.pin_token, 10), flip(a.pin_token, 2), 'A'.repeat(64), `${a.pin_token}A`];
    const unknown = await pin(gw.url, ghost, a.pin_token, PIN);
    assert.equal(unknown.status, 404);
    for (const token of bad) {
      const r = await pin(gw.url, a.swap_id, token, PIN);
      assert.deepEqual({ status: r.status, json: r.json }, { status: unknown.status, json: unknown.json }, token);
      assert.equal((await summary(gw.url, a.swap_id, token)).status, 404);
    }
    assert.equal((await pin(gw.url, a.swap_id, undefined, PIN)).status, 401);

    const la = await createLink();
    const lb = await createLink();
    const ta = await notificationToken(la.txn_merchant_ref, 'link.create');
    const tb = await notificationToken(lb.txn_merchant_ref, 'link.create');
    const paid = linkNotification(la.payment_ref!, 'successful');
    for (const token of [tb, flip(ta, 63), flip(ta, 20), ta.slice(0, 43), a.pin_token]) {
      assert.equal((await notify(gw.url, 'paylink', la.link_id, token, paid)).status, 404, token);
    }
    assert.equal((await notify(gw.url, 'paylink', `paylink-${uniqueRef('ghost')}`, ta, paid)).status, 404);

    assert.deepEqual(await historyMessages(h.stack, a.swap_id), { signals: [], updates: ['initialized'] }, 'only the start');
    assert.deepEqual((await historyMessages(h.stack, la.link_id)).signals, []);
    assert.equal((await h.stack.control.ledger({ ref: a.txn_ref, endpoint: 'swap.confirm' })).requests.length, 0);
    for (const s of [a, b]) await api(gw.url, 'POST', `/v1/swaps/${s.swap_id}/cancel`);
    for (const l of [la, lb]) await api(gw.url, 'POST', `/v1/payment-links/${l.link_id}/cancel`);
  });

  test('a swap started with v1 tokens (their hashes in its memo, as the previous release wrote them) still takes its PIN and notifications through the memo check', async () => {
    // The previous release's start: the memo kept the hash of a v1 pin_token derived from the
    // seed, and of a random 43-character notification token.
    const v1Notify = 'n'.repeat(11) + Math.random().toString(36).slice(2, 12).padEnd(32, 'x');
    let v1Pin = '';
    const workflow = h.stack.client.workflow;
    const original = workflow.executeUpdateWithStart.bind(workflow);
    workflow.executeUpdateWithStart = ((update, options) => {
      const memo = options.startWorkflowOperation.options.memo as Record<string, string>;
      const swapId = options.startWorkflowOperation.options.workflowId;
      v1Pin = new PinTokens(h.stack.keys).derive(swapId, { pin_token_nonce: memo.pin_token_nonce!, pin_token_key: memo.pin_token_key! })!;
      memo.pin_token_sha256 = sha256(v1Pin);
      memo.notify_token_sha256 = sha256(v1Notify);
      return original(update, options);
    }) as typeof workflow.executeUpdateWithStart;
    let started;
    try {
      started = await h.stack.mpf.startSwap(swapBody(uniqueRef('tok-v1')));
    } finally {
      workflow.executeUpdateWithStart = original;
    }
    const swapId = started.swap.swap_id;
    assert.equal(v1Pin.length, 43);
    assert.equal((await h.stack.mpf.pinTokenOf(swapId))?.pin_token, v1Pin, 'a retried start hands the v1 token out again');

    gw.calls.clear();
    const n = await notify(gw.url, 'swap', swapId, v1Notify, notification('swap', started.swap.payment_ref!, 'pending'));
    assert.deepEqual([n.status, n.json], [200, { received: true }]);
    assert.equal(gw.count('DescribeWorkflowExecution'), 1, 'checked against the memo');
    assert.equal((await summary(gw.url, swapId, v1Pin)).json.state, 'awaiting_pin');
    gw.calls.clear();
    const r = await pin(gw.url, swapId, v1Pin, PIN);
    assert.deepEqual(r.json, { outcome: 'confirmed', state: 'confirmed' });
    assert.ok(gw.count('DescribeWorkflowExecution') >= 1);
    await closed(swapId);
    assert.equal((await pin(gw.url, swapId, v1Pin, PIN)).status, 410, 'closed: as before');
    assert.equal((await pin(gw.url, swapId, flip(v1Pin, 42), PIN)).status, 404);
  });

  test("after a key rotation the old key's tokens still verify locally, and a token whose key left the ring is checked against the memo", async () => {
    const s = await startSwap(); // pin_token under k1, the active key here
    const rotated = await countingGateway(`${k2},${k1}`);
    const wrong = await pin(rotated.url, s.swap_id, s.pin_token, WRONG_PIN);
    assert.deepEqual(wrong.json, { outcome: 'pin_rejected', state: 'awaiting_pin', attempts_left: 2 });
    assert.equal(rotated.count('DescribeWorkflowExecution'), 0, 'k1 is still in the ring');

    // k1 left the token ring (its data converter still reads the memo written under k1).
    const retired = await countingGateway(k2, `${k2},${k1}`);
    const right = await pin(retired.url, s.swap_id, s.pin_token, PIN);
    assert.deepEqual(right.json, { outcome: 'confirmed', state: 'confirmed' });
    assert.ok(retired.count('DescribeWorkflowExecution') >= 1, 'checked against the memo hash');
  });

  test('a token older than the local window is checked against the memo, and still works', async () => {
    const s = await startSwap();
    const strict = await countingGateway(`${k1},${k2}`, `${k1},${k2}`, { tokenLocalWindowSeconds: 0 });
    await new Promise((r) => setTimeout(r, 1_100));
    const r = await pin(strict.url, s.swap_id, s.pin_token, PIN);
    assert.deepEqual(r.json, { outcome: 'confirmed', state: 'confirmed' });
    assert.ok(strict.count('DescribeWorkflowExecution') >= 1);
  });
});
