/**
 * The `metrics` option: a prom-client `Registry` to register koa-buffer's
 * metrics on, and the route names requests may be counted by. A label's
 * values must come from a set the application bounds, never from requests:
 * so routes are a list given up front (at most {@link routesMax}), matched
 * against @koa/router's `ctx._matchedRoute`, and anything else counts as
 * `other`.
 */

/** The most route names the `routes` list may hold: each is one more series per outcome. */
export const routesMax = 100;

/** What `metrics` takes. */
export interface MetricsOption {
  /**
   * A prom-client `Registry` (prom-client 14 or later): koa-buffer's metrics
   * are registered on it, and its `metrics()` serves them with the app's own.
   */
  registry?: RegistryLike;
  /**
   * Route names (as @koa/router matched them, e.g. `'/articles/:id'`)
   * requests are counted by, in `koa_buffer_route_requests_total{route,outcome}`;
   * requests of any other route count as `other`. At most 100.
   */
  routes?: string[];
}

/** What koa-buffer uses of a prom-client Registry. */
export interface RegistryLike {
  registerMetric(metric: object): void;
  metrics(): Promise<string> | string;
}

/** The option as the middleware uses it. */
export interface ResolvedMetrics {
  readonly registry: RegistryLike | undefined;
  readonly routes: ReadonlySet<string> | undefined;
}

/** Why `value` cannot be the `metrics` option, or undefined when it can. */
export function metricsProblem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    return 'metrics must be an object with a registry, routes, or both';
  for (const name of Object.keys(value))
    if (name !== 'registry' && name !== 'routes') return `metrics has no option ${JSON.stringify(name)}`;
  const { registry, routes } = value as { registry?: unknown; routes?: unknown };
  if (registry !== undefined && !isRegistry(registry))
    return 'metrics.registry must be a prom-client Registry (an object with registerMetric() and metrics())';
  if (routes !== undefined) {
    if (!Array.isArray(routes)) return 'metrics.routes must be an array of route names';
    if (routes.length > routesMax)
      return `metrics.routes holds ${routes.length} names, more than ${routesMax}: a label needs a bounded set`;
    if (!routes.every((route) => typeof route === 'string' && route !== '' && route.length <= 256))
      return 'metrics.routes must hold route names: non-empty strings of at most 256 characters';
  }
  return undefined;
}

function isRegistry(value: unknown): value is RegistryLike {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as RegistryLike).registerMetric === 'function' &&
    typeof (value as RegistryLike).metrics === 'function'
  );
}

/** The option resolved: undefined parts for none. */
export function resolveMetrics(value: MetricsOption | undefined | null): ResolvedMetrics {
  return {
    registry: value?.registry ?? undefined,
    routes: value?.routes === undefined ? undefined : new Set(value.routes),
  };
}
