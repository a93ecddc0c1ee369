// Writes the options reference from its one source, the schema rows of
// src/config/schema.ts: docs/options.md (one section per option) and the
// short options table of README.md, between <!-- options:begin --> and
// <!-- options:end -->. Only that region of the README is written.
//
//   node --import tsx scripts/generate-options-docs.ts           write both
//   node --import tsx scripts/generate-options-docs.ts --check   write nothing; exit 1 and
//                                                                name what is stale
//   … --root DIR                                                 another tree (the tests use a copy)
//
// A row's TSDoc is read from the source text, as an editor reads it; its
// scope, one-line doc and check from the row itself. Both outputs are
// formatted with the repository's Prettier settings, so `npm run format`
// leaves them as generated.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import ts from 'typescript';
import { builtinMessages } from '../src/base/messages.ts';
import type { Check, Scope } from '../src/config/row.ts';
import { schema } from '../src/config/schema.ts';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
export const schemaPath = 'src/config/schema.ts';
export const referencePath = 'docs/options.md';
export const readmePath = 'README.md';
export const begin = '<!-- options:begin -->';
export const end = '<!-- options:end -->';

/** What the reference says of one option. */
export interface OptionDoc {
  readonly name: string;
  readonly scope: Scope;
  /** The row's one line. */
  readonly summary: string;
  /** The TSDoc text, without its tags. */
  readonly description: string;
  /** The TSDoc's `@defaultValue`; undefined when it has none. */
  readonly defaultText: string | undefined;
  /** The type `buffer()` takes, as the row writes it. */
  readonly type: string;
  /** The catalog key of the check's problem, and its text. */
  readonly key: string;
  readonly message: string;
  /** The catalog key of the check's reason of its own, when it has one (a duration that reads like milliseconds). */
  readonly reasonKey: string | undefined;
}

