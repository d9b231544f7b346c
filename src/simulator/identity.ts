/**
 * How the simulator is told from the live provider by what answers, never by an address:
 *
 * - every answer of the simulator's API (provider routes, errors, 404s, the control API) carries
 *   SIMULATOR_ANSWER_HEADER, a header of this project's own that the live provider never sends;
 *   the forwarder (forwarder.ts) passes back only answers that carry it;
 * - the simulator answers a provider call only from a loopback peer or through the forwarder
 *   (FORWARDED_REQUEST_HEADER). A worker dials a non-loopback MPS_BASE_URL only with MPS_LIVE=1,
 *   which says "the live provider, real money": such a worker that reached the simulator by its
 *   service name is refused (HTTP 421), so a production worker never uses the simulator silently.
 */
import { isLoopbackHost } from './notifier';

/** On every answer of the simulator's API port; the live provider never sends it. */
export const SIMULATOR_ANSWER_HEADER = 'x-mpf-simulator';
export const SIMULATOR_ANSWER_VALUE = 'no-money-moves';
/** On every request the forwarder passes to the simulator (a worker's provider client never sends it). */
export const FORWARDED_REQUEST_HEADER = 'x-mpf-simulator-forwarder';

export const NOT_FORWARDED_MESSAGE =
  'This is the provider simulator (no money moves), reached over the network without its forwarder. A worker dials a non-loopback provider ' +
  'only with MPS_LIVE=1, which means the live provider: refused. Reach the simulator through MPS_SIMULATOR_UPSTREAM (without MPS_LIVE), or set ' +
  "MPS_BASE_URL to the live provider's address.";

/** A peer address on the loopback interface (IPv4, IPv6, or IPv4-mapped IPv6). */
export function isLoopbackPeer(addr: string | undefined): boolean {
  return addr !== undefined && (isLoopbackHost(addr) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(addr));
}

/** Whether the simulator answers this provider call: from loopback, or passed on by the forwarder. */
export function providerCallAllowed(peer: string | undefined, headers: Record<string, string | string[] | undefined>): boolean {
  return isLoopbackPeer(peer) || headers[FORWARDED_REQUEST_HEADER] !== undefined;
}
