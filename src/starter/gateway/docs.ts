/**
 * The browsable API reference at /docs (Swagger UI from @fastify/swagger-ui, served from the
 * package's own files: no CDN, no outside request). Open without an API key: it shows the OpenAPI
 * document, which holds no secret; "Try it out" asks for the API key or pin_token in its
 * Authorize dialog and keeps it only in the page (persistAuthorization off).
 */
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { DOCS_PREFIX } from './openapi';

export function gatewayDocsOptions(): FastifySwaggerUiOptions {
  return {
    routePrefix: DOCS_PREFIX,
    uiConfig: { docExpansion: 'list', deepLinking: true, persistAuthorization: false, validatorUrl: null, tryItOutEnabled: false },
    // A Content-Security-Policy with the hashes of the page's own scripts and styles.
    staticCSP: true,
  };
}
