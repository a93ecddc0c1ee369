/**
 * The purge methods of the middleware `buffer()` returns: their arguments
 * checked and turned into record ids (book.ts), the purge recorded by the
 * middleware's cache (../runtime.ts).
 */
import { purgeChannel, type PurgeMessage } from '../../base/channels.ts';
import { BufferOptionError } from '../../base/errors.ts';
import type { Messages } from '../../base/messages.ts';
import type { CacheRuntime } from '../runtime.ts';
import { pathId, tagId, urlId } from './book.ts';
import { isTag } from '../../http/tags.ts';

/** What the middleware gains. */
export interface PurgeMethods {
  /**
   * Removes every stored variant of a URL: every scheme, every `varyBy`
   * value (cookies included), every coding, in every process sharing the
   * store (within `cacheSyncMs`; in this one at once). The URL is its path
   * and query as requests send them, or an absolute URL, whose host counts.
   *
   * @param url - `/articles/7?page=2`, or `https://example.com/articles/7`
   * @param options - `host`: only this Host (as the request sends it, port included); else every host
   * @throws BufferOptionError for a URL or host that cannot be one; the store's error when it fails
   * @example
   * await middleware.purge('/articles/7', { host: 'example.com' });
   */
  purge(url: string, options?: { host?: string }): Promise<void>;
  /**
   * Removes every entry carrying `tag` (from `cacheTags` or the `Cache-Tag` header).
   * @throws BufferOptionError for something that is not a tag; the store's error when it fails
   */
  purgeTag(tag: string): Promise<void>;
  /** Removes every entry. @throws the store's error when it fails */
  purgeAll(): Promise<void>;
}

/** True when `text` holds a control character or a space, which no request line or Host holds. */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** The purge methods over `runtime`. */
export function purgeMethods(runtime: CacheRuntime, messages: Messages): PurgeMethods {
  return {
    purge: async (url, options) => {
      const ids = urlIds(url, options?.host, messages, runtime.namespace);
      runtime.log.stats.purges.url++;
      if (purgeChannel.hasSubscribers) purgeChannel.publish({ kind: 'url', target: url } satisfies PurgeMessage);
      await runtime.purge(ids);
    },
    purgeTag: async (tag) => {
      if (!isTag(tag)) throw new BufferOptionError('purge_tag', { tag: JSON.stringify(tag) ?? String(tag) }, messages);
      runtime.log.stats.purges.tag++;
      if (purgeChannel.hasSubscribers) purgeChannel.publish({ kind: 'tag', target: tag } satisfies PurgeMessage);
      await runtime.purge([tagId(tag)]);
    },
    purgeAll: async () => {
      runtime.log.stats.purges.all++;
      if (purgeChannel.hasSubscribers) purgeChannel.publish({ kind: 'all', target: undefined } satisfies PurgeMessage);
      await runtime.purge('all');
    },
  };
}

/** The record id of a URL on one host, or on every host. */
export function urlIds(url: unknown, host: unknown, messages: Messages, namespace: string): string[] {
  if (typeof url !== 'string' || hasControl(url))
    throw new BufferOptionError('purge_url', { url: JSON.stringify(url) ?? String(url) }, messages);
  let path = url;
  let onHost = host;
  if (!url.startsWith('/')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new BufferOptionError('purge_url', { url: JSON.stringify(url) }, messages);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new BufferOptionError('purge_url', { url: JSON.stringify(url) }, messages);
    path = parsed.pathname + parsed.search;
    onHost ??= parsed.host;
  }
  if (onHost === undefined) return [pathId(namespace, path)];
  if (typeof onHost !== 'string' || onHost === '' || hasControl(onHost))
    throw new BufferOptionError('purge_host', { host: JSON.stringify(onHost) ?? String(onHost) }, messages);
  return [urlId(namespace, onHost.toLowerCase(), path)];
}