// A TSDoc cannot hold `*/`, so a comment writes `*\/`; the reader sees `*/`.
const unescape = (text: string): string => text.replace(/\*\\\//g, '*/');
const oneLine = (text: string): string => unescape(text).replace(/\s+/g, ' ').trim();

/** The TSDoc and written input type of each row, by name, read from the schema's source text. */
function readSource(): Map<string, { description: string; defaultText: string | undefined; type: string }> {
  const path = join(packageRoot, schemaPath);
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = new Map<string, { description: string; defaultText: string | undefined; type: string }>();
  const visit = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.name.text === 'schema' &&
      node.initializer !== undefined
    ) {
      const literal = ts.isSatisfiesExpression(node.initializer) ? node.initializer.expression : node.initializer;
      if (!ts.isObjectLiteralExpression(literal)) throw new Error(`${schemaPath}: schema is not an object literal`);
      for (const property of literal.properties) {
        if (!ts.isPropertyAssignment(property) || !ts.isIdentifier(property.name)) continue;
        const call = property.initializer;
        const typeArgument = ts.isCallExpression(call) ? call.typeArguments?.[0] : undefined;
        if (typeArgument === undefined) throw new Error(`${schemaPath}: ${property.name.text} names no input type`);
        const jsDoc = ts.getJSDocCommentsAndTags(property).filter(ts.isJSDoc).at(-1);
        const defaultTag = jsDoc?.tags?.find((tag) => tag.tagName.text === 'defaultValue');
        found.set(property.name.text, {
          description: oneLine(ts.getTextOfJSDocComment(jsDoc?.comment) ?? ''),
          defaultText: defaultTag ? oneLine(ts.getTextOfJSDocComment(defaultTag.comment) ?? '') : undefined,
          type: oneLine(typeArgument.getText(source)),
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every option, in the schema's order, as the reference describes it. */
export function optionDocs(): OptionDoc[] {
  const written = readSource();
  return Object.entries(schema).map(([name, row]) => {
    const text = written.get(name);
    if (text === undefined) throw new Error(`${schemaPath}: no source text found for ${name}`);
    if (text.description === '') throw new Error(`${schemaPath}: ${name} has no TSDoc`);
    // The value a message shows is the one given, so the reference shows where it goes.
    const message = builtinMessages.text(row.check.key, { name, value: '…' });
    const reasonKey = (row.check as Check).reason?.key;
    return { name, scope: row.scope, summary: row.doc, ...text, key: row.check.key, message, reasonKey };
  });
}

/** Where an option may be set, by scope. */
const setIn: Readonly<Record<Scope, string>> = {
  registration: '`buffer()` only',
  section: '`buffer()`, `bufferSection()` and `ctx.state.buffer`',
  response: '`buffer()` and `ctx.state.buffer`',
};

/** A default as written in the TSDoc: code when it is a literal, words otherwise. */
function shownDefault(text: string | undefined): string {
  if (text === undefined) return 'none';
  return /^(?:true|false|-?\d+(?:\.\d+)?|'[^']*'|\[.*\]|\{.*\})$/.test(text) ? `\`${text}\`` : text;
}

/** A default short enough for the README's one-line rows: its parenthetical remarks left to docs/options.md. */
function shortDefault(text: string | undefined): string {
  if (text === undefined) return shownDefault(text);
  let short = text;
  let before = '';
  while (short !== before) {
    before = short;
    short = short.replace(/\s*\([^()]*\)/g, '');
  }
  return shownDefault(short);
}

const cell = (text: string): string => text.replace(/\|/g, '\\|');

const banner = `Generated by scripts/generate-options-docs.ts from ${schemaPath}: edit the rows there, then run \`npm run generate:options\`.`;

async function format(text: string, path: string): Promise<string> {
  const options = (await prettier.resolveConfig(join(packageRoot, path))) ?? {};
  return prettier.format(text, { ...options, parser: 'markdown' });
}

/** docs/options.md. */
async function reference(docs: readonly OptionDoc[]): Promise<string> {
  const sections = docs.map((doc) => {
    // A message that starts with its inner problem (the dictionaries rule's) says nothing until it is filled.
    const refused = doc.message.startsWith('%{problem}') ? `\`${doc.key}\`` : `\`${doc.key}\`: ${doc.message}`;
    return `## \`${doc.name}\`

${doc.description}

- default: ${shownDefault(doc.defaultText)}
- type: \`${doc.type}\`
- set in: ${setIn[doc.scope]}
- refused with: ${refused}${doc.reasonKey === undefined ? '' : `\n- also refused with: \`${doc.reasonKey}\`, for a bare number that reads like milliseconds ([durations](#durations))`}
`;
  });
  const text = `# Options

<!-- ${banner} -->

Every option of \`buffer()\` is optional. \`buffer()\` validates them once:
names in ASCII order, unknown names at their place in it (naming the
option a misspelt name most likely meant: \`cacheDurration\` gets "did you
mean cacheDuration?"), the first problem only, and the checks that look at
several options (\`cacheLock\` with \`cacheLockDir\`, a lock's ttl against
\`cacheLockTimeout\`, coding names, \`adaptiveCompression\` with
\`compressionLevels\`) after all the others. A problem is thrown as a
\`BufferOptionError\` whose \`key\` is the catalog key listed under "refused
with" (the \`messages\` option rewords it), and whose message names the
option and the value it got, shortened, with a URL's password and the
values of keys such as \`password\` shown as \`***\`.

Where an option may be set:

| scope        | set in                      | read                                                   |
| ------------ | --------------------------- | ------------------------------------------------------ |
| registration | ${setIn.registration} | once, when \`buffer()\` runs; a per-response value is ignored |
| section      | ${setIn.section} | per response: the innermost section, then \`ctx.state.buffer\` |
| response     | ${setIn.response} | per response |

A value set per response (\`ctx.state.buffer\`, \`ctx.bufferIsCached()\`) is
held to the same check: one \`buffer()\` would refuse is ignored for that
response with one log line, and the configured value applies; a \`varyBy\`
that is not a list of header names makes the request bypass the cache.
Per response, \`undefined\` means off or none (except for \`varyBy\`).
\`Flag\` is \`true\`, \`false\`, \`1\` or \`0\`.

## Durations

A duration is a number of seconds or a string with a unit (\`'10 minutes'\`,
\`'1.5 h'\`, \`'30 days'\`; ms, s, m, h, d and w, and their words). Seconds
differ from koa-cash's \`maxAge\` and from JavaScript's timers, which count
milliseconds, so a bare number that reads like milliseconds is refused
(\`option_duration_unit\`), in \`buffer()\` and per response alike: one over a
week (604800), or a whole thousand from 10000 on. \`cacheDuration: 60000\`
would be 16.7 hours; the message says so, and that \`'1 minute'\` or
\`'17 hours'\` is how to write either. A string with a unit is taken at any
length.

${sections.join('\n')}`;
  return format(text, referencePath);
}

/**
 * The options the README's table shows: those most sites set. The README
 * stays short enough to read through; docs/options.md lists every option.
 */
export const readmeOptions: ReadonlySet<string> = new Set([
  'compressContent',
  'optimiseContent',
  'generateEtag',
  'lastModified',
  'minCompressSize',
  'encodings',
  'compressibleTypes',
  'excludedTypes',
  'cache',
  'cacheDuration',
  'cacheStaleWhileRevalidate',
  'cacheStaleIfError',
  'cacheRevalidationWindow',
  'cacheNamespace',
  'cacheKey',
  'cacheLockDir',
  'varyBy',
  'cacheIgnoreCookies',
  'cacheMaxSize',
  'cacheTags',
  'metrics',
  'logger',
]);

/** The README's region between the markers, markers included. */
async function readmeRegion(docs: readonly OptionDoc[]): Promise<string> {
  const shown = docs.filter((doc) => readmeOptions.has(doc.name));
  const rows = shown.map(
    (doc) =>
      `| [\`${doc.name}\`](docs/options.md#${doc.name.toLowerCase()}) | ${cell(shortDefault(doc.defaultText))} | ${cell(doc.summary)} |`,
  );
  const others = docs.length - shown.length;
  const table = await format(
    `| option | default | what it does |
| --- | --- | --- |
${rows.join('\n')}

The ${others} others (memory budgets, locks, store timeouts, messages, …): [docs/options.md](docs/options.md).
`,
    readmePath,
  );
  return `${begin}\n\n<!-- ${banner} -->\n\n${table}\n${end}`;
}

/** `readme` with its region replaced by `region`; undefined when it has no region. */
function withRegion(readme: string, region: string): string | undefined {
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end, from);
  if (from === -1 || to === -1) return undefined;
  return readme.slice(0, from) + region + readme.slice(to + end.length);
}

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8').replace(/\r\n/g, '\n');
  } catch {
    return undefined; // missing: stale
  }
};

/** The files under `root` as they should be: [path relative to root, text]. */
export async function generate(root = packageRoot): Promise<Array<[string, string]>> {
  const docs = optionDocs();
  const readme = readText(join(root, readmePath)) ?? '';
  const updated = withRegion(readme, await readmeRegion(docs));
  if (updated === undefined) throw new Error(`${readmePath} has no ${begin} … ${end} region`);
  return [
    [referencePath, await reference(docs)],
    [readmePath, updated],
  ];
}

/** What is stale under `root`: the paths whose text differs from what the schema gives. */
export async function staleFiles(root = packageRoot): Promise<string[]> {
  const docs = optionDocs();
  const stale: string[] = [];
  if (readText(join(root, referencePath)) !== (await reference(docs))) stale.push(referencePath);
  const readme = readText(join(root, readmePath)) ?? '';
  const region = await readmeRegion(docs);
  if (withRegion(readme, region) !== readme) stale.push(`${readmePath} (options table)`);
  return stale;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const at = process.argv.indexOf('--root');
  const root = at > 0 && process.argv[at + 1] ? process.argv[at + 1]! : packageRoot;
  if (process.argv.includes('--check')) {
    const stale = await staleFiles(root);
    if (stale.length > 0) {
      console.error(`stale, run npm run generate:options: ${stale.join(', ')}`);
      process.exit(1);
    }
  } else {
    for (const [path, text] of await generate(root)) writeFileSync(join(root, path), text);
  }
}
