/// <reference types="vitest/config" />
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The SPA is served by the Go binary under /admin/ (frontend/embed.go), so every asset URL
// starts with /admin/. `npm run dev` proxies the API to a local `baton serve`.
export default defineConfig({
  base: '/admin/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 6000,
    // Hashed file names: the Go handler serves assets/* with a year-long cache.
    assetsDir: 'assets',
    rollupOptions: {
      onwarn(warning, warn) {
        // GraphiQL's React-compiler directives ("use no memo") are meaningless in a bundle.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  worker: {
    format: 'es',
  },
  server: {
    proxy: {
      '/graphql': { target: process.env.BATON_URL ?? 'http://127.0.0.1:8080', ws: true, changeOrigin: false },
    },
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['src/test/setup.ts'],
    css: false,
  },
});
