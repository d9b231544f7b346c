/**
 * Shared setup of the provider tests: the credentials a default simulator accepts, a
 * ProviderClient factory that always closes what it opens, and an assertion on
 * the ProviderError class a call fails with.
 */
import assert from 'node:assert/strict';
import { ProviderClient, type ProviderClientConfig, type ProviderError } from '../../src/provider';
import { SIMULATOR_DEFAULT_CREDENTIALS } from '../../src/simulator/options';

/** What a simulator started without credentials accepts (one definition: src/simulator/options.ts). */
export const SIM_CREDENTIALS = SIMULATOR_DEFAULT_CREDENTIALS;
export const SIM_SECRET = SIM_CREDENTIALS.secretKey;
export const SIM_ACCESS = SIM_CREDENTIALS.accessToken;
export const SIM_MERCHANT = SIM_CREDENTIALS.merchantRef;
export interface ProviderClients {
  /** A new client: the base configuration with `over` on top. The caller closes it. */
  clientFor(over?: Partial<ProviderClientConfig>): ProviderClient;
  /** Runs `fn` with a new client (the base configuration with `over` on top) and always closes it. */
  withClient<T>(over: Partial<ProviderClientConfig>, fn: (c: ProviderClient) => Promise<T>): Promise<T>;
}

/**
 * Client factories on a base configuration. `base` is read at each call, so it may refer to a
 * server that a `before` hook starts later.
 */
export function providerClients(base: () => ProviderClientConfig): ProviderClients {
  const clientFor = (over: Partial<ProviderClientConfig> = {}): ProviderClient => new ProviderClient({ ...base(), ...over });
  return {
    clientFor,
    async withClient(over, fn) {
      const c = clientFor(over);
      try {
        return await fn(c);
      } finally {
        await c.close();
      }
    },
  };
}

/** Asserts the rejection is a given ProviderError class and returns it. */
export async function failsWith<E extends ProviderError>(p: Promise<unknown>, cls: abstract new (...a: never[]) => E): Promise<E> {
  const err = await p.then(
    () => assert.fail(`expected ${cls.name}, but the call succeeded`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof cls, `expected ${cls.name}, got ${(err as Error)?.name}: ${(err as Error)?.message}`);
  return err as E;
}
