/**
 * The workflow API of bench/ablation.ts's variants: the real `@temporalio/workflow` with some of
 * its functions made no-ops. Bundled into a variant's workflow code only (webpack alias), never
 * into what we ship. Workflow-safe: no I/O, no state.
 */
export const ABLATIONS = ['state-sa', 'memo', 'patches', 'log'] as const;
export type Ablation = (typeof ABLATIONS)[number];

const noop = (): void => undefined;
const silentLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };

/** `sdk` (the module object of `@temporalio/workflow`) with the features in `off` taken out. */
export function ablate<T extends Record<string, unknown>>(sdk: T, off: readonly Ablation[]): T {
  const out: Record<string, unknown> = { ...sdk };
  if (off.includes('state-sa')) out.upsertSearchAttributes = noop;
  if (off.includes('memo')) out.upsertMemo = noop;
  if (off.includes('patches')) Object.assign(out, { patched: () => true, deprecatePatch: noop });
  if (off.includes('log')) out.log = silentLogger;
  return out as T;
}
