/**
 * The flows' own metrics (workflow-safe), sent through the `mpfMetrics` sink to the worker, which
 * adds them to the SDK's metric meter with the workflow's tags (src/metrics/flow-metric-sink.ts), so
 * they share the worker's Prometheus endpoint with the SDK's metrics.
 *
 * Why a sink of our own rather than the SDK's workflow `metricMeter`: both emit nothing while
 * history is replayed, but a workflow task whose completion Temporal refused (a signal such as the
 * provider's notification arriving while the task completed the swap) is executed again as new
 * work, and the SDK's meter then counts the same state change twice (seen here: a confirmed swap
 * counted 2). Each call here carries an occurrence key that is deterministic within the run (the
 * state change's index, the PIN attempt's number), and the worker counts each key once.
 * Emitting adds no command to history: recorded histories replay unchanged.
 */
import { inWorkflowContext, proxySinks, type Sinks } from '@temporalio/workflow';
import type { FlowKind } from './flow-ids';

/** The metrics a workflow may count: keys of METRICS. */
export type FlowMetricKey = 'flowsStarted' | 'flowsFinished' | 'reconciliations' | 'pinAttempts';

export interface MpfMetricSinks extends Sinks {
  mpfMetrics: {
    /** Adds 1 to `metric` with `tags`, once per `occurrence` of this run. */
    count(metric: FlowMetricKey, tags: Record<string, string>, occurrence: string): void;
  };
}

const { mpfMetrics } = proxySinks<MpfMetricSinks>();

const NEEDS_RECONCILIATION = 'needs_reconciliation';

function count(metric: FlowMetricKey, tags: Record<string, string>, occurrence: string): void {
  // Sessions are only built inside workflows; this keeps pure unit tests of them possible.
  if (inWorkflowContext()) mpfMetrics.count(metric, tags, occurrence);
}

export const flowMetrics = {
  started(kind: FlowKind): void {
    count('flowsStarted', { flow_kind: kind }, 'started');
  },

  /**
   * The `index`-th state change of the run: the first final state counts the flow finished; every
   * move into needs_reconciliation (also after another final state) is counted too.
   */
  changed(kind: FlowKind, index: number, next: string, wasTerminal: boolean, isTerminal: boolean): void {
    if (isTerminal && !wasTerminal) count('flowsFinished', { flow_kind: kind, state: next }, `finished:${index}`);
    if (next === NEEDS_RECONCILIATION) count('reconciliations', { flow_kind: kind }, `reconciliation:${index}`);
  },

  /** The `attempt`-th PIN sent to the provider and what it came to. */
  pinAttempt(attempt: number, outcome: string): void {
    count('pinAttempts', { outcome }, `pin:${attempt}`);
  },
};
