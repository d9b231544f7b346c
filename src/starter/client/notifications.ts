/**
 * Provider notifications from the client's side: the key a notification is deduplicated by, and
 * the signal that hands it to its flow (the receiver checked its token first). What a notification
 * says is read by the contract's one reader (contract/notifications.ts).
 */
import { compactNotificationPayload, notificationIdOf } from '../../contract/notifications';
import { notificationSignal } from '../../workflows/messages';
import type { TemporalGate } from './health';
import { sha256 } from './tokens';

/** The key a notification is deduplicated by: the payload's own id, else a SHA-256 of the raw body. */
export function notificationDedupKey(payload: unknown, rawBody: string): string {
  const id = notificationIdOf(payload);
  return id !== undefined ? `id:${id}` : `sha256:${sha256(rawBody)}`;
}

/**
 * Signals a flow with a received notification (the receiver checked its token first). The
 * payload is compacted first (compactNotificationPayload: a large one keeps only the fields the
 * flows read), so deliveries cannot fill the flow's history.
 */
export async function deliverNotification(gate: TemporalGate, flowId: string, payload: unknown, rawBody: string, dedupKey?: string): Promise<string> {
  const dedup_key = dedupKey ?? notificationDedupKey(payload, rawBody);
  await gate.signalFlow(flowId, notificationSignal, {
    dedup_key,
    received_at: new Date().toISOString(),
    payload: compactNotificationPayload(payload),
  });
  return dedup_key;
}
