/**
 * The topology's certificates (topology.ts: tlsJob), made with the system's `openssl` under
 * <state dir>/tls: directory 0700, every file 0600, one directory per component. Nothing is
 * downloaded. A run that keeps its data (--keep-data) keeps its CA and certificates too; a
 * component missing from them (one more worker, say) gets its certificate from the same CA.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runToEnd } from './processes';
import { tlsCaJob, tlsComponentJob, TLS_FILES, TLS_NAMES, type JobStep, type TlsComponent } from './topology';

export class TlsJobError extends Error {
  override name = 'TlsJobError';
}

export function tlsDir(stateDir: string): string {
  return path.join(stateDir, 'tls');
}

interface RunContext {
  logDir: string;
  runId: string;
}

async function runOpenssl(dir: string, steps: JobStep[], ctx: RunContext): Promise<void> {
  for (const step of steps) {
    const [bin, ...args] = step.argv;
    if (bin !== 'openssl') throw new Error(`certificate job: ${step.argv.join(' ')} is not an openssl command`);
    let r: { code: number; output: string };
    try {
      r = await runToEnd(`openssl ${args.slice(0, 2).join(' ')}`, 'openssl', args, {
        cwd: dir,
        env: { PATH: process.env.PATH },
        logFile: path.join(ctx.logDir, 'temporal-certs.log'),
        runId: ctx.runId,
      });
    } catch (e) {
      throw new TlsJobError(`certificate job: cannot run openssl (${(e as Error).message}); install OpenSSL 3 (the openssl command)`);
    }
    if (r.code !== 0) throw new TlsJobError(`certificate job: \`${step.argv.join(' ')}\` failed (${r.code}):\n${r.output.trim().split('\n').slice(-10).join('\n')}`);
  }
}

/** Every file 0600 and every directory 0700 under `dir`. */
function lockDown(dir: string): void {
  fs.chmodSync(dir, 0o700);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) lockDown(p);
    else fs.chmodSync(p, 0o600);
  }
}

const hasCert = (dir: string) => fs.existsSync(path.join(dir, TLS_FILES.cert)) && fs.existsSync(path.join(dir, TLS_FILES.key));

/**
 * Makes the CA (unless `reuse` and it exists) and the certificate of every component that has none
 * (all of them, without `reuse`). Returns the directory.
 */
export async function prepareTls(stateDir: string, components: TlsComponent[], reuse: boolean, ctx: RunContext): Promise<{ dir: string; issued: string[] }> {
  const dir = tlsDir(stateDir);
  if (!reuse) fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  const caExists = fs.existsSync(path.join(dir, 'ca', 'cert.pem')) && fs.existsSync(path.join(dir, 'ca', 'key.pem'));
  if (!caExists) {
    fs.rmSync(path.join(dir, 'ca'), { recursive: true, force: true });
    fs.mkdirSync(path.join(dir, 'ca'), { mode: 0o700 });
    await runOpenssl(dir, tlsCaJob(), ctx);
  }
  const issued: string[] = [];
  for (const c of components) {
    const d = path.join(dir, c.name);
    if (caExists && hasCert(d)) continue;
    await issueCertificate(dir, c, ctx);
    issued.push(c.name);
  }
  lockDown(dir);
  return { dir, issued };
}

/**
 * A new key and certificate for one component, signed by the CA in `dir`, replacing what the
 * component had (rotation: the process reads its files again when it restarts).
 */
export async function issueCertificate(dir: string, c: TlsComponent, ctx: RunContext): Promise<string> {
  const d = path.join(dir, c.name);
  // Written aside and moved into place, so a process starting meanwhile never reads half of it.
  const staging = path.join(dir, `.${c.name}.new`);
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { mode: 0o700 });
  await runOpenssl(dir, tlsComponentJob(c, `.${c.name}.new`), ctx);
  fs.rmSync(path.join(staging, 'request.pem'), { force: true });
  lockDown(staging);
  fs.rmSync(d, { recursive: true, force: true });
  fs.renameSync(staging, d);
  return d;
}

/** Connection options of @temporalio/client for a component's certificate (the tests', the soak's, the readiness checks'). */
export function clientTls(componentDir: string): {
  serverNameOverride: string;
  serverRootCACertificate: Buffer;
  clientCertPair: { crt: Buffer; key: Buffer };
} {
  const read = (f: string) => fs.readFileSync(path.join(componentDir, f));
  return {
    serverNameOverride: TLS_NAMES.frontend,
    serverRootCACertificate: read(TLS_FILES.ca),
    clientCertPair: { crt: read(TLS_FILES.cert), key: read(TLS_FILES.key) },
  };
}
