/** Registers our custom search attributes on a server we did not start (TEMPORAL_ADDRESS). */
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.keys(CUSTOM_SEARCH_ATTRIBUTES).filter((k) => !(k in (existing.customAttributes ?? {})));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((k) => [k, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
}
