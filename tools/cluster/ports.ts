/**
 * Ports for the native topology. The Temporal server records each service's membership port in
 * PostgreSQL as a SMALLINT (cluster_membership.rpc_port), so its ports must be below 32768 — and
 * the OS hands out ephemeral ports (freePort()) from 32768 up on Linux. Those are taken here from
 * 20000–32767, where no ephemeral port is ever assigned, so a race with freePort() callers is not
 * possible either (only with a program that binds one of these numbers by itself).
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const LOW = 20_000;
const HIGH = 32_767;

function tryListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** `count` distinct free ports on `host`, each below 32768. */
export async function freeLowPorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const chosen = new Set<number>();
  for (let tries = 0; chosen.size < count; tries++) {
    if (tries > 500) throw new Error(`no ${count} free ports between ${LOW} and ${HIGH} on ${host}`);
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (!chosen.has(port) && (await tryListen(port, host))) chosen.add(port);
  }
  return [...chosen];
}

/**
 * The ports a cluster chose, by component, kept in <state dir>/ports.json. With --keep-data a
 * restart takes the same ports again (when they are free), so that what outlives a run still
 * points somewhere: the notification URLs the provider holds (the gateways' ports), the pay_links
 * customers hold (the simulator's checkout), the operator's shell (cluster.env), and the Temporal
 * server's membership addresses, which PostgreSQL remembers (new ones made a restarted server
 * wait for the old run's members to time out). A port taken meanwhile is replaced, and said.
 */
export class PortBook {
  private saved: Record<string, number[]> = {};

  constructor(
    private readonly file: string,
    /** Reuse what the file holds (--keep-data); otherwise start afresh. */
    reuse: boolean,
    private readonly say: (line: string) => void = () => undefined,
  ) {
    if (!reuse) return;
    try {
      const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
      if (parsed && typeof parsed === 'object') this.saved = parsed as Record<string, number[]>;
    } catch {
      // no file yet: every port is new
    }
  }

  /** `count` ports for `name`: the ones it had, when all are still free; else new ones (below 32768 when `low`). */
  async take(name: string, count: number, o: { low?: boolean; fresh?: boolean } = {}): Promise<number[]> {
    const had = this.saved[name];
    if (!o.fresh && had?.length === count) {
      const free = await Promise.all(had.map((p) => tryListen(p, '127.0.0.1')));
      if (free.every(Boolean)) return had;
      this.say(`${name}: port(s) ${had.filter((_, i) => !free[i]).join(', ')} of the last run are taken; new ones chosen (URLs handed out before now point nowhere)`);
    }
    const ports = o.low ? await freeLowPorts(count) : await Promise.all(Array.from({ length: count }, () => freeEphemeral()));
    this.saved[name] = ports;
    this.write();
    return ports;
  }

  async one(name: string, o: { low?: boolean; fresh?: boolean } = {}): Promise<number> {
    return (await this.take(name, 1, o))[0]!;
  }

  private write(): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.writeFileSync(`${this.file}.tmp`, `${JSON.stringify(this.saved, null, 2)}\n`);
    fs.renameSync(`${this.file}.tmp`, this.file);
  }
}

function freeEphemeral(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
