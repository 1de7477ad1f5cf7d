// A downstream as the API gives it, for component tests.
import type { Downstream, DownstreamLimits } from '../model/downstreams';

/** limits are provider's: 50/s with a burst of 10, 16 in flight, no quota. */
export const limits: DownstreamLimits = { ratePerSecond: 50, burst: 10, concurrency: 16, quota: null, quotaWindow: null, paused: false };

/** downstream is provider as the API gives it, with its fields and figures changed by over and stats. */
export function downstream(over: Partial<Downstream> = {}, stats: Partial<Downstream['stats']> = {}): Downstream {
  return {
    name: 'provider',
    version: 1,
    updatedAt: null,
    updatedBy: null,
    limits,
    defaults: limits,
    stats: {
      windowSeconds: 60,
      callsPerSecond: 42.37,
      calls: 2500,
      throttled: 0,
      errors: 0,
      waits: 0,
      waitSeconds: 0,
      effectiveRate: 50,
      blockedUntil: null,
      inFlight: 3,
      quotaUsed: 0,
      degraded: false,
      ...stats,
    },
    ...over,
  };
}
