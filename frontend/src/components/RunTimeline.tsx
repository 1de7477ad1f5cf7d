// A run's life on a time axis: requested, activated, lease renewals, pause and cancel requests,
// stop-condition trips and the end, one lane per shard (one lane while runs have one shard).
import { Card, Group, Stack, Text, Title, useComputedColorScheme } from '@mantine/core';
import { useElementSize } from '@mantine/hooks';
import { useEffect } from 'react';
import { useQuery } from 'urql';

import { RunTimelineQuery } from '../api/runs';
import type { RunStatus, RunTimelineKind } from '../gql/graphql';
import { useNow } from '../hooks/useNow';
import { isActive, runStatusMeta } from '../model/status';
import { formatDateTime, formatDuration } from '../model/time';

/** One event as Run.events gives it. */
export interface TimelineEventInput {
  at: string;
  kind: RunTimelineKind;
  detail: string;
  actor?: string | null;
  shard?: string | null;
}

interface KindMeta {
  label: string;
  color: string;
  shape: 'dot' | 'tick' | 'diamond' | 'square';
}

const KIND: Record<RunTimelineKind, KindMeta> = {
  REQUESTED: { label: 'Requested', color: '#868e96', shape: 'dot' },
  ACTIVATED: { label: 'Activated', color: '#1c7ed6', shape: 'dot' },
  LEASE_RENEWED: { label: 'Lease renewed', color: '#15aabf', shape: 'tick' },
  PAUSE_REQUESTED: {
    label: 'Pause requested',
    color: '#f59f00',
    shape: 'diamond',
  },
  PAUSE_LIFTED: { label: 'Pause lifted', color: '#74b816', shape: 'diamond' },
  SHARD_CLAIMED: { label: 'Shard claimed', color: '#7048e8', shape: 'square' },
  SHARD_REQUEUED: { label: 'Shard handed back', color: '#ae3ec9', shape: 'square' },
  CANCEL_REQUESTED: {
    label: 'Cancel requested',
    color: '#e8590c',
    shape: 'diamond',
  },
  STOP_CONDITION_TRIPPED: {
    label: 'Stop condition tripped',
    color: '#e03131',
    shape: 'diamond',
  },
  FINISHED: { label: 'Finished', color: '#495057', shape: 'square' },
};

/** timelineKindLabel is the words for an event kind. */
export function timelineKindLabel(kind: RunTimelineKind): string {
  return KIND[kind].label;
}

export interface Mark {
  x: number; // 0..1 along the axis
  event: TimelineEventInput;
}

export interface Lane {
  /** The shard, or null for the whole run. */
  shard: string | null;
  marks: Mark[];
}

export interface TimelineLayout {
  start: number;
  end: number;
  lanes: Lane[];
  /** Where the run was active (activated to end), as 0..1 along the axis; null before activation. */
  active: [number, number] | null;
}

/**
 * layoutTimeline places events on an axis from the run's request to its end (or now, while
 * it runs), with one lane per shard: the whole run's lane first, then shards by name, numbers
 * in names compared as numbers ("pages 201-400" before "pages 1001-1200").
 */
export function layoutTimeline(events: readonly TimelineEventInput[], startedAt: string, finishedAt: string | null | undefined, now: number): TimelineLayout {
  const start = Date.parse(startedAt);
  const last = events.reduce((m, e) => Math.max(m, Date.parse(e.at)), start);
  const end = Math.max(finishedAt ? Date.parse(finishedAt) : now, last, start + 1000);
  const span = end - start;
  const pos = (t: number) => Math.min(1, Math.max(0, (t - start) / span));
  const byShard = new Map<string | null, Mark[]>();
  byShard.set(null, []);
  for (const e of events) {
    const key = e.shard ?? null;
    const marks = byShard.get(key) ?? [];
    marks.push({ x: pos(Date.parse(e.at)), event: e });
    byShard.set(key, marks);
  }
  const shards = [...byShard.keys()].filter((k): k is string => k !== null).sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const lanes: Lane[] = [{ shard: null, marks: byShard.get(null) ?? [] }, ...shards.map((s) => ({ shard: s, marks: byShard.get(s) ?? [] }))];
  const activated = events.find((e) => e.kind === 'ACTIVATED');
  const active: [number, number] | null = activated ? [pos(Date.parse(activated.at)), finishedAt ? pos(Date.parse(finishedAt)) : 1] : null;
  return { start, end, lanes, active };
}

