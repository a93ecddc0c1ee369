/**
 * The demo's Koa application, as each worker runs it: one `buffer()` for the
 * whole site, then the pages. This is the part to copy into an application.
 */
import { fileURLToPath } from 'node:url';
import Koa, { type Middleware } from 'koa';
import { buffer } from 'koa-buffer';
import { articlePage } from './pages/article.ts';
import { countersApi, metricsPath, statsPath } from './metrics.ts';
import { buildsApi, dashboardScript, dashboardStyle } from './pages/dashboard.ts';
import { downloadPage } from './pages/download.ts';
import { chooseLanguage, helloPage } from './pages/hello.ts';
import { indexPage } from './pages/index.ts';
import { liveDictionary, livePage } from './pages/live.ts';
import { styleSheet } from './pages/layout.ts';
import { productsApi } from './pages/products.ts';
import { reportPage } from './pages/report.ts';
import { stalePage } from './pages/stale.ts';
import type { Settings } from './settings.ts';

const pagesDir = fileURLToPath(new URL('./pages/', import.meta.url));

/** What the worker tells the app about its life. */
export interface Lifecycle {
  /** True once the worker is shutting down: responses then close their connection. */
  stopping: boolean;
}

/** Routes by exact path, GET and HEAD only (enough for a demo; an application would use a router). */
function routes(table: Record<string, Middleware>): Middleware {
  return async (ctx, next) => {
    const page = table[ctx.path];
    if (page === undefined) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      ctx.status = 405;
      return;
    }
    await page(ctx, next);
  };
}

/** Requests made every second by the panel and a scraper: one log line each would drown the rest. */
const unlogged = new Set([metricsPath, statsPath]);

/**
 * Says which worker answered, closes connections while the worker stops, and
 * logs one line per request (but for {@link unlogged}). It sits outside
 * `buffer()`, so what it sets is not stored in the cache with the page.
 */
function served(lifecycle: Lifecycle): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      ctx.set('X-Worker', String(process.pid));
      // A keep-alive connection would hold a stopping worker open until its timeout.
      if (lifecycle.stopping) ctx.set('Connection', 'close');
      if (!unlogged.has(ctx.path)) {
        const cache = ctx.response.get('X-Cache');
        const ms = Math.round(performance.now() - started);
        console.log(
          `[worker ${process.pid}] ${ctx.method} ${ctx.url} ${ctx.status}${cache ? ` ${cache}` : ''} ${ms} ms`,
        );
      }
    }
  };
}

/**
 * The application.
 *
 * @param settings - where the data lives
 * @param lifecycle - the worker's state, read by every response
 * @returns the Koa app
 */
export function createApp(settings: Settings, lifecycle: Lifecycle): Koa {
  const app = new Koa();
  app.use(served(lifecycle));
  // koa-buffer's counters, both workers summed (metrics.ts), ahead of buffer() so looking is not counted.
  app.use(countersApi());
  // Mounted before the routes whose responses it reworks. The SQLite file and
  // the lock directory are shared by the workers of this host: a page one
  // worker builds is a hit for the other, and concurrent misses build once.
  // The pages are the demo's templates: their mtimes date Last-Modified and
  // outdate cache entries, beside the script's own.
  app.use(
    buffer({
      optimiseContent: 1,
      cache: settings.cacheUrl,
      cacheLockDir: settings.lockDir,
      templatePaths: [pagesDir],
      // Compression dictionaries: each version of /live is the dictionary for the next.
      dictionaries: [liveDictionary],
    }),
  );
  app.use(
    routes({
      '/': indexPage,
      '/article': articlePage,
      '/api/products': productsApi,
      '/report': reportPage(settings.buildLog),
      '/stale': stalePage(settings.buildLog),
      '/hello': helloPage,
      '/hello/choose': chooseLanguage,
      '/download': downloadPage(settings.downloadFile),
      '/live': livePage,
      '/dashboard.js': dashboardScript(),
      '/api/builds': buildsApi(settings.buildLog),
      '/style.css': (ctx) => {
        ctx.type = 'css';
        ctx.body = styleSheet + dashboardStyle;
      },
    }),
  );
  return app;
}
