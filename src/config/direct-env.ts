/**
 * Variables read straight from the environment where they are used, because a library reads them
 * itself (OpenTelemetry, the Temporal SDK's envconfig) or because they are read before any of our
 * TypeScript loads (bin/mpf.cjs). Listed here so each is documented once, in the generated table,
 * with the rest; `NAME_FILE` does not apply to them.
 */
import { z } from 'zod';

export const DirectEnvSchema = z.object({
  /** Where tracing sends its spans (OTLP/HTTP, e.g. http://collector:4318; `/v1/traces` is added); unset with the next one: tracing is off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
  /** The OTLP/HTTP traces endpoint itself (used as is); wins over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
  /** Headers the exporter sends with each batch (`key=value,…`, e.g. a collector's token); read by the exporter. */
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  /** The service name on every span (default `mpf-worker` or `mpf-gateway`). */
  OTEL_SERVICE_NAME: z.string().optional(),
  /** `true`: no tracing even with an endpoint set. */
  OTEL_SDK_DISABLED: z.string().optional(),
  /** `none`: no tracing even with an endpoint set. */
  OTEL_TRACES_EXPORTER: z.string().optional(),
  /** mTLS to Temporal: the client certificate itself (PEM) instead of TEMPORAL_TLS_CLIENT_CERT_PATH; read by envconfig. */
  TEMPORAL_TLS_CLIENT_CERT_DATA: z.string().optional(),
  /** mTLS to Temporal: the private key itself (PEM) instead of TEMPORAL_TLS_CLIENT_KEY_PATH; read by envconfig; a secret. */
  TEMPORAL_TLS_CLIENT_KEY_DATA: z.string().optional(),
  /** `1`: bin/mpf.cjs runs the compiled build (dist/) instead of the TypeScript sources through tsx (containers). */
  MPF_USE_DIST: z.string().optional(),
});
