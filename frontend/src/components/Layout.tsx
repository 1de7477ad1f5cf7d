// The frame of every page: header (live indicator, alert badge, who is logged in, colour
// scheme, log out), the navigation, the maintenance banner, and keyboard shortcuts.
import {
  ActionIcon,
  Alert,
  Anchor,
  AppShell,
  Badge,
  Burger,
  Button,
  Group,
  Indicator,
  Kbd,
  Modal,
  NavLink,
  Stack,
  Table,
  Text,
  Tooltip,
  useComputedColorScheme,
  useMantineColorScheme,
} from '@mantine/core';
import { useDisclosure, useHotkeys } from '@mantine/hooks';
import { notifications } from '@mantine/notifications';
import {
  IconAlertOctagon,
  IconBell,
  IconBellRinging,
  IconBriefcase,
  IconCode,
  IconHelpCircle,
  IconListDetails,
  IconLock,
  IconLogout,
  IconMoon,
  IconPlayerPlay,
  IconPlugConnected,
  IconQuestionMark,
  IconRepeat,
  IconSun,
} from '@tabler/icons-react';
import { createContext, useCallback, useContext, useEffect, useMemo, type ReactNode } from 'react';
import { Link, Outlet, useLocation, useNavigate } from 'react-router';
import { useQuery, useSubscription } from 'urql';

import { alertBadges, AlertRaisedSubscription, AlertsQuery } from '../api/alerts';
import type { SocketState } from '../api/client';
import { MaintenanceQuery } from '../api/viewer';
import { useLogout, useOnReconnect, useSignedOut, useSocketState, useViewer } from '../auth/AuthContext';
import { alertTitle, roleLabel } from '../model/status';

interface MaintenanceValue {
  on: boolean | null;
  refresh: () => void;
}

const MaintenanceContext = createContext<MaintenanceValue>({ on: null, refresh: () => undefined });

/** useMaintenance tells whether the cluster-wide maintenance pause is on (null while unknown). */
export function useMaintenance(): MaintenanceValue {
  return useContext(MaintenanceContext);
}

/** How often the badges re-read the alarms when nothing else refreshed them. */
const BADGE_REFRESH_MS = 15_000;

const NAV = [
  { to: '/admin', label: 'Jobs', icon: IconBriefcase, key: '1', exact: true },
  { to: '/admin/runs', label: 'Runs', icon: IconPlayerPlay, key: '7' },
  { to: '/admin/replays', label: 'Replays', icon: IconRepeat, key: '2' },
  { to: '/admin/ambiguous', label: 'Ambiguous queue', icon: IconQuestionMark, key: '3' },
  { to: '/admin/alerts', label: 'Alerts', icon: IconBell, key: '4' },
  { to: '/admin/downstreams', label: 'Downstreams', icon: IconPlugConnected, key: '8' },
  { to: '/admin/notifications', label: 'Notifications', icon: IconBellRinging, key: '9' },
  { to: '/admin/audit', label: 'Audit log', icon: IconListDetails, key: '5' },
  { to: '/playground', label: 'Playground', icon: IconCode, key: '6' },
] as const;

function isCurrent(pathname: string, to: string, exact: boolean): boolean {
  if (exact) return pathname === to || pathname === `${to}/` || pathname.startsWith('/admin/jobs');
  return pathname === to || pathname.startsWith(`${to}/`);
}

const LIVE_WORDS: Record<SocketState, { label: string; color: string; help: string }> = {
  connected: { label: 'live', color: 'green', help: 'Live: updates arrive over the subscription socket.' },
  connecting: { label: 'connecting', color: 'orange', help: 'Connecting the live socket…' },
  reconnecting: { label: 'reconnecting', color: 'orange', help: 'Live updates interrupted: reconnecting. What you see may be stale.' },
  closed: { label: 'idle', color: 'gray', help: 'Live socket idle: it opens when a page subscribes.' },
  refused: { label: 'signed out', color: 'red', help: 'The server refused this token and closed the live socket: nothing updates. Sign in again.' },
};

function LiveIndicator() {
  const state = useSocketState();
  const signedOut = useSignedOut();
  const w = LIVE_WORDS[signedOut ? 'refused' : state];
  return (
    <Tooltip label={w.help} withArrow multiline maw={260}>
      <Badge color={w.color} variant="dot" size="lg" className="pill" data-testid="live-indicator" data-state={signedOut ? 'refused' : state} tabIndex={0}>
        {w.label}
      </Badge>
    </Tooltip>
  );
}

