/**
 * The generated part of the gateway's HTTP client: the OpenAPI document (docs/gateway-openapi.json)
 * and its TypeScript types (src/http-client/gateway-api.ts, by openapi-typescript), both from the
 * gateway's own document. `npm run openapi` writes them; `npm run openapi -- --check` (run by CI)
 * fails when the committed files differ from what the gateway's routes produce now.
 */
import path from 'node:path';
import { offlineOpenApiDocument } from '../src/starter/gateway/openapi-document';

export const OPENAPI_JSON_FILE = path.join(__dirname, '..', 'docs', 'gateway-openapi.json');
export const GATEWAY_API_TYPES_FILE = path.join(__dirname, '..', 'src', 'http-client', 'gateway-api.ts');

export interface GeneratedFiles {
  openApiJson: string;
  gatewayApiTypes: string;
}

/** What `npm run openapi` writes, computed from the gateway's routes now. */
export async function generateHttpClientFiles(): Promise<GeneratedFiles> {
  const doc = await offlineOpenApiDocument();
  // openapi-typescript is an ES module (and a dev dependency): loaded only here.
  const { default: openapiTS, astToString, COMMENT_HEADER } = await import('openapi-typescript');
  // defaultNonNullable false: a field with a default (a payment link's currency) stays optional, as the gateway takes it.
  const ast = await openapiTS(doc as never, { alphabetize: false, exportType: false, defaultNonNullable: false });
  const header = '/* eslint-disable */\n' + COMMENT_HEADER.replace(
    'Do not make direct changes to the file.',
    'Do not make direct changes to the file: `npm run openapi` writes it from the gateway\'s OpenAPI document.',
  );
  return { openApiJson: `${JSON.stringify(doc, null, 2)}\n`, gatewayApiTypes: `${header}${astToString(ast)}` };
}
