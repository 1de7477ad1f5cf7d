// A ledger target as a link to its history across runs and generations.
import { Anchor, Code, Tooltip } from '@mantine/core';
import { Link } from 'react-router';

import { targetPath } from '../api/ledger';

/**
 * TargetLink shows a target key as code that links to the target's history page. The key is
 * URL-encoded, so keys holding slashes, spaces or any other characters round-trip.
 */
export function TargetLink({ jobName, targetKey, hint }: { jobName: string; targetKey: string; hint?: string }) {
  const link = (
    <Anchor component={Link} to={targetPath(jobName, targetKey)} data-testid="target-link" underline="hover">
      <Code>{targetKey}</Code>
    </Anchor>
  );
  if (!hint) return link;
  return (
    <Tooltip label={hint} withArrow multiline maw={360}>
      {link}
    </Tooltip>
  );
}
