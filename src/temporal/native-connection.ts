/**
 * The worker's connection to Temporal (the Rust core's NativeConnection). Kept apart from
 * connection.ts so that the gateway and the CLI never load @temporalio/worker.
 */
import { NativeConnection } from '@temporalio/worker';
import { connectError, targetToken, type TemporalTarget } from './connection';

/** With a machine client's token (target.tokens), each renewed token is handed to the connection (setApiKey): no restart. */
export async function connectNative(target: TemporalTarget): Promise<NativeConnection> {
  const token = await targetToken(target);
  try {
    const connection = await NativeConnection.connect({ ...target.profile, address: target.address, ...(token ? { apiKey: token.current() } : {}) });
    token?.onRenew((t) => connection.setApiKey(t));
    return connection;
  } catch (e) {
    token?.stop();
    throw await connectError(target, e);
  }
}
