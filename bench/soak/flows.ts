/**
 * The soak's flows, each a script driven through a gateway's HTTP API the way a merchant's backend
 * and its users drive it: swaps (right PIN; wrong then right; three wrong; no PIN → expiry;
 * cancel) and payment links (paid and failed at the simulator, abandoned at the checkout and left
 * to expire, left to expire, cancelled). Every call goes to the flow's home gateway (round robin),
 * through the project's typed HTTP client (src/http-client), and fails over to the next one while a
 * gateway is down; 503 / 504 answers are waited out. A script only asks; what the flow ends as is
 * read from its view (and checked by verify.ts).
 */
import { type GatewayClient, pinTokenHeaders } from '../../src/http-client';
import { linkWorkflowId, swapWorkflowId } from '../../src/workflows/messages';
import { SIMULATOR_DEFAULT_PIN } from '../../src/simulator/options';
import type { SimulatorControl } from '../../src/simulator/control-client';
import { answerOf, testGatewayClient } from '../../test/helpers/http';
import { call, Rng, sleep, type Answer } from './http';

export const SWAP_SCRIPTS = ['right', 'wrong_then_right', 'three_wrong', 'none', 'cancel'] as const;
export const LINK_SCRIPTS = ['paid', 'failed', 'abandoned', 'expired', 'cancelled'] as const;
export type SwapScript = (typeof SWAP_SCRIPTS)[number];
export type LinkScript = (typeof LINK_SCRIPTS)[number];

/** Where a script's flow ends (needs_reconciliation waits for an operator; `reconciled` once one resolved it). */
export const SWAP_TERMINAL = new Set(['confirmed', 'expired', 'cancelled', 'failed', 'needs_reconciliation', 'reconciled']);
export const LINK_TERMINAL = new Set(['paid', 'failed', 'expired', 'cancelled', 'needs_reconciliation', 'reconciled']);

/** The simulator's PIN for users it has no PIN configured for (its defaultPin). */
export const RIGHT_PIN = SIMULATOR_DEFAULT_PIN;
export const WRONG_PIN = '9876';

const PINS: Record<SwapScript, string[]> = {
  right: [RIGHT_PIN],
  wrong_then_right: [WRONG_PIN, RIGHT_PIN],
  three_wrong: [WRONG_PIN, WRONG_PIN, WRONG_PIN],
  none: [],
  cancel: [],
};

export interface Flow {
  index: number;
  /** The soak's phase that drove it: chaos (the default soak), incident-without / incident-with, release. */
  phase: string;
  kind: 'swap' | 'link';
  script: SwapScript | LinkScript;
  ref: string;
  /** The workflow id (swap-<ref> / paylink-<ref>). */
  id: string;
  /** Index of the home gateway. */
  gateway: number;
  /** The start's answer: an HTTP status, or 'error' when no gateway answered. */
  startAnswer?: number | 'error';
  pinToken?: string;
  paymentRef?: string;
  /** When the script's decisive PIN was first sent, and when the flow's end was seen after it. */
  pinAt?: number;
  outcomeAt?: number;
  /** Set while the flow's start or PIN request is outstanding (the chaos looks for provider POSTs of these). */
  busy?: 'start' | 'pin';
  /** The terminal state the driver saw (verify.ts reads the view again). */
  seenState?: string;
  notes: string[];
  done: boolean;
}

export interface FlowEnv {
  gatewayUrls: string[];
  apiKey: string;
  sim: SimulatorControl;
  checkoutUrl: string;
  /** Flows give up (and count as lost unless verify finds them ended) after this time. */
  deadline: number;
  stopping: () => boolean;
  seed: number;
}

/** One flow of a plan: its reference (soak-<tag>-s0001 / -l0001), workflow id and home gateway. */
export function makeFlow(o: { index: number; kind: 'swap' | 'link'; script: SwapScript | LinkScript; tag: string; gateways: number; phase: string }): Flow {
  const ref = `soak-${o.tag}-${o.kind === 'swap' ? 's' : 'l'}${String(o.index).padStart(4, '0')}`;
  return {
    index: o.index,
    phase: o.phase,
    kind: o.kind,
    script: o.script,
    ref,
    id: o.kind === 'swap' ? swapWorkflowId(ref) : linkWorkflowId(ref),
    gateway: o.index % o.gateways,
    notes: [],
    done: false,
  };
}

