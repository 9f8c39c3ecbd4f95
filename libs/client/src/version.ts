/** This package's version, as `package.json` has it (a unit test keeps the two equal). */
export const CLIENT_VERSION = '0.1.0';
