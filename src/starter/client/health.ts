/**
 * Every call the client makes to Temporal goes through here: bounded (a server that does not
 * answer is TemporalUnavailableError within seconds, not half a minute of SDK retries), queries
 * answered within a deadline, and the server's own word on a flow (describe: no worker needed).
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { QueryDefinition, SignalDefinition } from '@temporalio/common';
import { FLOW_STATE } from '../../workflows/search-attributes';
import { flowKindOf as kindOf } from '../../workflows/flow-ids';
import { FlowNotFoundError, TemporalUnavailableError } from './errors';
import { isDeadlineExceeded, isTemporalUnavailable } from './temporal-errors';
import type { FlowStatusSummary } from './views';

export interface TemporalGateOptions {
  /** How long a state lookup waits for a worker to answer before falling back (default 10 s). */
  queryAnswerTimeoutMs?: number;
  /**
   * A call to Temporal that has not answered after this long checks that the server answers at
   * all (GetSystemInfo, 2 s deadline), and again every as long; when it does not, the call ends
   * with TemporalUnavailableError (default 2 s).
   */
  temporalProbeIntervalMs?: number;
}

/** `swap`, `payment_link`, or `flow` for an id of neither kind. */
export function flowKindOf(flowId: string): string {
  return kindOf(flowId) ?? 'flow';
}

export class TemporalGate {
  constructor(
    readonly temporal: Client,
    private readonly opts: TemporalGateOptions,
  ) {}

  /** How long a query waits for a worker's answer (queryAnswerTimeoutMs, default 10 s). */
  queryAnswerTimeoutMs(): number {
    return this.opts.queryAnswerTimeoutMs ?? 10_000;
  }

  /** A flow's query, answered by a worker within queryAnswerTimeoutMs or failed with the deadline. */
  queryWithinDeadline<T>(flowId: string, query: QueryDefinition<T>): Promise<T> {
    return this.temporal.withDeadline(Date.now() + this.queryAnswerTimeoutMs(), () => this.temporal.workflow.getHandle(flowId).query(query));
  }

  /**
   * Runs a call to Temporal; when it has not answered after temporalProbeIntervalMs, checks that
   * the server answers at all (and again at that interval), and ends the call with
   * TemporalUnavailableError when it does not — instead of the SDK retrying an unreachable server
   * for half a minute. UNAVAILABLE failures of the call itself are the same error.
   */
  async guard<T>(fn: () => Promise<T>, flowId?: string): Promise<T> {
    const intervalMs = this.opts.temporalProbeIntervalMs ?? 2_000;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const abort = new AbortController();
    const down = new Promise<never>((_, reject) => {
      const probe = async (): Promise<void> => {
        if (done) return;
        if (!(await this.temporalAnswers())) {
          abort.abort(); // ends the call's own retries too
          return reject(new TemporalUnavailableError(flowId));
        }
        if (!done) timer = setTimeout(() => void probe(), intervalMs);
      };
      timer = setTimeout(() => void probe(), intervalMs);
    });
    down.catch(() => undefined);
    const work = this.temporal.withAbortSignal(abort.signal, fn);
    work.catch(() => undefined);
    try {
      return await Promise.race([work, down]);
    } catch (err) {
      if (!(err instanceof TemporalUnavailableError) && isTemporalUnavailable(err)) throw new TemporalUnavailableError(flowId);
      throw err;
    } finally {
      done = true;
      clearTimeout(timer);
    }
  }

  /** Whether the Temporal server answers GetSystemInfo within 2 s. */
  async temporalAnswers(): Promise<boolean> {
    const conn = this.temporal.connection;
    try {
      await conn.withDeadline(Date.now() + 2_000, () => conn.workflowService.getSystemInfo({}));
      return true;
    } catch (err) {
      return !(isTemporalUnavailable(err) || isDeadlineExceeded(err));
    }
  }

  /**
   * How the server describes a flow (no worker needed): its execution status and the last state it
   * published; undefined when there is no such flow.
   */
  async flowStatus(flowId: string): Promise<FlowStatusSummary | undefined> {
    try {
      const desc = await this.guard(() => this.temporal.workflow.getHandle(flowId).describe(), flowId);
      return { status: desc.status.name, state: desc.typedSearchAttributes.get(FLOW_STATE) };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  async signalFlow<A extends unknown[]>(flowId: string, signal: SignalDefinition<A>, ...args: A): Promise<void> {
    try {
      await this.guard(() => this.temporal.workflow.getHandle(flowId).signal(signal, ...args), flowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowKindOf(flowId), flowId);
      throw err;
    }
  }
}