export function planFlows(o: { swaps: number; links: number; gateways: number; rng: Rng; tag: string; phase?: string }): Flow[] {
  const scripts = [
    ...Array.from({ length: o.swaps }, (_, i) => ({ kind: 'swap' as const, script: SWAP_SCRIPTS[i % SWAP_SCRIPTS.length]! })),
    ...Array.from({ length: o.links }, (_, i) => ({ kind: 'link' as const, script: LINK_SCRIPTS[i % LINK_SCRIPTS.length]! })),
  ];
  return o.rng.shuffle(scripts).map((s, index) => makeFlow({ index, ...s, tag: o.tag, gateways: o.gateways, phase: o.phase ?? 'chaos' }));
}

const transportError = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 120);

/** Each gateway's typed client, with the soak's API key and each call bounded to 75 s. */
const clients = new Map<string, GatewayClient>();
function clientOf(env: FlowEnv, url: string): GatewayClient {
  let client = clients.get(url);
  if (!client) clients.set(url, (client = testGatewayClient(url, { apiKey: env.apiKey, timeoutMs: 75_000 })));
  return client;
}

/**
 * One API call (`send` on a gateway's typed client; `what` names it in errors) from the flow's
 * home gateway on; a gateway that does not answer (killed, restarting) is skipped for the next
 * one. Throws when none answered.
 */
export async function api(env: FlowEnv, f: Flow, what: string, send: (gateway: GatewayClient) => Promise<{ response: Response }>): Promise<Answer> {
  let last: unknown;
  const n = env.gatewayUrls.length;
  for (let k = 0; k < n * 2; k++) {
    const url = env.gatewayUrls[(f.gateway + k) % n]!;
    try {
      return answerOf(await send(clientOf(env, url)));
    } catch (e) {
      last = e;
      await sleep(200);
    }
  }
  throw new Error(`no gateway answered ${what}: ${transportError(last)}`);
}

const timeLeft = (env: FlowEnv) => env.deadline - Date.now();
const retryAfterMs = (a: Answer) => Math.min(10_000, 1_000 * (Number(a.headers['retry-after']) || 1));

