/**
 * The notifications a flow received: every one kept, deduplicated by its key (retried and
 * duplicate deliveries only count), mapped tolerantly to an outcome by the contract module.
 * Workflow-safe (no I/O).
 */
import { mapNotificationOutcome } from '../contract/provider';
import type { NotificationInput, NotificationRecord } from './messages';

/** Upper bound on distinct notifications kept per flow (history size guard). */
export const MAX_NOTIFICATIONS = 100;

export class NotificationBook {
  private readonly records: NotificationRecord[] = [];

  /**
   * Records a delivery. Returns the record when it is new (first delivery), undefined for a
   * duplicate or when the book is full. The flow sets `applied` when it moves its state.
   */
  add(n: NotificationInput): NotificationRecord | undefined {
    const key = typeof n?.dedup_key === 'string' ? n.dedup_key.slice(0, 200) : '';
    if (!key) return undefined;
    const seen = this.records.find((r) => r.dedup_key === key);
    if (seen) {
      seen.deliveries += 1;
      return undefined;
    }
    if (this.records.length >= MAX_NOTIFICATIONS) return undefined;
    const record: NotificationRecord = {
      dedup_key: key,
      received_at: typeof n.received_at === 'string' ? n.received_at : '',
      outcome: mapNotificationOutcome(n.payload),
      applied: false,
      deliveries: 1,
      payload: n.payload,
    };
    this.records.push(record);
    return record;
  }

  list(): NotificationRecord[] {
    return this.records.map((r) => ({ ...r }));
  }

  size(): number {
    return this.records.length;
  }
}
