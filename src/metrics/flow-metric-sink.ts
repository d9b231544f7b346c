/**
 * The worker's side of the workflows' `mpfMetrics` sink (src/workflows/flow-metrics.ts): each call
 * adds 1 to one of our counters in the SDK's metric meter, tagged as the SDK tags workflow metrics
 * (namespace, taskQueue, workflowType), at most once per workflow run and occurrence key: a
 * workflow task executed again after Temporal refused its completion repeats its calls, and they
 * are not counted twice (per worker process; the keys of the last 50,000 occurrences are kept).
 * Not called while histories are replayed. initWorkerCounters() creates their series at 0.
 */
import { type InjectedSinks, Runtime } from '@temporalio/worker';
import type { MetricMeter } from '@temporalio/common';
import type { ProviderEndpoint } from '../contract/provider';
import type { FlowMetricKey, MpfMetricSinks } from '../workflows/flow-metrics';
import { LINK_TERMINAL_STATES, LINK_WORKFLOW_TYPE, SWAP_TERMINAL_STATES, SWAP_WORKFLOW_TYPE } from '../workflows/messages';
import { METRICS } from '../observability/metric-catalog';

const REMEMBERED = 50_000;

export function flowMetricSinks(meter: () => MetricMeter = () => Runtime.instance().metricMeter): InjectedSinks<MpfMetricSinks> {
  const seen = new Set<string>();
  return {
    mpfMetrics: {
      count: {
        fn(info, metric: FlowMetricKey, tags, occurrence) {
          const def = METRICS[metric];
          if (!def || def.type !== 'counter') return;
          const key = `${info.workflowId}\u0000${info.runId}\u0000${occurrence}`;
          if (seen.has(key)) return;
          seen.add(key);
          if (seen.size > REMEMBERED) seen.delete(seen.values().next().value as string);
          meter()
            .withTags({ namespace: info.namespace, taskQueue: info.taskQueue, workflowType: info.workflowType })
            .createCounter(def.base, undefined, def.help)
            .add(1, tags);
        },
        callDuringReplay: false,
      },
    },
  };
}

const PIN_OUTCOMES = ['confirmed', 'pin_rejected', 'expired', 'cancelled', 'failed', 'needs_reconciliation'];
const ERROR_KINDS = ['none', 'rejected', 'auth', 'rate_limited', 'transient', 'ambiguous', 'invalid_request', 'other'];
const ACTIVITY_OF_ENDPOINT: Record<ProviderEndpoint, string> = {
  swapInit: 'initSwap',
  swapConfirm: 'confirmSwap',
  hostedLink: 'createPaymentLink',
  categories: 'listCategories',
};

/**
 * Creates every series of our worker counters at 0, labelled as they will be when counted, so that
 * Prometheus sees a counter's first increase (a series that first appears at 1 shows no increase,
 * and an alert on it would never fire) and dashboards show 0 rather than "no data".
 */
export function initWorkerCounters(at: { namespace: string; taskQueue: string }, meter: MetricMeter = Runtime.instance().metricMeter): void {
  const zero = (tags: Record<string, string>, def: { base: string; help: string }, labels: Record<string, string>) =>
    meter.withTags(tags).createCounter(def.base, undefined, def.help).add(0, labels);
  const flows: Array<[string, string, readonly string[]]> = [
    ['swap', SWAP_WORKFLOW_TYPE, SWAP_TERMINAL_STATES],
    ['payment_link', LINK_WORKFLOW_TYPE, LINK_TERMINAL_STATES],
  ];
  for (const [kind, workflowType, finals] of flows) {
    const wf = { namespace: at.namespace, taskQueue: at.taskQueue, workflowType };
    zero(wf, METRICS.flowsStarted, { flow_kind: kind });
    zero(wf, METRICS.reconciliations, { flow_kind: kind });
    for (const state of finals) zero(wf, METRICS.flowsFinished, { flow_kind: kind, state });
    if (kind === 'swap') for (const outcome of PIN_OUTCOMES) zero(wf, METRICS.pinAttempts, { outcome });
  }
  for (const [endpoint, activityType] of Object.entries(ACTIVITY_OF_ENDPOINT)) {
    for (const errorKind of ERROR_KINDS) {
      zero({ activityType, namespace: at.namespace, taskQueue: at.taskQueue }, METRICS.providerCalls, { endpoint, error_kind: errorKind });
    }
  }
}