/** The flow's current view, or undefined when none could be read now. */
export async function readView(env: FlowEnv, f: Flow): Promise<Record<string, unknown> | undefined> {
  try {
    const a = await api(env, f, `GET ${f.id}`, (gw) =>
      f.kind === 'swap' ? gw.GET('/v1/swaps/{swap_id}', { params: { path: { swap_id: f.id } } }) : gw.GET('/v1/payment-links/{link_id}', { params: { path: { link_id: f.id } } }),
    );
    return a.status === 200 && a.json ? (a.json as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const isTerminal = (f: Flow, state: unknown) => typeof state === 'string' && (f.kind === 'swap' ? SWAP_TERMINAL : LINK_TERMINAL).has(state);

/** Starts the flow (POST, retried on another gateway while none answers or Temporal is down). */
export async function start(env: FlowEnv, f: Flow, rng: Rng): Promise<Record<string, unknown> | undefined> {
  const amount = f.kind === 'swap' ? rng.int(100, 99_999) / 100 : rng.int(1_000, 500_000);
  const send = (gw: GatewayClient) =>
    f.kind === 'swap'
      ? gw.POST('/v1/swaps', { body: { user_ref: `${f.ref}-user`, from_currency: 'USD', to_currency: 'NGN', amount, txn_ref: f.ref } })
      : gw.POST('/v1/payment-links', {
          // The generated request type requires the fields the gateway defaults: sent with those defaults.
          body: {
            user_ref: `${f.ref}-customer`,
            txn_merchant_ref: f.ref,
            amount,
            currency: 'NGN',
            full_name: 'Ada Obi',
            email: 'ada@example.com',
            phone: '+2348012345678',
            chain: '',
            payment_method: 'HOSTED_PAY_LINK',
            payment_channel: 'BANK_TRANSFER',
            redirect_url: 'http://127.0.0.1:9/thanks',
          },
        });
  let refusedAs = '';
  while (timeLeft(env) > 0 && !env.stopping()) {
    let a: Answer;
    try {
      f.busy = 'start';
      a = await api(env, f, `start ${f.id}`, send);
    } catch (e) {
      f.notes.push(`start: ${transportError(e)}`);
      await sleep(1_000);
      continue;
    } finally {
      f.busy = undefined;
    }
    f.startAnswer = a.status;
    if (a.status === 201) {
      f.pinToken = a.json?.pin_token as string | undefined;
      return a.json as Record<string, unknown>;
    }
    if (a.status === 503) {
      refusedAs = String(a.json?.error ?? 'unavailable');
      await sleep(retryAfterMs(a));
      continue; // Temporal or the workers are down: ask again (a started flow answers 409)
    }
    if (a.status === 502) return (a.json?.swap ?? a.json?.link) as Record<string, unknown>;
    if (a.status === 409) {
      // An earlier attempt started it (its answer was lost): the pin_token went with that answer.
      f.notes.push('start answer lost (409 on retry)');
      return (a.json?.swap ?? a.json?.link) as Record<string, unknown> | undefined;
    }
    if (a.status === 504) {
      f.notes.push('start pending (504)');
      return undefined;
    }
    f.notes.push(`start refused ${a.status}: ${a.text.slice(0, 200)}`);
    return undefined;
  }
  f.startAnswer ??= 'error';
  // Every answer a refusal until the soak's time was up: said, so a flow the verify counts lost says why.
  if (f.startAnswer === 503) f.notes.push(`start refused 503 ${refusedAs} until the soak's time was up`);
  return undefined;
}

/** Polls the view until the flow ends or the soak's time is up. */
export async function awaitEnd(env: FlowEnv, f: Flow): Promise<void> {
  while (timeLeft(env) > 0 && !env.stopping()) {
    const v = await readView(env, f);
    if (v && isTerminal(f, v.state)) {
      f.seenState = v.state as string;
      if (f.pinAt !== undefined) f.outcomeAt ??= Date.now();
      return;
    }
    await sleep(1_000);
  }
}

async function runSwap(env: FlowEnv, f: Flow, rng: Rng): Promise<void> {
  const started = await start(env, f, rng);
  if (started && isTerminal(f, started.state)) return awaitEnd(env, f);
  return continueSwap(env, f, rng);
}

/** A started swap's script from there on: its cancel or PINs, then its end. */
export async function continueSwap(env: FlowEnv, f: Flow, rng: Rng): Promise<void> {
  const script = f.script as SwapScript;
  if (script === 'cancel') {
    await sleep(rng.int(0, 1_500));
    while (timeLeft(env) > 0 && !env.stopping()) {
      try {
        const a = await api(env, f, `cancel ${f.id}`, (gw) =>
          gw.POST('/v1/swaps/{swap_id}/cancel', { params: { path: { swap_id: f.id } }, body: { reason: 'soak: the user changed their mind' } }),
        );
        if (a.status === 200 || a.status === 409 || a.status === 404) break;
        await sleep(a.status === 503 ? retryAfterMs(a) : 1_000);
      } catch {
        await sleep(1_000);
      }
    }
    return awaitEnd(env, f);
  }
  const pins = PINS[script];
  if (pins.length === 0) return awaitEnd(env, f);
  if (!f.pinToken) {
    f.notes.push('no pin_token (start answer lost): the PIN script cannot run');
    return awaitEnd(env, f);
  }
  await sleep(rng.int(0, 2_000)); // the user opens the PIN page
  while (timeLeft(env) > 0 && !env.stopping()) {
    const v = await readView(env, f);
    if (!v) {
      await sleep(1_000);
      continue;
    }
    if (isTerminal(f, v.state)) {
      f.seenState = v.state as string;
      if (f.pinAt !== undefined) f.outcomeAt ??= Date.now();
      return;
    }
    const used = Number(v.pin_attempts_used ?? 0);
    if (v.state !== 'awaiting_pin' || used >= pins.length) {
      await sleep(500);
      continue;
    }
    if (used === pins.length - 1) f.pinAt ??= Date.now();
    let a: Answer;
    try {
      f.busy = 'pin';
      const [wallet_pin, pinToken] = [pins[used]!, f.pinToken];
      a = await api(env, f, `PIN ${f.id}`, (gw) => gw.POST('/v1/swaps/{swap_id}/pin', { params: { path: { swap_id: f.id } }, body: { wallet_pin }, headers: pinTokenHeaders(pinToken) }));
    } catch {
      await sleep(1_000);
      continue;
    } finally {
      f.busy = undefined;
    }
    if (a.status === 200 && isTerminal(f, a.json?.state)) {
      f.seenState = a.json.state as string;
      if (f.pinAt !== undefined) f.outcomeAt ??= Date.now();
      return;
    }
    if (a.status === 200) continue;
    if (a.status === 410) return awaitEnd(env, f);
    await sleep(a.status === 429 || a.status === 503 ? retryAfterMs(a) : 500);
  }
}

async function runLink(env: FlowEnv, f: Flow, rng: Rng): Promise<void> {
  const started = await start(env, f, rng);
  f.paymentRef = started?.payment_ref as string | undefined;
  if (started && isTerminal(f, started.state)) return awaitEnd(env, f);
  // The payment_ref of a link whose creation answer was lost: from its view.
  while (!f.paymentRef && timeLeft(env) > 0 && !env.stopping()) {
    const v = await readView(env, f);
    if (v && isTerminal(f, v.state)) return awaitEnd(env, f);
    f.paymentRef = v?.payment_ref as string | undefined;
    if (!f.paymentRef) await sleep(1_000);
  }
  const script = f.script as LinkScript;
  await sleep(rng.int(500, 3_000)); // the customer opens the link
  try {
    if (script === 'paid' && f.paymentRef) await env.sim.completeLink(f.paymentRef);
    else if (script === 'failed' && f.paymentRef) await env.sim.failLink(f.paymentRef);
    else if (script === 'abandoned' && f.paymentRef) {
      const a = await call('POST', `${env.checkoutUrl}/pay`, { form: { payment_ref: f.paymentRef, action: 'abandon' } });
      if (a.status !== 200) f.notes.push(`abandon at the checkout answered ${a.status}`);
    } else if (script === 'cancelled') {
      while (timeLeft(env) > 0 && !env.stopping()) {
        const a = await api(env, f, `cancel ${f.id}`, (gw) =>
          gw.POST('/v1/payment-links/{link_id}/cancel', { params: { path: { link_id: f.id } }, body: { reason: 'soak: the order was withdrawn' } }),
        ).catch(() => undefined);
        if (a && (a.status === 200 || a.status === 409 || a.status === 404)) break;
        await sleep(a?.status === 503 ? retryAfterMs(a) : 1_000);
      }
    }
  } catch (e) {
    f.notes.push(`${script}: ${transportError(e)}`);
  }
  return awaitEnd(env, f);
}

export async function runFlow(env: FlowEnv, f: Flow): Promise<void> {
  const rng = new Rng((env.seed ^ Math.imul(f.index + 1, 0x9e3779b1)) >>> 0);
  try {
    if (f.kind === 'swap') await runSwap(env, f, rng);
    else await runLink(env, f, rng);
  } catch (e) {
    f.notes.push(`driver: ${transportError(e)}`);
  } finally {
    f.done = true;
  }
}

/** Runs every flow, `concurrency` at a time; `onStarted` counts flows begun (the chaos clock). */
export async function runFlows(env: FlowEnv, flows: Flow[], concurrency: number, onStarted: (n: number) => void): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < flows.length && !env.stopping() && timeLeft(env) > 0) {
      const f = flows[next++]!;
      onStarted(next);
      await runFlow(env, f);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, flows.length) }, lane));
}
