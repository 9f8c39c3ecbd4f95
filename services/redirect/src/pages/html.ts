import { createHash } from 'node:crypto';

const SPECIAL = /[&<>"']/g;
const ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Text for an HTML text node or a double-quoted attribute value. Everything a link's owner or a
 * client controls (titles, fallback URLs, the passthrough query) goes through it.
 */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (char) => ENTITY[char] ?? char);
}

/** A CSP source allowing exactly this inline `<script>` or `<style>` body. */
export function cspHash(inline: string): string {
  return `'sha256-${createHash('sha256').update(inline, 'utf8').digest('base64')}'`;
}

/**
 * Nothing from anywhere, not even this host: the pages below load no asset, send no form, and
 * cannot be framed; `extra` allows their own inline script and style by hash.
 */
export function contentSecurityPolicy(extra: Partial<Record<'script-src' | 'style-src', string>>) {
  const directives = [
    "default-src 'none'",
    ...Object.entries(extra).map(([name, value]) => `${name} ${value}`),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ];
  return directives.join('; ');
}
