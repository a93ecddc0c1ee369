/**
 * Headless Chromium (Debian's `chromium`, driven by playwright-core) for the
 * rendering-equivalence tests: one browser per test file with a fresh
 * profile directory, no network (every request is answered from memory or
 * refused), scripts off, a fixed viewport and a fixed generic font, and a
 * measurement of what a page renders: `document.body.innerText`, the
 * rounded box of every element, and where its links and images point.
 *
 * Pages are rendered in batches: one navigation of a host page holding one
 * 1024×768 iframe per page, so a batch costs one load instead of one each.
 * Each iframe is its own document at its own URL with its own viewport;
 * boxes are relative to that viewport, so where the iframe sits does not
 * matter. No ava import here, so scripts can use it to look at a page;
 * tests take `renderTest` from render-test.ts.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Frame, type Page } from 'playwright-core';

/** The Chromium binary: `KB_CHROMIUM`, else Debian's. */
export const chromiumPath = process.env.KB_CHROMIUM ?? '/usr/bin/chromium';

/** Why the render tests cannot run here, or undefined when they can. */
export const chromiumSkipReason: string | undefined = existsSync(chromiumPath)
  ? undefined
  : 'install chromium (Debian package chromium)';

/**
 * The flags issue 7 names, and a host resolver that resolves nothing, so
 * that not even a DNS prefetch leaves the machine (pages are served from
 * memory before any lookup). Playwright adds its automation flags beside them.
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  // Scripting off in every frame from its creation. javaScriptEnabled: false alone is applied per
  // frame over CDP, and a busy machine once let an iframe parse before it took effect: with
  // scripting on, <noscript> in <head> is raw text, so the two renderings of a page differed.
  '--blink-settings=scriptEnabled=false',
];

/** The viewport every page is rendered in. */
export const VIEWPORT = { width: 1024, height: 768 } as const;

/** A page to render: the URL it is served at and its bytes (served as UTF-8 HTML). */
export interface PageToRender {
  url: string;
  body: Buffer;
}

/** One element: its tag name and its rounded box (x, y, width, height) in CSS pixels. */
export type ElementBox = [tag: string, x: number, y: number, width: number, height: number];

/** What a page rendered. */
export interface Rendering {
  url: string;
  /** `document.body.innerText`, or null without a body (a frameset page). */
  text: string | null;
  title: string;
  /** `document.compatMode`: quirks or standards mode, which white space must not change. */
  compatMode: string;
  /** Every element in document order. */
  elements: ElementBox[];
  /** The resolved `href` of every `a[href]` and `src` of every `img[src]`, without the scheme. */
  links: string[];
  /** A PNG of the page's viewport, when one was taken ({@link Renderer.screenshot}). */
  screenshot?: Buffer;
}

// Applied inside every page before it is measured: one generic font, so
// no page depends on which fonts the machine has, and nothing moving.
const FIXED_STYLE =
  '*, *::before, *::after { font-family: monospace !important; animation: none !important; transition: none !important; caret-color: transparent !important; }';

// The little of the DOM that measure() uses, declared here so that this
// file type-checks without the DOM library (the project compiles for Node).
interface PageElement {
  readonly localName: string;
  readonly href?: unknown; // a string, or an SVGAnimatedString on SVG <a>
  readonly src?: unknown;
  getBoundingClientRect(): { x: number; y: number; width: number; height: number };
}
interface PageDocument {
  readonly head: { appendChild(node: unknown): unknown } | null;
  readonly documentElement: { appendChild(node: unknown): unknown };
  readonly body: { innerText: string } | null;
  readonly title: string;
  readonly compatMode: string;
  createElement(tag: 'style'): PageElement & { textContent: string; remove(): void };
  querySelectorAll(selector: string): ArrayLike<PageElement>;
}
declare const document: PageDocument;

/** Runs inside a page: measures it (the style element it adds is left out). */
function measure(style: string): Omit<Rendering, 'url'> {
  const added = document.createElement('style');
  added.textContent = style;
  (document.head ?? document.documentElement).appendChild(added);
  const elements: ElementBox[] = [];
  for (const el of Array.from(document.querySelectorAll('*'))) {
    if (el === added) continue;
    const r = el.getBoundingClientRect();
    elements.push([el.localName, Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]);
  }
  const links: string[] = [];
  for (const el of Array.from(document.querySelectorAll('a[href], img[src]'))) {
    const url = el.localName === 'a' ? el.href : el.src;
    links.push(
      typeof url === 'string' ? url.replace(/^[a-z][a-z0-9+.-]*:/i, '') : `(not a URL string: ${String(url)})`,
    );
  }
  const result = {
    text: document.body ? document.body.innerText : null,
    title: document.title,
    compatMode: document.compatMode,
    elements,
    links,
  };
  added.remove();
  return result;
}

/** A browser for one test file. */
export class Renderer {
  private served = new Map<string, Buffer>();
  private batch = 0;

  private constructor(
    private readonly context: BrowserContext,
    private readonly page: Page,
    private readonly profile: string,
  ) {}

