/**
 * A caller-supplied value as it appears in a one-line message: JSON quoting escapes newlines and
 * control characters, and a very long value is cut so the message stays readable.
 */
export function quoted(value: string): string {
  const shown = value.length > 70 ? `${value.slice(0, 70)}…` : value;
  return JSON.stringify(shown);
}
