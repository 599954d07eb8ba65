/**
 * RFC 9457 problem types. The URIs are the ones draft-ietf-httpapi-ratelimit-headers
 * asks IANA to register in the HTTP Problem Types registry; they are stable
 * identifiers whether or not a client dereferences them.
 */
export const PROBLEM_TYPES = {
  /** 429: the client exceeded one or more quota policies. */
  quotaExceeded: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
  /** 503: the server reduced capacity (a global or shedding limit, or fail-closed). */
  temporaryReducedCapacity: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
} as const;

/** The media type of every body the adapters write. */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** A problem details object (RFC 9457) as the adapters send it. */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** Names of the violated policies; present only when policies are advertised to this caller. */
  readonly 'violated-policies'?: readonly string[];
}

/** Serialises a problem. JSON escaping keeps any string (CR, LF, NUL) inside the body. */
export function problemBody(p: ProblemDetails): string {
  return JSON.stringify(p);
}
