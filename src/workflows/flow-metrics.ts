/**
 * The flows' own metrics, emitted through the SDK's workflow metric meter (workflow-safe): nothing
 * is emitted while a history is replayed, and emitting adds no command to history, so recorded
 * histories replay unchanged. The worker's Prometheus endpoint shows them (src/metrics/catalog.ts);
 * without one configured they go nowhere.
 */
import { inWorkflowContext, metricMeter } from '@temporalio/workflow';
import { METRICS } from '../metrics/catalog';
import type { FlowKind } from './flow-ids';

const NEEDS_RECONCILIATION = 'needs_reconciliation';

function add(def: { base: string; help: string }, tags: Record<string, string>): void {
  // Sessions are only built inside workflows; this keeps pure unit tests of them possible.
  if (!inWorkflowContext()) return;
  metricMeter.createCounter(def.base, undefined, def.help).add(1, tags);
}

export const flowMetrics = {
  started(kind: FlowKind): void {
    add(METRICS.flowsStarted, { flow_kind: kind });
  },

  /** A state change: the first final state counts the flow finished; any move into needs_reconciliation is counted too. */
  changed(kind: FlowKind, next: string, wasTerminal: boolean, isTerminal: boolean): void {
    if (isTerminal && !wasTerminal) add(METRICS.flowsFinished, { flow_kind: kind, state: next });
    if (next === NEEDS_RECONCILIATION) add(METRICS.reconciliations, { flow_kind: kind });
  },

  pinAttempt(outcome: string): void {
    add(METRICS.pinAttempts, { outcome });
  },
};
