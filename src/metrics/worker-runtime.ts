/**
 * The worker's Temporal Runtime with the SDK's Prometheus exporter. The exporter (in the SDK's Rust
 * core) binds a loopback port of its own; the worker's operations endpoint (worker-endpoint.ts)
 * serves its text at WORKER_METRICS_ADDRESS/metrics next to /healthz and /readyz, so operators
 * scrape one address.
 *
 * Settings: counters end in `_total` and durations are in seconds (Prometheus conventions, and the
 * same as the gateway's prom-client metrics); the provider latency histogram gets buckets of its own.
 */
import { Runtime, type RuntimeOptions } from '@temporalio/worker';
import { freePort } from '../temporal/ports';
import { METRICS, PROVIDER_LATENCY_BUCKETS } from '../observability/metric-catalog';

/** The `telemetryOptions.metrics` of the Runtime: Prometheus on `bindAddress`. */
export function prometheusMetricsOptions(bindAddress: string) {
  return {
    prometheus: {
      bindAddress,
      countersTotalSuffix: true,
      useSecondsForDurations: true,
      histogramBucketOverrides: {
        [METRICS.providerCallDuration.base]: PROVIDER_LATENCY_BUCKETS,
        [METRICS.eventDeliveryDuration.base]: PROVIDER_LATENCY_BUCKETS,
      },
    },
  } as const;
}

const BIND_ATTEMPTS = 5;

/**
 * Installs the process's Runtime with `base` (the caller's other Runtime options, e.g. its logger)
 * plus, when `withMetrics`, the SDK's Prometheus exporter on a free loopback port. Returns where
 * that exporter listens (undefined without metrics). Must run before any connection is made.
 * A port taken between choosing and binding is chosen again.
 */
export async function installWorkerRuntime(base: RuntimeOptions, withMetrics: boolean): Promise<{ exporterUrl?: string }> {
  if (!withMetrics) {
    if (Object.keys(base).length > 0) Runtime.install(base);
    return {};
  }
  for (let attempt = 1; ; attempt++) {
    const bindAddress = `127.0.0.1:${await freePort()}`;
    try {
      Runtime.install({ ...base, telemetryOptions: { ...base.telemetryOptions, metrics: prometheusMetricsOptions(bindAddress) } });
      return { exporterUrl: `http://${bindAddress}/metrics` };
    } catch (err) {
      if (attempt >= BIND_ATTEMPTS || !/address already in use/i.test(String(err))) throw err;
    }
  }
}
