/**
 * Found by test/fuzz/squash_fuzz.cc (idempotence): a comment at the very
 * start of a page followed by U+FEFF. In the original the U+FEFF is text (a
 * zero-width no-break space after the comment, in the body's innerText);
 * removing the comment moved it to byte 0, where the decoder takes it for a
 * byte order mark and drops it. So the page lost a character, and a second
 * squash treated the run after it differently ("\uFEFF\n<br>" → "\uFEFF<br>").
 * The comment now stays when nothing precedes it in the output and a BOM's
 * bytes follow it.
 */
import test from 'ava';
import { impls } from '../../helpers/impls.ts';

const BOM = '\uFEFF';
const cases = [
  { input: `<!--->${BOM}\r\n<br><td onclick=''>`, expected: `<!--->${BOM}\n<br><td onclick=''>` },
  {
    input: `<!-- a --!>${BOM}\t\t<html><svg><title>t</title></svg>`,
    expected: `<!-- a --!>${BOM} <html><svg><title>t</title></svg>`,
  },
  // Other comments before it still go: only the one the BOM's bytes follow stays.
  { input: `<!-- x --><!-- y -->${BOM}<p>`, expected: `<!-- y -->${BOM}<p>` },
  // A real BOM at byte 0 is kept, and a comment after it goes (the second U+FEFF is text either way).
  { input: `${BOM}<!-- x -->${BOM}<p>`, expected: `${BOM}${BOM}<p>` },
  // White space before the comment comes out first, so the U+FEFF is not at byte 0.
  { input: `\n<!-- x -->${BOM}<p>`, expected: `\n${BOM}<p>` },
];

for (const [name, impl] of impls) {
  test(`${name}: a comment followed by U+FEFF at the start stays, so the U+FEFF does not become a byte order mark`, (t) => {
    for (const { input, expected } of cases) {
      const once = impl.squashHtml(Buffer.from(input));
      t.is(once.toString(), expected, `squashing ${JSON.stringify(input)}`);
      t.true(impl.squashHtml(once).equals(once), `squashing ${JSON.stringify(expected)} again changes nothing`);
    }
  });
}
