// Builds the console into dist/ (index.html + hashed assets/), which sluice embeds and serves at `/`.
// `npm run dev` / `npm run preview` proxy the API to a running gateway: SLUICE_GATEWAY=http://127.0.0.1:8080.
import { defineConfig } from 'vite';

const gateway = process.env.SLUICE_GATEWAY || 'http://127.0.0.1:8080';
const proxy = { '/admin/api': gateway, '/v1': gateway };

export default defineConfig({
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    emptyOutDir: true,
    // One small bundle: the console is a single page served from the binary.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
  server: { proxy },
  preview: { proxy },
});
