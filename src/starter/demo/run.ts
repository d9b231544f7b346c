/**
 * `mpf demo` (`npm run demo`): the whole stack on this machine, then both flows end to end over
 * the gateway's HTTP API, with progress lines and Temporal Web links.
 *
 *   Temporal dev server (Web UI, persistent .data/demo-temporal.db, sealed under the payload keys
 *   kept beside it: data.ts) — or TEMPORAL_ADDRESS's server
 *   provider simulator (free ports) · in-process worker · gateway (+ codec server for the Web UI)
 *   a small "merchant site" serving the payment link's redirect_url
 *
 * Swap: POST /v1/swaps -> rate, converted amount, expiry -> POST /v1/swaps/{id}/pin with the
 * swap's pin_token -> confirmed. Payment link: POST /v1/payment-links -> pay_link -> paid on the
 * simulator's checkout page in headless Chromium (or the simulator's control API) -> redirect to
 * the merchant site -> the provider's notification reaches the gateway -> paid.
 *
 * `--once`: tears everything down and returns 0 only if the swap ended confirmed and the link
 * paid. Otherwise it keeps running, prints where everything is, and stops cleanly on Ctrl-C
 * within seconds (a second Ctrl-C stops it at once).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { type AppEnv, isGiven, loadEnv } from '../../config/env';
import { type MerchantEventsConfig, merchantEventsFromEnv } from '../../merchant-events/config';
import { type ReceivedDelivery, startEventListener } from '../../merchant-events/listener';
import { generateSecret, splitSecrets } from '../../merchant-events/signing';
import { startWorkerEndpoint } from '../../metrics/worker-endpoint';
import { installWorkerRuntime } from '../../metrics/worker-runtime';
import { createWorkerPino, workerRuntimeLogging } from '../../observability/worker-logger';
import { codecWebEndpoint } from '../../codec/codec-server';
import { generateDevKeys } from '../../codec/keys';
import { ProviderClient } from '../../provider/client';
import { type RunningSimulator, SIMULATOR_DEFAULT_CREDENTIALS, SIMULATOR_DEFAULT_PIN, startSimulator } from '../../simulator';
import { connectClient, type TemporalTarget, temporalTargetFromEnv } from '../../temporal/connection';
import { connectNative } from '../../temporal/native-connection';
import { startDevServer } from '../../temporal/dev-server';
import { freePort } from '../../temporal/ports';
import { provisionTemporalCli } from '../../temporal/provision';
import { ensureSearchAttributes } from '../../temporal/search-attributes-admin';
import { createMpfWorker, defaultVersioning } from '../../worker';
import { mpfClientFromEnv } from '../client/from-env';
import { operatorViews, workflowListUrl } from '../client/temporal-web';
import { createMpfClient, type LinkView, type MpfGateway } from '../../http-client';
import { flowKindOf } from '../../workflows/flow-ids';
import { type RunningGateway, startGateway } from '../gateway/main';
import { LocalSignIn } from '../console/local-sign-in';
import { CONSOLE_ROLES } from '../console/roles';
import { demoEnvFile, writeDemoClientEnv } from './client-env';
import { demoDataDir, demoDbFile, demoKeysFile, demoSecrets, shown, unreadableState } from './data';
import { type MerchantSite, startMerchantSite } from './merchant-site';
import { payLink } from './pay';

/** How long stopping waits for the flows this run started to take their cancel and close. */
const STOP_FLOWS_WAIT_MS = 5_000;

/** An append-only log file (mode 0600) under .data/, created with its directory. */
function demoLogStream(file: string): fs.WriteStream {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  return fs.createWriteStream(file, { flags: 'a', mode: 0o600 });
}

export interface DemoOptions {
  once: boolean;
  /** Where progress lines go (default stdout). */
  write?: (line: string) => void;
}

/**
 * Resources stopped in reverse order of start, each at most once, errors reported not thrown. A
 * resource a start still under way adds once stopping began (Ctrl-C during the start) is stopped
 * at once.
 */
