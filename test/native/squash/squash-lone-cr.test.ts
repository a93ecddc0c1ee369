/**
 * Found by test/render/generated.test.ts in Chromium: a white-space run
 * holding a carriage return but no line feed became a space. The HTML
 * parser turns every CR into a line feed before anything else, so such a
 * run is a line break to CSS, and a line break is not always rendered as a
 * space: next to U+200B ZERO WIDTH SPACE it is removed (CSS Text 3, segment
 * break transformation), so "is\r\u200b it" renders "is\u200b it" and the
 * squashed "is \u200b it" rendered an extra space. A run holding a CR now
 * counts as holding a line feed and becomes "\n".
 */
import test from 'ava';
import { impls } from '../../helpers/impls.ts';

const cases: Array<[input: string, expected: string]> = [
  ['a\rb', 'a\nb'],
  ['is\r\u200b it', 'is\n\u200b it'],
  ['a \t\r b', 'a\nb'],
  ['<b>x</b>\r<b>y</b>', '<b>x</b>\n<b>y</b>'],
  ['a\r\nb', 'a\nb'],
  ['a \t b', 'a b'],
];

for (const [name, impl] of impls) {
  test(`${name}: a run holding a carriage return becomes a line feed, as the parser reads it`, (t) => {
    for (const [input, expected] of cases) {
      const once = impl.squashHtml(Buffer.from(input));
      t.is(once.toString(), expected, `squashing ${JSON.stringify(input)}`);
      t.true(impl.squashHtml(once).equals(once), `squashing ${JSON.stringify(expected)} again changes nothing`);
    }
  });
}
