/**
 * Provider notifications from the client's side: the key a notification is deduplicated by, and
 * the signal that hands it to its flow (the receiver checked its token first). What a notification
 * says is read by the contract's one reader (contract/notifications.ts).
 */
import { compactNotificationPayload, notificationIdOf } from '../../contract/notifications';
import { type EndpointTypesView, typesTaken } from '../../contract/webhook-endpoints';
import { notificationSignal } from '../../workflows/messages';
import { type TemporalGate, within } from './health';
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
export async function deliverNotification(
  gate: TemporalGate,
  flowId: string,
  payload: unknown,
  rawBody: string,
  dedupKey?: string,
  registeredTypes?: () => Promise<string[] | undefined>,
): Promise<string> {
  const dedup_key = dedupKey ?? notificationDedupKey(payload, rawBody);
  const types = await registeredTypes?.().catch(() => undefined);
  await gate.signalFlow(flowId, notificationSignal, {
    dedup_key,
    received_at: new Date().toISOString(),
    payload: compactNotificationPayload(payload),
    ...(types ? { registered_types: types } : {}),
  });
  return dedup_key;
}

/** How long a notification waits for a reading of the registered endpoints before it goes without (the flow then asks itself). */
export const TYPES_READ_WAIT_MS = 250;

/**
 * The event types the registered webhook endpoints take, from the reader's cached reading (a few
 * seconds old at most, as a worker's; the endpoints' views, never a secret), or read now within
 * TYPES_READ_WAIT_MS; undefined when it cannot be had at once.
 */
export function registeredTypesOf(reader: { current(): Promise<EndpointTypesView[]> }): () => Promise<string[] | undefined> {
  return () => within(reader.current().then(typesTaken, () => undefined), TYPES_READ_WAIT_MS, undefined);
}
