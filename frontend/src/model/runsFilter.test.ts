import { describe, expect, it } from 'vitest';

import {
  emptyRunsFilter,
  isEmptyRunsFilter,
  matchesRunsFilter,
  parseRunNumber,
  parseRunsFilter,
  runsFilterParams,
  toRunsFilterInput,
  type FilterableRun,
  type RunsFilterState,
} from './runsFilter';

const full: RunsFilterState = {
  job: 'payouts',
  statuses: ['FAILED', 'PAUSED'],
  triggers: ['MANUAL'],
  instance: 'node-2',
  window: '24h',
  from: '2026-03-01T10:00:00.000Z',
  before: '2026-03-02T10:00:00.000Z',
  number: 42,
};

describe('runs filter and the URL', () => {
  it('round-trips every field through the query string', () => {
    const qs = runsFilterParams(full).toString();
    expect(qs).toBe(
      'job=payouts&status=FAILED%2CPAUSED&trigger=MANUAL&instance=node-2&window=24h&from=2026-03-01T10%3A00%3A00.000Z&before=2026-03-02T10%3A00%3A00.000Z&number=42',
    );
    expect(parseRunsFilter(new URLSearchParams(qs))).toEqual({
      filter: full,
      problems: [],
    });
  });

  it('writes nothing for the empty filter and reads an empty query as it', () => {
    expect(runsFilterParams(emptyRunsFilter).toString()).toBe('');
    expect(isEmptyRunsFilter(emptyRunsFilter)).toBe(true);
    expect(isEmptyRunsFilter({ ...emptyRunsFilter, number: 3 })).toBe(false);
    expect(parseRunsFilter(new URLSearchParams(''))).toEqual({
      filter: emptyRunsFilter,
      problems: [],
    });
  });

  it('keeps what it can read of a hand-edited URL and says what it dropped', () => {
    const { filter, problems } = parseRunsFilter(new URLSearchParams('status=failed,BOGUS,FAILED&trigger=manual&window=2y&from=yesterday&number=%23x'));
    expect(filter.statuses).toEqual(['FAILED']);
    expect(filter.triggers).toEqual(['MANUAL']);
    expect(filter.window).toBeNull();
    expect(filter.from).toBe('');
    expect(filter.number).toBeNull();
    expect(problems).toEqual([
      'Unknown status "BOGUS" ignored.',
      'Unknown time window "2y" ignored.',
      '"yesterday" is not a time: the from bound is ignored.',
      '"#x" is not a run number.',
    ]);
  });

  it('drops a time range that ends before it starts', () => {
    const { filter, problems } = parseRunsFilter(new URLSearchParams('from=2026-03-02T00:00:00Z&before=2026-03-01T00:00:00Z'));
    expect(filter.from).toBe('');
    expect(filter.before).toBe('');
    expect(problems).toHaveLength(1);
  });
});

describe('parseRunNumber', () => {
  it.each([
    ['42', 42],
    ['#42', 42],
    [' # 7 ', 7],
    ['0', null],
    ['-3', null],
    ['4.2', null],
    ['abc', null],
    ['', null],
  ])('%j is %j', (raw, want) => expect(parseRunNumber(raw)).toBe(want));
});

describe('toRunsFilterInput', () => {
  const now = Date.parse('2026-03-02T12:00:00Z');
  it('sends only what is set', () => {
    expect(toRunsFilterInput(emptyRunsFilter, now)).toEqual({});
    expect(toRunsFilterInput({ ...emptyRunsFilter, job: 'a', number: 5 }, now)).toEqual({ jobName: 'a', number: 5 });
  });
  it('takes the later of the window start and the absolute from', () => {
    // 24h before now is 2026-03-01T12:00Z, after the absolute from.
    expect(toRunsFilterInput(full, now)).toEqual({
      jobName: 'payouts',
      statuses: ['FAILED', 'PAUSED'],
      triggers: ['MANUAL'],
      instance: 'node-2',
      startedFrom: '2026-03-01T12:00:00.000Z',
      startedBefore: '2026-03-02T10:00:00.000Z',
      number: 42,
    });
    expect(toRunsFilterInput({ ...emptyRunsFilter, window: '1h', from: '2026-03-02T11:30:00.000Z' }, now).startedFrom).toBe('2026-03-02T11:30:00.000Z');
  });
});

describe('matchesRunsFilter', () => {
  const now = Date.parse('2026-03-02T12:00:00Z');
  const run: FilterableRun = {
    number: 42,
    jobName: 'payouts',
    status: 'FAILED',
    trigger: 'MANUAL',
    instance: 'node-2',
    startedAt: '2026-03-02T09:00:00Z',
  };
  it('matches a run that has every property asked for', () => {
    expect(matchesRunsFilter(run, full, now)).toBe(true);
    expect(matchesRunsFilter(run, emptyRunsFilter, now)).toBe(true);
  });
  it.each<[string, Partial<FilterableRun>]>([
    ['another job', { jobName: 'mailer' }],
    ['another status', { status: 'RUNNING' }],
    ['another trigger', { trigger: 'SCHEDULED' }],
    ['another instance', { instance: 'node-1' }],
    ['another number', { number: 43 }],
    ['started before the window', { startedAt: '2026-03-01T11:59:59Z' }],
    ['started at the upper bound', { startedAt: '2026-03-02T10:00:00Z' }],
  ])('refuses %s', (_, change) => {
    expect(matchesRunsFilter({ ...run, ...change }, full, now)).toBe(false);
  });
});
