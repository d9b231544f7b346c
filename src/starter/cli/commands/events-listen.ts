/**
 * `mpf events listen|tail` (the `stripe listen` of merchant events): a local receiver that checks
 * each delivery's Standard Webhooks signature and prints one line per delivery as it arrives.
 *
 * Which events reach it, by one rule printed at start:
 *  - MPF_GATEWAY_URL set (and not `--local`): it registers a webhook endpoint for the session
 *    through the gateway's `/v1/webhook_endpoints` with the operator's credential (as `mpf
 *    webhooks`), pointing at the receiver, for `--events` (default every type). Every flow's events
 *    from then on reach it, those of flows already running included (the workers read the endpoints
 *    at each event). Deliveries are verified with the secret the create answered, held in memory
 *    only (printed with `--print-secret` only), and with MERCHANT_WEBHOOK_SECRET too when it is set.
 *    Ctrl-C or SIGTERM deletes the endpoint; a process that dies otherwise leaves it, described
 *    `mpf events listen <host> <pid> <time>` for `mpf webhooks list` and `mpf webhooks delete`.
 *  - Otherwise (or with `--local`): as before, only flows that name the receiver
 *    (MERCHANT_WEBHOOK_URL on the worker, or a flow's webhook_url), verified with
 *    MERCHANT_WEBHOOK_SECRET (or `--secret`, `--secret-file`).
 *
 * `--forward-to URL` POSTs each verified delivery, its body and its webhook-* headers unchanged (so
 * the app verifies with the session's secret, `--print-secret`), to an app on this machine, and
 * answers the worker with the app's status (502 when the app cannot be reached, 504 when it does
 * not answer in time), so the worker's retries behave as with the app itself.
 */
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, loadEnv } from '../../../config/env';
import type * as HttpClient from '../../../http-client';
import type * as Listener from '../../../merchant-events/listener';
import type { ReceivedDelivery } from '../../../merchant-events/listener';
import type * as Signing from '../../../merchant-events/signing';
import type * as Undici from 'undici';
import { credentialHint, gatewayClientFor, type GatewayCredential, requireOperatorCredential } from '../face';
import { cliSetting } from '../../../config/cli-env';
import { DEFAULT_WAIT_SECONDS, parseCount, parseHttpUrl, parsePort, readOptionFile } from '../options';

interface ListenOptions {
  port: number;
  host: string;
  secret?: string;
  secretFile?: string;
  fail: number;
  json?: boolean;
  events: string[];
  forwardTo?: string;
  printSecret?: boolean;
  local?: boolean;
  endpointUrl?: string;
}

