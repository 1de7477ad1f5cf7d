import { fireEvent, screen } from '@testing-library/react';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { never } from 'wonka';

import { renderWith } from '../test/render';
import { attentionWords, needsAttention, runOutcomeMeta, succeededCleanly } from '../model/status';
import { RunStatusBadge } from './Badges';
import { JobControls } from './JobControls';
import { barSections, RunProgressBar } from './RunProgressBar';
import { errorsSummary } from './RunErrors';
import { ledgerCountsNote } from '../pages/RunPage';

const none = { failed: 0, rejected: 0, ambiguous: 0 };
const dirty = { failed: 32, rejected: 3, ambiguous: 3 };

describe('run outcome', () => {
  it('is clean only for SUCCEEDED with nothing to attend to', () => {
    expect(succeededCleanly({ status: 'SUCCEEDED', needsAttention: false, attention: none })).toBe(true);
    expect(succeededCleanly({ status: 'SUCCEEDED', needsAttention: true, attention: dirty })).toBe(false);
    // Counts alone are enough, even if the flag were missing.
    expect(succeededCleanly({ status: 'SUCCEEDED', attention: { failed: 0, rejected: 0, ambiguous: 1 } })).toBe(false);
    expect(succeededCleanly({ status: 'FAILED', needsAttention: false, attention: none })).toBe(false);
    expect(needsAttention({ status: 'RUNNING', needsAttention: false, attention: { failed: 1, rejected: 0, ambiguous: 0 } })).toBe(true);
  });
  it('says what needs attention, leaving out what does not', () => {
    expect(attentionWords(dirty)).toBe('32 failed · 3 rejected · 3 ambiguous');
    expect(attentionWords({ failed: 0, rejected: 0, ambiguous: 3 })).toBe('3 ambiguous');
    expect(attentionWords(none)).toBe('');
  });
  it('never draws a SUCCEEDED run that needs attention green', () => {
    const meta = runOutcomeMeta({ status: 'SUCCEEDED', needsAttention: true, attention: dirty });
    expect(meta.color).not.toBe('green');
    expect(meta.label).toBe('Succeeded · needs attention');
    expect(meta.description).toContain('32 failed · 3 rejected · 3 ambiguous');
    expect(runOutcomeMeta({ status: 'SUCCEEDED', needsAttention: false, attention: none }).color).toBe('green');
    // Other statuses keep their own chip.
    expect(runOutcomeMeta({ status: 'FAILED', needsAttention: true, attention: dirty }).label).toBe('Failed');
  });
});

describe('RunStatusBadge', () => {
  it('shows the outcome of a SUCCEEDED run with failures', () => {
    renderWith(<RunStatusBadge status="SUCCEEDED" needsAttention attention={dirty} />);
    const chip = screen.getByTestId('run-status');
    expect(chip).toHaveTextContent('Succeeded · needs attention');
    expect(chip).toHaveAttribute('data-value', 'SUCCEEDED');
    expect(chip).toHaveAttribute('data-attention', 'true');
  });
  it('shows a clean success plainly', () => {
    renderWith(<RunStatusBadge status="SUCCEEDED" needsAttention={false} attention={none} />);
    expect(screen.getByTestId('run-status')).toHaveTextContent(/^Succeeded$/);
    expect(screen.getByTestId('run-status')).toHaveAttribute('data-attention', 'false');
  });
});

describe('RunProgressBar outcome', () => {
  const p = { total: 302, processed: 302, succeeded: 264, failed: 35, skipped: 0, ambiguous: 3, percent: 100 };
  it('splits the bar by outcome, each part its share of the total', () => {
    const s = barSections(p) ?? [];
    expect(s.map((x) => x.key)).toEqual(['succeeded', 'failed', 'ambiguous']);
    expect(s.map((x) => x.color)).toEqual(['green', 'red', 'grape']);
    expect(s.reduce((a, x) => a + x.value, 0)).toBeCloseTo(100);
    expect(s[1]?.value).toBeCloseTo((35 / 302) * 100);
    expect(barSections({ ...p, total: null, processed: 0, succeeded: 0, failed: 0, ambiguous: 0 })).toBeNull();
  });
  it('is not a plain green bar for a SUCCEEDED run with failed and ambiguous items', () => {
    renderWith(<RunProgressBar progress={p} status="SUCCEEDED" needsAttention attention={{ failed: 32, rejected: 3, ambiguous: 3 }} />);
    const bar = screen.getByTestId('run-progress');
    expect(bar).toHaveAttribute('data-clean', 'false');
    expect(screen.getByTestId('run-progress-failed')).toBeInTheDocument();
    expect(screen.getByTestId('run-progress-ambiguous')).toBeInTheDocument();
    expect(screen.getByText(/35 failed \(3 rejected\)/)).toBeInTheDocument();
  });
  it('is clean and all green for a clean success', () => {
    renderWith(<RunProgressBar progress={{ ...p, succeeded: 302, failed: 0, ambiguous: 0 }} status="SUCCEEDED" needsAttention={false} attention={none} />);
    expect(screen.getByTestId('run-progress')).toHaveAttribute('data-clean', 'true');
    expect(screen.queryByTestId('run-progress-failed')).toBeNull();
  });
});