class Teardown {
  private readonly steps: Array<{ name: string; fn: () => Promise<void> }> = [];
  private stopping = false;
  add(name: string, fn: () => Promise<void>): void {
    if (this.stopping) void fn().catch(() => undefined);
    else this.steps.push({ name, fn });
  }
  async run(say: (l: string) => void): Promise<void> {
    this.stopping = true;
    while (this.steps.length > 0) {
      const { name, fn } = this.steps.pop()!;
      try {
        await fn();
      } catch (e) {
        say(`stopping ${name} failed: ${(e as Error).message}`);
      }
    }
  }
}

function uniqueRef(prefix: string): string {
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `${prefix}-${stamp}-${randomBytes(3).toString('hex')}`;
}

const money = (n: unknown, currency: unknown): string =>
  typeof n === 'number' ? `${n.toLocaleString('en-US', { maximumFractionDigits: 8 })} ${String(currency)}` : '?';

/** A Ctrl-C came before the demo was done: what it was doing is left, and it stops. */
class StopRequested extends Error {}

export async function runDemo(opts: DemoOptions): Promise<number> {
  const write = opts.write ?? ((l: string) => process.stdout.write(`${l}\n`));
  const sayAlways = (msg: string): void => write(`[demo] ${msg}`);
  // Once a stop is requested, what is left running of the start or the flows says nothing more.
  let abandoned = false;
  const say = (msg: string): void => {
    if (!abandoned) sayAlways(msg);
  };
  const teardown = new Teardown();
  let swapOk = false;
  let linkOk = false;
  let stopRequested: (() => void) | undefined;
  const stopSignal = new Promise<void>((resolve) => (stopRequested = resolve));
  const onSignal = (): void => stopRequested?.();
  // Once: a second Ctrl-C stops the process at once. A closed terminal (SIGHUP) stops it in order too.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of signals) process.once(s, onSignal);
  // A step of the start or of the flows, left when a stop is requested (its resources are still torn down).
  const untilStopped = <T>(step: Promise<T>): Promise<T> => {
    step.catch(() => undefined);
    return Promise.race([step, stopSignal.then((): never => {
      throw new StopRequested();
    })]);
  };

  let interrupted = false;
  try {
    const stack = await untilStopped(startDemoStack(say, teardown, sayAlways));
    const swap = await untilStopped(driveSwap(stack, say));
    swapOk = swap.ok;
    linkOk = await untilStopped(driveLink(stack, say));
    say('— result —');
    say(`swap ${swapOk ? 'confirmed' : 'NOT confirmed'}, payment link ${linkOk ? 'paid' : 'NOT paid'}: ${swapOk && linkOk ? 'OK' : 'FAILED'}`);
    if (!opts.once) {
      await untilStopped(printHowToUse(stack, swap.swapId, say));
      await Promise.race([stopSignal, stack.workerRun]);
      say('stopping …');
    }
  } catch (e) {
    if (e instanceof StopRequested) {
      [abandoned, interrupted] = [true, true];
      sayAlways('stopping before the demo was done …');
    } else say(`failed: ${(e as Error).message}`);
  } finally {
    for (const s of signals) process.off(s, onSignal);
    // A signal while stopping stops at once; exiting (not dying of the signal) lets the exit hooks
    // kill the child processes, the dev server in its own process group included.
    const now = (): never => process.exit(130);
    for (const s of signals) process.once(s, now);
    await teardown.run(sayAlways);
    for (const s of signals) process.off(s, now);
    sayAlways('stopped');
  }
  if (interrupted) return 130;
  return swapOk && linkOk ? 0 : 1;
}

type Say = (msg: string) => void;

/** Where the demo's Temporal is: a dev server it started, or TEMPORAL_ADDRESS's server. */
interface DemoTemporal {
  address: string;
  namespace: string;
  uiUrl?: string;
}

