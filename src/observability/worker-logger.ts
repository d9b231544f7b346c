/**
 * The worker's logs through pino: one JSON object per line on stdout, for the SDK's Runtime logger
 * (the worker's own lines, forwarded Rust core lines, and the workflow and activity loggers, which
 * the SDK routes to it), and for our own start-up lines.
 *
 * - Task tokens never reach a line: the fields `taskToken`, `base64TaskToken`, `task` and
 *   `taskEncoded` are removed (the activity interceptor drops taskToken too).
 * - Webpack's bundle statistics (a many-line message at every start) are logged at debug, so they
 *   appear only with LOG_LEVEL=debug or trace.
 * - Errors are serialised by pino's error serializer (type, message, stack), never as raw objects.
 */
import type { Logger as TemporalLogger, LogLevel, LogMetadata } from '@temporalio/common';
import pino, { type Logger, type DestinationStream } from 'pino';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Fields removed from every line: task tokens and raw task protos. */
export const WORKER_LOG_REMOVED_FIELDS = ['taskToken', 'base64TaskToken', 'task', 'taskEncoded'];

export type WorkerLogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The worker process's pino logger (JSON lines; stdout unless a destination is given). */
export function createWorkerPino(opts: { level?: WorkerLogLevel; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: { service: 'mpf-worker', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: WORKER_LOG_REMOVED_FIELDS, remove: true },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    opts.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** webpack's statistics, as the SDK's bundler logs them once per start. */
const isBundleStatistics = (message: string): boolean => message.includes('\n') && /\bwebpack [\d.]+ compiled\b/.test(message);

/** The SDK's Logger interface on top of pino (Runtime.install({ logger })). */
export class PinoTemporalLogger implements TemporalLogger {
  constructor(readonly pino: Logger) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    const method = isBundleStatistics(message) ? 'debug' : (PINO_LEVEL[level] ?? 'info');
    if (!this.pino.isLevelEnabled(method)) return;
    this.pino[method]({ ...meta }, message);
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }

  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }

  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }

  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }

  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

/**
 * What the worker passes to Runtime.install: the pino logger, and the Rust core's own lines
 * forwarded to it (at WARN and above, INFO with LOG_LEVEL=debug/trace) instead of printed as text.
 * Other Runtime options (metrics) are added beside these.
 */
export function workerRuntimeLogging(log: Logger): { logger: TemporalLogger; telemetryOptions: { logging: { filter: { core: LogLevel; other: LogLevel }; forward: Record<string, never> } } } {
  const verbose = log.isLevelEnabled('debug');
  return {
    logger: new PinoTemporalLogger(log),
    telemetryOptions: { logging: { filter: { core: verbose ? 'INFO' : 'WARN', other: 'ERROR' }, forward: {} } },
  };
}
