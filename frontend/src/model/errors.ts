// Error codes in words. User errors (payload.userErrors[].code) are expected refusals; top-level
// errors carry extensions.code. Both are shown as a sentence, with the server's message as detail.
import type { UserErrorCode } from '../gql/graphql';

const USER_ERROR_WORDS: Record<UserErrorCode, string> = {
  NOT_FOUND: 'It does not exist (any more).',
  ALREADY_RUNNING: 'This job already has an active run.',
  CAPACITY_EXCEEDED: 'No worker slot is free on this instance right now; try again shortly.',
  INVALID_CRON: 'The cron expression is not valid.',
  INVALID_TIMEZONE: 'The time zone is not a known IANA zone.',
  INVALID_INPUT: 'Some input is missing or invalid.',
  JOB_PAUSED: 'The job is paused: resume the job first.',
  MAINTENANCE: 'The cluster is in maintenance: nothing starts until it is lifted.',
  NOT_ACTIVE: 'The run is no longer active.',
  APPROVAL_REQUIRED: 'This needs more before it can go ahead (a compensation reference and an approval).',
  REPLAY_BLOCKED: 'The preflight blocks this replay.',
  SELF_APPROVAL: 'You requested this replay, so you cannot approve it: a second person must.',
  CONFLICT: 'Someone else changed it first; reload and try again.',
  SHUTTING_DOWN: 'The instance is shutting down; try again on another one.',
  SECRET_KEY_MISSING: 'The cluster has no secret key to store a secret encrypted: give env:BATON_NOTIFY_NAME (or, for a URL, scheme and host alone), or configure BATON_SECRET_KEY.',
  SECRET_ENV_REFUSED: 'env:NAME reads only variables named BATON_NOTIFY_…: rename the variable on every instance.',
};

/** userErrorWords is a user error code in words. Unknown codes (a newer server) get a generic sentence. */
export function userErrorWords(code: string): string {
  return (USER_ERROR_WORDS as Record<string, string | undefined>)[code] ?? `The server refused this (${code}).`;
}

const TOP_LEVEL_WORDS: Record<string, string> = {
  UNAUTHENTICATED: 'Your token was not accepted: log in again.',
  FORBIDDEN: 'Your role does not allow this.',
  BAD_USER_INPUT: 'The request had invalid input.',
  RATE_LIMITED: 'Too many changes in a short time: wait a moment and try again.',
  DEPTH_LIMIT_EXCEEDED: 'The query is nested too deeply.',
  COMPLEXITY_LIMIT_EXCEEDED: 'The query asks for too much at once.',
  GRAPHQL_VALIDATION_FAILED: 'The console and the server disagree about the API (is the console out of date?).',
  GRAPHQL_PARSE_FAILED: 'The server could not parse the request.',
  INTERNAL_SERVER_ERROR: 'The server hit an internal error; it was logged.',
  NETWORK: 'Cannot reach the server: check the connection.',
};

/** topLevelErrorWords is a top-level extensions.code in words. */
export function topLevelErrorWords(code: string): string {
  return TOP_LEVEL_WORDS[code] ?? `The request failed (${code}).`;
}

/** The parts of a urql CombinedError this module reads (kept structural for tests). */
export interface ErrorLike {
  networkError?: Error | undefined;
  graphQLErrors: ReadonlyArray<{ message: string; extensions?: Readonly<Record<string, unknown>> | undefined }>;
  response?: unknown;
}

/** A failure described for people. */
export interface Described {
  code: string;
  title: string;
  detail: string;
}

function responseStatus(response: unknown): number | null {
  if (typeof response === 'object' && response !== null && 'status' in response) {
    const s = (response as { status: unknown }).status;
    return typeof s === 'number' ? s : null;
  }
  return null;
}

/** describeError turns a request failure into a code, a sentence and the server's detail. */
export function describeError(err: ErrorLike): Described {
  const first = err.graphQLErrors[0];
  if (first) {
    const raw = first.extensions?.['code'];
    const code = typeof raw === 'string' ? raw : 'INTERNAL_SERVER_ERROR';
    return { code, title: topLevelErrorWords(code), detail: first.message };
  }
  const status = responseStatus(err.response);
  if (status === 401) return { code: 'UNAUTHENTICATED', title: topLevelErrorWords('UNAUTHENTICATED'), detail: 'HTTP 401' };
  if (status === 403) return { code: 'FORBIDDEN', title: topLevelErrorWords('FORBIDDEN'), detail: 'HTTP 403' };
  if (status === 429) return { code: 'RATE_LIMITED', title: topLevelErrorWords('RATE_LIMITED'), detail: 'HTTP 429' };
  return { code: 'NETWORK', title: topLevelErrorWords('NETWORK'), detail: err.networkError?.message ?? 'no response' };
}

/** A user error as the API returns it. */
export interface UserErrorLike {
  code: string;
  message: string;
  field?: string | null | undefined;
}

/** describeUserErrors renders a payload's user errors, one sentence each with the server's detail. */
export function describeUserErrors(errors: readonly UserErrorLike[]): Described[] {
  return errors.map((e) => ({ code: e.code, title: userErrorWords(e.code), detail: e.message }));
}
