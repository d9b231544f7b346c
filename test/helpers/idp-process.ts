/**
 * The topology's identity provider (node-oidc-provider, tools/cluster/idp-server.ts) as a process
 * of its own for a test, with fresh secrets (people's passwords, clients' secrets, the signing
 * key) in `dir`; restartable on the same port with the same keys (an IdP outage and its recovery).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_IDP_TTL, idpServerConfig, type IdpSecrets } from '../../tools/cluster/idp';

const ROOT = path.join(__dirname, '..', '..');

/** The IdP on `port`, with `secrets` (the same keys across restarts). */
export class IdpProcess {
  private child?: ChildProcess;
  output = '';
  running = false;
  constructor(readonly dir: string, readonly port: number, readonly secrets: IdpSecrets) {}
  get issuer(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.output = '';
    const file = path.join(this.dir, 'idp.json');
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, JSON.stringify(idpServerConfig({ issuer: this.issuer, port: this.port, secrets: this.secrets, ttl: DEFAULT_IDP_TTL, uiCallbackUrls: ['http://127.0.0.1:1/auth/sso/callback'] })), { mode: 0o600 });
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'tools', 'cluster', 'idp-server.ts'), file], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the IdP did not start in 60 s:\n${this.output}`)), 60_000);
      const seen = (chunk: Buffer) => {
        this.output += chunk.toString();
        if (!this.running && this.output.includes(`idp: listening on ${this.issuer}`)) {
          this.running = true;
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', seen);
      child.stderr!.on('data', seen);
      child.once('exit', (code) => {
        this.running = false;
        clearTimeout(timer);
        reject(new Error(`the IdP exited (${code}):\n${this.output}`));
      });
    });
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || !this.running) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}