/** Everything the demo started, as the flows and the closing lines use it. */
interface DemoStack extends DemoTemporal {
  keys: string;
  codecToken: string;
  taskQueue: string;
  eventSecret: string;
  client: Client;
  sim: RunningSimulator;
  received: ReceivedDelivery[];
  workerRun: Promise<unknown>;
  gateway: RunningGateway;
  /** The console's local sign-in (one-time links per role; the demo has no identity provider). */
  consoleSignIn: LocalSignIn;
  apiKey: string;
  site: MerchantSite;
  /** The backend's typed client of the gateway (its API key; retries with an Idempotency-Key per call). */
  backend: MpfGateway;
  /** Every flow this run started: each is cancelled when the demo stops. */
  startedFlows: string[];
  webLink(workflowId: string): string;
}

/**
 * Starts the whole stack, each component with its teardown: Temporal, the client, the simulator,
 * the event receiver, the worker, the gateway and the merchant site. `stopSay` tells what stopping does.
 */
async function startDemoStack(say: Say, teardown: Teardown, stopSay: Say): Promise<DemoStack> {
  const env = loadEnv();
  const { exporterUrl } = await quietTemporalRuntime(path.join(demoDataDir(), 'demo-worker.log'));
  if (env.MPS_BASE_URL) say('MPS_BASE_URL is ignored: the demo always runs against its embedded provider simulator');

  const gatewayPort = await freePort();
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  // Generated before the dev server so Temporal Web gets the codec's capability URL at start.
  const codecToken = randomBytes(24).toString('base64url');
  const dataDir = demoDataDir();
  // The demo's own database is read by every later run: sealed under keys kept with it (data.ts).
  const secrets = env.TEMPORAL_ADDRESS
    ? { keys: env.PAYLOAD_ENCRYPTION_KEYS ?? generateDevKeys(), eventSecret: env.MERCHANT_WEBHOOK_SECRET ?? generateSecret(), keysFrom: env.PAYLOAD_ENCRYPTION_KEYS ? 'PAYLOAD_ENCRYPTION_KEYS' : 'generated for this run (set PAYLOAD_ENCRYPTION_KEYS to use your own)' }
    : demoSecrets(env, dataDir, say);
  const temporal = await startDemoTemporal(env, demoDbFile(dataDir), codecWebEndpoint(gatewayUrl, codecToken), say, teardown);
  const { address, namespace, uiUrl } = temporal;
  const webLink = (workflowId: string): string =>
    uiUrl ? `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}` : `(set TEMPORAL_UI_URL for a link) workflow ${workflowId}`;

  const { keys } = secrets;
  say(`payload encryption keys: ${secrets.keysFrom}`);
  const target = { ...temporalTargetFromEnv({ ...env, TEMPORAL_ADDRESS: address }), namespace };
  const client = await connectClient(target, keys);
  teardown.add('the Temporal client', () => client.connection.close());
  // Our search attributes exist on a dev server we started; a server we were pointed at may lack them.
  await ensureSearchAttributes(client.connection as Connection, namespace);

  const sim = await startSimulator({ defaultPin: SIMULATOR_DEFAULT_PIN });
  teardown.add('the simulator', () => sim.close());
  say(`provider simulator: API ${sim.baseUrl}, hosted checkout ${sim.checkoutUrl} (no money moves)`);

  // TEMPORAL_TASK_QUEUE when given; else the default queue on the demo's own server, and a queue of
  // this run's own on a server it was pointed at (never taking tasks meant for someone's workers).
  const queueGiven = isGiven('TEMPORAL_TASK_QUEUE');
  const taskQueue = queueGiven || !env.TEMPORAL_ADDRESS ? env.TEMPORAL_TASK_QUEUE : `mpf-demo-${randomBytes(4).toString('hex')}`;
  const provider = new ProviderClient({ baseUrl: sim.baseUrl, ...SIMULATOR_DEFAULT_CREDENTIALS });
  teardown.add('the provider client', () => provider.close());
  // A stack that cannot read its own state would hold every provider call: say so, and what to do.
  const unreadable = await unreadableState(client, taskQueue);
  if (unreadable) {
    const fix = env.TEMPORAL_ADDRESS
      ? `run with the PAYLOAD_ENCRYPTION_KEYS it was written with, or another TEMPORAL_TASK_QUEUE`
      : `run with the PAYLOAD_ENCRYPTION_KEYS it was written with, or start afresh: remove ${shown(demoDbFile(dataDir))} and ${shown(demoKeysFile(dataDir))}`;
    throw new Error(`the data of task queue ${taskQueue} on ${address} is sealed under payload keys this run does not have (${unreadable}); nothing was started. ${fix}`);
  }
  const receiver = await startDemoEventReceiver(env, secrets.eventSecret, say, teardown);
  const { workerRun, metricsUrl } = await startDemoWorker({ target, namespace, taskQueue, keys, provider, events: receiver.events, exporterUrl, workerLogFile: path.join(dataDir, 'demo-worker.log') }, say, teardown);

  const apiKey = randomBytes(24).toString('base64url');
  const consoleSignIn = new LocalSignIn(namespace);
  const gateway = await startDemoGateway({ env, client, taskQueue, keys, gatewayUrl, gatewayPort, uiUrl, apiKey, codecToken, consoleSignIn, logFile: path.join(dataDir, 'demo-gateway.log') }, say, teardown);
  say(`metrics (Prometheus): worker ${metricsUrl}/metrics, gateway ${gateway.metricsUrl ?? '(off)'}/metrics; the Grafana dashboard is ops/grafana/merchant-payment-flows.json`);
  const site = await startMerchantSite();
  teardown.add('the merchant site', () => site.close());
  say(`merchant site ${site.url} (the payment link's redirect_url)`);
  const backend = createMpfClient({ baseUrl: gateway.url, apiKey });
  const startedFlows: string[] = [];
  // Stopping is bounded: one attempt per cancel, no retries (a Ctrl-C is not waited out).
  const stopper = createMpfClient({ baseUrl: gateway.url, apiKey, maxRetries: 0, timeoutMs: STOP_FLOWS_WAIT_MS, deadlineMs: STOP_FLOWS_WAIT_MS });
  cancelFlowsOnStop({ client, backend: stopper, startedFlows }, stopSay, teardown);
  return {
    ...temporal,
    keys,
    codecToken,
    taskQueue,
    eventSecret: receiver.eventSecret,
    client,
    sim,
    received: receiver.received,
    workerRun,
    gateway,
    consoleSignIn,
    apiKey,
    site,
    backend,
    startedFlows,
    webLink,
  };
}

