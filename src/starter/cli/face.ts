/**
 * What the client commands (`mpf swap|link|categories|reconcile list`) run against: the gateway,
 * with an API key, or Temporal directly (the operators' mode, with the payload keys).
 *
 *  - Through the gateway when MPF_GATEWAY_URL is set: the key is MPF_API_KEY (or MPF_API_KEY_FILE,
 *    or `mpf --api-key-file <path>`), and the gateway's roles apply (a read_only key lists and
 *    reads and is refused a start with 403). The light HTTP client (src/http-client) retries
 *    429/503/504 and dropped connections with one Idempotency-Key per logical call, and each
 *    retry it waits on is one line on stderr (retry-notice.ts).
 *  - The gateway's operator routes (/v1/admin/*: `mpf reconcile list|resolve`, `mpf provider`)
 *    also take a person's access token: MPF_ACCESS_TOKEN (or MPF_ACCESS_TOKEN_FILE; `mpf cluster
 *    login` writes one), sent as `Authorization: Bearer`, so the action is recorded under the
 *    person. Which credential a command sends is credentials.ts's one rule: `--api-key-file` on
 *    the command line wins; from the environment a command takes one, and a person's token beside
 *    an API key is refused there (exit 2) unless `mpf --as person|key` picks. The other routes are
 *    the merchant backend's and take the API key only.
 *  - Otherwise Temporal directly (TEMPORAL_*, PAYLOAD_ENCRYPTION_KEYS), as before.
 *
 * Both answer the same views, so every command prints the same lines either way.
 */
import type * as HttpClient from '../../http-client';
import type { MpfApiError as HttpApiError, MpfGateway } from '../../http-client';
import type * as ClientErrors from '../client/errors';
import type { CategoriesResult } from '../client/views';
import type { FlowPage } from '../client/lists';
import type { EventPage, MerchantEventDetail } from '../client/events';
import type { Redelivery } from '../client/event-redelivery';
import type { LinkCreateRequest, SwapStartRequest } from '../client/requests';
import type { LinkView, PinOutcome, SwapView } from '../../workflows/messages';
import { cliCredentialSetting, cliSetting } from '../../config/cli-env';
import { ConfigError } from '../../config/env';
import type * as Connect from './connect';
import { apiKeyCredential, credentialGiven, operatorCredential, type Credential } from './credentials';
import { DEFAULT_WAIT_SECONDS } from './options';
import { retryNotice } from './retry-notice';

export type FlowKindFilter = 'swap' | 'payment_link' | 'any';

/** One of the client operations, answered the same way by either face. */
export interface Face {
  /** Where the command goes, for messages: `the gateway at …` or `Temporal`. */
  readonly where: string;
  /** The swap, its pin_url and the pin_token that authorises its PIN (as the start answers them). */
  startSwap(body: SwapStartRequest): Promise<{ swap: SwapView; pin_url?: string; pin_token?: string }>;
  getSwap(swapId: string): Promise<SwapView>;
  /**
   * Sends the wallet PIN: through the user's wrong-PIN budget (the PIN gate) and the swap. Through
   * a gateway the PIN is authorised by the swap's pin_token, never by the API key.
   */
  submitPin(swapId: string, walletPin: string, pinToken: string | undefined): Promise<PinOutcome>;
  cancelSwap(swapId: string, reason: string): Promise<SwapView>;
  createLink(body: LinkCreateRequest): Promise<LinkView>;
  getLink(linkId: string): Promise<LinkView>;
  cancelLink(linkId: string, reason: string): Promise<LinkView>;
  listFlows(kind: FlowKindFilter, filter: Record<string, unknown>): Promise<FlowPage>;
  listCategories(): Promise<CategoriesResult>;
  /** Flows in needs_reconciliation (through the gateway: its operator route). */
  listReconciliations(kind: 'swap' | 'payment_link' | undefined, filter: Record<string, unknown>): Promise<FlowPage>;
  /** Merchant events across flows (type, flow_id, created_from, created_to, limit, page_token). */
  listEvents(filter: Record<string, unknown>): Promise<EventPage>;
  getEvent(eventId: string): Promise<EventDetail>;
  /** Sends an event again (same id) to its flow's endpoints (through the gateway: a backend or operator key). */
  redeliverEvent(eventId: string, endpoint?: string): Promise<Redelivery>;
}

export type EventDetail = MerchantEventDetail & { redeliveries: Redelivery[] };

