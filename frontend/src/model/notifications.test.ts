import { describe, expect, it } from 'vitest';

import { channelInput, emptyChannel, routeInputs, routeWords, splitList } from './notifications';

describe('notifications', () => {
  it('turns the add-channel form into the input, with no URL for Slack and only the limits given', () => {
    expect(channelInput({ ...emptyChannel, name: ' ops ', url: ' https://h.example/x ', secret: 's' })).toEqual({
      name: 'ops',
      kind: 'WEBHOOK',
      url: 'https://h.example/x',
      secret: 's',
    });
    expect(channelInput({ ...emptyChannel, name: 'chat', kind: 'SLACK', url: 'ignored', secret: 'https://hooks', ratePerMinute: 10, burst: 2 })).toEqual({
      name: 'chat',
      kind: 'SLACK',
      secret: 'https://hooks',
      ratePerMinute: 10,
      burst: 2,
    });
  });

  it('keeps, adds and drops routes', () => {
    const a = { kinds: ['AMBIGUOUS_EFFECT' as const], jobs: ['pay-*'], minSeverity: 'CRITICAL' as const };
    const b = { kinds: [], jobs: [], minSeverity: 'WARNING' as const };
    expect(routeInputs([a], b)).toEqual([
      { kinds: ['AMBIGUOUS_EFFECT'], jobs: ['pay-*'], minSeverity: 'CRITICAL' },
      { kinds: [], jobs: [], minSeverity: 'WARNING' },
    ]);
    expect(routeInputs([a, b], undefined, 0)).toEqual([{ kinds: [], jobs: [], minSeverity: 'WARNING' }]);
    expect(routeWords(a)).toBe('AMBIGUOUS_EFFECT of pay-* · CRITICAL only');
    expect(routeWords(b)).toBe('every alarm of every job · any severity');
    expect(splitList(' a, ,b,')).toEqual(['a', 'b']);
  });
});