/** The Temporal dev server (Web UI on, the demo's data file), or the server TEMPORAL_ADDRESS names. */
async function startDemoTemporal(env: AppEnv, dbFile: string, uiCodecEndpoint: string, say: Say, teardown: Teardown): Promise<DemoTemporal> {
  if (env.TEMPORAL_ADDRESS) {
    const target = temporalTargetFromEnv(env);
    say(`using the Temporal server at ${target.address} (TEMPORAL_ADDRESS), namespace ${target.namespace}`);
    return { address: target.address, namespace: target.namespace, uiUrl: env.TEMPORAL_UI_URL?.replace(/\/+$/, '') };
  }
  const kept = fs.existsSync(dbFile);
  say(`starting the Temporal dev server (Web UI on, database ${shown(dbFile)}${kept ? ', with the flows of earlier runs' : ''}) …`);
  const server = await startDevServer({ ui: true, dbFile, uiCodecEndpoint, ownProcessGroup: true });
  teardown.add('the Temporal dev server', () => server.stop());
  say(`Temporal dev server at ${server.address} (pid ${server.pid}); Temporal Web at ${server.uiUrl}`);
  say('the dev server is plain text on loopback, without TLS (a local sandbox); `mpf cluster up` runs Temporal with mTLS');
  return { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
}

/**
 * Signed merchant events, as a backend receives them: a local receiver verifies each delivery with
 * this run's secret (also written to the client settings file) and the demo prints it.
 */
async function startDemoEventReceiver(
  env: AppEnv,
  eventSecret: string,
  say: Say,
  teardown: Teardown,
): Promise<{ eventSecret: string; received: ReceivedDelivery[]; events: MerchantEventsConfig }> {
  const received: ReceivedDelivery[] = [];
  const receiver = await startEventListener({ secrets: splitSecrets(eventSecret), onDelivery: (d) => received.push(d) });
  teardown.add('the event receiver', () => receiver.close());
  const events = merchantEventsFromEnv({ ...env, MERCHANT_WEBHOOK_URL: [...env.MERCHANT_WEBHOOK_URL, receiver.url], MERCHANT_WEBHOOK_SECRET: eventSecret });
  say(`merchant events: signed (Standard Webhooks) and delivered to the demo's receiver ${receiver.url}${env.MERCHANT_WEBHOOK_URL.length ? ' and MERCHANT_WEBHOOK_URL' : ''}`);
  return { eventSecret, received, events };
}

/** The in-process worker and its metrics endpoint (at `metricsUrl`); `workerRun` settles when the worker stops. */
async function startDemoWorker(
  o: { target: TemporalTarget; namespace: string; taskQueue: string; keys: string; provider: ProviderClient; events: MerchantEventsConfig; exporterUrl?: string; workerLogFile: string },
  say: Say,
  teardown: Teardown,
): Promise<{ workerRun: Promise<unknown>; metricsUrl: string }> {
  const native = await connectNative(o.target);
  teardown.add('the worker connection', () => native.close());
  say('worker: bundling the workflows …');
  // The demo runs the only worker of its deployment: its version is made Current at start, even
  // over a version a previous demo (older code, same data file) left Current.
  const worker = await createMpfWorker({
    connection: native,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    keys: o.keys,
    provider: o.provider,
    events: o.events,
    identity: `mpf-demo@${process.pid}`,
    versioning: { ...defaultVersioning(), promote: 'always' },
    onVersion: say,
  });
  const workerOps = await startWorkerEndpoint({ host: '127.0.0.1', port: 0, exporterUrl: o.exporterUrl });
  workerOps.attach({ worker, connection: native });
  teardown.add("the worker's metrics endpoint", () => workerOps.close());
  const workerRun = worker.run().catch((e: unknown) => say(`the worker stopped: ${(e as Error).message}`));
  teardown.add('the worker', async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await workerRun;
  });
  say(`worker polling task queue ${o.taskQueue} (the SDK's warnings: ${shown(o.workerLogFile)})`);
  return { workerRun, metricsUrl: workerOps.url };
}

