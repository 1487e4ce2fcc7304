// The logger every script here gives the client: quiet, but warnings and
// errors go to stderr, which the Go tests show when a script fails.
'use strict';

module.exports = {
  info() {},
  debug() {},
  warn(...args) { console.error('warn', ...args); },
  error(...args) { console.error('error', ...args); },
};
