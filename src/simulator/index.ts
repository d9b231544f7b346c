/**
 * The provider simulator: the provider API (provider-api.md's endpoints) plus the /_sim control
 * API on one port, and the hosted checkout on another. Embeddable in tests (startSimulator) and
 * run by `mpf simulator` (main.ts). Nothing here dials a non-loopback address.
 */
import type { AddressInfo } from 'node:net';
import { buildCheckoutApp } from './checkout';
import type { SimContext } from './context';
import { registerControl } from './control';
import { FaultEngine } from './faults';
import { Ledger } from './ledger';
import { Lifecycle } from './lifecycle';
import { Notifier } from './notifier';
import { type SimulatorOptions, resolveConfig } from './options';
import { SimStateFile } from './persistence';
import { buildProviderApp } from './server';
import { SimState } from './state';

export type { SimulatorOptions } from './options';
export { SIMULATOR_DEFAULT_CREDENTIALS, SIMULATOR_DEFAULT_PIN } from './options';
export type { FaultRuleInput as FaultRule, FaultSetInput as FaultSet, NotificationFaults, FaultKind } from './faults';
export type { RequestEntry, EffectEntry, EffectKind, EndpointKey, LedgerFilter } from './ledger';
export { CATEGORIES } from './categories-data';
export { MESSAGES } from './server';

export interface RunningSimulator {
  baseUrl: string; // provider API + control API, e.g. http://127.0.0.1:PORT
  checkoutUrl: string; // hosted checkout host, e.g. http://127.0.0.1:PORT2
  close(): Promise<void>; // stops both servers, cancels pending notification timers
  /** With a state file: what it held at start (undefined: no file yet, or no state file). */
  restored?: { swaps: number; links: number };
}

const urlOf = (host: string, port: number): string => {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}`;
};

export async function startSimulator(opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const config = resolveConfig(opts);
  const logger = opts.logger ?? false;
  const ledger = new Ledger();
  const faults = new FaultEngine(config.seed);
  const notifier = new Notifier(config, ledger, faults);
  const state = new SimState(config, ledger, notifier);
  const stateFile = opts.stateFile ? new SimStateFile(opts.stateFile, state, ledger) : undefined;
  const restored = stateFile?.load();
  // A committed effect (a swap initialised or confirmed, a link created or paid) is on disk before
  // the provider answers, as a provider's database commit would be; a request record follows soon.
  if (stateFile) ledger.onChange = (kind) => (kind === 'effect' ? stateFile.saveNow() : stateFile.schedule());
  const life = new Lifecycle();
  const ctx: SimContext = { config, ledger, faults, notifier, state, life, checkoutBase: '' };

  const checkout = buildCheckoutApp(ctx, logger);
  const provider = buildProviderApp(ctx, logger);
  registerControl(provider, ctx);

  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    life.close();
    await notifier.close();
    await Promise.allSettled([provider.close(), checkout.close()]);
    stateFile?.saveNow();
  };

  try {
    await checkout.listen({ host: config.host, port: opts.checkoutPort ?? 0 });
    const checkoutUrl = urlOf(config.host, (checkout.server.address() as AddressInfo).port);
    ctx.checkoutBase = (opts.checkoutPublicUrl ?? checkoutUrl).replace(/\/+$/, '');
    await provider.listen({ host: config.host, port: opts.port ?? 0 });
    const baseUrl = urlOf(config.host, (provider.server.address() as AddressInfo).port);
    return { baseUrl, checkoutUrl, close, ...(restored ? { restored } : {}) };
  } catch (e) {
    await close();
    throw e;
  }
}
