/**
 * HTML optimisation: level 1 squashes white space and shortens
 * links through `squashHtml` (native core or its twin); level 2 also minifies
 * inline `<style>` and `<script>` blocks with an optional minifier.
 *
 * Which minifier, by measurement (`bench/minifier.bench.ts`;
 * docs/decisions/0046-level-2-minifiers-chosen-by-measurement.md): for
 * JavaScript esbuild first, terser (far slower for a few bytes fewer) if it
 * is the only one installed; for CSS, where all make the same size, the
 * fastest first: lightningcss, then esbuild, then csso. They are loaded
 * lazily with dynamic import, the first time a level-2 page needs one; when
 * none is installed for a kind, that is logged once and the blocks stay as
 * they are.
 */
import type { Logger } from '../base/logger.ts';
import type { Messages } from '../base/messages.ts';
import { squashHtml } from '../native/exports.ts';
import type { SquashOptions } from '../native/types.ts';
import { squashHtmlOffLoop, squashOffLoopMin } from '../native/squash-off-loop.ts';
import { concatInSlices } from '../native/slices.ts';

/** What the optimiser needs to know about the response. */
export interface OptimiseSettings {
  /** 1 squash, 2 squash and minify inline CSS/JS. */
  level: 1 | 2;
  rewriteLinks: boolean;
  /** The request's Host, with the port when it named one. */
  host: string;
  /** The request path, without the query. */
  path: string;
  /** The request's scheme (`ctx.protocol`): links keep theirs, so only links of this scheme or none are shortened. */
  scheme: string;
  logger: Logger;
  messages: Messages;
  /** False when debug lines would be dropped anyway, so none are built. */
  debug: boolean;
}

type Minify = (code: string) => Promise<string>;
type Kind = 'script' | 'style';

interface Candidate {
  name: string;
  load: () => Promise<Minify>;
}

/** esbuild, which minifies both kinds, as the candidate for one of them. */
function esbuildFor(loader: 'js' | 'css'): Candidate {
  return {
    name: 'esbuild',
    load: async () => {
      const esbuild = await import('esbuild');
      return async (code) => (await esbuild.transform(code, { loader, minify: true })).code;
    },
  };
}

// Preference order from the measurement above.
const candidates: Record<Kind, Candidate[]> = {
  script: [
    esbuildFor('js'),
    {
      name: 'terser',
      load: async () => {
        const terser = await import('terser');
        return async (code) => (await terser.minify(code, { compress: true, mangle: true })).code ?? code;
      },
    },
  ],
  style: [
    {
      name: 'lightningcss',
      load: async () => {
        const lightningcss = await import('lightningcss');
        return async (code) =>
          lightningcss.transform({ filename: 'inline.css', code: Buffer.from(code), minify: true }).code.toString();
      },
    },
    esbuildFor('css'),
    {
      name: 'csso',
      load: async () => {
        const csso = await import('csso');
        return async (code) => csso.minify(code).css;
      },
    },
  ],
};

const loaded = new Map<Kind, Promise<Minify | undefined>>();
const missingLogged = new Set<Kind>();

/** The minifier for `kind`, loaded once per process; undefined when no candidate is installed. */
function minifier(kind: Kind): Promise<Minify | undefined> {
  let pending = loaded.get(kind);
  if (!pending) {
    pending = (async () => {
      for (const candidate of candidates[kind]) {
        try {
          return await candidate.load();
        } catch {
          // Not installed (or does not load here): try the next one.
        }
      }
      return undefined;
    })();
    loaded.set(kind, pending);
  }
  return pending;
}

const javascriptTypes = new Set([
  '',
  'text/javascript',
  'application/javascript',
  'application/x-javascript',
  'text/ecmascript',
  'application/ecmascript',
  'module',
]);