/** The gateway on its chosen port, with the codec server Temporal Web decodes through. */
async function startDemoGateway(
  o: { env: AppEnv; client: Client; taskQueue: string; keys: string; gatewayUrl: string; gatewayPort: number; uiUrl?: string; apiKey: string; codecToken: string; consoleSignIn: LocalSignIn; logFile: string },
  say: Say,
  teardown: Teardown,
): Promise<RunningGateway> {
  const corsOrigins = o.uiUrl ? [...new Set([new URL(o.uiUrl).origin, new URL(o.uiUrl).origin.replace('127.0.0.1', 'localhost')])] : [];
  // The flow settings come from the environment like the gateway's, except the late-notification
  // grace: the demo's links end when paid, so `--once` leaves no flow running.
  const mpf = await mpfClientFromEnv(o.env, {
    client: o.client,
    taskQueue: o.taskQueue,
    keys: o.keys,
    publicUrl: o.gatewayUrl,
    notificationBaseUrl: o.gatewayUrl,
    linkLateNotificationGraceSeconds: 0,
  });
  const gateway = await startGateway({
    mpf,
    apiKey: o.apiKey,
    host: '127.0.0.1',
    port: o.gatewayPort,
    publicUrl: o.gatewayUrl,
    codec: { keys: o.keys, authToken: o.codecToken, corsOrigins },
    console: { local: o.consoleSignIn },
    // The gateway's JSON log lines (secrets redacted) go to a file, not between the progress lines.
    logger: { level: 'info', stream: demoLogStream(o.logFile) },
    metricsAddress: { host: '127.0.0.1', port: 0 },
  });
  teardown.add('the gateway', () => gateway.close());
  say(`gateway ${gateway.url} (API key generated for this run; codec server at ${gateway.url}/codec${o.env.TEMPORAL_ADDRESS ? '' : ', which Temporal Web uses to show payloads decoded'}; its log: ${shown(o.logFile)})`);
  return gateway;
}

