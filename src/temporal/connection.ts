/**
 * Connections to Temporal for the worker and the clients: TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE
 * when set, else the envconfig profile (TEMPORAL_PROFILE, temporal.toml: TLS, API keys), else
 * localhost:7233. Every client gets the encrypting data converter.
 */
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { clientDataConverter } from '../codec/data-converter';
import { mpfClientInterceptors } from '../observability/temporal-client';

export interface TemporalTarget {
  address: string;
  /** Where the address came from, for error messages. */
  addressFrom?: 'TEMPORAL_ADDRESS' | 'envconfig profile' | 'default';
  namespace: string;
  /** Extra options from the envconfig profile (TLS, API key, metadata). */
  profile?: ReturnType<typeof loadClientConnectConfig>['connectionOptions'];
}

export function temporalTargetFromEnv(env: { TEMPORAL_ADDRESS?: string; TEMPORAL_NAMESPACE?: string }): TemporalTarget {
  let profile: TemporalTarget['profile'];
  let profileNamespace: string | undefined;
  try {
    const cfg = loadClientConnectConfig();
    profile = cfg.connectionOptions;
    profileNamespace = cfg.namespace;
  } catch {
    profile = undefined; // no profile file: plain defaults
  }
  return {
    address: env.TEMPORAL_ADDRESS ?? profile?.address ?? 'localhost:7233',
    addressFrom: env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : profile?.address ? 'envconfig profile' : 'default',
    namespace: env.TEMPORAL_NAMESPACE ?? profileNamespace ?? 'default',
    profile,
  };
}

/** Temporal could not be reached: names the address, where it came from, and what to check. */
export class TemporalConnectError extends Error {
  override name = 'TemporalConnectError';
  constructor(target: TemporalTarget, cause: unknown) {
    const from =
      target.addressFrom === 'TEMPORAL_ADDRESS'
        ? 'from TEMPORAL_ADDRESS'
        : target.addressFrom === 'envconfig profile'
          ? 'from the Temporal envconfig profile (TEMPORAL_PROFILE / temporal.toml)'
          : 'the default; set TEMPORAL_ADDRESS';
    super(
      `cannot connect to Temporal at ${target.address} (${from}), namespace ${target.namespace}: ${briefCause(cause)}. ` +
        'Check that the Temporal frontend is running and reachable from here (host:port of its gRPC port, usually 7233) and, for TLS or API keys, the envconfig profile.',
      { cause },
    );
  }
}

/** The first line of a connection error, without the Rust core's `tonic::transport::Error(...)` dump. */
function briefCause(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  const first = msg.split('\n')[0]!.trim();
  if (/tonic::transport|transport error/i.test(first)) {
    const inner = /(Connection refused|No route to host|dns error[^")]*|timed out|Connection reset)/i.exec(msg);
    return inner ? `transport error (${inner[1]})` : 'transport error';
  }
  return first.length > 300 ? `${first.slice(0, 300)}…` : first;
}

export async function connectClient(target: TemporalTarget, keys: string): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...(target.profile as object),
      address: target.address,
    } as Parameters<typeof Connection.connect>[0]);
  } catch (e) {
    throw new TemporalConnectError(target, e);
  }
  return new Client({ connection, namespace: target.namespace, dataConverter: clientDataConverter(keys), interceptors: mpfClientInterceptors() });
}