/** A flow the command asked to cancel that can no longer be (with its view). */
export class NotCancellableFace extends Error {
  override name = 'NotCancellableError';
  constructor(readonly view: { state: string }) {
    super(`it is ${view.state}`);
  }
}

function personTokenGiven(): boolean {
  try {
    return cliCredentialSetting('MPF_ACCESS_TOKEN') !== undefined;
  } catch {
    return false;
  }
}

/** The API key of the backend routes (credentials.ts), or an error naming where it may be set. */
function requireApiKey(): Credential {
  const k = apiKeyCredential();
  if (!k) {
    const person = personTokenGiven()
      ? " (a person's access token, MPF_ACCESS_TOKEN, is taken by the gateway's operator routes only: mpf reconcile, mpf provider)"
      : " (the operator routes, mpf reconcile and mpf provider, take a person's access token in MPF_ACCESS_TOKEN instead)";
    throw new Error(`MPF_API_KEY: is required with MPF_GATEWAY_URL (or MPF_API_KEY_FILE, or --api-key-file): an API key of the role the command needs${person}`);
  }
  return k;
}

/** The gateway and its key (with the key's source, for messages) when MPF_GATEWAY_URL is set; undefined for Temporal-direct. */
export function gatewayTarget(): { url: string; apiKey: string; from: string } | undefined {
  const url = cliSetting('MPF_GATEWAY_URL');
  if (!url) return undefined;
  const k = requireApiKey();
  return { url, apiKey: k.value, from: k.source };
}

/** How the CLI authenticates at the gateway, and the credential's source (for messages; never the value). */
export interface GatewayCredential {
  /** The light client's option that sends it: an API key (x-api-key) or a person's token (Authorization: Bearer). */
  send: { apiKey: string } | { bearerToken: string };
  /** `MPF_API_KEY`, `MPF_API_KEY_FILE=/path`, `--api-key-file /path`, `MPF_ACCESS_TOKEN`, … */
  from: string;
  person: boolean;
}

function gatewayCredentialOf(c: Credential): GatewayCredential {
  if (c.kind === 'person') return { send: { bearerToken: c.value }, from: c.source, person: true };
  return { send: { apiKey: c.value }, from: c.source, person: false };
}

/** The operator routes' credential (credentials.ts: the command line's key, else the environment's one), or an error naming the settings. */
export function requireOperatorCredential(what: string): GatewayCredential {
  const c = operatorCredential();
  if (!c) {
    throw new ConfigError(
      `MPF_ACCESS_TOKEN or MPF_API_KEY: one is required for ${what} through the gateway: a person's access token (mpf cluster login; MPF_ACCESS_TOKEN or MPF_ACCESS_TOKEN_FILE) or an API key of role operator (MPF_API_KEY or MPF_API_KEY_FILE, or mpf --api-key-file <path>)`,
    );
  }
  return gatewayCredentialOf(c);
}

/** The gateway (MPF_GATEWAY_URL) and the credential of its operator routes; undefined for Temporal-direct. */
export function operatorGatewayTarget(what: string): { url: string; credential: GatewayCredential } | undefined {
  const url = cliSetting('MPF_GATEWAY_URL');
  if (!url) return undefined;
  return { url, credential: requireOperatorCredential(what) };
}

/** The light client of the gateway at `url`, authenticated by `credential` (its header on every request). */
export function gatewayClientFor(url: string, credential: GatewayCredential, deadlineMs: number): MpfGateway {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('../../http-client') as typeof HttpClient;
  // Each retry it waits on is said on stderr (status, code, reason, the wait), never a credential.
  const onRetry = retryNotice(`the gateway at ${new URL(url).origin}`);
  return http.createMpfClient({ baseUrl: url, ...credential.send, deadlineMs, onRetry });
}

/**
 * An operator's command: through the gateway (MPF_GATEWAY_URL, with an operator's credential) when
 * it is set, else Temporal directly. A refusal of the gateway's becomes one line naming the
 * gateway, its status and code, and which credential setting was sent (never its value).
 */
export async function operatorCall<T>(what: string, viaGateway: (gw: MpfGateway) => Promise<T>, viaTemporal: (c: Connect.CliClient) => Promise<T>): Promise<T> {
  const target = operatorGatewayTarget(what);
  if (!target) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { withClient } = require('./connect') as typeof Connect;
    return withClient(viaTemporal);
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('../../http-client') as typeof HttpClient;
  const gw = gatewayClientFor(target.url, target.credential, (DEFAULT_WAIT_SECONDS + 5) * 1000);
  try {
    return await viaGateway(gw);
  } catch (err) {
    if (err instanceof http.MpfApiError) throw new Error(`the gateway at ${new URL(target.url).origin} answered ${err.status} ${err.code}: ${err.message}${credentialHint(target.credential, err.status)}`, { cause: err });
    throw err;
  }
}

