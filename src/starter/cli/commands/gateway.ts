/** `mpf gateway`: the HTTP gateway process (gateway/main.ts); prints `listening on URL` once it is ready. */
import { Command } from 'commander';
import type * as GatewayMain from '../../gateway/main';
import { parsePort } from '../options';

interface GatewayCommandOptions {
  port?: number;
  host?: string;
}

export function gatewayCommand(): Command {
  return new Command('gateway')
    .description('run the HTTP gateway (REST API, webhooks, PIN page, codec server); prints "listening on URL"')
    .option('--port <n>', 'port to listen on, 0 = a free port (default: GATEWAY_PORT or 8080)', parsePort)
    .option('--host <host>', 'interface to listen on (default: GATEWAY_HOST or 127.0.0.1)')
    .action(async (opts: GatewayCommandOptions) => {
      // Loaded only when it runs: no other command loads fastify and the gateway.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runGatewayMain } = require('../../gateway/main') as typeof GatewayMain;
      await runGatewayMain({
        ...(opts.port !== undefined ? { port: opts.port } : {}),
        ...(opts.host !== undefined ? { host: opts.host } : {}),
      });
    });
}
