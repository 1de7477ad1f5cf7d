import { describe, expect, it } from 'vitest';

import { chainLines, policyChanges, policySummary, seconds, type AutoResumePolicy, type ChainRun } from './autoresume';

const policy: AutoResumePolicy = { enabled: true, maxAttempts: 3, backoffSeconds: 5, on: ['LEASE_EXPIRED', 'SHUTDOWN', 'DATABASE'] };

describe('policySummary', () => {
  it.each<[AutoResumePolicy, string]>([
    [policy, 'auto-resume on · 3 attempts · 5 s'],
    [{ ...policy, maxAttempts: 1, backoffSeconds: 90 }, 'auto-resume on · 1 attempt · 1m 30s'],
    [{ ...policy, on: ['SHUTDOWN'] }, 'auto-resume on · 3 attempts · 5 s · instance shut down'],
    [{ ...policy, on: [] }, 'auto-resume on · no cause covered'],
    [{ ...policy, enabled: false }, 'auto-resume off'],
  ])('%j reads %s', (p, words) => {
    expect(policySummary(p)).toBe(words);
  });
});

describe('policyChanges', () => {
  const draft = { enabled: true, maxAttempts: 3 as number | '', backoffSeconds: 5 as number | '', on: policy.on };
  it('is null when nothing changed, whatever the order of the causes', () => {
    expect(policyChanges('j', policy, draft)).toBeNull();
    expect(policyChanges('j', policy, { ...draft, on: ['DATABASE', 'SHUTDOWN', 'LEASE_EXPIRED'] })).toBeNull();
  });
  it('sends only what changed, causes in display order', () => {
    expect(policyChanges('j', policy, { ...draft, maxAttempts: 0, on: ['DATABASE', 'LEASE_EXPIRED'] })).toEqual({
      name: 'j',
      maxAttempts: 0,
      on: ['LEASE_EXPIRED', 'DATABASE'],
    });
    expect(policyChanges('j', policy, { ...draft, enabled: false, backoffSeconds: 60 })).toEqual({ name: 'j', enabled: false, backoffSeconds: 60 });
    expect(policyChanges('j', policy, { ...draft, on: [] })).toEqual({ name: 'j', on: [] });
  });
  it('treats an empty number as no change', () => {
    expect(policyChanges('j', policy, { ...draft, maxAttempts: '', backoffSeconds: '' })).toBeNull();
  });
});

describe('chainLines', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const base: ChainRun = { attempt: 0, resumedFrom: null, autoResume: null, maxAttempts: 3 };
  const ended = (outcome: NonNullable<ChainRun['autoResume']>['outcome'], extra: Partial<NonNullable<ChainRun['autoResume']>> = {}) => ({
    outcome,
    dueAt: null,
    maxAttempts: 3,
    resumedBy: null,
    ...extra,
  });
  it('says nothing of a run outside any chain', () => {
    expect(chainLines(base, now)).toEqual([]);
  });
  it('names the attempt and the run it continues', () => {
    const [line] = chainLines({ ...base, attempt: 2, resumedFrom: 'UnVuOjQx' }, now);
    expect(line).toEqual({ key: 'attempt', text: 'auto-resume 2 of 3', link: { label: ' · resumed from ', run: 'UnVuOjQx' } });
  });
  it('counts down to a pending resume', () => {
    const run = { ...base, autoResume: ended('PENDING', { dueAt: '2026-12-01T12:00:04Z' }) };
    expect(chainLines(run, now).map((l) => l.text)).toEqual(['auto-resume due in 4 s']);
    expect(chainLines(run, now + 3000).map((l) => l.text)).toEqual(['auto-resume due in 1 s']);
    expect(chainLines(run, now + 5000).map((l) => l.text)).toEqual(['auto-resume due now']);
  });
  it('links the run that resumed it', () => {
    const [line] = chainLines({ ...base, autoResume: ended('RESUMED', { resumedBy: 'UnVuOjQ0' }) }, now);
    expect(line?.link).toEqual({ label: 'resumed by ', run: 'UnVuOjQ0' });
  });
  it('gives up in red after the attempts it made', () => {
    const lines = chainLines({ ...base, attempt: 3, resumedFrom: 'UnVuOjQz', autoResume: ended('EXHAUSTED') }, now);
    expect(lines.map((l) => l.key)).toEqual(['attempt', 'EXHAUSTED']);
    expect(lines[1]?.text).toMatch(/^gave up after 3 attempts/);
    expect(lines[1]?.color).toBe('red');
  });
  it('says why a run was not resumed', () => {
    expect(chainLines({ ...base, autoResume: ended('OFF') }, now)[0]?.text).toBe('not resumed: policy off');
    expect(chainLines({ ...base, autoResume: ended('SUPERSEDED') }, now)[0]?.text).toMatch(/^not resumed: a later run/);
  });
});

describe('seconds', () => {
  it.each<[number, string]>([
    [0, '0 s'],
    [4.4, '4 s'],
    [59, '59 s'],
    [300, '5m 00s'],
  ])('%d reads %s', (n, words) => {
    expect(seconds(n)).toBe(words);
  });
});
