import { createTheme } from '@mantine/core';

/** The console's theme: Inter (bundled), blue, compact radii. */
export const theme = createTheme({
  primaryColor: 'blue',
  fontFamily: 'Inter, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  fontFamilyMonospace: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
  defaultRadius: 'sm',
  headings: { fontFamily: 'Inter, system-ui, sans-serif' },
  focusRing: 'auto',
});
