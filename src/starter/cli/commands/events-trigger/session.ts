/**
 * One run of `mpf events trigger <type>`: the gateway (the typed HTTP client, with the CLI's API
 * key), the simulator's control API (loopback only: never the live provider), the references of
 * the flow it drives, the steps it took, the waits, and the changes it made on the simulator —
 * every one scoped to its own transaction, and undone at the end.
 *
 * Before anything moves money (a PIN, a payment), it checks that the flow's provider calls reached
 * this simulator: a gateway whose worker talks to another provider is refused there.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliSetting } from '../../../../config/cli-env';
import { ConfigError, isLoopbackUrl, loadEnv, requireKeys } from '../../../../config/env';
import { connectClient, temporalTargetFromEnv } from '../../../../temporal/connection';
import { createMpfClient, type LinkView, MpfApiError, type MpfGateway, type PinOutcome, type SwapView } from '../../../../http-client';
import type * as ControlClient from '../../../../simulator/control-client';
import type { FaultRuleInput } from '../../../../simulator/faults';
import type * as SimulatorOptions from '../../../../simulator/options';
import { retryNotice } from '../../retry-notice';

export type FlowKind = 'swap' | 'payment_link';
export type FlowView = SwapView | LinkView;
type FlowEvent = NonNullable<FlowView['events']>[number];

export interface TriggerOptions {
  /** Seconds the whole run may take. */
  timeout: number;
  simUrl?: string;
}

/** The swap started for a trigger: its view and the pin_token that authorises its PIN (never printed). */
export interface TriggerSwap {
  view: SwapView;
  pinToken: string | undefined;
}

/** What a wait watches besides the event: `check` may throw a clearer error early; `hint` ends a timeout's message. */
export interface WaitOptions {
  check?: (view: FlowView) => void;
  hint?: string;
}

const POLL_MS = 500;

/** The simulator's control API: --sim-url, else MPF_SIMULATOR_URL, else MPS_BASE_URL; loopback only. */
function simulatorControl(simUrl: string | undefined): { url: string; control: ControlClient.SimulatorControl } {
  const url = simUrl ?? cliSetting('MPF_SIMULATOR_URL') ?? loadEnv().MPS_BASE_URL;
  if (!url) throw new ConfigError("MPF_SIMULATOR_URL: is not set: give the simulator's address (--sim-url, MPF_SIMULATOR_URL or MPS_BASE_URL), e.g. http://127.0.0.1:8090");
  if (!isLoopbackUrl(url)) throw new ConfigError(`the simulator address ${new URL(url).host} is not loopback: mpf events trigger only drives flows against a local simulator, never the live provider`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createControlClient } = require('../../../../simulator/control-client') as typeof ControlClient;
  return { url, control: createControlClient(url) };
}

export class TriggerSession {
  /** The flow's own reference (txn_ref or txn_merchant_ref): every simulator change is scoped to it. */
  readonly ref: string;
  readonly userRef: string;
  readonly steps: string[] = [];
  readonly deadline: number;
  readonly gw: MpfGateway;
  readonly sim: ControlClient.SimulatorControl;
  /** Ends the waits and the calls still running (Ctrl-C, or the run is over). */
  readonly stop = new AbortController();
  private readonly where: string;
  /** Where the API key came from (MPF_API_KEY, MPF_API_KEY_FILE=/path, --api-key-file /path), for a refusal. */
  private readonly keyFrom: string;
  private readonly simHost: string;
  private readonly undo: Array<{ what: string; run: () => Promise<void> }> = [];

  constructor(
    readonly type: string,
    opts: TriggerOptions,
    gateway: { url: string; apiKey: string; from: string },
    private readonly say: (step: string) => void,
  ) {
    const suffix = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
    this.ref = `trigger-${type.replace(/[._]/g, '-')}-${suffix}`;
    this.userRef = `trigger-user-${suffix}`;
    this.deadline = Date.now() + opts.timeout * 1000;
    const sim = simulatorControl(opts.simUrl);
    this.sim = sim.control;
    this.simHost = new URL(sim.url).host;
    this.where = `the gateway at ${new URL(gateway.url).origin}`;
    this.keyFrom = gateway.from;
    this.gw = createMpfClient({ baseUrl: gateway.url, apiKey: gateway.apiKey, deadlineMs: opts.timeout * 1000, onRetry: retryNotice(this.where) });
  }

