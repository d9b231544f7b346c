/**
 * Connections to Temporal for the worker and the clients: TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE
 * when set, else the envconfig profile (TEMPORAL_PROFILE, temporal.toml: TLS, API keys), else
 * localhost:7233. Every client gets the encrypting data converter.
 */
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { clientDataConverter } from '../codec/data-converter';

export interface TemporalTarget {
  address: string;
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
    namespace: env.TEMPORAL_NAMESPACE ?? profileNamespace ?? 'default',
    profile,
  };
}

export async function connectClient(target: TemporalTarget, keys: string): Promise<Client> {
  const connection = await Connection.connect({
    ...(target.profile as object),
    address: target.address,
  } as Parameters<typeof Connection.connect>[0]);
  return new Client({ connection, namespace: target.namespace, dataConverter: clientDataConverter(keys) });
}

export function connectNative(target: TemporalTarget): Promise<NativeConnection> {
  return NativeConnection.connect({ ...target.profile, address: target.address });
}
