/**
 * The gateway's URLs that the client hands out: the PIN page (pin_url, to the user) and the
 * notification receiver (notification_url, to the provider). The gateway serves the route
 * patterns below and the client builds the URLs from the same shapes, so the two cannot drift.
 */
import type { AppEnv } from '../../config/env';
import type { FlowKind } from '../../workflows/flow-ids';

/**
 * The URL segment of each flow kind in a notification URL (`…/v1/notifications/<segment>/<flow_id>/<token>`).
 * A fixed contract: URLs already handed to the provider say `paylink`.
 */
export const NOTIFICATION_SEGMENT: Readonly<Record<FlowKind, string>> = { swap: 'swap', payment_link: 'paylink' };

/** The flow kind a notification URL segment names, if any. */
export function kindOfNotificationSegment(segment: string): FlowKind | undefined {
  return (Object.keys(NOTIFICATION_SEGMENT) as FlowKind[]).find((k) => NOTIFICATION_SEGMENT[k] === segment);
}

/** The fastify route of the PIN page. */
export const PIN_PAGE_ROUTE = '/pin/:swap_id';
/** The fastify route of the notification receiver. */
export const NOTIFICATION_ROUTE = '/v1/notifications/:kind/:flow_id/:token';

const trimSlashes = (base: string): string => base.replace(/\/+$/, '');

/** The PIN page of a swap; the token travels in the fragment, so browsers never send it to a server or in Referer. */
export function pinUrl(base: string, swapId: string, pinToken: string): string {
  return `${trimSlashes(base)}/pin/${encodeURIComponent(swapId)}#token=${pinToken}`;
}

export function notificationUrl(base: string, kind: FlowKind, flowId: string, token: string): string {
  return `${trimSlashes(base)}/v1/notifications/${NOTIFICATION_SEGMENT[kind]}/${encodeURIComponent(flowId)}/${token}`;
}

/** http://HOST:PORT as a client on this machine reaches a server listening on `host`. */
export function localUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}

/** GATEWAY_PUBLIC_URL, else the gateway's default local address. */
export function gatewayPublicUrl(env: Pick<AppEnv, 'GATEWAY_PUBLIC_URL' | 'GATEWAY_PORT'>): string {
  return env.GATEWAY_PUBLIC_URL ?? localUrl('127.0.0.1', env.GATEWAY_PORT);
}