  step(text: string): void {
    this.steps.push(text);
    this.say(text);
  }

  /** The gateway's refusal in one line; a 403 names the role this type needs. */
  async call<T>(p: Promise<T>, what: string, role: 'backend' | 'operator' = 'backend'): Promise<T> {
    try {
      return await p;
    } catch (err) {
      if (!(err instanceof MpfApiError)) throw err;
      if (err.status === 403) {
        const key = role === 'operator' ? 'an operator key' : 'a key of role backend or operator';
        throw new Error(`${this.where} answered 403 ${err.code} to ${what}: mpf events trigger ${this.type} needs ${key} in ${this.keyFrom} (${err.message})`, { cause: err });
      }
      throw new Error(`${this.where} answered ${err.status} ${err.code} to ${what}: ${err.message}`, { cause: err });
    }
  }

  // ---- swaps -----------------------------------------------------------------------------------

  /**
   * Starts the swap (`suffix`: another swap of this session, txn_ref `<ref>-<suffix>`, outside the
   * session's scoped faults); one the provider refused (502 provider_failed) comes back with its view.
   */
  async startSwap(suffix?: string): Promise<TriggerSwap> {
    const txnRef = suffix ? `${this.ref}-${suffix}` : this.ref;
    const body = { user_ref: this.userRef, from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref: txnRef };
    let started: TriggerSwap;
    try {
      const { pin_token, pin_url: _pinUrl, ...view } = await this.gw.startSwap(body, { signal: this.stop.signal });
      started = { view: view as SwapView, pinToken: pin_token };
    } catch (err) {
      const failed = err instanceof MpfApiError && err.code === 'provider_failed' ? (err.body.swap as SwapView | undefined) : undefined;
      if (!failed) return this.call(Promise.reject(err), 'POST /v1/swaps');
      started = { view: failed, pinToken: undefined };
    }
    this.step(`started ${started.view.swap_id} (10 USD to NGN for ${this.userRef}): ${started.view.state}`);
    await this.ensureOnSimulator(started.view.swap_id, 'swap', txnRef);
    return started;
  }

