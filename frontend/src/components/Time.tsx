import { Text, Tooltip, type TextProps } from '@mantine/core';

import { useNow } from '../hooks/useNow';
import { formatDateTime, formatRelative } from '../model/time';

/** TimeAgo shows "3m 05s ago" (ticking), with the exact time in the tooltip. */
export function TimeAgo({ iso, timeZone, ...rest }: { iso: string | null | undefined; timeZone?: string } & TextProps) {
  const now = useNow(1000);
  if (!iso) {
    return (
      <Text span c="dimmed" {...rest}>
        —
      </Text>
    );
  }
  return (
    <Tooltip label={formatDateTime(iso, timeZone) + (timeZone ? ` (${timeZone})` : '')} withArrow openDelay={200}>
      <Text span {...rest}>
        <time dateTime={iso}>{formatRelative(iso, now)}</time>
      </Text>
    </Tooltip>
  );
}

/** DateTime shows an exact time in a zone, with the relative time in the tooltip. */
export function DateTime({ iso, timeZone, ...rest }: { iso: string | null | undefined; timeZone?: string } & TextProps) {
  if (!iso) {
    return (
      <Text span c="dimmed" {...rest}>
        —
      </Text>
    );
  }
  return (
    <Tooltip label={formatRelative(iso)} withArrow openDelay={200}>
      <Text span {...rest}>
        <time dateTime={iso}>{formatDateTime(iso, timeZone)}</time>
      </Text>
    </Tooltip>
  );
}
