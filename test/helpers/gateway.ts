/**
 * The gateway on top of the real test stack (Temporal dev server, simulator, worker, MpfClient),
 * listening on a free loopback port with its own URL as public URL, so the simulator's
 * notifications reach it; the tests call it through the project's typed HTTP client (./http.ts).
 * Plus history helpers for the gateway tests.
 */
import { after, before, beforeEach } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { GatewayClient } from '../../src/http-client';
import type { ConfigPatch } from '../../src/simulator/options';
import { startGateway, type GatewayOptions, type RunningGateway } from '../../src/starter/gateway/main';
import { startStack, type Stack, type StackOptions } from './stack';
import { type CallOptions, gatewayCaller, type HttpAnswer } from './http';
import { getTestTemporal } from './temporal';

export { answerOf, type CallOptions, gatewayCall, gatewayCaller, type GatewayCaller, gatewayUrlCall, http, type HttpAnswer, testGatewayClient } from './http';

export const API_KEY = 'gateway-test-api-key-0123456789';

export interface GatewayHarness {
  stack: Stack;
  gw: RunningGateway;
  /** Everything the gateway logged (JSON lines). */
  logs: string[];
  /** The gateway's typed client with the API key (src/http-client). */
  client: GatewayClient;
  /** A call with the API key, through the typed client. */
  api(method: string, path: string, body?: unknown): Promise<HttpAnswer>;
  /** A call with whatever headers the test chooses, through the typed client. */
  call(method: string, path: string, opts?: CallOptions): Promise<HttpAnswer>;
  stop(): Promise<void>;
}

export async function startGatewayStack(
  opts: StackOptions & { gateway?: Partial<Omit<GatewayOptions, 'mpf' | 'apiKey'>> } = {},
): Promise<GatewayHarness> {
  const stack = await startStack(opts);
  const logs: string[] = [];
  let gw: RunningGateway;
  try {
    gw = await startGateway({
      mpf: stack.mpf,
      apiKey: API_KEY,
      port: 0,
      logger: { level: 'info', stream: { write: (line: string) => void logs.push(line) } },
      ...opts.gateway,
    });
  } catch (e) {
    await stack.stop();
    throw e;
  }
  const caller = gatewayCaller(gw.url, API_KEY);
  return {
    stack,
    gw,
    logs,
    client: caller.client,
    call: caller.call,
    api: (method, path, body) => caller.api(method, path, body),
    async stop() {
      await gw.close();
      await stack.stop();
    },
  };
}

/**
 * The preamble of a suite (call it inside `describe`) that runs on one gateway harness: started
 * before the suite's tests, stopped after them with the file's own dev server, and the simulator's
 * faults cleared and `simulatorConfig` set again before each test. The harness it returns can be
 * used in the suite's hooks and tests (once started; before that its members throw).
 */
export function gatewayHarnessForSuite(
  opts: Parameters<typeof startGatewayStack>[0] = {},
  each: { simulatorConfig?: ConfigPatch } = {},
): GatewayHarness {
  let h: GatewayHarness | undefined;
  const started = (): GatewayHarness => {
    if (!h) throw new Error('the gateway harness is not started yet: use it in a hook or a test');
    return h;
  };
  before(async () => {
    h = await startGatewayStack(opts);
  });
  after(async () => {
    await h?.stop();
    await stopOwnTemporal();
  });
  beforeEach(async () => {
    await started().stack.control.clearFaults();
    if (each.simulatorConfig) await started().stack.control.setConfig(each.simulatorConfig);
  });
  return {
    get stack() {
      return started().stack;
    },
    get gw() {
      return started().gw;
    },
    get logs() {
      return started().logs;
    },
    get client() {
      return started().client;
    },
    api: (method, path, body) => started().api(method, path, body),
    call: (method, path, o) => started().call(method, path, o),
    stop: () => started().stop(),
  };
}

export interface HistoryMessages {
  signals: string[];
  /** Names of updates accepted into history. */
  updates: string[];
}

/** The signals and accepted updates in a workflow's history. */
export async function historyMessages(stack: Stack, workflowId: string): Promise<HistoryMessages> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const signals: string[] = [];
  const updates: string[] = [];
  for (const e of history.events ?? []) {
    if (e.workflowExecutionSignaledEventAttributes) signals.push(e.workflowExecutionSignaledEventAttributes.signalName ?? '');
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes;
    if (accepted) updates.push(accepted.acceptedRequest?.input?.name ?? '');
    const admitted = e.workflowExecutionUpdateAdmittedEventAttributes;
    if (admitted) updates.push(admitted.request?.input?.name ?? '');
  }
  return { signals, updates };
}

export async function workflowExists(stack: Stack, workflowId: string): Promise<boolean> {
  try {
    await stack.client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return false;
    throw e;
  }
}

/**
 * Stops the Temporal dev server when this test process started it (a file run on its own);
 * without it the server's child process keeps the test process alive. A no-op under `npm test`.
 */
export async function stopOwnTemporal(): Promise<void> {
  await (await getTestTemporal()).shutdown();
}
