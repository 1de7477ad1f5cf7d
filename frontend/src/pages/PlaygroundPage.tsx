// The GraphQL playground: GraphiQL from the bundle (no CDN), with the console's token on HTTP
// and on the subscription socket. Operators and above, like the server's introspection. Its
// first tabs are the example operations (playgroundExamples.ts): list jobs, start one, watch a run.
import 'graphiql/style.css';
import 'graphiql/setup-workers/vite';

import { Box, useComputedColorScheme } from '@mantine/core';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { IconLock } from '@tabler/icons-react';
import { GraphiQL } from 'graphiql';
import { createClient } from 'graphql-ws';
import { useEffect, useMemo } from 'react';

import { authHeader, graphqlURL } from '../api/client';
import { useRoleReason, useToken } from '../auth/AuthContext';
import { Empty } from '../components/QueryState';
import { EXAMPLE_TABS } from './playgroundExamples';

function Playground({ token }: { token: string }) {
  const scheme = useComputedColorScheme('light');
  const origin = window.location.origin;
  const { fetcher, dispose } = useMemo(() => {
    const ws = createClient({ url: graphqlURL(origin, true), connectionParams: { authorization: authHeader(token) }, lazy: true });
    return {
      fetcher: createGraphiQLFetcher({ url: graphqlURL(origin, false), headers: { Authorization: authHeader(token) }, wsClient: ws }),
      dispose: () => void ws.dispose(),
    };
  }, [origin, token]);
  useEffect(() => dispose, [dispose]);
  return (
    <Box h="calc(100vh - 56px - 2 * var(--mantine-spacing-md))" data-testid="playground" className={scheme === 'dark' ? 'graphiql-dark' : undefined}>
      <GraphiQL fetcher={fetcher} defaultTabs={EXAMPLE_TABS} forcedTheme={scheme} shouldPersistHeaders={false} />
    </Box>
  );
}

export default function PlaygroundPage() {
  const reason = useRoleReason('OPERATOR');
  const token = useToken();
  if (reason) return <Empty title="The playground is for operators" description={reason} icon={<IconLock size={28} />} />;
  return <Playground token={token} />;
}
