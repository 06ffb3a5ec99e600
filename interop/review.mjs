// Browser check of the operator's review page, in real headless Chromium
// driven by playwright-core:
//
//   node review.mjs <base URL> <approve selection> <approve digest> <reject selection> <screenshot dir>
//
// It opens the list, opens the first selection, checks what the page shows
// (digest, member count, effect, what to acknowledge, the manifest and its
// CSV export), types a name, ticks the acknowledgement and approves; then
// opens the second selection and rejects it. Prints a JSON summary with
// ok: true and exits 0; on failure prints "review: <step>: <message>" on
// stderr and exits 1.

import { chromium } from 'playwright-core';

const [base, approveSel, approveDigest, rejectSel, shots] = process.argv.slice(2);
if (!base || !approveSel || !approveDigest || !rejectSel || !shots) {
  process.stderr.write('usage: node review.mjs <base URL> <approve selection> <digest> <reject selection> <screenshot dir>\n');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

let step = 'launch';
function check(cond, message) {
  if (!cond) throw new Error(message);
}

const browser = await chromium.launch({
  executablePath,
  headless: true,
  // This machine's network is closed: no background connections.
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const summary = { ok: false, browser: browser.version() };
try {
  const page = await (await browser.newContext()).newPage();

  step = 'list';
  await page.goto(`${base}/review/`);
  check((await page.title()).includes('Selections'), `title ${await page.title()}`);
  for (const id of [approveSel, rejectSel]) {
    check(await page.locator(`a[href="/review/selections/${id}"]`).count() === 1, `${id} is not listed`);
  }

  step = 'open';
  await page.click(`a[href="/review/selections/${approveSel}"]`);
  await page.waitForURL(`**/review/selections/${approveSel}`);
  check(await page.textContent('#digest') === approveDigest, `digest shown: ${await page.textContent('#digest')}`);
  summary.members = Number(await page.textContent('#members'));
  check(summary.members === 2, `members ${summary.members}`);
  check((await page.textContent('#effect')).includes('"archived"'), 'the effect does not show the after-value');
  check((await page.textContent('#acks')).includes('named, not found by a complete scan'), 'missing evidence is not shown');
  summary.manifestRows = await page.locator('#manifest tr').count() - 1;
  check(summary.manifestRows === 2, `manifest rows ${summary.manifestRows}`);

  step = 'export';
  const csv = await (await page.request.get(base + await page.getAttribute('#export-csv', 'href'))).text();
  summary.csvLines = csv.trim().split('\n').length;
  check(summary.csvLines === 3, `csv lines ${summary.csvLines}`);

  step = 'approve without acknowledging';
  await page.fill('#name', 'Ada Operator');
  // The checkbox is not ticked: the server refuses and names the field.
  await page.click('#approve');
  await page.waitForLoadState();
  check((await page.textContent('#problem-code')) === 'INVALID_ARGUMENTS', 'an approval without acknowledgement was accepted');
  await page.goBack();

  step = 'approve';
  await page.goto(`${base}/review/selections/${approveSel}`);
  await page.fill('#name', 'Ada Operator');
  await page.check('#acknowledge');
  await page.screenshot({ path: `${shots}/review-before-approve.png`, fullPage: true });
  await Promise.all([page.waitForURL(/decided=apr_/), page.click('#approve')]);
  summary.approved = (await page.textContent('#status')).trim();
  check(summary.approved.includes('approved by review page: Ada Operator from 127.0.0.1'), `status after approve: ${summary.approved}`);
  check(await page.locator('#approve').count() === 0, 'the form is still offered after the decision');
  await page.screenshot({ path: `${shots}/review-approved.png`, fullPage: true });

  step = 'reject';
  await page.goto(`${base}/review/selections/${rejectSel}`);
  await page.fill('#name', 'Ada Operator');
  await Promise.all([page.waitForURL(/decided=apr_/), page.click('#reject')]);
  summary.rejected = (await page.textContent('#status')).trim();
  check(summary.rejected.includes('rejected by review page: Ada Operator'), `status after reject: ${summary.rejected}`);
  summary.ok = true;
} catch (err) {
  process.stderr.write(`review: ${step}: ${err.message}\n`);
  await browser.close();
  process.exit(1);
}
await browser.close();
process.stdout.write(JSON.stringify(summary) + '\n');
