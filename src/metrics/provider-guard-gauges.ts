/**
 * The provider guard's gauges on the worker's Prometheus endpoint (the SDK's metric meter): each
 * breaker's state and whether money-moving calls are paused, as this worker last read the guard.
 */
import { Runtime } from '@temporalio/worker';
import type { MetricMeter } from '@temporalio/common';
import { type GuardView, MONEY_CLASSES } from '../contract/provider-guard';
import { METRICS } from '../observability/metric-catalog';

const STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

/** A recorder of guard readings (undefined: the guard did not answer). */
export function providerGuardGauges(at: { namespace: string; taskQueue: string }, meter: MetricMeter = Runtime.instance().metricMeter): (view: GuardView | undefined) => void {
  const tagged = meter.withTags({ namespace: at.namespace, taskQueue: at.taskQueue });
  const breaker = tagged.createGauge(METRICS.providerBreakerState.base, 'int', undefined, METRICS.providerBreakerState.help);
  const paused = tagged.createGauge(METRICS.providerPaused.base, 'int', undefined, METRICS.providerPaused.help);
  return (view) => {
    paused.set(view ? (view.paused ? 1 : 0) : 2); // the SDK's gauges take no negative value
    for (const cls of MONEY_CLASSES) breaker.set(view ? STATE_VALUE[view.breakers[cls].state] : 2, { class: cls });
  };
}
