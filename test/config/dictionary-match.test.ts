/**
 * A dictionary rule's `match` (RFC 9842: a URLPattern the browser is told
 * in `Use-As-Dictionary`) matches on the server exactly the paths the
 * browser's URLPattern matches, so a dictionary is offered and used for the
 * same requests. Node 20 has no URLPattern, so the reference is the
 * urlpattern-polyfill package. Over generated patterns of path characters
 * and `*` (the ones the option accepts), and generated paths, the server's
 * match (`ruleFor`, through the one `*` compiler in src/http/wildcard.ts)
 * equals `new URLPattern({ pathname: match }).test({ pathname: path })`.
 *
 * Two kinds of path are left out, each shown by a row below:
 *
 * - dot segments (`.`, `..`, `%2e`): URLPattern runs the URL parser over the
 *   path and over each literal part of the pattern (the text between `*`s),
 *   which resolves them (`/a/../b` is `/b`, and `/%2e*` is `/*`); the server
 *   compares the path as sent. A browser resolves them before it sends a
 *   request, so its requests carry none, and a pattern that holds one is
 *   one the server matches less often than the browser: the dictionary is
 *   then used less, never wrongly.
 * - a path or pattern starting with `//`: the polyfill canonicalizes a
 *   pathname with `new URL(pathname, base)`, which takes `//x` for a host,
 *   where the URLPattern standard parses it from the path start state and
 *   keeps it; a browser's URLPattern matches `//x` as the server does.
 */
import test from 'ava';
import fc from 'fast-check';
import { URLPattern } from 'urlpattern-polyfill/urlpattern';
import { dictionariesProblem, resolveDictionaries, ruleFor } from '../../src/config/dictionaries.ts';

/** The server's answer: does the rule with this match hold the path? */
function serverMatches(match: string, path: string): boolean {
  return ruleFor(resolveDictionaries([{ match }]), path, 'text/html') !== undefined;
}

function urlPatternMatches(match: string, path: string): boolean {
  return new URLPattern({ pathname: match }).test({ pathname: path });
}

/** True for a path with a segment the URL parser resolves: `.` or `..`, in any spelling. */
function hasDotSegment(path: string): boolean {
  return path.split('/').some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment));
}

const outside = (text: string): boolean => text.split('*').some(hasDotSegment) || text.startsWith('//');

// Path characters, a few of them percent-encoded, and the characters URLPattern would otherwise give a meaning
// to that the option allows: none but `*`.
const unit = fc.constantFrom(
  'a',
  'b',
  'Z',
  '0',
  '-',
  '_',
  '~',
  '.',
  '!',
  '$',
  '&',
  "'",
  ',',
  ';',
  '=',
  '@',
  '%',
  '%41',
  '%2e',
  '/',
);
const text = fc.string({ unit, maxLength: 6 });
const pattern = fc
  .array(fc.oneof({ weight: 3, arbitrary: text }, { weight: 1, arbitrary: fc.constant('*') }), { maxLength: 5 })
  .map((parts) => `/${parts.join('')}`)
  .filter((p) => !outside(p));

/** A path for `match`: most often its `*`s filled in (so it matches), else a path of its own; sometimes a `*` in it. */
const pathFor = (match: string) =>
  fc
    .oneof(
      fc.array(fc.oneof(text, fc.constant('*')), { minLength: 8, maxLength: 8 }).map((fills) => {
        let i = 0;
        return match.replace(/\*/g, () => fills[i++]!);
      }),
      fc.array(fc.oneof(text, fc.constant('*')), { maxLength: 4 }).map((parts) => `/${parts.join('')}`),
      fc.tuple(fc.nat(), unit).map(([at, c]) => {
        const where = 1 + (at % match.length);
        return match.slice(0, where) + c + match.slice(where);
      }),
    )
    .map((path) => path.replace(/\*/g, ''))
    .filter((path) => !outside(path));

test('a dictionary match holds the paths URLPattern holds (property against urlpattern-polyfill, fixed seed)', (t) => {
  let matched = 0;
  let missed = 0;
  fc.assert(
    fc.property(
      pattern.chain((match) => fc.tuple(fc.constant(match), pathFor(match))),
      ([match, path]) => {
        if (dictionariesProblem([{ match }]) !== undefined) return false;
        const ours = serverMatches(match, path);
        if (ours) matched++;
        else missed++;
        return ours === urlPatternMatches(match, path);
      },
    ),
    { seed: 9842, numRuns: 10_000 },
  );
  t.true(matched > 3000, `many paths matched (${matched})`);
  t.true(missed > 1000, `and many did not (${missed})`);
});

// [match, path, the server, URLPattern (the polyfill), why they differ]
const differences: Array<[string, string, boolean, boolean, string]> = [
  [
    '/a/../b',
    '/b',
    false,
    true,
    'the URL parser resolves a dot segment in the pattern; the server takes it as written',
  ],
  ['/b', '/a/../b', false, true, 'and in the path: a browser never sends one'],
  ['/a/*', '/a/..', true, false, 'a `*` over a dot segment: the path is `/` to URLPattern'],
  ['/%2e*', '/a', false, true, 'a literal part of the pattern is a dot segment by itself: `/%2e*` is `/*`'],
  ['//*', '//a', true, false, 'the polyfill reads `//a` as a host; the URLPattern standard keeps it as a path'],
];

test('a repeated `*` after `/` is read as URLPattern reads it: the `/` is optional with it', (t) => {
  for (const [match, path, expected] of [
    ['/a/**', '/a', true],
    ['/a/**', '/a/b/c', true],
    ['/a/*', '/a', false],
    ['/a/**/b', '/a/b', true],
    ['/a/**b', '/ab', true],
    ['/a/**b', '/axb', false],
    ['/a/***b', '/axb', true],
    ['/a**b', '/axb', true],
  ] as const) {
    t.is(serverMatches(match, path), expected, `${match} on ${path}`);
    t.is(urlPatternMatches(match, path), expected, `${match} on ${path}, URLPattern`);
  }
});

for (const [match, path, server, reference, why] of differences)
  test(`match ${match} and path ${path}: ${why}`, (t) => {
    t.is(serverMatches(match, path), server, 'the server');
    t.is(urlPatternMatches(match, path), reference, 'urlpattern-polyfill');
  });
