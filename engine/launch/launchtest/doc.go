// Package launchtest is test support for tests that start the servebench
// binary as a real child process (the bundled engine through the
// launcher, `servebench run`, `servebench startup`): Servebench builds it
// once per test binary.
package launchtest
