/** ava glue for the rendering tests: serial tests that skip, saying what to install, without Chromium. */
import test, { type Implementation } from 'ava';
import { chromiumSkipReason } from './chromium.ts';

/** `test.serial` (the tests of a file share one browser page), or `test.skip` with the reason in the title. */
export function renderTest(title: string, implementation: Implementation<[]>): void {
  if (chromiumSkipReason === undefined) test.serial(title, implementation);
  else test.skip(`${title} (skipped: ${chromiumSkipReason})`, implementation);
}
