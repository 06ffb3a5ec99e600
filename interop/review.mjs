// Browser check of the operator's review page, in real headless Chromium
// driven by playwright-core:
//
//   node review.mjs <base URL> <approve selection> <approve digest> <reject selection> <screenshot dir> <large selection>
//
// At 1280x720 (a laptop) and 390x844 (a phone) it opens each selection and
// checks, without scrolling, that the decision is on the first screen: what
// approving acknowledges, the checkbox, the name, Approve and Reject, and
// for a destructive action the warning; and that no page scrolls sideways.
// Then it checks what the page shows (digest, member count, effect, money
// with its currency, the manifest and its CSV export, the index's state
// filters and expiry), approves the first selection on the laptop (a
// missing acknowledgement stops the form in the browser) and rejects the
// second on the phone. Prints a JSON summary with ok: true and the measured
// positions, and exits 0; on failure prints "review: <step>: <message>" on
// stderr and exits 1.

import { chromium } from 'playwright-core';

const [base, approveSel, approveDigest, rejectSel, shots, largeSel] = process.argv.slice(2);
if (!base || !approveSel || !approveDigest || !rejectSel || !shots || !largeSel) {
  process.stderr.write('usage: node review.mjs <base URL> <approve selection> <digest> <reject selection> <screenshot dir> <large selection>\n');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const viewports = { laptop: { width: 1280, height: 720 }, phone: { width: 390, height: 844 } };

let step = 'launch';
function check(cond, message) {
  if (!cond) throw new Error(message);
}

// firstScreen measures, on a page just loaded and never scrolled, where the
// decision's parts are, and fails unless each lies wholly in the viewport.
async function firstScreen(page, name, ids) {
  const m = await page.evaluate((ids) => {
    const box = (id) => {
      const e = document.getElementById(id);
      if (!e) return null;
      const r = e.getBoundingClientRect();
      return { top: Math.round(r.top), bottom: Math.round(r.bottom), left: Math.round(r.left), right: Math.round(r.right) };
    };
    const out = { scrollY: window.scrollY, viewport: [innerWidth, innerHeight],
      pageWidth: document.documentElement.scrollWidth, pageHeight: document.documentElement.scrollHeight, boxes: {} };
    for (const id of ids) out.boxes[id] = box(id);
    return out;
  }, ids);
  check(m.scrollY === 0, `${name}: the page scrolled by itself (${m.scrollY})`);
  check(m.pageWidth <= m.viewport[0], `${name}: the page is ${m.pageWidth} px wide in a ${m.viewport[0]} px viewport`);
  for (const id of ids) {
    const b = m.boxes[id];
    check(b, `${name}: #${id} is missing`);
    check(b.top >= 0 && b.bottom <= m.viewport[1] && b.left >= 0 && b.right <= m.viewport[0],
      `${name}: #${id} is at ${JSON.stringify(b)}, outside the first screen ${m.viewport.join('x')}`);
  }
  const out = { viewport: m.viewport.join('x'), pageHeight: m.pageHeight };
  for (const id of ids) out[`${id}Bottom`] = m.boxes[id].bottom;
  return out;
}

const browser = await chromium.launch({
  executablePath,
  headless: true,
  // This machine's network is closed: no background connections.
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const summary = { ok: false, browser: browser.version(), firstScreen: {} };
try {
  const contexts = {};
  for (const [name, viewport] of Object.entries(viewports)) {
    contexts[name] = await browser.newContext({ viewport });
  }

  step = 'the decision on the first screen';
  const decision = ['decision', 'acks', 'acknowledge', 'name', 'approve', 'reject'];
  for (const [name, ctx] of Object.entries(contexts)) {
    const page = await ctx.newPage();
    for (const [what, sel, ids] of [['destructive', approveSel, [...decision, 'destructive']], ['large', largeSel, [...decision, 'irreversible']]]) {
      await page.goto(`${base}/review/selections/${sel}`);
      const m = await firstScreen(page, `${what} selection at ${name}`, ids);
      summary.firstScreen[`${what} at ${name}`] = { viewport: m.viewport, approveBottom: m.approveBottom, pageHeight: m.pageHeight };
      await page.screenshot({ path: `${shots}/review-${what}-${name}.png` });
    }
    step = 'the index';
    await page.goto(`${base}/review/`);
    await firstScreen(page, `index at ${name}`, ['filter-awaiting', 'filter-all']);
    await page.screenshot({ path: `${shots}/review-index-${name}.png` });
    await page.close();
    step = 'the decision on the first screen';
  }

  const page = await contexts.laptop.newPage();
  step = 'list';
  await page.goto(`${base}/review/`);
  check((await page.title()).includes('Selections'), `title ${await page.title()}`);
  check((await page.getAttribute('#filter-awaiting', 'aria-current')) === 'page', 'the list does not open on what awaits a decision');
  for (const id of [approveSel, rejectSel, largeSel]) {
    const row = page.locator(`tr:has(a[href="/review/selections/${id}"])`);
    check(await row.count() === 1, `${id} is not listed`);
    check(/^in \d+ min$/.test((await row.locator('td.expires').textContent()).trim()), `${id}: no expiry shown`);
  }

  step = 'open';
  await page.click(`a[href="/review/selections/${approveSel}"]`);
  await page.waitForURL(`**/review/selections/${approveSel}`);
  check(await page.textContent('#digest') === approveDigest, `digest shown: ${await page.textContent('#digest')}`);
  summary.members = Number(await page.textContent('#members'));
  check(summary.members === 2, `members ${summary.members}`);
  check((await page.textContent('#destructive')).includes('The action is destructive'), 'the destructive action is not a warning');
  check((await page.textContent('#effect')).includes('archived'), 'the effect does not show the after-value');
  check((await page.textContent('#acks')).includes('named, not found by a complete scan'), 'missing evidence is not shown');
  summary.manifestRows = await page.locator('#manifest tr').count() - 1;
  check(summary.manifestRows === 2, `manifest rows ${summary.manifestRows}`);

  step = 'export';
  const csv = await (await page.request.get(base + await page.getAttribute('#export-csv', 'href'))).text();
  summary.csvLines = csv.trim().split('\n').length;
  check(summary.csvLines === 3, `csv lines ${summary.csvLines}`);

  step = 'approve without acknowledging';
  await page.fill('#name', 'Ada Operator');
  // The checkbox is not ticked: the browser does not send the form.
  check(await page.$eval('#approve', (b) => !b.form.checkValidity()), 'the form is valid without the acknowledgement');
  await page.click('#approve');
  check(page.url() === `${base}/review/selections/${approveSel}`, `the form was sent without the acknowledgement: ${page.url()}`);
  check(await page.$eval('#acknowledge', (e) => !e.checkValidity()), 'the unticked acknowledgement is not flagged');

  step = 'approve';
  await page.check('#acknowledge');
  await page.screenshot({ path: `${shots}/review-before-approve.png`, fullPage: true });
  await Promise.all([page.waitForURL(/decided=apr_/), page.click('#approve')]);
  summary.approved = (await page.textContent('#status')).trim();
  check(summary.approved.includes('approved by review page: Ada Operator from 127.0.0.1'), `status after approve: ${summary.approved}`);
  check(await page.locator('#approve').count() === 0, 'the form is still offered after the decision');
  await page.screenshot({ path: `${shots}/review-approved.png`, fullPage: true });

  step = 'money';
  await page.goto(`${base}/review/selections/${largeSel}`);
  const amounts = await page.locator('#manifest .money').allTextContents();
  check(amounts.length === 50 && amounts.every((a) => /^EUR \d{1,3}(,\d{3})*\.\d{2}$/.test(a)), `amounts: ${amounts.slice(0, 3)}`);
  summary.firstAmount = amounts[0];

  step = 'filters';
  await page.goto(`${base}/review/?state=approved`);
  check(await page.locator(`a[href="/review/selections/${approveSel}"]`).count() === 1, 'the approved selection is not under Approved');
  check(await page.locator(`a[href="/review/selections/${rejectSel}"]`).count() === 0, 'an undecided selection is under Approved');

  step = 'reject on a phone';
  const phone = await contexts.phone.newPage();
  await phone.goto(`${base}/review/selections/${rejectSel}`);
  await phone.fill('#name', 'Ada Operator');
  await Promise.all([phone.waitForURL(/decided=apr_/), phone.click('#reject')]);
  summary.rejected = (await phone.textContent('#status')).trim();
  check(summary.rejected.includes('rejected by review page: Ada Operator'), `status after reject: ${summary.rejected}`);
  summary.ok = true;
} catch (err) {
  process.stderr.write(`review: ${step}: ${err.message}\n`);
  await browser.close();
  process.exit(1);
}
await browser.close();
process.stdout.write(JSON.stringify(summary) + '\n');
