import { contentSecurityPolicy, cspHash, escapeHtml } from './html';

export interface DeferredPageInput {
  /** The link's title; the page says "Get the app" without one. */
  title: string | null;
  /** The iOS fallback with the passthrough query: where both ways out of the page lead. */
  fallbackUrl: string;
  /** The link's own URL with `?ls_click=<token>`: what "Get the app" copies. */
  copyUrl: string;
}

/**
 * The colours of the page, light only (no dark variant to keep in contrast too). Every pair the
 * page draws text or a control border with is listed in `COLOR_PAIRS`, checked by a test against
 * WCAG AA (4.5:1 for text).
 */
export const PALETTE = {
  text: '#1f2328',
  muted: '#57606a',
  background: '#ffffff',
  accent: '#0b57d0',
  onAccent: '#ffffff',
} as const;

/** [foreground, background] of every text (and the focus ring and input border) on the page. */
export const COLOR_PAIRS: readonly (readonly [string, string])[] = [
  [PALETTE.text, PALETTE.background],
  [PALETTE.muted, PALETTE.background],
  [PALETTE.accent, PALETTE.background],
  [PALETTE.onAccent, PALETTE.accent],
];

const STYLE =
  '*{box-sizing:border-box}[hidden]{display:none!important}' +
  `body{margin:0;font:17px/1.5 -apple-system,BlinkMacSystemFont,system-ui,sans-serif;color:${PALETTE.text};background:${PALETTE.background}}` +
  'main{max-width:28rem;margin:0 auto;padding:2.5rem 1.25rem}' +
  'h1{font-size:1.5rem;line-height:1.25;margin:0 0 .75rem}p{margin:0 0 1rem}' +
  `.hint,label{color:${PALETTE.muted};font-size:.9375rem}` +
  `button{display:block;width:100%;min-height:3rem;padding:.75rem 1rem;border:0;border-radius:.625rem;background:${PALETTE.accent};color:${PALETTE.onAccent};font:inherit;font-weight:600;cursor:pointer}` +
  `a{color:${PALETTE.accent}}.continue{display:block;text-align:center;padding:.75rem 0;margin:0 0 1.5rem}` +
  'label{display:block;margin-bottom:.25rem}' +
  `input{width:100%;padding:.5rem .625rem;border:1px solid ${PALETTE.muted};border-radius:.375rem;font:inherit;font-size:.9375rem;color:${PALETTE.text};background:${PALETTE.background}}` +
  `:focus-visible{outline:3px solid ${PALETTE.text};outline-offset:2px}`;

// Static, so one hash allows it; what differs per page is read from the elements. The button is
// hidden until this runs, so without JavaScript the page offers only what works without it: the
// link to continue and the link text to copy by hand. Clipboard API first; where it is missing or
// refused, the selected field and execCommand('copy'). Either way the person then goes on to the
// fallback: a failed copy must not keep them from the app.
const SCRIPT = `(function () {
  var get = document.getElementById('get');
  var field = document.getElementById('link');
  var next = document.getElementById('continue');
  var status = document.getElementById('status');
  if (!get || !field || !next || !status) return;
  get.hidden = false;
  function leave(copied) {
    status.textContent = copied ? 'Link copied.' : '';
    window.location.href = next.href;
  }
  function copyBySelection() {
    try {
      field.focus();
      field.setSelectionRange(0, field.value.length);
      return document.execCommand('copy');
    } catch (e) {
      return false;
    }
  }
  get.addEventListener('click', function () {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(field.value).then(
        function () { leave(true); },
        function () { leave(copyBySelection()); }
      );
    } else {
      leave(copyBySelection());
    }
  });
})();`;

/**
 * Exactly this page's inline script and style, by hash; nothing external (default-src 'none').
 * A `javascript:` URL smuggled into a link would not run either.
 */
export const DEFERRED_PAGE_HEADERS = {
  'Content-Security-Policy': contentSecurityPolicy({
    'script-src': cspHash(SCRIPT),
    'style-src': cspHash(STYLE),
  }),
} as const;

/**
 * The iOS "Get the app" page (app-interface.md): served instead of the 302 to the iOS fallback
 * where the app opted in. "Get the app" copies the link with its click token, which the app reads
 * from the clipboard after the install, then goes to the fallback (the App Store); "Continue
 * without copying" is a plain link to the same place.
 */
export function renderDeferredPage({ title, fallbackUrl, copyUrl }: DeferredPageInput): Buffer {
  const heading = escapeHtml(title === null || title === '' ? 'Get the app' : title);
  return Buffer.from(
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
      '<meta name="viewport" content="width=device-width, initial-scale=1">' +
      `<title>${heading}</title><style>${STYLE}</style></head><body><main>` +
      `<h1>${heading}</h1>` +
      '<p>This link opens in the app. Get the app first: the link is copied, so that the app ' +
      'can take you straight to it once it is installed.</p>' +
      '<noscript><p class="hint">To open this link in the app after installing it, copy the ' +
      'link below first.</p></noscript>' +
      '<p><button type="button" id="get" hidden>Get the app</button></p>' +
      `<a class="continue" id="continue" href="${escapeHtml(fallbackUrl)}">Continue without copying</a>` +
      '<label for="link">Link to open in the app</label>' +
      `<input id="link" type="text" readonly autocomplete="off" spellcheck="false" value="${escapeHtml(copyUrl)}">` +
      '<p id="status" class="hint" role="status"></p>' +
      `</main><script>${SCRIPT}</script></body></html>\n`,
  );
}