  /** The simulator's wallet PIN of a user it has no own PIN for (its default), or a PIN it is not. */
  private walletPin(which: 'valid' | 'wrong'): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const valid = (require('../../../../simulator/options') as typeof SimulatorOptions).SIMULATOR_DEFAULT_PIN;
    if (which === 'valid') return valid;
    return [...valid].map((c) => (/\d/.test(c) ? String((Number(c) + 5) % 10) : 'x')).join('');
  }

  /** Sends the PIN through the PIN route (authorised by the swap's pin_token); never prints either. */
  sendPin(swap: TriggerSwap, which: 'valid' | 'wrong'): Promise<PinOutcome> {
    if (!swap.pinToken) throw new Error(`${swap.view.swap_id} is ${swap.view.state}: the gateway gave no pin_token`);
    return this.call(this.gw.submitPin(swap.view.swap_id, swap.pinToken, this.walletPin(which), { signal: this.stop.signal }), `the PIN of ${swap.view.swap_id}`);
  }

  async cancelSwap(swapId: string): Promise<void> {
    const view = await this.call(this.gw.cancelSwap(swapId, { reason: `mpf events trigger ${this.type}`, signal: this.stop.signal }), `the cancel of ${swapId}`);
    this.step(`cancelled ${swapId}: ${view.state}`);
  }

  // ---- payment links ---------------------------------------------------------------------------

  async createLink(): Promise<LinkView> {
    const body = {
      user_ref: this.userRef,
      txn_merchant_ref: this.ref,
      amount: 2500,
      full_name: 'Trigger Customer',
      email: 'customer@example.com',
      phone: '+2348000000000',
      redirect_url: 'https://example.com/mpf-events-trigger/return',
    };
    const link = await this.call(this.gw.createLink(body, { signal: this.stop.signal }), 'POST /v1/payment-links');
    this.step(`created ${link.link_id} (2500 ${link.currency}, payment_ref ${link.payment_ref ?? '-'}): ${link.state}`);
    await this.ensureOnSimulator(link.link_id, 'payment_link');
    return link;
  }

  async cancelLink(linkId: string): Promise<void> {
    const view = await this.call(this.gw.cancelLink(linkId, { reason: `mpf events trigger ${this.type}`, signal: this.stop.signal }), `the cancel of ${linkId}`);
    this.step(`cancelled ${linkId}: ${view.state}`);
  }

  /** The customer's outcome on the simulator's checkout (its control API): the provider then notifies the link. */
  async settleLink(link: LinkView, outcome: 'paid' | 'failed'): Promise<void> {
    const paymentRef = link.payment_ref;
    if (!paymentRef) throw new Error(`${link.link_id} has no payment_ref`);
    const r = outcome === 'paid' ? await this.sim.completeLink(paymentRef) : await this.sim.failLink(paymentRef);
    this.step(`the simulator's customer ${outcome === 'paid' ? 'paid' : 'failed to pay'} ${paymentRef}: ${r.state} (the provider notifies the link)`);
  }

  // ---- the simulator, scoped to this flow's reference ----------------------------------------

  /** The swap's confirmation window on the simulator, for this txn_ref only (removed at the end). */
  async shortWindow(seconds: number): Promise<void> {
    await this.sim.setConfig({ swapExpiresInSecondsFor: { [this.ref]: seconds } });
    this.undo.push({ what: `the window of ${this.ref}`, run: () => this.sim.setConfig({ swapExpiresInSecondsFor: { [this.ref]: null } }) });
    this.step(`the simulator gives ${this.ref} a ${seconds} s confirmation window (this swap only)`);
  }

  /** Fault rules for this flow's requests only (removed at the end). */
  async scopedFaults(rules: FaultRuleInput[], what: string): Promise<void> {
    await this.sim.setRefFaults(this.ref, rules);
    this.undo.push({ what: `the faults of ${this.ref}`, run: () => this.sim.clearRefFaults(this.ref) });
    this.step(`the simulator ${what} (a fault scoped to ${this.ref})`);
  }

  /**
   * The flow's provider calls must have reached this simulator (its ledger knows the reference);
   * otherwise the gateway's worker talks to another provider and nothing more is sent.
   */
  private async ensureOnSimulator(flowId: string, kind: FlowKind, ref = this.ref): Promise<void> {
    const { requests } = await this.sim.ledger({ ref });
    if (requests.length > 0) return;
    const cancel = kind === 'swap' ? this.gw.cancelSwap(flowId, { reason: 'mpf events trigger: not on the simulator' }) : this.gw.cancelLink(flowId, { reason: 'mpf events trigger: not on the simulator' });
    const cancelled = await cancel.then(
      () => `${flowId} was cancelled`,
      () => `${flowId} could not be cancelled`,
    );
    throw new Error(
      `${flowId} did not reach the simulator at ${this.simHost}: the gateway's worker uses another provider. mpf events trigger stops here, before any PIN or payment (${cancelled})`,
    );
  }

  /** Undoes every simulator change of this run (also after a failure); says what it could not undo. */
  async finish(): Promise<void> {
    this.stop.abort();
    for (const u of this.undo.splice(0).reverse()) {
      await u.run().catch((err: unknown) => process.stderr.write(`mpf: could not remove ${u.what} from the simulator: ${(err as Error).message}\n`));
    }
  }

  // ---- operators -------------------------------------------------------------------------------

  /**
   * Terminates the flow in Temporal, as an operator's break-glass Terminate in Temporal Web: with
   * the operator's own Temporal settings (TEMPORAL_ADDRESS, PAYLOAD_ENCRYPTION_KEYS, TLS and sign-in
   * where the cluster needs them), never through the gateway, which may not terminate.
   */
  async terminateInTemporal(flowId: string): Promise<void> {
    const env = loadEnv();
    if (!env.TEMPORAL_ADDRESS) {
      throw new ConfigError(
        `TEMPORAL_ADDRESS: is not set: mpf events trigger ${this.type} terminates a flow in Temporal, as an operator does in Temporal Web; ` +
          "give it the operator's Temporal settings (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, PAYLOAD_ENCRYPTION_KEYS, and TLS or sign-in where the cluster needs them)",
      );
    }
    const client = await connectClient(temporalTargetFromEnv(env), requireKeys(env));
    try {
      await client.workflow.getHandle(flowId).terminate(`mpf events trigger ${this.type}`);
    } finally {
      await client.connection.close();
    }
    this.step(`terminated ${flowId} in Temporal (an operator's break-glass Terminate); the workers carry it on to its end`);
  }

  /** Refuses early (nothing started) when the key may not use the operator routes. */
  async requireOperator(): Promise<void> {
    await this.call(this.gw.listReconciliations({ limit: 1 }, { signal: this.stop.signal }), 'GET /v1/admin/reconciliations (the operator route)', 'operator');
  }

  /** POST /v1/admin/flows/{flow_id}/resolve with the operator's key: the flow's audit record names that key. */
  async resolve(flowId: string, outcome: 'confirmed' | 'failed' | 'paid', providerReference: string, note: string): Promise<FlowView> {
    const key = randomUUID();
    const answer = await this.gw.http.POST('/v1/admin/flows/{flow_id}/resolve', {
      params: { path: { flow_id: flowId }, header: { 'idempotency-key': key } },
      body: { outcome, provider_reference: providerReference, note: `${note} (mpf events trigger ${this.type})` },
      signal: this.stop.signal,
    });
    if (!answer.response.ok) await this.call(Promise.reject(MpfApiError.from(answer.response, answer.error, key)), `the resolve of ${flowId} (the operator route)`, 'operator');
    const view = answer.data as FlowView;
    this.step(`resolved ${flowId} as ${outcome} through the operator route: ${view.state}`);
    return view;
  }

  // ---- waiting ---------------------------------------------------------------------------------

  view(kind: FlowKind, flowId: string): Promise<FlowView> {
    const p = kind === 'swap' ? this.gw.getSwap(flowId, { signal: this.stop.signal }) : this.gw.getLink(flowId, { signal: this.stop.signal });
    return this.call<FlowView>(p, `GET ${flowId}`);
  }

  /** Polls until the flow exists in `state` (bounded by --timeout); refuses when it is past it. */
  async waitForState(kind: FlowKind, flowId: string, state: string): Promise<void> {
    for (;;) {
      const view = await this.view(kind, flowId).catch(() => undefined); // not started yet: 404
      if (view?.state === state) return;
      if (view) throw new Error(`${flowId} is ${view.state}, no longer ${state}: ${view.reason ?? 'no reason given'}`);
      if (Date.now() >= this.deadline) throw new Error(`timed out waiting for ${flowId} to be ${state}; --timeout sets the wait`);
      await sleep(100, undefined, { signal: this.stop.signal });
    }
  }

  /** Polls the flow's view until it lists an event of `type` (bounded by --timeout). */
  async waitForEvent(kind: FlowKind, flowId: string, type: string, o: WaitOptions = {}): Promise<{ event: FlowEvent; view: FlowView }> {
    for (;;) {
      const view = await this.view(kind, flowId);
      const event = view.events?.find((e) => e.type === type);
      if (event) return { event, view };
      o.check?.(view);
      if (Date.now() >= this.deadline) {
        const reason = view.reason ? `: ${view.reason}` : '';
        throw new Error(`timed out waiting for ${type} from ${flowId} (it is ${view.state}${reason})${o.hint ? `; ${o.hint}` : ''}; --timeout sets the wait`);
      }
      await sleep(Math.min(POLL_MS, Math.max(0, this.deadline - Date.now())), undefined, { signal: this.stop.signal });
    }
  }
}
