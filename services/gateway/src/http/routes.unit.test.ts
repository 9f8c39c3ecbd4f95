import type { Request, Response } from 'express';
import { undecodableSegmentsAsWritten } from './routes';

/** The URL the next handlers see after the middleware. */
function rewritten(url: string): string {
  const req = { url } as unknown as Request;
  let called = false;
  undecodableSegmentsAsWritten()(req, {} as unknown as Response, () => {
    called = true;
  });
  expect(called).toBe(true);
  return req.url;
}

describe('undecodableSegmentsAsWritten', () => {
  it('leaves a path alone whose escapes decode', () => {
    expect(rewritten('/links/lnk_1')).toBe('/links/lnk_1');
    expect(rewritten('/links/a%20b%C3%A9?x=%ZZ')).toBe('/links/a%20b%C3%A9?x=%ZZ');
  });

  it('escapes the segment that does not decode, so it decodes to itself', () => {
    for (const segment of ['%ZZ', '%E0%A4%A', '%FF', 'a%20%ZZ', '%']) {
      const url = rewritten(`/installs/${segment}`);
      expect(url).not.toBe(`/installs/${segment}`);
      expect(decodeURIComponent(url.split('/')[2])).toBe(segment);
    }
  });

  it('touches neither the other segments nor the query', () => {
    expect(rewritten('/links/%ZZ/a%20b?q=%ZZ&r=1')).toBe('/links/%25ZZ/a%20b?q=%ZZ&r=1');
  });
});
