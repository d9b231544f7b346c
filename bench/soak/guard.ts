/**
 * The soak's view of the provider guard: `GET /v1/admin/provider` (an operator key) read every
 * half second from a gateway, each breaker's changes of state kept with the guard's own times
 * (`since`), and the thresholds in effect as the workers last reported them. The incident phase
 * prints these figures: when the confirm breaker opened, why, and when it closed again.
 */
import type { BreakerSettings, BreakerState, GuardView, MoneyClass } from '../../src/contract/provider-guard';
import { MONEY_CLASSES } from '../../src/contract/provider-guard';
import type { GatewayClient } from '../../src/http-client';
import { answerOf, testGatewayClient } from '../../test/helpers/http';
import { sleep } from './http';

export interface BreakerTransition {
  cls: MoneyClass;
  state: BreakerState;
  /** When the guard says it entered the state (ms). */
  at: number;
  reason?: string;
}

export class GuardWatch {
  readonly transitions: BreakerTransition[] = [];
  settings: BreakerSettings | undefined;
  readFailures = 0;
  private readonly clients: GatewayClient[];
  private readonly last = new Map<MoneyClass, string>();
  private stopped = false;
  private loop: Promise<void> | undefined;
  private next = 0;

  constructor(gatewayUrls: string[], operatorKey: string) {
    this.clients = gatewayUrls.map((url) => testGatewayClient(url, { apiKey: operatorKey, timeoutMs: 5_000 }));
  }

  /** One reading (from the next gateway that answers); undefined when none did. */
  async read(): Promise<GuardView | undefined> {
    for (let k = 0; k < this.clients.length; k++) {
      const gw = this.clients[this.next++ % this.clients.length]!;
      try {
        const a = answerOf(await gw.GET('/v1/admin/provider'));
        if (a.status === 200 && a.json?.breakers) return a.json as GuardView;
      } catch {
        /* the next gateway */
      }
    }
    this.readFailures++;
    return undefined;
  }

  private note(view: GuardView): void {
    this.settings = view.settings;
    for (const cls of MONEY_CLASSES) {
      const b = view.breakers[cls];
      const key = `${b.state}@${b.since}`;
      if (this.last.get(cls) === key) continue;
      const first = !this.last.has(cls);
      this.last.set(cls, key);
      // The first reading names the state it found, not a change; a closed breaker found is no news.
      if (first && b.state === 'closed') continue;
      this.transitions.push({ cls, state: b.state, at: Date.parse(b.since), ...(b.reason ? { reason: b.reason } : {}) });
    }
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const v = await this.read();
        if (v) this.note(v);
        await sleep(500);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** The transitions of `cls` at or after `since` (ms). */
  of(cls: MoneyClass, since: number): BreakerTransition[] {
    return this.transitions.filter((t) => t.cls === cls && t.at >= since);
  }

  /** Waits until every breaker is closed (a breaker opened by an earlier phase closes after its cool-down and probe). */
  async waitAllClosed(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      const v = await this.read();
      if (v) {
        this.note(v);
        if (!v.paused && MONEY_CLASSES.every((c) => v.breakers[c].state === 'closed')) return true;
      }
      await sleep(1_000);
    }
    return false;
  }
}
