/**
 * `mpf events listen` with a gateway, as a developer runs it, every piece an `mpf` process: the
 * simulator, a worker with no MERCHANT_WEBHOOK_URL of its own, a gateway with an operator key, and
 * the listen session, which registers a webhook endpoint for itself, forwards each verified event to
 * an app on this machine (`--forward-to`), and deletes its endpoint when it is stopped.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateDevKeys } from '../../src/codec/keys';
import { verifyDelivery } from '../../src/merchant-events/signing';
import { linkBody, uniqueRef } from '../helpers/fixtures';
import { type MpfProcess, runMpf, spawnMpf } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { getTestTemporal, uniqueTaskQueue } from '../helpers/temporal';

interface AppRequest {
  body: string;
  headers: Record<string, string>;
}

describe('mpf events listen registers an endpoint for its session', () => {
  const keys = generateDevKeys();
  const apiKey = 'events-listen-operator-key-0123456789';
  const procs: MpfProcess[] = [];
  /** What the developer's app (the --forward-to target) received. */
  const appGot: AppRequest[] = [];
  let app: Server;
  let appUrl = '';
  let simUrl = '';
  let env: NodeJS.ProcessEnv;

  const start = async (args: string[], extra: NodeJS.ProcessEnv, ready: RegExp): Promise<[MpfProcess, RegExpMatchArray]> => {
    const p = spawnMpf(args, extra);
    procs.push(p);
    return [p, await p.waitFor(ready, 120_000)];
  };
  const mpf = async (args: string[]): Promise<string> => {
    const r = await runMpf(args, env, { timeoutMs: 150_000 });
    assert.equal(r.code, 0, `mpf ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  /** A listen session, once it said it is ready: the process, its endpoint's id, and its secret when printed. */
  const listen = async (args: string[]): Promise<{ p: MpfProcess; id: string; secret?: string }> => {
    const [p] = await start(['events', 'listen', '--port', '0', ...args], env, /^Ready: /m);
    const id = /^endpoint (we_[0-9a-f]{24}) {2}/m.exec(p.output())![1]!;
    const secret = /^secret: (whsec_\S+)$/m.exec(p.output())?.[1];
    return { p, id, ...(secret ? { secret } : {}) };
  };
  const stopped = async (p: MpfProcess, signal: NodeJS.Signals): Promise<number | null> => {
    const code = new Promise<number | null>((resolve) => p.child.once('exit', (c) => resolve(c)));
    p.child.kill(signal);
    return code;
  };

  before(async () => {
    app = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        appGot.push({ body, headers: req.headers as Record<string, string> });
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/hooks/mpf`;
    const temporal = await getTestTemporal();
    simUrl = (await start(['simulator'], {}, /listening on (http:\S+)/))[1][1]!;
    const appEnv = { TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace, TEMPORAL_TASK_QUEUE: uniqueTaskQueue('ev-listen'), PAYLOAD_ENCRYPTION_KEYS: keys };
    await start(
      ['worker'],
      { ...appEnv, MPS_BASE_URL: simUrl, MPS_SECRET_KEY: 'sim-secret-key', MPS_ACCESS_TOKEN: 'sim-access-token', MPS_MERCHANT_REF: 'sim-merchant', MERCHANT_WEBHOOK_RETRY_INITIAL_SECONDS: '0.2' },
      /worker: polling task queue/,
    );
    const [, gw] = await start(['gateway', '--port', '0'], { ...appEnv, GATEWAY_API_KEY: apiKey }, /listening on (http:\S+)/);
    // Only what a developer's shell holds: the gateway, an operator key and the simulator.
    env = { PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: gw[1]!, MPF_API_KEY: apiKey, MPF_SIMULATOR_URL: simUrl };
  });
  after(async () => {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await new Promise((resolve) => app?.close(resolve));
  });

  test('a session receives an event of a flow started before it, forwards it to the app with its body and signature, and its endpoint is gone once it stops', async () => {
    const ref = uniqueRef('listen-pay');
    const b = linkBody(ref);
    const link = JSON.parse(
      await mpf(['link', 'create', '--user-ref', b.user_ref, '--txn-merchant-ref', ref, '--amount', '2500', '--full-name', b.full_name, '--email', b.email, '--phone', b.phone, '--redirect-url', b.redirect_url, '--json']),
    ) as { link_id: string; payment_ref: string };

    const session = await listen(['--forward-to', appUrl, '--print-secret']);
    assert.match(session.secret ?? '', /^whsec_/);
    const listed = await mpf(['webhooks', 'list']);
    assert.match(listed, new RegExp(`^${session.id}  enabled   http://127\\.0\\.0\\.1:\\d+/  events: \\*  \\(mpf events listen \\S+ ${session.p.child.pid} \\S+\\)$`, 'm'));
    assert.ok(!listed.includes(session.secret!), 'the list shows no secret');

    assert.match(await mpf(['sim', 'pay', link.payment_ref]), /: paid/);
    const eventId = `evt_${link.link_id}_2`;
    await session.p.waitFor(new RegExp(`payment_link\\.paid  ${eventId}  ${link.link_id} -> paid  attempt 1  forwarded: 202  answered 202`), 90_000);
    const got = appGot.find((r) => r.headers['webhook-id'] === eventId);
    assert.ok(got, 'the app received the event');
    const event = verifyDelivery([session.secret!], got.body, got.headers) as { id: string; type: string; data: { link_id: string } };
    assert.deepEqual([event.id, event.type, event.data.link_id], [eventId, 'payment_link.paid', link.link_id]);
    assert.doesNotMatch(session.p.output(), /INVALID SIGNATURE/);

    assert.equal(await stopped(session.p, 'SIGINT'), 0);
    assert.match(session.p.output(), new RegExp(`^deleted the session endpoint ${session.id}$`, 'm'));
    assert.ok(!(await mpf(['webhooks', 'list'])).includes(session.id), 'the endpoint is gone');
  });

  test('mpf events trigger reaches a session endpoint, which is sent only the types it asked for; SIGTERM deletes it', async () => {
    const session = await listen(['--events', 'swap.confirmed', '--json']);
    assert.ok(!session.p.output().includes('whsec_'), 'the secret is not printed without --print-secret');
    const r = await runMpf(['events', 'trigger', 'swap.confirmed', '--json', '--timeout', '120'], env, { timeoutMs: 150_000 });
    assert.equal(r.code, 0, `mpf events trigger: ${r.stderr}${r.stdout}`);
    const triggered = JSON.parse(r.stdout) as { flow_id: string; event_id: string };
    const ofTheFlow = () =>
      session.p
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { id: string; verified: boolean; status?: number; event?: { type: string } })
        .filter((d) => d.id.startsWith(`evt_${triggered.flow_id}_`));
    await eventually(async () => ofTheFlow().some((d) => d.id === triggered.event_id), 90_000, `${triggered.event_id} at the session`);
    const delivered = ofTheFlow();
    // Deliveries to one endpoint keep the flow's order: swap.awaiting_pin, had it been sent, came first.
    assert.deepEqual(
      delivered.map((d) => [d.id, d.event?.type, d.verified, d.status]),
      [[triggered.event_id, 'swap.confirmed', true, 200]],
    );
    assert.equal(await stopped(session.p, 'SIGTERM'), 0);
    assert.ok(!(await mpf(['webhooks', 'list'])).includes(session.id), 'the endpoint is gone');
  });

  test('an app that cannot be reached is answered to the worker as a 502, and the worker tries again', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const session = await listen(['--events', 'payment_link.created', '--forward-to', `http://127.0.0.1:${closedPort}/hooks`]);
    const ref = uniqueRef('listen-down');
    const b = linkBody(ref);
    const link = JSON.parse(
      await mpf(['link', 'create', '--user-ref', b.user_ref, '--txn-merchant-ref', ref, '--amount', '2500', '--full-name', b.full_name, '--email', b.email, '--phone', b.phone, '--redirect-url', b.redirect_url, '--json']),
    ) as { link_id: string };
    const eventId = `evt_${link.link_id}_1`;
    await session.p.waitFor(new RegExp(`payment_link\\.created  ${eventId}  ${link.link_id} -> awaiting_payment  attempt 2  forwarded: ECONNREFUSED  answered 502`), 90_000);
    assert.match(session.p.output(), new RegExp(`${eventId} .* attempt 1  forwarded: ECONNREFUSED  answered 502`));
    assert.equal(await stopped(session.p, 'SIGINT'), 0);
  });

  test('with MPF_GATEWAY_URL and no operator credential it refuses to start, naming the settings, and registers nothing', async () => {
    const r = await runMpf(['events', 'listen', '--port', '0'], { PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: env.MPF_GATEWAY_URL }, { timeoutMs: 60_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /MPF_ACCESS_TOKEN or MPF_API_KEY: one is required for mpf events listen/);
    assert.doesNotMatch(r.stdout, /listening on/);
    assert.match(await mpf(['webhooks', 'list']), /^no webhook endpoints/);
  });

  test('without MPF_GATEWAY_URL it registers nothing and says which flows reach it', async () => {
    const { MPF_GATEWAY_URL: _gw, MPF_API_KEY: _key, ...local } = env;
    const p = spawnMpf(['events', 'listen', '--port', '0'], { ...local, MERCHANT_WEBHOOK_SECRET: 'whsec_' + Buffer.alloc(32, 7).toString('base64') });
    procs.push(p);
    await p.waitFor(/listening on http:\S+ \(no MPF_GATEWAY_URL: no endpoint registered; set MERCHANT_WEBHOOK_URL=/, 60_000);
    assert.equal(await stopped(p, 'SIGINT'), 0);
  });
});