/** How often an active run's events are read again. */
const REREAD_MS = 5000;
const LANE_H = 34;
const TOP = 8;
// The width left of the lines for the lanes' names: "run" alone, or shard names, up to 16
// characters at a 12 px font (longer ones are shortened, laneLabel).
const LABEL_W = 64;
const SHARD_LABEL_W = 120;

// laneLabel shortens a lane's name to what fits in width (the full name is its title).
export function laneLabel(name: string, width: number): string {
  const fit = Math.floor((width - 8) / 7);
  return name.length <= fit ? name : `${name.slice(0, fit - 1)}…`;
}

function Shape({ m, y, color, w, labelW }: { m: Mark; y: number; color: string; w: number; labelW: number }) {
  const meta = KIND[m.event.kind];
  const x = labelW + m.x * (w - labelW - 12);
  const title = `${meta.label} · ${formatDateTime(m.event.at)}${m.event.actor ? ` · by ${m.event.actor}` : ''}${m.event.detail ? ` · ${m.event.detail}` : ''}`;
  const common = {
    'data-kind': m.event.kind,
    'data-testid': 'run-timeline-mark',
  };
  switch (meta.shape) {
    case 'tick':
      return (
        <line x1={x} x2={x} y1={y - 7} y2={y + 7} stroke={meta.color} strokeWidth={2} {...common}>
          <title>{title}</title>
        </line>
      );
    case 'diamond':
      return (
        <path d={`M${x} ${y - 8} L${x + 8} ${y} L${x} ${y + 8} L${x - 8} ${y} Z`} fill={meta.color} {...common}>
          <title>{title}</title>
        </path>
      );
    case 'square':
      return (
        <rect x={x - 6} y={y - 6} width={12} height={12} fill={color} {...common}>
          <title>{title}</title>
        </rect>
      );
    default:
      return (
        <circle cx={x} cy={y} r={6} fill={meta.color} {...common}>
          <title>{title}</title>
        </circle>
      );
  }
}

const STATUS_HEX: Record<string, string> = {
  green: '#2f9e44',
  red: '#e03131',
  gray: '#868e96',
  yellow: '#f59f00',
  cyan: '#1098ad',
  blue: '#1c7ed6',
};

/**
 * RunTimeline draws a run's events on a time axis. While the run is active the axis ends now
 * and grows as time passes.
 */