/**
 * Every flow this run starts is ended before it exits (Ctrl-C included), so none is left waiting
 * for a PIN or a payment nobody will send. Bounded: the cancels are sent at once, one attempt each,
 * and the wait for the flows to close (each closes in a task after its cancel answered, handing its
 * last events over) ends after STOP_FLOWS_WAIT_MS; the waits still open are then ended, so nothing
 * is left using the Temporal client when it closes.
 */
function cancelFlowsOnStop(o: { client: Client; backend: MpfGateway; startedFlows: readonly string[] }, say: Say, teardown: Teardown): void {
  teardown.add('the flows this run started', async () => {
    const reason = 'the demo stopped';
    await Promise.all(
      o.startedFlows.map(async (id) => {
        // Cancelled, or 409 not_cancellable when it already ended: either way nothing is left waiting.
        const cancel = flowKindOf(id) === 'swap' ? o.backend.cancelSwap(id, { reason }) : o.backend.cancelLink(id, { reason });
        if (await cancel.then(() => true, () => false)) say(`cancelled ${id} (the demo stopped)`);
      }),
    );
    const abort = new AbortController();
    const closing = o.startedFlows.map((id) => o.client.withAbortSignal(abort.signal, () => o.client.workflow.getHandle(id).result()).catch(() => undefined));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(closing), new Promise((r) => (timer = setTimeout(r, STOP_FLOWS_WAIT_MS)))]);
    clearTimeout(timer);
    abort.abort();
    await Promise.all(closing);
  });
}

/** The swap over the gateway: start, PIN, view, and its merchant event. ok: confirmed and the event verified. */
async function driveSwap(stack: DemoStack, say: Say): Promise<{ ok: boolean; swapId?: string }> {
  const { backend } = stack;
  let swapId: string | undefined;
  try {
    say('— swap —');
    const txnRef = uniqueRef('demo-swap');
    say(`POST /v1/swaps: 100 USD to NGN for user demo-user, txn_ref ${txnRef}`);
    const s = await backend.startSwap({ user_ref: 'demo-user', from_currency: 'USD', to_currency: 'NGN', amount: 100, txn_ref: txnRef });
    const id = s.swap_id;
    swapId = id;
    stack.startedFlows.push(id);
    if (s.state !== 'awaiting_pin') {
      say(`swap ${swapId}: ${s.state}${s.reason ? ` (${s.reason})` : ''}; no rate to confirm`);
      return { ok: false, swapId };
    }
    say(`swap ${swapId}: ${s.state}; rate 1 ${s.from_currency} = ${String(s.rate_used)} ${s.to_currency}; ${money(s.amount, s.from_currency)} -> ${money(s.converted_amount, s.to_currency)}; confirm before ${String(s.expires_at)}`);
    say(`Temporal Web: ${stack.webLink(id)}`);
    say(`POST /v1/swaps/${id}/pin with the swap's pin_token and the simulator's default wallet PIN`);
    const pin = await backend.submitPin(id, s.pin_token, SIMULATOR_DEFAULT_PIN);
    const view = await backend.getSwap(id);
    const confirmed = pin.outcome === 'confirmed' && view.state === 'confirmed';
    const left = 'attempts_left' in pin && pin.attempts_left !== undefined ? `, ${String(pin.attempts_left)} attempts left` : '';
    say(`swap ${swapId}: ${view.state} (PIN outcome: ${pin.outcome}${left})`);
    return { ok: confirmed && (await awaitEvent(stack.received, id, 'swap.confirmed', say)), swapId };
  } catch (e) {
    say(`swap failed: ${(e as Error).message}`);
    return { ok: false, swapId };
  }
}

/**
 * The payment link over the gateway: create, pay on the simulator's checkout, wait for the
 * provider's notification, and its merchant event. True when paid and the event verified.
 */
