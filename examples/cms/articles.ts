/**
 * The CMS's content: articles in one JSON file that every worker reads and
 * the edit endpoint rewrites (atomically: written beside, then renamed).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One article. */
export interface Article {
  id: string;
  title: string;
  text: string;
}

/** The articles of `dataDir`, created with two when the file is missing. */
export function readArticles(dataDir: string): Article[] {
  const file = join(dataDir, 'articles.json');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeArticles(dataDir, [
      { id: '1', title: 'Hello', text: 'The first article.' },
      { id: '2', title: 'Again', text: 'The second article.' },
    ]);
  }
  return JSON.parse(readFileSync(file, 'utf8')) as Article[];
}

/** Replaces the articles of `dataDir`. */
export function writeArticles(dataDir: string, articles: Article[]): void {
  const file = join(dataDir, 'articles.json');
  const next = `${file}.${process.pid}.tmp`;
  writeFileSync(next, JSON.stringify(articles, null, 2), { mode: 0o600 });
  renameSync(next, file);
}
