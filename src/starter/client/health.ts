/**
 * Every call the client makes to Temporal goes through here: bounded (a server that does not
 * answer is TemporalUnavailableError within seconds, not half a minute of SDK retries; a frontend
 * that answers while its database does not is TemporalPersistenceUnavailableError as fast),
 * queries answered within a deadline, and the server's own word on a flow (describe: no worker
 * needed).
 *
 * Why two probes: with its database down, a Temporal frontend still answers GetSystemInfo and
 * DescribeTaskQueue at once (both from memory), while every call that reads or writes a flow
 * (DescribeWorkflowExecution, List/CountWorkflowExecutions, DescribeNamespace, starts, updates)
 * waits for the caller's deadline, or answers UNAVAILABLE "no usable database connection" after
 * about 27 s. A describe of an id that never exists needs the database and nothing else: NotFound
 * within milliseconds when the database answers, no answer when it does not.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { QueryDefinition, SignalDefinition } from '@temporalio/common';
import { FLOW_STATE } from '../../workflows/search-attributes';
import { flowKindOf as kindOf } from '../../workflows/flow-ids';
import { FlowNotFoundError, TemporalCredentialsRefusedError, TemporalPersistenceUnavailableError, TemporalUnavailableError, WorkerUnavailableError } from './errors';
import { credentialsRefusal, isChannelClosed, isDeadlineExceeded, isNoPoller, isPersistenceUnavailable, isTemporalUnavailable } from './temporal-errors';
import type { FlowStatusSummary } from './views';

export interface TemporalGateOptions {
  /** How long a state lookup waits for a worker to answer before falling back (default 10 s). */
  queryAnswerTimeoutMs?: number;
  /**
   * A call to Temporal that has not answered after this long checks that the server answers at
   * all (GetSystemInfo, 2 s deadline) and that its persistence does (a describe of an absent id,
   * 2 s), and again every as long; when either does not, the call ends with
   * TemporalUnavailableError or TemporalPersistenceUnavailableError (default 2 s). With either
   * down, a call thus ends after about this plus PROBE_TIMEOUT_MS (the frontend's probe fails
   * within its deadline; with only the database down, the frontend answers at once and the
   * persistence probe takes its 2 s): 4.1 s measured for a lone request, the documented bound 5 s.
   */
  temporalProbeIntervalMs?: number;
}

/** How long each probe of the frontend and of its persistence waits for its answer. */
export const PROBE_TIMEOUT_MS = 2_000;
/** A workflow id that no flow ever has: describing it needs only Temporal's persistence. */
export const PROBE_WORKFLOW_ID = 'mpf-persistence-probe-never-started';

/** What of Temporal answers: all of it, not the frontend, or the frontend but not its persistence. */
export type TemporalAvailability = 'ok' | 'frontend_unavailable' | 'persistence_unavailable';

