/**
 * The notifications a flow received: every one kept, deduplicated by its key (retried and
 * duplicate deliveries only count), mapped tolerantly to an outcome by the contract module.
 * Workflow-safe (no I/O).
 */
import { compactNotificationPayload as keptPayload, mapNotificationOutcome } from '../contract/notifications';
import type { NotificationInput, NotificationRecord } from './messages';

/** Upper bound on distinct notifications kept per flow (history size guard). */
export const MAX_NOTIFICATIONS = 100;
export class NotificationBook {
  private readonly records: NotificationRecord[] = [];
  /** Distinct notifications beyond MAX_NOTIFICATIONS: acted on, not kept in the list. */
  overflow = 0;

  /**
   * Records a delivery. Returns the record when it is new (first delivery), undefined for a
   * duplicate. When the book is full a new notification is still returned (so a payment is never
   * dropped) but not kept in the list; the flow sets `applied` when it moves its state.
   */
  add(n: NotificationInput): NotificationRecord | undefined {
    const key = typeof n?.dedup_key === 'string' ? n.dedup_key.slice(0, 200) : '';
    if (!key) return undefined;
    const seen = this.records.find((r) => r.dedup_key === key);
    if (seen) {
      seen.deliveries += 1;
      return undefined;
    }
    const record: NotificationRecord = {
      dedup_key: key,
      received_at: typeof n.received_at === 'string' ? n.received_at : '',
      outcome: mapNotificationOutcome(n.payload),
      applied: false,
      deliveries: 1,
      payload: keptPayload(n.payload),
    };
    if (this.records.length >= MAX_NOTIFICATIONS) {
      this.overflow += 1;
      return record;
    }
    this.records.push(record);
    return record;
  }

  list(): NotificationRecord[] {
    return this.records.map((r) => ({ ...r }));
  }

  /** Keys already seen (the receiver skips signalling a known duplicate). */
  has(key: string): boolean {
    return this.records.some((r) => r.dedup_key === key);
  }

  size(): number {
    return this.records.length;
  }
}
