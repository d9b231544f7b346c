/**
 * `mpf codec-web-endpoint`: the codec URL to give Temporal Web (TEMPORAL_CODEC_ENDPOINT or
 * `temporal server start-dev --ui-codec-endpoint`), derived from CODEC_AUTH_TOKEN and the
 * gateway's public URL. It is a capability URL: whoever holds it can decode payloads, so it is
 * printed only on request and belongs only in the configuration of a Temporal Web that only
 * operators can open.
 */
import { Command } from 'commander';
import { ConfigError, loadEnv } from '../../../config/env';
import type * as CodecServer from '../../../codec/codec-server';
import { gatewayPublicUrl } from '../../client/urls';

interface CodecWebEndpointOptions {
  baseUrl?: string;
}

export function codecWebEndpointCommand(): Command {
  return new Command('codec-web-endpoint')
    .description("print the codec URL for Temporal Web (a capability URL derived from CODEC_AUTH_TOKEN; keep it operator-only)")
    .option('--base-url <url>', 'the gateway as Temporal Web reaches it (default GATEWAY_PUBLIC_URL)')
    .action(printCodecWebEndpoint);
}

function printCodecWebEndpoint(opts: CodecWebEndpointOptions): void {
  const env = loadEnv();
  if (!env.CODEC_AUTH_TOKEN) throw new ConfigError('CODEC_AUTH_TOKEN (or CODEC_AUTH_TOKEN_FILE) is not set: the codec server is off');
  // The codec server's module loads when the command runs, not when the program is built.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { codecWebEndpoint } = require('../../../codec/codec-server') as typeof CodecServer;
  const base = opts.baseUrl ?? gatewayPublicUrl(env);
  process.stdout.write(`${codecWebEndpoint(base, env.CODEC_AUTH_TOKEN)}\n`);
}
