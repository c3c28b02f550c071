// Package e2e drives the demo's web page in a real headless Chromium. It is
// a module of its own so that the library's go.mod does not carry the
// browser's driver (chromedp and what it pulls in): it builds the demo
// binary from the repository it sits in, with the root module's own
// dependency versions, and runs it as a user would.
//
//	cd cmd/demo/e2e && go test -race ./...
//
// Without /usr/bin/chromium (Debian: apt-get install -y chromium) its tests
// skip, except under CI=true, where they fail.
package e2e
