/**
 * Live or simulator, decided by what answers, never by the URL. The local simulator marks every
 * answer of its provider API (SIMULATOR_IDENTITY_HEADER); the live provider never does. Before a
 * worker takes any task it asks once (a GET that moves no money and carries no credential):
 *
 * - with MPS_LIVE=1, a provider that answers as the simulator is refused: production would
 *   otherwise "confirm" swaps against a fake while nothing moves;
 * - without MPS_LIVE, a provider that does not answer as the simulator is refused: it may be the
 *   live provider, where every call moves real money.
 *
 * A loopback address proves nothing either way (a tunnel or a proxy to the live provider is on
 * loopback too; the simulator runs as a named service in docker-compose).
 */
import { ConfigError } from '../config/env';
import { SIMULATOR_IDENTITY_HEADER } from '../contract/provider';
import type { ProviderClient } from './client';

export interface IdentityCheckOptions {
  /** How many times to ask when the provider cannot be reached (it may still be starting). Default 10. */
  attempts?: number;
  /** Pause between attempts, ms. Default 2000. */
  pauseMs?: number;
}

/** Resolves when the provider is what the configuration says; throws a ConfigError otherwise. */
export async function assertProviderIdentity(client: Pick<ProviderClient, 'answersAsSimulator' | 'live' | 'origin'>, opts: IdentityCheckOptions = {}): Promise<void> {
  const attempts = opts.attempts ?? 10;
  let simulator: boolean | undefined;
  let lastError: unknown;
  for (let i = 0; i < attempts && simulator === undefined; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, opts.pauseMs ?? 2_000));
    try {
      simulator = await client.answersAsSimulator();
    } catch (err) {
      lastError = err;
    }
  }
  if (simulator === undefined) {
    throw new ConfigError(
      `MPS_BASE_URL: the provider at ${client.origin} could not be reached to tell whether it is the live provider or the simulator ` +
        `(${attempts} attempt(s); last: ${(lastError as Error | undefined)?.message ?? 'no answer'}); the worker takes no task before it knows`,
    );
  }
  if (client.live && simulator) {
    throw new ConfigError(
      `MPS_LIVE: is 1 but the provider at ${client.origin} answers as the simulator (${SIMULATOR_IDENTITY_HEADER}); refusing to run production against a fake provider: ` +
        'point MPS_BASE_URL at the live provider, or unset MPS_LIVE to run against the simulator',
    );
  }
  if (!client.live && !simulator) {
    throw new ConfigError(
      `MPS_LIVE: is not set but the provider at ${client.origin} does not answer as the simulator (no ${SIMULATOR_IDENTITY_HEADER}); it may be the live provider, where every call moves real money: ` +
        'set MPS_LIVE=1 to run against it, or point MPS_BASE_URL at the simulator',
    );
  }
}
