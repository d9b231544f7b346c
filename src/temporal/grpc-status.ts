/**
 * gRPC status codes, named once (the values of @grpc/grpc-js's `status`, which the Temporal SDK
 * sets as `code` on the errors of its calls), and the one reader of a code off an error.
 */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatusCode = (typeof GrpcStatus)[keyof typeof GrpcStatus];

/** The numeric gRPC status of an error (its own `code`), or undefined. */
export function grpcCodeOf(e: unknown): number | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** True when the error's own gRPC status is one of `codes`. */
export function hasGrpcCode(e: unknown, ...codes: GrpcStatusCode[]): boolean {
  const code = grpcCodeOf(e);
  return code !== undefined && (codes as number[]).includes(code);
}
