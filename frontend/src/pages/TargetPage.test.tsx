import { fireEvent, screen } from '@testing-library/react';
import { Client, Provider } from 'urql';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { fromValue, never } from 'wonka';

import { attemptText, targetPath } from '../api/ledger';
import { ownReplayRunning } from '../api/replays';
import { TargetLink } from '../components/TargetLink';
import type { LedgerEntryFieldsFragment } from '../gql/graphql';
import { renderWith } from '../test/render';
import { ResolveModal } from './AmbiguousPage';
import { targetKeyOf } from './TargetPage';

describe('target paths', () => {
  it('round-trip keys of any characters', () => {
    for (const key of ['acct:1', 'a/b c?#%&=+', 'ü/😀', '..', '%2F']) {
      const path = targetPath('pay outs', key);
      expect(path.startsWith('/admin/jobs/pay%20outs/targets/')).toBe(true);
      expect(path.slice('/admin/jobs/'.length).split('/')).toHaveLength(3);
      expect(targetKeyOf(path)).toBe(key);
    }
  });
  it('TargetLink links a target to its history', () => {
    renderWith(<TargetLink jobName="pay" targetKey="a/b c" />);
    const a = screen.getByTestId('target-link');
    expect(a.getAttribute('href')).toBe('/admin/jobs/pay/targets/a%2Fb%20c');
    expect(a.textContent).toBe('a/b c');
  });
});

describe('attemptText', () => {
  it('says a target failed without a call instead of "0"', () => {
    expect(attemptText(0)).toBe('not called');
    expect(attemptText(3)).toBe('3');
  });
});

describe('ownReplayRunning', () => {
  it('is true only when the active run is the just-made request\'s own', () => {
    expect(ownReplayRunning({ activeRun: { replayRequest: { id: 'R1' } } }, 'R1')).toBe(true);
    expect(ownReplayRunning({ activeRun: { replayRequest: { id: 'R2' } } }, 'R1')).toBe(false);
    expect(ownReplayRunning({ activeRun: { replayRequest: null } }, 'R1')).toBe(false);
    expect(ownReplayRunning({ activeRun: null }, 'R1')).toBe(false);
    expect(ownReplayRunning({ activeRun: { replayRequest: { id: 'R1' } } }, null)).toBe(false);
  });
});

function entry(id: string, targetKey: string): LedgerEntryFieldsFragment {
  return {
    __typename: 'LedgerEntry', id, jobName: 'pay', generation: 1, targetKey, step: '', state: 'AMBIGUOUS_EFFECT', attempt: 1,
    idempotencyKey: `k-${id}`, inputChanged: false, external: true, effectRef: null, evidenceRef: null, lastError: 'timeout',
    sameErrorCount: 1, updatedAt: '2026-12-01T10:00:00Z', run: { __typename: 'Run', id: 'UnVuOjE=' },
  } as LedgerEntryFieldsFragment;
}

function submitButton(): HTMLButtonElement {
  return screen.getByTestId('resolve-submit') as HTMLButtonElement;
}

describe('ResolveModal', () => {
  // jsdom has no FontFaceSet; Mantine's autosizing Textarea listens on it.
  beforeAll(() => {
    if (!('fonts' in document)) {
      Object.defineProperty(document, 'fonts', { configurable: true, value: { addEventListener: () => {}, removeEventListener: () => {} } });
    }
  });
  it('needs a note for NOT_APPLIED before it sends, and marks the note required', () => {
    const executeMutation = vi.fn(() => never);
    const client = { executeQuery: () => never, executeMutation, executeSubscription: () => never } as unknown as Client;
    renderWith(
      <Provider value={client}>
        <ResolveModal entries={[entry('E1', 'acct:1')]} onClose={() => {}} />
      </Provider>,
    );
    fireEvent.click(screen.getByLabelText(/it did not happen/));
    expect(submitButton().disabled).toBe(true);
    expect(document.querySelector('[data-disabled-reason]')?.getAttribute('data-disabled-reason')).toMatch(/note/);
    const note = screen.getByTestId('resolve-note') as HTMLTextAreaElement;
    expect(note.required).toBe(true);
    fireEvent.change(note, { target: { value: 'provider has no record of the key' } });
    expect(submitButton().disabled).toBe(false);
  });

  it('resolves several targets with one note in one call, and shows each member refused', async () => {
    const executeMutation = vi.fn(() =>
      fromValue({
        data: {
          resolveAmbiguousMany: {
            __typename: 'ResolveAmbiguousManyPayload',
            ledgerEntries: [{ __typename: 'LedgerEntry', id: 'E1', targetKey: 'acct:1', state: 'NOT_APPLIED' }],
            userErrors: [{ __typename: 'UserError', code: 'CONFLICT', field: 'entryIds[1]', message: 'entry E2: ledger entry 2 is CONFIRMED, not AMBIGUOUS_EFFECT' }],
          },
        },
      }),
    );
    const client = { executeQuery: () => never, executeMutation, executeSubscription: () => never } as unknown as Client;
    const onClose = vi.fn();
    renderWith(
      <Provider value={client}>
        <ResolveModal entries={[entry('E1', 'acct:1'), entry('E2', 'acct:2')]} onClose={onClose} />
      </Provider>,
    );
    expect(screen.getByTestId('resolve-members').textContent).toMatch(/acct:1, acct:2/);
    fireEvent.click(screen.getByLabelText(/it did not happen/));
    fireEvent.change(screen.getByTestId('resolve-note'), { target: { value: 'checked both' } });
    fireEvent.click(submitButton());
    expect(await screen.findByText(/ledger entry 2 is CONFIRMED/)).toBeTruthy();
    expect(executeMutation).toHaveBeenCalledTimes(1);
    const op = (executeMutation.mock.calls[0] as unknown as [{ variables: { input: { entryIds: string[]; note: string } } }])[0];
    expect(op.variables.input.entryIds).toEqual(['E1', 'E2']);
    expect(op.variables.input.note).toBe('checked both');
    expect(onClose).not.toHaveBeenCalled(); // the refusal stays on screen
  });
});

describe('replayTargetsPath', () => {
  it('carries each selected target in the query, any characters included', async () => {
    const { replayTargetsPath } = await import('../api/replays');
    const path = replayTargetsPath('/admin/runs/UnVuOjE%3D', ['rec:3', 'a&b=c']);
    expect(path.startsWith('/admin/runs/UnVuOjE%3D/replay?')).toBe(true);
    expect(new URLSearchParams(path.split('?')[1]).getAll('target')).toEqual(['rec:3', 'a&b=c']);
  });
});
