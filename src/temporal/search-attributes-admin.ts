/**
 * Registers our custom search attributes (MpfFlowKind, MpfState, MpfTxnRef, MpfApiKeyId, MpfCustomerRef) on whatever Temporal
 * the process talks to, idempotently: the worker does it at start-up, so a flow never fails for a
 * missing mapping on a server we did not start. Several workers starting together race: "already
 * exists" is success. A server that forbids it gets an error naming the attributes and the command
 * an operator runs instead.
 */
import { temporal } from '@temporalio/proto';
import { ConfigError } from '../config/env';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { GrpcStatus, hasGrpcCode } from './grpc-status';

type OperatorService = {
  listSearchAttributes(req: { namespace: string }): Promise<{ customAttributes?: Record<string, unknown> | null }>;
  addSearchAttributes(req: { namespace: string; searchAttributes: Record<string, number> }): Promise<unknown>;
};


export function operatorCommandFor(names: string[], namespace: string): string {
  return `temporal operator search-attribute create --namespace ${namespace} ${names.map((n) => `--name ${n} --type Keyword`).join(' ')}`;
}

/** Returns the attributes it added (empty when all were there). */
export async function ensureSearchAttributes(
  connection: { operatorService: unknown },
  namespace: string,
  opts: { settleTimeoutMs?: number } = {},
): Promise<string[]> {
  const svc = connection.operatorService as OperatorService;
  const listMissing = async () => {
    const existing = await svc.listSearchAttributes({ namespace });
    return Object.keys(CUSTOM_SEARCH_ATTRIBUTES).filter((k) => !(k in (existing.customAttributes ?? {})));
  };
  const missing = await listMissing();
  if (missing.length === 0) return [];
  try {
    await svc.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((k) => [k, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
  } catch (e) {
    if (hasGrpcCode(e, GrpcStatus.ALREADY_EXISTS)) return []; // another worker registered them first
    if (hasGrpcCode(e, GrpcStatus.PERMISSION_DENIED, GrpcStatus.UNAUTHENTICATED, GrpcStatus.UNIMPLEMENTED)) {
      throw new ConfigError(
        `search attributes ${missing.join(', ')} are not registered in namespace ${namespace} and this worker may not register them ` +
          `(${(e as Error).message}). Ask an operator to run: ${operatorCommandFor(missing, namespace)}`,
      );
    }
    throw e;
  }
  // The server answers before every frontend sees the new mapping; wait until it is listed.
  const deadline = Date.now() + (opts.settleTimeoutMs ?? 30_000);
  for (;;) {
    const still = await listMissing();
    if (still.length === 0) return missing;
    if (Date.now() > deadline) {
      throw new ConfigError(`search attributes ${still.join(', ')} were added to namespace ${namespace} but are still not listed; run: ${operatorCommandFor(still, namespace)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
