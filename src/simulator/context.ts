/** What the simulator's servers share: configuration, ledger, faults, notifier, records, timers. */
import type { FaultEngine } from './faults';
import type { Ledger } from './ledger';
import type { Lifecycle } from './lifecycle';
import type { Notifier } from './notifier';
import type { SimConfig } from './options';
import type { SimState } from './state';

export interface SimContext {
  config: SimConfig;
  ledger: Ledger;
  faults: FaultEngine;
  notifier: Notifier;
  state: SimState;
  /** Timers of in-flight requests (latency, hang): cancelled on close only. */
  life: Lifecycle;
  /** Base of pay_link, e.g. http://127.0.0.1:PORT2 (set once the checkout server listens). */
  checkoutBase: string;
}

/** The provider's error envelope (our choice: the document does not show one). */
export function errorBody(message: string): { status: 'error'; message: string } {
  return { status: 'error', message };
}
