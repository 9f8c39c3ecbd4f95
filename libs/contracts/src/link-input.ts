import type { EditableField, LinkChanges, LinkDraft, RequiredField } from './link-fields';
import {
  EDITABLE_FIELD_RULES,
  isEditableField,
  LINK_DRAFT_DEFAULTS,
  REQUIRED_FIELDS,
  SERVER_SET_FIELDS,
} from './link-fields';
import { aliasRule, MESSAGES } from './link-input-rules';

/** Field name to a message for people; every failing field is named, not just the first. */
export type FieldErrors = Record<string, string>;

export type LinkCreateInput =
  { ok: true; draft: LinkDraft } | { ok: false; fieldErrors: FieldErrors };

export type LinkPatchInput =
  { ok: true; changes: LinkChanges } | { ok: false; fieldErrors: FieldErrors };

/** Applies one editable field's rule, recording either its normalised value or its message. */
function applyEditable(
  field: EditableField,
  value: unknown,
  now: Date,
  into: LinkChanges,
  errors: Map<string, string>,
): void {
  const outcome = EDITABLE_FIELD_RULES[field](value, now);
  // Each rule yields the type of its own field, which TS cannot correlate through the union.
  if (outcome.ok) Object.assign(into, { [field]: outcome.value });
  else errors.set(field, outcome.message);
}

function rejectNonInput(field: string, errors: Map<string, string>): void {
  errors.set(field, SERVER_SET_FIELDS.has(field) ? MESSAGES.serverSet : MESSAGES.unknown);
}

/**
 * Errors are gathered in a Map and copied with Object.fromEntries so that a body field named
 * `__proto__` is reported as an own key instead of silently setting a prototype.
 */
function toFieldErrors(errors: Map<string, string>): FieldErrors {
  return Object.fromEntries(errors);
}

/**
 * Validates and normalises the body of POST /links (or one batch entry). Only webFallbackUrl is
 * required; `alias: null` means "generate one". The body must already be a JSON object.
 */
export function parseLinkCreate(
  body: Record<string, unknown>,
  now: Date = new Date(),
): LinkCreateInput {
  const errors = new Map<string, string>();
  const fields: LinkChanges = {};
  let alias: string | null = null;

  for (const [field, value] of Object.entries(body)) {
    if (field === 'alias') {
      if (value === null) continue;
      const outcome = aliasRule(value, now);
      if (outcome.ok) alias = outcome.value;
      else errors.set('alias', outcome.message);
    } else if (isEditableField(field)) {
      applyEditable(field, value, now, fields, errors);
    } else {
      rejectNonInput(field, errors);
    }
  }
  for (const field of REQUIRED_FIELDS) {
    if (!Object.hasOwn(body, field)) errors.set(field, MESSAGES.required);
  }

  if (errors.size > 0 || !hasRequired(fields)) {
    return { ok: false, fieldErrors: toFieldErrors(errors) };
  }
  return { ok: true, draft: { ...LINK_DRAFT_DEFAULTS, ...fields, alias } };
}

/** True once every required field has its value (they are then reported by no error). */
function hasRequired(fields: LinkChanges): fields is LinkChanges & Pick<LinkDraft, RequiredField> {
  return REQUIRED_FIELDS.every((field) => fields[field] !== undefined);
}

/**
 * Validates and normalises the body of PATCH /links/{id}: only the fields sent, each by the same
 * rule as on create. The alias cannot change; sending the current one is accepted as no change.
 * `{}` is valid and changes nothing.
 */
export function parseLinkPatch(
  body: Record<string, unknown>,
  current: { alias: string },
  now: Date = new Date(),
): LinkPatchInput {
  const errors = new Map<string, string>();
  const changes: LinkChanges = {};

  for (const [field, value] of Object.entries(body)) {
    if (field === 'alias') {
      if (value !== current.alias) errors.set('alias', MESSAGES.aliasUnchangeable);
    } else if (isEditableField(field)) {
      applyEditable(field, value, now, changes, errors);
    } else {
      rejectNonInput(field, errors);
    }
  }

  return errors.size > 0
    ? { ok: false, fieldErrors: toFieldErrors(errors) }
    : { ok: true, changes };
}
