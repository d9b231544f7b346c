/**
 * The worker's connection to Temporal (the Rust core's NativeConnection). Kept apart from
 * connection.ts so that the gateway and the CLI never load @temporalio/worker.
 */
import { NativeConnection } from '@temporalio/worker';
import { connectError, type TemporalTarget } from './connection';

export async function connectNative(target: TemporalTarget): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({ ...target.profile, address: target.address });
  } catch (e) {
    throw await connectError(target, e);
  }
}