async function driveLink(stack: DemoStack, say: Say): Promise<boolean> {
  const { backend, site } = stack;
  try {
    say('— payment link —');
    const merchantRef = uniqueRef('demo-order');
    say(`POST /v1/payment-links: 25,000 NGN from Ada Lovelace, txn_merchant_ref ${merchantRef}`);
    const l = await backend.createLink({
      user_ref: 'demo-user',
      txn_merchant_ref: merchantRef,
      amount: 25_000,
      full_name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '+2348000000000',
      redirect_url: site.returnUrl,
      success_message: 'Thank you for your order',
    });
    const linkId = l.link_id;
    stack.startedFlows.push(linkId);
    say(`payment link ${linkId}: ${String(l.state)}; payment_ref ${String(l.payment_ref)}`);
    say(`pay_link: ${String(l.pay_link)}`);
    say(`Temporal Web: ${stack.webLink(linkId)}`);
    const paid = await payLink({
      payLink: String(l.pay_link),
      paymentRef: String(l.payment_ref),
      simulatorUrl: stack.sim.baseUrl,
      redirectPrefix: site.returnUrl,
      say,
    });
    say(`the customer's browser ${paid.via === 'browser' ? 'landed on' : 'is sent to'} ${paid.landedOn} (${paid.via === 'browser' ? `page says: ${paid.landingStatus}` : paid.landingStatus})`);
    say('waiting for the provider\'s notification to reach the gateway …');
    const final = await pollLink(backend, linkId, 30_000);
    for (const n of final.notifications) {
      say(`notification received ${String(n.received_at)}: outcome ${String(n.outcome)}${n.applied ? ', applied' : ''}${typeof n.deliveries === 'number' && n.deliveries > 1 ? `, ${n.deliveries} deliveries` : ''}`);
    }
    say(`payment link ${linkId}: ${String(final.state)}`);
    return final.state === 'paid' && (await awaitEvent(stack.received, linkId, 'payment_link.paid', say));
  } catch (e) {
    say(`payment link failed: ${(e as Error).message}`);
    return false;
  }
}

/**
 * When the demo keeps running: one more swap left awaiting its PIN (so the PIN page can be tried
 * in a browser), the client settings file, and where everything is.
 */
async function printHowToUse(stack: DemoStack, swapId: string | undefined, say: Say): Promise<void> {
  const { gateway, sim, address, namespace, uiUrl } = stack;
  const example = await stack.backend
    .startSwap({ user_ref: 'demo-user', from_currency: 'EUR', to_currency: 'NGN', amount: 50, txn_ref: uniqueRef('demo-pin-page') })
    .catch(() => undefined);
  if (example) stack.startedFlows.push(example.swap_id);
  say('— running; press Ctrl-C to stop —');
  // Everything a client needs (this run's keys, API key and codec token included) goes to a file
  // only the owner can read, never to the console.
  const envFile = writeDemoClientEnv(
    {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      PAYLOAD_ENCRYPTION_KEYS: stack.keys,
      GATEWAY_PUBLIC_URL: gateway.url,
      GATEWAY_API_KEY: stack.apiKey,
      CODEC_AUTH_TOKEN: stack.codecToken,
      MPF_CODEC_ENDPOINT: `${gateway.url}/codec`,
      TEMPORAL_UI_URL: uiUrl,
      MERCHANT_WEBHOOK_SECRET: stack.eventSecret,
      MPF_SIMULATOR_URL: sim.baseUrl,
      // The provisioned Temporal CLI first on PATH, so the README's `temporal workflow show …` works as written.
      PATH: temporalCliPath(),
    },
    demoEnvFile(),
  );
  const shownFile = path.relative(process.cwd(), envFile).startsWith('..') ? envFile : path.relative(process.cwd(), envFile) || envFile;
  say(`client settings: set -a; . ${shownFile}; set +a   (mode 0600: Temporal, task queue, payload keys, gateway, API key, codec token)`);
  say(`then, e.g.:     node bin/mpf.cjs swap start --user-ref demo-user --from USD --to NGN --amount 10 --txn-ref my-first-swap`);
  say(`wallet PIN:    ${SIMULATOR_DEFAULT_PIN} for every user (the simulator's default, not a secret; no money moves)`);
  say(`gateway:       ${gateway.url} (API reference ${gateway.url}/docs, OpenAPI ${gateway.url}/openapi.json; header x-api-key: $GATEWAY_API_KEY)`);
  if (example) say(`PIN page:      ${example.pin_url} (enter the wallet PIN ${SIMULATOR_DEFAULT_PIN})`);
  say(`console:       ${gateway.url}/console/ (one-time sign-in links, one per role; restart the demo for new ones)`);
  for (const role of CONSOLE_ROLES) say(`  as ${role.padEnd(8)} ${gateway.url}/console/local-sign-in?code=${stack.consoleSignIn.issueCode(role)}`);
  say(`Temporal Web:  ${uiUrl ? `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows` : '(TEMPORAL_UI_URL unset)'}`);
  if (uiUrl) {
    for (const v of operatorViews()) say(`  view "${v.name}": ${workflowListUrl(uiUrl, namespace, v.query)}`);
    say('  (saved views and the MpfState column in your browser: node bin/mpf.cjs web views --setup-script, pasted in its console)');
  }
  say(`merchant events: \`node bin/mpf.cjs events listen\` verifies with MERCHANT_WEBHOOK_SECRET from the settings file; give it to a flow with --webhook-url`);
  say(`decode history: temporal workflow show --address ${address} -w ${swapId ?? 'WORKFLOW_ID'} --codec-endpoint "$MPF_CODEC_ENDPOINT" --codec-auth "Bearer $CODEC_AUTH_TOKEN"`);
  say(`checkout:      ${sim.checkoutUrl} (simulator control API ${sim.baseUrl}/_sim)`);
}

