/**
 * Where a flow's own `webhook_url` may point (MERCHANT_WEBHOOK_ALLOWED_HOSTS), checked twice: at
 * the API (the URL's host, and the addresses its name resolves to now) and by the worker when it
 * connects (the address it actually dials; see activities/egress-agent.ts), so a name that
 * resolves elsewhere later (DNS rebinding) still reaches nothing inside.
 *
 * The list is comma-separated. Each entry is one of:
 *   `hooks.shop.example`   this host name exactly;
 *   `*.shop.example`       any name below shop.example (not shop.example itself);
 *   `*`                    any host name;
 *   `203.0.113.7`, `10.0.0.0/8`, `::1`, `fd00::/8`   these addresses (a URL may name them, and
 *                          the worker may dial them even when they are not public).
 * Names decide which URLs are accepted; addresses decide where a connection may go. An address
 * that is not public unicast (loopback, private, link-local such as 169.254.169.254, unspecified
 * 0.0.0.0 or ::, carrier-grade NAT, unique-local, multicast, IPv4-mapped ::ffff:…, documentation
 * and other reserved ranges) is refused unless an address entry covers it. Classification is by
 * ipaddr.js (the library fastify's proxy-addr uses).
 *
 * Unset: under NODE_ENV=production no per-flow endpoint is accepted (the worker's own
 * MERCHANT_WEBHOOK_URL still works); elsewhere DEV_DEFAULT (any public host, and loopback, so the
 * demo and tests can use a listener on this machine).
 */
import ipaddr from 'ipaddr.js';

/** What an unset list means outside production. */
export const DEV_DEFAULT_ALLOWED_HOSTS = '*,127.0.0.0/8,::1';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export interface WebhookEgressPolicy {
  /** False: no per-flow webhook_url at all (production without a list). */
  enabled: boolean;
  anyName: boolean;
  names: ReadonlySet<string>;
  /** Suffixes with their leading dot (`.shop.example`). */
  suffixes: readonly string[];
  ranges: readonly Range[];
}

export const NO_PER_FLOW_ENDPOINTS: WebhookEgressPolicy = { enabled: false, anyName: false, names: new Set(), suffixes: [], ranges: [] };

const NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** The list parsed; throws an Error naming the bad entry. */
export function parseAllowedHosts(raw: string): WebhookEgressPolicy {
  const names = new Set<string>();
  const suffixes: string[] = [];
  const ranges: Range[] = [];
  let anyName = false;
  for (const entry of raw.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)) {
    if (entry === '*') {
      anyName = true;
    } else if (entry.includes('/')) {
      try {
        ranges.push(ipaddr.parseCIDR(entry));
      } catch {
        throw new Error(`entry "${entry}" is not an address range (e.g. 10.0.0.0/8 or fd00::/8)`);
      }
    } else if (ipaddr.isValid(entry.replace(/^\[|\]$/g, ''))) {
      const a = ipaddr.parse(entry.replace(/^\[|\]$/g, ''));
      ranges.push([a, a.kind() === 'ipv4' ? 32 : 128]);
    } else if (entry.startsWith('*.') && NAME.test(entry.slice(2))) {
      suffixes.push(entry.slice(1));
    } else if (NAME.test(entry.replace(/\.$/, ''))) {
      names.add(entry.replace(/\.$/, ''));
    } else {
      throw new Error(`entry "${entry}" is not a host name, *.suffix, *, an address or an address range`);
    }
  }
  return { enabled: true, anyName, names, suffixes, ranges };
}

/** The policy of an environment (the variable was checked at start-up by the env schema). */
export function webhookEgressFromEnv(env: { NODE_ENV?: string; MERCHANT_WEBHOOK_ALLOWED_HOSTS?: string }): WebhookEgressPolicy {
  const raw = env.MERCHANT_WEBHOOK_ALLOWED_HOSTS;
  if (raw !== undefined && raw.trim() !== '') return parseAllowedHosts(raw);
  return env.NODE_ENV === 'production' ? NO_PER_FLOW_ENDPOINTS : parseAllowedHosts(DEV_DEFAULT_ALLOWED_HOSTS);
}

/** An address literal (brackets allowed), or undefined for a name. */
export function addressOf(host: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = host.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(bare) ? ipaddr.parse(bare) : undefined;
}

/** Whether the worker may connect to `address` (a literal) under `policy`. */
export function addressAllowed(policy: WebhookEgressPolicy, address: string): boolean {
  const a = addressOf(address);
  if (!a) return false;
  const covered = policy.ranges.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
  return covered || a.range() === 'unicast';
}

export type HostRefusal = 'disabled' | 'not_listed' | 'address';

/**
 * Whether `url` names an address literal that an address entry of the list covers: the operator
 * named it on purpose. Under NODE_ENV=production that is the only way a loopback endpoint is
 * accepted (the native topology, where every component listens on loopback, lists 127.0.0.1).
 */
export function addressListed(policy: WebhookEgressPolicy, url: string): boolean {
  if (!policy.enabled) return false;
  let literal: ipaddr.IPv4 | ipaddr.IPv6 | undefined;
  try {
    literal = addressOf(new URL(url).hostname.toLowerCase());
  } catch {
    return false;
  }
  return literal !== undefined && policy.ranges.some(([net, bits]) => net.kind() === literal.kind() && literal.match(net, bits));
}

/** Why `url`'s host is refused as a per-flow endpoint (names and literals; resolution is the caller's), or undefined. */
export function hostRefusal(policy: WebhookEgressPolicy, url: string): HostRefusal | undefined {
  if (!policy.enabled) return 'disabled';
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return 'not_listed';
  }
  const literal = addressOf(host);
  if (literal) {
    if (!addressAllowed(policy, host)) return 'address';
    const listed = policy.ranges.some(([net, bits]) => net.kind() === literal.kind() && literal.match(net, bits));
    return listed || policy.anyName ? undefined : 'not_listed';
  }
  const name = host.replace(/\.$/, '');
  if (policy.anyName || policy.names.has(name) || policy.suffixes.some((s) => name.endsWith(s))) return undefined;
  return 'not_listed';
}

/** The message of a refusal, for the API's 400 (names the field, never the addresses it resolved to). */
export function refusalMessage(r: HostRefusal): string {
  switch (r) {
    case 'disabled':
      return 'webhook_url: per-flow endpoints are not enabled on this deployment (events go to its configured endpoints)';
    case 'not_listed':
      return "webhook_url: this host is not on the deployment's list of allowed webhook hosts";
    case 'address':
      return 'webhook_url: names or resolves to an address that is not allowed (loopback, private, link-local, unspecified, IPv4-mapped or reserved)';
  }
}