/** How long a worker serves one reading of the endpoints (temporal/webhook-endpoints-reading.ts): a new endpoint reaches every delivery after it. */
const WORKERS_READ_EVERY_MS = 2_000;
/** How long a forwarded delivery waits for the app's answer (the worker's own attempt timeout is 10 s by default). */
const FORWARD_TIMEOUT_MS = 9_000;
/** The headers a forwarded delivery carries unchanged: the body's type and the Standard Webhooks signature. */
const FORWARDED_HEADERS = ['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

function parseHttpStatusCount(value: string): number {
  const n = parseCount(value);
  if (n > 100) throw new InvalidArgumentError('must be at most 100');
  return n;
}

function parseEventList(value: string): string[] {
  const types = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (types.length === 0) throw new InvalidArgumentError("must name event types (swap.confirmed,payment_link.paid) or '*'");
  return types;
}

function parseForwardUrl(value: string): string {
  parseHttpUrl(value);
  const u = new URL(value);
  if (u.username || u.password) throw new InvalidArgumentError('must not carry a user or password (it would be printed with each event)');
  return value;
}

/** Adds `listen` (alias `tail`) to `mpf events`. */
export function addListenCommand(events: Command): void {
  events
    .command('listen')
    .alias('tail')
    .description(
      'receive merchant events on a local port, verify each signature and print each delivery as it arrives (Ctrl-C stops); with MPF_GATEWAY_URL it registers a webhook endpoint for the session and deletes it when stopped',
    )
    .option('--port <n>', 'port to listen on, 0 = a free port', parsePort, 8787)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .addOption(new Option('--events <types>', "the session's endpoint: comma-separated event types, or '*' for all").argParser(parseEventList).default(['*'], "'*'"))
    .option('--forward-to <url>', 'POST each verified event (its body and signature headers unchanged) to this URL, e.g. your app on http://localhost:3000/hooks, and answer with its status', parseForwardUrl)
    .option('--print-secret', "print the session endpoint's signing secret (for the app that --forward-to reaches)")
    .option('--endpoint-url <url>', "the session endpoint's URL, when the workers reach this receiver at another address than it listens on", parseHttpUrl)
    .option('--local', 'register no endpoint: receive only the flows that name this receiver (MERCHANT_WEBHOOK_URL or webhook_url), as without MPF_GATEWAY_URL')
    .option('--secret <whsec>', 'a signing secret to verify with (default MERCHANT_WEBHOOK_SECRET or MERCHANT_WEBHOOK_SECRET_FILE; an argument is visible to other users of this machine)')
    .option('--secret-file <path>', 'read the signing secret from a file')
    .option('--fail <n>', 'answer 503 to the first n attempts of each event (to watch the retries)', parseHttpStatusCount, 0)
    .option('--json', 'print each delivery as one JSON line (the event included)')
    .action(listen);
}

/** The configured secrets (--secret, --secret-file, MERCHANT_WEBHOOK_SECRET), each checked; `required`: none is an error naming the settings. */
function configuredSecrets(opts: ListenOptions, signing: typeof Signing, required: boolean): string[] {
  let value = opts.secret;
  if (value === undefined && opts.secretFile !== undefined) value = readOptionFile('--secret-file', opts.secretFile);
  value ??= loadEnv().MERCHANT_WEBHOOK_SECRET;
  const secrets = signing.splitSecrets(value);
  if (secrets.length === 0 && required) {
    throw new ConfigError(
      'MERCHANT_WEBHOOK_SECRET: is not set: give the secret the worker signs with (MERCHANT_WEBHOOK_SECRET, --secret-file or --secret); `mpf events secret` makes one. Or set MPF_GATEWAY_URL and an operator credential: listen then registers an endpoint with its own secret',
    );
  }
  for (const s of secrets) {
    const problem = signing.secretProblem(s);
    if (problem) throw new ConfigError(`the signing secret ${problem}`);
  }
  return secrets;
}

/** The endpoint registered for this session, and how it is removed. */
interface SessionEndpoint {
  id: string;
  secret: string;
  remove(): Promise<void>;
}

/** Creates the session's endpoint through the gateway; its secret is in the create's answer only (a retried create meets the endpoint without it: its secret is rolled, at once). */
async function registerEndpoint(gatewayUrl: string, credential: GatewayCredential, body: { url: string; enabled_events: string[]; description: string }): Promise<SessionEndpoint> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('../../../http-client') as typeof HttpClient;
  const gw = gatewayClientFor(gatewayUrl, credential, (DEFAULT_WAIT_SECONDS + 5) * 1000);
  const said = async <T>(what: string, p: Promise<T>): Promise<T> =>
    p.catch((err: unknown) => {
      if (err instanceof http.MpfApiError) throw new Error(`${what}: the gateway at ${new URL(gatewayUrl).origin} answered ${err.status} ${err.code}: ${err.message}${credentialHint(credential, err.status)}`, { cause: err });
      throw err;
    });
  const created = await said('registering the session endpoint', gw.createWebhookEndpoint(body));
  const secret = created.secret ?? (await said(`rolling the secret of ${created.id}`, gw.rollWebhookEndpointSecret(created.id, { expires_in_seconds: 0 }))).secret;
  return {
    id: created.id,
    secret,
    remove: async () => {
      await said(`deleting ${created.id}`, gw.deleteWebhookEndpoint(created.id));
    },
  };
}

/** Resolves on the first SIGINT or SIGTERM (from the moment it is called). */
function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

async function listen(opts: ListenOptions): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const signing = require('../../../merchant-events/signing') as typeof Signing;
  const { startEventListener } = require('../../../merchant-events/listener') as typeof Listener;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const gatewayUrl = opts.local ? undefined : cliSetting('MPF_GATEWAY_URL');
  // Everything that can be refused is refused before the port is taken or anything is sent.
  const credential = gatewayUrl ? requireOperatorCredential('mpf events listen (it registers a webhook endpoint for the session)') : undefined;
  // The listener reads this list at each delivery: the session's secret joins it once created.
  const secrets = configuredSecrets(opts, signing, !gatewayUrl);
  const forward = opts.forwardTo ? forwarder(opts.forwardTo) : undefined;
  const forwarded = new WeakMap<ReceivedDelivery, ForwardResult>();
  const stopped = untilStopped();
  const listener = await startEventListener({
    secrets,
    host: opts.host,
    port: opts.port,
    answer: async (d) => {
      if (d.attempt <= opts.fail) return 503;
      if (!forward) return 200;
      const f = await forward(d);
      forwarded.set(d, f);
      return f.status ?? (f.error === 'timeout' ? 504 : 502);
    },
    onDelivery: (d) => printDelivery(d, forwarded.get(d), opts.json),
  });
  if (!gatewayUrl) {
    const why = opts.local ? '--local' : 'no MPF_GATEWAY_URL';
    say(`listening on ${listener.url} (${why}: no endpoint registered; set MERCHANT_WEBHOOK_URL=${listener.url} on the worker, or webhook_url per flow); Ctrl-C stops`);
    await stopped;
    await listener.close();
    return;
  }
  await runSession({ opts, gatewayUrl, credential: credential!, listenerUrl: listener.url, secrets, stopped, close: () => listener.close() });
}

