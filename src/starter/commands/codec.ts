/**
 * `mpf codec-web-endpoint`: the codec URL to give Temporal Web (TEMPORAL_CODEC_ENDPOINT or
 * `temporal server start-dev --ui-codec-endpoint`), derived from CODEC_AUTH_TOKEN and the
 * gateway's public URL. It is a capability URL: whoever holds it can decode payloads, so it is
 * printed only on request and belongs only in the configuration of a Temporal Web that only
 * operators can open.
 */
import { ConfigError, loadEnv } from '../../config/env';
import { codecWebEndpoint } from '../../codec/codec-server';
import { gatewayPublicUrl } from './context';

export function printCodecWebEndpoint(opts: { baseUrl?: string }): void {
  const env = loadEnv();
  if (!env.CODEC_AUTH_TOKEN) throw new ConfigError('CODEC_AUTH_TOKEN (or CODEC_AUTH_TOKEN_FILE) is not set: the codec server is off');
  const base = opts.baseUrl ?? gatewayPublicUrl(env);
  process.stdout.write(`${codecWebEndpoint(base, env.CODEC_AUTH_TOKEN)}\n`);
}