/** mutations records the mutations a component sends; none of them ever answers. */
function recordingClient(): { client: Client; sent: string[] } {
  const sent: string[] = [];
  const client = {
    executeQuery: () => never,
    executeSubscription: () => never,
    executeMutation: (op: { query: { definitions: { name?: { value: string } }[] } }) => {
      sent.push(op.query.definitions[0]?.name?.value ?? '?');
      return never;
    },
  } as unknown as Client;
  return { client, sent };
}

describe('JobControls', () => {
  it('asks before pausing a job, and pauses only once confirmed', async () => {
    const { client, sent } = recordingClient();
    renderWith(
      <Provider value={client}>
        <JobControls job={{ name: 'demo-flaky', paused: false }} active={null} hasRun />
      </Provider>,
    );
    fireEvent.click(screen.getByTestId('pause-demo-flaky'));
    expect(await screen.findByText('Pause demo-flaky?')).toBeInTheDocument();
    expect(sent).toEqual([]);
    fireEvent.click(await screen.findByTestId('pause-confirm-demo-flaky'));
    expect(sent).toEqual(['PauseJob']);
  });
  it('offers only Unpause job for a paused job, not a run Resume beside it', () => {
    const { client } = recordingClient();
    renderWith(
      <Provider value={client}>
        <JobControls job={{ name: 'demo-flaky', paused: true }} active={null} hasRun />
      </Provider>,
    );
    expect(screen.getByTestId('resume-job-demo-flaky')).toHaveTextContent('Unpause job');
    expect(screen.queryByTestId('resume-demo-flaky')).toBeNull();
  });
  it('after a run that finished its generation, offers Run again and says why Resume is off', () => {
    const { client, sent } = recordingClient();
    renderWith(
      <Provider value={client}>
        <JobControls
          job={{ name: 'demo-collect', paused: false, scheduledMode: 'RESTART' }}
          active={null}
          hasRun
          last={{ id: btoa('Run:41'), status: 'SUCCEEDED', generation: 3 }}
        />
      </Provider>,
    );
    const resume = screen.getByTestId('resume-demo-collect');
    expect(resume).toBeDisabled();
    expect(resume.closest('[data-disabled-reason]')?.getAttribute('data-disabled-reason')).toBe(
      'Run #41 finished generation 3: nothing is left to resume. Run again starts a new generation.',
    );
    expect(screen.getByTestId('restart-demo-collect')).toHaveTextContent('Run again');
    fireEvent.click(resume);
    expect(sent).toEqual([]);
  });
  it('keeps Resume for a run that stopped short, and for a job that continues one walk fire after fire', () => {
    const { client } = recordingClient();
    const { unmount } = renderWith(
      <Provider value={client}>
        <JobControls job={{ name: 'a', paused: false, scheduledMode: 'RESTART' }} active={null} hasRun last={{ id: btoa('Run:7'), status: 'FAILED' }} />
      </Provider>,
    );
    expect(screen.getByTestId('resume-a')).toBeEnabled();
    expect(screen.getByTestId('restart-a')).toHaveTextContent('Restart');
    unmount();
    renderWith(
      <Provider value={client}>
        <JobControls job={{ name: 'b', paused: false, scheduledMode: 'RESUME' }} active={null} hasRun last={{ id: btoa('Run:8'), status: 'SUCCEEDED' }} />
      </Provider>,
    );
    expect(screen.getByTestId('resume-b')).toBeEnabled();
  });
});

describe('counts that agree, or say why not', () => {
  it('says how the ledger counts relate to the items processed', () => {
    expect(ledgerCountsNote([{ count: 280 }, { count: 7 }], { processed: 302 }, false)).toBe(
      '287 ledger entries written by this run, by state; the other 15 of the 302 items processed were settled by earlier runs of this generation and not written again.',
    );
    // An active run's counts trail its live header: the gap is not put down to earlier runs.
    expect(ledgerCountsNote([{ count: 68 }], { processed: 84 }, true)).toBe(
      '68 ledger entries written by this run so far, by state (re-read every few seconds, so they may trail the 84 items processed).',
    );
  });
  it('labels the error total with its scope', () => {
    expect(errorsSummary(6, false)).toBe('6 error rows in this run');
    expect(errorsSummary(1, true)).toBe('1 error row matches the filter (all pages)');
  });
});