/** What a refusal of a credential means, for a message: which setting was sent (its source, never its value), and for an expired or refused person's token, how to get another. */
export function credentialHint(c: GatewayCredential, status: number): string {
  if (status !== 401 && status !== 403) return '';
  return status === 401 && c.person ? ` (sent ${c.from}: sign in again, e.g. mpf cluster login, then source cluster.env again)` : ` (sent ${c.from})`;
}

/** Runs `fn` against the gateway (MPF_GATEWAY_URL) or Temporal; `waitSeconds` bounds a start's answer. */
export async function withFace<T>(waitSeconds: number, fn: (face: Face) => Promise<T>): Promise<T> {
  const url = cliSetting('MPF_GATEWAY_URL');
  if (url) {
    // No credential at all: said before the command reads anything (a PIN, a file).
    if (!credentialGiven()) requireApiKey();
    return fn(gatewayFace(url, waitSeconds));
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { withClient, answerWithin, noteGatewayPublicUrl } = require('./connect') as typeof Connect;
  return personRefusalSaid(withClient(async (c) => {
    const within = <R>(p: Promise<R>, after = ''): Promise<R> => answerWithin(p, waitSeconds, c, after);
    const notCancellable = async <V>(p: Promise<V>): Promise<V> => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { NotCancellableError } = require('../client/errors') as typeof ClientErrors;
      return p.catch((err: unknown) => {
        throw err instanceof NotCancellableError ? new NotCancellableFace(err.view) : err;
      });
    };
    return fn({
      where: 'Temporal',
      startSwap: async (body) => {
        noteGatewayPublicUrl(c.env);
        const s = await within(c.mpf.startSwap(body), `(the swap swap-${body.txn_ref} may have been started: see \`mpf swap status swap-${body.txn_ref}\`)`);
        return { swap: s.swap, pin_url: s.pin_url, pin_token: s.pin_token };
      },
      getSwap: (id) => within(c.mpf.getSwap(id)),
      submitPin: async (id, walletPin) => {
        // The same PIN gate as the gateway's PIN route: the user's wrong-PIN budget, failing closed;
        // the settle is awaited, so a short-lived command leaves no slot held.
        const gated = c.mpf.pinGate({ awaitSettle: true }).around(id, async (verdict) => {
          const o = await c.mpf.submitPin(id, { wallet_pin: walletPin });
          verdict.wrong = o?.outcome === 'pin_rejected';
          return o;
        });
        const outcome = await within(gated, `(the PIN may still be confirmed: see \`mpf swap status ${id}\`)`);
        if (!outcome) throw new Error('the swap gave no outcome for the PIN');
        return outcome;
      },
      cancelSwap: (id, reason) => notCancellable(c.mpf.cancelSwap(id, reason)),
      createLink: async (body) => {
        noteGatewayPublicUrl(c.env);
        return (await within(c.mpf.createLink(body), `(the link paylink-${body.txn_merchant_ref} may have been created: see \`mpf link status paylink-${body.txn_merchant_ref}\`)`)).link;
      },
      getLink: (id) => within(c.mpf.getLink(id)),
      cancelLink: (id, reason) => notCancellable(c.mpf.cancelLink(id, reason)),
      listFlows: (kind, filter) => c.mpf.listFlows(kind, filter),
      listCategories: () => within(c.mpf.listCategories()),
      listReconciliations: (kind, filter) => c.mpf.listFlows(kind ?? 'any', { ...filter, state: 'needs_reconciliation' }),
      listEvents: (filter) => c.mpf.listEvents(filter),
      getEvent: (id) => c.mpf.getEvent(id),
      redeliverEvent: (id, endpoint) => c.mpf.redeliverEvent(id, endpoint !== undefined ? { endpoint } : {}),
    });
  }, waitSeconds));
}

/**
 * Temporal refused the shell's token (UNAUTHENTICATED: none, expired, not accepted): for a person
 * at the CLI that is not "try again shortly" but "sign in", with the server's reason (which names
 * what is wrong, never the token).
 */
async function personRefusalSaid<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { TemporalCredentialsRefusedError } = require('../client/errors') as typeof ClientErrors;
    if (!(err instanceof TemporalCredentialsRefusedError)) throw err;
    throw new Error(
      `Temporal refused this shell's credentials: ${err.reason.split('\n')[0]!.slice(0, 400)}; sign in (mpf cluster login, then source cluster.env again) or set TEMPORAL_API_KEY to a person's access token`,
      { cause: err },
    );
  }
}

