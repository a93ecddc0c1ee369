/**
 * The page examples/react-stream/server.ts streams, with React 19's
 * `renderToPipeableStream`: a shell (header, article, footer) that React
 * writes at once, and a Suspense boundary whose content (readers' reviews)
 * resolves after a second. React writes the shell with the boundary's
 * fallback in its place, then, when the reviews resolve, their markup and
 * the inline script that swaps them in, and ends the stream.
 *
 * Written with `createElement` rather than JSX, so it runs under tsx with
 * no build step. bench/streams.bench.ts streams the same page.
 */
import { PassThrough } from 'node:stream';
import { createElement as h, Suspense, use, type ReactNode } from 'react';
import { renderToPipeableStream } from 'react-dom/server';

/** Words the generated paragraphs are made of: a page's worth of ordinary prose, not random bytes. */
const words = (
  'the river town keeps its old market hall where traders still meet on saturday mornings to sell bread ' +
  'cheese apples honey and the first greens of the season while children run between the stalls and the ' +
  'clock above the door strikes every quarter hour for anyone who has forgotten the time'
).split(' ');

/** A deterministic paragraph of about `length` characters, the `seed`th of the page. */
function prose(seed: number, length: number): string {
  let text = '';
  for (let i = 0; text.length < length; i++) text += `${words[(seed * 7 + i * 13 + ((i * i) >> 2)) % words.length]} `;
  return `${text.charAt(0).toUpperCase()}${text.slice(1, -1)}.`;
}

/** The reviews the Suspense boundary waits for. */
interface Review {
  readonly author: string;
  readonly stars: number;
  readonly text: string;
}

/** Reviews that arrive `ms` after the request, as from a slow service. */
function loadReviews(ms: number): Promise<Review[]> {
  return new Promise((resolve) =>
    setTimeout(
      () =>
        resolve(
          Array.from({ length: 12 }, (_, i) => ({
            author: `Reader ${i + 1}`,
            stars: (i % 5) + 1,
            text: prose(100 + i, 240),
          })),
        ),
      ms,
    ),
  );
}

/** Suspends until the reviews have come (React 19's `use`), then lists them. */
function Reviews({ reviews }: { reviews: Promise<Review[]> }): ReactNode {
  return h(
    'ol',
    { id: 'reviews' },
    use(reviews).map((review) =>
      h(
        'li',
        { key: review.author },
        h('strong', null, review.author),
        ` (${'★'.repeat(review.stars)}${'☆'.repeat(5 - review.stars)}) `,
        h('span', null, review.text),
      ),
    ),
  );
}

const style = `
body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 46rem; padding: 1rem; color: #222; }
header { border-bottom: 1px solid #ccc; } nav a { margin-right: 1rem; }
#fallback { color: #777; font-style: italic; } footer { margin-top: 2rem; border-top: 1px solid #ccc; }
`;

/** The whole page: the shell, and the reviews behind a Suspense boundary. */
function Page({ reviews }: { reviews: Promise<Review[]> }): ReactNode {
  return h(
    'html',
    { lang: 'en' },
    h(
      'head',
      null,
      h('meta', { charSet: 'utf-8' }),
      h('title', null, 'The market hall'),
      h('style', { dangerouslySetInnerHTML: { __html: style } }),
    ),
    h(
      'body',
      null,
      h(
        'header',
        null,
        h('h1', null, 'The market hall'),
        h(
          'nav',
          null,
          ['Home', 'History', 'Traders', 'Opening hours', 'Contact'].map((label) =>
            h('a', { key: label, href: `/${label.toLowerCase().replace(' ', '-')}` }, label),
          ),
        ),
      ),
      h(
        'main',
        null,
        h(
          'article',
          null,
          Array.from({ length: 16 }, (_, i) => h('p', { key: i }, prose(i, 600))),
        ),
        h('h2', null, 'What readers say'),
        h(Suspense, { fallback: h('p', { id: 'fallback' }, 'Loading the reviews…') }, h(Reviews, { reviews })),
      ),
      h('footer', { id: 'shell-end' }, h('p', null, 'The market hall, open every saturday from seven.')),
    ),
  );
}

/** What {@link streamPage} gives the action. */
export interface StreamedPage {
  /** The page's bytes as React writes them: the shell at once, the reviews later. */
  readonly body: PassThrough;
  /** Stops rendering (the client left, or it took too long). */
  readonly abort: () => void;
}

/**
 * Renders the page and resolves once its shell is ready, with the body the
 * shell has already been written into.
 *
 * @param reviewsAfterMs - when the Suspense boundary's content resolves
 * @param onShellWrite - called just before React writes the shell (a bench times from there)
 */
export function streamPage(reviewsAfterMs = 1000, onShellWrite?: () => void): Promise<StreamedPage> {
  const reviews = loadReviews(reviewsAfterMs);
  return new Promise((resolve, reject) => {
    const body = new PassThrough();
    const { pipe, abort } = renderToPipeableStream(h(Page, { reviews }), {
      onShellReady() {
        onShellWrite?.();
        pipe(body);
        resolve({ body, abort: () => abort() });
      },
      onShellError: reject,
      onError(error) {
        // After the shell, React puts the boundary's fallback in place and the page still ends well.
        console.error('render error:', error);
      },
    });
  });
}
