/**
 * The data converters every Temporal participant uses, so that ALL payloads (workflow and
 * activity inputs and results, signals, updates, queries, memos, heartbeats) and every failure's
 * message and stack trace are encrypted before they reach the Temporal server.
 *
 *   Worker.create({ ..., dataConverter: workerDataConverter(keys) })
 *   new Client({ ..., dataConverter: clientDataConverter(keys) })
 *   bundleWorkflowCode({ ..., failureConverterPath: FAILURE_CONVERTER_PATH })   // only if you prebundle
 *
 * Search attributes are never encrypted (the server indexes them): never put secrets there.
 */
import type { DataConverter, LoadedDataConverter, PayloadCodec } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from './aes-gcm-codec';
import { failureConverter } from './failure-converter';
import { type KeyRing, toKeyRing } from './keys';

/**
 * Absolute path of the module exporting `failureConverter`, for WorkerOptions.dataConverter and
 * bundleWorkflowCode (resolves to the .ts file under tsx and to the .js file in dist/).
 */
export const FAILURE_CONVERTER_PATH: string = require.resolve('./failure-converter');

export function payloadCodecs(keys: string | KeyRing): PayloadCodec[] {
  return [new AesGcmCodec(toKeyRing(keys))];
}

/**
 * For Worker.create: the codec runs in the worker's main thread; the failure converter is loaded
 * by path both there and inside the workflow bundle (the worker passes the path to its bundler).
 */
export function workerDataConverter(keys: string | KeyRing): DataConverter {
  return { payloadCodecs: payloadCodecs(keys), failureConverterPath: FAILURE_CONVERTER_PATH };
}

/** For Client / WorkflowClient / Connection users: an already loaded converter (no require by path). */
export function clientDataConverter(keys: string | KeyRing): LoadedDataConverter {
  return { payloadConverter: defaultPayloadConverter, failureConverter, payloadCodecs: payloadCodecs(keys) };
}
