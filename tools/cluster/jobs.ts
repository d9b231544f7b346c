/**
 * The one-shot jobs of the topology, run with the commands compose runs (topology.ts): the schema
 * job (temporal-sql-tool) and the namespace job (the Temporal CLI). Each step's output goes to the
 * job's log; a failing step that compose tolerates (`|| echo`) or replaces (`|| other`) is treated
 * the same way here.
 */
import path from 'node:path';
import { runToEnd, type SpawnOptions } from './processes';
import { namespaceJob, schemaJob, type JobStep } from './topology';

export class JobError extends Error {
  override name = 'JobError';
}

async function runSteps(job: string, steps: JobStep[], binaries: Record<string, string>, opts: SpawnOptions): Promise<void> {
  const run = async (argv: string[]) => {
    const bin = binaries[argv[0] as string];
    if (!bin) throw new Error(`${job}: no binary for ${argv[0]}`);
    return runToEnd(`${job}: ${argv.slice(1, 5).join(' ')}`, bin, argv.slice(1), opts);
  };
  for (const step of steps) {
    const r = await run(step.argv);
    if (r.code === 0) continue;
    if (step.tolerate !== undefined) continue;
    if (step.orElse) {
      const r2 = await run(step.orElse);
      if (r2.code === 0) continue;
      throw new JobError(`${job}: \`${step.orElse.join(' ')}\` failed (${r2.code}):\n${lastLines(r2.output)}`);
    }
    throw new JobError(`${job}: \`${step.argv.join(' ')}\` failed (${r.code}):\n${lastLines(r.output)}`);
  }
}

function lastLines(text: string, n = 15): string {
  return text.trim().split('\n').slice(-n).join('\n');
}

export interface SchemaJobOptions {
  sqlTool: string;
  schemaDir: string;
  host: string;
  port: number;
  password: string;
  logDir: string;
  runId: string;
}

/** compose's temporal-schema service. */
export async function runSchemaJob(o: SchemaJobOptions): Promise<void> {
  await runSteps('schema job', schemaJob({ host: o.host, port: o.port, schemaDir: o.schemaDir }), { 'temporal-sql-tool': o.sqlTool }, {
    env: { PATH: process.env.PATH, SQL_PASSWORD: o.password },
    logFile: path.join(o.logDir, 'temporal-schema.log'),
    runId: o.runId,
  });
}

export interface NamespaceJobOptions {
  temporalCli: string;
  address: string;
  /** The namespace's retention (default topology's NAMESPACE_RETENTION). */
  retention?: string;
  /** The CLI's envconfig TLS settings (temporalClientTlsEnv of the operator's certificate). */
  tlsEnv: Record<string, string>;
  logDir: string;
  runId: string;
  /** compose restarts the job on failure (restart: on-failure); so do we, this many times. */
  attempts?: number;
}

/** compose's temporal-namespace service: the namespace and our search attributes. */
export async function runNamespaceJob(o: NamespaceJobOptions): Promise<void> {
  const attempts = o.attempts ?? 5;
  for (let i = 1; ; i++) {
    try {
      await runSteps('namespace job', namespaceJob(o.address, o.retention), { temporal: o.temporalCli }, {
        // HOME: the state dir, so no profile of the user's (~/.config/temporalio) changes the target.
        env: { PATH: process.env.PATH, HOME: path.dirname(o.logDir), ...o.tlsEnv },
        logFile: path.join(o.logDir, 'temporal-namespace.log'),
        runId: o.runId,
      });
      return;
    } catch (e) {
      if (i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}
