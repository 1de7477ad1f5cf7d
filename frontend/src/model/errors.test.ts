import { describe, expect, it } from 'vitest';

import { describeError, describeUserErrors, topLevelErrorWords, userErrorWords } from './errors';

describe('user error codes in words', () => {
  it.each([
    ['ALREADY_RUNNING', /already has an active run/],
    ['INVALID_CRON', /cron expression is not valid/],
    ['SELF_APPROVAL', /second person/],
    ['REPLAY_BLOCKED', /preflight blocks/],
    ['MAINTENANCE', /maintenance/],
    ['JOB_PAUSED', /paused/],
  ])('%s', (code, words) => expect(userErrorWords(code)).toMatch(words));
  it('copes with a code from a newer server', () => {
    expect(userErrorWords('SOMETHING_NEW')).toBe('The server refused this (SOMETHING_NEW).');
  });
  it('keeps the server detail beside the words', () => {
    expect(describeUserErrors([{ code: 'INVALID_CRON', message: 'expected 5 or 6 fields', field: 'cron' }])).toEqual([
      { code: 'INVALID_CRON', title: 'The cron expression is not valid.', detail: 'expected 5 or 6 fields' },
    ]);
  });
});

describe('top-level errors in words', () => {
  it('reads extensions.code', () => {
    const d = describeError({ graphQLErrors: [{ message: 'needs OPERATOR', extensions: { code: 'FORBIDDEN' } }] });
    expect(d).toEqual({ code: 'FORBIDDEN', title: 'Your role does not allow this.', detail: 'needs OPERATOR' });
  });
  it('treats a missing code as internal', () => {
    expect(describeError({ graphQLErrors: [{ message: 'boom' }] }).code).toBe('INTERNAL_SERVER_ERROR');
  });
  it('maps HTTP statuses without GraphQL errors', () => {
    expect(describeError({ graphQLErrors: [], response: { status: 401 } }).code).toBe('UNAUTHENTICATED');
    expect(describeError({ graphQLErrors: [], response: { status: 429 } }).title).toMatch(/Too many/);
  });
  it('calls anything else a network failure', () => {
    const d = describeError({ graphQLErrors: [], networkError: new Error('Failed to fetch') });
    expect(d.code).toBe('NETWORK');
    expect(d.title).toMatch(/Cannot reach the server/);
    expect(d.detail).toBe('Failed to fetch');
  });
  it('has words for every documented code', () => {
    for (const c of ['UNAUTHENTICATED', 'FORBIDDEN', 'BAD_USER_INPUT', 'RATE_LIMITED', 'DEPTH_LIMIT_EXCEEDED', 'COMPLEXITY_LIMIT_EXCEEDED', 'GRAPHQL_VALIDATION_FAILED', 'GRAPHQL_PARSE_FAILED', 'INTERNAL_SERVER_ERROR']) {
      expect(topLevelErrorWords(c)).not.toMatch(/request failed/);
    }
  });
});