export function RunTimeline({
  runId,
  events: given,
  startedAt,
  finishedAt: givenEnd,
  status: givenStatus,
}: {
  /** When set, the events are read again every few seconds while the run is active. */
  runId?: string;
  events: readonly TimelineEventInput[];
  startedAt: string;
  finishedAt: string | null | undefined;
  status: RunStatus;
}) {
  // Renewals and requests are recorded as they happen; the page's own query is a snapshot.
  const [{ data }, reread] = useQuery({ query: RunTimelineQuery, variables: { id: runId ?? '' }, pause: !runId, requestPolicy: 'network-only' });
  // Whichever read saw more of the run's life is the newer one; its status and end go with it.
  const fresh = data?.run && data.run.id === runId && data.run.events.length >= given.length ? data.run : null;
  const status = fresh ? fresh.status : givenStatus;
  const finishedAt = fresh ? fresh.finishedAt : givenEnd;
  const events = fresh ? fresh.events : given;
  const live = Boolean(runId) && isActive(status);
  useEffect(() => {
    if (!live) return;
    const t = window.setInterval(() => reread({ requestPolicy: 'network-only' }), REREAD_MS);
    return () => window.clearInterval(t);
  }, [live, reread]);
  const now = useNow(finishedAt ? 3_600_000 : 1000);
  const dark = useComputedColorScheme('light') === 'dark';
  const { ref, width } = useElementSize();
  const w = Math.max(280, Math.round(width) || 1000);
  const narrow = w < 640;
  const layout = layoutTimeline(events, startedAt, finishedAt, now);
  const height = TOP * 2 + layout.lanes.length * LANE_H + 18;
  const axis = dark ? '#5c5f66' : '#ced4da';
  const text = dark ? '#c1c2c5' : '#495057';
  const endColor = STATUS_HEX[runStatusMeta(status).color] ?? '#495057';
  const renewals = events.filter((e) => e.kind === 'LEASE_RENEWED').length;
  const notable = events.filter((e) => e.kind !== 'LEASE_RENEWED');
  const labelW = layout.lanes.length > 1 ? SHARD_LABEL_W : LABEL_W;
  const xOf = (f: number) => labelW + f * (w - labelW - 12);
  const stamp = (t: number) => (narrow ? new Date(t).toLocaleTimeString() : formatDateTime(new Date(t).toISOString()));
  return (
    <Card withBorder radius="md">
      <Title order={2} size="h4" mb="sm">
        Life of the run
      </Title>
      <Stack gap={6} ref={ref} data-testid="run-time-axis" data-lanes={layout.lanes.length} data-renewals={renewals}>
        <svg
          viewBox={`0 0 ${w} ${height}`}
          width="100%"
          height={height}
          role="img"
          aria-label={`Timeline of the run: ${notable.map((e) => KIND[e.kind].label).join(', ')}; ${renewals} lease renewals`}
        >
          {layout.lanes.map((lane, i) => {
            const y = TOP + i * LANE_H + LANE_H / 2;
            return (
              <g key={lane.shard ?? '(run)'} data-testid="run-timeline-lane" data-shard={lane.shard ?? ''}>
                <text x={0} y={y + 4} fontSize={12} fill={text}>
                  <title>{lane.shard ?? 'run'}</title>
                  {laneLabel(lane.shard ?? 'run', labelW)}
                </text>
                <line x1={labelW} x2={w - 12} y1={y} y2={y} stroke={axis} strokeWidth={2} />
                {i === 0 && layout.active && (
                  <line x1={xOf(layout.active[0])} x2={xOf(layout.active[1])} y1={y} y2={y} stroke={endColor} strokeOpacity={0.45} strokeWidth={6} />
                )}
                {lane.marks.map((m, k) => (
                  <Shape key={k} m={m} y={y} color={endColor} w={w} labelW={labelW} />
                ))}
              </g>
            );
          })}
          <text x={labelW} y={height - 4} fontSize={11} fill={text}>
            {stamp(layout.start)}
          </text>
          <text x={w - 12} y={height - 4} fontSize={11} fill={text} textAnchor="end">
            {finishedAt ? stamp(layout.end) : 'now'} · {formatDuration(layout.end - layout.start)}
          </text>
        </svg>
        <Group gap="md" wrap="wrap">
          {(Object.keys(KIND) as RunTimelineKind[])
            .filter((k) => events.some((e) => e.kind === k))
            .map((k) => (
              <Group key={k} gap={4} wrap="nowrap">
                <span
                  style={{
                    display: 'inline-block',
                    width: 10,
                    height: 10,
                    background: k === 'FINISHED' ? endColor : KIND[k].color,
                    borderRadius: KIND[k].shape === 'dot' ? 5 : 1,
                  }}
                />
                <Text size="xs" c="dimmed">
                  {k === 'FINISHED' ? `Ended ${runStatusMeta(status).label.toLowerCase()}` : KIND[k].label}
                  {k === 'LEASE_RENEWED' ? ` ×${renewals}` : ''}
                </Text>
              </Group>
            ))}
        </Group>
      </Stack>
    </Card>
  );
}
