import { constantStatement } from './pool';

describe('constantStatement', () => {
  it('keeps the text and carries no name a server session would have to remember', () => {
    const statement = constantStatement('SELECT a, b FROM t WHERE a = $1');
    expect(statement).toEqual({ text: 'SELECT a, b FROM t WHERE a = $1' });
  });
});
