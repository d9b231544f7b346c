/**
 * The failure converter used by the worker (main thread AND workflow sandbox) and the clients.
 * `encodeCommonAttributes: true` moves every failure's message and stack trace into an encoded
 * payload, so the payload codec encrypts them like any other payload.
 *
 * This file is loaded by path (DataConverter.failureConverterPath) and bundled into the workflow
 * sandbox: it must import nothing but @temporalio/common.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
