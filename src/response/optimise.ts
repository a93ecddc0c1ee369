/**
 * HTML optimisation: level 1 squashes white space and shortens
 * links through `squashHtml` (native core or its twin); level 2 also minifies
 * inline `<style>` and `<script>` blocks with an optional minifier.
 *
 * Which minifier, by measurement (`bench/minifier.bench.ts`, inline blocks of
 * about 1.7 KB): for JavaScript esbuild took about 1.3 ms a block and terser
 * about 12 ms for 3 % fewer bytes, so esbuild first, terser if it is the only
 * one installed; for CSS lightningcss took about 0.13 ms, esbuild about 1 ms
 * and csso about 1.6 ms for the same size within 1 %, so lightningcss, then
 * esbuild, then csso. They are loaded lazily with dynamic import, the first
 * time a level-2 page needs one; when none is installed for a kind, that is
 * logged once and the blocks stay as they are.
 */
import type { Logger } from '../logger.ts';
import type { Messages } from '../messages.ts';
import { squashHtml } from '../native/exports.ts';
import type { SquashOptions } from '../native/types.ts';
import { squashHtmlOffLoop, squashOffLoopMin } from '../native/squash-off-loop.ts';

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

async function minifyInline(html: Buffer, settings: OptimiseSettings): Promise<Buffer> {
  const text = html.toString('latin1');
  const pieces: Buffer[] = [];
  let copied = 0;
  // matchAll iterates a copy of the pattern, so requests minifying at the same time do not share lastIndex.
  for (const match of text.matchAll(block)) {
    const kind = match[1]!.toLowerCase() as Kind;
    if (!minifiable(kind, match[2]!)) continue;
    const start = match.index + match[0].indexOf('>') + 1;
    const end = start + match[3]!.length;
    const replacement = await minifyBlock(kind, html.subarray(start, end), settings);
    if (!replacement) continue;
    pieces.push(html.subarray(copied, start), replacement);
    copied = end;
  }
  if (pieces.length === 0) return html;
  pieces.push(html.subarray(copied));
  return Buffer.concat(pieces);
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
  const options: SquashOptions = {
    level: settings.level,
    rewriteLinks: settings.rewriteLinks,
    host: settings.host,
    path: settings.path,
    // Koa reads X-Forwarded-Proto as sent; any other value shortens only scheme-relative links.
    scheme: settings.scheme === 'http' || settings.scheme === 'https' ? settings.scheme : undefined,
  };
  // A large page is squashed off the event loop (thread pool or slices), so other requests go on meanwhile.
  let out = body.length >= squashOffLoopMin ? await squashHtmlOffLoop(body, options) : squashHtml(body, options);
  if (settings.level === 2) out = await minifyInline(out, settings);
  return out.length < body.length ? out : body;
}
