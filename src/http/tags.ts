/**
 * Purge tags: what `cacheTags` and the `Cache-Tag` response header may hold,
 * and the tags of one response. A tag is 1 to 256 visible ASCII characters
 * without a comma (the header's separator) or whitespace; case counts.
 */
import { headerText } from './headers.ts';

/** What a tag is made of. */
const tagPattern = /^[\x21-\x2b\x2d-\x7e]{1,256}$/;

/**
 * True when `tag` is a usable purge tag.
 *
 * @param tag - anything
 */
export function isTag(tag: unknown): tag is string {
  return typeof tag === 'string' && tagPattern.test(tag);
}

/** True when `value` is an array of usable tags (the `cacheTags` option). */
export function isTagList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every(isTag);
}

/**
 * The tags of one response: those of its options (`cacheTags`, from
 * `buffer()`, a section or `ctx.state.buffer`) and those of its tag header,
 * each once, in the order first seen.
 *
 * @param fromOptions - the response's `cacheTags`
 * @param fromHeader - the tag header's value as the action set it, comma-separated; undefined when absent
 * @returns the tags, or `{bad}` naming the first one that is not a tag
 * @example
 * responseTags(['article:1'], 'list:news, article:1') // ['article:1', 'list:news']
 */
export function responseTags(
  fromOptions: readonly unknown[] | undefined,
  fromHeader: string | undefined,
): string[] | { bad: string } {
  const tags: string[] = [];
  for (const tag of fromOptions ?? []) {
    if (!isTag(tag)) return { bad: String(tag) };
    if (!tags.includes(tag)) tags.push(tag);
  }
  if (fromHeader !== undefined) {
    for (const member of fromHeader.split(',')) {
      const tag = member.trim();
      if (tag === '') continue;
      if (!isTag(tag)) return { bad: tag };
      if (!tags.includes(tag)) tags.push(tag);
    }
  }
  return tags;
}

/** The part of the request state the tag header is read into. */
interface TagHolder {
  readonly options: { readonly cacheTagHeader: string } | undefined;
  /** The tag header's value as the action set it; undefined when absent. */
  tagHeader: string | undefined;
}

/**
 * Moves the response's tag header (`cacheTagHeader`) into the request state,
 * so it is stored with the entry but never sent: the tags name the site's
 * content, not the client's business.
 *
 * @param res - the Node response
 * @param state - the request state
 */
export function takeTagHeader(
  res: { hasHeader(name: string): boolean; getHeader(name: string): unknown; removeHeader(name: string): void },
  state: TagHolder,
): void {
  const name = state.options?.cacheTagHeader;
  if (!name || !res.hasHeader(name)) return;
  const value = res.getHeader(name);
  state.tagHeader = headerText(value as string | string[]);
  res.removeHeader(name);
}