interface SessionRun {
  opts: ListenOptions;
  gatewayUrl: string;
  credential: GatewayCredential;
  listenerUrl: string;
  secrets: string[];
  stopped: Promise<NodeJS.Signals>;
  close(): Promise<void>;
}

/** Registers the session's endpoint, serves until a signal, then deletes it (also when stopped while registering). */
async function runSession(r: SessionRun): Promise<void> {
  const { opts } = r;
  const url = opts.endpointUrl ?? r.listenerUrl;
  const description = `mpf events listen ${os.hostname()} ${process.pid} ${new Date().toISOString()}`;
  say(`listening on ${r.listenerUrl}; registering a webhook endpoint for this session through the gateway at ${new URL(r.gatewayUrl).origin} (${r.credential.from})`);
  let session: SessionEndpoint;
  let signal: NodeJS.Signals | undefined;
  let registering = true;
  void r.stopped.then((s) => {
    signal = s;
    // The create may have reached the gateway: its answer names the endpoint to delete.
    if (registering) say(`${s}: stopping once the gateway answered the registration, to delete the endpoint if it was made (${s} again stops at once and may leave it)`);
  });
  try {
    session = await registerEndpoint(r.gatewayUrl, r.credential, { url, enabled_events: opts.events, description });
  } catch (err) {
    await r.close();
    throw err;
  }
  registering = false;
  r.secrets.push(session.secret);
  say(`endpoint ${session.id}  ${url}  events: ${opts.events.join(',')}  (${description})`);
  if (opts.printSecret) say(`secret: ${session.secret}`);
  // A worker serves one reading of the endpoints for 2 s: after that every event reaches this one.
  await Promise.race([sleep(WORKERS_READ_EVERY_MS + 200), r.stopped]);
  if (signal === undefined) {
    say(
      `Ready: every flow's ${opts.events.includes('*') ? '' : `${opts.events.join(', ')} `}events come here, flows already running included${opts.forwardTo ? `, forwarded to ${opts.forwardTo}` : ''}. Ctrl-C deletes ${session.id}; if this process dies otherwise, delete it: mpf webhooks delete ${session.id}`,
    );
    await r.stopped;
  }
  try {
    await session.remove();
    say(`deleted the session endpoint ${session.id}`);
  } catch (err) {
    process.exitCode = 1;
    say(`the session endpoint ${session.id} was NOT deleted (${(err as Error).message}): delete it with mpf webhooks delete ${session.id}`);
  } finally {
    await r.close();
  }
}

interface ForwardResult {
  status?: number;
  error?: string;
}

/** POSTs a verified delivery's body and signature headers, unchanged, to `url` (undici: no redirects followed). */
function forwarder(url: string): (d: ReceivedDelivery) => Promise<ForwardResult> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { request } = require('undici') as typeof Undici;
  return async (d) => {
    const headers: Record<string, string> = {};
    for (const h of FORWARDED_HEADERS) if (d.headers[h] !== undefined) headers[h] = d.headers[h];
    try {
      const res = await request(url, { method: 'POST', body: d.body, headers, signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS) });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      return { status: res.statusCode };
    } catch (err) {
      const e = err as Error & { code?: string; cause?: { code?: string } };
      return { error: e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timeout' : (e.code ?? e.cause?.code ?? e.name) };
    }
  };
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function printDelivery(d: ReceivedDelivery, f: ForwardResult | undefined, json: boolean | undefined): void {
  if (json) {
    const { body: _body, headers: _headers, ...rest } = d;
    process.stdout.write(`${JSON.stringify(f ? { ...rest, forwarded: f } : rest)}\n`);
    return;
  }
  const answer = d.aborted ? 'connection closed before the answer' : `answered ${d.status}`;
  const what = d.verified ? `${d.event?.type ?? '?'}  ${d.id}  ${flowOf(d.event?.data)}` : `INVALID SIGNATURE (${d.error})  ${d.id}`;
  const fwd = f ? `  forwarded: ${f.status ?? f.error}` : '';
  process.stdout.write(`${d.received_at}  ${what}  attempt ${d.attempt}${fwd}  ${answer}\n`);
}

function flowOf(data: Record<string, unknown> | undefined): string {
  if (!data) return '';
  const id = data.swap_id ?? data.link_id;
  return `${String(id ?? '')} -> ${String(data.state ?? '')}`;
}
