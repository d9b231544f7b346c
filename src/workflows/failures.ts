/** How the workflows read an activity's failure: its ProviderError type, and words for operators. */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** Failure type of an activity failure (the ProviderError class name), if any. */
export function failureType(err: unknown): string | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) return err.cause.type ?? undefined;
  return undefined;
}

export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure) return `${failureType(err) ?? 'activity failed'}: ${err.cause?.message ?? err.message}`;
  return err instanceof Error ? err.message : String(err);
}
