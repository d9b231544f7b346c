/**
 * Delivers the simulator's notifications (payload: SimulatorNotification of the contract) to a
 * notification_url with undici, retrying on the configured schedule until a 2xx answer.
 * Loopback only: a non-loopback URL is refused before any connection (and the connector refuses
 * non-loopback hosts too) and the refusal is written to the ledger. The only exception is a host
 * name listed in the start-time option notificationAllowHosts (e.g. a compose service name).
 *
 * Notification faults (read when a notification is sent): `delayMs` delays the first attempt,
 * `duplicate: n` delivers n extra copies (same notification_id) after the original,
 * `reorder: true` delivers a stale 'pending' notification (lower sequence) after the final one.
 * Each delivery waits for the previous one to end, so the order of arrival is the order above.
 */
import { Agent, buildConnector, request } from 'undici';
import type { SimulatorNotification } from '../contract/provider';
import type { FaultEngine } from './faults';
import type { Ledger } from './ledger';
import { Lifecycle } from './lifecycle';
import type { SimConfig } from './options';

const LOOPBACK_HOST = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[?::1\]?)$/i;
const ATTEMPT_TIMEOUT_MS = 10_000;

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOST.test(hostname);
}

/** Whether notifications may be delivered to `hostname`: loopback, or listed explicitly. */
export function notificationHostAllowed(hostname: string, allowHosts: readonly string[]): boolean {
  return isLoopbackHost(hostname) || allowHosts.includes(hostname.toLowerCase());
}

function allowedUrl(url: string, allowHosts: readonly string[]): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && notificationHostAllowed(u.hostname, allowHosts);
  } catch {
    return false;
  }
}

export interface NotificationJob {
  url: string;
  /** txn_ref or txn_merchant_ref, for the ledger. */
  ref: string;
  paymentRef: string;
  final: SimulatorNotification;
  /** The stale 'pending' notification delivered after the final one under the reorder fault. */
  stale: SimulatorNotification;
}

export class Notifier {
  private readonly life = new Lifecycle();
  private readonly aborts = new Set<AbortController>();
  private epoch = 0;
  private readonly agent: Agent;

  constructor(
    private readonly config: SimConfig,
    private readonly ledger: Ledger,
    private readonly faults: FaultEngine,
  ) {
    const connect = buildConnector({ timeout: ATTEMPT_TIMEOUT_MS });
    this.agent = new Agent({
      connect: (opts, cb) => {
        if (!notificationHostAllowed(opts.hostname, config.notificationAllowHosts)) {
          cb(new Error(`refusing to connect to non-loopback host ${opts.hostname}`), null);
        } else connect(opts, cb);
      },
    });
  }

  /** Starts delivering in the background; never throws. */
  notify(job: NotificationJob): void {
    void this.run(job, this.epoch).catch(() => undefined);
  }

  private async run(job: NotificationJob, epoch: number): Promise<void> {
    if (!allowedUrl(job.url, this.config.notificationAllowHosts)) {
      let host = '(invalid URL)';
      try {
        host = new URL(job.url).host;
      } catch {
        /* keep the placeholder */
      }
      this.ledger.recordEffect('notification.refused', job.ref, job.paymentRef, {
        notification_id: job.final.data.notification_id,
        event: job.final.event,
        host,
        reason: 'the simulator delivers notifications to loopback addresses only',
      });
      return;
    }
    const nf = { ...this.faults.notificationFaults() };
    const copies = 1 + (nf.duplicate ?? 0);
    for (let copy = 0; copy < copies; copy++) {
      const ok = await this.deliver(job, job.final, { copy }, copy === 0 ? (nf.delayMs ?? 0) : 0, epoch);
      if (!ok && this.epoch !== epoch) return;
    }
    if (nf.reorder) await this.deliver(job, job.stale, { copy: 0, stale: true }, 0, epoch);
  }

  /** One notification through the retry schedule; true once a 2xx was received. */
  private async deliver(
    job: NotificationJob,
    payload: SimulatorNotification,
    meta: Record<string, unknown>,
    extraDelayMs: number,
    epoch: number,
  ): Promise<boolean> {
    const schedule = [...this.config.notificationRetryScheduleMs];
    const body = JSON.stringify(payload);
    const base = { notification_id: payload.data.notification_id, event: payload.event, status: payload.data.status, ...meta };
    for (let i = 0; i < schedule.length; i++) {
      const wait = schedule[i] + (i === 0 ? extraDelayMs : 0);
      if (wait > 0 && !(await this.life.sleep(wait))) return false;
      if (this.epoch !== epoch || this.life.closed) return false;
      const attempt = i + 1;
      const last = attempt === schedule.length;
      const ac = new AbortController();
      this.aborts.add(ac);
      try {
        const res = await request(job.url, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'user-agent': 'mps-simulator', 'x-notification-id': payload.data.notification_id },
          dispatcher: this.agent,
          signal: ac.signal,
          headersTimeout: ATTEMPT_TIMEOUT_MS,
          bodyTimeout: ATTEMPT_TIMEOUT_MS,
        });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          this.ledger.recordEffect('notification.delivered', job.ref, job.paymentRef, { ...base, attempt, http_status: res.statusCode });
          return true;
        }
        this.ledger.recordEffect('notification.failed_attempt', job.ref, job.paymentRef, {
          ...base,
          attempt,
          http_status: res.statusCode,
          gave_up: last,
        });
      } catch (e) {
        if (this.epoch !== epoch || this.life.closed) return false;
        this.ledger.recordEffect('notification.failed_attempt', job.ref, job.paymentRef, {
          ...base,
          attempt,
          error: (e as Error).message,
          gave_up: last,
        });
      } finally {
        this.aborts.delete(ac);
      }
    }
    return false;
  }

  /** Cancels every pending and in-flight delivery (POST /_sim/reset). */
  reset(): void {
    this.epoch++;
    this.life.cancelAll();
    for (const ac of this.aborts) ac.abort();
    this.aborts.clear();
  }

  async close(): Promise<void> {
    this.epoch++;
    this.life.close();
    for (const ac of this.aborts) ac.abort();
    this.aborts.clear();
    await this.agent.destroy().catch(() => undefined);
  }
}
