/**
 * The dashboard's static files: its own stylesheet and script, and htmx and uPlot served from
 * their npm packages (vendored through node_modules: no CDN, no build step). A fixed list, so
 * no request path ever reaches the file system.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

const require = createRequire(import.meta.url);
const own = (name: string) => fileURLToPath(new URL(`./assets/${name}`, import.meta.url));

const FILES: Record<string, { path: string; type: string }> = {
  'app.css': { path: own('app.css'), type: 'text/css; charset=utf-8' },
  'app.js': { path: own('app.js'), type: 'text/javascript; charset=utf-8' },
  'favicon.svg': { path: own('favicon.svg'), type: 'image/svg+xml' },
  'htmx.min.js': { path: require.resolve('htmx.org/dist/htmx.min.js'), type: 'text/javascript; charset=utf-8' },
  'uPlot.iife.min.js': { path: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uPlot.min.css': { path: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

export function assetRoutes(app: FastifyInstance): void {
  const cache = new Map<string, Buffer>();
  app.get<{ Params: { name: string } }>('/dashboard/assets/:name', async (request, reply) => {
    const file = FILES[request.params.name];
    if (!file) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    let body = cache.get(request.params.name);
    if (!body) cache.set(request.params.name, (body = readFileSync(file.path)));
    return reply.type(file.type).header('cache-control', 'public, max-age=3600').send(body);
  });
}
