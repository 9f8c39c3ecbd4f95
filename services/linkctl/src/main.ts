#!/usr/bin/env node
import { runCli } from './cli';

runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (exitCode) => {
    process.exitCode = exitCode;
  },
  (error: unknown) => {
    process.stderr.write(`linkctl: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
