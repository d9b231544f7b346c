/**
 * Whether this process traces, kept apart from tracing.ts so that code which only asks (the
 * Temporal client's interceptors, the gateway) does not load the OpenTelemetry SDK and exporter.
 */
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Resource } from '@opentelemetry/resources';
import { ConfigError } from '../config/env';

export interface Tracing {
  serviceName: string;
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Flushes the spans still buffered and stops the exporter (call on shutdown). */
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/** The process's tracing when installed; undefined means tracing is off. */
export function activeTracing(): Tracing | undefined {
  return active;
}

export function setActiveTracing(tracing: Tracing | undefined): void {
  active = tracing;
}

/** The OTLP endpoint the environment configures, or undefined (tracing off). */
export function otlpEndpointFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return undefined;
  if ((env.OTEL_TRACES_EXPORTER ?? '').toLowerCase() === 'none') return undefined;
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const) {
    const value = env[name]?.trim();
    if (!value) continue;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ConfigError(`${name}: must be an http(s) URL of an OTLP/HTTP receiver (e.g. http://collector:4318)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name}: must be an http(s) URL`);
    return value;
  }
  return undefined;
}
