// Rendering helpers for component tests: Mantine and a viewer of a chosen role.
import { MantineProvider } from '@mantine/core';
import { render, type RenderResult } from '@testing-library/react';
import type { ReactElement } from 'react';
import { MemoryRouter } from 'react-router';

import { ViewerProvider, type Viewer } from '../auth/AuthContext';
import { theme } from '../theme';

export function renderWith(ui: ReactElement, viewer: Viewer = { name: 'alice', role: 'OPERATOR' }): RenderResult {
  return render(
    <MantineProvider theme={theme}>
      <MemoryRouter>
        <ViewerProvider viewer={viewer}>{ui}</ViewerProvider>
      </MemoryRouter>
    </MantineProvider>,
  );
}