/** The value of attribute `name` in an opening tag's attribute text, lowercased; '' when absent. */
function attribute(attributes: string, name: string): string | undefined {
  const match = new RegExp(`(?:^|\\s)${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(attributes);
  if (!match) return undefined;
  return (match[1] ?? match[2] ?? match[3] ?? '').trim().toLowerCase();
}

function minifiable(kind: Kind, attributes: string): boolean {
  if (kind === 'style') {
    const type = attribute(attributes, 'type');
    return type === undefined || type === '' || type === 'text/css';
  }
  if (attribute(attributes, 'src') !== undefined) return false;
  return javascriptTypes.has(attribute(attributes, 'type') ?? '');
}

// Blocks after squashing; the latin1 view keeps byte offsets equal to string offsets.
const block = /<(script|style)\b([^>]*)>([\s\S]*?)<\/\1\s*>/gi;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Minifies one block's text, or returns undefined to keep the original bytes. */
async function minifyBlock(kind: Kind, bytes: Buffer, settings: OptimiseSettings): Promise<Buffer | undefined> {
  let code: string;
  try {
    code = strictUtf8.decode(bytes);
  } catch {
    return undefined; // not UTF-8 (an ISO-8859-1 page, say): the minifiers take text, so leave it
  }
  if (code.trim() === '') return undefined;
  const minify = await minifier(kind);
  if (!minify) {
    if (!missingLogged.has(kind)) {
      missingLogged.add(kind);
      settings.logger.info(
        settings.messages.text('log_minifier_missing', { name: candidates[kind].map((c) => c.name).join(' or ') }),
      );
    }
    return undefined;
  }
  try {
    const out = (await minify(code)).trim();
    // A minifier must not produce the end tag of its own element, or the page changes meaning.
    if (out.toLowerCase().includes(`</${kind}`)) return undefined;
    const result = Buffer.from(out, 'utf8');
    return result.length < bytes.length ? result : undefined;
  } catch (error) {
    if (settings.debug)
      settings.logger.debug(
        settings.messages.text('log_minify_failed', {
          kind: kind === 'script' ? 'JavaScript' : 'CSS',
          error: (error as Error).message?.split('\n')[0],
        }),
      );
    return undefined;
  }
}

/** One inline block: its kind, its opening tag's attributes, and where its text starts and ends in the page. */
export interface InlineBlock {
  kind: Kind;
  attributes: string;
  start: number;
  end: number;
}

/** Pages above this many bytes are searched for blocks a window at a time (see {@link inlineBlocks}). */
const searchWindow = 1024 * 1024;

const opening = /<(script|style)\b([^>]*)(>|$)/gi;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The blocks `block` finds in `html`, in order. A page up to `window` bytes
 * is searched in one call; a larger one a window at a time, a turn of the
 * event loop apart, so a page of many MiB does not hold the loop for its
 * whole search (docs/decisions/0043-large-bodies-leave-the-event-loop.md).
 * The blocks are the same: an opening tag is matched with the first end tag
 * of its name after it, and one without an end tag is no block, as for
 * `block`; a window grows when an opening tag or its block reaches its end,
 * so nothing is judged on part of its bytes.
 */
export async function* inlineBlocks(html: Buffer, window: number = searchWindow): AsyncGenerator<InlineBlock> {
  if (html.length <= window) {
    // matchAll iterates a copy of the pattern, so requests minifying at the same time do not share lastIndex.
    for (const match of html.toString('latin1').matchAll(block)) {
      const start = match.index + match[0].indexOf('>') + 1;
      yield { kind: match[1]!.toLowerCase() as Kind, attributes: match[2]!, start, end: start + match[3]!.length };
    }
    return;
  }
  let from = 0;
  let size = window;
  while (from < html.length) {
    await nextTurn();
    const to = Math.min(html.length, from + size);
    const text = html.toString('latin1', from, to);
    const whole = to === html.length;
    const open = new RegExp(opening.source, 'gi');
    let at = 0;
    let grow = false;
    for (let found = open.exec(text); found !== null; found = open.exec(text)) {
      if (found[3] === '' && !whole) {
        grow = true; // an opening tag cut by the window's end
        break;
      }
      if (found[3] === '') break; // "<script" and no '>' before the page ends: no block
      const name = found[1]!;
      const close = new RegExp(`<\\/${name}\\s*>`, 'gi');
      close.lastIndex = open.lastIndex;
      const closed = close.exec(text);
      // An end tag found ends where the page could not say otherwise (its `\s*>` is whole); none: look further.
      if (closed === null || (closed.index + closed[0].length === text.length && !whole)) {
        if (!whole) {
          grow = true;
          break;
        }
        open.lastIndex = found.index + 1; // no end tag anywhere: not a block, as for `block`
        continue;
      }
      yield {
        kind: name.toLowerCase() as Kind,
        attributes: found[2]!,
        start: from + open.lastIndex,
        end: from + closed.index,
      };
      open.lastIndex = closed.index + closed[0].length;
      at = open.lastIndex;
    }
    if (grow) {
      // Search again from the end of the last block, with room for the cut one.
      if (at > 0) from += at;
      else size *= 2;
      continue;
    }
    if (whole) return;
    // No opening tag starts in the rest of the window, but one may begin in its last bytes.
    from = Math.max(from + at, to - 16, from + 1);
    size = window;
  }
}

async function minifyInline(html: Buffer, settings: OptimiseSettings): Promise<Buffer> {
  const pieces: Buffer[] = [];
  let copied = 0;
  for await (const { kind, attributes, start, end } of inlineBlocks(html)) {
    if (!minifiable(kind, attributes)) continue;
    const replacement = await minifyBlock(kind, html.subarray(start, end), settings);
    if (!replacement) continue;
    pieces.push(html.subarray(copied, start), replacement);
    copied = end;
  }
  if (pieces.length === 0) return html;
  pieces.push(html.subarray(copied));
  return concatInSlices(pieces);
}

/** What a response's squash is given: the level, and what link rewriting reads (the stream path squashes with it too). */
export function squashOptions(
  settings: Pick<OptimiseSettings, 'level' | 'rewriteLinks' | 'host' | 'path' | 'scheme'>,
): SquashOptions {
  return {
    level: settings.level,
    rewriteLinks: settings.rewriteLinks,
    host: settings.host,
    path: settings.path,
    // Koa reads X-Forwarded-Proto as sent; any other value shortens only scheme-relative links.
    scheme: settings.scheme === 'http' || settings.scheme === 'https' ? settings.scheme : undefined,
  };
}

/**
 * Optimises an HTML body; the result is never longer than the input (the
 * input is returned when optimisation did not make it smaller).
 *
 * @param body - the HTML bytes
 * @param settings - level, link rewriting with host, path and scheme, and the logger
 * @returns the smaller of the optimised body and `body`
 */
export async function optimiseHtml(body: Buffer, settings: OptimiseSettings): Promise<Buffer> {
  const options = squashOptions(settings);
  // A large page is squashed off the event loop (thread pool or slices), so other requests go on meanwhile.
  let out = body.length >= squashOffLoopMin ? await squashHtmlOffLoop(body, options) : squashHtml(body, options);
  if (settings.level === 2) out = await minifyInline(out, settings);
  return out.length < body.length ? out : body;
}
