import { constantStatement } from './pool';

describe('constantStatement', () => {
  it('keeps the text; the name a pool sends it under comes from the text, not the caller', () => {
    const statement = constantStatement('SELECT a, b FROM t WHERE a = $1');
    expect(statement).toEqual({ text: 'SELECT a, b FROM t WHERE a = $1' });
    expect(constantStatement('SELECT a, b FROM t WHERE a = $1')).toEqual(statement);
  });
});
