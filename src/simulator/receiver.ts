/**
 * A tiny loopback HTTP receiver for notifications and browser redirects, used by tests and demos
 * that run the simulator: it records every request and answers with the status `answer` chooses
 * (default 200).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: unknown;
  at: number;
}

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** Resolves once at least `count` requests (matching `pred`) have arrived. */
  waitFor(count: number, pred?: (r: ReceivedRequest) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(
  answer: (r: ReceivedRequest, index: number) => { status: number; body?: string; headers?: Record<string, string> } = () => ({ status: 200 }),
): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const r: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, at: Date.now() };
      try {
        r.json = body ? JSON.parse(body) : undefined;
      } catch {
        /* not JSON */
      }
      received.push(r);
      const a = answer(r, received.length - 1);
      res.writeHead(a.status, { 'content-type': 'text/plain; charset=utf-8', ...(a.headers ?? {}) });
      res.end(a.body ?? 'ok');
      for (const w of [...waiters]) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    waitFor(count, pred = () => true, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const hits = received.filter(pred);
          if (hits.length < count) return false;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(hits);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: ${received.filter(pred).length}/${count} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
