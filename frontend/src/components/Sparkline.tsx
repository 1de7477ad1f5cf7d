import { Box, useMantineTheme } from '@mantine/core';

/** sparkPoints scales values into an SVG polyline's points within width × height. */
export function sparkPoints(values: readonly number[], width: number, height: number): string {
  if (values.length === 0) return '';
  const max = Math.max(...values, 1e-9);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values
    .map((v, i) => `${(i * step).toFixed(1)},${(height - (Math.max(0, v) / max) * (height - 2) - 1).toFixed(1)}`)
    .join(' ');
}

/** Sparkline draws a small line chart of recent values (no axes), as inline SVG. */
export function Sparkline({ values, label, width = 240, height = 40 }: { values: readonly number[]; label: string; width?: number; height?: number }) {
  const theme = useMantineTheme();
  const pts = sparkPoints(values.length === 1 ? [values[0] ?? 0, values[0] ?? 0] : values, width, height);
  return (
    <Box component="span" display="inline-block" w={width} h={height} data-testid="sparkline" data-points={values.length}>
      <svg width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
        <title>{label}</title>
        <line x1={0} y1={height - 0.5} x2={width} y2={height - 0.5} stroke="var(--mantine-color-default-border)" />
        {pts && <polyline points={pts} fill="none" stroke={theme.colors.blue[6]} strokeWidth={1.75} strokeLinejoin="round" />}
      </svg>
    </Box>
  );
}
