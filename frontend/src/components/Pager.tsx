import { Button, Group, Text } from '@mantine/core';

import type { CursorPager } from '../hooks/useCursorPager';

/** Pager is Previous / page n / Next for a keyset connection. */
export function Pager({ pager, hasNextPage, endCursor, label }: { pager: CursorPager; hasNextPage: boolean; endCursor: string | null | undefined; label: string }) {
  if (pager.page === 1 && !hasNextPage) return null;
  return (
    <Group justify="flex-end" gap="xs" role="navigation" aria-label={`${label} pages`}>
      <Button size="xs" variant="default" disabled={pager.page === 1} onClick={pager.prev}>
        Previous
      </Button>
      <Text size="sm" c="dimmed" data-testid={`${label}-page`}>
        page {pager.page}
      </Text>
      <Button size="xs" variant="default" disabled={!hasNextPage} onClick={() => pager.next(endCursor)}>
        Next
      </Button>
    </Group>
  );
}
