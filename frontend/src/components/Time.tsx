// Times as operators read them: every time in the viewer's own zone, with the job's zone and
// UTC on hover (and on keyboard focus), so a schedule set in New York reads right in Berlin.
import { Stack, Text, Tooltip, type TextProps } from '@mantine/core';

import { useNow } from '../hooks/useNow';
import { formatDateTime, formatRelative } from '../model/time';

/** viewerTimeZone is the browser's zone (UTC when it cannot tell). */
export function viewerTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** A time in one zone, for the hover card. */
export interface ZonedLine {
  label: string;
  zone: string;
  text: string;
}

/**
 * zonedLines are the lines of a time's hover card: the viewer's zone, the job's zone when it
 * is given and differs, and UTC when neither is UTC.
 */
export function zonedLines(iso: string, viewerZone: string, jobZone?: string | null): ZonedLine[] {
  const lines: ZonedLine[] = [{ label: 'Your time', zone: viewerZone, text: formatDateTime(iso, viewerZone) }];
  if (jobZone && jobZone !== viewerZone) lines.push({ label: "Job's time", zone: jobZone, text: formatDateTime(iso, jobZone) });
  if (viewerZone !== 'UTC' && jobZone !== 'UTC') lines.push({ label: 'UTC', zone: 'UTC', text: formatDateTime(iso, 'UTC') });
  return lines;
}

interface TimeProps {
  iso: string | null | undefined;
  /** The job's zone, shown on hover beside the viewer's and UTC. */
  timeZone?: string | null | undefined;
  /** The viewer's zone; default: the browser's. */
  viewerZone?: string;
}

function HoverCard({ iso, viewerZone, jobZone, relative }: { iso: string; viewerZone: string; jobZone?: string | null | undefined; relative: string }) {
  return (
    <Stack gap={2} data-testid="time-zones">
      {zonedLines(iso, viewerZone, jobZone).map((l) => (
        <Text key={l.label} size="xs" data-zone={l.zone}>
          {l.label} ({l.zone}): {l.text}
        </Text>
      ))}
      <Text size="xs" c="dimmed">
        {relative}
      </Text>
    </Stack>
  );
}

function Missing(rest: TextProps) {
  return (
    <Text span c="dimmed" {...rest}>
      —
    </Text>
  );
}

/** TimeAgo shows "3m 05s ago" (ticking); the hover card gives the time in each zone. */
export function TimeAgo({ iso, timeZone, viewerZone, ...rest }: TimeProps & TextProps) {
  const now = useNow(1000);
  if (!iso) return <Missing {...rest} />;
  const zone = viewerZone ?? viewerTimeZone();
  return (
    <Tooltip label={<HoverCard iso={iso} viewerZone={zone} jobZone={timeZone} relative={formatRelative(iso, now)} />} withArrow openDelay={200} events={{ hover: true, focus: true, touch: true }}>
      <Text span tabIndex={0} {...rest}>
        <time dateTime={iso}>{formatRelative(iso, now)}</time>
      </Text>
    </Tooltip>
  );
}

/** DateTime shows an exact time in the viewer's zone; the hover card adds the job's zone, UTC and how long ago. */
export function DateTime({ iso, timeZone, viewerZone, ...rest }: TimeProps & TextProps) {
  if (!iso) return <Missing {...rest} />;
  const zone = viewerZone ?? viewerTimeZone();
  return (
    <Tooltip label={<HoverCard iso={iso} viewerZone={zone} jobZone={timeZone} relative={formatRelative(iso)} />} withArrow openDelay={200} events={{ hover: true, focus: true, touch: true }}>
      <Text span tabIndex={0} {...rest}>
        <time dateTime={iso} data-zone={zone}>
          {formatDateTime(iso, zone)}
        </time>
      </Text>
    </Tooltip>
  );
}