/** SignedOutBanner says the token was refused and offers to sign in again. */
function SignedOutBanner() {
  const logout = useLogout();
  return (
    <Alert color="red" variant="filled" mb="md" icon={<IconLock />} title="Signed out" role="alert" data-testid="signed-out-banner">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">
          The server refused this console&apos;s token: it was revoked or has expired. What you see stopped updating, and every
          action is disabled.
        </Text>
        <Button color="dark" variant="white" size="xs" onClick={logout} data-testid="sign-in-again">
          Sign in again
        </Button>
      </Stack>
    </Alert>
  );
}

function ColorSchemeToggle() {
  const { setColorScheme } = useMantineColorScheme();
  const computed = useComputedColorScheme('light');
  const next = computed === 'dark' ? 'light' : 'dark';
  return (
    <Tooltip label={`Switch to ${next} mode (Alt+D)`} withArrow>
      <ActionIcon variant="default" size="lg" aria-label={`Switch to ${next} mode`} onClick={() => setColorScheme(next)} data-testid="color-scheme">
        {computed === 'dark' ? <IconSun size={18} /> : <IconMoon size={18} />}
      </ActionIcon>
    </Tooltip>
  );
}

function Shortcuts({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  return (
    <Modal opened={opened} onClose={onClose} title="Keyboard shortcuts">
      <Table>
        <Table.Tbody>
          {NAV.map((n) => (
            <Table.Tr key={n.to}>
              <Table.Td>
                <Kbd>Alt</Kbd> + <Kbd>{n.key}</Kbd>
              </Table.Td>
              <Table.Td>{n.label}</Table.Td>
            </Table.Tr>
          ))}
          <Table.Tr>
            <Table.Td>
              <Kbd>Alt</Kbd> + <Kbd>D</Kbd>
            </Table.Td>
            <Table.Td>Dark / light mode</Table.Td>
          </Table.Tr>
          <Table.Tr>
            <Table.Td>
              <Kbd>?</Kbd>
            </Table.Td>
            <Table.Td>This help</Table.Td>
          </Table.Tr>
          <Table.Tr>
            <Table.Td>
              <Kbd>Tab</Kbd> / <Kbd>Shift</Kbd>+<Kbd>Tab</Kbd>
            </Table.Td>
            <Table.Td>Move between controls; disabled actions can be focused to read why</Table.Td>
          </Table.Tr>
        </Table.Tbody>
      </Table>
    </Modal>
  );
}

export function Layout({ children }: { children?: ReactNode }) {
  const viewer = useViewer();
  const logout = useLogout();
  const navigate = useNavigate();
  const { pathname } = useLocation();
  const [navOpened, nav] = useDisclosure(false);
  const [helpOpened, help] = useDisclosure(false);
  const { setColorScheme } = useMantineColorScheme();
  const computed = useComputedColorScheme('light');

  const signedOut = useSignedOut();
  // Every active alarm, silenced ones included: the badges count the unacknowledged ones and
  // the ambiguous queue. Mutations on alarms refresh it (urql refetches queries holding an
  // Alert), raised alarms do, and so does a slow poll for alarms that clear or counts that move.
  const [alerts, refetchAlerts] = useQuery({ query: AlertsQuery, variables: { includeSilenced: true } });
  const [raised] = useSubscription({ query: AlertRaisedSubscription, pause: signedOut });
  useEffect(() => {
    if (signedOut) return undefined;
    const t = window.setInterval(() => refetchAlerts({ requestPolicy: 'network-only' }), BADGE_REFRESH_MS);
    return () => window.clearInterval(t);
  }, [refetchAlerts, signedOut]);
  const [maint, refetchMaint] = useQuery({ query: MaintenanceQuery });

  const latest = raised.data?.alertRaised;
  useEffect(() => {
    if (!latest) return;
    notifications.show({
      color: latest.severity === 'CRITICAL' ? 'red' : 'orange',
      title: alertTitle(latest),
      message: latest.message,
      autoClose: 10000,
    });
    refetchAlerts({ requestPolicy: 'network-only' });
  }, [latest, refetchAlerts]);

  const refresh = useCallback(() => {
    refetchAlerts({ requestPolicy: 'network-only' });
    refetchMaint({ requestPolicy: 'network-only' });
  }, [refetchAlerts, refetchMaint]);
  useOnReconnect(refresh);

  const maintenance = useMemo<MaintenanceValue>(
    () => ({ on: maint.data?.maintenance ?? null, refresh: () => refetchMaint({ requestPolicy: 'network-only' }) }),
    [maint.data, refetchMaint],
  );

  useHotkeys([
    ...NAV.map((n): [string, () => void] => [`alt+${n.key}`, () => navigate(n.to)]),
    ['alt+D', () => setColorScheme(computed === 'dark' ? 'light' : 'dark')],
    ['shift+?', help.open],
  ]);

  const badges = alertBadges(alerts.data?.alerts ?? []);
  const alertCount = badges.unacknowledged;
  const critical = badges.critical;

  return (
    <MaintenanceContext.Provider value={maintenance}>
      <Anchor href="#main" className="skip-link">
        Skip to content
      </Anchor>
      <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'md', collapsed: { mobile: !navOpened } }} padding="md">
        <AppShell.Header>
          <Group h="100%" px={{ base: 'xs', sm: 'md' }} justify="space-between" wrap="nowrap" className="app-header">
            <Group gap="sm" wrap="nowrap">
              <Burger opened={navOpened} onClick={nav.toggle} hiddenFrom="md" size="sm" aria-label="Toggle navigation" />
              <Anchor component={Link} to="/admin" underline="never" c="inherit" className="brand" aria-label="Baton: jobs">
                <Text fw={700} size="lg">
                  Baton
                </Text>
              </Anchor>
              <LiveIndicator />
            </Group>
            <Group gap="xs" wrap="nowrap">
              <Tooltip label={alertCount === 0 ? 'No unacknowledged alerts' : `${alertCount} active alert(s) not acknowledged`} withArrow>
                <Indicator label={alertCount} size={18} color={critical ? 'red' : 'orange'} disabled={alertCount === 0} offset={4}>
                  <ActionIcon
                    component={Link}
                    to="/admin/alerts"
                    variant="default"
                    size="lg"
                    aria-label={`Alerts: ${alertCount} unacknowledged`}
                    data-testid="alerts-badge"
                    data-count={alertCount}
                  >
                    <IconBell size={18} />
                  </ActionIcon>
                </Indicator>
              </Tooltip>
              <Tooltip label={`Logged in as ${viewer.name}`} withArrow>
                <Badge
                  size="lg"
                  variant="light"
                  className="pill"
                  color={viewer.role === 'VIEWER' ? 'gray' : 'blue'}
                  data-testid="viewer-role"
                  data-role={viewer.role}
                  tabIndex={0}
                  aria-label={`Logged in as ${viewer.name}, ${roleLabel(viewer.role)}`}
                >
                  <span className="pill-name">{viewer.name} · </span>
                  {roleLabel(viewer.role)}
                </Badge>
              </Tooltip>
              <ColorSchemeToggle />
              <Tooltip label="Keyboard shortcuts (?)" withArrow>
                <ActionIcon variant="default" size="lg" aria-label="Keyboard shortcuts" onClick={help.open} visibleFrom="sm">
                  <IconHelpCircle size={18} />
                </ActionIcon>
              </Tooltip>
              <Tooltip label="Log out (forget the token)" withArrow>
                <ActionIcon variant="default" size="lg" aria-label="Log out" onClick={logout} data-testid="logout">
                  <IconLogout size={18} />
                </ActionIcon>
              </Tooltip>
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs" aria-label="Main navigation">
          <Stack gap={2}>
            {NAV.map((n) => (
              <NavLink
                key={n.to}
                component={Link}
                to={n.to}
                label={n.label}
                leftSection={<n.icon size={18} />}
                rightSection={
                  n.to === '/admin/alerts' && alertCount > 0 ? (
                    <Badge size="sm" color={critical ? 'red' : 'orange'} data-testid="nav-badge-alerts" aria-label={`${alertCount} unacknowledged`}>
                      {alertCount}
                    </Badge>
                  ) : n.to === '/admin/ambiguous' && badges.ambiguous > 0 ? (
                    <Badge size="sm" color="grape" data-testid="nav-badge-ambiguous" aria-label={`${badges.ambiguous} in doubt`}>
                      {badges.ambiguous}
                    </Badge>
                  ) : (
                    <Kbd size="xs" visibleFrom="lg">
                      Alt {n.key}
                    </Kbd>
                  )
                }
                active={isCurrent(pathname, n.to, 'exact' in n && n.exact)}
                onClick={nav.close}
              />
            ))}
          </Stack>
        </AppShell.Navbar>
        <AppShell.Main id="main" tabIndex={-1}>
          {signedOut && <SignedOutBanner />}
          {maintenance.on && (
            <Alert
              color="yellow"
              variant="filled"
              mb="md"
              icon={<IconAlertOctagon />}
              title="Maintenance is on"
              role="status"
              data-testid="maintenance-banner"
            >
              The cluster-wide maintenance pause is on: no run starts, and active runs stop at their next item boundary.
              Lifting it resumes what it paused.
            </Alert>
          )}
          {children ?? <Outlet />}
        </AppShell.Main>
      </AppShell>
      <Shortcuts opened={helpOpened} onClose={help.close} />
    </MaintenanceContext.Provider>
  );
}
