/**
 * The options of `front()`, checked once when it is made: a front answers
 * before every middleware, so it must be told what it may answer, and any
 * mistake is an error naming it rather than a front that answers more.
 */
import { describeValue } from '../base/describe.ts';
import { BufferOptionError } from '../base/errors.ts';

/** What `front(app, options)` takes. */
export interface FrontOptions {
  /**
   * Path prefixes it may answer: `'/blog'` answers `/blog`, `/blog/…` and
   * `/blog?…`, not `/blogroll`; `'/'` answers every path.
   */
  paths?: readonly string[];
  /** Host names (without port, any case) it may answer. With `paths` too, a request must match both. */
  hosts?: readonly string[];
  /** Bytes of answers it keeps, bodies included (default 32 MiB). */
  maxBytes?: number;
  /** The buffer() middleware to answer for, when the application mounts more than one. */
  buffer?: unknown;
}

/** Which requests a front may answer. */
export interface FrontScope {
  covers(host: string, url: string): boolean;
}

export interface ResolvedFrontOptions {
  readonly scope: FrontScope;
  readonly maxBytes: number;
  readonly buffer: unknown;
}

const known = new Set(['paths', 'hosts', 'maxBytes', 'buffer']);

/**
 * @throws BufferOptionError naming the first problem: no scope, a bad `paths`, `hosts` or `maxBytes`, an unknown option
 */
export function resolveFrontOptions(options: FrontOptions | undefined): ResolvedFrontOptions {
  if (options === null || typeof options !== 'object') throw new BufferOptionError('front_scope_missing');
  for (const name of Object.keys(options))
    if (!known.has(name)) throw new BufferOptionError('front_option_unknown', { name });
  const { paths, hosts, maxBytes = 32 * 1024 * 1024 } = options;
  if (paths === undefined && hosts === undefined) throw new BufferOptionError('front_scope_missing');
  if (paths !== undefined && !validList(paths, (path) => path.startsWith('/') && !/[?#\s]/.test(path)))
    throw new BufferOptionError('front_paths', { value: describeValue(paths) });
  if (hosts !== undefined && !validList(hosts, (host) => /^[a-z0-9.-]+$/i.test(host)))
    throw new BufferOptionError('front_hosts', { value: describeValue(hosts) });
  if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0)
    throw new BufferOptionError('front_max_bytes', { value: describeValue(maxBytes) });
  return { scope: scopeOf(paths, hosts), maxBytes, buffer: options.buffer };
}

function validList(value: unknown, valid: (item: string) => boolean): value is readonly string[] {
  return Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'string' && valid(item));
}

function scopeOf(paths: readonly string[] | undefined, hosts: readonly string[] | undefined): FrontScope {
  const hostSet = hosts === undefined ? undefined : new Set(hosts.map((host) => host.toLowerCase()));
  // '/blog/' and '/blog' mean the same prefix; '/' covers every path.
  const prefixes = paths?.map((path) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path));
  return {
    covers(host: string, url: string): boolean {
      if (hostSet !== undefined && !hostSet.has(hostnameOf(host))) return false;
      if (prefixes === undefined) return true;
      for (const prefix of prefixes) if (underPrefix(url, prefix)) return true;
      return false;
    },
  };
}

/** The Host header's name without its port, lowercased (a bracketed IPv6 address keeps its brackets). */
function hostnameOf(host: string): string {
  const colon = host.lastIndexOf(':');
  const name = colon > host.lastIndexOf(']') ? host.slice(0, colon) : host;
  return name.toLowerCase();
}

function underPrefix(url: string, prefix: string): boolean {
  if (prefix === '/') return true;
  if (!url.startsWith(prefix)) return false;
  const next = url.charCodeAt(prefix.length);
  return Number.isNaN(next) || next === 0x2f || next === 0x3f; // end, '/', '?'
}
