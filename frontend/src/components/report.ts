// Mutation outcomes as notifications: success in green, user errors and failures in words.
import { notifications } from '@mantine/notifications';
import type { OperationResult } from '@urql/core';

import { describeError, describeUserErrors, type UserErrorLike } from '../model/errors';

interface Payload {
  userErrors: readonly UserErrorLike[];
}

/**
 * report shows what a mutation did and returns the payload when it succeeded (no error, no
 * user errors), else null.
 */
export function report<T, P extends Payload>(
  res: OperationResult<T>,
  payload: (data: T) => P | null | undefined,
  success: string | null,
): P | null {
  if (res.error) {
    const d = describeError(res.error);
    notifications.show({ color: 'red', title: d.title, message: `${d.code}: ${d.detail}`, autoClose: 8000 });
    return null;
  }
  const p = res.data ? payload(res.data) : null;
  if (!p) {
    notifications.show({ color: 'red', title: 'No answer', message: 'The server returned nothing for this change.' });
    return null;
  }
  if (p.userErrors.length > 0) {
    for (const e of describeUserErrors(p.userErrors)) {
      notifications.show({ color: 'orange', title: e.title, message: `${e.code}: ${e.detail}`, autoClose: 10000 });
    }
    return null;
  }
  if (success) notifications.show({ color: 'green', message: success });
  return p;
}
