import { MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { lazy, Suspense } from 'react';
import { BrowserRouter, Navigate, Route, Routes, useParams } from 'react-router';

import { AuthGate } from './auth/AuthContext';
import { Layout } from './components/Layout';
import { Loading } from './components/QueryState';
import { AlertsPage } from './pages/AlertsPage';
import { AmbiguousPage } from './pages/AmbiguousPage';
import { AuditPage } from './pages/AuditPage';
import { DownstreamsPage } from './pages/DownstreamsPage';
import { NotificationsPage } from './pages/NotificationsPage';
import { JobPage } from './pages/JobPage';
import { JobsPage } from './pages/JobsPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { ReplayPage } from './pages/ReplayPage';
import { ReplaysPage } from './pages/ReplaysPage';
import { RunPage } from './pages/RunPage';
import { RunsPage } from './pages/RunsPage';
import { runIdOfNumber, runPath } from './api/runs';
import { TargetPage } from './pages/TargetPage';
import { theme } from './theme';

// GraphiQL (with its editor) is large: it loads only when the playground is opened.
const PlaygroundPage = lazy(() => import('./pages/PlaygroundPage'));

/**
 * RunRoute mounts a fresh RunPage for each run id: what a page saw live of one run (its
 * subscription's status changes, its timeline) must not carry over to the next run opened from
 * it, such as the resume a "resumed by #N" link leads to.
 */
function RunRoute() {
  const { id } = useParams();
  // A run number (/admin/runs/42, as the CLI prints them) opens that run by its global id.
  if (id && /^\d+$/.test(id) && Number(id) > 0) return <Navigate to={runPath(runIdOfNumber(Number(id)))} replace />;
  return <RunPage key={id} />;
}

/** ReplayRoute opens /admin/runs/42/replay by the run's global id. */
function ReplayRoute() {
  const { id } = useParams();
  if (id && /^\d+$/.test(id) && Number(id) > 0) return <Navigate to={`${runPath(runIdOfNumber(Number(id)))}/replay`} replace />;
  return <ReplayPage />;
}

export function AppRoutes() {
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route path="/admin" element={<JobsPage />} />
        <Route path="/admin/jobs" element={<Navigate to="/admin" replace />} />
        <Route path="/admin/jobs/:name" element={<JobPage />} />
        <Route path="/admin/runs" element={<RunsPage />} />
        <Route path="/admin/jobs/:name/targets/*" element={<TargetPage />} />
        <Route path="/admin/runs/:id" element={<RunRoute />} />
        <Route path="/admin/runs/:id/replay" element={<ReplayRoute />} />
        <Route path="/admin/replays" element={<ReplaysPage />} />
        <Route path="/admin/ambiguous" element={<AmbiguousPage />} />
        <Route path="/admin/alerts" element={<AlertsPage />} />
        <Route path="/admin/downstreams" element={<DownstreamsPage />} />
        <Route path="/admin/notifications" element={<NotificationsPage />} />
        <Route path="/admin/audit" element={<AuditPage />} />
        <Route path="/admin/playground" element={<Navigate to="/playground" replace />} />
        <Route
          path="/playground"
          element={
            <Suspense fallback={<Loading lines={8} label="Loading the playground" />}>
              <PlaygroundPage />
            </Suspense>
          }
        />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}

export function App() {
  return (
    <MantineProvider theme={theme} defaultColorScheme="auto">
      <Notifications position="bottom-right" limit={5} />
      <BrowserRouter>
        <AuthGate>
          <AppRoutes />
        </AuthGate>
      </BrowserRouter>
    </MantineProvider>
  );
}