async function pollLink(backend: MpfGateway, linkId: string, timeoutMs: number): Promise<LinkView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const l = await backend.getLink(linkId);
    if (l.state !== 'awaiting_payment' && l.state !== 'creating') return l;
    if (Date.now() > deadline) return l;
    await new Promise((res) => setTimeout(res, 200));
  }
}

/**
 * The SDK's lines (its INFO worker state changes, the Rust core's WARNs such as a query that
 * expired under load) would drown the demo's own lines on the terminal: they go, at WARN and
 * above, as JSON lines to `logFile` (.data/demo-worker.log), as `mpf worker` logs them. No shutdown
 * signals: on Ctrl-C the demo stops in its own order, and the worker must still run while the
 * flows it started are cancelled (a cancel is an update the worker answers).
 */
async function quietTemporalRuntime(logFile: string): Promise<{ exporterUrl?: string }> {
  try {
    const log = createWorkerPino({ level: 'warn', destination: demoLogStream(logFile) });
    return await installWorkerRuntime({ ...workerRuntimeLogging(log), shutdownSignals: [] }, true);
  } catch {
    return {}; // already installed (e.g. embedded in a test process): keep it
  }
}

/** PATH with the provisioned Temporal CLI's folder first (the PATH as it is when it cannot be provisioned). */
function temporalCliPath(): string {
  const current = process.env.PATH ?? '';
  try {
    return `${path.dirname(provisionTemporalCli())}:${current}`;
  } catch {
    return current;
  }
}

/**
 * Waits (bounded) for the receiver to get the flow's event of `type`, verified with this run's
 * secret, and prints it; false when it did not arrive in time or did not verify.
 */
async function awaitEvent(received: readonly ReceivedDelivery[], flowId: string, type: string, say: (m: string) => void): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = received.find((r) => r.event?.type === type && r.id.startsWith(`evt_${flowId}_`));
    if (d) {
      say(`merchant event received: ${type} ${d.id}, signature ${d.verified ? 'verified' : `NOT verified (${d.error ?? '?'})`}, answered ${d.status ?? '-'}`);
      return d.verified;
    }
    if (Date.now() > deadline) {
      say(`merchant event ${type} for ${flowId} did not arrive within 30 s`);
      return false;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
