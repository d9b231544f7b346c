/**
 * The HTTP agent for flows' own webhook_url endpoints: every connection resolves its host through
 * a lookup that refuses addresses the policy does not allow (config/webhook-egress.ts), so the
 * address checked is the address dialled (no DNS rebinding between a check and the connection).
 * A host that is an address literal skips the lookup in net.connect, so the caller checks it first
 * (hostRefusal). A name with any forbidden address is refused as a whole.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent } from 'undici';
import { addressAllowed, type WebhookEgressPolicy } from '../config/webhook-egress';

/** The `code` of the error a refused address ends a connection with. */
export const REFUSED_ADDRESS_CODE = 'MPF_REFUSED_ADDRESS';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

const defaultLookup: LookupFunction = (hostname, options, callback) =>
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => callback(err, addresses));

/** A net.connect `lookup` that answers only allowed addresses (with `base`, default dns.lookup). */
export function guardedLookup(policy: WebhookEgressPolicy, base: LookupFunction = defaultLookup): LookupFunction {
  return (hostname, options, callback) => {
    base(hostname, { ...options, all: true }, (err, result) => {
      if (err) return callback(err, []);
      const addresses: LookupAddress[] = Array.isArray(result) ? result : [{ address: result, family: 0 }];
      if (addresses.length === 0 || addresses.some((a) => !addressAllowed(policy, a.address))) {
        const refused = Object.assign(new Error('the endpoint resolves to an address that is not allowed'), { code: REFUSED_ADDRESS_CODE });
        return callback(refused, []);
      }
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** An undici Agent whose connections go only to addresses `policy` allows. */
export function guardedAgent(policy: WebhookEgressPolicy, opts: { connectTimeoutMs: number; lookup?: LookupFunction }): Agent {
  return new Agent({
    connections: 16,
    keepAliveTimeout: 10_000,
    connect: { timeout: opts.connectTimeoutMs, lookup: guardedLookup(policy, opts.lookup) as never },
  });
}
