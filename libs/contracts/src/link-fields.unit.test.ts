import type { StoredLink } from './link';
import type { LinkDraft } from './link-fields';
import {
  columnChangesOf,
  EDITABLE_FIELD_RULES,
  EDITABLE_FIELDS,
  insertColumnsOf,
  LINK_COLUMNS,
  LINK_DRAFT_DEFAULTS,
  LINK_FIELD_EXAMPLES,
  linkDraftSchema,
  REQUIRED_FIELDS,
  SERVER_SET_FIELDS,
  STORED_LINK_COLUMNS,
  toLink,
} from './link-fields';
import { LINK_FIELDS } from './link-field-table';
import { parseLinkCreate, parseLinkPatch } from './link-input';

const NOW = new Date('2026-01-01T00:00:00Z');

const everyField: LinkDraft = { alias: 'every-field', ...LINK_FIELD_EXAMPLES };

describe('the link field table', () => {
  it('lists the server-set members decisions.md names, and nothing a caller sends', () => {
    expect([...SERVER_SET_FIELDS].sort()).toEqual([
      'archivedAt',
      'clickCount',
      'createdAt',
      'environment',
      'id',
      'status',
      'updatedAt',
      'url',
    ]);
    for (const field of EDITABLE_FIELDS) expect(SERVER_SET_FIELDS.has(field)).toBe(false);
    expect(SERVER_SET_FIELDS.has('alias')).toBe(false);
  });

  it('gives each editable field its own column, and names every column once', () => {
    const columns = EDITABLE_FIELDS.map((field) => LINK_FIELDS[field].column);
    expect(new Set(columns).size).toBe(columns.length);
    expect(new Set(LINK_COLUMNS).size).toBe(LINK_COLUMNS.length);
    for (const column of columns) expect(LINK_COLUMNS).toContain(column);
    expect(STORED_LINK_COLUMNS).not.toContain('search_text');
    expect(STORED_LINK_COLUMNS).toHaveLength(LINK_COLUMNS.length - 1);
  });

  it.each(EDITABLE_FIELDS)(
    '%s: its example passes its rule as it is, and is not its default',
    (field) => {
      const example = LINK_FIELD_EXAMPLES[field];
      expect(EDITABLE_FIELD_RULES[field](example, NOW)).toEqual({ ok: true, value: example });
      const omitted = LINK_FIELDS[field].whenOmitted;
      if (omitted !== 'required') expect(example).not.toEqual(omitted.value);
    },
  );

  it('creates with every field as sent, and the draft survives the job schema', () => {
    const parsed = parseLinkCreate({ ...everyField }, NOW);
    expect(parsed).toEqual({ ok: true, draft: everyField });
    expect(linkDraftSchema.parse(everyField)).toEqual(everyField);
    expect(Object.keys(linkDraftSchema.shape).sort()).toEqual(Object.keys(everyField).sort());
  });

  it('creates with only the required fields, the others as their defaults', () => {
    const required = Object.fromEntries(
      REQUIRED_FIELDS.map((field) => [field, LINK_FIELD_EXAMPLES[field]]),
    );
    expect(REQUIRED_FIELDS).toEqual(['webFallbackUrl']);
    expect(parseLinkCreate(required, NOW)).toEqual({
      ok: true,
      draft: { ...LINK_DRAFT_DEFAULTS, ...required },
    });
    expect(linkDraftSchema.parse({ ...LINK_DRAFT_DEFAULTS, ...required })).toBeDefined();
  });

  it.each(REQUIRED_FIELDS)('refuses a create without %s', (field) => {
    const rest = Object.fromEntries(Object.entries(everyField).filter(([key]) => key !== field));
    expect(parseLinkCreate(rest, NOW)).toEqual({
      ok: false,
      fieldErrors: { [field]: 'is required' },
    });
  });

  it.each(EDITABLE_FIELDS)('%s alone is a PATCH that sets its own column, cast', (field) => {
    const parsed = parseLinkPatch({ [field]: LINK_FIELD_EXAMPLES[field] }, { alias: 'a' }, NOW);
    if (!parsed.ok) throw new Error(`PATCH of ${field} refused`);
    expect(parsed.changes).toEqual({ [field]: LINK_FIELD_EXAMPLES[field] });
    const changes = columnChangesOf(parsed.changes);
    expect(changes).toEqual([
      {
        column: LINK_FIELDS[field].column,
        sqlType: LINK_FIELDS[field].sqlType,
        value: insertColumnsOf(everyField)[LINK_FIELDS[field].column],
      },
    ]);
  });

  it('keeps the defaults every draft spreads from being changed through one of them', () => {
    const draft = parseLinkCreate({ webFallbackUrl: 'https://example.com/' });
    if (!draft.ok) throw new Error('expected a draft');
    expect(() => draft.draft.tags.push('x')).toThrow(TypeError);
    expect(LINK_DRAFT_DEFAULTS.tags).toEqual([]);
  });

  it('sets no column for an empty PATCH', () => {
    expect(columnChangesOf({})).toEqual([]);
  });

  it('inserts a column for every editable field', () => {
    const columns = insertColumnsOf(everyField);
    expect(Object.keys(columns).sort()).toEqual(
      EDITABLE_FIELDS.map((field) => LINK_FIELDS[field].column).sort(),
    );
    expect(columns.deep_link_data).toBe(JSON.stringify(LINK_FIELD_EXAMPLES.deepLinkData));
  });

  it('shows every member in the order of the spec, the server-set ones from their columns', () => {
    // Every column null but the ones the server-set members read: the editable ones are walked
    // through the database by the integration tests, which read them back as stored.
    const row = {
      ...(Object.fromEntries(STORED_LINK_COLUMNS.map((column) => [column, null])) as Record<
        keyof StoredLink,
        null
      >),
      id: 'lnk_1',
      app_id: 'app_1',
      environment: 'test' as const,
      alias: 'every-field',
      click_count: 3,
      created_at: new Date('2026-01-01T00:00:00.000Z'),
      updated_at: new Date('2026-01-02T00:00:00.000Z'),
    };
    const link = toLink(row as unknown as StoredLink, {
      subdomainKey: 'acme',
      linkDomain: 'links.test',
      now: NOW,
    });
    expect(link).toMatchObject({
      id: 'lnk_1',
      alias: 'every-field',
      url: 'https://acme-test.links.test/every-field',
      environment: 'test',
      archivedAt: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z',
      clickCount: 3,
      status: 'active',
    });
    expect(Object.keys(link)).toEqual([
      'id',
      'alias',
      'url',
      'environment',
      ...EDITABLE_FIELDS,
      'archivedAt',
      'createdAt',
      'updatedAt',
      'clickCount',
      'status',
    ]);
  });
});
