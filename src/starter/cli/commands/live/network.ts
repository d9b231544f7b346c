/**
 * The network half of `mpf live check` before any HTTP: what the provider's host name resolves to
 * (every address), and the TLS it presents (Node's own chain and host-name verification, the
 * certificate's subject, issuer, validity and the protocol). A TLS handshake sends no HTTP
 * request: the only request of the check is the categories GET (provider-call.ts).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import tls, { type PeerCertificate } from 'node:tls';
import ipaddr from 'ipaddr.js';
import { DEFAULT_TIMEOUTS } from '../../../../provider/client';
import { check, type CheckResult } from './result';

/** A certificate that expires sooner than this is a warning: renewals take days at most providers. */
export const CERT_EXPIRY_WARN_DAYS = 14;
const DNS_TIMEOUT_MS = 10_000;

/** The host name of a URL as DNS and TLS take it (an IPv6 literal without its brackets). */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** `loopback`, `unspecified`, `unicast` (public), or another ipaddr.js range (private, linkLocal, uniqueLocal, carrierGradeNat …). */
export function rangeOf(address: string): string {
  try {
    return ipaddr.process(address).range();
  } catch {
    return 'unknown';
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what} took longer than ${ms / 1000} s`), { code: 'ETIMEOUT' })), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves the host as the worker's connection does (the system resolver, every address). A
 * loopback or unspecified address is not the live provider (accepted only for the stand-in); a
 * private one is a warning: right for a private link to the provider, wrong for anything else.
 */
export async function dnsCheck(url: URL, standIn: boolean): Promise<CheckResult> {
  const host = hostOf(url);
  let found: Array<{ address: string; family: number }>;
  try {
    found = await withTimeout(lookup(host, { all: true, verbatim: true }), DNS_TIMEOUT_MS, `resolving ${host}`);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return check('dns', 'dns', 'fail', `${host} does not resolve (${err.code ?? err.message})`, { host });
  }
  const addresses = found.map((a) => ({ address: a.address, family: a.family, range: rangeOf(a.address) }));
  const list = addresses.map((a) => (a.range === 'unicast' ? a.address : `${a.address} (${a.range})`)).join(', ');
  const shown = `${host}${isIP(host) ? '' : ` → ${list}`}`;
  const details = { host, addresses };
  const notLive = addresses.filter((a) => a.range === 'loopback' || a.range === 'unspecified');
  if (notLive.length > 0 && !standIn) {
    return check('dns', 'dns', 'fail', `${shown}: ${notLive.map((a) => a.address).join(', ')} is not the live provider (this machine)`, details);
  }
  const inner = addresses.filter((a) => a.range !== 'unicast' && a.range !== 'loopback');
  if (inner.length > 0) {
    return check('dns', 'dns', 'warn', `${shown}: not a public address; right only for a private link to the provider (a simulator or proxy would answer here too)`, details);
  }
  return check('dns', 'dns', 'pass', notLive.length > 0 ? `${shown} (loopback: the stand-in)` : shown, details);
}

const dn = (name: PeerCertificate['subject'] | undefined): string =>
  name ? Object.entries(name).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : String(v)}`).join(', ') : '(none)';

interface Handshake {
  authorized: boolean;
  authorizationError?: string;
  protocol: string | null;
  cipher: string;
  cert: PeerCertificate;
}

/** One TLS handshake with Node's default trust (system roots and NODE_EXTRA_CA_CERTS), then closed. */
function handshake(host: string, port: number): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    // rejectUnauthorized: false only to show the certificate of a failed verification: the
    // verification itself (chain, then host name) is Node's, read from authorized below.
    const socket = tls.connect({ host, port, ...(isIP(host) ? {} : { servername: host }), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    socket.setTimeout(DEFAULT_TIMEOUTS.connectMs, () => socket.destroy(Object.assign(new Error(`no TLS handshake in ${DEFAULT_TIMEOUTS.connectMs / 1000} s`), { code: 'ETIMEDOUT' })));
    socket.once('error', reject);
    socket.once('secureConnect', () => {
      const result: Handshake = {
        authorized: socket.authorized,
        protocol: socket.getProtocol(),
        cipher: socket.getCipher().name,
        cert: socket.getPeerCertificate(),
        ...(socket.authorizationError ? { authorizationError: String(socket.authorizationError) } : {}),
      };
      socket.destroy();
      resolve(result);
    });
  });
}

/** https only; the chain and host name verified as the worker's connection verifies them; expiry in days. */
export async function tlsCheck(url: URL, now = Date.now()): Promise<CheckResult> {
  if (url.protocol !== 'https:') {
    return check('tls', 'tls', 'fail', 'MPS_BASE_URL is http://: the live provider is reached over https only (credentials would cross the network unencrypted)');
  }
  const host = hostOf(url);
  const port = Number(url.port || 443);
  let h: Handshake;
  try {
    h = await handshake(host, port);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return check('tls', 'tls', 'fail', `no TLS session with ${host}:${port} (${err.code ?? err.message})`);
  }
  const validTo = Date.parse(h.cert.valid_to);
  const daysLeft = Math.floor((validTo - now) / 86_400_000);
  const details = {
    protocol: h.protocol,
    cipher: h.cipher,
    subject: dn(h.cert.subject),
    issuer: dn(h.cert.issuer),
    subject_alt_names: h.cert.subjectaltname,
    valid_from: new Date(Date.parse(h.cert.valid_from)).toISOString(),
    valid_to: new Date(validTo).toISOString(),
    days_to_expiry: daysLeft,
    verified: h.authorized,
    ...(h.authorizationError ? { verification_error: h.authorizationError } : {}),
  };
  const shown = `${h.protocol ?? 'TLS'}; subject ${details.subject}; issuer ${details.issuer}; valid ${details.valid_from.slice(0, 10)} to ${details.valid_to.slice(0, 10)} (${daysLeft} days left)`;
  if (!h.authorized) return check('tls', 'tls', 'fail', `${shown}: not trusted (${h.authorizationError ?? 'unverified'}): the worker's connection would be refused the same way`, details);
  if (daysLeft < CERT_EXPIRY_WARN_DAYS) return check('tls', 'tls', 'warn', `${shown}: expires in under ${CERT_EXPIRY_WARN_DAYS} days: ask the provider about its renewal`, details);
  return check('tls', 'tls', 'pass', shown, details);
}