function gatewayFace(url: string, waitSeconds: number): Face {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('../../http-client') as typeof HttpClient;
  const deadlineMs = (waitSeconds + 5) * 1000;
  // The backend routes take the API key; the operator routes the operator's credential (by the
  // rule of credentials.ts). Each is read when a command first needs it, before anything is sent.
  let backend: { gw: MpfGateway; credential: GatewayCredential } | undefined;
  let operator: { gw: MpfGateway; credential: GatewayCredential } | undefined;
  const gwClient = (): MpfGateway => {
    if (!backend) {
      const credential = gatewayCredentialOf(requireApiKey());
      backend = { gw: gatewayClientFor(url, credential, deadlineMs), credential };
    }
    return backend.gw;
  };
  const admin = () => {
    if (!operator) {
      const credential = requireOperatorCredential('the operator routes (mpf reconcile list)');
      operator = { gw: gatewayClientFor(url, credential, deadlineMs), credential };
    }
    return operator;
  };
  const where = `the gateway at ${new URL(url).origin}`;
  /** The gateway's refusal in one line naming the role or field; a 409 not_cancellable with its view. */
  const said = async <V>(p: Promise<V>, credential?: GatewayCredential): Promise<V> =>
    p.catch((err: unknown) => {
      if (!(err instanceof http.MpfApiError)) throw err;
      const e = err as HttpApiError & { body?: { swap?: { state: string }; link?: { state: string } } };
      if (e.code === 'not_cancellable') throw new NotCancellableFace(e.body?.swap ?? e.body?.link ?? { state: 'not cancellable' });
      // Refused: say which credential was sent (the operator's, or the backend routes' key).
      const sent = credential ?? backend?.credential;
      const hint = sent ? credentialHint(sent, e.status) : '';
      throw new Error(`${where} answered ${e.status} ${e.code}: ${e.message}${hint}`);
    });
  const query = (filter: Record<string, unknown>) => filter as Parameters<MpfGateway['listSwaps']>[0];
  return {
    where,
    startSwap: async (body) => {
      const s = await said(gwClient().startSwap(body));
      const { pin_url, pin_token, ...swap } = s;
      return { swap: swap as unknown as SwapView, pin_url, pin_token };
    },
    getSwap: async (id) => (await said(gwClient().getSwap(id))) as unknown as SwapView,
    submitPin: async (id, walletPin, pinToken) => {
      if (!pinToken) throw new Error(`--pin-token-file: is required through ${where}: a PIN is authorised by the swap's pin_token (the start's answer), never by an API key`);
      return (await said(gwClient().submitPin(id, pinToken, walletPin))) as unknown as PinOutcome;
    },
    cancelSwap: async (id, reason) => (await said(gwClient().cancelSwap(id, { reason }))) as unknown as SwapView,
    createLink: async (body) => (await said(gwClient().createLink(body as Parameters<MpfGateway["createLink"]>[0]))) as unknown as LinkView,
    getLink: async (id) => (await said(gwClient().getLink(id))) as unknown as LinkView,
    cancelLink: async (id, reason) => (await said(gwClient().cancelLink(id, { reason }))) as unknown as LinkView,
    listFlows: async (kind, filter) => {
      if (kind === 'swap') return (await said(gwClient().listSwaps(query(filter)))) as unknown as FlowPage;
      if (kind === 'payment_link') return (await said(gwClient().listLinks(query(filter)))) as unknown as FlowPage;
      throw new Error(`${where}: list swaps and payment links one kind at a time (--kind swap or --kind payment_link)`);
    },
    listCategories: async () => (await said(gwClient().categories())) as unknown as CategoriesResult,
    listReconciliations: async (kind, filter) => {
      const { gw: a, credential } = admin();
      return (await said(a.listReconciliations({ ...query(filter), ...(kind ? { kind } : {}) }), credential)) as unknown as FlowPage;
    },
    listEvents: async (filter) => (await said(gwClient().listEvents(filter as Parameters<MpfGateway['listEvents']>[0]))) as unknown as EventPage,
    getEvent: async (id) => (await said(gwClient().getEvent(id))) as unknown as EventDetail,
    redeliverEvent: async (id, endpoint) => (await said(gwClient().redeliverEvent(id, endpoint !== undefined ? { endpoint } : {}))) as unknown as Redelivery,
  };
}
