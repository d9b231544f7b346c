/**
 * The console's roles, decided from a verified person (../../auth/person-tokens):
 *   - operator: the gateway's operator role, i.e. Temporal's admin permission on the namespace (or
 *     the whole cluster's): resolves, redelivers, manages endpoints and API keys, pauses and resumes;
 *   - finance: the read permission and `finance` in the roles claim (`mpf_roles`): reads, and
 *     exports the payments list as CSV;
 *   - support: the read permission otherwise: reads.
 * The API decides again on every call (the person's token goes with it): hiding a button is a
 * courtesy, never the guard.
 */
import { gatewayRoleOf, type PersonIdentity } from '../../auth/person-tokens';

export const CONSOLE_ROLES = ['support', 'finance', 'operator'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

/** The console role of `person` on `namespace`, or undefined when they may not even read it. */
export function consoleRoleOf(person: PersonIdentity, namespace: string): ConsoleRole | undefined {
  const role = gatewayRoleOf(person.permissions, namespace);
  if (role === 'operator') return 'operator';
  if (role !== 'read_only') return undefined;
  return person.roles?.includes('finance') ? 'finance' : 'support';
}

/** What each console role may see a control for (the API refuses the rest anyway). */
export const mayAct = (role: ConsoleRole): boolean => role === 'operator';
export const mayExport = (role: ConsoleRole): boolean => role === 'finance' || role === 'operator';
