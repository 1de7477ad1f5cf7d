// Durations, ETAs and timestamps as an operator reads them.

const pad2 = (n: number): string => String(Math.floor(n)).padStart(2, '0');

/**
 * formatDuration renders milliseconds compactly with two units at most: "850ms", "45s",
 * "3m 05s", "2h 03m", "3d 04h". Negative durations are treated as zero.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  const v = Math.max(0, ms);
  if (v < 1000) return `${Math.round(v)}ms`;
  const totalSeconds = Math.floor(v / 1000);
  if (totalSeconds < 60) return `${totalSeconds}s`;
  const totalMinutes = Math.floor(totalSeconds / 60);
  if (totalMinutes < 60) return `${totalMinutes}m ${pad2(totalSeconds % 60)}s`;
  const totalHours = Math.floor(totalMinutes / 60);
  if (totalHours < 24) return `${totalHours}h ${pad2(totalMinutes % 60)}m`;
  return `${Math.floor(totalHours / 24)}d ${pad2(totalHours % 24)}h`;
}

/** formatSeconds is formatDuration for a number of seconds. */
export function formatSeconds(seconds: number): string {
  return formatDuration(seconds * 1000);
}

/** A progress sample: how many items were processed at a moment (ms since the epoch). */
export interface ProgressSample {
  at: number;
  processed: number;
}

/**
 * ratePerSecond is the processing rate over the samples of the last windowMs: items per
 * second between the oldest sample in the window and the newest. Null with fewer than two
 * samples or no elapsed time.
 */
export function ratePerSecond(samples: readonly ProgressSample[], windowMs = 10_000): number | null {
  const last = samples[samples.length - 1];
  if (!last) return null;
  let first: ProgressSample | undefined;
  for (const s of samples) {
    if (last.at - s.at <= windowMs) {
      first = s;
      break;
    }
  }
  if (!first || first === last) return null;
  const dt = (last.at - first.at) / 1000;
  if (dt <= 0) return null;
  return Math.max(0, (last.processed - first.processed) / dt);
}

/**
 * etaMs estimates how long the rest of a run takes at the given rate. Null when the total is
 * unknown or the rate is unknown; Infinity when nothing moves; 0 when done.
 */
export function etaMs(total: number | null | undefined, processed: number, rate: number | null): number | null {
  if (total === null || total === undefined) return null;
  const remaining = total - processed;
  if (remaining <= 0) return 0;
  if (rate === null) return null;
  if (rate <= 0) return Infinity;
  return (remaining / rate) * 1000;
}

/** formatEta renders etaMs for people: "about 3m 05s", "done", "stalled", "unknown". */
export function formatEta(eta: number | null): string {
  if (eta === null) return 'unknown';
  if (eta === 0) return 'done';
  if (!Number.isFinite(eta)) return 'stalled';
  return `about ${formatDuration(eta)}`;
}

/** formatRelative says how far a moment is from now: "in 3m 05s", "12s ago", "now". */
export function formatRelative(iso: string, now: number = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const d = t - now;
  if (Math.abs(d) < 1000) return 'now';
  return d > 0 ? `in ${formatDuration(d)}` : `${formatDuration(-d)} ago`;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * formatDateTime renders an RFC 3339 timestamp in a time zone (default: the browser's) as
 * "Fri 01 May 2026, 04:00:00". An unknown zone falls back to UTC.
 */
export function formatDateTime(iso: string, timeZone?: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const key = timeZone ?? '';
  let f = formatters.get(key);
  if (!f) {
    const opts: Intl.DateTimeFormatOptions = {
      weekday: 'short', day: '2-digit', month: 'short', year: 'numeric',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
    };
    try {
      f = new Intl.DateTimeFormat('en-GB', timeZone ? { ...opts, timeZone } : opts);
    } catch {
      f = new Intl.DateTimeFormat('en-GB', { ...opts, timeZone: 'UTC' });
    }
    formatters.set(key, f);
  }
  return f.format(new Date(t));
}

/** timeZones lists the IANA zones the browser knows, UTC first. */
export function timeZones(): string[] {
  const supported = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return ['UTC', ...supported.filter((z) => z !== 'UTC')];
}

/** formatNumber groups digits: 12,345. */
export function formatNumber(n: number): string {
  return n.toLocaleString('en-US');
}

/** formatPercent renders 0–100 with one decimal: "42.5%". */
export function formatPercent(p: number): string {
  return `${(Math.round(p * 10) / 10).toFixed(1)}%`;
}
