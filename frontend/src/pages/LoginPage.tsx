import { Alert, Button, Center, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { IconKey } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';

/** LoginPage asks for an API token (`baton token create --name NAME --role ROLE`). */
export function LoginPage({ onLogin, error }: { onLogin: (token: string) => void; error: string | null }) {
  const [token, setToken] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const t = token.trim();
    if (t) onLogin(t);
  };
  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" radius="md" w="100%" maw={440} component="main">
        <form onSubmit={submit} aria-label="Log in">
          <Stack>
            <div>
              <Title order={1} size="h2">
                Baton
              </Title>
              <Text c="dimmed" size="sm">
                Admin console — log in with an API token.
              </Text>
            </div>
            {error && (
              <Alert color="red" title="Not logged in" role="alert">
                {error}
              </Alert>
            )}
            <PasswordInput
              label="API token"
              description="Mint one with: baton token create --name NAME --role viewer|operator|approver|admin"
              placeholder="paste the token"
              leftSection={<IconKey size={16} />}
              value={token}
              onChange={(e) => setToken(e.currentTarget.value)}
              autoFocus
              required
              data-testid="login-token"
              autoComplete="off"
            />
            <Button type="submit" disabled={token.trim() === ''} data-testid="login-submit">
              Log in
            </Button>
            <Text size="xs" c="dimmed">
              The token stays in this browser tab only (session storage) and is sent to this server alone.
            </Text>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
