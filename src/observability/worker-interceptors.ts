/**
 * The worker's interceptors and sinks:
 * - always: activities' log lines lose the task token and gain the flow's request id (from the
 *   header the workflow interceptor module `src/workflows/log-interceptors.ts` sets);
 * - with tracing on: @temporalio/interceptors-opentelemetry's activity interceptors (a span per
 *   activity, child of the workflow's StartActivity span), its workflow interceptors module, and
 *   the sink that exports the workflow's spans through the process's span processor.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import type { ActivityInterceptors, InjectedSinks, WorkerInterceptors, WorkerOptions } from '@temporalio/worker';
import type { Context as ActivityContext } from '@temporalio/activity';
import { REQUEST_ID_ACTIVITY_HEADER } from './names';
import { activeTracing, type Tracing } from './tracing-state';

/** The workflow interceptor modules to bundle (request ids always; OpenTelemetry when tracing). */
export function mpfWorkflowInterceptorModules(tracing: Tracing | undefined = activeTracing()): string[] {
  const modules = [require.resolve('../workflows/log-interceptors')];
  if (tracing) modules.push(require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'));
  return modules;
}

function requestIdActivityInterceptors(): ActivityInterceptors {
  let requestId: string | undefined;
  return {
    inbound: {
      execute(input, next) {
        const header = input.headers[REQUEST_ID_ACTIVITY_HEADER];
        if (header) {
          try {
            const value: unknown = defaultPayloadConverter.fromPayload(header);
            if (typeof value === 'string') requestId = value;
          } catch {
            // an unreadable header only costs the log attribute
          }
        }
        return next(input);
      },
    },
    outbound: {
      getLogAttributes(input, next) {
        const { taskToken: _dropped, ...rest } = input as Record<string, unknown>;
        return next(requestId ? { ...rest, reqId: requestId } : rest);
      },
    },
  };
}

/** Interceptors (activity factories) and sinks for Worker.create. */
export function mpfWorkerInterceptors(tracing: Tracing | undefined = activeTracing()): {
  activity: NonNullable<WorkerInterceptors['activity']>;
  sinks: NonNullable<WorkerOptions['sinks']>;
} {
  const activity: NonNullable<WorkerInterceptors['activity']> = [() => requestIdActivityInterceptors()];
  if (!tracing) return { activity, sinks: {} };
  activity.push((ctx: ActivityContext) => ({
    inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
    outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
  }));
  const sinks: InjectedSinks<OpenTelemetrySinks> = { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) };
  return { activity, sinks };
}