  /**
   * Starts Chromium with a fresh profile; {@link close} stops it and removes the profile.
   * @throws Error when Chromium cannot start.
   */
  static async launch(): Promise<Renderer> {
    const profile = mkdtempSync(join(tmpdir(), 'kb-chromium-'));
    let context: BrowserContext;
    try {
      context = await chromium.launchPersistentContext(profile, {
        executablePath: chromiumPath,
        headless: true,
        args: CHROMIUM_FLAGS,
        viewport: VIEWPORT,
        deviceScaleFactor: 1,
        javaScriptEnabled: false,
        serviceWorkers: 'block',
        timeout: 60_000,
      });
    } catch (error) {
      rmSync(profile, { recursive: true, force: true });
      throw error;
    }
    const renderer = new Renderer(context, context.pages()[0] ?? (await context.newPage()), profile);
    // Nothing leaves the machine: pages come from memory, every other request is refused.
    await context.route('**/*', async (route) => {
      const body = renderer.served.get(route.request().url());
      if (body === undefined) return route.abort('blockedbyclient');
      return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body });
    });
    return renderer;
  }

  /**
   * Renders pages side by side in one navigation and measures each.
   * URLs must be distinct within a call; the same URLs may be used again in
   * the next call with other bytes (to render an original and its squashed
   * form at the same address).
   */
  async render(batch: PageToRender[]): Promise<Rendering[]> {
    // As the browser will request them: lowercase host, default port dropped.
    const pages = batch.map((p) => ({ url: new URL(p.url).href, body: p.body }));
    const urls = new Set(pages.map((p) => p.url));
    if (urls.size !== pages.length) throw new Error('render: the URLs of one batch must be distinct');
    const host = `http://render.test/batch-${++this.batch}`;
    const frames = pages
      .map(
        (p) =>
          `<iframe src="${p.url.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}" width="${VIEWPORT.width}" height="${VIEWPORT.height}" style="display:block;border:0"></iframe>`,
      )
      .join('');
    this.served = new Map(pages.map((p) => [p.url, p.body]));
    this.served.set(host, Buffer.from(`<!DOCTYPE html><body style="margin:0">${frames}</body>`));
    await this.page.goto(host, { waitUntil: 'load', timeout: 60_000 });
    const byUrl = new Map<string, Frame>();
    for (const frame of this.page.mainFrame().childFrames()) byUrl.set(frame.url(), frame);
    const renderings: Rendering[] = await Promise.all(
      pages.map(async (p) => {
        const frame = byUrl.get(p.url);
        if (!frame) throw new Error(`render: no frame loaded ${p.url}`);
        return { url: p.url, ...(await frame.evaluate(measure, FIXED_STYLE)) };
      }),
    );
    return renderings;
  }

  /**
   * A PNG of one page's viewport. The page is loaded on its own, as the top
   * document: a frame scrolled out of a batch's view may not be painted yet.
   */
  async screenshot(page: PageToRender): Promise<Buffer> {
    const url = new URL(page.url).href;
    this.served = new Map([[url, page.body]]);
    await this.page.goto(url, { waitUntil: 'load', timeout: 60_000 });
    // Headless Chromium answers "Unable to capture screenshot" when its compositor has produced no frame
    // for the new document yet, which a starved machine (CI beside other jobs) makes likely; the page is
    // loaded and asking again gets the frame. Any other error, or a third refusal, is thrown.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.page.screenshot({ animations: 'disabled', caret: 'hide' });
      } catch (error) {
        if (attempt === 3 || !String(error).includes('Unable to capture screenshot')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
      }
    }
  }

  /** Closes the browser and removes its profile directory. */
  async close(): Promise<void> {
    try {
      await this.context.close();
    } finally {
      rmSync(this.profile, { recursive: true, force: true });
    }
  }
}

/** Where two renderings first differ, in words, or undefined when they are the same. */
export function firstDifference(a: Rendering, b: Rendering): string | undefined {
  if (a.compatMode !== b.compatMode) return `compatMode ${a.compatMode} became ${b.compatMode}`;
  if (a.title !== b.title) return `title ${JSON.stringify(a.title)} became ${JSON.stringify(b.title)}`;
  if (a.text !== b.text) {
    const x = a.text ?? '';
    const y = b.text ?? '';
    let i = 0;
    while (i < x.length && i < y.length && x[i] === y[i]) i++;
    const around = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 40), i + 40));
    return `innerText differs at character ${i}: ${around(x)} became ${around(y)}`;
  }
  const n = Math.min(a.elements.length, b.elements.length);
  for (let i = 0; i < n; i++) {
    const [x, y] = [a.elements[i]!, b.elements[i]!];
    if (x.join() !== y.join()) {
      const path = a.elements
        .slice(Math.max(0, i - 3), i)
        .map((e) => e[0])
        .join(' … ');
      return `element ${i} (${x[0]}, after ${path}) box [${x.slice(1).join(', ')}] became ${y[0]} [${y.slice(1).join(', ')}]`;
    }
  }
  if (a.elements.length !== b.elements.length) return `${a.elements.length} elements became ${b.elements.length}`;
  for (let i = 0; i < Math.max(a.links.length, b.links.length); i++) {
    if (a.links[i] !== b.links[i]) return `link ${i} pointed to ${a.links[i]} and now to ${b.links[i]}`;
  }
  if (a.screenshot && b.screenshot && !a.screenshot.equals(b.screenshot)) return 'the screenshots differ';
  return undefined;
}
