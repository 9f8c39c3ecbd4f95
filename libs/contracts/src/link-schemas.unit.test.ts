import { z } from 'zod';
import type { StoredLink } from './link';
import {
  EDITABLE_FIELD_RULES,
  EDITABLE_FIELDS,
  LINK_FIELD_EXAMPLES,
  linkCreateBodySchema,
  linkPatchBodySchema,
  linkSchema,
  toLink,
} from './link-fields';
import { LINK_FIELDS } from './link-field-table';

const NOW = new Date('2026-01-01T00:00:00Z');

/** The schemas the API document shows, against the rules that decide. */
describe('the link schemas of the API document', () => {
  it.each(EDITABLE_FIELDS)('%s: the document takes what its rule takes', (field) => {
    const example = LINK_FIELD_EXAMPLES[field];
    expect(EDITABLE_FIELD_RULES[field](example, NOW)).toEqual({ ok: true, value: example });
    expect(LINK_FIELDS[field].input.safeParse(example).success).toBe(true);
  });

  it.each(EDITABLE_FIELDS)('%s: the document refuses what its rule refuses by type', (field) => {
    // A number is no field's value: both the rule and the document's schema refuse it.
    expect(EDITABLE_FIELD_RULES[field](42, NOW)).toMatchObject({ ok: false });
    expect(LINK_FIELDS[field].input.safeParse(42).success).toBe(false);
  });

  it('parses with the same schema the alias, URL and text rules start from', () => {
    const tooLong = 'x'.repeat(201);
    expect(LINK_FIELDS.title.input.safeParse(tooLong).success).toBe(false);
    expect(EDITABLE_FIELD_RULES.title(tooLong, NOW)).toMatchObject({ ok: false });
    // A non-ASCII URL is a valid fallback: the document says `iri`, not `uri`.
    const unicode = 'https://example.com/ü';
    expect(EDITABLE_FIELD_RULES.webFallbackUrl(unicode, NOW)).toEqual({ ok: true, value: unicode });
    expect(z.toJSONSchema(LINK_FIELDS.webFallbackUrl.input)).toMatchObject({
      format: 'iri',
      maxLength: 2048,
    });
  });

  it('requires only webFallbackUrl on create, and refuses members that are no input', () => {
    expect(linkCreateBodySchema.safeParse({ webFallbackUrl: 'https://e.com' }).success).toBe(true);
    expect(
      linkCreateBodySchema.safeParse({ webFallbackUrl: 'https://e.com', alias: null }).success,
    ).toBe(true);
    expect(linkCreateBodySchema.safeParse({}).success).toBe(false);
    expect(
      linkCreateBodySchema.safeParse({ webFallbackUrl: 'https://e.com', id: 'x' }).success,
    ).toBe(false);
    expect(linkPatchBodySchema.safeParse({}).success).toBe(true);
  });

  it('describes every member toLink writes', () => {
    const row: StoredLink = {
      id: 'lnk_1',
      app_id: 'app_1',
      environment: 'test',
      alias: 'a',
      web_fallback_url: 'https://e.com',
      ios_fallback_url: null,
      deep_link_data: { screen: 'x' },
      title: null,
      campaign: 'c',
      channel: null,
      feature: null,
      tags: ['t'],
      expires_at: new Date('2030-01-01T00:00:00Z'),
      archived_at: null,
      click_count: 3,
      created_at: NOW,
      updated_at: NOW,
    };
    const link = toLink(row, { subdomainKey: 'acme', linkDomain: 'links.localhost', now: NOW });
    expect(linkSchema.parse(link)).toEqual(link);
    expect(Object.keys(linkSchema.shape)).toEqual(Object.keys(link));
  });
});
