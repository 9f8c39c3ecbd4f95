import { createHash } from 'node:crypto';
import { COLOR_PAIRS, DEFERRED_PAGE_HEADERS, PALETTE, renderDeferredPage } from './deferred-page';
import { escapeHtml } from './html';
import { PREVIEW_PAGE_HEADERS, renderPreviewPage } from './preview-page';

const HOSTILE_TITLE = `</title><script>alert("t")</script><img src=x onerror='alert(1)'> & co`;
const HOSTILE_URL = `https://apps.apple.com/app/id1?x="><script>alert(1)</script>&y='<img src=x>`;

/** The value of an attribute as a browser reads it (only the entities escapeHtml writes). */
function attribute(html: string, pattern: RegExp): string {
  const raw = pattern.exec(html)?.[1];
  if (raw === undefined) throw new Error(`no match for ${String(pattern)}`);
  return raw
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('escapeHtml', () => {
  it('escapes the five characters that can leave a text node or a quoted attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
    );
    expect(escapeHtml('plain text, café')).toBe('plain text, café');
  });
});

describe('renderPreviewPage', () => {
  const linkUrl = 'https://acme.links.test/promo';

  it('carries og:title, og:url, canonical and <title>', () => {
    const html = renderPreviewPage({ title: 'Summer sale', linkUrl }).toString();
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('<title>Summer sale</title>');
    expect(html).toContain('<meta property="og:title" content="Summer sale">');
    expect(html).toContain(`<meta property="og:url" content="${linkUrl}">`);
    expect(html).toContain(`<link rel="canonical" href="${linkUrl}">`);
  });

  it('escapes a hostile title', () => {
    const html = renderPreviewPage({ title: HOSTILE_TITLE, linkUrl }).toString();
    expect(html).not.toMatch(/<script|<img/i);
    expect(attribute(html, /property="og:title" content="([^"]*)"/)).toBe(HOSTILE_TITLE);
    expect(html).toContain(`<title>${escapeHtml(HOSTILE_TITLE)}</title>`);
  });

  it('allows nothing to load or run', () => {
    expect(PREVIEW_PAGE_HEADERS['Content-Security-Policy']).toMatch(/^default-src 'none'(;|$)/);
    expect(PREVIEW_PAGE_HEADERS['Content-Security-Policy']).not.toMatch(/script-src|style-src/);
  });
});

describe('renderDeferredPage', () => {
  const input = {
    title: 'Summer sale',
    fallbackUrl: 'https://apps.apple.com/app/id1?utm=a&b=c',
    copyUrl: 'https://acme.links.test/promo?ls_click=AbC123xyz0AbC123xyz0Ab',
  };
  const html = renderDeferredPage(input).toString();
  const csp = DEFERRED_PAGE_HEADERS['Content-Security-Policy'];

  it('is accessible: language, title, a real button, a labelled field, a visible focus', () => {
    expect(html).toMatch(/^<!doctype html><html lang="en">/);
    expect(html).toContain('<title>Summer sale</title>');
    expect(html).toContain('<h1>Summer sale</h1>');
    expect(html).toContain('<button type="button" id="get" hidden>Get the app</button>');
    expect(html).toMatch(/<label for="link">[^<]+<\/label><input id="link" type="text" readonly/);
    expect(html).toMatch(/:focus-visible\{outline:3px solid/);
    expect(html).toContain('<meta name="viewport"');
  });

  it('says "Get the app" without a title', () => {
    const untitled = renderDeferredPage({ ...input, title: null }).toString();
    expect(untitled).toContain('<title>Get the app</title>');
  });

  it('links to the fallback and offers the link with its token to copy', () => {
    expect(attribute(html, /id="continue" href="([^"]*)"/)).toBe(input.fallbackUrl);
    expect(html).toContain('>Continue without copying</a>');
    expect(attribute(html, /id="link"[^>]* value="([^"]*)"/)).toBe(input.copyUrl);
  });

  it('works without JavaScript: the continue path is a plain link and the button waits for the script', () => {
    const withoutScript = html.replace(/<script>[\s\S]*<\/script>/, '');
    expect(withoutScript).toMatch(/<a class="continue" id="continue" href="https:/);
    expect(withoutScript).toContain('<noscript>');
    // A button that could do nothing is hidden until the script shows it.
    expect(withoutScript).toMatch(/<button[^>]* hidden>/);
    expect(html).toContain('[hidden]{display:none!important}');
  });

  it('loads nothing external and allows exactly its own inline script and style', () => {
    expect(html).not.toMatch(/\ssrc=|<link|@import|url\(/i);
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    expect(scripts).toHaveLength(1);
    expect(styles).toHaveLength(1);
    expect(csp).toBe(
      `default-src 'none'; script-src ${sha256(scripts[0])}; style-src ${sha256(styles[0])}; ` +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/i);
  });

  it('escapes hostile titles and URLs, so they cannot add markup or leave their attribute', () => {
    const hostile = renderDeferredPage({
      title: HOSTILE_TITLE,
      fallbackUrl: HOSTILE_URL,
      copyUrl: `${HOSTILE_URL}&ls_click=x`,
    }).toString();
    expect(hostile.match(/<script/g)).toHaveLength(1);
    expect(hostile).not.toMatch(/<img|<[^>]*\son[a-z]+=/i);
    expect(attribute(hostile, /id="continue" href="([^"]*)"/)).toBe(HOSTILE_URL);
    expect(attribute(hostile, /id="link"[^>]* value="([^"]*)"/)).toBe(`${HOSTILE_URL}&ls_click=x`);
    expect(hostile).toContain(`<h1>${escapeHtml(HOSTILE_TITLE)}</h1>`);
    // The page's own script and style are unchanged, so the CSP hashes still hold.
    const inline = (page: string) => [
      /<script>([\s\S]*?)<\/script>/.exec(page)?.[1],
      /<style>([\s\S]*?)<\/style>/.exec(page)?.[1],
    ];
    expect(inline(hostile)).toEqual(inline(html));
  });

  it('keeps every colour pair at WCAG AA contrast or better', () => {
    const luminance = (hex: string) => {
      const [r, g, b] = [1, 3, 5].map((i) => {
        const c = parseInt(hex.slice(i, i + 2), 16) / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = (a: string, b: string) => {
      const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
      return (hi + 0.05) / (lo + 0.05);
    };
    for (const [foreground, background] of COLOR_PAIRS) {
      expect(contrast(foreground, background)).toBeGreaterThanOrEqual(4.5);
    }
    expect(html).toContain(`background:${PALETTE.accent};color:${PALETTE.onAccent}`);
  });
});
