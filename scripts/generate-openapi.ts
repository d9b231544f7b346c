/** `npm run openapi`: writes docs/gateway-openapi.json and src/http-client/gateway-api.ts from the gateway's routes. */
import fs from 'node:fs';
import path from 'node:path';
import { GATEWAY_API_TYPES_FILE, generateHttpClientFiles, OPENAPI_JSON_FILE } from './openapi-files';

void (async () => {
  const files = await generateHttpClientFiles();
  fs.writeFileSync(OPENAPI_JSON_FILE, files.openApiJson);
  fs.writeFileSync(GATEWAY_API_TYPES_FILE, files.gatewayApiTypes);
  for (const f of [OPENAPI_JSON_FILE, GATEWAY_API_TYPES_FILE]) console.log(`wrote ${path.relative(process.cwd(), f)}`);
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
