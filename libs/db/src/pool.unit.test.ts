import { preparedStatement } from './pool';

describe('preparedStatement', () => {
  const SELECT_ROW = preparedStatement('pool_unit_select', 'SELECT a, b FROM t WHERE a = $1');

  it('refuses a name or a text declared twice differently', () => {
    expect(() => preparedStatement('pool_unit_select', 'SELECT 1')).toThrow(/other text/);
    expect(() => preparedStatement('pool_unit_other', SELECT_ROW.text)).toThrow(/same text/);
    expect(preparedStatement('pool_unit_select', SELECT_ROW.text)).toEqual(SELECT_ROW);
  });
});
