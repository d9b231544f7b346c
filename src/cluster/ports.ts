/**
 * Ports for the native topology. The Temporal server records each service's membership port in
 * PostgreSQL as a SMALLINT (cluster_membership.rpc_port), so its ports must be below 32768 — and
 * the OS hands out ephemeral ports (freePort()) from 32768 up on Linux. Those are taken here from
 * 20000–32767, where no ephemeral port is ever assigned, so a race with freePort() callers is not
 * possible either (only with a program that binds one of these numbers by itself).
 */
import net from 'node:net';

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
