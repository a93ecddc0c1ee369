/**
 * The demo's HTML frame: an ordinary, indented page, as a template engine
 * would write it. koa-buffer squashes it on the way out, so the indentation
 * costs nothing on the wire.
 */

/** Escapes text for HTML content and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Indents every line of `html` but the first by `spaces`, so nested fragments stay tidy. */
export function indent(html: string, spaces: number): string {
  return html.replace(/\n(?=.)/g, `\n${' '.repeat(spaces)}`);
}

/** The site's style sheet, served at /style.css (compressed, not squashed: only HTML is). */
export const styleSheet = `body {
  font: 16px/1.5 system-ui, sans-serif;
  max-width: 46rem;
  margin: 2rem auto;
  padding: 0 1rem;
  color: #222;
}
code, pre {
  font: 14px/1.4 ui-monospace, monospace;
  background: #f4f4f4;
}
pre {
  padding: .75rem;
  overflow-x: auto;
}
table {
  border-collapse: collapse;
}
td, th {
  border-bottom: 1px solid #ddd;
  padding: .3rem .6rem;
  text-align: left;
  vertical-align: top;
}
nav {
  margin-bottom: 1.5rem;
}
`;

/**
 * A whole page.
 *
 * @param title - the title (text)
 * @param main - the content of `<main>` (HTML)
 * @param lang - the language of the page
 */
export function layout(title: string, main: string, lang = 'en'): string {
  return `<!doctype html>
<html lang="${lang}">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${escapeHtml(title)} · koa-buffer demo</title>
    <link rel="stylesheet" href="/style.css">
  </head>
  <body>
    <!-- Comments like this one are removed by the squasher. -->
    <nav>
      <a href="/">← koa-buffer demo</a>
    </nav>
    <main>
      ${indent(main, 6)}
    </main>
  </body>
</html>
`;
}
