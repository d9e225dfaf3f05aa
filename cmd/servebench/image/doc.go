// Package image holds the test of the repository's Containerfile: it builds
// the image from a static binary with buildah and runs it. It has no code of
// its own; the test lives apart from cmd/servebench so that its static build
// (CGO_ENABLED=0 rebuilds every package) runs beside that package's tests
// instead of after them.
package image
