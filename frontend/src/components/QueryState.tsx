// Loading, empty and error states, shared by every page.
import { Alert, Button, Code, Group, Skeleton, Stack, Text, EmptyState } from '@mantine/core';
import { IconAlertTriangle, IconInbox } from '@tabler/icons-react';
import type { ReactNode } from 'react';

import { describeError, describeUserErrors, type ErrorLike, type UserErrorLike } from '../model/errors';

/** ErrorAlert shows a failed request: the code in words, the code itself and the server's detail. */
export function ErrorAlert({ error, onRetry }: { error: ErrorLike; onRetry?: () => void }) {
  const d = describeError(error);
  return (
    <Alert color="red" variant="light" title={d.title} icon={<IconAlertTriangle size={18} />} role="alert" data-testid="error-alert">
      <Stack gap={6}>
        <Text size="sm">
          <Code>{d.code}</Code> {d.detail}
        </Text>
        {onRetry && (
          <Group>
            <Button size="xs" variant="light" color="red" onClick={onRetry}>
              Try again
            </Button>
          </Group>
        )}
      </Stack>
    </Alert>
  );
}

/** UserErrorList shows a mutation's user errors (expected refusals), in words. */
export function UserErrorList({ errors }: { errors: readonly UserErrorLike[] }) {
  if (errors.length === 0) return null;
  return (
    <Alert color="orange" variant="light" title="Not done" role="alert" data-testid="user-errors">
      <Stack gap={4}>
        {describeUserErrors(errors).map((e, i) => (
          <Text size="sm" key={i}>
            {e.title} <Code>{e.code}</Code> {e.detail}
          </Text>
        ))}
      </Stack>
    </Alert>
  );
}

/** Loading is a skeleton of a few lines, announced to screen readers. */
export function Loading({ lines = 3, label = 'Loading' }: { lines?: number; label?: string }) {
  return (
    <Stack gap="xs" aria-busy="true" aria-label={label} data-testid="loading">
      {Array.from({ length: lines }, (_, i) => (
        <Skeleton key={i} height={18} width={`${90 - i * 12}%`} radius="sm" />
      ))}
    </Stack>
  );
}

/** Empty says there is nothing to show, and why that is fine or what to do. */
export function Empty({ title, description, icon, action }: { title: string; description?: ReactNode; icon?: ReactNode; action?: ReactNode }) {
  return (
    <EmptyState
      py="lg"
      title={title}
      description={description}
      icon={icon ?? <IconInbox size={28} />}
      withIndicatorBackground
      data-testid="empty"
    >
      {action}
    </EmptyState>
  );
}
