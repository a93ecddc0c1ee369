/**
 * Found by test/fuzz/squash_fuzz.cc (idempotence): link rewriting turned
 * `https://host//other/x` into `//other/x`, a link to another site (the
 * path's leading "//" reads as an authority once the scheme and host are
 * gone), and squashing again shortened that once more. The same happens when
 * the path starts with "/\" or with "/" + tab or line feed + "/": URL parsing
 * treats "\" as "/" and drops tabs and line feeds. A self link whose path
 * would read as an authority is now left whole. Checked with node's WHATWG
 * URL parser, which is the browser's: every rewritten link resolves where
 * the original did.
 */
import test from 'ava';
import { impls } from '../../helpers/impls.ts';

const options = { rewriteLinks: true, host: 'shop.example.com', path: '/catalog', scheme: 'https' } as const;
const page = 'https://shop.example.com/catalog?page=1';

const links = [
  'https://shop.example.com//evil.test/x',
  'http://shop.example.com//evil.test',
  '//shop.example.com//evil.test/x?y',
  'https://shop.example.com/\\evil.test/x',
  'https://shop.example.com/\t/evil.test/x',
  'https://shop.example.com/\n\\evil.test',
  'https://shop.example.com/\r\n/evil.test',
  // Still shortened: one slash, or a slash later in the path.
  'https://shop.example.com/account',
  'https://shop.example.com/a//b',
  'https://shop.example.com/catalog?page=2',
  'https://shop.example.com?x',
];

for (const [name, impl] of impls) {
  test(`${name}: a rewritten self link never becomes a link to another host`, (t) => {
    for (const link of links) {
      const input = Buffer.from(`<a href="${link}">x</a>`);
      const once = impl.squashHtml(input, options);
      const href = /href="([^"]*)"/s.exec(once.toString())![1]!;
      t.is(
        new URL(href, page).href,
        new URL(link, page).href,
        `${JSON.stringify(link)} became ${JSON.stringify(href)}`,
      );
      t.true(impl.squashHtml(once, options).equals(once), `squashing ${JSON.stringify(href)} again changes nothing`);
    }
  });

  test(`${name}: self links with a safe path are still shortened`, (t) => {
    const out = (link: string) => impl.squashHtml(Buffer.from(`<a href="${link}">`), options).toString();
    t.is(out('https://shop.example.com/account'), '<a href="/account">');
    t.is(out('https://shop.example.com/a//b'), '<a href="/a//b">');
    t.is(out('https://shop.example.com/catalog?page=2'), '<a href="?page=2">');
    t.is(out('https://shop.example.com//evil.test/x'), '<a href="https://shop.example.com//evil.test/x">');
  });
}
