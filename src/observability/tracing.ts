/**
 * OpenTelemetry tracing for one process (worker or gateway). Off unless configured: with no
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) nothing is installed, the
 * API stays a no-op, no interceptor or plugin is added and no undici diagnostics are subscribed.
 *
 * When on: a NodeTracerProvider (AsyncLocalStorage context, W3C `traceparent` + baggage
 * propagation), a batching OTLP/HTTP exporter (it reads the standard OTEL_EXPORTER_OTLP_* variables
 * itself: endpoint, headers, timeout), and the undici instrumentation, so the provider client's
 * calls are child spans of the activity span (never with headers or bodies: only method, URL
 * without query, status). Tests install it with their own span processor (an in-memory exporter).
 *
 * The SDK line is OpenTelemetry JS 1.x because @temporalio/interceptors-opentelemetry 1.24.0 builds
 * the workflow spans as 1.x ReadableSpans (parentSpanId, instrumentationLibrary).
 */
import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { activeTracing, otlpEndpointFromEnv, setActiveTracing, type Tracing } from './tracing-state';

export { activeTracing, otlpEndpointFromEnv, type Tracing };

/** Installs tracing for this process (once; a second call answers the first installation). */
export function installTracing(opts: { serviceName: string; spanProcessor: SpanProcessor }): Tracing {
  const existing = activeTracing();
  if (existing) return existing;
  const resource = new Resource({ 'service.name': opts.serviceName });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [opts.spanProcessor] });
  provider.register();
  const undici = new UndiciInstrumentation({
    // Only calls made on behalf of something traced (an activity): no stray root spans.
    requireParentforSpans: true,
  });
  undici.setTracerProvider(provider);
  undici.enable();
  const tracing: Tracing = {
    serviceName: opts.serviceName,
    resource,
    spanProcessor: opts.spanProcessor,
    async shutdown() {
      undici.disable();
      await provider.shutdown();
      trace.disable();
      setActiveTracing(undefined);
    },
  };
  setActiveTracing(tracing);
  return tracing;
}

/**
 * Tracing as the environment configures it: installed (OTLP/HTTP, batched) when an OTLP endpoint
 * is set, else undefined. OTEL_SERVICE_NAME overrides `serviceName`.
 */
export function tracingFromEnv(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (!otlpEndpointFromEnv(env)) return undefined;
  return installTracing({
    serviceName: env.OTEL_SERVICE_NAME?.trim() || serviceName,
    spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter()),
  });
}
