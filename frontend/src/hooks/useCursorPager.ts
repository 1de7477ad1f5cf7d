import { useCallback, useState } from 'react';

/** A cursor pager over a Relay connection (keyset, forward only): a stack of `after` cursors. */
export interface CursorPager {
  after: string | null;
  page: number;
  next: (endCursor: string | null | undefined) => void;
  prev: () => void;
  reset: () => void;
}

export function useCursorPager(): CursorPager {
  const [stack, setStack] = useState<string[]>([]);
  const next = useCallback((c: string | null | undefined) => {
    if (c) setStack((s) => [...s, c]);
  }, []);
  const prev = useCallback(() => setStack((s) => s.slice(0, -1)), []);
  const reset = useCallback(() => setStack([]), []);
  return { after: stack[stack.length - 1] ?? null, page: stack.length + 1, next, prev, reset };
}
