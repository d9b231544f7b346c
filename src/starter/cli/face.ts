/**
 * What the client commands (`mpf swap|link|categories|reconcile list`) run against: the gateway,
 * with an API key, or Temporal directly (the operators' mode, with the payload keys).
 *
 *  - Through the gateway when MPF_GATEWAY_URL is set: the key is MPF_API_KEY (or MPF_API_KEY_FILE,
 *    or `mpf --api-key-file <path>`), and the gateway's roles apply (a read_only key lists and
 *    reads and is refused a start with 403). The light HTTP client (src/http-client) retries
 *    429/503/504 and dropped connections with one Idempotency-Key per logical call.
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
import { cliSetting } from '../../config/cli-env';
import type * as Connect from './connect';
import { readOptionFile } from './options';

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
  redeliverEvent(eventId: string): Promise<Redelivery>;
}

export type EventDetail = MerchantEventDetail & { redeliveries: Redelivery[] };

/** A flow the command asked to cancel that can no longer be (with its view). */
export class NotCancellableFace extends Error {
  override name = 'NotCancellableError';
  constructor(readonly view: { state: string }) {
    super(`it is ${view.state}`);
  }
}

let apiKeyFileOption: string | undefined;

/** `mpf --api-key-file <path>` (the program's preAction hook sets it). */
export function setApiKeyFile(file: string | undefined): void {
  apiKeyFileOption = file;
}

/** The gateway and its key when MPF_GATEWAY_URL is set; undefined for Temporal-direct. */
export function gatewayTarget(): { url: string; apiKey: string } | undefined {
  const url = cliSetting('MPF_GATEWAY_URL');
  if (!url) return undefined;
  const apiKey = apiKeyFileOption ? readOptionFile('--api-key-file', apiKeyFileOption) : cliSetting('MPF_API_KEY');
  if (!apiKey) throw new Error('MPF_API_KEY: is required with MPF_GATEWAY_URL (or MPF_API_KEY_FILE, or --api-key-file): an API key of the role the command needs');
  return { url, apiKey };
}

/** Runs `fn` against the gateway (MPF_GATEWAY_URL) or Temporal; `waitSeconds` bounds a start's answer. */
export async function withFace<T>(waitSeconds: number, fn: (face: Face) => Promise<T>): Promise<T> {
  const target = gatewayTarget();
  if (target) return fn(gatewayFace(target, waitSeconds));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { withClient, answerWithin, noteGatewayPublicUrl } = require('./connect') as typeof Connect;
  return withClient(async (c) => {
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
      redeliverEvent: (id) => c.mpf.redeliverEvent(id),
    });
  }, waitSeconds);
}

function gatewayFace(target: { url: string; apiKey: string }, waitSeconds: number): Face {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('../../http-client') as typeof HttpClient;
  const gw: MpfGateway = http.createMpfClient({ baseUrl: target.url, apiKey: target.apiKey, deadlineMs: (waitSeconds + 5) * 1000 });
  const where = `the gateway at ${new URL(target.url).origin}`;
  /** The gateway's refusal in one line naming the role or field; a 409 not_cancellable with its view. */
  const said = async <V>(p: Promise<V>): Promise<V> =>
    p.catch((err: unknown) => {
      if (!(err instanceof http.MpfApiError)) throw err;
      const e = err as HttpApiError & { body?: { swap?: { state: string }; link?: { state: string } } };
      if (e.code === 'not_cancellable') throw new NotCancellableFace(e.body?.swap ?? e.body?.link ?? { state: 'not cancellable' });
      throw new Error(`${where} answered ${e.status} ${e.code}: ${e.message}`);
    });
  const query = (filter: Record<string, unknown>) => filter as Parameters<MpfGateway['listSwaps']>[0];
  return {
    where,
    startSwap: async (body) => {
      const s = await said(gw.startSwap(body));
      const { pin_url, pin_token, ...swap } = s;
      return { swap: swap as unknown as SwapView, pin_url, pin_token };
    },
    getSwap: async (id) => (await said(gw.getSwap(id))) as unknown as SwapView,
    submitPin: async (id, walletPin, pinToken) => {
      if (!pinToken) throw new Error(`--pin-token-file: is required through ${where}: a PIN is authorised by the swap's pin_token (the start's answer), never by an API key`);
      return (await said(gw.submitPin(id, pinToken, walletPin))) as unknown as PinOutcome;
    },
    cancelSwap: async (id, reason) => (await said(gw.cancelSwap(id, { reason }))) as unknown as SwapView,
    createLink: async (body) => (await said(gw.createLink(body as Parameters<MpfGateway["createLink"]>[0]))) as unknown as LinkView,
    getLink: async (id) => (await said(gw.getLink(id))) as unknown as LinkView,
    cancelLink: async (id, reason) => (await said(gw.cancelLink(id, { reason }))) as unknown as LinkView,
    listFlows: async (kind, filter) => {
      if (kind === 'swap') return (await said(gw.listSwaps(query(filter)))) as unknown as FlowPage;
      if (kind === 'payment_link') return (await said(gw.listLinks(query(filter)))) as unknown as FlowPage;
      throw new Error(`${where}: list swaps and payment links one kind at a time (--kind swap or --kind payment_link)`);
    },
    listCategories: async () => (await said(gw.categories())) as unknown as CategoriesResult,
    listReconciliations: async (kind, filter) => (await said(gw.listReconciliations({ ...query(filter), ...(kind ? { kind } : {}) }))) as unknown as FlowPage,
    listEvents: async (filter) => (await said(gw.listEvents(filter as Parameters<MpfGateway['listEvents']>[0]))) as unknown as EventPage,
    getEvent: async (id) => (await said(gw.getEvent(id))) as unknown as EventDetail,
    redeliverEvent: async (id) => (await said(gw.redeliverEvent(id))) as unknown as Redelivery,
  };
}
