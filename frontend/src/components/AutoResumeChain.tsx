// A run's place in its chain of automatic resumes, one line each: "auto-resume 2 of 3 ·
// resumed from #41", "auto-resume due in 4 s" (ticking), "resumed by #44", "gave up after 3
// attempts", "not resumed: policy off".
import { Anchor, Stack, Text, Tooltip } from '@mantine/core';
import { Link } from 'react-router';

import { runNumber, runPath } from '../api/runs';
import { chainLines, outcomeMeta, type ChainRun } from '../model/autoresume';

export function AutoResumeChain({ run, now }: { run: ChainRun; now: number }) {
  const lines = chainLines(run, now);
  if (lines.length === 0) return null;
  return (
    <Stack gap={0} data-testid="auto-resume-chain" data-outcome={run.autoResume?.outcome ?? ''}>
      {lines.map((l) => {
        const text = (
          <Text size="sm" c={l.color} fw={l.key === 'EXHAUSTED' ? 700 : undefined} data-testid={`auto-resume-${l.key.toLowerCase()}`}>
            {l.text}
            {l.link && (
              <>
                {l.link.label}
                <Anchor component={Link} to={runPath(l.link.run)} size="sm">
                  #{runNumber(l.link.run)}
                </Anchor>
              </>
            )}
          </Text>
        );
        return l.key === 'attempt' ? (
          <div key={l.key}>{text}</div>
        ) : (
          <Tooltip key={l.key} label={outcomeMeta(l.key).description} multiline maw={300} withArrow openDelay={300} position="bottom-start">
            <div style={{ width: 'fit-content' }}>{text}</div>
          </Tooltip>
        );
      })}
    </Stack>
  );
}
