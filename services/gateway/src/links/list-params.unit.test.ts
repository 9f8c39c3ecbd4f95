import { LINK_STATUSES } from '@linkservice/contracts';
import { parseListParams, SORT_NAMES } from './list-params';

describe('parseListParams', () => {
  it('defaults to everything, newest first, page 1 of 25', () => {
    expect(parseListParams({})).toEqual({
      search: undefined,
      tag: undefined,
      status: undefined,
      sort: 'newest',
      page: 1,
      perPage: 25,
    });
  });

  it('takes valid values as given', () => {
    expect(
      parseListParams({
        search: 'Sale',
        tag: 'VIP',
        status: 'expired',
        sort: 'clicks',
        page: '3',
        perPage: '200',
      }),
    ).toEqual({
      search: 'Sale',
      tag: 'VIP',
      status: 'expired',
      sort: 'clicks',
      page: 3,
      perPage: 200,
    });
  });

  it.each(LINK_STATUSES)('accepts status %s', (status) => {
    expect(parseListParams({ status }).status).toBe(status);
  });

  it.each(SORT_NAMES)('accepts sort %s', (sort) => {
    expect(parseListParams({ sort }).sort).toBe(sort);
  });

  it.each(['', 'ACTIVE', 'all', 'deleted', ['active', 'expired']])(
    'ignores the unrecognised status %p',
    (status) => {
      expect(parseListParams({ status }).status).toBeUndefined();
    },
  );

  it.each(['', 'Newest', 'created', 'alias desc', ['alias']])(
    'falls back to newest for sort %p',
    (sort) => {
      expect(parseListParams({ sort }).sort).toBe('newest');
    },
  );

  it.each([
    ['missing', undefined, 1],
    ['0', '0', 1],
    ['negative', '-2', 1],
    ['fractional', '2.5', 1],
    ['2.0', '2.0', 1],
    ['text', 'abc', 1],
    ['empty', '', 1],
    ['with a sign', '+2', 1],
    ['with spaces', ' 2', 1],
    ['exponent', '1e3', 1],
    ['hex', '0x10', 1],
    ['the largest safe integer', '9007199254740991', Number.MAX_SAFE_INTEGER],
    ['one past the largest safe integer, capped', '9007199254740992', Number.MAX_SAFE_INTEGER],
    ['beyond safe integers, capped', '99999999999999999999', Number.MAX_SAFE_INTEGER],
    ['a 1 and 30 zeros, capped', '1' + '0'.repeat(30), Number.MAX_SAFE_INTEGER],
    ['hundreds of digits, capped', '9'.repeat(400), Number.MAX_SAFE_INTEGER],
    ['repeated', ['2', '3'], 1],
    ['leading zeros', '007', 7],
    ['large', '100000', 100000],
  ])('reads page %s as %p -> %p', (_, page, expected) => {
    expect(parseListParams({ page }).page).toBe(expected);
  });

  it.each([
    ['missing', undefined, 25],
    ['0', '0', 25],
    ['negative', '-5', 25],
    ['fractional', '10.5', 25],
    ['text', 'ten', 25],
    ['1', '1', 1],
    ['200', '200', 200],
    ['201, capped', '201', 200],
    ['huge, capped', '1000000', 200],
    ['beyond safe integers, capped', '99999999999999999999', 200],
    ['hundreds of digits, capped', '9'.repeat(400), 200],
    ['leading zeros', '007', 7],
    ['all zeros', '000', 25],
  ])('reads perPage %s as %p -> %p', (_, perPage, expected) => {
    expect(parseListParams({ perPage }).perPage).toBe(expected);
  });

  it('treats empty or repeated search and tag as no filter', () => {
    expect(parseListParams({ search: '', tag: '' })).toMatchObject({
      search: undefined,
      tag: undefined,
    });
    expect(parseListParams({ search: ['a', 'b'], tag: ['x', 'y'] })).toMatchObject({
      search: undefined,
      tag: undefined,
    });
  });
});