/** Resolves with `onTimeout` after `ms` unless `p` settles first (the timer never holds the process). */
export function within<T>(p: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function unrefd(timer: NodeJS.Timeout): NodeJS.Timeout {
  timer.unref();
  return timer;
}

/** `swap`, `payment_link`, or `flow` for an id of neither kind. */
export function flowWord(flowId: string): string {
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
   * the server and its persistence answer (availability(), and again at that interval), and ends
   * the call with TemporalUnavailableError or TemporalPersistenceUnavailableError when they do not
   * — instead of the SDK retrying an unreachable server, or the frontend waiting for its
   * database, for half a minute. UNAVAILABLE failures of the call itself are the same errors.
   */
  async guard<T>(fn: () => Promise<T>, flowId?: string): Promise<T> {
    const intervalMs = this.opts.temporalProbeIntervalMs ?? 2_000;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const abort = new AbortController();
    const down = new Promise<never>((_, reject) => {
      const probe = async (): Promise<void> => {
        if (done) return;
        const availability = await this.availability();
        if (done) return;
        if (availability !== 'ok') {
          abort.abort(); // ends the call's own retries too
          return reject(availability === 'persistence_unavailable' ? new TemporalPersistenceUnavailableError(flowId) : new TemporalUnavailableError(flowId));
        }
        if (!done) timer = unrefd(setTimeout(() => void probe(), intervalMs));
      };
      // Unref'd: a call still pending never holds the process by itself (a request in flight is
      // held by its server; a call left behind by a process that is stopping is not).
      timer = unrefd(setTimeout(() => void probe(), intervalMs));
    });
    down.catch(() => undefined);
    const work = this.temporal.withAbortSignal(abort.signal, fn);
    work.catch(() => undefined);
    try {
      return await Promise.race([work, down]);
    } catch (err) {
      if (err instanceof TemporalUnavailableError) throw err;
      if (isPersistenceUnavailable(err)) throw new TemporalPersistenceUnavailableError(flowId);
      const refused = credentialsRefusal(err);
      if (refused !== undefined) throw new TemporalCredentialsRefusedError(flowId, refused);
      if (isTemporalUnavailable(err)) throw new TemporalUnavailableError(flowId);
      throw err;
    } finally {
      done = true;
      clearTimeout(timer);
    }
  }

  private probing: Promise<TemporalAvailability> | undefined;

  /**
   * Whether Temporal answers: GetSystemInfo (the frontend), then a describe of PROBE_WORKFLOW_ID
   * (its persistence), each within PROBE_TIMEOUT_MS. Concurrent callers share one probe.
   */
  availability(): Promise<TemporalAvailability> {
    this.probing ??= this.probe().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async probe(): Promise<TemporalAvailability> {
    if (!(await this.frontendAnswers())) return 'frontend_unavailable';
    return (await this.persistenceAnswers()) ? 'ok' : 'persistence_unavailable';
  }

  /**
   * True when the frontend answers, false when it cannot be reached within PROBE_TIMEOUT_MS. Only
   * the deadline bounds it, so that nothing of the call (the SDK's retries of a refused
   * connection) outlives the answer.
   */
  private async frontendAnswers(): Promise<boolean> {
    const conn = this.temporal.connection;
    try {
      await conn.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () => conn.workflowService.getSystemInfo({}));
      return true;
    } catch (err) {
      // This client's own connection closed (its process is stopping) answers nothing either.
      return !(isTemporalUnavailable(err) || isDeadlineExceeded(err) || isChannelClosed(err));
    }
  }

  /**
   * True when the frontend reads its persistence: NotFound (or any answer) for an id no flow has.
   * A frontend waiting for its database may answer UNAVAILABLE just before the deadline, and the
   * SDK then retries after a backoff past it: a timer ends the wait (and the call) on time.
   */
  private async persistenceAnswers(): Promise<boolean> {
    const conn = this.temporal.connection;
    const abort = new AbortController();
    const call = conn
      .withAbortSignal(abort.signal, () =>
        conn.withDeadline(Date.now() + PROBE_TIMEOUT_MS, () =>
          conn.workflowService.describeWorkflowExecution({ namespace: this.temporal.options.namespace, execution: { workflowId: PROBE_WORKFLOW_ID } }),
        ),
      )
      .then(
        () => true,
        (err: unknown) => !(isTemporalUnavailable(err) || isDeadlineExceeded(err)),
      );
    const answered = await within(call, PROBE_TIMEOUT_MS + 100, undefined);
    if (answered === undefined) abort.abort();
    return answered ?? false;
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

  /**
   * A message to a flow that needs a worker's answer (an update: a cancel, a resolution), bounded
   * by `waitMs` under guard(). When no worker answered in time (our deadline passed, or the server
   * knows no worker polls), it is WorkerUnavailableError naming the flow and its last published
   * state: 503 with Retry-After on the gateway, never an unclassified SDK error. Other errors as
   * they are (the caller reads WorkflowNotFoundError, WorkflowUpdateFailedError).
   */
  async answered<T>(flowId: string, kind: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
    try {
      return await this.guard(() => this.temporal.withDeadline(Date.now() + waitMs, fn), flowId);
    } catch (err) {
      if (err instanceof TemporalUnavailableError || !(isDeadlineExceeded(err) || isNoPoller(err))) throw err;
      const last = await this.flowStatus(flowId).catch(() => undefined);
      throw new WorkerUnavailableError(kind, flowId, waitMs, last?.state);
    }
  }

  async signalFlow<A extends unknown[]>(flowId: string, signal: SignalDefinition<A>, ...args: A): Promise<void> {
    try {
      await this.guard(() => this.temporal.workflow.getHandle(flowId).signal(signal, ...args), flowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new FlowNotFoundError(flowWord(flowId), flowId);
      throw err;
    }
  }
}
