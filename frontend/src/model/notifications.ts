// Notification channels and routes as the console edits them: the add-channel form and the
// add-route form turned into the API's input, and routes in words.
import type { AlertKind, ChannelKind, NotificationRouteInput, SaveNotificationChannelInput, Severity } from '../gql/graphql';

/** The alarm kinds a route may name, in the order the form offers them. */
export const ALERT_KINDS: readonly AlertKind[] = [
  'HEARTBEAT_MISSED',
  'CHECKPOINT_STALLED',
  'NO_LEDGER_WRITES',
  'TARGET_RETRIED',
  'DOWNSTREAM_ERRORS',
  'AMBIGUOUS_EFFECT',
  'AUTO_RESUME_EXHAUSTED',
  'DOWNSTREAM_LIMIT_DEGRADED',
  'SCHEDULED_FIRE_BLOCKED',
];

export interface ChannelDraft {
  name: string;
  kind: ChannelKind;
  url: string;
  secret: string;
  ratePerMinute: number | '';
  burst: number | '';
}

export const emptyChannel: ChannelDraft = { name: '', kind: 'WEBHOOK', url: '', secret: '', ratePerMinute: '', burst: '' };

/** channelInput is the saveNotificationChannel input that adds the drafted channel. */
export function channelInput(d: ChannelDraft): SaveNotificationChannelInput {
  const input: SaveNotificationChannelInput = { name: d.name.trim(), kind: d.kind, secret: d.secret };
  if (d.kind !== 'SLACK' && d.url.trim() !== '') input.url = d.url.trim();
  if (d.ratePerMinute !== '') input.ratePerMinute = d.ratePerMinute;
  if (d.burst !== '') input.burst = d.burst;
  return input;
}

/** What a channel's secret is, for the form's help. */
export function secretLabel(kind: ChannelKind): string {
  switch (kind) {
    case 'SLACK':
      return 'Incoming webhook URL';
    case 'PAGERDUTY':
      return 'Routing key';
    default:
      return 'Signing secret (HMAC)';
  }
}

/** splitList splits a comma-separated list, dropping empty items. */
export function splitList(s: string): string[] {
  return s
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

export interface RouteLike {
  kinds: readonly AlertKind[];
  jobs: readonly string[];
  minSeverity: Severity;
}

/** routeInputs are a channel's routes as the input that keeps them, plus extra if given, less the one at drop. */
export function routeInputs(routes: readonly RouteLike[], extra?: RouteLike, drop?: number): NotificationRouteInput[] {
  const out = routes
    .filter((_, i) => i !== drop)
    .map((r) => ({ kinds: [...r.kinds], jobs: [...r.jobs], minSeverity: r.minSeverity }));
  if (extra) out.push({ kinds: [...extra.kinds], jobs: [...extra.jobs], minSeverity: extra.minSeverity });
  return out;
}

/** routeWords says which alarms a route sends: "AMBIGUOUS_EFFECT of pay-* · CRITICAL and above". */
export function routeWords(r: RouteLike): string {
  const kinds = r.kinds.length === 0 ? 'every alarm' : r.kinds.join(', ');
  const jobs = r.jobs.length === 0 ? 'every job' : r.jobs.join(', ');
  const sev = r.minSeverity === 'CRITICAL' ? 'CRITICAL only' : 'any severity';
  return `${kinds} of ${jobs} · ${sev}`;
}
