/**
 * `npm run openapi`: writes docs/gateway-openapi.json and src/http-client/gateway-api.ts (generated;
 * never edit them by hand) from the gateway's routes.
 *
 * `npm run openapi -- --check`: writes nothing; exits 1 naming each committed file that differs from
 * what the routes produce now (CI runs it after lint, as `git diff --exit-code` would after a regeneration).
 */
import fs from 'node:fs';
import path from 'node:path';
import { GATEWAY_API_TYPES_FILE, generateHttpClientFiles, OPENAPI_JSON_FILE } from './openapi-files';

void (async () => {
  const check = process.argv.includes('--check');
  const files = await generateHttpClientFiles();
  const wanted: [string, string][] = [
    [OPENAPI_JSON_FILE, files.openApiJson],
    [GATEWAY_API_TYPES_FILE, files.gatewayApiTypes],
  ];
  if (check) {
    const stale = wanted.filter(([f, text]) => !fs.existsSync(f) || fs.readFileSync(f, 'utf8') !== text).map(([f]) => path.relative(process.cwd(), f));
    if (stale.length) {
      console.error(`stale generated files: ${stale.join(', ')}\nrun \`npm run openapi\` and commit them`);
      process.exit(1);
    }
    console.log('generated files are up to date: docs/gateway-openapi.json, src/http-client/gateway-api.ts');
    return;
  }
  for (const [f, text] of wanted) {
    fs.writeFileSync(f, text);
    console.log(`wrote ${path.relative(process.cwd(), f)}`);
  }
})().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
