// Downstreams: the outside systems jobs call, each with its live calls/s, waits, throttles and
// errors, its limits against the code's defaults, and an editor. The figures are the
// cluster's, read again every second; the sparkline's history is kept here, in the page.
import { Alert, Group, Stack, Text, Title } from '@mantine/core';
import { IconPlugConnected } from '@tabler/icons-react';
import { useEffect, useRef, useState } from 'react';
import { useQuery } from 'urql';

import { DownstreamsQuery } from '../api/downstreams';
import { useSignedOut } from '../auth/AuthContext';
import { DownstreamCard } from '../components/DownstreamCard';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { describeError } from '../model/errors';
import { appendSamples } from '../model/downstreams';

/** How often the page reads the figures again. */
export const DOWNSTREAMS_POLL_MS = 1000;

/** clock is a time of day in the viewer's zone: "14:03:07". */
function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
}

export function DownstreamsPage({ pollMs = DOWNSTREAMS_POLL_MS }: { pollMs?: number }) {
  const signedOut = useSignedOut();
  const [{ data, error, fetching }, refetch] = useQuery({ query: DownstreamsQuery, requestPolicy: 'network-only' });
  useEffect(() => {
    if (signedOut) return undefined;
    const t = window.setInterval(() => refetch({ requestPolicy: 'network-only' }), pollMs);
    return () => window.clearInterval(t);
  }, [refetch, signedOut, pollMs]);

  // One sample of calls/s per answer: every poll brings a new data object.
  const [history, setHistory] = useState<Map<string, number[]>>(() => new Map());
  const [asOf, setAsOf] = useState<number | null>(null);
  const seen = useRef<unknown>(null);
  useEffect(() => {
    if (!data || data === seen.current) return;
    seen.current = data;
    setHistory((h) => appendSamples(h, data.downstreams));
    setAsOf(Date.now());
  }, [data]);

  const list = data?.downstreams ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Stack gap={2}>
          <Title order={2}>Downstreams</Title>
          <Text size="sm" c="dimmed" maw={720}>
            The outside systems jobs call. Their limits hold across every instance and every run; a 429 or 503 slows a downstream for everyone until
            it recovers.
          </Text>
        </Stack>
        {asOf !== null && (
          <Text size="sm" c={error ? 'orange.7' : 'dimmed'} data-testid="ds-as-of" data-as-of={asOf}>
            as of {clock(asOf)}
            {error ? ' · not updating' : ' · every second'}
          </Text>
        )}
      </Group>
      {error && data && (
        <Alert color="orange" variant="light" title="The figures stopped updating" data-testid="ds-stale">
          {describeError(error).title} The cards show the figures as of {asOf !== null ? clock(asOf) : 'the last answer'}.
        </Alert>
      )}
      {error && !data && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !data && <Loading lines={4} label="Loading downstreams" />}
      {data && list.length === 0 && (
        <Empty
          title="No downstreams"
          description="A job declares the outside systems it calls (JobInfo.Downstreams) and names one on each item (Item.Downstream)."
          icon={<IconPlugConnected size={28} />}
        />
      )}
      {list.map((d) => (
        <DownstreamCard key={d.name} downstream={d} history={history.get(d.name) ?? []} onSaved={() => refetch({ requestPolicy: 'network-only' })} />
      ))}
    </Stack>
  );
}
