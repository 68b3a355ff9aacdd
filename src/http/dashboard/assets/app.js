// Pigeon dashboard: the few behaviours plain HTML lacks. No framework, no build step.
'use strict';
document.addEventListener('submit', (event) => {
  // Destructive forms ask first: <form data-confirm="Revoke this key?">.
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener('click', async (event) => {
  // <button data-copy="element-id">: copies that element's text.
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy') || '');
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = 'Copied';
  } catch {
    // No clipboard (insecure origin): select the text so that the person can copy it by hand.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
  }
});
// Charts (the overview's, a campaign's): data from <script type="application/json" id="chart-data">.
let chart = null;
function drawChart() {
  const data = document.getElementById('chart-data');
  const target = document.getElementById('chart');
  if (!data || !target || typeof window.uPlot !== 'function') return;
  const stats = JSON.parse(data.textContent);
  if (chart) {
    chart.destroy();
    chart = null;
  }
  if (stats.days.length === 0) return;
  const colours = { pending: '#9a6700', sent: '#0969da', delivered: '#1a7f37', failed: '#cf222e' };
  const series = [{ label: stats.x || 'Day' }].concat(
    Object.keys(stats.counts).map((s) => ({ label: s, stroke: colours[s] || '#57606a', width: 2, points: { show: stats.days.length < 3 } })),
  );
  const width = () => Math.max(280, Math.min(target.clientWidth, 900));
  chart = new window.uPlot(
    { width: width(), height: 240, series, axes: [{}, { label: 'messages' }], scales: { x: { time: true } } },
    [stats.days.map((d) => d / 1000)].concat(Object.values(stats.counts)),
    target,
  );
}
document.addEventListener('DOMContentLoaded', drawChart);
// A campaign's counts are polled: its chart follows.
document.addEventListener('htmx:afterSettle', drawChart);
window.addEventListener('resize', () => {
  const target = document.getElementById('chart');
  if (chart && target) chart.setSize({ width: Math.max(280, Math.min(target.clientWidth, 900)), height: 240 });
});
document.addEventListener('htmx:configRequest', (event) => {
  // htmx requests carry the page's form token as a header: the server checks it on every
  // state-changing request, whatever the body's type.
  const field = document.querySelector('input[name="_csrf"]');
  if (field && event.detail && event.detail.headers) event.detail.headers['X-CSRF-Token'] = field.value;
});
document.addEventListener('DOMContentLoaded', () => {
  // The campaign composer's time zone: the browser's, until the owner has chosen one.
  const zone = document.querySelector('select[data-browser-zone]');
  if (!zone) return;
  const mine = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (mine && [...zone.options].some((o) => o.value === mine)) zone.value = mine;
});
document.addEventListener('DOMContentLoaded', () => {
  // The campaign composer's default country, until the account has one (remembered from its
  // campaigns, or from its own numbers): the region of the browser's language (en-GB: GB).
  const country = document.querySelector('select[data-browser-country]');
  if (!country) return;
  for (const tag of navigator.languages || [navigator.language]) {
    let region;
    try {
      region = new Intl.Locale(tag).maximize().region;
    } catch {
      continue;
    }
    if (region && [...country.options].some((o) => o.value === region)) {
      country.value = region;
      return;
    }
  }
});
document.addEventListener('change', (event) => {
  // The campaign's default name follows the file chosen: its name and today's date, as the server
  // names a campaign left without one.
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || input.id !== 'file' || !input.files || input.files.length === 0) return;
  const name = document.getElementById('campaign-name');
  if (!(name instanceof HTMLInputElement)) return;
  const zone = document.getElementById('time-zone');
  const later = document.querySelector('input[name="when"][value="later"]');
  const timeZone = later && later.checked && zone && zone.value ? zone.value : 'UTC';
  const date = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
  name.placeholder = `${input.files[0].name} ${date}`;
});
document.addEventListener('change', (event) => {
  // The zone the owner picks in the composer is saved at once (<select data-save-url>): it is the
  // composer's default from then on, on any device. The browser's zone, set above, is not saved
  // until the owner schedules in it.
  const zone = event.target;
  if (!(zone instanceof HTMLSelectElement) || !zone.dataset.saveUrl) return;
  const token = document.querySelector('input[name="_csrf"]');
  fetch(zone.dataset.saveUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': token ? token.value : '' },
    body: new URLSearchParams({ time_zone: zone.value }),
    credentials: 'same-origin',
  }).catch(() => {
    // Not saved: the zone stays chosen on this page, and a scheduled send stores it.
  });
});
document.addEventListener('htmx:xhr:progress', (event) => {
  // The campaign file's upload, while the preview reads it.
  const bar = document.getElementById('upload-progress');
  const detail = event.detail;
  if (!bar || !detail || !detail.lengthComputable) return;
  bar.hidden = detail.loaded >= detail.total;
  bar.value = Math.round((100 * detail.loaded) / detail.total);
});
// The campaign composer's send (<form data-upload-send>). The file goes up again with the form;
// posted from here, the upload shows its progress, the wait for the server's check of every row
// says so, and the button stays disabled until the answer (the form's key makes a second post
// harmless all the same). Without script the form posts as plain HTML and the browser follows
// the redirect to the campaign: the same server path.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute('data-upload-send') || event.defaultPrevented) return;
  event.preventDefault();
  if (form.dataset.sending) return;
  sendWithProgress(form);
});
function sendWithProgress(form) {
  const button = form.querySelector('button[type="submit"]');
  const bar = document.getElementById('upload-progress');
  const status = document.getElementById('send-status');
  const summary = document.getElementById('file-summary');
  const rows = summary ? Number(summary.getAttribute('data-file-rows')) : NaN;
  const say = (text) => {
    if (status) status.textContent = text;
  };
  const finish = () => {
    delete form.dataset.sending;
    form.removeAttribute('aria-busy');
    if (button) button.disabled = false;
    if (bar) bar.hidden = true;
  };
  const action = new URL(form.action, window.location.href);
  form.dataset.sending = 'true';
  form.setAttribute('aria-busy', 'true');
  if (button) button.disabled = true;
  say('Uploading the file…');
  const xhr = new XMLHttpRequest();
  xhr.upload.addEventListener('progress', (e) => {
    if (!bar || !e.lengthComputable) return;
    const percent = Math.round((100 * e.loaded) / e.total);
    bar.hidden = false;
    bar.value = percent;
    say(`Uploading the file: ${percent}%`);
  });
  xhr.upload.addEventListener('load', () => {
    // The server now reads and checks every row before it answers: no figure to show, so the bar
    // turns indeterminate.
    if (bar) {
      bar.removeAttribute('value');
      bar.hidden = false;
    }
    say(rows > 0 ? `Checking ${rows.toLocaleString('en')} ${rows === 1 ? 'row' : 'rows'}…` : 'Checking the rows…');
  });
  xhr.addEventListener('load', () => {
    const landed = new URL(xhr.responseURL || action.href, window.location.href);
    if (xhr.status < 400 && landed.pathname !== action.pathname) {
      // Sent (or sent already by this form): the redirect led to the campaign's page.
      say('Sent. Opening the campaign…');
      window.location.assign(landed.href);
      return;
    }
    // Refused: the server's page (the reason, and the form to send again) replaces this one's.
    const next = new DOMParser().parseFromString(xhr.responseText, 'text/html');
    const main = next.getElementById('main');
    const current = document.getElementById('main');
    finish();
    if (!main || !current) {
      say(`The campaign could not be sent (HTTP ${xhr.status}); nothing was sent. Try again.`);
      return;
    }
    const adopted = document.adoptNode(main);
    current.replaceWith(adopted);
    if (next.title) document.title = next.title;
    if (window.htmx) window.htmx.process(adopted);
    const reason = adopted.querySelector('.alert');
    if (reason) {
      reason.setAttribute('tabindex', '-1');
      reason.focus();
    }
  });
  const lost = () => {
    finish();
    say('The connection was lost before the answer came. Send again: the same form never makes a campaign twice.');
  };
  xhr.addEventListener('error', lost);
  xhr.addEventListener('abort', lost);
  xhr.open('POST', action.href);
  xhr.send(new FormData(form));
}
